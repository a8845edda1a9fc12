"""Promotion into an fp32 accumulator (``promote_every``; docs/numerics.md section 4.1): the fused
chain restarts from +0 every N products, each partial D is added to an fp32 register with IEEE
round-to-nearest-even, and C enters that register, not the first step.

Expected values: hand-worked words (derived in the comments), and an oracle written here from the
contract's definition: the fused-step oracle of test_fused_fast (Fractions) for each group's chain
from +0, then the register as an exact Fraction sum rounded to fp32 nearest-even by that file's
own rounding (IEEE signed zeros and specials decided here). ref == fast on seeded random vectors.
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest
from test_fused_steps_fast import (
    check_against_reference, fused_oracle, random_c, random_tensor, round_word, special_word, value_parts,
)

import mxsim
from mxsim import Accumulator, MXTensor
from mxsim.golden import generate, suite_from_spec, verify
from mxsim.options.accumulate import PRESETS
from mxsim.options.presets import PRESET_SOURCES

FP32 = Accumulator()  # the register's rounding: fp32 nearest-even (round_word reads output and rounding)


def e5m2_row(pairs: dict[int, tuple[float, float]], k_total: int) -> tuple[MXTensor, MXTensor]:
    """One row of MXFP8 E5M2 operands of ``k_total`` products: product i is a_i * b_i for the
    (a_i, b_i) given, +0 * +0 elsewhere; unit scales."""
    codes_a, codes_b = np.zeros((1, k_total), np.uint8), np.zeros((1, k_total), np.uint8)
    for i, (x, y) in pairs.items():
        codes_a[0, i], codes_b[0, i] = e5m2_code(x), e5m2_code(y)
    scales = np.full((1, k_total // 32), 127, np.uint8)
    return (MXTensor.from_codes(scales, codes_a, "mxfp8_e5m2"), MXTensor.from_codes(scales, codes_b, "mxfp8_e5m2"))


def e5m2_code(x: float) -> int:
    """The E5M2 code of a value E5M2 holds (+-Inf: 0x7C / 0xFC, not saturated by the encoder)."""
    if np.isinf(x):
        return 0xFC if x < 0 else 0x7C
    code = int(mxsim.encode(np.float64(x), "fp8_e5m2"))
    assert float(mxsim.decode(np.uint8(code), "fp8_e5m2")) == x
    return code


def word(a, b, acc, c_word: int = 0) -> int:
    c = np.array([c_word], np.uint32).view(np.float32)
    return int(mxsim.dot(a, b, acc, c=c, details=True).bits[0])


def ref_word(a, b, acc, c_word: int = 0) -> int:
    from mxsim.ref import dot as ref_dot
    from mxsim.ref.output import fp32_bits
    from test_fused_steps_fast import row_blocks
    return ref_dot.dot_general(row_blocks(a, 0), row_blocks(b, 0), a.fmt, b.fmt, acc, c=fp32_bits(c_word)).code


WGMMA = Accumulator.preset("hopper_fp8_wgmma")


def promoted(n: int) -> Accumulator:
    return dataclasses.replace(WGMMA, promote_every=n)


# --- hand-worked ---------------------------------------------------------------------------------
def test_a_partial_below_the_chain_grid_survives_in_the_register():
    """Products 1 (index 0) and 1.25*2^-8 * 2^-16 = 1.25*2^-24 (index 32), Hopper wgmma (F = 13,
    truncate, fp32_e8m13 toward zero). Without promotion step 2 has C = 1, anchor 0, grid 2^-13: the
    product is cut to 0, D = 1.0 (0x3F800000). With N = 32 the partials are 1 and 1.25*2^-24 (one
    product, exact on its own grid); the register adds them in fp32 nearest-even: 1 + 1.25*2^-24 is
    0.625 ulp (2^-23) above 1, so it rounds up to 1 + 2^-23 = 0x3F800001. With N = 64 the one chain
    gives 1.0 again."""
    a, b = e5m2_row({0: (1.0, 1.0), 32: (1.25 * 2**-8, 2**-16)}, 64)
    assert word(a, b, WGMMA) == 0x3F800000
    assert word(a, b, promoted(32)) == 0x3F800001
    assert word(a, b, promoted(64)) == 0x3F800000
    assert ref_word(a, b, promoted(32)) == 0x3F800001


def test_c_enters_the_register_not_the_first_step():
    """C = 2^-20 (0x35800000), product 1*1, K = 32. Into the first step (no promotion): anchor 0,
    grid 2^-13, C is cut to 0: D = 1.0. With N = 32 the chain from +0 gives 1 and the register
    C + 1 = 1 + 2^-20, exact in fp32: 0x3F800000 + 2^(23-20) = 0x3F800008."""
    a, b = e5m2_row({0: (1.0, 1.0)}, 32)
    assert word(a, b, WGMMA, 0x35800000) == 0x3F800000
    assert word(a, b, promoted(32), 0x35800000) == 0x3F800008
    assert word(a, b, PRESETS["hopper_fp8_cublas"], 0x35800000) == 0x3F800008
    assert ref_word(a, b, promoted(32), 0x35800000) == 0x3F800008


def test_register_rounds_to_nearest_even_on_a_tie():
    """C = 1, partial 2^-24 (2^-8 * 2^-16): exactly half an ulp of 1, a tie, to even: 1.0. C = 1 + 2^-23
    (odd), the same partial: the tie goes up to 1 + 2^-22 = 0x3F800002. (The chain alone, C in its
    first step, cuts the product and C's bits below the grid 2^-13: 1.0.)"""
    a, b = e5m2_row({0: (2**-8, 2**-16)}, 32)
    assert word(a, b, promoted(32), 0x3F800000) == 0x3F800000
    assert word(a, b, promoted(32), 0x3F800001) == 0x3F800002
    assert word(a, b, WGMMA, 0x3F800001) == 0x3F800000


def test_nan_is_written_as_nan_bits():
    """A NaN C gives the register NaN, written 0x7FFFFFFF by the NVIDIA presets and 0x7FC00000 with
    nan_bits=None; +Inf in group 1 and -Inf in group 2 make Inf + -Inf = NaN in the register."""
    a, b = e5m2_row({0: (1.0, 1.0)}, 32)
    assert word(a, b, promoted(32), 0x7FC00000) == 0x7FFFFFFF
    assert word(a, b, dataclasses.replace(promoted(32), nan_bits=None), 0xFFC00001) == 0x7FC00000
    a, b = e5m2_row({0: (float("inf"), 1.0), 32: (float("-inf"), 1.0)}, 64)
    assert word(a, b, promoted(32)) == 0x7FFFFFFF
    assert ref_word(a, b, promoted(32)) == 0x7FFFFFFF
    a, b = e5m2_row({0: (float("inf"), 1.0)}, 64)
    assert word(a, b, promoted(32), 0xFF800000) == 0x7FFFFFFF  # -Inf C + +Inf partial
    assert word(a, b, promoted(32), 0x3F800000) == 0x7F800000


def test_signed_zero_in_the_register():
    """C = -0 and zero products: the chain from +0 gives +0 and -0 + +0 = +0 (RNE); with no products
    (K = 0) the register is C itself, -0."""
    a, b = e5m2_row({}, 32)
    assert word(a, b, promoted(32), 0x80000000) == 0x00000000
    empty = MXTensor.from_codes(np.zeros((1, 0), np.uint8), np.zeros((1, 0), np.uint8), "mxfp8_e5m2")
    assert word(empty, empty, promoted(32), 0x80000000) == 0x80000000


def test_tail_group_and_steps():
    """K = 96, N = 64: groups [0, 64) and [64, 96). Products 1 at index 0, 2^-14 (2^-7 * 2^-7) at
    index 40 and 2^-14 at index 64. Chain 1 (steps of 32): step 1 D = 1, step 2 cuts 2^-14 below
    the grid 2^-13: D = 1; chain 2 from +0: 2^-14. Register: 1 + 2^-14 = 0x3F800200. The steps
    are the chains' D: 1.0, 1.0, 2^-14 (0x38800000)."""
    a, b = e5m2_row({0: (1.0, 1.0), 40: (2**-7, 2**-7), 64: (2**-7, 2**-7)}, 96)
    got = mxsim.dot(a, b, promoted(64), details=True)
    assert int(got.bits[0]) == 0x3F800200
    assert [int(s) for s in got.steps[0]] == [0x3F800000, 0x3F800000, 0x38800000]


# --- the option ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -32, True, "32", 32.0])
def test_promote_every_refuses_bad_values(bad):
    with pytest.raises(ValueError, match=r"promote_every=.* is not allowed; expected an integer in \[1, "):
        dataclasses.replace(WGMMA, promote_every=bad)


def test_promote_every_must_not_cut_a_step():
    a, b = e5m2_row({0: (1.0, 1.0)}, 64)
    with pytest.raises(ValueError, match=r"promote_every=48 is not allowed with step=32: .*multiple of 32"):
        mxsim.dot(a, b, promoted(48))
    fp6 = Accumulator.preset("mxdotp_fp6", promote_every=22)  # steps of 11 restart at every block of 32
    t = random_tensor(np.random.default_rng(1), "mxfp6_e3m2", 1, 2)
    with pytest.raises(ValueError, match=r"promote_every=22 is not allowed with block size 32 .*multiple of 32"):
        mxsim.dot(t, t, fp6)


def test_promote_every_needs_fused_and_an_fp32_or_fp16_register():
    with pytest.raises(ValueError, match=r"promote_every=32 is only used with accumulate='fused'"):
        Accumulator(promote_every=32)
    with pytest.raises(ValueError, match=r"promote_every=32 is not allowed with output='bf16'.*fp32.*fp16"):
        Accumulator.preset("mxdotp_fp8_bf16", promote_every=32)
    assert Accumulator.preset("hopper_fp8_wgmma_f16", promote_every=32).promote_every == 32  # an fp16 register


def test_cublas_preset_is_wgmma_promoted_every_128_with_its_source():
    assert PRESETS["hopper_fp8_cublas"] == promoted(128)
    source = PRESET_SOURCES["hopper_fp8_cublas"]
    assert "H200" in source and "use_fast_accum=False" in source


# --- the oracle and ref == fast ------------------------------------------------------------------
def promotion_oracle(a: MXTensor, b: MXTensor, acc: Accumulator, c_word: int, r: int) -> int:
    """The result word of row r: each group's chain by the fused oracle from +0, the register by
    exact Fractions rounded to fp32 nearest-even (IEEE zeros and specials decided here)."""
    k, n = a.fmt.block_size, acc.promote_every
    total = a.codes.shape[1]
    chain = dataclasses.replace(acc, promote_every=None)
    kind, negative, magnitude = value_parts(np.array([c_word], np.uint32).view(np.float32)[0])
    register = (kind, negative, magnitude)
    for first in range(0, total, n):
        last = min(first + n, total)
        blocks = slice(first // k, -(-last // k))
        steps = fused_oracle(a.fmt, b.fmt, a.codes[r, first:last], a.scales[r, blocks], b.codes[r, first:last],
                             b.scales[r, blocks], chain, 0)
        partial = value_parts(np.array([steps[-1]], np.uint32).view(np.float32)[0])
        register = fp32_sum(register, partial)
    kind, negative, magnitude = register
    if kind == "nan":
        return special_word("nan", False, acc)
    if kind == "inf":
        return special_word("inf", negative, FP32)
    return round_word(negative, magnitude, FP32)


def fp32_sum(x, y):
    """IEEE 754 x + y of two fp32 values (kind, negative, magnitude), rounded to fp32 nearest-even."""
    (kx, nx, mx), (ky, ny, my) = x, y
    if "nan" in (kx, ky) or (kx == ky == "inf" and nx != ny):
        return "nan", False, Fraction(0)
    if "inf" in (kx, ky):
        return x if kx == "inf" else y
    exact = (-mx if nx else mx) + (-my if ny else my)
    if exact == 0:
        return "finite", nx and ny, Fraction(0)
    word = round_word(exact < 0, abs(exact), FP32)
    return value_parts(np.array([word], np.uint32).view(np.float32)[0])


CASES = [
    ("mxfp8_e4m3", "mxfp8_e5m2", "hopper_fp8_cublas", None, 5),
    ("mxfp8_e5m2", "mxfp8_e5m2", "hopper_fp8_wgmma", 32, 4),
    ("mxfp8_e4m3", "mxfp8_e4m3", "hopper_fp8_wgmma", 64, 3),  # a tail group of 32
    ("mxfp8_e4m3", "mxfp8_e4m3", "mxdotp_fp8", 16, 2),  # groups inside a block: the reference's
    ("mxfp8_e4m3", "mxfp8_e4m3", "mxdotp_fp8", 64, 3),
    ("mxfp8_e5m2", "mxfp8_e4m3", "blackwell_mxf8f6f4", 64, 4),
    ("mxfp6_e3m2", "mxfp6_e3m2", "mxdotp_fp6", 32, 2),  # steps of 11 restarting at every block
    ("mxfp8_e4m3", "mxfp8_e4m3", "cdna3_fp8_mfma", 32, 3),
]


@pytest.mark.parametrize("fa,fb,preset,n,n_blocks", CASES)
def test_fast_equals_reference_and_oracle(fa, fb, preset, n, n_blocks):
    acc = Accumulator.preset(preset) if n is None else Accumulator.preset(preset, promote_every=n)
    if preset == "cdna3_fp8_mfma":  # its structure on OCP E4M3 operands (as test_unit_presets' CDNA3_OCP)
        acc = dataclasses.replace(acc, elements=None)
    rng = np.random.default_rng(34 + n_blocks)
    rows = 24
    a = random_tensor(rng, fa, rows, n_blocks, p_special=0.01, spread=0 if "hopper" in preset else 3)
    b = random_tensor(rng, fb, rows, n_blocks, p_special=0.01, spread=0 if "hopper" in preset else 3)
    c = random_c(rng, rows, 0.3)
    check_against_reference(a, b, acc, c)
    if preset != "cdna3_fp8_mfma":  # (the fused oracle of test_fused_fast covers the late join elsewhere)
        got = mxsim.dot(a, b, acc, c=np.asarray(c, np.uint32).view(np.float32), details=True).bits
        for r in range(rows):
            assert int(got[r]) == promotion_oracle(a, b, acc, int(c[r]), r), (r, hex(int(c[r])))


def test_promoting_suite_generates_and_verifies(tmp_path):
    """A dotgeneral suite with the cuBLAS preset (K = 160: a group of 128 and a tail of 32) and steps:
    generate and verify agree, and every result is the oracle's (chains from +0, C into the register)."""
    suite = suite_from_spec("dotgeneral", block_a="mxfp8_e4m3", preset="hopper_fp8_cublas", unit_scales=True,
                            n_blocks=5, steps=True)
    directory = generate(suite, tmp_path, count=suite.catalogue_size(1) + 30)
    assert verify(tmp_path).ok
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["params"]["accumulator"]["promote_every"] == 128
    columns = {f["name"]: [int(x, 16) for x in (directory / f"{f['name']}.hex").read_text().split()]
               for f in manifest["fields"] if (directory / f"{f['name']}.hex").exists()}
    acc, fmt = suite.acc, suite.fa
    for i in range(0, manifest["count"], 7):
        codes_a = [(columns["a_elems"][i] >> (8 * j)) & 0xFF for j in range(160)]
        codes_b = [(columns["b_elems"][i] >> (8 * j)) & 0xFF for j in range(160)]
        scales_a = [(columns["a_scale"][i] >> (8 * j)) & 0xFF for j in range(5)]
        scales_b = [(columns["b_scale"][i] >> (8 * j)) & 0xFF for j in range(5)]
        a = MXTensor.from_codes(np.array([scales_a], np.uint8), np.array([codes_a], np.uint8), fmt)
        b = MXTensor.from_codes(np.array([scales_b], np.uint8), np.array([codes_b], np.uint8), fmt)
        assert columns["result"][i] == promotion_oracle(a, b, acc, columns["c"][i], 0), f"line {i + 1}"


def test_explain_names_the_promotion(tmp_path):
    """A device that promotes every 128 products, checked against a hopper_fp8_wgmma suite of 8 blocks
    (K = 256): explain names the cuBLAS preset or promote_every=128, and it reproduces every vector."""
    from test_check_explain import _explained, _plant, _suite
    suite_dir = _suite(tmp_path / "s", "dotgeneral", 64, block_a="mxfp8_e4m3", preset="hopper_fp8_wgmma",
                       unit_scales=True, n_blocks=8)
    promoting = {**PRESETS["hopper_fp8_wgmma"].as_dict(), "promote_every": 128}
    dut = _plant(suite_dir, tmp_path / "dut", accumulator=promoting)
    _, found, _ = _explained(suite_dir, dut)
    assert found.best.label == "preset hopper_fp8_cublas", found.best.label
    assert found.best.confirmed == (64, 0, [])
    # an unset promote_every is varied over its tries (32, 64, 128, 256): the option alone is found too
    assert any(r.label.startswith("promote_every=") and not r.broken for r in found.results)


def test_cli_takes_promote_every_and_names_the_flag(tmp_path, capsys):
    """``mxsim dot --promote-every N`` gives what the API gives; a bad N is refused naming the flag."""
    from mxsim import cli, fileformat
    a, b = e5m2_row({0: (1.0, 1.0), 32: (1.25 * 2**-8, 2**-16)}, 64)
    fileformat.save(a, tmp_path / "a.mxt")
    fileformat.save(b, tmp_path / "b.mxt")
    args = ["dot", str(tmp_path / "a.mxt"), str(tmp_path / "b.mxt"), str(tmp_path / "d.npy"), "--preset",
            "hopper_fp8_wgmma", "--promote-every"]
    assert cli.main(args + ["32"]) == 0
    assert np.load(tmp_path / "d.npy").view(np.uint32).tolist() == [0x3F800001]
    assert cli.main(args + ["48"]) == 2
    assert "--promote-every 48 is not allowed with --step 32" in capsys.readouterr().err
