"""Hopper's FP8 mma.sync and NVIDIA's fp16 D below fp16's normal range (issue 34 items 2 and 3;
docs/numerics.md section 6.1): the presets ``hopper_fp8_mma``, ``hopper_fp8_mma_f16`` and the fp16-D
rule of ``hopper_fp8_wgmma_f16``.

Expected values come from hand-worked arithmetic (each case says how), from vectors measured on an
NVIDIA H200 (copied here from ../shared/silicon/h200/h200.npz with the chip's outputs), and, where
that file is present, from the whole measurement. The reference and the fast path must agree on
random vectors.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import mxsim
from mxsim.options import Accumulator
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.dot import dot_general
from mxsim.ref.output import fp32_bits
from mxsim.tensor import MXTensor

E4M3, E5M2 = "mxfp8_e4m3", "mxfp8_e5m2"
UNIT = 127  # E8M0 code of the scale 1


def block(codes: dict[int, int]) -> tuple[int, ...]:
    """32 element codes, zero (+0) but where ``codes`` (index -> code) says."""
    return tuple(codes.get(k, 0) for k in range(32))


def both_layers(fa: str, fb: str, a: tuple, b: tuple, acc, c_word: int = 0) -> int:
    """The result code of one vector through the reference and through mxsim.dot (they must agree)."""
    ref = dot_general([QuantizedBlock(UNIT, (), a)], [QuantizedBlock(UNIT, (), b)], fa, fb, acc,
                      c=fp32_bits(c_word)).code
    ta = MXTensor.from_codes(np.array([UNIT]), np.array(a, np.uint8), fa)
    tb = MXTensor.from_codes(np.array([UNIT]), np.array(b, np.uint8), fb)
    c = np.array(c_word, np.uint32).view(np.float32)
    fast = mxsim.dot(ta, tb, acc, c=c)
    fast_code = int(fast.view(np.uint32 if fast.dtype == np.float32 else np.uint16))
    assert ref == fast_code, (hex(ref), hex(fast_code))
    return ref


def fp32_word(x: Fraction) -> int:
    word = int(np.float32(float(x)).view(np.uint32))
    assert Fraction(float(np.uint32(word).view(np.float32))) == x  # the test's value is an fp32 value
    return word


# --- hand-worked cases ---------------------------------------------------------------------------------
def test_the_two_hmma_take_k_0_1_and_k_2_3_mod_4():
    """E4M3: 448 * 1 at k = 0, 448 * -1 at k = 1, 2^-9 * 2^-9 = 2^-18 at k = 2. The first HMMA (k = 0, 1
    mod 4) cancels exactly: +0. The second (k = 2, 3 mod 4) holds 2^-18 alone: exact. FADD(+0, 2^-18) =
    2^-18. One step over k = 0..15 would anchor at 448's exponent 8: grid 2^(8 - 25), 2^-18 cut to 0."""
    acc = Accumulator.preset("hopper_fp8_mma")
    assert acc.product_order(32) == (0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29,
                                     2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31)
    a, b = block({0: 0x7E, 1: 0x7E, 2: 0x01}), block({0: 0x38, 1: 0xB8, 2: 0x01})
    assert both_layers(E4M3, E4M3, a, b, acc) == fp32_word(Fraction(1, 2**18))
    contiguous = Accumulator.preset("hopper_fp8_mma", interleave_steps=1, interleave_run=1)
    assert both_layers(E4M3, E4M3, a, b, contiguous) == 0


def test_hmma_keeps_25_fraction_bits_below_the_anchor_and_truncates():
    """E5M2: 1 * 1 (k = 0), -0.875 * 1 (k = 1) and 2^-16 * 2^-9 = 2^-25 (k = 4), all in the first HMMA:
    anchor 0, grid 2^-25, so 2^-25 is kept: 1/8 + 2^-25 (an fp32 value). With 2^-16 * 2^-10 = 2^-26 the
    product falls below the grid and is cut: exactly 1/8, though 1/8 + 2^-26 is an fp32 value."""
    acc = Accumulator.preset("hopper_fp8_mma")
    a = block({0: 0x3C, 1: 0xBB, 4: 0x01})
    assert both_layers(E5M2, E5M2, a, block({0: 0x3C, 1: 0x3C, 4: 0x18}), acc) == fp32_word(
        Fraction(1, 8) + Fraction(1, 2**25))
    assert both_layers(E5M2, E5M2, a, block({0: 0x3C, 1: 0x3C, 4: 0x14}), acc) == fp32_word(Fraction(1, 8))


def test_c_is_added_by_an_fadd_nearest_even():
    """E5M2 1.5 * 2^-14 times 2^-10 = 0.75 * 2^-23 (a quarter ulp short of one ulp of 1); C = 1. The
    HMMA chain gives the product exactly; FADD(1, 0.75 ulp) rounds to nearest: 1 + 2^-23. Were C a
    term of the HMMA (no promotion), the sum would be truncated to 1."""
    a, b = block({0: 0x06}), block({0: 0x14})
    one = fp32_word(Fraction(1))
    assert both_layers(E5M2, E5M2, a, b, Accumulator.preset("hopper_fp8_mma"), one) == one + 1
    in_adder = Accumulator.preset("hopper_fp8_mma", promote_every=None)
    assert both_layers(E5M2, E5M2, a, b, in_adder, one) == one


def test_an_e4m3_subnormal_reads_its_fp16_exponent():
    """E4M3 x E5M2: 2^-9 * 2^15 = 2^6 (k = 0), -2^-9 * 2^15 (k = 4), 2^-9 * 2^-9 = 2^-18 (k = 1), all
    in the first HMMA. Converted to fp16, 2^-9 is normal with exponent -9: anchor -9 + 15 = 6, grid
    2^-19, so 2^-18 survives the cancellation. Read as E4M3 (exponent -6) the anchor is 9 and the grid
    2^-16: the result would be 0."""
    a, b = block({0: 0x01, 4: 0x81, 1: 0x01}), block({0: 0x78, 4: 0x78, 1: 0x18})
    assert both_layers(E4M3, E5M2, a, b, Accumulator.preset("hopper_fp8_mma")) == fp32_word(Fraction(1, 2**18))
    native = Accumulator.preset("hopper_fp8_mma", convert_elements=None)
    assert both_layers(E4M3, E5M2, a, b, native) == 0


def test_fp16_hmma_rounds_each_d_to_fp16():
    """hopper_fp8_mma_f16, E4M3: 1 * 1 (k = 0) and 2^-9 * 2^-2 = 2^-11 (k = 1) in the first HMMA: 1 +
    2^-11 is half an fp16 ulp of 1, a tie, so D1 = 1 (even). The second HMMA adds -1 * 1 (k = 2): +0,
    and the HADD of C = +0 gives +0, where the exact sum 2^-11 (fp16 0x1000) is representable."""
    a, b = block({0: 0x38, 1: 0x01, 2: 0xB8}), block({0: 0x38, 1: 0x28, 2: 0x38})
    assert both_layers(E4M3, E4M3, a, b, Accumulator.preset("hopper_fp8_mma_f16")) == 0x0000
    one_step = Accumulator.preset("hopper_fp8_mma_f16", promote_every=None, interleave_steps=1, interleave_run=1,
                                  step=32)
    assert both_layers(E4M3, E4M3, a, b, one_step) == 0x1000


def test_fp16_d_below_the_normal_range_a_negative_underflow_is_plus_zero():
    """hopper_fp8_wgmma_f16, E5M2: -2^-16 * 2^-10 = -2^-26 with C = +0. Below half of fp16's smallest
    subnormal 2^-24, it rounds to zero: the chip gives +0 (IEEE would give -0)."""
    a, b = block({0: 0x81}), block({0: 0x14})
    assert both_layers(E5M2, E5M2, a, b, Accumulator.preset("hopper_fp8_wgmma_f16")) == 0x0000
    ieee = Accumulator.preset("hopper_fp8_wgmma_f16", zero_sign="keep")
    assert both_layers(E5M2, E5M2, a, b, ieee) == 0x8000


def test_fp16_d_a_subnormal_c_counts_with_exponent_minus_14():
    """hopper_fp8_wgmma_f16, E5M2: 1.5 * 2^-14 * 2^-14 = 6 * 2^-30 (k = 0), -1.25 * 2^-13 * 1.75 * 2^-13
    = -35 * 2^-30 (k = 1), C = 913 * 2^-24 (fp16 subnormal 0x0391, floor(log2 C) = -15). Read as fp16
    reads it, e_C = -14: anchor -14, grid 2^-27: the products cut toward zero to 0 and -32 * 2^-30; C +
    them = 912.5 * 2^-24, a tie: 912 (0x0390). With e_C = -15 the grid is 2^-28: 4 and -32 (* 2^-30),
    912.5625 * 2^-24: 913."""
    a, b = block({0: 0x06, 1: 0x89}), block({0: 0x04, 1: 0x0B})
    c = fp32_word(Fraction(913, 2**24))
    assert both_layers(E5M2, E5M2, a, b, Accumulator.preset("hopper_fp8_wgmma_f16"), c) == 0x0390
    fp32_reading = Accumulator.preset("hopper_fp8_wgmma_f16", c_min_exponent=None)
    assert both_layers(E5M2, E5M2, a, b, fp32_reading, c) == 0x0391


# --- vectors measured on an H200 (../shared/silicon/h200/h200.npz), each one the rule fixed misses ----
# (preset, format of a, format of b, a's 32 codes, b's 32 codes, C as an fp32 word, the chip's D)
MEASURED = [
    # mixed pairs: the E4M3 operand's subnormals read with their fp16 exponents (convert_elements)
    ("hopper_fp8_mma", E4M3, E5M2, "870a0d020a9209818a028a030c091582178f8c0d0c0305928197878406878489",
     "1ad11291b9aeaad404a12134d98fcddedbc16cb6d54391ad7bc8765a20d531c7", 0x440CAA22, 0x00000000),
    ("hopper_fp8_mma", E4M3, E5M2, "87078d0e118603178a88948705888a0d0a820d83158e09159302070308141705",
     "4b01479735f499b88d94170f1a32470352633347905b49ec022164b723672101", 0x80000000, 0x4291D906),
    ("hopper_fp8_mma", E5M2, E4M3, "0ca818968756a7cd0b4f9dd83c4448996a89da2438ca41249c4d3ba3746c1183",
     "0c89068812930b1017108f11950395938a871682868c02128c81151406978816", 0x82000000, 0xC2FE091E),
    # fp16 D of mma.sync: each HMMA rounds to fp16, a nonzero sum rounding to zero is +0, C by an HADD
    ("hopper_fp8_mma_f16", E5M2, E5M2, "0603848b8705038508028789820b89860889020b86888888030b03830809848a",
     "858909018b8b0681098389818505810a888a8a86898a0987870382048b090208", 0x80000000, 0x0000),
    ("hopper_fp8_mma_f16", E4M3, E4M3, "2f30a1dbfb5081eb939f667e936c0d3840dbdd880b4cec52a09f2cfd3bc142fb",
     "46c646c646c646c646c646c646c646c646c646c646c646c646c646c646c646c6", 0x00000000, 0xDC4B),
    ("hopper_fp8_mma_f16", E4M3, E4M3, "918d17978c0a0f8c06948896058b0e940c0d810b161491978815111595849492",
     "8373108283150485961794828483938985128593108104858e83108d8c978287", 0x40934000, 0x3080),
    # fp16 D of wgmma below fp16's normal range: +0 for an underflow, a subnormal C read at -14
    ("hopper_fp8_wgmma_f16", E5M2, E5M2, "8a0b830305898781818605050281048a84830987018383838888838b88040a87",
     "878a888104840b88070882048a098b068b880506078585080108090788068484", 0x33800000, 0x0000),
    ("hopper_fp8_wgmma_f16", E5M2, E5M2, "0702028802058b0b04838108028a85070b010a850407870203020b0286010386",
     "018305010a04870b06838a880489858704060108010582860b088106050b0607", 0xB4000000, 0x8001),
    ("hopper_fp8_wgmma_f16", E5M2, E5M2, "01038203890b878509820a050985060b810789060989888408830b08838a070b",
     "81080409878a09078b020585898309088b8286828a078b880601028b8b828a89", 0x33800000, 0x8001),
]


@pytest.mark.parametrize("preset, fa, fb, a_hex, b_hex, c_word, chip", MEASURED)
def test_measured_vectors(preset, fa, fb, a_hex, b_hex, c_word, chip):
    a, b = tuple(bytes.fromhex(a_hex)), tuple(bytes.fromhex(b_hex))
    assert both_layers(fa, fb, a, b, Accumulator.preset(preset), c_word) == chip


# --- the reference and the fast path on random vectors -------------------------------------------------
def _random_codes(rng, fmt: str, rows: int, n_blocks: int) -> np.ndarray:
    """FP8 codes, mostly small magnitudes (subnormals and cancellation), some of every code."""
    codes = rng.integers(0, 256, size=(rows, 32 * n_blocks), dtype=np.uint8)
    small = rng.random(codes.shape) < 0.6
    tiny = rng.integers(0, 24, size=codes.shape, dtype=np.uint8) | (codes & 0x80)
    return np.where(small, tiny, codes).astype(np.uint8)


@pytest.mark.parametrize("preset", ["hopper_fp8_mma", "hopper_fp8_mma_f16", "hopper_fp8_wgmma_f16"])
@pytest.mark.parametrize("n_blocks", [1, 2])
@pytest.mark.parametrize("fa, fb", [(E4M3, E5M2), (E5M2, E5M2)])
def test_reference_equals_fast_path(preset, n_blocks, fa, fb):
    rng = np.random.default_rng(34 + n_blocks)
    rows = 60
    a, b = _random_codes(rng, fa, rows, n_blocks), _random_codes(rng, fb, rows, n_blocks)
    fp16 = preset.endswith("f16")
    c16 = rng.integers(0, 1 << 16, size=rows, dtype=np.uint16).view(np.float16)
    zero = rng.random(rows) < 0.5
    c16[zero] = np.where(rng.random(zero.sum()) < 0.5, np.float16(0), np.float16(-0.0))
    with np.errstate(invalid="ignore"):  # NaN codes among the random words
        c = c16.astype(np.float32) if fp16 else c16.astype(np.float32) * np.float32(2.0**-20)
    scales = np.full((rows, n_blocks), UNIT)
    acc = Accumulator.preset(preset)
    fast = mxsim.dot(MXTensor.from_codes(scales, a, fa), MXTensor.from_codes(scales, b, fb), acc, c=c)
    fast_words = fast.view(np.uint32 if fast.dtype == np.float32 else np.uint16)
    for r in range(rows):
        blocks = [[QuantizedBlock(UNIT, (), tuple(int(x) for x in m[r, 32 * j: 32 * j + 32])) for j in range(n_blocks)]
                  for m in (a, b)]
        ref = dot_general(blocks[0], blocks[1], fa, fb, acc, c=fp32_bits(int(c.view(np.uint32)[r])))
        assert ref.code == int(fast_words[r]), (r, hex(ref.code), hex(int(fast_words[r])))


# --- options -------------------------------------------------------------------------------------------
def test_new_options_refuse_what_they_cannot_mean():
    with pytest.raises(ValueError, match=r"interleave_run=2 is only used with interleave_steps > 1"):
        Accumulator.preset("hopper_fp8_wgmma", interleave_run=2)
    with pytest.raises(ValueError, match=r"interleave_run=3 must divide step=16"):
        Accumulator.preset("hopper_fp8_mma", interleave_run=3)
    with pytest.raises(ValueError, match=r"convert_elements='fp32' is not allowed; expected one of: fp16"):
        Accumulator.preset("hopper_fp8_mma", convert_elements="fp32")
    with pytest.raises(ValueError, match=r"zero_sign='negative' is not allowed; expected one of: keep, plus"):
        Accumulator.preset("hopper_fp8_mma", zero_sign="negative")
    with pytest.raises(ValueError, match=r"c_min_exponent=-14 is only used with accumulate='fused'"):
        Accumulator(c_min_exponent=-14)
    t = MXTensor.from_codes(np.array([[UNIT]]), np.zeros((1, 32), np.uint8), "mxint8")
    with pytest.raises(ValueError, match=r"convert_elements='fp16' is not allowed for 'int8' elements"):
        mxsim.dot(t, t, Accumulator(mode="aligned", frac_bits=25, accumulate="fused", convert_elements="fp16"))
    wide = Accumulator(mode="aligned", frac_bits=25, accumulate="fused", step=32, interleave_steps=2)
    t8 = MXTensor.from_codes(np.array([[UNIT]]), np.zeros((1, 32), np.uint8), E4M3)
    with pytest.raises(ValueError, match=r"interleave_steps=2 with step=32 .* not allowed for block size 32"):
        mxsim.dot(t8, t8, wide)


# --- the whole H200 measurement, where the shared data is at hand --------------------------------------
_ROOT = Path(__file__).resolve().parents[2]
_SHARED = [p / "shared" / "silicon" / "h200" / "h200.npz" for p in (_ROOT.parent, _ROOT.parent.parent)]
_DATA = next((p for p in _SHARED if p.is_file()), None)
# array prefix -> (preset, whether C is fp16(C_TAG))
_CONFIGURATIONS = {"mma_k32_": ("hopper_fp8_mma", False), "mma_k32_f16_": ("hopper_fp8_mma_f16", True),
                   "k32_f16_": ("hopper_fp8_wgmma_f16", True)}


@pytest.mark.skipif(_DATA is None, reason="../shared/silicon/h200/h200.npz is not here")
@pytest.mark.parametrize("tag", ["e4m3_e4m3", "e5m2_e5m2", "e4m3_e5m2", "e5m2_e4m3"])
@pytest.mark.parametrize("prefix", list(_CONFIGURATIONS))
def test_every_measured_vector(prefix, tag):
    data = np.load(_DATA)
    preset, fp16_c = _CONFIGURATIONS[prefix]
    fa, fb = (f"mxfp8_{name}" for name in tag.split("_"))
    scales = np.full((256, 1), UNIT)
    a = MXTensor.from_codes(scales, data["A_" + tag][:, :32], fa)
    b = MXTensor.from_codes(scales, data["B_" + tag][:, :32], fb)
    c = data["C_" + tag]
    if fp16_c:
        with np.errstate(over="ignore"):
            c = c.astype(np.float16).astype(np.float32)  # C = fp16(C_TAG), nearest-even, overflow to Inf
    got = mxsim.dot(a, b, preset, outer=True, c=c)
    chip = data[prefix + tag]
    words = np.uint32 if chip.dtype == np.float32 else np.uint16
    assert np.array_equal(got.view(words), chip.view(words))


# --- golden suites and check --explain -----------------------------------------------------------------
def test_golden_suites_of_the_mma_presets_generate_and_verify(tmp_path):
    from mxsim.golden import verify
    from mxsim.golden.kinds.registry import suite_from_spec
    from mxsim.golden.storage.files import generate

    for kind, params in [("dot", {"block_a": E4M3, "block_b": E5M2, "preset": "hopper_fp8_mma", "steps": True}),
                         ("dotgeneral", {"block_a": E5M2, "preset": "hopper_fp8_mma_f16", "n_blocks": 2})]:
        suite = suite_from_spec(kind, unit_scales=True, **params)
        directory = generate(suite, tmp_path / kind, count=96)
        assert verify(directory)


def test_check_explain_names_the_mma_preset(tmp_path):
    """A device that runs mma.sync where the suite says wgmma: explain names hopper_fp8_mma."""
    import io
    import json

    from mxsim.golden.device.check import check
    from mxsim.golden.device.explain import explain
    from mxsim.golden.kinds.registry import suite_from_spec
    from mxsim.golden.storage.files import generate

    wgmma = suite_from_spec("dot", block_a=E4M3, block_b=E5M2, preset="hopper_fp8_wgmma", unit_scales=True)
    suite_dir = generate(wgmma, tmp_path / "s", count=96)
    manifest = json.loads((suite_dir / "manifest.json").read_text())
    inputs = {name: [int(line, 16) for line in (suite_dir / f"{name}.hex").read_text().split()]
              for name in manifest["inputs"]}
    device = suite_from_spec("dot", **{**manifest["params"], "preset": "hopper_fp8_mma", "accumulator": {}})
    dut = tmp_path / "dut"
    dut.mkdir()
    rows = [device.compute(dict(zip(inputs, values)))[0] for values in zip(*inputs.values())]
    for f in device.outputs:
        (dut / f.file).write_text("".join(f.to_hex(row[f.name]) + "\n" for row in rows))
    report = check(suite_dir, dut, errors=0)
    assert report.mismatching.size
    found = explain(report, dut, budget=3600.0)
    assert found.best.label == "preset hopper_fp8_mma"
    assert found.best.confirmed[1:] == (0, [])
