"""Exhaustive decode checks against independent oracles.

Every code of every element and scale format of at most 16 bits is decoded by

* ``mxsim.ref.decode`` (the integer-only reference), and compared with
* ml_dtypes' decode of the same code (a view of the code array as the ml_dtypes type),
* gfloat's ``decode_float`` for the OCP formats (MXINT8 included),
* a from-the-definition decoder written below (the OCP formulas of the reference notes), and
* the NumPy fast path ``mxsim.decode`` (bit for bit: value, the sign of -0 and of NaN, +-inf).

The spot values at the end are typed in from the format definitions, not computed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from gfloat import decode_float
from gfloat.formats import (
    format_info_ocp_int8,
)

import mxsim
from oracle_formats import GFLOAT_FORMATS, GFLOAT_P3109, ML_DTYPES
from mxsim import ref

# ---------------------------------------------------------------------------------------------
# The format definitions, typed in from the OCP MX v1.0 / OFP8 / IEEE 754 definitions
# (formats-and-datapath.md sections 0.2, 1.3, 1.5; docs/numerics.md section 1), not read from mxsim.
# ---------------------------------------------------------------------------------------------

# name: (exponent bits, mantissa bits, bias, signed, subnormals (E=0 is zero/subnormal), specials)
#   specials "ieee": E all ones is Inf (M = 0) or NaN (M != 0)
#   specials "fn":   only the all-ones exponent-and-mantissa magnitude is NaN; no Inf
#   specials "none": every code is finite
#   specials "fnuz": the code S=1, E=0, M=0 (0x80) is the only NaN (no -0), no Inf, all else finite
#   specials "p3109": as "fnuz", and the all-ones magnitude (0x7F / 0xFF) is +-Inf
# FNUZ: bias 8 / 16 (ml_dtypes float8_e4m3fnuz / float8_e5m2fnuz); P3109 binary8pP: 8 - P exponent
# bits, P - 1 mantissa bits, bias 2^(7 - P) (the P3109 interim report, gfloat's format_info_p3109).
FLOAT_DEFINITIONS = {
    "fp8_e4m3": (4, 3, 7, True, True, "fn"),
    "fp8_e5m2": (5, 2, 15, True, True, "ieee"),
    "fp6_e3m2": (3, 2, 3, True, True, "none"),
    "fp6_e2m3": (2, 3, 1, True, True, "none"),
    "fp4_e2m1": (2, 1, 1, True, True, "none"),
    "e8m0": (8, 0, 127, False, False, "fn"),  # 2^(E-127), 0xFF NaN, no sign, no zero
    "ue4m3": (4, 3, 7, False, True, "fn"),  # E4M3 without its sign bit (NVFP4 block scale)
    "fp8_e4m3fnuz": (4, 3, 8, True, True, "fnuz"),
    "fp8_e5m2fnuz": (5, 2, 16, True, True, "fnuz"),
    "binary8p1": (7, 0, 64, True, True, "p3109"),
    "binary8p2": (6, 1, 32, True, True, "p3109"),
    "binary8p3": (5, 2, 16, True, True, "p3109"),
    "binary8p4": (4, 3, 8, True, True, "p3109"),
    "binary8p5": (3, 4, 4, True, True, "p3109"),
    "binary8p6": (2, 5, 2, True, True, "p3109"),
    "binary8p7": (1, 6, 1, True, True, "p3109"),
    "bf16": (8, 7, 127, True, True, "ieee"),
    "fp16": (5, 10, 15, True, True, "ieee"),
}

# name: (bits, encoding, fraction bits)
#   int8 (MXINT8): two's complement q, value q / 64 (0x80 = -2.0)
#   *_sm: sign-magnitude, value (-1)^S * M / 2^(bits-2), sign bit kept on zero (-0)
INT_DEFINITIONS = {
    "int8": (8, "twos_complement", 6),
    "int8_sm": (8, "sign_magnitude", 6),
    "int5_sm": (5, "sign_magnitude", 3),
    "int4_sm": (4, "sign_magnitude", 2),
    "int3_sm": (3, "sign_magnitude", 1),
}

WIDTHS = {name: (1 if d[3] else 0) + d[0] + d[1] for name, d in FLOAT_DEFINITIONS.items()}
WIDTHS.update({name: d[0] for name, d in INT_DEFINITIONS.items()})
SMALL_FORMATS = list(WIDTHS)  # every element/scale format of at most 16 bits




def definition_decode(code: int, name: str):
    """(kind, sign, magnitude) of ``code``, straight from the format definition."""
    if name in INT_DEFINITIONS:
        bits, encoding, frac_bits = INT_DEFINITIONS[name]
        sign = code >> (bits - 1)
        if encoding == "sign_magnitude":
            magnitude = code & ((1 << (bits - 1)) - 1)
        else:
            q = code - (1 << bits) if sign else code
            magnitude = abs(q)
        return ("finite", sign, Fraction(magnitude, 1 << frac_bits))
    e_bits, m_bits, bias, signed, subnormals, specials = FLOAT_DEFINITIONS[name]
    sign = (code >> (e_bits + m_bits)) & 1 if signed else 0
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    e_all_ones = e == (1 << e_bits) - 1
    if specials == "ieee" and e_all_ones:
        return ("inf", sign, Fraction(0)) if m == 0 else ("nan", sign, Fraction(0))
    if specials == "fn" and e_all_ones and m == (1 << m_bits) - 1:
        return ("nan", sign, Fraction(0))
    if specials in ("fnuz", "p3109") and sign and e == 0 and m == 0:
        return ("nan", 1, Fraction(0))
    if specials == "p3109" and e_all_ones and m == (1 << m_bits) - 1:
        return ("inf", sign, Fraction(0))
    if e == 0 and subnormals:  # zero and the subnormals: 2^(1-bias) * M / 2^m
        return ("finite", sign, Fraction(2) ** (1 - bias) * Fraction(m, 1 << m_bits))
    return ("finite", sign, Fraction(2) ** (e - bias) * (1 + Fraction(m, 1 << m_bits)))


def exact_tuple(x) -> tuple:
    """(kind, sign, magnitude) of an mxsim Exact."""
    assert x.kind in ("finite", "inf", "nan"), x
    assert x.sign in (0, 1), x
    return (x.kind, x.sign, x.magnitude if x.kind == "finite" else Fraction(0))


def float_tuple(v: float) -> tuple:
    """(kind, sign bit, exact magnitude) of a Python/NumPy float."""
    v = float(v)
    sign = int(math.copysign(1.0, v) < 0)
    if math.isnan(v):
        return ("nan", sign, Fraction(0))
    if math.isinf(v):
        return ("inf", sign, Fraction(0))
    return ("finite", sign, abs(Fraction(v)))


def all_codes(name: str) -> np.ndarray:
    width = WIDTHS[name]
    return np.arange(1 << width, dtype=np.uint8 if width <= 8 else np.uint16)


_REF_CACHE: dict = {}


def ref_table(name: str) -> list:
    """ref.decode of every code of ``name`` (cached: bf16/fp16 have 65536 codes)."""
    if name not in _REF_CACHE:
        _REF_CACHE[name] = [exact_tuple(ref.decode(code, name)) for code in range(1 << WIDTHS[name])]
    return _REF_CACHE[name]


def mismatches(got: list, want: list, limit: int = 8) -> list:
    bad = [(hex(code), g, w) for code, (g, w) in enumerate(zip(got, want)) if g != w]
    return bad[:limit] + ([f"... {len(bad)} mismatches in all"] if len(bad) > limit else [])


# ---------------------------------------------------------------------------------------------
# The catalogue: the definitions above cover exactly the formats of at most 16 bits.
# ---------------------------------------------------------------------------------------------


def test_definitions_cover_every_small_catalogue_format():
    names = mxsim.format_names("float") + mxsim.format_names("int")
    small = {name for name in names if mxsim.get_format(name).width <= 16}
    assert small == set(SMALL_FORMATS)
    for name in SMALL_FORMATS:
        assert mxsim.get_format(name).width == WIDTHS[name], name


# ---------------------------------------------------------------------------------------------
# ref.decode against the from-the-definition decoder, every code of every small format.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_ref_decode_matches_definition(name):
    want = [definition_decode(code, name) for code in range(1 << WIDTHS[name])]
    got = ref_table(name)
    assert len(got) == len(want)
    assert got == want, mismatches(got, want)


# ---------------------------------------------------------------------------------------------
# ref.decode against ml_dtypes and gfloat, every code.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ML_DTYPES))
def test_ref_decode_matches_ml_dtypes(name):
    with np.errstate(invalid="ignore"):  # bfloat16 NaN payloads warn on the cast
        values = all_codes(name).view(ML_DTYPES[name]).astype(np.float64)
    want = [float_tuple(v) for v in values]
    got = ref_table(name)
    assert got == want, mismatches(got, want)


@pytest.mark.parametrize("name", list(GFLOAT_FORMATS) + list(GFLOAT_P3109))
def test_ref_decode_matches_gfloat(name):
    fi = {**GFLOAT_FORMATS, **GFLOAT_P3109}[name]
    want = []
    for code in range(1 << WIDTHS[name]):
        fv = decode_float(fi, code)
        kind, sign, magnitude = float_tuple(fv.fval)
        if kind == "nan":
            sign = fv.signbit  # gfloat's fval NaN carries no sign; its signbit field does
        want.append((kind, sign, magnitude))
    got = ref_table(name)
    assert got == want, mismatches(got, want)


def test_gfloat_int8_0x80_is_minus_two():
    # The oracle itself: gfloat's MXINT8 reads 0x80 as -2.0, as the OCP definition does.
    assert decode_float(format_info_ocp_int8, 0x80).fval == -2.0
    assert exact_tuple(ref.decode(0x80, "int8")) == ("finite", 1, Fraction(2))


# ---------------------------------------------------------------------------------------------
# The fast path, bit for bit against the reference, every code.
# ---------------------------------------------------------------------------------------------


def expected_float64(name: str) -> np.ndarray:
    out = np.empty(1 << WIDTHS[name], dtype=np.float64)
    for code, (kind, sign, magnitude) in enumerate(ref_table(name)):
        if kind == "nan":
            v = math.nan
        elif kind == "inf":
            v = math.inf
        else:
            v = float(magnitude)
            assert Fraction(v) == magnitude  # every small-format value is a float64
        out[code] = -v if sign else v
        if kind == "nan":
            out[code] = math.copysign(math.nan, -1.0 if sign else 1.0)
    return out


def assert_bitwise_decode(got: np.ndarray, want: np.ndarray, name: str):
    got64 = got.astype(np.float64)
    nan_got, nan_want = np.isnan(got64), np.isnan(want)
    bad = (nan_got != nan_want) | (np.signbit(got64) != np.signbit(want))
    bad |= ~nan_want & (got64 != want)
    codes = np.flatnonzero(bad)
    assert codes.size == 0, [(hex(c), got64[c], want[c]) for c in codes[:8]] + [f"{codes.size} bad codes ({name})"]


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_fast_decode_default_dtype_is_float32_and_exact(name):
    got = mxsim.decode(all_codes(name), name)
    assert got.dtype == np.float32
    assert got.shape == (1 << WIDTHS[name],)
    assert_bitwise_decode(got, expected_float64(name), name)


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_fast_decode_float64(name):
    got = mxsim.decode(all_codes(name), name, dtype=np.float64)
    assert got.dtype == np.float64
    assert_bitwise_decode(got, expected_float64(name), name)


@pytest.mark.parametrize("name", SMALL_FORMATS)
@pytest.mark.parametrize("code_dtype", [np.int64, np.int32, np.uint32, np.uint16], ids=lambda d: np.dtype(d).name)
def test_fast_decode_other_integer_code_dtypes_and_shapes(name, code_dtype):
    codes = all_codes(name).astype(code_dtype)
    want = expected_float64(name)
    got = mxsim.decode(codes, name, dtype=np.float64)
    assert_bitwise_decode(got, want, name)
    # any shape is kept
    grid = codes.reshape(-1, 2)
    got2 = mxsim.decode(grid, name, dtype=np.float64)
    assert got2.shape == grid.shape
    assert_bitwise_decode(got2.reshape(-1), want, name)


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2", "e8m0", "ue4m3", "bf16", "fp16", "fp8_e4m3fnuz", "binary8p4"])
def test_fast_decode_nan_carries_the_code_sign_bit(name):
    codes = all_codes(name)
    got = mxsim.decode(codes, name)
    nan = np.isnan(got)
    assert nan.any()
    kinds = [t[0] for t in ref_table(name)]
    assert np.array_equal(nan, np.array([k == "nan" for k in kinds]))
    e_bits, m_bits, _, signed, _, _ = FLOAT_DEFINITIONS[name]
    sign_bits = (codes.astype(np.int64) >> (e_bits + m_bits)) & 1 if signed else np.zeros(codes.shape, np.int64)
    assert np.array_equal(np.signbit(got[nan]), sign_bits[nan].astype(bool))


# ---------------------------------------------------------------------------------------------
# Out-of-range and non-integer codes.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_ref_decode_rejects_out_of_range_codes(name):
    width = WIDTHS[name]
    for bad in (1 << width, (1 << width) + 1, -1, 1 << 20):
        with pytest.raises(ValueError):
            ref.decode(bad, name)
    ref.decode((1 << width) - 1, name)  # the largest code itself is fine


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_fast_decode_rejects_out_of_range_codes(name):
    width = WIDTHS[name]
    for bad in (1 << width, -1):
        with pytest.raises(ValueError):
            mxsim.decode(np.array([0, bad], dtype=np.int64), name)
    if width < 8:
        with pytest.raises(ValueError):
            mxsim.decode(np.array([1 << width], dtype=np.uint8), name)
    if width < 16:
        with pytest.raises(ValueError):
            mxsim.decode(np.array([1 << width], dtype=np.uint16), name)


def test_fp4_code_16_is_rejected_by_both_layers():
    with pytest.raises(ValueError):
        ref.decode(16, "fp4_e2m1")
    with pytest.raises(ValueError):
        mxsim.decode(np.array([16], dtype=np.uint8), "fp4_e2m1")
    with pytest.raises(ValueError):
        mxsim.decode(np.array([3, 15, 16, 2], dtype=np.uint8), "fp4_e2m1")


@pytest.mark.parametrize("name", ["fp4_e2m1", "fp8_e4m3", "int8", "bf16"])
@pytest.mark.parametrize(
    "bad_codes",
    [
        np.array([1.0, 2.0]),
        np.array([1.0, 2.0], dtype=np.float32),
        np.array([True, False]),
        np.array([1 + 0j]),
        np.array(["1"]),
    ],
    ids=["float64", "float32", "bool", "complex", "str"],
)
def test_fast_decode_rejects_non_integer_arrays(name, bad_codes):
    with pytest.raises(ValueError):
        mxsim.decode(bad_codes, name)


@pytest.mark.parametrize("bad", [1.0, True, "1", Fraction(1)], ids=["float", "bool", "str", "fraction"])
def test_ref_decode_rejects_non_integer_codes(bad):
    with pytest.raises(ValueError):
        ref.decode(bad, "fp8_e4m3")


# ---------------------------------------------------------------------------------------------
# Spot values typed in from the format definitions.
# ---------------------------------------------------------------------------------------------

NAN = "nan"
INF = "inf"

SPOT_VALUES = [
    # (format, code, value): value is a Fraction, NAN, or (sign, INF)
    ("fp8_e4m3", 0x7E, Fraction(448)),
    ("fp8_e4m3", 0xFE, Fraction(-448)),
    ("fp8_e4m3", 0x7F, NAN),
    ("fp8_e4m3", 0xFF, NAN),
    ("fp8_e4m3", 0x01, Fraction(1, 2**9)),
    ("fp8_e4m3", 0x08, Fraction(1, 2**6)),  # min normal
    ("fp8_e4m3", 0x07, Fraction(7, 2**9)),  # max subnormal 0.875 * 2^-6
    ("fp8_e4m3", 0x38, Fraction(1)),
    ("fp8_e4m3", 0x78, Fraction(256)),  # exponent 15 still holds normals
    ("fp8_e5m2", 0x7B, Fraction(57344)),
    ("fp8_e5m2", 0x7C, (0, INF)),
    ("fp8_e5m2", 0xFC, (1, INF)),
    ("fp8_e5m2", 0x7D, NAN),
    ("fp8_e5m2", 0x7E, NAN),
    ("fp8_e5m2", 0x7F, NAN),
    ("fp8_e5m2", 0x01, Fraction(1, 2**16)),
    ("fp8_e5m2", 0x04, Fraction(1, 2**14)),
    ("fp8_e5m2", 0x3C, Fraction(1)),
    ("e8m0", 0x00, Fraction(1, 2**127)),
    ("e8m0", 0x7F, Fraction(1)),
    ("e8m0", 0xFE, Fraction(2**127)),
    ("e8m0", 0xFF, NAN),
    ("fp6_e2m3", 0x1F, Fraction(15, 2)),
    ("fp6_e2m3", 0x3F, Fraction(-15, 2)),
    ("fp6_e2m3", 0x01, Fraction(1, 8)),
    ("fp6_e2m3", 0x08, Fraction(1)),
    ("fp6_e3m2", 0x1F, Fraction(28)),
    ("fp6_e3m2", 0x01, Fraction(1, 16)),
    ("fp6_e3m2", 0x04, Fraction(1, 4)),
    ("int8", 0x80, Fraction(-2)),
    ("int8", 0x7F, Fraction(127, 64)),
    ("int8", 0x81, Fraction(-127, 64)),
    ("int8", 0xFF, Fraction(-1, 64)),
    ("int8", 0x01, Fraction(1, 64)),
    ("int8", 0x40, Fraction(1)),
    ("int8_sm", 0x7F, Fraction(127, 64)),
    ("int8_sm", 0xFF, Fraction(-127, 64)),
    ("int5_sm", 0x0F, Fraction(15, 8)),
    ("int4_sm", 0x07, Fraction(7, 4)),
    ("int3_sm", 0x03, Fraction(3, 2)),
    ("int3_sm", 0x07, Fraction(-3, 2)),
    ("ue4m3", 0x7E, Fraction(448)),
    ("ue4m3", 0x7F, NAN),
    ("ue4m3", 0x01, Fraction(1, 2**9)),
    ("bf16", 0x3F80, Fraction(1)),
    ("bf16", 0x7F80, (0, INF)),
    ("bf16", 0x0001, Fraction(1, 2**133)),
    ("fp16", 0x7BFF, Fraction(65504)),
    ("fp16", 0x0001, Fraction(1, 2**24)),
    ("fp16", 0xFC00, (1, INF)),
]

FP4_TABLE = [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def _spot_id(case):
    name, code, _ = case
    return f"{name}-{code:#x}"


@pytest.mark.parametrize("case", SPOT_VALUES, ids=[_spot_id(c) for c in SPOT_VALUES])
def test_spot_values(case):
    name, code, value = case
    x = ref.decode(code, name)
    fast = float(mxsim.decode(np.array([code], dtype=np.int64), name, dtype=np.float64)[0])
    if value == NAN:
        assert x.kind == "nan"
        assert math.isnan(fast)
    elif isinstance(value, tuple):
        sign, _ = value
        assert (x.kind, x.sign) == ("inf", sign)
        assert fast == (-math.inf if sign else math.inf)
    else:
        assert x.kind == "finite"
        assert x.sign == int(value < 0)
        assert x.magnitude == abs(value)
        assert Fraction(fast) == value


@pytest.mark.parametrize("code", range(16))
def test_fp4_table(code):
    value = Fraction(FP4_TABLE[code & 7])
    x = ref.decode(code, "fp4_e2m1")
    assert (x.kind, x.sign, x.magnitude) == ("finite", code >> 3, value)
    fast = mxsim.decode(np.array([code], dtype=np.uint8), "fp4_e2m1")[0]
    assert Fraction(float(fast)) == (-value if code >> 3 else value)
    assert bool(np.signbit(fast)) == bool(code >> 3)  # 0x8 is -0


@pytest.mark.parametrize(
    "name, max_value",
    [("fp8_e4m3", 448), ("fp8_e5m2", 57344), ("fp6_e3m2", 28), ("fp6_e2m3", Fraction(15, 2)), ("fp4_e2m1", 6),
     ("int8", Fraction(127, 64)), ("e8m0", 2**127), ("ue4m3", 448)],
    ids=lambda v: v if isinstance(v, str) else str(v),
)
def test_largest_finite_value(name, max_value):
    finite = [x.value for x in (ref.decode(c, name) for c in range(1 << WIDTHS[name])) if x.kind == "finite"]
    assert max(finite) == max_value
    fast = mxsim.decode(all_codes(name), name, dtype=np.float64)
    assert Fraction(float(np.nanmax(np.where(np.isinf(fast), np.nan, fast)))) == max_value


@pytest.mark.parametrize(
    "name", ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "bf16", "fp16", "int8_sm"]
)
def test_negative_zero_code(name):
    width = WIDTHS[name]
    code = 1 << (width - 1)
    x = ref.decode(code, name)
    assert (x.kind, x.sign, x.magnitude) == ("finite", 1, 0)
    fast = mxsim.decode(np.array([code], dtype=np.uint16 if width > 8 else np.uint8), name)[0]
    assert fast == 0 and np.signbit(fast)
