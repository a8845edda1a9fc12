"""The presets of real matrix and dot units (docs/numerics.md section 4.1 and 6.1): hand-worked examples of every
rule, computed here from the contract's definitions with Fractions (not with mxsim), the fast path
against the independent oracle of test_fused_fast and against the reference, and the refusal of
operands a unit does not take.

Each example also checks that it exercises its rule: the same operands under the configuration with
that one rule changed give another word.
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st
from test_fused_steps_fast import _settings, check_against_oracle, check_against_reference, random_c, random_tensor

import mxsim
from mxsim import Accumulator, MXTensor
from mxsim.cli import build_parser, main
from mxsim.fileformat import save
from mxsim.formats import BlockFormat, FORMATS, get_format
from mxsim.golden import suite_from_spec
from mxsim.options.accumulate import PRESETS
from mxsim.options.presets import PRESET_SOURCES

TWO = Fraction(2)
ROUNDINGS = ("rne", "rtz", "rup", "rdn", "rna")


# --- helpers: exact values in, words out -----------------------------------------------------------
def floor_log2(q: Fraction) -> int:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n << max(-e, 0)) >= (d << max(e, 0)) else e - 1


def tensor(values, block: str, scale: int = 127, k: int = 32) -> MXTensor:
    """One row of one block: element codes of the exact ``values`` (padded with +0), E8M0 ``scale``."""
    fmt = get_format(block)
    codes = [int(mxsim.encode(np.float64(v), fmt.element)) for v in values] + [0] * (k - len(values))
    return MXTensor.from_codes(np.array([[scale]], np.uint8), np.array([codes], np.uint8), fmt)


def word(a, b, acc, c_word: int = 0, details: bool = False):
    c = np.array([c_word], np.uint32).view(np.float32)
    got = mxsim.dot(a, b, acc, c=c, details=True)
    return (int(got.bits[0]), [int(s) for s in got.steps[0]]) if details else int(got.bits[0])


def f32(x: Fraction | float) -> int:
    """The fp32 word of a value fp32 holds exactly (asserted)."""
    w = int(np.array([float(x)], np.float32).view(np.uint32)[0])
    assert Fraction(float(np.array([w], np.uint32).view(np.float32)[0])) == Fraction(x)
    return w


def round_float(x: Fraction, ebits: int, mbits: int, rounding: str = "rne") -> Fraction | None:
    """x rounded to the IEEE-style float (bias 2^(ebits-1) - 1, subnormals); None on overflow."""
    bias = (1 << (ebits - 1)) - 1
    emin, emax = 1 - bias, (1 << ebits) - 2 - bias
    if x == 0:
        return Fraction(0)
    e = max(floor_log2(abs(x)), emin)
    units = abs(x) / TWO ** (e - mbits)
    n, rem = units.numerator // units.denominator, units - units.numerator // units.denominator
    up = {"rne": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1), "rtz": False,
          "rup": rem > 0 and x > 0, "rdn": rem > 0 and x < 0, "rna": rem >= Fraction(1, 2)}[rounding]
    rounded = (n + up) * TWO ** (e - mbits)
    if rounded > (2 - TWO**-mbits) * TWO**emax:
        return None
    return rounded if x > 0 else -rounded


def floor_to(x: Fraction, grid: int) -> Fraction:
    """x cut to the grid 2^grid toward minus infinity."""
    units = x / TWO**grid
    return (units.numerator // units.denominator) * TWO**grid


def trunc_to(x: Fraction, grid: int) -> Fraction:
    units = abs(x) / TWO**grid
    q = (units.numerator // units.denominator) * TWO**grid
    return q if x >= 0 else -q


# --- zero_product_sum (contract 4.1, MXDOTP 6.1) ---------------------------------------------------
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_mxdotp_zero_products_keep_a_negative_zero_c(rounding):
    """All products +-0, or 1*1 + (-1)*1 cancelling exactly: D = C = -0 in every rounding mode; C + a
    product cancelling to zero (C = -1, product 1) gives +0; the contract's default (add) gives +0."""
    acc = Accumulator.preset("mxdotp_fp8", output_rounding=rounding)
    zeros = tensor([0.0, -0.0, 0.0], "mxfp8_e4m3")
    assert word(zeros, zeros, acc, 0x80000000) == 0x80000000
    cancel_a, cancel_b = tensor([1.0, -1.0], "mxfp8_e4m3"), tensor([1.0, 1.0], "mxfp8_e4m3")
    assert word(cancel_a, cancel_b, acc, 0x80000000) == 0x80000000
    one = tensor([1.0], "mxfp8_e4m3")
    assert word(one, one, acc, f32(-1)) == 0
    add = dataclasses.replace(acc, zero_product_sum="add")
    assert word(zeros, zeros, add, 0x80000000) == 0
    assert word(cancel_a, cancel_b, add, 0x80000000) == 0


def test_pass_c_under_anchor_max_keeps_c():
    """zero_product_sum='pass_c' with anchor='max' (Blackwell's adder): a zero product sum passes
    C = -0 and a C that the grid would cut: C = 1 + 2^-23 with zero products stays 1 + 2^-23
    (the adder, F = 25 below e_C = 0, would keep it too); -0 stays -0 where add gives +0."""
    acc = Accumulator.preset("blackwell_mxf8f6f4", zero_product_sum="pass_c")
    zeros = tensor([0.0], "mxfp8_e4m3")
    assert word(zeros, zeros, acc, 0x80000000) == 0x80000000
    assert word(zeros, zeros, Accumulator.preset("blackwell_mxf8f6f4"), 0x80000000) == 0


# --- shift_rounding="floor" (contract 4.1) ---------------------------------------------------------
def test_floor_cuts_products_toward_minus_infinity():
    """Products 4 and -1.25 (E4M3, scales 1), F = 1: anchor 2, grid 2^1. floor(-1.25 / 2) = -1 LSB
    (-2), truncate gives 0: D = 4 - 2 = 2.0 under floor, 4.0 under truncate. Separate accumulation
    (an aligned register) cuts the same way."""
    a, b = tensor([4.0, -1.25], "mxfp8_e4m3"), tensor([1.0, 1.0], "mxfp8_e4m3")
    fused = Accumulator(mode="aligned", frac_bits=1, accumulate="fused", shift_rounding="floor")
    assert word(a, b, fused) == f32(4 + floor_to(Fraction(-5, 4), 1)) == f32(2)
    assert word(a, b, dataclasses.replace(fused, shift_rounding="truncate")) == f32(4)
    separate = Accumulator(mode="aligned", frac_bits=1, shift_rounding="floor")
    assert word(a, b, separate) == f32(2)
    assert word(a, b, dataclasses.replace(separate, shift_rounding="truncate")) == f32(4)


def test_floor_cuts_c_too():
    """anchor='max': C is a term and is cut like the products. Product 4 (anchor 2, F = 1, grid 2):
    C = -1.25 floors to -2, D = 2.0; truncated C is 0, D = 4.0."""
    a, b = tensor([4.0], "mxfp8_e4m3"), tensor([1.0], "mxfp8_e4m3")
    acc = Accumulator(mode="aligned", frac_bits=1, accumulate="fused", shift_rounding="floor")
    assert word(a, b, acc, f32(-1.25)) == f32(2)
    assert word(a, b, dataclasses.replace(acc, shift_rounding="truncate"), f32(-1.25)) == f32(4)


# --- output as any float format (contract 4.1) -----------------------------------------------------
@pytest.mark.parametrize("ebits,mbits", [(8, 16), (8, 18), (5, 10), (4, 3)])
def test_custom_output_formats(ebits, mbits):
    """output='fp32_eXmY': the sum rounded to X exponent bits (bias 2^(X-1) - 1) and Y fraction bits,
    stored as the fp32 word of that value; beyond its largest value Inf (output_overflow='inf').
    C alone (zero products, F = 40: exact): 1 + 2^-(Y+1) + 2^-(Y+3) rounds up at Y bits, 1 + 2^-(Y+2)
    down (for Y + 3 <= 23)."""
    name = f"fp32_e{ebits}m{mbits}"
    acc = Accumulator(mode="aligned", frac_bits=40, accumulate="fused", output=name)
    zeros = tensor([0.0], "mxfp8_e4m3")
    if mbits + 3 <= 23:
        up, down = 1 + TWO ** -(mbits + 1) + TWO ** -(mbits + 3), 1 + TWO ** -(mbits + 2)
        assert word(zeros, zeros, acc, f32(up)) == f32(round_float(up, ebits, mbits)) == f32(1 + TWO**-mbits)
        assert word(zeros, zeros, acc, f32(down)) == f32(round_float(down, ebits, mbits)) == f32(1)
    if ebits < 8:
        big = (2 - TWO**-mbits) * TWO ** ((1 << ebits) - 2 - ((1 << (ebits - 1)) - 1))  # the largest finite value
        assert word(zeros, zeros, acc, f32(big)) == f32(big)
        assert word(zeros, zeros, acc, f32(2 * big)) == 0x7F800000  # overflow: +Inf as an fp32 word
        assert word(zeros, zeros, acc, f32(-2 * big)) == 0xFF800000
    with pytest.raises(ValueError, match="fp32_eXmY"):
        Accumulator(output="fp32_e9m3")


def test_custom_output_without_subnormals_is_ftz():
    """'Without subnormals' is ftz=True: fp32_e5m10's smallest subnormal 2^-24 flushes to +0."""
    zeros = tensor([0.0], "mxfp8_e4m3")
    acc = Accumulator(mode="aligned", frac_bits=40, accumulate="fused", output="fp32_e5m10")
    assert word(zeros, zeros, acc, f32(TWO**-24)) == f32(TWO**-24)
    assert word(zeros, zeros, dataclasses.replace(acc, ftz=True), f32(TWO**-24)) == 0


# --- AMD CDNA3 (contract 6.1) ----------------------------------------------------------------------
def cdna3_steps(a_vals, b_vals, c: Fraction, emin: int) -> list[Fraction | None]:
    """Every step's D of the CDNA3 definition (6.1) for element values (a zero element reads exponent
    -126, a subnormal its format's emin); D rounded to fp32 nearest-even (None: overflow)."""
    out = []
    for first in range(0, len(a_vals), 16):
        terms = []
        for x, y in zip(a_vals[first:first + 16], b_vals[first:first + 16]):
            ex = max(floor_log2(abs(x)), emin) if x else -126
            ey = max(floor_log2(abs(y)), emin) if y else -126
            terms.append((x * y, ex + ey))
        halves = []
        for part in (terms[0::2], terms[1::2]):
            e_h = max(e for _, e in part)
            halves.append((sum(trunc_to(v, e_h - 24) for v, _ in part), e_h))
        e = max(e_h for _, e_h in halves)
        s = sum(floor_to(v, e - 24) for v, _ in halves)
        e_c = max(floor_log2(abs(c)), -126) if c else -126
        joint = max(e, e_c)
        total = floor_to(s, joint - 31) + (floor_to(c, joint - 24) if e_c >= joint - 25 else 0)
        c = round_float(total, 8, 23)
        out.append(c)
    return out


# CDNA3's arithmetic on OCP FP8 codes (the same datapath; the preset itself takes FNUZ elements)
CDNA3_OCP = dataclasses.replace(PRESETS["cdna3_fp8_mfma"], elements=None)


def test_cdna3_halves_are_cut_with_floor():
    """Even products 448*448 and 2^-4 * 2^-3 = 2^-7 (one grid, E = 16, LSB 2^-8); the odd product
    -2^-9 * 2^-9 = -2^-18 is exact on its own grid 2^-36, then floored to 2^-8: -2^-8, so S =
    200704 + 2^-8 and D rounds to 200704. Truncating the halves instead gives S = 200704 + 2^-7,
    the same D here; with C = 2^-6 the two differ: floor 200704 + 2^-6 + 2^-8 -> 200704 + 2^-6,
    truncate 200704 + 2^-6 + 2^-7 (a tie, to even: 200704 + 2^-5)."""
    a = [448.0, TWO**-9, TWO**-4]
    b = [448.0, -(TWO**-9), TWO**-3]
    pad = [Fraction(0)] * 29
    for c in (Fraction(0), TWO**-6):
        expected = cdna3_steps([Fraction(x) for x in a] + pad, [Fraction(x) for x in b] + pad, c, -6)
        got, steps = word(tensor(a, "mxfp8_e4m3"), tensor(b, "mxfp8_e4m3"), CDNA3_OCP, f32(c), details=True)
        assert steps == [f32(d) for d in expected] and got == f32(expected[-1])
    assert expected[-1] == 200704 + TWO**-6
    truncated = dataclasses.replace(CDNA3_OCP, sum_rounding="truncate")
    assert word(tensor(a, "mxfp8_e4m3"), tensor(b, "mxfp8_e4m3"), truncated, f32(TWO**-6)) == f32(200704 + TWO**-5)


def test_cdna3_every_rule_changes_the_result():
    """Hand-picked operands where each rule decides the word: the exact definition (6.1) computed
    here gives the expected steps; switching one rule off (a single adder, truncation instead of
    floor, one grid for C, no drop of C) gives another word for at least one of the cases."""
    cases = [
        # (a values, b values, C): one step of 16 (zeros beyond)
        ([448.0, TWO**-9, TWO**-4], [448.0, -(TWO**-9), TWO**-3], TWO**-6),  # odd half floored apart
        ([448.0, 0.0, TWO**-4], [448.0, 0.0, TWO**-3], TWO**-9),  # C's 2^-9 is below C's grid 2^-8
        ([448.0, 0.0, TWO**-3, 0.0, TWO**-4], [448.0, 0.0, TWO**-3, 0.0, TWO**-3], -Fraction(3, 2**11)),  # C dropped
        ([0.0], [448.0], -(TWO**-149)),  # zero products read -126 + 8: E' = -118, C floored to 2^-142
    ]
    variants = {
        "partial_sums": dataclasses.replace(CDNA3_OCP, partial_sums=1),
        "sum_rounding": dataclasses.replace(CDNA3_OCP, sum_rounding="truncate"),
        "c_frac_bits": dataclasses.replace(CDNA3_OCP, c_frac_bits=31),
        "c_drop": dataclasses.replace(CDNA3_OCP, c_drop=None),
        "zero_exponent": dataclasses.replace(CDNA3_OCP, zero_exponent=None),
    }
    differs = {name: False for name in variants}
    for a, b, c in cases:
        a_t, b_t = tensor(a, "mxfp8_e4m3"), tensor(b, "mxfp8_e4m3")
        pad = [Fraction(0)] * (32 - len(a))
        expected = cdna3_steps([Fraction(x) for x in a] + pad, [Fraction(x) for x in b] + pad, c, -6)
        got, steps = word(a_t, b_t, CDNA3_OCP, f32(c), details=True)
        assert steps == [f32(d) for d in expected], (a, b, c)
        for name, acc in variants.items():
            differs[name] |= word(a_t, b_t, acc, f32(c)) != got
    assert all(differs.values()), differs


def test_cdna3_c_dropped_and_cut():
    """C = 2^-10 beside one product 448*448 (E' = 16): e_C = -10 < 16 - 25, dropped: D = 200704.
    C = 2^-9 (e_C = -9 = E' - 25) is kept, cut to 2^(16 - 24) = 2^-8 with floor: 0, D = 200704 too;
    C = -2^-9 floors to -2^-8: D = 200704 - 2^-8 rounds to 200704 (fp32 ulp 2^-6). C = 3 * 2^-8 is
    kept (3 * 2^-8 on the grid): D = fp32(200704 + 3 * 2^-8) = 200704 + 2^-6."""
    a, b = tensor([448.0], "mxfp8_e4m3"), tensor([448.0], "mxfp8_e4m3")
    assert word(a, b, CDNA3_OCP, f32(TWO**-10)) == f32(200704)
    assert word(a, b, CDNA3_OCP, f32(3 * TWO**-8)) == f32(200704 + TWO**-6)
    # C dropped although it would tip the rounding: 2^-7 * 1.5 is 25.4 binades below
    assert word(a, b, CDNA3_OCP, f32(Fraction(3, 2**11))) == f32(200704)


# --- NVIDIA fp16 D, Ada's two steps, RTX Blackwell --------------------------------------------------
@pytest.mark.parametrize("preset", ["ada_fp8_mma_f16", "hopper_fp8_wgmma_f16", "rtx_blackwell_f8f6f4_f16"])
def test_fp16_d_nan_and_overflow(preset):
    """fp16 D: a NaN product gives 0x7FFF; 448 * 448 = 200704 > 65504 overflows to +Inf (0x7C00);
    1 + 2^-11 (C = 1, product 2^-11) is a tie rounded to even: 1.0 (0x3C00)."""
    acc = PRESETS[preset]
    nan = tensor([float("nan")], "mxfp8_e4m3")
    one = tensor([1.0], "mxfp8_e4m3")
    assert word(nan, one, acc) == 0x7FFF
    big = tensor([448.0], "mxfp8_e4m3")
    assert word(big, big, acc) == 0x7C00
    small_a, small_b = tensor([TWO**-5], "mxfp8_e4m3"), tensor([TWO**-6], "mxfp8_e4m3")
    assert word(small_a, small_b, acc, f32(1)) == 0x3C00
    assert word(small_a, small_b, acc, f32(1 + TWO**-10)) == 0x3C02  # 1 + 2^-10 + 2^-11: a tie up to even


def test_ada_two_steps_of_16():
    """Ada: two fused steps of 16. Products 1 (index 0) and 2^-14 (index 16): F = 13, so one step of
    32 (Hopper) cuts 2^-14 to 0: D = 1.0; two steps keep it in the second step, whose anchor is C's
    exponent 0: again cut (2^-14 < 2^-13). Product 2^-13 at index 16 is kept by both, 1 + 2^-13 at
    13 fraction bits: 0x3F800400. With C = 2^-14 and products 1 at 0 and 2^-14 at 16: Hopper
    cuts both small terms (D = 1), Ada's first step cuts C (D1 = 1), its second cuts the product."""
    a = tensor([1.0] + [0.0] * 15 + [TWO**-7], "mxfp8_e4m3")
    b = tensor([1.0] + [0.0] * 15 + [TWO**-6], "mxfp8_e4m3")
    _, steps = word(a, b, PRESETS["ada_fp8_mma"], 0, details=True)
    assert steps == [f32(1), f32(1 + TWO**-13)]
    assert word(a, b, PRESETS["hopper_fp8_wgmma"]) == f32(1 + TWO**-13)
    # two products of 2^-14 in the second step: 2^-13 kept by Ada's grid at anchor 0? no: the anchor
    # is max(e_C = 0, -14) = 0, grid 2^-13, each 2^-14 cut to 0
    a2 = tensor([1.0] + [0.0] * 15 + [TWO**-7, TWO**-7], "mxfp8_e4m3")
    b2 = tensor([1.0] + [0.0] * 15 + [TWO**-7, TWO**-7], "mxfp8_e4m3")
    assert word(a2, b2, PRESETS["ada_fp8_mma"]) == f32(1)


def test_rtx_blackwell_names():
    assert PRESETS["rtx_blackwell_mxf8f6f4"] is PRESETS["blackwell_mxf8f6f4"]
    assert PRESETS["rtx_blackwell_mxf4nvf4"] is PRESETS["blackwell_mxf4nvf4"]
    plain = PRESETS["rtx_blackwell_f8f6f4"]
    unscaled = dataclasses.replace(PRESETS["blackwell_mxf8f6f4"], elements=None)
    assert dataclasses.replace(plain, elements=None) == unscaled
    with pytest.raises(ValueError, match="fp6_e3m2"):
        mxsim.dot(tensor([1.0], "mxfp6_e3m2"), tensor([1.0], "mxfp6_e3m2"), "rtx_blackwell_f8f6f4")


# --- multi-format MXDOTP (6.1) ---------------------------------------------------------------------
def test_mxdotp_fp6_steps_of_11_per_block():
    """FP6 steps of 11: a block of 32 is 11 + 11 + 10 (one scale pair per instruction). Ones times
    ones with C = 2^24 (fp32 ulp 2) and round-to-nearest-even: each step adds its product count and
    rounds (an odd sum is a tie, to even), so steps of 11, 11, 10 per block give 2^24 + 12, 24, 34,
    44, 56, 66, where steps of 11 running across the blocks (11, 11, 11, 11, 11, 9) would give 12,
    24, 36, 48, 60, 68."""
    fp6_one = int(mxsim.encode(np.float64(1.0), "fp6_e3m2"))
    a = MXTensor.from_codes(np.array([[127, 127]], np.uint8), np.full((1, 64), fp6_one, np.uint8), "mxfp6_e3m2")

    def chain(counts):
        words, c = [], Fraction(2**24)
        for n in counts:
            c = round_float(c + n, 8, 23)
            words.append(f32(c))
        return words

    _, steps = word(a, a, PRESETS["mxdotp_fp6"], f32(TWO**24), details=True)
    assert steps == chain([11, 11, 10, 11, 11, 10]) == [f32(2**24 + d) for d in (12, 24, 34, 44, 56, 66)]
    assert chain([11, 11, 11, 11, 11, 9]) != steps


def test_mxdotp_fp4_steps_of_16_and_int8_integers():
    """FP4 steps of 16: 32 products of 6 * 6 = 36 with C = 0 give steps 576, 1152. INT8 elements are
    plain integers: codes 100 and -3 (values 100/64, -3/64 as MXINT8) give the product -300, times
    2^(XA + XB) = 2^(-2 + 0): D = -75, not OCP's -300 / 4096 / 4."""
    six = tensor([6.0] * 32, "mxfp4_e2m1")
    _, steps = word(six, six, PRESETS["mxdotp_fp4"], 0, details=True)
    assert steps == [f32(576), f32(1152)]
    a = tensor([Fraction(100, 64)], "mxint8", scale=125)
    b = tensor([Fraction(-3, 64)], "mxint8", scale=127)
    assert word(a, b, PRESETS["mxdotp_int8"]) == f32(-75)
    scaled = dataclasses.replace(PRESETS["mxdotp_int8"], int_elements="scaled")
    assert word(a, b, scaled) == f32(Fraction(-300, 4096 * 4))


@pytest.mark.parametrize("rounding", ["rne", "rtz", "rup"])
def test_mxdotp_bf16_destination(rounding):
    """BF16 D: one rounding of C + products to bf16 with the instruction's mode: C = 1, product
    2^-8 + 2^-10 (2^-4 * (2^-4 + 2^-6)): 1 + 2^-8 + 2^-10 -> bf16 (7 fraction bits); NaN 0x7FC0."""
    a = tensor([TWO**-4], "mxfp8_e4m3")
    b = tensor([TWO**-4 + TWO**-6], "mxfp8_e4m3")
    acc = Accumulator.preset("mxdotp_fp8_bf16", output_rounding=rounding)
    expected = round_float(1 + TWO**-8 + TWO**-10, 8, 7, rounding)
    assert word(a, b, acc, f32(1)) == f32(expected) >> 16
    nan = tensor([float("nan")], "mxfp8_e4m3")
    assert word(nan, b, acc) == 0x7FC0


# --- operands a unit does not take -----------------------------------------------------------------
def test_presets_refuse_operands_they_do_not_take(tmp_path, capsys):
    """A k=64 FP4 preset on MXFP8 tensors, FNUZ instructions on OCP codes, MXDOTP with mixed FP8:
    refused in the API and the CLI, naming what the preset accepts."""
    e4m3 = tensor([1.0], "mxfp8_e4m3")
    e5m2 = tensor([1.0], "mxfp8_e5m2")
    with pytest.raises(ValueError, match="accepts element formats: fp4_e2m1"):
        mxsim.dot(e4m3, e4m3, "blackwell_mxf4nvf4")
    with pytest.raises(ValueError, match="accepts element formats: fp8_e4m3fnuz, fp8_e5m2fnuz"):
        mxsim.dot(e4m3, e4m3, "cdna3_fp8_mfma")
    with pytest.raises(ValueError, match="the same element format"):
        mxsim.dot(e4m3, e5m2, "mxdotp_fp8")
    with pytest.raises(ValueError, match="accepts element formats: fp4_e2m1"):
        suite_from_spec("dot", block_a="mxfp8_e4m3", preset="mxdotp_fp4")
    save(e4m3, tmp_path / "a.mx")
    assert main(["dot", str(tmp_path / "a.mx"), str(tmp_path / "a.mx"), str(tmp_path / "o.npy"),
                 "--preset", "cdna3_fp8_mfma"]) == 2
    assert "fp8_e4m3fnuz" in capsys.readouterr().err


def test_presets_are_listed_with_their_sources_and_recorded():
    """--help of dot and golden generate lists every preset with its source (from PRESETS); a suite's
    manifest records the preset and every field (elements as a list, read back as the same tuple)."""
    parser = build_parser()
    subparsers = parser._subparsers._group_actions[0].choices
    dot_help = subparsers["dot"].format_help()
    generate_help = subparsers["golden"]._subparsers._group_actions[0].choices["generate"].format_help()
    for name in PRESETS:
        assert f"{name}:" in dot_help and f"{name}:" in generate_help, name
        assert PRESET_SOURCES[name]
    suite = suite_from_spec("dot", block_a="mxfp6_e3m2", preset="mxdotp_fp6", steps=True)
    params = json.loads(json.dumps(suite.params()))
    assert params["preset"] == "mxdotp_fp6" and params["accumulator"]["elements"] == ["fp6_e3m2", "fp6_e2m3"]
    again = suite_from_spec("dot", **params)
    assert again.acc == suite.acc and again.step_count == 3


# --- fast path == oracle == reference --------------------------------------------------------------
UNIT_CASES = [
    ("mxdotp_fp8", "mxfp8_e5m2", "mxfp8_e5m2"),
    ("mxdotp_fp8_bf16", "mxfp8_e4m3", "mxfp8_e4m3"),
    ("mxdotp_fp6", "mxfp6_e3m2", "mxfp6_e3m2"),
    ("mxdotp_fp6_bf16", "mxfp6_e2m3", "mxfp6_e2m3"),
    ("mxdotp_fp4", "mxfp4_e2m1", "mxfp4_e2m1"),
    ("mxdotp_fp4_bf16", "mxfp4_e2m1", "mxfp4_e2m1"),
    ("mxdotp_int8", "mxint8", "mxint8"),
    ("mxdotp_int8_bf16", "mxint8", "mxint8"),
    ("ada_fp8_mma", "mxfp8_e4m3", "mxfp8_e5m2"),
    ("ada_fp8_mma_f16", "mxfp8_e5m2", "mxfp8_e4m3"),
    ("hopper_fp8_wgmma_f16", "mxfp8_e4m3", "mxfp8_e4m3"),
    ("rtx_blackwell_f8f6f4", "mxfp4_e2m1", "mxfp8_e4m3"),
    ("rtx_blackwell_f8f6f4_f16", "mxfp8_e5m2", "mxfp8_e5m2"),
    ("cdna3_fp8_mfma", "mxfp8_e4m3", "mxfp8_e5m2"),
    ("cdna3_fp8_mfma", "mxfp8_e5m2", "mxfp8_e5m2"),
]
FNUZ_BLOCKS = {"fp8_e4m3fnuz": "mxfp8_e4m3fnuz", "fp8_e5m2fnuz": "mxfp8_e5m2fnuz"}


def _unit(preset: str) -> Accumulator:
    acc = PRESETS[preset]
    return dataclasses.replace(acc, elements=None) if preset.startswith("cdna3") else acc


@given(case=st.sampled_from(UNIT_CASES), seed=st.integers(0, 2**32 - 1), rounding=st.sampled_from(ROUNDINGS),
       p_zero=st.sampled_from([0.0, 0.3, 0.95]), spread=st.sampled_from([0, 3, 30]), n_blocks=st.integers(1, 3))
@_settings(60)
def test_unit_presets_fast_equals_oracle_and_reference(case, seed, rounding, p_zero, spread, n_blocks):
    """Random and structured operands (zeros, largest magnitudes, specials, edge scales, C of every
    class) under every new preset (MXDOTP with its instruction's rounding modes): the fast path
    agrees with the oracle of test_fused_fast (the contract's definitions in Fractions) and the
    reference, every step."""
    preset, name_a, name_b = case
    acc = _unit(preset)
    if preset.startswith("mxdotp"):
        acc = dataclasses.replace(acc, output_rounding=rounding)
    rng = np.random.default_rng(seed)
    knobs = {"p_zero": p_zero, "p_special": 0.02, "p_top": 0.2, "spread": spread, "p_edge": 0.05}
    a = random_tensor(rng, name_a, 2, n_blocks, **knobs)
    b = random_tensor(rng, name_b, 2, n_blocks, **knobs)
    c = random_c(rng, 2, 0.5)
    if acc.output.startswith("fp32") or acc.output == "bf16" or acc.output == "fp16":
        check_against_oracle(a, b, acc, c)
    check_against_reference(a, b, acc, c)


def test_cdna3_on_fnuz_formats():
    """The preset itself on its FNUZ operands (catalogue names of contract 1), against the reference."""
    assert all(name in FORMATS for name in FNUZ_BLOCKS)  # the catalogue has them since the FNUZ formats landed
    rng = np.random.default_rng(24)
    for ea in FNUZ_BLOCKS:
        for eb in FNUZ_BLOCKS:
            fmt_a = BlockFormat(f"mx_{ea}", get_format(ea), 32, get_format("e8m0"))
            fmt_b = BlockFormat(f"mx_{eb}", get_format(eb), 32, get_format("e8m0"))
            codes = []
            for _ in range(2):  # every code; zeros and the one NaN (0x80) rarer / more frequent as drawn
                c = rng.integers(0, 256, size=(4, 64))
                c = np.where((c == 0x80) & (rng.random(c.shape) < 0.9), 0x01, c)
                c = np.where(rng.random(c.shape) < 0.3, 0, c)
                codes.append(c.astype(np.uint8))
            scales = np.full((4, 2), 127, np.uint8)
            a = MXTensor.from_codes(scales, codes[0], fmt_a)
            b = MXTensor.from_codes(scales, codes[1], fmt_b)
            c = random_c(rng, 4, 0.5)
            check_against_reference(a, b, PRESETS["cdna3_fp8_mfma"], c)
            check_against_oracle(a, b, PRESETS["cdna3_fp8_mfma"], c)
