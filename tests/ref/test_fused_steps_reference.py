"""Fused multiply-accumulate steps in the reference model (mxsim.ref.dot.dot_general with
accumulate="fused", mxsim.ref.fused) and the accumulator input C of both accumulations.

Binding definition: /work/wt/SPEC_fused.md and docs/numerics.md sections 4, 4.1, 6.1.

Every expected value is independent of mxsim's codecs and datapath:

* element, scale and fp32 codes are decoded by the test-local ``decode_float`` written from the
  format definitions; element codes are found by searching those decodings (``code_of``);
* the fused definition is re-stated in ``fused_oracle`` straight from the spec, on decoded values
  (Fractions), with Python's ``int()`` (truncation) and ``round()`` (nearest-even) for the cut;
* output bits come from the test-local ``round_bits`` (checked against NumPy / ml_dtypes casts),
  or were worked out by hand in the comments.

mxsim is used only to build inputs (QuantizedBlock, BlockFormat, quantize_block) and as the code
under test.

Sections: 0 oracle self-checks, 1 separate accumulation with C, 2 hand-worked fused cases (one
per knob), 3 the four measured presets, 4 specials, 5 oracle and property tests, 6 errors.
"""

from __future__ import annotations

import random
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mxsim.options import Accumulator
from mxsim.options import QuantizeOptions
from mxsim.formats import BlockFormat, get_format
from mxsim.ref.block import quantize_block
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.dot import GeneralDot, dot, dot_general, fp32_bits

TWO = Fraction(2)
PROPERTY = settings(
    max_examples=120, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)

# ================================================================================================
# Test-local oracle: formats from their definitions
# ================================================================================================

# (exponent bits, mantissa bits, bias, specials, signed): "ieee" all-ones exponent = Inf/NaN;
# "fn" only the all-ones magnitude is NaN; None: every code finite.
FLOATS = {
    "e4m3": (4, 3, 7, "fn", True),
    "e5m2": (5, 2, 15, "ieee", True),
    "e2m1": (2, 1, 1, None, True),
    "ue4m3": (4, 3, 7, "fn", False),
    "fp32": (8, 23, 127, "ieee", True),
    "bf16": (8, 7, 127, "ieee", True),
    "e8m13": (8, 13, 127, "ieee", True),
}
NAN = "nan"
FP32_MAX = (2 - TWO**-23) * TWO**127


def floor_log2(q: Fraction) -> int:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n << max(-e, 0)) >= (d << max(e, 0)) else e - 1


def decode_float(code: int, name: str):
    """(sign, value): value a Fraction (magnitude), NAN or "inf"."""
    ebits, mbits, bias, specials, signed = FLOATS[name]
    sign = (code >> (ebits + mbits)) & 1 if signed else 0
    field, mantissa = (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
    if specials == "ieee" and field == (1 << ebits) - 1:
        return sign, (NAN if mantissa else "inf")
    if specials == "fn" and field == (1 << ebits) - 1 and mantissa == (1 << mbits) - 1:
        return sign, NAN
    if field == 0:
        return sign, Fraction(mantissa, 1 << mbits) * TWO ** (1 - bias)
    return sign, (1 + Fraction(mantissa, 1 << mbits)) * TWO ** (field - bias)


def signed(decoded):
    sign, value = decoded
    return -value if sign else value


def e8m0(code: int):
    return NAN if code == 0xFF else TWO ** (code - 127)


def code_of(value, name: str) -> int:
    """The code whose decoding is ``value`` (a signed number), by search."""
    ebits, mbits, _, _, signed_ = FLOATS[name]
    for code in range(1 << (ebits + mbits + signed_)):
        sign, v = decode_float(code, name)
        if v not in (NAN, "inf") and (-v if sign else v) == Fraction(value) and not (value == 0 and sign):
            return code
    raise AssertionError(f"{value} is not a {name} value")


def fp32_code(value) -> int:
    return code_of_fp32(Fraction(value))


def code_of_fp32(x: Fraction) -> int:
    bits = round_bits(x, "rne", "fp32")
    assert signed(decode_float(bits, "fp32")) == x, f"{x} is not an fp32 value"
    return bits


def round_bits(x: Fraction, mode: str, name: str = "fp32", overflow: str = "inf", negative_zero: bool = False) -> int:
    """IEEE bits of x rounded once to the binary format ``name`` (subnormals kept).

    mode: rne | rna | rtz | rup | rdn. Overflow (the rounding, with unbounded exponent, above the
    largest finite value): "inf" -> Inf; "ieee" -> max where the rounding goes toward zero for the
    sign, else Inf; "saturate" -> max. A zero x gives the zero of ``negative_zero``'s sign."""
    ebits, mbits, bias, _, _ = FLOATS[name]
    negative = x < 0 or (x == 0 and negative_zero)
    sign_bit = int(negative) << (ebits + mbits)
    mag = abs(x)
    if mag == 0:
        return sign_bit
    emin = 1 - bias
    ulp = TWO ** (max(floor_log2(mag), emin) - mbits)
    units = mag / ulp
    low = units.numerator // units.denominator
    exact = low == units
    if mode == "rtz" or exact:
        q = low
    elif mode == "rup":
        q = low + (not negative)
    elif mode == "rdn":
        q = low + negative
    elif mode == "rna":
        q = low + (units - low >= Fraction(1, 2))
    else:
        q = round(units)  # Python rounds a Fraction half to even
    value = q * ulp
    largest = (2 - TWO**-mbits) * TWO**bias
    max_bits = sign_bit | (((1 << ebits) - 2) << mbits) | ((1 << mbits) - 1)
    inf_bits = sign_bit | (((1 << ebits) - 1) << mbits)
    if value > largest:
        toward_zero = mode == "rtz" or (mode == "rup" and negative) or (mode == "rdn" and not negative)
        return max_bits if overflow == "saturate" or (overflow == "ieee" and toward_zero) else inf_bits
    if value < TWO**emin:
        return sign_bit | int(value / TWO ** (emin - mbits))
    e = floor_log2(value)
    return sign_bit | ((e + bias) << mbits) | int(value / TWO ** (e - mbits) - (1 << mbits))


def e8m13_bits(x: Fraction, mode: str, **kw) -> int:
    """fp32_e8m13: rounded to 8 exponent / 13 fraction bits, stored as fp32 (low 10 bits 0)."""
    return round_bits(x, mode, "e8m13", **kw) << 10


# ================================================================================================
# Test-local oracle: the fused definition (SPEC_fused.md), on decoded values
# ================================================================================================

ELEMENT_EMIN = {"e4m3": -6, "e5m2": -14, "e2m1": 0}
ELEMENT_FRAC = {"e4m3": 3, "e5m2": 2, "e2m1": 1}


def split_scale(code: int, scale: str):
    """(significand, X) with scale = significand * 2^X, or NAN. E8M0: (1, code - 127);
    UE4M3: X = max(floor(log2 s), -6)."""
    if scale == "e8m0":
        return NAN if code == 0xFF else (Fraction(1), code - 127)
    _, s = decode_float(code, "ue4m3")
    if s == NAN:
        return NAN
    x = max(floor_log2(s), -6) if s else -6
    return s / TWO**x, x


def exponent_of(value: Fraction, element: str) -> int:
    """E of an element value: max(floor(log2 |v|), emin) (subnormals use emin)."""
    return max(floor_log2(abs(value)), ELEMENT_EMIN[element]) if value else ELEMENT_EMIN[element]


def fused_oracle(blocks_a, blocks_b, fmt, acc: dict, c_bits: int) -> list[int]:
    """Every step's output bits. ``fmt`` = (element, k, scale); ``acc`` holds F, step, terms
    ("product" | "block"), term_size, anchor ("max" | "fixed"), bypass, czero, shift
    ("truncate" | "rne"), out ("fp32" | "bf16" | "e8m13"), mode, overflow, nan."""
    element, k, scale = fmt
    elems_a = [decode_float(code, element) for blk in blocks_a for code in blk.codes]
    elems_b = [decode_float(code, element) for blk in blocks_b for code in blk.codes]
    scales_a = [split_scale(blk.scale, scale) for blk in blocks_a]
    scales_b = [split_scale(blk.scale, scale) for blk in blocks_b]
    store = "bf16" if acc["out"] == "bf16" else "fp32"
    c = decode_float(c_bits, "fp32")
    outs = []
    for first in range(0, len(elems_a), acc["step"]):
        last = min(first + acc["step"], len(elems_a))
        bits = oracle_step(elems_a, elems_b, scales_a, scales_b, first, last, element, k, acc, c)
        outs.append(bits)
        c = decode_float(bits, store)
    return outs


def oracle_special(elems_a, elems_b, scales, first, last, c):
    """NaN / ("inf", sign) / None for one step, from the spec's list."""
    if c[1] == NAN or any(s == NAN for s in scales):
        return NAN
    infs = {c[0]} if c[1] == "inf" else set()
    for (sa, a), (sb, b) in zip(elems_a[first:last], elems_b[first:last]):
        if NAN in (a, b) or ("inf" in (a, b) and 0 in (a, b)):
            return NAN
        if "inf" in (a, b):
            infs.add(sa ^ sb)
    if len(infs) == 2:
        return NAN
    return ("inf", infs.pop()) if infs else None


def cut(value: Fraction, grid: int, shift: str) -> Fraction:
    units = value / TWO**grid
    return (int(units) if shift == "truncate" else round(units)) * TWO**grid  # int(): toward zero


def oracle_step(elems_a, elems_b, scales_a, scales_b, first, last, element, k, acc, c) -> int:
    blocks = sorted({i // k for i in range(first, last)})
    special = oracle_special(elems_a, elems_b, [scales_a[i] for i in blocks] + [scales_b[i] for i in blocks],
                             first, last, c)
    store = "bf16" if acc["out"] == "bf16" else "fp32"
    if special == NAN:
        return acc["nan"] if acc["nan"] is not None else (0x7FC0 if store == "bf16" else 0x7FC00000)
    if special is not None:
        inf, sign_bit = (0x7F800000, 1 << 31) if store == "fp32" else (0x7F80, 1 << 15)
        return inf | (sign_bit if special[1] else 0)
    # terms: (value, exponent, counts)
    terms = []
    size = acc["term_size"] if acc["terms"] == "block" else 1
    for start in range(first, last, size):
        (siga, xa), (sigb, xb) = scales_a[start // k], scales_b[start // k]
        pairs = list(zip(elems_a[start:start + size], elems_b[start:start + size]))
        exact = sum(signed(a) * signed(b) for a, b in pairs) * siga * sigb * TWO ** (xa + xb)
        if acc["terms"] == "block":
            exponent = xa + xb
        else:
            exponent = exponent_of(pairs[0][0][1], element) + exponent_of(pairs[0][1][1], element) + xa + xb
        terms.append((exact, exponent, any(a[1] != 0 and b[1] != 0 for a, b in pairs)))
    c_value = signed(c)
    e_c = max(floor_log2(abs(c_value)), -126) if c_value else acc["czero"]
    if acc["anchor"] == "max":
        anchor = max([e_c] + [e for _, e, counts in terms if counts])
        grid = anchor - acc["F"]
        total = sum(cut(v, grid, acc["shift"]) for v, _, _ in terms) + cut(c_value, grid, acc["shift"])
    else:
        siga, xa = scales_a[first // k]
        sigb, xb = scales_b[first // k]
        grid = xa + xb - acc["F"]
        if acc["bypass"] is not None and (e_c - 23) - grid > acc["bypass"]:
            return output_bits(c_value, acc, negative_zero=bool(c[0]))
        total = c_value + sum(cut(v, grid, acc["shift"]) for v, _, _ in terms)
    return output_bits(total, acc)


def output_bits(x: Fraction, acc, negative_zero=False) -> int:
    if acc["out"] == "e8m13":
        return e8m13_bits(x, acc["mode"], overflow=acc["overflow"], negative_zero=negative_zero)
    return round_bits(x, acc["mode"], acc["out"], overflow=acc["overflow"], negative_zero=negative_zero)


def oracle_params(acc: Accumulator, k: int) -> dict:
    """The oracle's parameters from an Accumulator's fields (names only; no mxsim logic)."""
    return {
        "F": acc.frac_bits, "step": acc.step or k, "terms": acc.step_terms, "term_size": acc.term_size or k,
        "anchor": acc.anchor, "bypass": acc.bypass,
        "czero": -126 if acc.c_zero_exponent is None else acc.c_zero_exponent,
        "shift": acc.shift_rounding, "out": {"fp32_e8m13": "e8m13"}.get(acc.output, acc.output),
        "mode": acc.output_rounding, "overflow": acc.output_overflow, "nan": acc.nan_bits,
    }


# ================================================================================================
# Helpers to build blocks
# ================================================================================================

E4M3, E2M1 = "mxfp8_e4m3", "mxfp4_e2m1"
HOPPER = Accumulator.preset("hopper_fp8_wgmma")
BW_F8 = Accumulator.preset("blackwell_mxf8f6f4")
BW_F4 = Accumulator.preset("blackwell_mxf4nvf4")
MXDOTP = Accumulator.preset("mxdotp_fp8")


def block(scale: int, values: dict | None = None, fill=0, element="e4m3", k=32) -> QuantizedBlock:
    """A block with every element ``fill`` except ``values`` ({index: value}); values are numbers."""
    codes = [code_of(fill, element)] * k
    for i, v in (values or {}).items():
        codes[i] = code_of(v, element)
    return QuantizedBlock(scale, (), tuple(codes))


def ones(scale=127, k=32, element="e4m3"):
    return block(scale, fill=1, element=element, k=k)


def check_oracle(blocks_a, blocks_b, fmt_name, acc, c_bits, fmt):
    """The result of mxsim equals the oracle's, step by step; returns the output code."""
    got = dot_general(blocks_a, blocks_b, fmt_name, accumulator=acc, c=fp32_bits(c_bits))
    expected = fused_oracle(blocks_a, blocks_b, fmt, oracle_params(acc, fmt[1]), c_bits)
    assert list(got.steps) == expected
    assert got.code == (expected[-1] if expected else got.code)
    return got.code


# ================================================================================================
# 0. Oracle self-checks
# ================================================================================================


def test_oracle_round_bits_matches_numpy_and_ml_dtypes():
    rng = random.Random(7)
    for _ in range(3000):
        x = Fraction(rng.randrange(1, 1 << 40), 1 << rng.randrange(0, 60)) * TWO ** rng.randrange(-160, 80)
        x = -x if rng.random() < 0.5 else x
        as_float = float(x)  # exact: at most 40 significant bits
        assert round_bits(x, "rne") == int(np.float32(as_float).view(np.uint32))
        assert round_bits(x, "rne", "bf16") == int(np.array(as_float).astype(ml_dtypes.bfloat16).view(np.uint16))
        for mode in ("rtz", "rup", "rdn"):
            bits = round_bits(x, mode)
            got = signed(decode_float(bits, "fp32"))
            neighbour = signed(decode_float(bits + 1, "fp32")) if bits & 0x7FFFFFFF < 0x7F7FFFFF else None
            if got == x:
                continue
            assert (got < x) == (mode == "rdn" or (mode == "rtz" and x > 0)), (x, mode)
            if neighbour is not None:  # the next code away from zero lies beyond x
                assert abs(neighbour) > abs(x)
    # overflow by hand: max fp32, 2^128
    assert round_bits(TWO**128, "rtz", overflow="ieee") == 0x7F7FFFFF
    assert round_bits(TWO**128, "rup", overflow="ieee") == 0x7F800000
    assert round_bits(-(TWO**128), "rup", overflow="ieee") == 0xFF7FFFFF
    assert round_bits(-(TWO**128), "rdn", overflow="ieee") == 0xFF800000
    assert round_bits(TWO**128, "rne", overflow="saturate") == 0x7F7FFFFF
    assert round_bits(TWO**128, "rtz", overflow="inf") == 0x7F800000
    # e8m13: 1 + 2^-13 is a value, 1 + 2^-14 is not; the largest finite is (2 - 2^-13) * 2^127
    assert e8m13_bits(1 + TWO**-13, "rtz") == 0x3F800400
    assert e8m13_bits(1 + TWO**-14, "rtz") == 0x3F800000 and e8m13_bits(1 + TWO**-14, "rup") == 0x3F800400
    assert e8m13_bits((2 - TWO**-13) * TWO**127, "rtz") == 0x7F7FFC00
    assert e8m13_bits(TWO**-139, "rtz") == 0x00000400  # its smallest subnormal


def test_oracle_decoders_by_hand():
    assert code_of(1, "e4m3") == 0x38 and code_of(-1, "e4m3") == 0xB8 and code_of(448, "e4m3") == 0x7E
    assert code_of(Fraction(1, 512), "e4m3") == 0x01 and code_of(Fraction(5, 4), "e4m3") == 0x3A
    assert code_of(6, "e2m1") == 0x7 and code_of(-3, "e2m1") == 0xD and code_of(Fraction(1, 2), "e2m1") == 0x1
    assert decode_float(0x7F, "e4m3")[1] == NAN and decode_float(0xFC, "e5m2") == (1, "inf")
    assert decode_float(0x3C, "ue4m3")[1] == Fraction(3, 2) and decode_float(0x01, "ue4m3")[1] == TWO**-9
    assert split_scale(0x01, "ue4m3") == (Fraction(1, 8), -6) and split_scale(0x78, "ue4m3") == (1, 8)
    assert fp32_code(1) == 0x3F800000 and fp32_code(-32) == 0xC2000000


# ================================================================================================
# 1. Separate accumulation with an accumulator input C
# ================================================================================================


def test_separate_c_none_is_unchanged_and_c_starts_the_fp32_sum():
    tiny = block(115, {0: 1})  # 1.0 * 2^-12; times b = 1.0 * 2^-12 -> 2^-24
    # c=None: the sum of two blocks of 2^-24 is 2^-23 (exact in fp32)
    assert dot_general([tiny, tiny], [tiny, tiny], E4M3).code == 0x34000000
    assert dot_general([tiny, tiny], [tiny, tiny], E4M3).steps == ()
    # C = 1: 1 + 2^-24 is a tie -> even 1.0; again 1.0 (fp32 sum in order, RNE each)
    assert dot_general([tiny, tiny], [tiny, tiny], E4M3, c=1.0).code == 0x3F800000
    # across_blocks="exact": 1 + 2^-23 exactly, rounded once
    exact = Accumulator(across_blocks="exact")
    assert dot_general([tiny, tiny], [tiny, tiny], E4M3, accumulator=exact, c=Fraction(1)).code == 0x3F800001


def test_separate_c_signed_zero_nan_inf():
    zero = block(127)  # all +0 elements
    assert dot_general([], [], E4M3, c=-0.0).code == 0x80000000  # the fp32 sum is C itself
    assert dot_general([], [], E4M3, accumulator=Accumulator(across_blocks="exact"), c=-0.0).code == 0
    assert dot_general([zero], [zero], E4M3, c=-0.0).code == 0x00000000  # (-0) + (+0) = +0
    assert dot_general([ones()], [ones()], E4M3, c=fp32_bits(0xFFC00001)).code == 0x7FC00000
    assert dot_general([ones()], [ones()], E4M3, c=float("-inf")).code == 0xFF800000
    ninf = QuantizedBlock(127, (), (0xFC,) + (0x3C,) * 31)  # E5M2: -Inf, then 1.0s
    one5 = QuantizedBlock(127, (), (0x3C,) * 32)
    assert dot_general([ninf], [one5], "mxfp8_e5m2", c=float("inf")).code == 0x7FC00000
    nan_acc = Accumulator(nan_bits=0x7FFFFFFF)
    assert dot_general([ninf], [one5], "mxfp8_e5m2", accumulator=nan_acc, c=float("inf")).code == 0x7FFFFFFF


def test_separate_c_with_bf16_and_e8m13_outputs():
    zero = block(127)
    # C = 1 + 2^-10: the fp32 sum keeps it; the bf16 output rounds it to 1.0 (RNE) -> 0x3F80
    assert dot_general([zero], [zero], E4M3, accumulator=Accumulator(output="bf16"), c=1 + 2.0**-10).code == 0x3F80
    # the same C to fp32_e8m13 (RNE): 1 + 2^-10 is on its grid (13 fraction bits) -> 0x3F802000
    assert dot_general([zero], [zero], E4M3, accumulator=Accumulator(output="fp32_e8m13"), c=1 + 2.0**-10).code == (
        0x3F802000
    )
    # 1 + 2^-20 is not: RNE gives 1.0
    assert dot_general([zero], [zero], E4M3, accumulator=Accumulator(output="fp32_e8m13"), c=1 + 2.0**-20).code == (
        0x3F800000
    )


def test_separate_output_overflow_and_ftz():
    big = block(127 + 14, {0: 1})  # 2^14 * 2^14 = 2^28 > fp16 max 65504
    for overflow, rounding, expected in [
        ("inf", "rtz", 0x7C00), ("ieee", "rtz", 0x7BFF), ("ieee", "rne", 0x7C00), ("saturate", "rne", 0x7BFF),
    ]:
        acc = Accumulator(output="fp16", output_rounding=rounding, output_overflow=overflow)
        assert dot(big, big, E4M3, accumulator=acc).code == expected
        assert dot_general([big], [big], E4M3, accumulator=acc).code == expected


def test_dot_with_c_is_a_one_block_dot_general():
    a, b = ones(), block(127, {3: -2})
    for acc in (Accumulator(), BW_F8, MXDOTP):
        got = dot(a, b, E4M3, accumulator=acc, c=0.5)
        assert isinstance(got, GeneralDot)
        assert got == dot_general([a], [b], E4M3, accumulator=acc, c=0.5)
    # 0.5 + (-2) = -1.5
    assert dot(a, b, E4M3, c=0.5).code == 0xBFC00000
    assert fp32_bits(0x80000000).sign == 1 and fp32_bits(0x80000000).is_zero


# ================================================================================================
# 2. Hand-worked fused cases, one per knob
# ================================================================================================


def test_mxdotp_bypass_returns_c_unchanged():
    # MXDOTP: steps of 8, grid 2^(XA+XB-34) = 2^-34 with scales 1. All 32 products are 1.0, so
    # each step adds 8. C = 2^60 * (1 + 2^-23) (0x5D800001): e_C = 60, its LSB 2^37 lies
    # 37 + 34 = 71 > 70 bits above the grid -> bypass: every step returns C; under rup as well
    # (the exact C + 8 would round up to the next fp32, 0x5D800002).
    rup = Accumulator.preset("mxdotp_fp8", output_rounding="rup")
    got = dot_general([ones()], [ones()], E4M3, accumulator=rup, c=fp32_bits(0x5D800001))
    assert got.steps == (0x5D800001,) * 4
    # without the bypass each of the 4 steps rounds C + 8 up by one ulp: 0x5D800002 ... 0x5D800005
    no_bypass = Accumulator.preset("mxdotp_fp8", output_rounding="rup", bypass=None)
    got = dot_general([ones()], [ones()], E4M3, accumulator=no_bypass, c=fp32_bits(0x5D800001))
    assert got.steps == (0x5D800002, 0x5D800003, 0x5D800004, 0x5D800005)
    # C = 2^59 (0x5D000000): LSB 2^36, 36 + 34 = 70 is not > 70 -> no bypass -> 0x5D000004
    got = dot_general([ones()], [ones()], E4M3, accumulator=rup, c=fp32_bits(0x5D000000))
    assert got.code == 0x5D000004
    check_oracle([ones()], [ones()], E4M3, rup, 0x5D800001, ("e4m3", 32, "e8m0"))
    check_oracle([ones()], [ones()], E4M3, rup, 0x5D000000, ("e4m3", 32, "e8m0"))


def test_anchor_max_c_dominates_and_products_are_truncated_away():
    # Hopper (F = 13): C = 2^20, 32 products of 2 * 2 = 4 (exponent 2). A = 20, grid 2^7 = 128;
    # each 4 truncates to 0, so D = C = 2^20 (0x49800000). The exact 2^20 + 128 = 1048704 is a
    # value of fp32_e8m13 (0x49800400), which a single rounding would give.
    twos = block(127, fill=2)
    assert dot_general([twos], [twos], E4M3, accumulator=HOPPER, c=2.0**20).code == 0x49800000
    assert round_bits(TWO**20 + 128, "rtz", "e8m13") << 10 == 0x49800400
    # a Hopper step cuts C itself: C = 1 + 2^-20 (0x3F800008) with zero products -> A = 0, grid
    # 2^-13: C becomes 1.0 (0x3F800000)
    assert dot_general([block(127)], [block(127)], E4M3, accumulator=HOPPER, c=fp32_bits(0x3F800008)).code == (
        0x3F800000
    )
    check_oracle([twos], [twos], E4M3, HOPPER, 0x49800000, ("e4m3", 32, "e8m0"))


def test_c_cancels_the_products_exactly_to_plus_zero():
    # Blackwell f8f6f4: C = -32 and 32 products of 1.0: V = 0 -> +0, although C is negative.
    assert dot_general([ones()], [ones()], E4M3, accumulator=BW_F8, c=-32.0).code == 0x00000000
    neg = block(127, fill=-1)
    assert dot_general([neg], [ones()], E4M3, accumulator=BW_F8, c=32.0).code == 0x00000000
    # MXDOTP (fixed grid, 4 steps of 8): -32 -> -24 -> -16 -> -8 -> +0
    got = dot_general([ones()], [ones()], E4M3, accumulator=MXDOTP, c=-32.0)
    assert got.steps == (0xC1C00000, 0xC1800000, 0xC1000000, 0x00000000)
    # C = -0 and zero products: +0 as well (the integer adder has no sign of zero)
    assert dot_general([block(127)], [block(127)], E4M3, accumulator=BW_F8, c=-0.0).code == 0x00000000


def test_truncation_that_a_separate_fp32_add_rounds_differently():
    # C = 1.0, one product 1.25 * 2^-24 (a = 1.25, b = 1.0, scales 2^-12 each). Blackwell, F = 25:
    # A = 0, grid 2^-25: 1.25 * 2^-24 = 2.5 LSBs -> truncated to 2 -> V = 1 + 2^-24, exactly half
    # an ulp: rne gives even 1.0 (0x3F800000), as does the preset's rtz.
    a, b = block(115, {0: Fraction(5, 4)}), block(115, {0: 1})
    rne = Accumulator.preset("blackwell_mxf8f6f4", output_rounding="rne")
    assert dot_general([a], [b], E4M3, accumulator=rne, c=1.0).code == 0x3F800000
    assert dot_general([a], [b], E4M3, accumulator=BW_F8, c=1.0).code == 0x3F800000
    # separate: the block value 1.25 * 2^-24 is exact in fp32; fp32_add(1, it) = 1 + 0.625 ulp
    # -> RNE up -> 1 + 2^-23 (0x3F800001); so is the exact sum rounded once
    assert dot_general([a], [b], E4M3, c=1.0).code == 0x3F800001
    assert round_bits(1 + Fraction(5, 4) * TWO**-24, "rne") == 0x3F800001
    check_oracle([a], [b], E4M3, rne, 0x3F800000, ("e4m3", 32, "e8m0"))


@pytest.mark.parametrize(
    "sign, rounding, overflow, expected",
    [
        # +2^129 (above max fp32): ieee gives max where the rounding goes toward zero for the sign
        (0, "rtz", "ieee", 0x7F7FFFFF), (0, "rdn", "ieee", 0x7F7FFFFF), (0, "rup", "ieee", 0x7F800000),
        (0, "rne", "ieee", 0x7F800000), (0, "rna", "ieee", 0x7F800000),
        (1, "rtz", "ieee", 0xFF7FFFFF), (1, "rup", "ieee", 0xFF7FFFFF), (1, "rdn", "ieee", 0xFF800000),
        (0, "rtz", "inf", 0x7F800000), (1, "rup", "inf", 0xFF800000),
        (0, "rup", "saturate", 0x7F7FFFFF), (1, "rne", "saturate", 0xFF7FFFFF),
    ],
)
def test_fused_output_overflow(sign, rounding, overflow, expected):
    # MXDOTP: scales 2^63 each, 8 products of +-1 in the first step: V = +-8 * 2^126 = +-2^129.
    # The later steps add zero products to C = +-max (or +-Inf, which propagates).
    a = block(190, {i: -1 if sign else 1 for i in range(8)})
    b = block(190, fill=1)
    acc = Accumulator.preset("mxdotp_fp8", output_rounding=rounding, output_overflow=overflow)
    got = dot_general([a], [b], E4M3, accumulator=acc)
    assert got.code == expected and got.steps == (expected,) * 4
    check_oracle([a], [b], E4M3, acc, 0, ("e4m3", 32, "e8m0"))


def test_fp32_e8m13_output():
    # Hopper: products 1, 1 and 2^-6 * 2^-7 = 2^-13 (exponent -6 + -6 = -12). C = +0 (e_C = -126).
    # A = 0, grid 2^-13: every product is exact, V = 2 + 2^-13. fp32_e8m13 at exponent 1 has the
    # ulp 2^-12 -> toward zero 2.0 (0x40000000); an fp32 output would keep 2 + 2^-13 (0x40000200).
    a = block(127, {0: 1, 1: 1, 2: TWO**-6})
    b = block(127, {0: 1, 1: 1, 2: TWO**-7})
    assert dot_general([a], [b], E4M3, accumulator=HOPPER).code == 0x40000000
    assert dot_general([a], [b], E4M3, accumulator=Accumulator.preset("hopper_fp8_wgmma", output="fp32")).code == (
        0x40000200
    )
    check_oracle([a], [b], E4M3, HOPPER, 0, ("e4m3", 32, "e8m0"))


def test_nan_c_gives_each_presets_nan_bits():
    for acc, nan in ((HOPPER, 0x7FFFFFFF), (BW_F8, 0x7FFFFFFF), (MXDOTP, 0x7FC00000)):
        for c in (0x7FC00000, 0xFFC00001, 0x7F800001):
            got = dot_general([ones()], [ones()], E4M3, accumulator=acc, c=fp32_bits(c))
            assert got.code == nan and set(got.steps) == {nan}
    nvfp4 = QuantizedBlock(0x38, (), (0x2,) * 16)
    assert dot_general([nvfp4], [nvfp4], "nvfp4", accumulator=BW_F4, c=float("nan")).code == 0x7FFFFFFF
    # with no products at all: D = C rounded -> NaN bits
    assert dot_general([], [], E4M3, accumulator=HOPPER, c=float("nan")).code == 0x7FFFFFFF


def test_zero_c_exponent_blackwell_truncates_tiny_products():
    # Blackwell: a zero C counts with exponent -126. 32 products 1 * 1 * 2^-154 (scales 2^-77
    # each): A = max(-126, -154) = -126, grid 2^-151; 2^-154 truncates to 0 -> +0. Their exact sum
    # 32 * 2^-154 = 2^-149 is the smallest fp32 subnormal (0x00000001).
    tiny = ones(scale=50)
    assert dot_general([tiny], [tiny], E4M3, accumulator=BW_F8).code == 0x00000000
    assert round_bits(32 * TWO**-154, "rtz") == 0x00000001
    # a zero C counting lower (exponent -200) keeps them: A = -154 -> exact -> 0x00000001
    low = Accumulator.preset("blackwell_mxf8f6f4", c_zero_exponent=-200)
    assert dot_general([tiny], [tiny], E4M3, accumulator=low).code == 0x00000001
    check_oracle([tiny], [tiny], E4M3, BW_F8, 0, ("e4m3", 32, "e8m0"))
    check_oracle([tiny], [tiny], E4M3, low, 0x80000000, ("e4m3", 32, "e8m0"))


def test_zero_c_exponent_mxdotp_bypasses_with_tiny_scales():
    # MXDOTP, rup: a zero C counts with exponent -127, LSB 2^-150. Scales 2^-127 each: grid
    # 2^(-254-34) = 2^-288; -150 + 288 = 138 > 70 -> bypass: D = C (+0, or -0 kept), although
    # the products 8 * 2^-254 > 0 would round up to 2^-149 (0x00000001).
    rup = Accumulator.preset("mxdotp_fp8", output_rounding="rup")
    tiny = ones(scale=0)
    assert dot_general([tiny], [tiny], E4M3, accumulator=rup).code == 0x00000000
    assert dot_general([tiny], [tiny], E4M3, accumulator=rup, c=-0.0).code == 0x80000000
    no_bypass = Accumulator.preset("mxdotp_fp8", output_rounding="rup", bypass=None)
    # without the bypass every step rounds C + 2^-251 up by one subnormal ulp: 1, 2, 3, 4
    assert dot_general([tiny], [tiny], E4M3, accumulator=no_bypass, c=-0.0).steps == (1, 2, 3, 4)
    # the boundary: XA + XB = -186 (scales 2^-93): -150 + 220 = 70, not > 70 -> no bypass ->
    # 8 * 2^-186 rounds up to 0x00000001; from then on C = 2^-149 (e_C = -126, LSB 2^-149) lies
    # 71 bits above the grid -> bypass keeps it. A zero C counted at -126 bypasses at once -> +0.
    edge = ones(scale=34)
    assert dot_general([edge], [edge], E4M3, accumulator=rup).steps == (0x00000001,) * 4
    at126 = Accumulator.preset("mxdotp_fp8", output_rounding="rup", c_zero_exponent=-126)
    assert dot_general([edge], [edge], E4M3, accumulator=at126).code == 0x00000000
    for acc in (rup, at126):
        for c in (0, 0x80000000):
            check_oracle([tiny], [tiny], E4M3, acc, c, ("e4m3", 32, "e8m0"))
            check_oracle([edge], [edge], E4M3, acc, c, ("e4m3", 32, "e8m0"))


def test_block_terms_with_ue4m3_significands():
    # NVFP4 (k = 16, UE4M3 scales), Blackwell mxf4nvf4 (block terms of 16, F = 35). Scales
    # 1.5 (0x3C) and 1.25 (0x3A): X = 0, significands 1.5 and 1.25. Elements 6 * 6 = 36:
    # the term is 36 * 1.5 * 1.25 = 67.5 (exponent 0) -> 0x42870000.
    a = QuantizedBlock(0x3C, (), (0x7,) + (0,) * 15)
    b = QuantizedBlock(0x3A, (), (0x7,) + (0,) * 15)
    assert dot_general([a], [b], "nvfp4", accumulator=BW_F4).code == 0x42870000 == round_bits(Fraction(135, 2), "rtz")
    # the anchor is XA + XB of the largest term: block 0 (scales 2^8, 0.5 * 0.5) = 2^14 with
    # exponent 16, grid 2^-19; block 1 (subnormal scales 2^-9 = 2^-3 * 2^-6: X = -6 each,
    # significands 1/8) = -0.25 * 2^-6 * 2^-12 = -2^-20 = -0.5 LSB -> truncated to 0. D = 2^14
    # (0x46800000); the exact 2^14 - 2^-20 toward zero is 0x467FFFFF. (K = 32 < step 64: one
    # partial step.)
    big = QuantizedBlock(0x78, (), (0x1,) + (0,) * 15)
    small_a, small_b = QuantizedBlock(0x01, (), (0x9,) + (0,) * 15), QuantizedBlock(0x01, (), (0x1,) + (0,) * 15)
    got = dot_general([big, small_a], [big, small_b], "nvfp4", accumulator=BW_F4)
    assert got.code == 0x46800000 and len(got.steps) == 1
    assert round_bits(TWO**14 - TWO**-20, "rtz") == 0x467FFFFF
    check_oracle([big, small_a], [big, small_b], "nvfp4", BW_F4, 0, ("e2m1", 16, "ue4m3"))


def test_block_terms_of_16_inside_a_32_block():
    # MXFP4 (k = 32, E8M0), Blackwell mxf4nvf4: step 64 = 2 blocks, 4 terms of 16 products.
    # Block 0, scales 2^18 each (X = 36): products 0.5 * 0.5 (element 0) and -0.5 * 0.5 (element
    # 16): terms +2^34 and -2^34, exponent 36 (they count, though they cancel). Block 1, X = 0:
    # 6 * 0.5 = 3 (element 0), -3 * 0.5 = -1.5 (element 16). A = 36, grid 2^1:
    # 2^33 - 2^33 + trunc(1.5) + trunc(-0.75) = 1 LSB -> D = 2 (0x40000000).
    # With one term per 32-block: 0 and trunc(0.75) = 0 -> +0. Exact: 1.5 (0x3FC00000).
    a0 = block(145, {0: 0.5, 16: -0.5}, element="e2m1")
    b0 = block(145, {0: 0.5, 16: 0.5}, element="e2m1")
    a1 = block(127, {0: 6, 16: -3}, element="e2m1")
    b1 = block(127, {0: 0.5, 16: 0.5}, element="e2m1")
    assert dot_general([a0, a1], [b0, b1], E2M1, accumulator=BW_F4).code == 0x40000000
    whole = Accumulator.preset("blackwell_mxf4nvf4", term_size=None)
    assert dot_general([a0, a1], [b0, b1], E2M1, accumulator=whole).code == 0x00000000
    assert dot_general([a0, a1], [b0, b1], E2M1, accumulator=Accumulator(across_blocks="exact")).code == 0x3FC00000
    for acc in (BW_F4, whole):
        check_oracle([a0, a1], [b0, b1], E2M1, acc, 0, ("e2m1", 32, "e8m0"))


def test_block_term_exponent_is_the_scale_exponent():
    # MXFP4, Blackwell mxf4nvf4. Block 0 (scales 1): 6 * 6 = 36, term exponent XA + XB = 0 (the
    # product's own exponent would be 2 + 2 = 4). Block 1 (XA = -31, code 96): -0.5 * 0.5 =
    # -2^-33, exponent -31. A = 0, grid 2^-35: -2^-33 is -4 LSBs, kept: V = 36 - 2^-33 ->
    # toward zero 36 - 2^-18 (0x420FFFFF). Product terms (F = 35) anchor at 4, grid 2^-31: the
    # -0.25 LSB truncates away -> 36 (0x42100000).
    a = [block(127, {0: 6}, element="e2m1"), block(96, {0: -0.5}, element="e2m1")]
    b = [block(127, {0: 6}, element="e2m1"), block(127, {0: 0.5}, element="e2m1")]
    assert dot_general(a, b, E2M1, accumulator=BW_F4).code == 0x420FFFFF == round_bits(36 - TWO**-33, "rtz")
    per_product = Accumulator.preset("blackwell_mxf8f6f4", frac_bits=35, step=64)
    assert dot_general(a, b, E2M1, accumulator=per_product).code == 0x42100000
    check_oracle(a, b, E2M1, BW_F4, 0, ("e2m1", 32, "e8m0"))
    check_oracle(a, b, E2M1, per_product, 0, ("e2m1", 32, "e8m0"))


def test_partial_last_step():
    # Blackwell f8f6f4 with step 64 over 3 blocks of 32 ones: 64 (0x42800000), then the partial
    # step of 32: 64 + 32 = 96 (0x42C00000).
    acc = Accumulator.preset("blackwell_mxf8f6f4", step=64)
    got = dot_general([ones()] * 3, [ones()] * 3, E4M3, accumulator=acc)
    assert got.steps == (0x42800000, 0x42C00000)
    check_oracle([ones()] * 3, [ones()] * 3, E4M3, acc, 0, ("e4m3", 32, "e8m0"))


def test_multi_step_chaining_differs_from_one_rounding():
    # Hopper, K = 128 = 4 steps of 32. Step 1: 32 products 16 * 32 = 512 -> 2^14 (exponent 9,
    # grid 2^-4: exact). Steps 2-4: one product 1.0 each; C = 2^14 sets A = 14, grid 2^1, and
    # 1.0 truncates to 0: D stays 2^14 (0x46800000) in every step.
    # One step of 128: A = 9, everything exact, V = 16387 -> e8m13 toward zero 16386 (0x46800400).
    # The exact sum rounded to fp32: 16387 (0x46800600).
    first = (block(127, fill=16), block(127, fill=32))
    rest = (block(127, {0: 1}), block(127, {0: 1}))
    blocks_a, blocks_b = [first[0]] + [rest[0]] * 3, [first[1]] + [rest[1]] * 3
    got = dot_general(blocks_a, blocks_b, E4M3, accumulator=HOPPER)
    assert got.steps == (0x46800000,) * 4
    one_step = Accumulator.preset("hopper_fp8_wgmma", step=128)
    assert dot_general(blocks_a, blocks_b, E4M3, accumulator=one_step).code == 0x46800400
    assert dot_general(blocks_a, blocks_b, E4M3, accumulator=Accumulator(across_blocks="exact")).code == 0x46800600
    check_oracle(blocks_a, blocks_b, E4M3, HOPPER, 0, ("e4m3", 32, "e8m0"))
    check_oracle(blocks_a, blocks_b, E4M3, one_step, 0, ("e4m3", 32, "e8m0"))


def test_shift_rounding_rne_and_ftz_in_fused_steps():
    # anchor max, F = 1: C = +0 (exponent -126), a = (1, 1.5), b = (1, 0.5): terms 1 (exponent 0)
    # and 0.75 (exponent 0 + -1 = -1); A = 0, grid 2^-1: 1 is 2 LSBs, 0.75 is 1.5 LSBs ->
    # rne 2 -> V = 2 (0x40000000); truncate 1 -> V = 1.5 (0x3FC00000)
    a, b = block(127, {0: 1, 1: 1.5}), block(127, {0: 1, 1: 0.5})
    rne = Accumulator(mode="aligned", frac_bits=1, accumulate="fused", shift_rounding="rne")
    assert dot_general([a], [b], E4M3, accumulator=rne).code == 0x40000000
    truncate = Accumulator(mode="aligned", frac_bits=1, accumulate="fused")
    assert dot_general([a], [b], E4M3, accumulator=truncate).code == 0x3FC00000
    # ftz: -2^-140 (scales 2^-70 each, product -1) is an fp32 subnormal -> -0 (the sign is kept)
    neg = block(57, {0: -1})
    ftz = Accumulator.preset("blackwell_mxf8f6f4", ftz=True)
    assert dot_general([neg], [ones(57)], E4M3, accumulator=ftz).code == 0x80000000
    assert dot_general([neg], [ones(57)], E4M3, accumulator=BW_F8).code == round_bits(-(TWO**-140), "rtz")
    check_oracle([a], [b], E4M3, rne, 0, ("e4m3", 32, "e8m0"))


def test_bf16_output_chains_through_bf16_c():
    # fused, output bf16 (rne), anchor max, F = 30, steps of 8 products (1 + j/8)^2, C = 1: each
    # step's D is a bf16 code and the next C is its value; the oracle checks every step.
    acc = Accumulator(mode="aligned", frac_bits=30, accumulate="fused", step=8, output="bf16", nan_bits=0x7FFF)
    a = block(127, {i: 1 + Fraction(i % 8, 8) for i in range(32)})
    got = dot_general([a], [a], E4M3, accumulator=acc, c=1.0)
    assert len(got.steps) == 4 and all(code < 1 << 16 for code in got.steps)
    check_oracle([a], [a], E4M3, acc, 0x3F800000, ("e4m3", 32, "e8m0"))
    nan = QuantizedBlock(0xFF, (), a.codes)
    assert dot_general([nan], [a], E4M3, accumulator=acc).code == 0x7FFF


# ================================================================================================
# 3. The four measured presets (the examples quoted in the documentation)
# ================================================================================================


def test_preset_hopper_fp8_wgmma_example():
    # E4M3 x E4M3, scales 1 (E8M0 0x7F): a = (1, 1, 2^-6), b = (1, 1, 2^-7), C = +0.
    # Products 1, 1, 2^-13; A = 0, F = 13: grid 2^-13, nothing is cut; V = 2 + 2^-13.
    # Output fp32_e8m13 toward zero: 13 fraction bits at exponent 1 -> 2.0 = 0x40000000
    # (fp32 RNE of the exact sum: 0x40000200). NaN output: 0x7FFFFFFF.
    a = block(127, {0: 1, 1: 1, 2: TWO**-6})
    b = block(127, {0: 1, 1: 1, 2: TWO**-7})
    assert dot_general([a], [b], E4M3, accumulator=HOPPER).code == 0x40000000
    assert round_bits(2 + TWO**-13, "rne") == 0x40000200
    assert dot_general([a], [b], E4M3, accumulator=HOPPER, c=float("nan")).code == 0x7FFFFFFF


def test_preset_blackwell_mxf8f6f4_example():
    # C = 1.0 (0x3F800000); a[0] = 1.25, b[0] = 1.0, E8M0 scales 2^-12 each: one product
    # 1.25 * 2^-24. A = 0, F = 25: grid 2^-25, the product is 2.5 LSBs -> truncated to 2:
    # V = 1 + 2^-24 -> toward zero 1.0 = 0x3F800000. The separate fp32 path gives 0x3F800001.
    a, b = block(115, {0: Fraction(5, 4)}), block(115, {0: 1})
    assert dot_general([a], [b], E4M3, accumulator=BW_F8, c=1.0).code == 0x3F800000
    assert dot_general([a], [b], E4M3, c=1.0).code == 0x3F800001


def test_preset_blackwell_mxf4nvf4_example():
    # MXFP4 (E2M1, E8M0 per 32), two blocks = one step of 64, four terms of 16 products:
    # block 0 (scales 2^18, 2^18): +0.25 * 2^36 and -0.25 * 2^36 (cancel, exponent 36);
    # block 1 (scales 1): 6 * 0.5 = 3 and -3 * 0.5 = -1.5. A = 36, F = 35: grid 2 ->
    # trunc(3/2) + trunc(-1.5/2) = 1 + 0 -> D = 2.0 = 0x40000000 (exact 1.5 = 0x3FC00000).
    a0 = block(145, {0: 0.5, 16: -0.5}, element="e2m1")
    b0 = block(145, {0: 0.5, 16: 0.5}, element="e2m1")
    a1 = block(127, {0: 6, 16: -3}, element="e2m1")
    b1 = block(127, {0: 0.5, 16: 0.5}, element="e2m1")
    assert dot_general([a0, a1], [b0, b1], E2M1, accumulator=BW_F4).code == 0x40000000


def test_preset_mxdotp_fp8_example():
    # E4M3 ones x ones, scales 1, rounding rup, C = 0x5D800001 = 2^60 (1 + 2^-23): C's LSB
    # 2^37 is 71 > 70 bits above the grid 2^-34 -> bypass, D = C in all 4 steps (0x5D800001).
    # C = 0x5D000000 = 2^59: 70 bits, no bypass: each step adds 8 and rounds up one ulp -> 0x5D000004.
    rup = Accumulator.preset("mxdotp_fp8", output_rounding="rup")
    assert dot_general([ones()], [ones()], E4M3, accumulator=rup, c=fp32_bits(0x5D800001)).code == 0x5D800001
    assert dot_general([ones()], [ones()], E4M3, accumulator=rup, c=fp32_bits(0x5D000000)).code == 0x5D000004


# ================================================================================================
# 4. Specials
# ================================================================================================


def test_fused_specials():
    one5 = QuantizedBlock(127, (), (0x3C,) * 32)  # E5M2 ones
    pinf = QuantizedBlock(127, (), (0x7C,) + (0x3C,) * 31)
    zero_first = QuantizedBlock(127, (), (0x00,) + (0x3C,) * 31)
    e5 = "mxfp8_e5m2"
    assert dot_general([pinf], [one5], e5, accumulator=BW_F8).code == 0x7F800000  # +Inf
    assert dot_general([pinf], [one5], e5, accumulator=BW_F8, c=float("-inf")).code == 0x7FFFFFFF  # Inf - Inf
    assert dot_general([pinf], [zero_first], e5, accumulator=MXDOTP).code == 0x7FC00000  # Inf x 0
    assert dot_general([one5], [one5], e5, accumulator=BW_F8, c=float("-inf")).code == 0xFF800000
    # a NaN scale poisons its own steps only: Hopper steps of 32 over 2 blocks
    nan_scale = QuantizedBlock(0xFF, (), (0x3C,) * 32)
    got = dot_general([one5, nan_scale], [one5, one5], e5, accumulator=HOPPER)
    assert got.steps == (0x42000000, 0x7FFFFFFF)
    # MXDOTP steps of 8: an Inf in the second step; the first is finite, the rest propagate Inf
    late_inf = QuantizedBlock(127, (), (0x3C,) * 9 + (0x7C,) + (0x3C,) * 22)
    got = dot_general([late_inf], [one5], e5, accumulator=MXDOTP)
    assert got.steps == (0x41000000, 0x7F800000, 0x7F800000, 0x7F800000)
    # an Inf C meets a -Inf product in the last step only -> NaN there
    ninf_last = QuantizedBlock(127, (), (0x3C,) * 31 + (0xFC,))
    got = dot_general([ninf_last], [one5], e5, accumulator=MXDOTP, c=float("inf"))
    assert got.steps == (0x7F800000, 0x7F800000, 0x7F800000, 0x7FC00000)
    # NaN element (E4M3 0x7F)
    nan_el = QuantizedBlock(127, (), (0x7F,) + (0x38,) * 31)
    assert dot_general([nan_el], [ones()], E4M3, accumulator=BW_F8).code == 0x7FFFFFFF
    for blocks_a, blocks_b, c in [([pinf], [one5], 0), ([pinf], [one5], 0xFF800000), ([late_inf], [one5], 0),
                                  ([ninf_last], [one5], 0x7F800000), ([one5, nan_scale], [one5, one5], 0)]:
        for acc in (HOPPER, BW_F8, MXDOTP):
            check_oracle(blocks_a, blocks_b, e5, acc, c, ("e5m2", 32, "e8m0"))


def test_no_products():
    assert dot_general([], [], E4M3, accumulator=HOPPER).code == 0x00000000
    assert dot_general([], [], E4M3, accumulator=BW_F8, c=-0.0).code == 0x80000000  # C rounded, sign kept
    assert dot_general([], [], E4M3, accumulator=HOPPER, c=1 + 2.0**-20).code == 0x3F800000  # rtz to e8m13
    assert dot_general([], [], E4M3, accumulator=MXDOTP).steps == ()


# ================================================================================================
# 5. Oracle and property tests
# ================================================================================================

FP4_K16 = BlockFormat("fp4_e8m0_k16", get_format("fp4_e2m1"), 16, get_format("e8m0"))

# (block format, oracle format, accumulator)
CONFIGS = [
    (E4M3, ("e4m3", 32, "e8m0"), HOPPER),
    (E4M3, ("e4m3", 32, "e8m0"), BW_F8),
    ("mxfp8_e5m2", ("e5m2", 32, "e8m0"), BW_F8),
    (E4M3, ("e4m3", 32, "e8m0"), MXDOTP),
    ("mxfp8_e5m2", ("e5m2", 32, "e8m0"), Accumulator.preset("mxdotp_fp8", output_rounding="rup")),
    (E4M3, ("e4m3", 32, "e8m0"), Accumulator.preset("mxdotp_fp8", output_rounding="rdn", output_overflow="saturate")),
    (E2M1, ("e2m1", 32, "e8m0"), BW_F4),
    ("nvfp4", ("e2m1", 16, "ue4m3"), BW_F4),
    (FP4_K16, ("e2m1", 16, "e8m0"), BW_F4),
    (E2M1, ("e2m1", 32, "e8m0"), Accumulator.preset("blackwell_mxf8f6f4", step=64)),
    (E2M1, ("e2m1", 32, "e8m0"), Accumulator(mode="aligned", frac_bits=6, accumulate="fused", step=32,
                                             step_terms="block", term_size=8, output_rounding="rne")),
    ("nvfp4", ("e2m1", 16, "ue4m3"), Accumulator(mode="aligned", frac_bits=4, accumulate="fused", step=64,
                                                 step_terms="block", shift_rounding="rne", output="bf16")),
    (E4M3, ("e4m3", 32, "e8m0"), Accumulator(mode="aligned", frac_bits=5, accumulate="fused", step=8,
                                             shift_rounding="rne", output="bf16", output_rounding="rna")),
    (E4M3, ("e4m3", 32, "e8m0"), Accumulator(mode="aligned", frac_bits=9, accumulate="fused", step=16,
                                             anchor="fixed", bypass=12, output_rounding="rup", ftz=False)),
]


def random_blocks(rng: random.Random, fmt, n: int):
    element, k, scale = fmt
    width = {"e4m3": 8, "e5m2": 8, "e2m1": 4}[element]
    centre = rng.choice([127, 127, 60, 190, 5, 250])
    blocks = []
    for _ in range(n):
        if scale == "e8m0":
            code = 0xFF if rng.random() < 0.02 else min(max(centre + rng.randrange(-40, 41), 0), 254)
        else:
            code = 0x7F if rng.random() < 0.02 else rng.randrange(0, 0x7F)
        codes = []
        for _ in range(k):
            r = rng.random()
            codes.append(0 if r < 0.3 else rng.randrange(1 << width))
        if element != "e2m1" and rng.random() > 0.05:  # mostly finite elements
            nan_inf = {"e4m3": (0x7F, 0xFF), "e5m2": tuple(range(0x7C, 0x80)) + tuple(range(0xFC, 0x100))}[element]
            codes = [c if c not in nan_inf else 0x38 for c in codes]
        blocks.append(QuantizedBlock(code, (), tuple(codes)))
    return blocks


C_CHOICES = [0, 0x80000000, 0x3F800000, 0xC2000000, 0x5D800001, 0x00000001, 0x7F7FFFFF, 0xFF7FFFFF,
             0x7F800000, 0xFF800000, 0x7FC00000]


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_fused_equals_the_oracle_random(index):
    name, fmt, acc = CONFIGS[index]
    rng = random.Random(index)
    for trial in range(25):
        n = rng.randrange(0, 5)
        blocks_a, blocks_b = random_blocks(rng, fmt, n), random_blocks(rng, fmt, n)
        c = rng.choice(C_CHOICES) if trial % 2 else rng.randrange(1 << 32)
        check_oracle(blocks_a, blocks_b, name, acc, c, fmt)


def test_fp4_with_e8m0_scales_per_16_quantizes_and_runs():
    # a custom block format (FP4 E2M1 elements, E8M0 scale per 16), as kind::mxf4nvf4's scale_vec::4X
    assert FP4_K16.block_size == 16 and FP4_K16.scale.name == "e8m0"
    # amax 3 -> scale 2^-1 (floor rule); every value / 2^-1 is an E2M1 value, so q holds them exactly
    magnitudes = [0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3]
    values = [Fraction(m) for m in magnitudes] + [-Fraction(m) for m in magnitudes]
    q = quantize_block(values, FP4_K16)
    assert q.scale == 126
    # four blocks, one step of 64: block i has a[0] = b[0] = 6 and XA = i: 36 * (1 + 2 + 4 + 8) = 540
    blocks_a = [QuantizedBlock(127 + i, (), (0x7,) + (0,) * 15) for i in range(4)]
    blocks_b = [QuantizedBlock(127, (), (0x7,) + (0,) * 15)] * 4
    assert dot_general(blocks_a, blocks_b, FP4_K16, accumulator=BW_F4).code == 0x44070000
    assert dot_general([q], [q], FP4_K16, accumulator=BW_F4).code == round_bits(sum(v * v for v in values), "rtz")


def test_nvfp4_quantized_without_tensor_scale_runs_fused():
    options = QuantizeOptions(nvfp4_tensor_scale="none")
    rng = random.Random(3)
    values = [[Fraction(rng.randrange(-600, 600), 64) for _ in range(16)] for _ in range(4)]
    blocks = [quantize_block(v, "nvfp4", options) for v in values]
    got = dot_general(blocks, blocks[::-1], "nvfp4", accumulator=BW_F4, tensor_scale_a=1)
    expected = fused_oracle(blocks, blocks[::-1], ("e2m1", 16, "ue4m3"), oracle_params(BW_F4, 16), 0)
    assert list(got.steps) == expected


@st.composite
def one_step_cases(draw):
    name, element = draw(st.sampled_from([(E4M3, "e4m3"), ("mxfp8_e5m2", "e5m2")]))
    finite = [c for c in range(256) if decode_float(c, element)[1] not in (NAN, "inf")]
    codes = st.lists(st.sampled_from(finite), min_size=32, max_size=32)
    a = QuantizedBlock(draw(st.integers(0, 254)), (), tuple(draw(codes)))
    b = QuantizedBlock(draw(st.integers(0, 254)), (), tuple(draw(codes)))
    c_bits = draw(st.integers(0, 0xFFFFFFFF).filter(lambda w: w & 0x7F800000 != 0x7F800000))
    rounding = draw(st.sampled_from(["rne", "rna", "rtz", "rup", "rdn"]))
    out = draw(st.sampled_from(["fp32", "bf16", "fp32_e8m13"]))
    return name, element, a, b, c_bits, rounding, out


@PROPERTY
@given(one_step_cases())
def test_wide_anchor_max_step_equals_one_rounding_of_the_exact_sum(case):
    # F >= the span of every exponent (products up to 2^(30+254), C down to 2^-149, product
    # LSBs down to 2^(-32-254)): nothing is cut, so one step is round_once(C + exact sum).
    name, element, a, b, c_bits, rounding, out = case
    acc = Accumulator(mode="aligned", frac_bits=600, accumulate="fused", output=out, output_rounding=rounding)
    exact = signed(decode_float(c_bits, "fp32")) + sum(
        signed(decode_float(x, element)) * signed(decode_float(y, element)) for x, y in zip(a.codes, b.codes)
    ) * e8m0(a.scale) * e8m0(b.scale)
    if out == "fp32_e8m13":
        expected = e8m13_bits(exact, rounding)
    else:
        expected = round_bits(exact, rounding, out)
    assert dot_general([a], [b], name, accumulator=acc, c=fp32_bits(c_bits)).code == expected


# ================================================================================================
# 6. Errors
# ================================================================================================


def test_fused_refuses_a_tensor_scale():
    nv = QuantizedBlock(0x38, (), (0x2,) * 16)
    with pytest.raises(ValueError, match=r"tensor_scale_a=.*nvfp4_tensor_scale='none'"):
        dot_general([nv], [nv], "nvfp4", accumulator=BW_F4, tensor_scale_a=Fraction(1, 2))
    with pytest.raises(ValueError, match=r"tensor_scale_b"):
        dot(nv, nv, "nvfp4", accumulator=BW_F4, tensor_scale_b=3)
    assert dot_general([nv], [nv], "nvfp4", accumulator=BW_F4, tensor_scale_a=1, tensor_scale_b=1.0).code == 0x41800000


def test_fused_refusals_from_the_format_pair():
    nv = QuantizedBlock(0x38, (), (0x2,) * 16)
    with pytest.raises(ValueError, match="step_terms='product' is not allowed for 'nvfp4'"):
        dot_general([nv], [nv], "nvfp4", accumulator=BW_F8)
    with pytest.raises(ValueError, match="anchor='fixed'"):
        dot_general([ones()], [ones()], E4M3, accumulator=Accumulator.preset("mxdotp_fp8", step=64))
    with pytest.raises(ValueError, match="step=48"):
        dot_general([ones()], [ones()], E4M3, accumulator=Accumulator.preset("blackwell_mxf8f6f4", step=48))


def test_c_must_be_an_fp32_value():
    for bad in (Fraction(1, 3), 1e-50, 2**200, 1 + 2.0**-30):
        with pytest.raises(ValueError, match="c=.*fp32 value"):
            dot_general([ones()], [ones()], E4M3, c=bad)
        with pytest.raises(ValueError, match="c=.*fp32 value"):
            dot_general([ones()], [ones()], E4M3, accumulator=BW_F8, c=bad)
    # a subnormal fp32 value and an int are fine
    assert dot_general([], [], E4M3, c=2.0**-149).code == 0x00000001
    assert dot_general([], [], E4M3, c=3).code == 0x40400000


def test_c_zero_exponent_is_a_fused_field():
    with pytest.raises(ValueError, match="c_zero_exponent=-127 is only used with accumulate='fused'"):
        Accumulator(c_zero_exponent=-127)
    assert Accumulator.preset("blackwell_mxf8f6f4").effective_c_zero_exponent == -126
    assert Accumulator.preset("mxdotp_fp8").effective_c_zero_exponent == -127
