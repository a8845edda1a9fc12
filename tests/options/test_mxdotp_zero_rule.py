"""MXDOTP's zero product sum, as its RTL does it (docs/numerics.md sections 4.1 and 6.1).

The expected words come from the arithmetic of cvfpu's ``fpnew_mxdotp_multi_modules.sv``, written
out here independently of mxsim: with X = XA + XB - 254 (the scale codes' unbiased sum) and C's
exponent field e (plus 1 for a subnormal C; a zero C reads field 0), the accumulator's shift is

    s = (ANCHOR - 23) - X + e - 127 = 11 - X + e - 127

(C's LSB 2^(e - 127 - 23) against the grid's LSB 2^(X - 34)). The RTL returns C's own bits
(``result_is_accumulator``) when s > 70 (the bypass) or when s < -24 and the product sum is zero
(C's 24 bits wholly below the grid, past the 24-bit remainder field); for s in [-24, 70] it takes
the ordinary path, which holds C exactly (a left shift of at most 70 bits, or a right shift of at
most 24 into the remainder field) and, with a zero product sum, rounds C + 0 = C exactly: C itself
for a nonzero C, and +0 for a zero C in every rounding mode (the sign comes from the two's-complement
sum; ``effective_subtraction_i`` is tied to 0). For a zero C that is +0 for X in [-186, -92] and
C (-0 kept) outside.

Every case runs through the reference (mxsim.ref) and the fast path (mxsim.dot), every MXDOTP
preset (FP8, FP6, FP4, INT8; fp32 and bf16 destinations) and every rounding mode.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mxsim
from mxsim import Accumulator, MXTensor
from mxsim.formats import get_format
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.dot import dot_general
from mxsim.ref.output import fp32_bits

ROUNDINGS = ("rne", "rtz", "rdn", "rup", "rna")
# preset -> block format of its operands
PRESETS = {
    "mxdotp_fp8": "mxfp8_e4m3", "mxdotp_fp8_bf16": "mxfp8_e5m2",
    "mxdotp_fp6": "mxfp6_e3m2", "mxdotp_fp6_bf16": "mxfp6_e2m3",
    "mxdotp_fp4": "mxfp4_e2m1", "mxdotp_fp4_bf16": "mxfp4_e2m1",
    "mxdotp_int8": "mxint8", "mxdotp_int8_bf16": "mxint8",
}
# a zero C and X = XA + XB - 254: the RTL's D, worked by hand from s = 11 - X + 0 - 127 = -116 - X
NEGATIVE_ZERO_C = {
    -254: True,   # s = 138 > 70: bypass, D = C = -0
    -187: True,   # s = 71 > 70: bypass
    -186: False,  # s = 70: ordinary path, C + 0 = +0
    -150: False,  # s = 34
    -116: False,  # s = 0
    -92: False,   # s = -24: ordinary path (right shift of 24 into the remainder field)
    -91: True,    # s = -25 < -24 with a zero product sum: result_is_accumulator, D = C = -0
    0: True,      # s = -116
    254: True,    # s = -370
}


def scale_codes(x: int) -> tuple[int, int]:
    """E8M0 codes (XA, XB) with XA + XB - 254 = x (both in 0..254, no NaN)."""
    total = x + 254
    return total // 2, total - total // 2


def rtl_d(c_word: int, x: int, dst: str) -> int:
    """The RTL's D word (destination layout) for a zero product sum, from the shift s."""
    mantissa_bits = 23 if dst == "fp32" else 7
    field = (c_word >> mantissa_bits) & 0xFF
    fraction = c_word & ((1 << mantissa_bits) - 1)
    exponent = field + (1 if field == 0 and fraction else 0)  # info_d.is_subnormal
    s = 11 - x + exponent - 127
    if s > 70 or s < -24:
        return c_word  # result_is_accumulator: C's bits
    if field == 0 and fraction == 0:
        return 0  # C + 0 = exact zero: +0 in every rounding mode
    return c_word  # C + 0 = C, exact in the destination


def block_codes(fmt, kind: str, size: int) -> list[int]:
    """The element codes of one block whose products with ``block_codes(fmt, 'b', ...)`` sum to
    zero: kind 'zeros' (+0 and -0 codes mixed) or 'cancel' (1 * 1 + (-1) * 1, the rest zeros)."""
    zero, negative_zero = (int(mxsim.encode(np.float64(v), fmt.element)) for v in (0.0, -0.0))
    codes = [zero if i % 3 else negative_zero for i in range(size)]
    if kind == "cancel":
        codes[0], codes[1] = (int(mxsim.encode(np.float64(v), fmt.element)) for v in (1.0, -1.0))
    return codes


def ones(fmt, size: int) -> list[int]:
    one = int(mxsim.encode(np.float64(1.0), fmt.element))
    return [one, one] + [0] * (size - 2)


def run_both(preset: str, rounding: str, rows: list[tuple[int, str, int]]) -> tuple[list[int], list[int]]:
    """(reference words, fast words) of one block row per (X, 'zeros' | 'cancel', C as an fp32
    word): the a operand carries the products' pattern, b is 1, 1, 0, ... (every product of a zero
    is +-0; the two ones make 1 - 1 = 0 in 'cancel')."""
    acc = Accumulator.preset(preset, output_rounding=rounding)
    fmt = get_format(PRESETS[preset])
    k = fmt.block_size
    a_rows, b_rows, sa, sb, c_words, ref = [], [], [], [], [], []
    for x, kind, c_word in rows:
        xa, xb = scale_codes(x)
        a, b = block_codes(fmt, kind, k), ones(fmt, k)
        a_rows.append(a), b_rows.append(b), sa.append([xa]), sb.append([xb]), c_words.append(c_word)
        got = dot_general([QuantizedBlock(xa, (), tuple(a))], [QuantizedBlock(xb, (), tuple(b))], fmt,
                          accumulator=acc, c=fp32_bits(c_word))
        ref.append(int(got.code))
    ta = MXTensor.from_codes(np.array(sa, np.uint8), np.array(a_rows, np.uint8), fmt)
    tb = MXTensor.from_codes(np.array(sb, np.uint8), np.array(b_rows, np.uint8), fmt)
    c = np.array(c_words, np.uint32).view(np.float32)
    fast = [int(w) for w in mxsim.dot(ta, tb, acc, c=c, details=True).bits]
    return ref, fast


def dst_of(preset: str) -> str:
    return "bf16" if preset.endswith("_bf16") else "fp32"


def as_fp32(word: int, dst: str) -> int:
    return word << 16 if dst == "bf16" else word


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_zero_c_at_the_window_edges(preset, rounding):
    """C = -0 and +0 with all-zero or cancelling products at X = -254, -187, -186, ..., 254: D = -0
    exactly where the hand-worked table says (the bypass, or C wholly below the grid), +0
    elsewhere; C = +0 gives +0 everywhere. Reference and fast path alike."""
    dst = dst_of(preset)
    sign = 1 << (31 if dst == "fp32" else 15)
    rows, expected = [], []
    for x, keeps in NEGATIVE_ZERO_C.items():
        for kind in ("zeros", "cancel"):
            rows += [(x, kind, 0x80000000), (x, kind, 0)]
            expected += [sign if keeps else 0, 0]
            assert rtl_d(sign, x, dst) == expected[-2]  # the table agrees with the shift formula
    ref, fast = run_both(preset, rounding, rows)
    assert ref == expected
    assert fast == expected


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("preset", ["mxdotp_fp8", "mxdotp_fp8_bf16", "mxdotp_fp6", "mxdotp_int8_bf16"])
def test_nonzero_c_at_the_shift_edges(preset, rounding):
    """A nonzero C (either sign; normal or subnormal) whose shift s is -25, -24, 0, 70 or 71 at X = 0,
    -100 and -186, with a zero product sum: D = C in every case (passed on, bypassed, or C + 0
    exact on the ordinary path: the RTL neither rounds nor cuts C there)."""
    dst = dst_of(preset)
    mantissa_bits = 23 if dst == "fp32" else 7
    rows, expected = [], []
    for x in (0, -100, -186):
        for s in (-25, -24, 0, 70, 71):
            field = s - 11 + x + 127
            if not 1 <= field <= 254:
                continue
            for fraction in (0, 5):
                for negative in (0, 1):
                    word = (negative << (mantissa_bits + 8)) | (field << mantissa_bits) | fraction
                    rows.append((x, "cancel" if fraction else "zeros", as_fp32(word, dst)))
                    expected.append(rtl_d(word, x, dst))
                    assert expected[-1] == word
    for x in (-91, -92, -150):  # a subnormal C: exponent field 0 reads as 1 (s = -115 - X)
        word = (1 << (mantissa_bits + 8)) | 3
        rows.append((x, "zeros", as_fp32(word, dst)))
        expected.append(rtl_d(word, x, dst))
    assert len(rows) >= 20
    ref, fast = run_both(preset, rounding, rows)
    assert ref == expected
    assert fast == expected


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_scale_sum_matches_the_rtl_shift_rule(preset):
    """C = -0 with zero products at every X from -254 to 254 (nearest-even; the other modes agree
    by the edge tests): D = -0 exactly for X < -186 and X > -92, the reference and the fast path
    equal to the RTL's rule at every X."""
    dst = dst_of(preset)
    sign = 1 << (31 if dst == "fp32" else 15)
    xs = range(-254, 255)
    ref, fast = run_both(preset, "rne", [(x, "zeros", 0x80000000) for x in xs])
    expected = [rtl_d(sign, x, dst) for x in xs]
    assert [x for x, w in zip(xs, expected) if w == 0] == list(range(-186, -91))
    assert ref == expected
    assert fast == expected


def test_the_presets_state_the_window():
    """Every MXDOTP preset passes C only outside [-24, 70] (C's shift): the window rule with
    bypass=70 and a zero C read at exponent -127."""
    for name in PRESETS:
        acc = Accumulator.preset(name)
        assert (acc.zero_product_sum, acc.bypass, acc.c_zero_exponent) == ("pass_c_outside_window", 70, -127)


def test_plain_pass_c_keeps_a_negative_zero_c_everywhere():
    """zero_product_sum='pass_c' (no window) passes -0 at X = -150, inside MXDOTP's window, where
    the window rule gives +0: the two options differ exactly there."""
    fmt = get_format("mxfp8_e4m3")
    xa, xb = scale_codes(-150)
    blocks = ([QuantizedBlock(xa, (), tuple(block_codes(fmt, "zeros", 32)))],
              [QuantizedBlock(xb, (), tuple(ones(fmt, 32)))])
    for rule, expected in (("pass_c", 0x80000000), ("pass_c_outside_window", 0), ("add", 0)):
        acc = dataclasses.replace(Accumulator.preset("mxdotp_fp8"), zero_product_sum=rule)
        assert dot_general(*blocks, fmt, accumulator=acc, c=fp32_bits(0x80000000)).code == expected, rule


def test_the_window_rule_is_refused_without_a_fixed_grid():
    """pass_c_outside_window measures C against the fixed grid 2^(XA+XB-F): refused with
    anchor='max', naming the option and the anchor."""
    with pytest.raises(ValueError) as error:
        Accumulator.preset("blackwell_mxf8f6f4", zero_product_sum="pass_c_outside_window")
    assert "pass_c_outside_window" in str(error.value) and "anchor='fixed'" in str(error.value)


@pytest.mark.parametrize("preset, block", [("mxdotp_fp8", "mxfp8_e4m3"), ("mxdotp_int8_bf16", "mxint8")])
def test_golden_stimulus_aims_zero_cs_at_the_window_edge(preset, block):
    """The directed C vectors of an MXDOTP suite (golden.stimulus.accumulator.with_c) include
    zero products with a zero C at X = -92 (the edge: C + 0) and X = -91 (passed on), and the
    suite's expected result there is the RTL's: +0 at -92, C itself at -91."""
    import random

    from mxsim.golden import suite_from_spec
    from mxsim.golden.stimulus.accumulator import with_c

    suite = suite_from_spec("dot", block_a=block, preset=preset, steps=True)
    dst = dst_of(preset)
    sign = 1 << (31 if dst == "fp32" else 15)
    seen = set()
    for row, _ in with_c(suite, [], random.Random(0)):
        x = (row["a_scale"] + row["b_scale"]) - 254
        if row["a_elems"] == 0 and row["c"] in (0, sign) and x in (-92, -91):
            outputs, _ = suite.compute(row)
            assert outputs["result"] == rtl_d(row["c"], x, dst), (x, hex(row["c"]))
            seen.add(x)
    assert seen == {-92, -91}
