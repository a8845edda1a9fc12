"""Design options of real quantizers (docs/numerics.md sections 1, 2, 2.3, 3.2, 6.1): scale_encoding,
scale_min, specials, nan_code, subnormal_inputs, caller-supplied scales, source types (fp16, bf16,
FP8) and the Inf-saturate rule "an Inf counts as the largest finite value of the input's own type".

Expected values come from three independent places:

* hand-worked blocks, the arithmetic in the comments;
* an exact Fraction oracle written here from the contract text (:func:`contract_oracle`), with
  element value tables decoded by ml_dtypes, and input values widened by ml_dtypes;
* an independent model of the pulp-platform iDMA v0.7.0 quantizer from its description in
  contract 6.1 (:func:`idma_model`: biased fp32 exponent fields, E5M2 by nearest-even on the table).

Plus fast path == reference model (hypothesis, across option combinations and source types) and
a clear error for every bad value or combination.

Codes used below (sign bit first):
  E4M3 (bias 7):  2^-9 = 0x01, 2^-7 = 0x04, 2^-6 = 0x08, 1.0 = 0x38, 1.5 = 0x3C, 2.0 = 0x40,
                  128 = 0x70, 256 = 0x78, 288 = 0x79, 448 = 0x7E (max), NaN = 0x7F.
  E5M2 (bias 15): 2^-14 = 0x04, 2^-13 = 0x08, 2^-12 = 0x0C, 0.5 = 0x38, 2.0 = 0x40, 4.0 = 0x44,
                  2^14 = 0x74, 2^15 = 0x78, 1.25 * 2^15 = 0x79, 1.5 * 2^15 = 0x7A, 57344 = 0x7B (max),
                  Inf = 0x7C, NaN = 0x7D, 0x7E (canonical), 0x7F.
  E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 = codes 0..7.  MXINT8: q / 64, 1.0 = 0x40, -127/64 = 0x81, -2 = 0x80.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from fractions import Fraction
from functools import cache

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxsim
from mxsim import ref
from mxsim.options import QuantizeOptions
from mxsim.options.quantize import element_nan_codes

OCP_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"]
IDMA = {"scale_encoding": "int8_exponent", "scale_min": -128, "specials": "per_element", "nan_code": 0x7D,
        "subnormal_inputs": "as_normal"}
BF16 = ml_dtypes.bfloat16
E4M3_DTYPE, E5M2_DTYPE = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
TWO = Fraction(2)
VALUE_DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": BF16, "fp64": np.float64, "fp8_e4m3": E4M3_DTYPE,
                "fp8_e5m2": E5M2_DTYPE}


# --- helpers ---------------------------------------------------------------------------------------
def exact_values(x: np.ndarray) -> list:
    """Python floats of an array's values, widened by ml_dtypes/NumPy (exact; NaN signs kept)."""
    with np.errstate(invalid="ignore"):
        return [float(v) for v in np.asarray(x).astype(np.float64).reshape(-1)]


def padded(values, dtype=np.float32, k=32) -> np.ndarray:
    x = np.zeros(k, dtype=dtype)
    x[: len(values)] = np.array(values, dtype=np.float64).astype(dtype)
    return x


def both(x, fmt, *, source=None, scales=None, **options):
    """mxsim.quantize of one block (fast path), checked against ref.quantize_block; returns
    (scale byte, element codes)."""
    t = mxsim.quantize(x, fmt, source=source, scales=None if scales is None else np.array(scales), **options)
    name = source or {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                      "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}[np.asarray(x).dtype.name]
    values = exact_values(x if source is None else x.view(VALUE_DTYPES[source]))
    expected = ref.quantize_block(values, fmt, QuantizeOptions(**options), source=name,
                                  scale=None if scales is None else int(scales[0]))
    got = (int(t.scales.reshape(-1)[0]), tuple(int(c) for c in t.codes.reshape(-1)))
    assert got == (expected.scale, expected.codes)
    return got[0], list(got[1])


def raises_both(x, fmt, match, *, source=None, **options):
    """The same ValueError from the fast path and the reference."""
    with pytest.raises(ValueError, match=match):
        mxsim.quantize(x, fmt, source=source, **options)
    with pytest.raises(ValueError, match=match):
        ref.quantize_block(exact_values(x), fmt, QuantizeOptions(**options), source=source or "fp32")


def f32(bits: int) -> float:
    return float(np.array(bits, np.uint32).view(np.float32))


# --- scale_encoding and scale_min ------------------------------------------------------------------
def test_int8_exponent_bytes_are_twos_complement_exponents():
    # amax = 2^14 in E5M2 (emax 15): E = 14 - 15 = -1 -> int8 byte 0xFF (2^-1); E8M0 would be 126.
    # Elements: 2^14 / 2^-1 = 2^15 -> 0x78; 1.0 / 2^-1 = 2 -> 0x40.
    x = padded([16384.0, 1.0])
    scale, codes = both(x, "mxfp8_e5m2", scale_encoding="int8_exponent", specials="per_element")
    assert (scale, codes[:2]) == (0xFF, [0x78, 0x40])
    assert both(x, "mxfp8_e5m2")[0] == 126
    # amax = 0.75: E = -1 - 15 = -16 -> byte 0xF0 (E8M0: 111); 0.75 * 2^16 = 1.5 * 2^15 -> 0x7A
    scale, codes = both(padded([0.75]), "mxfp8_e5m2", scale_encoding="int8_exponent")
    assert (scale, codes[0]) == (0xF0, 0x7A)


def test_scale_min_minus_128_clamps_and_elements_follow_the_clamped_scale():
    # amax = 2^-140 (an fp32 subnormal, read exactly): E = -140 - 15 = -155, clamped.
    x = padded([2.0**-140])
    # scale_min=-128: byte 0x80 (2^-128); element 2^-140 / 2^-128 = 2^-12 -> 0x0C
    assert both(x, "mxfp8_e5m2", scale_encoding="int8_exponent", scale_min=-128)[0] == 0x80
    assert both(x, "mxfp8_e5m2", scale_encoding="int8_exponent", scale_min=-128)[1][0] == 0x0C
    # scale_min=-127 (int8): byte 0x81; element 2^-13 -> 0x08.  E8M0: byte 0x00, element 0x08.
    assert both(x, "mxfp8_e5m2", scale_encoding="int8_exponent")[:2] == (0x81, [0x08] + [0] * 31)
    assert both(x, "mxfp8_e5m2")[:2] == (0x00, [0x08] + [0] * 31)


def test_all_zero_block_gets_scale_min():
    x = padded([0.0, -0.0])
    assert both(x, "mxfp8_e4m3", scale_encoding="int8_exponent", scale_min=-128) == (0x80, [0x00, 0x80] + [0] * 30)
    assert both(x, "mxfp8_e4m3", scale_encoding="int8_exponent") == (0x81, [0x00, 0x80] + [0] * 30)
    assert both(x, "mxfp8_e4m3") == (0x00, [0x00, 0x80] + [0] * 30)


def test_upper_clamp_in_both_encodings():
    # float64 2^200 in E5M2: E = 200 - 15 = 185 -> 127: int8 0x7F, E8M0 0xFE; 2^73 saturates to 0x7B
    x = padded([2.0**200, 1.0], np.float64)
    assert both(x, "mxfp8_e5m2", scale_encoding="int8_exponent")[0] == 0x7F
    assert both(x, "mxfp8_e5m2")[:2] == (0xFE, [0x7B, 0x00] + [0] * 30)


def test_int8_exponent_has_no_nan_block():
    # specials='block' would make a NaN block, which an int8 exponent cannot mark: refused
    for values, options in [([np.nan, 1.0], {}), ([np.inf, 1.0], {}), ([np.inf, 1.0], {"inf_policy": "nan"})]:
        raises_both(padded(values), "mxfp8_e5m2", "no scale under scale_encoding='int8_exponent'",
                    scale_encoding="int8_exponent", **options)
    # ... but an Inf under inf_policy='saturate' is no NaN block: fp32 max -> E = 127 - 15 = 112
    assert both(padded([np.inf, 1.0]), "mxfp8_e5m2", scale_encoding="int8_exponent", inf_policy="saturate")[0] == 112


# --- specials="per_element" and nan_code ----------------------------------------------------------
def test_per_element_e5m2():
    # finite amax = 3.0: E = 1 - 15 = -14 -> E8M0 byte 113; 3 * 2^14 = 1.5 * 2^15 -> 0x7A.
    # -NaN -> canonical 0x7E with the sign: 0xFE; +Inf -> +max 0x7B; -Inf -> 0xFB; -0 -> 0x80.
    x = padded([-np.nan, np.inf, -np.inf, 3.0, -0.0, np.nan])
    assert both(x, "mxfp8_e5m2", specials="per_element")[0] == 113
    assert both(x, "mxfp8_e5m2", specials="per_element")[1][:6] == [0xFE, 0x7B, 0xFB, 0x7A, 0x80, 0x7E]
    # nan_code=0x7D (iDMA): -NaN -> 0xFD, +NaN -> 0x7D
    assert both(x, "mxfp8_e5m2", specials="per_element", nan_code=0x7D)[1][:6] == [0xFD, 0x7B, 0xFB, 0x7A, 0x80, 0x7D]
    # the default (block): NaN block, scale 0xFF, every element the NaN code
    assert both(x, "mxfp8_e5m2") == (0xFF, [0x7E] * 32)


def test_per_element_e4m3():
    # amax = 1: E = 0 - 8 = -8 -> byte 119; 1.0 * 2^8 = 256 -> 0x78; NaN -> 0x7F; -Inf -> -448 = 0xFE
    assert both(padded([np.nan, -np.inf, 1.0]), "mxfp8_e4m3", specials="per_element")[:2] == (
        119, [0x7F, 0xFE, 0x78] + [0] * 29)


def test_per_element_block_without_finite_nonzero_gets_scale_min():
    x = padded([np.nan, np.inf, -np.inf, -np.nan])
    assert both(x, "mxfp8_e5m2", **IDMA) == (0x80, [0x7D, 0x7B, 0xFB, 0xFD] + [0] * 28)
    assert both(x, "mxfp8_e5m2", specials="per_element") == (0x00, [0x7E, 0x7B, 0xFB, 0xFE] + [0] * 28)
    assert both(np.full(32, np.inf, np.float32), "mxfp8_e4m3", specials="per_element") == (0x00, [0x7E] * 32)


def test_per_element_formats_without_nan():
    # E2M1: amax 1 -> E = 0 - 2 = -2 (byte 125); 1.0 * 4 = 4 -> code 6; +-Inf -> +-6 (0x7, 0xF)
    assert both(padded([np.inf, -np.inf, 1.0]), "mxfp4_e2m1", specials="per_element")[:2] == (125, [7, 0xF, 6] + [0] * 29)
    # a NaN element has nowhere to go: ValueError (contract section 1)
    raises_both(padded([np.nan, 1.0]), "mxfp4_e2m1", "format 'fp4_e2m1' has no NaN", specials="per_element")
    # MXINT8: E = 0 (byte 127); -Inf -> -127/64 (0x81), or -2 (0x80) with int8_allow_neg2
    assert both(padded([-np.inf, 1.0]), "mxint8", specials="per_element")[1][:2] == [0x81, 0x40]
    assert both(padded([-np.inf, 1.0]), "mxint8", specials="per_element", int8_allow_neg2=True)[1][:2] == [0x80, 0x40]


def test_nan_code_in_nan_blocks():
    assert both(padded([np.nan, 1.0]), "mxfp8_e5m2", nan_code=0x7D) == (0xFF, [0x7D] * 32)
    assert both(padded([np.nan, 1.0]), "mxfp8_e5m2", nan_code=0x7F) == (0xFF, [0x7F] * 32)
    assert both(padded([-np.inf, 1.0]), "mxfp8_e4m3", nan_code=0x7F) == (0xFF, [0x7F] * 32)


# --- subnormal_inputs -----------------------------------------------------------------------------
def test_subnormal_inputs_exact_flush_as_normal():
    # fp32 bits 0x00400000 = 2^22 * 2^-149 = 2^-127. E4M3: E = -127 - 8 -> clamped -127 (byte 0).
    #   exact: 2^-127 / 2^-127 = 1.0 -> 0x38; flush: 0 -> 0x00;
    #   as_normal: field 0 read as (1 + 2^22 / 2^23) * 2^-127 = 1.5 * 2^-127 -> 1.5 -> 0x3C.
    # fp32 bits 0x80000001 = -2^-149:
    #   exact: -2^-22 -> -0 (0x80); as_normal: -(1 + 2^-23) * 2^-127 -> -1.0 (RNE) -> 0xB8.
    x = padded([f32(0x00400000), f32(0x80000001), 0.0, -0.0])
    assert both(x, "mxfp8_e4m3")[1][:4] == [0x38, 0x80, 0x00, 0x80]
    assert both(x, "mxfp8_e4m3", subnormal_inputs="flush")[1][:4] == [0x00, 0x80, 0x00, 0x80]
    assert both(x, "mxfp8_e4m3", flush_subnormal_inputs=True)[1][:4] == [0x00, 0x80, 0x00, 0x80]
    assert both(x, "mxfp8_e4m3", subnormal_inputs="as_normal") == (0, [0x3C, 0xB8, 0x00, 0x80] + [0] * 28)
    # flush_plus (Quark MX6/MX9): every magnitude below 2^-126, -0 included, reads as +0
    assert both(x, "mxfp8_e4m3", subnormal_inputs="flush_plus")[1][:4] == [0x00, 0x00, 0x00, 0x00]
    # MX6 (sign in bit 4): a block [1, -2^-130, -0, -2^-126]; 2^-126 / 2^-3 rounds to -0 and keeps its sign
    y = np.array([1.0, -(2.0**-130), -0.0, -(2.0**-126)] + [0.0] * 12, np.float32)
    assert both(y, "mx6", subnormal_inputs="flush")[1][:4] == [0x08, 0x10, 0x10, 0x10]
    assert both(y, "mx6", subnormal_inputs="flush_plus")[1][:4] == [0x08, 0x00, 0x00, 0x10]


def test_as_normal_reads_fp32_fields_after_widening():
    # bf16 bits 0x0001 = 2^-133, an fp32 subnormal once widened (fp32 bits 0x00010000, m = 2^16).
    #   exact: E = -133 - 8 -> -127; 2^-133 / 2^-127 = 2^-6 -> 0x08.
    #   as_normal: (1 + 2^-7) * 2^-127 -> 1 + 2^-7 -> 1.0 (RNE, ulp 1/8) -> 0x38.
    bits = np.zeros(32, np.uint16)
    bits[0] = 0x0001
    assert both(bits, "mxfp8_e4m3", source="bf16")[1][0] == 0x08
    assert both(bits, "mxfp8_e4m3", source="bf16", subnormal_inputs="as_normal")[1][0] == 0x38
    assert both(bits.view(BF16), "mxfp8_e4m3", subnormal_inputs="as_normal")[1][0] == 0x38
    # fp16 min subnormal 2^-24 is an fp32 normal: never affected. E = -24 - 8 = -32 (byte 95); 2^8 -> 0x78
    h = padded([2.0**-24], np.float16)
    assert both(h, "mxfp8_e4m3") == both(h, "mxfp8_e4m3", subnormal_inputs="as_normal") == (95, [0x78] + [0] * 31)


def test_as_normal_refuses_float64_and_non_fp32_values():
    with pytest.raises(ValueError, match="as_normal' reads fp32 exponent fields; float64 .* not allowed"):
        mxsim.quantize(np.zeros(32), "mxfp8_e4m3", subnormal_inputs="as_normal")
    with pytest.raises(ValueError, match="as_normal' reads fp32 exponent fields"):
        ref.quantize_block([0.0] * 32, "mxfp8_e4m3", QuantizeOptions(subnormal_inputs="as_normal"), source="fp64")
    with pytest.raises(ValueError, match="not an fp32 subnormal"):
        ref.quantize_block([Fraction(1, 3 * 2**130)] + [0] * 31, "mxfp8_e4m3", QuantizeOptions(subnormal_inputs="as_normal"))


def test_float64_quotient_below_float64_range_rounds_like_the_exact_one():
    # E5M2 block [2^20, 2^-1074, -2^-1074]: E = 20 - 15 = 5, and 2^-1074 / 2^5 is below float64's
    # range (ldexp gives 0), yet rup of a positive nonzero quotient is the smallest subnormal 0x01
    # and rdn of the negative one 0x81.
    x = padded([2.0**20, 5e-324, -5e-324], np.float64)
    # (2^20 / 2^5 = 2^15 -> 0x78.)  This went through ldexp's flush to zero before (code 0x00).
    assert both(x, "mxfp8_e5m2", rounding="rup")[:2] == (5 + 127, [0x78, 0x01, 0x80] + [0] * 29)
    assert both(x, "mxfp8_e5m2", rounding="rdn")[1][:3] == [0x78, 0x00, 0x81]


# --- caller-supplied scales ------------------------------------------------------------------------
def test_caller_scales_quantize_against_the_given_scale():
    # E4M3 against 2^0 (byte 127): 1.0 -> 0x38; 300 -> nearest of 288/320 is 288 -> 0x79;
    # -1000 saturates -> 0xFE; 2^-10 is a tie between 0 and 2^-9 -> even -> 0x00.
    x = padded([1.0, 300.0, -1000.0, 2.0**-10])
    assert both(x, "mxfp8_e4m3", scales=[127])[1][:4] == [0x38, 0x79, 0xFE, 0x00]
    # against 2^-7 (byte 120): 1.0 * 2^7 = 128 -> 0x70; 300 * 128 saturates -> 0x7E
    assert both(x, "mxfp8_e4m3", scales=[120])[1][:2] == [0x70, 0x7E]
    # int8 exponent byte 0xFF = 2^-1: 1.0 / 2^-1 = 2.0 -> 0x40 (and 300 * 2 saturates -> 0x7E)
    scale, codes = both(x, "mxfp8_e4m3", scales=[0xFF], scale_encoding="int8_exponent")
    assert (scale, codes[:2]) == (0xFF, [0x40, 0x7E])
    # int8 byte 0x80 = 2^-128 with scale_min=-128: 2^-134 / 2^-128 = 2^-6 -> E4M3 smallest normal 0x08
    got = both(padded([2.0**-134]), "mxfp8_e4m3", scales=[0x80], scale_encoding="int8_exponent", scale_min=-128)
    assert got == (0x80, [0x08] + [0] * 31)


def test_caller_scales_shapes_axes_and_nan_blocks():
    x = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)  # blocks along axis 0: scales shape (3, 2)
    given = np.array([[130, 131], [127, 126], [140, 100]], np.uint8)
    t = mxsim.quantize(x, "mxfp8_e4m3", axis=0, scales=given)
    assert np.array_equal(t.scales, given)
    for row in range(3):
        for b in range(2):
            block = exact_values(x[32 * b : 32 * b + 32, row])
            expected = ref.quantize_block(block, "mxfp8_e4m3", scale=int(given[row, b]))
            assert tuple(t.codes[row, 32 * b : 32 * b + 32].tolist()) == expected.codes
    # a NaN block stays a NaN block (scale 0xFF) under specials='block'
    assert both(padded([np.nan]), "mxfp8_e4m3", scales=[127]) == (0xFF, [0x7F] * 32)
    # MX9 takes a given shared exponent too; its microexponents follow from it
    m = padded([1.0, 0.25, 0.125], k=16)
    t = mxsim.quantize(m, "mx9", scales=[127])
    expected = ref.quantize_block(exact_values(m), "mx9", scale=127)
    assert (t.scales.tolist(), t.subscales[0].tolist(), t.codes.tolist()) == ([127], list(expected.subscales), list(expected.codes))


@pytest.mark.parametrize(
    "scales,options,match",
    [
        ([0xFF], {}, r"scales\[0\] 0xFF is not allowed under scale_encoding='e8m0'.*E8M0 codes 0x00..0xFE"),
        ([0x80], {"scale_encoding": "int8_exponent"}, r"scales\[0\] 0x80 .*scale_min=-127.*E in \[-127, 127\]"),
        ([256], {}, r"scales\[0\] 256 is not allowed"),
        ([-1], {}, r"scales\[0\] -1 is not allowed"),
        ([1.0], {}, "scales must be an integer array of scale bytes, got dtype float64"),
        ([127, 127], {}, r"scales have shape \(2,\); expected \(1,\)"),
    ],
)
def test_caller_scales_errors(scales, options, match):
    with pytest.raises(ValueError, match=match):
        mxsim.quantize(np.ones(32, np.float32), "mxfp8_e4m3", scales=np.array(scales), **options)


def test_caller_scales_errors_reference_and_nvfp4():
    for byte, options in [(0xFF, {}), (0x80, {"scale_encoding": "int8_exponent"}), (300, {}), (True, {})]:
        with pytest.raises(ValueError, match="caller-supplied scales must be"):
            ref.quantize_block([1.0] * 32, "mxfp8_e4m3", QuantizeOptions(**options), scale=byte)
    with pytest.raises(ValueError, match="caller-supplied scales apply to E8M0-scaled formats; 'nvfp4' has a ue4m3"):
        mxsim.quantize(np.ones(16, np.float32), "nvfp4", scales=np.array([0x38]))
    with pytest.raises(ValueError, match="caller-supplied scales apply to E8M0-scaled formats"):
        ref.quantize_block([1.0] * 16, "nvfp4", scale=0x38)
    # int8 arrays are read as their bytes: -1 is 0xFF = 2^-1 under int8_exponent
    t = mxsim.quantize(np.ones(32, np.float32), "mxfp8_e4m3", scales=np.array([-1], np.int8), scale_encoding="int8_exponent")
    assert t.scales.tolist() == [0xFF] and t.codes[0] == 0x40


# --- source types -----------------------------------------------------------------------------------
def test_fp16_inf_saturate_counts_as_65504():
    # float16 [inf, 1.0, 0, ...] in MXFP8 E4M3, inf_policy='saturate': Inf counts as fp16's 65504,
    # floor(log2 65504) = 15, E = 15 - 8 = 7 -> scale 134; 1.0 / 2^7 = 2^-7 -> E4M3 subnormal 0x04;
    # Inf saturates to 448 (0x7E).
    x = padded([np.inf, 1.0], np.float16)
    t = mxsim.quantize(x, "mxfp8_e4m3", inf_policy="saturate")
    assert t.scales.tolist() == [134] and t.codes[:3].tolist() == [0x7E, 0x04, 0x00]
    assert both(x, "mxfp8_e4m3", inf_policy="saturate")[:2] == (134, [0x7E, 0x04] + [0] * 30)
    assert both(x.view(np.uint16), "mxfp8_e4m3", source="fp16", inf_policy="saturate")[0] == 134
    # the same values as float32: fp32 max, floor(log2) = 127, E = 119 -> 246; 1.0 / 2^119 -> 0
    assert both(x.astype(np.float32), "mxfp8_e4m3", inf_policy="saturate")[:2] == (246, [0x7E, 0x00] + [0] * 30)
    # bf16 max (2 - 2^-7) * 2^127 has fp32 max's binade: 246 too; float64 max: E clamps at 127 -> 254
    assert both(x.astype(BF16), "mxfp8_e4m3", inf_policy="saturate")[0] == 246
    assert both(x.astype(np.float64), "mxfp8_e4m3", inf_policy="saturate")[0] == 254
    # an E5M2 source's Inf counts as 57344 = 1.75 * 2^15: E = 15 - 8 = 7 -> 134, like fp16
    assert both(x.astype(E5M2_DTYPE), "mxfp8_e4m3", inf_policy="saturate")[:2] == (134, [0x7E, 0x04] + [0] * 30)


def test_inf_saturate_rules_in_ref_sources():
    assert ref.sources.inf_stand_in("fp16") == 65504
    assert ref.sources.inf_stand_in("bfloat16") == (2 - TWO**-7) * TWO**127
    assert ref.sources.inf_stand_in("float64") == (2 - TWO**-52) * TWO**1023
    assert ref.sources.inf_stand_in("fp32") == (2 - TWO**-23) * TWO**127
    assert ref.sources.inf_stand_in("fp8_e5m2") == 57344


@pytest.mark.parametrize("dtype", [E4M3_DTYPE, E5M2_DTYPE])
@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp4_e2m1", "mxint8", "nvfp4", "mx9"])
def test_fp8_sources_quantize_as_their_exact_values(dtype, fmt):
    codes = np.arange(256, dtype=np.uint8)
    fp8 = codes.view(dtype)
    finite = np.isfinite(fp8.astype(np.float32))
    values = fp8[finite][: 128]  # whole blocks of finite values, widened by ml_dtypes below
    via_fp32 = mxsim.quantize(values.astype(np.float32), fmt)
    direct = mxsim.quantize(values, fmt)
    bits = mxsim.quantize(values.view(np.uint8), fmt, source=np.dtype(dtype).name)  # e.g. 'float8_e4m3fn' 
    for t in (direct, bits):
        assert np.array_equal(t.scales, via_fp32.scales) and np.array_equal(t.codes, via_fp32.codes)


def test_fp8_sources_of_encode():
    e5m2 = np.arange(256, dtype=np.uint8).view(E5M2_DTYPE)
    wide = e5m2.astype(np.float32)
    for fmt in ["fp8_e4m3", "fp4_e2m1", "bf16", "int8"]:
        finite = np.isfinite(wide) if fmt in ("fp4_e2m1", "int8") else np.ones(256, bool)
        assert np.array_equal(mxsim.encode(e5m2[finite], fmt), mxsim.encode(wide[finite], fmt))
    e4m3 = np.arange(256, dtype=np.uint8).view(E4M3_DTYPE)
    assert np.array_equal(mxsim.encode(e4m3, "fp8_e5m2", "rtz"), mxsim.encode(e4m3.astype(np.float32), "fp8_e5m2", "rtz"))
    assert np.array_equal(mxsim.encode(e4m3.view(np.uint8), "fp8_e4m3", source="fp8_e4m3"), np.arange(256))
    # NaN signs survive the widening: E4M3 0xFF (-NaN) -> E5M2 -NaN 0xFE
    assert mxsim.encode(e4m3[[0x7F, 0xFF]], "fp8_e5m2").tolist() == [0x7E, 0xFE]


def test_bf16_bit_patterns_equal_bf16_arrays():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 1 << 16, size=(4, 64), dtype=np.uint64).astype(np.uint16)
    for options in [{}, {"specials": "per_element"}, {"inf_policy": "saturate"}]:
        a = mxsim.quantize(bits.view(BF16), "mxfp8_e4m3", **options)
        b = mxsim.quantize(bits, "mxfp8_e4m3", source="bf16", **options)
        assert np.array_equal(a.scales, b.scales) and np.array_equal(a.codes, b.codes)


@pytest.mark.parametrize(
    "x,source,match",
    [
        (np.zeros(4, np.uint16), None, "input dtype uint16 holds bit patterns: pass source= naming their type .*fp16, bf16"),
        (np.zeros(4, np.uint32), "fp16", "source='fp16' reads uint16 bit patterns; got input dtype uint32"),
        (np.zeros(4, np.float32), "bf16", "source='bf16' does not match the input dtype float32"),
        (np.zeros(4, np.uint16), "fp6_e3m2", "source='fp6_e3m2' is not allowed; expected one of: fp32, fp16, bf16"),
        (np.zeros(4, np.int32), None, ("input dtype int32 is not allowed; expected one of: float16, bfloat16, float32, "
                                       "float64, float8_e4m3fn, float8_e5m2")),
    ],
)
def test_source_errors(x, source, match):
    with pytest.raises(ValueError, match=match):
        mxsim.quantize(x, "mxfp8_e4m3", source=source)
    with pytest.raises(ValueError, match=match):
        mxsim.encode(x, "fp8_e4m3", source=source)


def test_reference_source_errors():
    with pytest.raises(ValueError, match="source='int8' is not allowed"):
        ref.quantize_block([0.0] * 32, "mxfp8_e4m3", source="int8")


# --- option validation -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options,match",
    [
        ({"scale_encoding": "int9"}, "scale_encoding='int9' is not allowed; expected one of: e8m0, int8_exponent"),
        ({"scale_min": -119}, r"scale_min=-119 is not allowed; expected an integer in \[-128, -120\]"),
        ({"scale_min": True}, r"scale_min=True is not allowed; expected an integer in \[-128, -120\]"),
        ({"scale_min": -128}, "scale_min=-128 is only allowed with scale_encoding='int8_exponent'"),
        ({"specials": "none"}, "specials='none' is not allowed; expected one of: block, per_element"),
        ({"nan_code": "0x7D"}, r"nan_code='0x7D' is not allowed; expected an integer in \[0, 255\] or None"),
        ({"nan_code": True}, "nan_code=True is not allowed"),
        ({"subnormal_inputs": "ftz"},
         "subnormal_inputs='ftz' is not allowed; expected one of: exact, flush, as_normal, flush_plus"),
        ({"flush_subnormal_inputs": True, "subnormal_inputs": "as_normal"},
         "flush_subnormal_inputs=True contradicts subnormal_inputs='as_normal'"),
        ({"flush_subnormal_inputs": True, "subnormal_inputs": "flush_plus"},
         "flush_subnormal_inputs=True contradicts subnormal_inputs='flush_plus'"),
        ({"specials": "per_element", "inf_policy": "saturate"},
         "inf_policy='saturate' is not allowed with specials='per_element'"),
    ],
)
def test_option_errors(options, match):
    with pytest.raises(ValueError, match=match):
        QuantizeOptions(**options)
    with pytest.raises(ValueError, match=match):
        mxsim.quantize(np.zeros(32, np.float32), "mxfp8_e4m3", **options)


OCP_LIST = "mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1, mxint8"


@pytest.mark.parametrize(
    "fmt,options,match",
    [
        ("mxfp8_e5m2", {"nan_code": 0x7C}, "nan_code=0x7C is not a NaN code of fp8_e5m2 .* one of: 0x7D, 0x7E, 0x7F"),
        ("mxfp8_e5m2", {"nan_code": 0xFD}, "nan_code=0xFD is not a NaN code of fp8_e5m2 with the sign bit clear"),
        ("mxfp8_e4m3", {"nan_code": 0x7E}, "nan_code=0x7E is not a NaN code of fp8_e4m3 .* one of: 0x7F"),
        ("mxfp4_e2m1", {"nan_code": 0x7}, ("nan_code=0x07 is not allowed for 'mxfp4_e2m1': its elements .* no NaN code; "
                                           "nan_code applies to formats whose elements have NaN: mxfp8_e4m3, mxfp8_e5m2")),
        ("mxint8", {"nan_code": 0x80}, "its elements \\(int8\\) have no NaN code"),
        ("mx9", {"specials": "per_element"}, (f"specials='per_element' is not allowed for 'mx9': it applies to OCP MX "
                                              f"formats only .*{OCP_LIST}")),
        ("msfp16", {"scale_encoding": "int8_exponent"}, "scale_encoding='int8_exponent' is not allowed for 'msfp16'"),
        ("nvfp4", {"scale_encoding": "int8_exponent", "scale_min": -128}, "not allowed for 'nvfp4'"),
        ("nvfp4", {"nan_code": 0x7F}, "nan_code=127 is not allowed for 'nvfp4'"),
        ("mx6", {"specials": "per_element"}, "applies to OCP MX formats only"),
    ],
)
def test_options_refused_for_formats(fmt, options, match):
    k = mxsim.get_format(fmt).block_size
    with pytest.raises(ValueError, match=match):
        mxsim.quantize(np.zeros(k, np.float32), fmt, **options)
    with pytest.raises(ValueError, match=match):
        ref.quantize_block([0.0] * k, fmt, QuantizeOptions(**options))
    subblocks = mxsim.get_format(fmt).subblocks
    subscales = np.zeros((1, subblocks), np.uint8) if subblocks else None
    with pytest.raises(ValueError, match=match):
        mxsim.MXTensor.from_codes(np.zeros(1, np.uint8), np.zeros(k, np.uint8), fmt, subscales=subscales, **options)


def test_subnormal_inputs_applies_to_every_format():
    for fmt in ["mx9", "msfp12", "nvfp4", "mxfp4_e2m1"]:
        k = mxsim.get_format(fmt).block_size
        x = np.full(k, f32(0x00400000), np.float32)
        mxsim.quantize(x, fmt, subnormal_inputs="as_normal")


def test_as_dict_is_complete_and_round_trips():
    opts = QuantizeOptions(**IDMA)
    d = opts.as_dict()
    assert set(d) == {f.name for f in __import__("dataclasses").fields(QuantizeOptions)}
    assert {k: d[k] for k in IDMA} == IDMA
    assert QuantizeOptions.from_kwargs(**json.loads(json.dumps(d))) == opts
    # the old spelling and the new one are the same options, recorded consistently
    assert QuantizeOptions(flush_subnormal_inputs=True) == QuantizeOptions(subnormal_inputs="flush")
    assert QuantizeOptions(subnormal_inputs="flush").as_dict()["flush_subnormal_inputs"] is True
    assert QuantizeOptions(flush_subnormal_inputs=True).as_dict()["subnormal_inputs"] == "flush"


# --- MXTensor, files, packing, interop -----------------------------------------------------------
def _idma_tensor():
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    x[0, 3] = np.nan
    return mxsim.quantize(x, "mxfp8_e5m2", **IDMA)


def test_tensor_carries_its_scale_encoding_through_files_and_packing(tmp_path):
    from mxsim.tensor_pack import pack, unpack

    t = _idma_tensor()
    assert t.scale_encoding == "int8_exponent" and t.options == QuantizeOptions(**IDMA)
    path = tmp_path / "t.mxsim"
    mxsim.save(t, path)
    header = mxsim.fileformat.read(path).header
    assert {k: header["options"][k] for k in IDMA} == IDMA
    back = mxsim.load(path)
    assert back.options == t.options and back.scale_encoding == "int8_exponent"
    assert np.array_equal(back.scales, t.scales) and np.array_equal(back.codes, t.codes)
    data = pack(t, "msb", "interleaved")
    again = unpack(data, "mxfp8_e5m2", t.shape, -1, "msb", "interleaved", **IDMA)
    assert again.options == t.options and np.array_equal(again.scales, t.scales)
    wrapped = mxsim.MXTensor.from_codes(t.scales, t.codes, "mxfp8_e5m2", scale_encoding="int8_exponent")
    assert wrapped.scale_encoding == "int8_exponent"


def test_int8_exponent_tensors_refuse_e8m0_conversions():
    from mxsim.interop import from_gpt_oss, from_torchao, to_gpt_oss, to_torchao

    t = _idma_tensor()
    with pytest.raises(ValueError, match="mx has scale_encoding='int8_exponent'; torchao's MXTensor stores E8M0 scales"):
        to_torchao(t)
    fp4 = mxsim.quantize(np.ones(32, np.float32), "mxfp4_e2m1", scale_encoding="int8_exponent")
    with pytest.raises(ValueError, match="mx has scale_encoding='int8_exponent'; gpt-oss stores E8M0 scales"):
        to_gpt_oss(fp4)
    blocks, scales = to_gpt_oss(mxsim.quantize(np.ones(32, np.float32), "mxfp4_e2m1"))
    with pytest.raises(ValueError, match="options has scale_encoding='int8_exponent'; gpt-oss stores E8M0"):
        from_gpt_oss(blocks, scales, scale_encoding="int8_exponent")
    ao = to_torchao(mxsim.quantize(np.ones(32, np.float32), "mxfp8_e4m3"))
    with pytest.raises(ValueError, match="options has scale_encoding='int8_exponent'; torchao's MXTensor"):
        from_torchao(ao, scale_encoding="int8_exponent")
    with pytest.raises(ValueError, match="a has scale_encoding='int8_exponent'; dot reads E8M0 scales"):
        mxsim.dot(t, mxsim.quantize(np.ones((2, 32), np.float32), "mxfp8_e5m2"))


def test_cli_quantize_takes_the_options_and_bit_patterns(tmp_path):
    from mxsim.cli import main

    bits = np.zeros(32, np.uint16)
    bits[:3] = [0x7C00, 0x3C00, 0xFE00]  # fp16 +Inf, 1.0, -NaN
    np.save(tmp_path / "x.npy", bits)
    out = tmp_path / "x.mxsim"
    args = ["quantize", str(tmp_path / "x.npy"), str(out), "--format", "mxfp8_e5m2", "--source", "fp16",
            "--scale-encoding", "int8_exponent", "--scale-min", "-128", "--specials", "per_element",
            "--nan-code", "0x7D", "--subnormal-inputs", "as_normal"]
    assert main(args) == 0
    t = mxsim.load(out)
    # finite amax 1.0: E = 0 - 15 = -15 -> byte 0xF1; 1.0 * 2^15 -> 0x78; +Inf -> 0x7B; -NaN -> 0xFD
    assert t.options == QuantizeOptions(**IDMA)
    assert t.scales.tolist() == [0xF1] and t.codes[:3].tolist() == [0x7B, 0x78, 0xFD]


# --- the golden quantize suite ---------------------------------------------------------------------
def test_golden_quantize_suite_reports_int8_exponents():
    from mxsim.golden.kinds.quantize import QuantizeSuite

    suite = QuantizeSuite(block="mxfp8_e5m2", options=IDMA)
    assert suite.name == "mxfp8_e5m2-" + "-".join(f"{k}={v}" for k, v in sorted(IDMA.items()))
    xs = [0x00000001] + [0] * 31  # an fp32 subnormal only: as_normal, E = -127 - 15 -> clamped -128
    inputs = {"x": sum(b << (32 * i) for i, b in enumerate(xs))}
    out, classes = suite.compute(inputs)
    assert out["scale"] == 0x80 and out["scale_exp"] == -128
    assert {"scale_min", "subnormal_input"} <= classes and "scale_nan" not in classes
    out, classes = suite.compute({"x": 0x46800000})  # 16384 = 2^14: E = -1, byte 0xFF (not NaN)
    assert out["scale"] == 0xFF and out["scale_exp"] == -1 and "scale_nan" not in classes
    with pytest.raises(ValueError, match="scale_encoding='int8_exponent' need specials='per_element'"):
        QuantizeSuite(block="mxfp8_e5m2", options={"scale_encoding": "int8_exponent"})


# --- contract oracle ---------------------------------------------------------------------------------
# Written from docs/numerics.md section 2 and 2.3 (floor rule, rne); element values decoded by ml_dtypes.
ORACLE_ELEMENTS = {
    "mxfp8_e4m3": (E4M3_DTYPE, 0x80, 8),
    "mxfp8_e5m2": (E5M2_DTYPE, 0x80, 15),
    "mxfp4_e2m1": (ml_dtypes.float4_e2m1fn, 0x8, 2),
    "mxint8": (None, None, 0),
}


@cache
def oracle_table(name: str, allow_neg2: bool = False):
    """Sorted (value, code) of the non-negative finite values of the element format."""
    dtype, sign_mask, _ = ORACLE_ELEMENTS[name]
    if dtype is None:  # MXINT8: q / 64, negatives by two's complement
        return tuple((Fraction(q, 64), q) for q in range(129 if allow_neg2 else 128))
    codes = np.arange(sign_mask, dtype=np.uint8)
    values = codes.view(dtype).astype(np.float64)
    return tuple(sorted((Fraction(float(v)), int(c)) for v, c in zip(values, codes) if np.isfinite(v)))


def oracle_nearest_even(name, magnitude: Fraction, negative: bool, allow_neg2: bool) -> int:
    table = oracle_table(name, negative and allow_neg2 and name == "mxint8")
    values = [v for v, _ in table]
    magnitude = min(magnitude, values[-1])  # saturate
    i = bisect_left(values, magnitude)
    if values[i] == magnitude:
        code = table[i][1]
    else:
        (lo, lo_code), (hi, hi_code) = table[i - 1], table[i]
        if magnitude - lo != hi - magnitude:
            code = lo_code if magnitude - lo < hi - magnitude else hi_code
        else:
            code = lo_code if lo_code % 2 == 0 else hi_code
    dtype, sign_mask, _ = ORACLE_ELEMENTS[name]
    if dtype is None:
        return (-code) & 0xFF if negative else code
    return code | (sign_mask if negative else 0)


def oracle_floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - 1 if q < TWO**e else e


def oracle_read(v: float, mode: str):
    """(sign, kind, magnitude) of an input under subnormal_inputs, from its fp32 view."""
    sign = int(np.signbit(v))
    if np.isnan(v):
        return sign, "nan", Fraction(0)
    if np.isinf(v):
        return sign, "inf", Fraction(0)
    m = abs(Fraction(v))
    if 0 < m < TWO**-126 and mode == "flush":
        m = Fraction(0)
    elif 0 < m < TWO**-126 and mode == "as_normal":
        mantissa_field = m / TWO**-149  # an fp32 subnormal: field 0, mantissa m
        m = (1 + mantissa_field / 2**23) * TWO**-127
    return sign, "finite", m


def contract_oracle(values, name, o: dict, source_max: Fraction, given_exponent=None):
    """(scale byte, codes) or the string 'error' for a NaN block under int8_exponent."""
    xs = [oracle_read(v, o.get("subnormal_inputs", "exact")) for v in values]
    specials = o.get("specials", "block")
    int8 = o.get("scale_encoding") == "int8_exponent"
    _, sign_mask, emax = ORACLE_ELEMENTS[name]
    canonical = {"mxfp8_e4m3": 0x7F, "mxfp8_e5m2": 0x7E}.get(name)
    nan_code = o.get("nan_code") or canonical
    if specials == "block" and any(k == "nan" or (k == "inf" and o.get("inf_policy", "nan") == "nan") for _, k, _ in xs):
        return "error" if int8 else (0xFF, [nan_code or 0] * len(xs))
    if specials == "block":
        amax = max(source_max if k == "inf" else m for _, k, m in xs)
    else:
        amax = max(m for _, k, m in xs)  # NaN and Inf carry magnitude 0 here
    scale_min = o.get("scale_min", -127)
    if given_exponent is not None:
        e = given_exponent
    else:
        e = scale_min if amax == 0 else min(max(oracle_floor_log2(amax) - emax, scale_min), 127)
    codes = []
    allow_neg2 = o.get("int8_allow_neg2", False)
    for sign, kind, m in xs:
        if kind == "nan":
            if nan_code is None:
                return "no-nan"
            codes.append(nan_code | (sign_mask if sign else 0))
        elif kind == "inf":
            codes.append(oracle_nearest_even(name, TWO**400, bool(sign), allow_neg2))
        else:
            codes.append(oracle_nearest_even(name, m / TWO**e, bool(sign), allow_neg2))
    return (e & 0xFF) if int8 else e + 127, codes


ORACLE_OPTIONS = [
    {},
    dict(IDMA),
    {"specials": "per_element"},
    {"specials": "per_element", "scale_encoding": "int8_exponent"},
    {"scale_encoding": "int8_exponent", "scale_min": -128, "inf_policy": "saturate"},
    {"subnormal_inputs": "as_normal", "inf_policy": "saturate"},
    {"subnormal_inputs": "flush", "specials": "per_element", "int8_allow_neg2": True},
    {"nan_code": 0x7F, "subnormal_inputs": "as_normal"},
]
SOURCE_MAX = {"float32": (2 - TWO**-23) * TWO**127, "float16": Fraction(65504), "bfloat16": (2 - TWO**-7) * TWO**127}


def oracle_inputs(seed: int, dtype, n: int = 96) -> np.ndarray:
    """(n, 32) blocks of the source dtype from random bit patterns: raw, a few binades around a
    random top, subnormals only, zeros; NaN, Inf, -0 and subnormals sprinkled in."""
    rng = np.random.default_rng(seed)
    width = np.dtype(dtype).itemsize * 8
    mbits = {32: 23, 16: 10 if dtype is np.float16 else 7}[width]
    ebits = width - 1 - mbits
    uint = {32: np.uint32, 16: np.uint16}[width]
    out = np.empty((n, 32), dtype=np.uint64)
    for b in range(n):
        kind = b % 4
        sign = rng.integers(0, 2, 32).astype(np.uint64) << np.uint64(width - 1)
        if kind == 0:
            bits = rng.integers(0, 1 << width, 32, dtype=np.uint64)
        elif kind == 1:
            top = int(rng.integers(0, (1 << ebits) - 1))
            fields = np.clip(top - rng.integers(0, 12, 32), 0, (1 << ebits) - 2).astype(np.uint64)
            bits = sign | (fields << np.uint64(mbits)) | rng.integers(0, 1 << mbits, 32, dtype=np.uint64)
        elif kind == 2:
            bits = sign | rng.integers(0, 1 << mbits, 32, dtype=np.uint64)
        else:
            bits = sign
        inf = ((1 << ebits) - 1) << mbits
        specials = [inf | 1, inf | (1 << (mbits - 1)), inf, inf | (1 << (width - 1)), 1 << (width - 1), 1]
        if kind != 3 and rng.random() < 0.5:
            for pos in rng.integers(0, 32, size=int(rng.integers(1, 4))):
                bits[pos] = specials[int(rng.integers(0, len(specials)))] | (int(rng.integers(0, 2)) << (width - 1))
        out[b] = bits
    return out.astype(uint).view(BF16 if dtype == "bfloat16" else dtype)


ORACLE_COUNT = {"blocks": 0}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bfloat16"])
@pytest.mark.parametrize("name", list(ORACLE_ELEMENTS))
def test_contract_oracle(name, dtype):
    key = np.dtype(BF16).name if dtype == "bfloat16" else np.dtype(dtype).name
    for i, options in enumerate(ORACLE_OPTIONS):
        if name not in ("mxfp8_e4m3", "mxfp8_e5m2"):
            options = {k: v for k, v in options.items() if k != "nan_code"}
        if name != "mxint8":  # int8_allow_neg2 applies to MXINT8 only
            options = {k: v for k, v in options.items() if k != "int8_allow_neg2"}
        if name == "mxfp8_e4m3" and options.get("nan_code") == 0x7D:
            options = {**options, "nan_code": 0x7F}
        x = oracle_inputs(seed=100 * i + len(name) + len(key), dtype=dtype)
        with np.errstate(invalid="ignore"):  # signalling NaNs quieten when widened; they stay NaN
            wide = x.astype(np.float64)
        expected = [contract_oracle([float(v) for v in row], name, options, SOURCE_MAX[key]) for row in wide]
        if any(e in ("error", "no-nan") for e in expected):
            with pytest.raises(ValueError):
                mxsim.quantize(x, name, **options)
            keep = [j for j, e in enumerate(expected) if e not in ("error", "no-nan")]
            x, expected = x[keep], [expected[j] for j in keep]
        t = mxsim.quantize(x, name, **options)
        for b, (scale, codes) in enumerate(expected):
            assert (int(t.scales[b, 0]), t.codes[b].tolist()) == (scale, codes), (name, key, options, b, x[b])
        ORACLE_COUNT["blocks"] += len(expected)


def test_contract_oracle_given_scales():
    rng = np.random.default_rng(11)
    x = oracle_inputs(seed=5, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        wide = x.astype(np.float64)
    for options in [{}, dict(IDMA), {"scale_encoding": "int8_exponent"}]:
        low = options.get("scale_min", -127)
        exponents = rng.integers(low, 128, size=len(x))
        encoding = options.get("scale_encoding", "e8m0")
        given = np.array([ref.scale.scale_byte(int(e), encoding) for e in exponents], np.uint8)
        expected = [contract_oracle([float(v) for v in row], "mxfp8_e5m2", options, SOURCE_MAX["float32"], int(e))
                    for row, e in zip(wide, exponents)]
        keep = [j for j, e in enumerate(expected) if e != "error"]
        t = mxsim.quantize(x[keep], "mxfp8_e5m2", scales=given[keep][:, None], **options)
        for b, j in enumerate(keep):
            scale, codes = expected[j]
            assert int(t.scales[b, 0]) == (scale if scale == 0xFF and encoding == "e8m0" else int(given[j]))
            assert t.codes[b].tolist() == codes


# --- iDMA v0.7.0 (contract 6.1): an independent model from its description --------------------------
E5M2_FINITE = sorted(
    (Fraction(float(v)), int(c)) for c, v in enumerate(np.arange(0x80, dtype=np.uint8).view(E5M2_DTYPE).astype(np.float64))
    if np.isfinite(v)
)


def idma_model(bits32: list[int]) -> tuple[int, list[int]]:
    """pulp-platform iDMA v0.7.0 FP32 -> MXFP8 E5M2 (block 32), from contract 6.1: E = (largest
    biased fp32 exponent field among finite elements) - 127 - 15, clamped to [-128, 127], stored
    as an int8 byte; elements x / 2^E rounded to nearest-even in E5M2, saturating; a subnormal's
    field 0 reads as the normal binade 2^-127; NaN -> 0x7D with its sign; Inf -> +-max."""
    fields = [(b >> 23) & 0xFF for b in bits32 if (b >> 23) & 0xFF != 0xFF]
    e = min(max(max(fields, default=0) - 127 - 15, -128), 127)
    codes = []
    for b in bits32:
        sign, field, mantissa = b >> 31, (b >> 23) & 0xFF, b & 0x7FFFFF
        if field == 0xFF:
            codes.append((0x7D if mantissa else 0x7B) | (sign << 7))
            continue
        if field == 0 and mantissa == 0:
            codes.append(sign << 7)
            continue
        value = (1 + Fraction(mantissa, 1 << 23)) * TWO ** (max(field, 0) - 127)  # field 0 as a normal
        scaled = value / TWO**e
        values = [v for v, _ in E5M2_FINITE]
        scaled = min(scaled, values[-1])
        i = bisect_left(values, scaled)
        if values[i] == scaled:
            code = E5M2_FINITE[i][1]
        else:
            (lo, lc), (hi, hc) = E5M2_FINITE[i - 1], E5M2_FINITE[i]
            code = lc if (scaled - lo < hi - scaled or (scaled - lo == hi - scaled and lc % 2 == 0)) else hc
        codes.append(code | (sign << 7))
    return e & 0xFF, codes


def test_idma_hand_worked_blocks():
    # Block 1: 1.0 (field 127), -2.5 (field 128), fp32 subnormal 2^-149, -NaN, +Inf.
    #   E = 128 - 127 - 15 = -14 -> int8 byte 0xF2. 1.0 * 2^14 -> 0x74; -2.5 * 2^14 = -1.25 * 2^15
    #   -> 0xF9; the subnormal reads as (1 + 2^-23) * 2^-127, tiny against 2^-14 -> 0x00;
    #   -NaN -> 0xFD; +Inf -> 0x7B.
    b1 = [0x3F800000, 0xC0200000, 0x00000001, 0xFFC00000, 0x7F800000] + [0] * 27
    # Block 2: subnormals only: largest field 0 -> E = -142 -> clamped -128 (0x80).
    #   0x00000001 -> (1 + 2^-23) * 2^-127 / 2^-128 = 2 + 2^-22 -> 2.0 (0x40);
    #   0x807FFFFF -> -(2 - 2^-23) * 2^-127 / 2^-128 = -(4 - 2^-22) -> -4.0 (0xC4).
    b2 = [0x00000001, 0x807FFFFF] + [0] * 30
    # Block 3: 1.5 * 2^127 (field 254): E = 254 - 142 = 112 (0x70); 1.5 * 2^15 -> 0x7A.
    b3 = [0x7F400000] + [0] * 31
    expected = [
        (0xF2, [0x74, 0xF9, 0x00, 0xFD, 0x7B] + [0] * 27),
        (0x80, [0x40, 0xC4] + [0] * 30),
        (0x70, [0x7A] + [0] * 31),
    ]
    for bits, want in zip([b1, b2, b3], expected):
        assert idma_model(bits) == want
        x = np.array(bits, np.uint32)
        assert both(x.view(np.float32), "mxfp8_e5m2", **IDMA) == want
        assert both(x, "mxfp8_e5m2", source="fp32", **IDMA) == want
    # FP16 input, widened to fp32 first: 65504 (field 142): E = 0; 65504 rounds past 57344 and
    # saturates (0x7B); -Inf -> 0xFB; 0.5 -> 0x38.
    h = padded([65504.0, -np.inf, 0.5], np.float16)
    assert idma_model(h.astype(np.float32).view(np.uint32).tolist()) == (0x00, [0x7B, 0xFB, 0x38] + [0] * 29)
    assert both(h, "mxfp8_e5m2", **IDMA) == (0x00, [0x7B, 0xFB, 0x38] + [0] * 29)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_idma_model_agrees_with_mxsim(dtype):
    x = oracle_inputs(seed=61, dtype=dtype, n=160)
    t = mxsim.quantize(x, "mxfp8_e5m2", **IDMA)
    bits = x.astype(np.float32).view(np.uint32)
    for b in range(len(x)):
        assert (int(t.scales[b, 0]), t.codes[b].tolist()) == idma_model([int(v) for v in bits[b]]), (b, x[b])


# --- fast path == reference (hypothesis) -------------------------------------------------------------
SOURCES = {  # source name -> (dtype of the drawn bit patterns, dtype of the values)
    "fp32": (np.uint32, np.float32),
    "fp16": (np.uint16, np.float16),
    "bf16": (np.uint16, BF16),
    "fp64": (np.uint64, np.float64),
    "fp8_e4m3": (np.uint8, E4M3_DTYPE),
    "fp8_e5m2": (np.uint8, E5M2_DTYPE),
}
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DIFFERENTIAL = {"blocks": 0, "errors": 0}


@st.composite
def option_sets(draw, name: str) -> dict:
    fmt = mxsim.get_format(name)
    o = {"specials": draw(st.sampled_from(["block", "per_element"])),
         "scale_encoding": draw(st.sampled_from(["e8m0", "int8_exponent"])),
         "subnormal_inputs": draw(st.sampled_from(["exact", "flush", "as_normal"])),
         "scale_rule": draw(st.sampled_from(mxsim.SCALE_RULES)),
         "rounding": draw(st.sampled_from(["rne", "rne", "rtz", "rna", "rup", "rdn", "stochastic"])),
         "int8_allow_neg2": name == "mxint8" and draw(st.booleans())}
    if o["scale_encoding"] == "int8_exponent":
        o["scale_min"] = draw(st.sampled_from([-127, -128]))
    o["inf_policy"] = "nan" if o["specials"] == "per_element" else draw(st.sampled_from(["nan", "saturate"]))
    if fmt.element.has_nan:
        codes = element_nan_codes(fmt.element)
        o["nan_code"] = draw(st.sampled_from([None] + codes))
    return o


def _block_bits(draw, uint, width: int, k: int) -> np.ndarray:
    kind = draw(st.sampled_from(["raw", "near", "near", "small"]))
    if kind == "raw":
        bits = draw(st.lists(st.integers(0, (1 << width) - 1), min_size=k, max_size=k))
    elif kind == "small":  # low bit patterns: zeros and subnormals of the source
        low = draw(st.integers(1, width - 2))
        bits = draw(st.lists(st.integers(0, (1 << low) - 1) | st.integers(0, 1).map(lambda s: s << (width - 1)),
                             min_size=k, max_size=k))
    else:
        top = draw(st.integers(0, (1 << (width - 1)) - 1))
        spread = draw(st.sampled_from([1, 1 << (width // 4), 1 << (width // 2)]))
        bits = draw(st.lists(st.builds(lambda s, d: (s << (width - 1)) | max(top - d, 0), st.integers(0, 1),
                                       st.integers(0, spread)), min_size=k, max_size=k))
    return np.array(bits, dtype=np.uint64).astype(uint)


@pytest.mark.parametrize("name", OCP_FORMATS)
@given(data=st.data())
@SETTINGS
def test_fast_matches_reference_across_options(name, data):
    fmt = mxsim.get_format(name)
    k = fmt.block_size
    options = data.draw(option_sets(name))
    sources = [s for s in SOURCES if not (s == "fp64" and options["subnormal_inputs"] == "as_normal")]
    source = data.draw(st.sampled_from(sources))
    uint, dtype = SOURCES[source]
    n_blocks = data.draw(st.integers(1, 3))
    bits = np.concatenate([_block_bits(data.draw, uint, np.dtype(uint).itemsize * 8, k) for _ in range(n_blocks)])
    as_bits = data.draw(st.booleans())
    x = bits if as_bits else bits.view(dtype)
    scales = None
    if data.draw(st.booleans()):
        low = options.get("scale_min", -127)
        exponents = data.draw(st.lists(st.integers(low, 127), min_size=n_blocks, max_size=n_blocks))
        scales = np.array([ref.scale.scale_byte(e, options["scale_encoding"]) for e in exponents], np.uint8)
    rand = None
    if options["rounding"] == "stochastic":
        options["rand_width"] = data.draw(st.sampled_from([1, 4, 32]))
        rand = np.array(data.draw(st.lists(st.integers(0, (1 << options["rand_width"]) - 1), min_size=n_blocks * k,
                                           max_size=n_blocks * k)), dtype=np.uint64)
    opts = QuantizeOptions(**options)
    with np.errstate(invalid="ignore"):
        wide = bits.view(dtype).astype(np.float64)
    expected, error = [], None
    for b in range(n_blocks):
        part = slice(b * k, (b + 1) * k)
        try:
            expected.append(ref.quantize_block([float(v) for v in wide[part]], fmt, opts, source=source,
                                               scale=None if scales is None else int(scales[b]),
                                               rand_bits=None if rand is None else [int(r) for r in rand[part]]))
        except ValueError as exc:
            error = exc
            break
    call = dict(source=source if as_bits else None, scales=scales, rand_bits=rand, **options)
    if error is not None:
        with pytest.raises(ValueError):
            mxsim.quantize(x, name, **call)
        DIFFERENTIAL["errors"] += 1
        return
    t = mxsim.quantize(x, name, **call)
    for b, block in enumerate(expected):
        assert int(t.scales[b]) == block.scale, (b, options, source)
        assert tuple(int(c) for c in t.codes[b * k : (b + 1) * k]) == block.codes, (b, options, source)
    DIFFERENTIAL["blocks"] += n_blocks


def test_differential_counts():
    """Runs after the tests above (file order): reports how many blocks and errors agreed."""
    print(f"\ncontract oracle: {ORACLE_COUNT['blocks']} blocks; fast == reference: {DIFFERENTIAL['blocks']} blocks, "
          f"{DIFFERENTIAL['errors']} matching errors")
    if ORACLE_COUNT["blocks"]:
        assert ORACLE_COUNT["blocks"] > 1000
    if DIFFERENTIAL["blocks"]:
        assert DIFFERENTIAL["blocks"] > 100
