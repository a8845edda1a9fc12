"""Encode checks around every decision boundary, against expectations computed here.

For each format, every pair of adjacent non-negative representable values (a, b), including the
pair (max, next value of the unbounded grid), gives the inputs a, b, their midpoint, the midpoint
+-1 ulp of float64, float32 and float16, and all their negatives; add 0, -0, 2*max, huge values,
+-inf and NaN. The expected code of each input is computed below with exact Fractions from a value
table built from the format definition, the rounding rules, and the overflow rules of the
mxsim.options.encode docstring; mxsim is never used to compute an expectation.

Both ``mxsim.ref.encode`` and the fast path ``mxsim.encode`` (float64, float32, float16 and
bfloat16 arrays) are compared with the expectation for every rounding and overflow mode, and the
fast path is compared with ml_dtypes' casts (rne) and gfloat's round_float (all five modes, with
saturation) on the boundary inputs and on random inputs spanning many binades.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest
from gfloat import RoundMode, encode_float, round_float
from gfloat.formats import (
    format_info_ocp_int8,
)

import mxsim
from oracle_formats import GFLOAT_MODES
from oracle_formats import GFLOAT_FORMATS as ORACLE_GFLOAT
from oracle_formats import GFLOAT_P3109
from mxsim import ref

F = Fraction
ROUNDINGS = ["rne", "rna", "rtz", "rup", "rdn"]
OVERFLOWS = ["saturate", "ieee", "error"]
OVERFLOW_ERROR = -1  # expected outcome: OverflowError
VALUE_ERROR = -2  # expected outcome: ValueError

# ---------------------------------------------------------------------------------------------
# Value tables from the format definitions (formats-and-datapath.md sections 0.2, 1.3-1.5).
# ---------------------------------------------------------------------------------------------


def _float_rows(e_bits: int, m_bits: int, bias: int, specials: str):
    """(value, code) of every non-negative finite code of a signed float format with subnormals."""
    rows = []
    for code in range(1 << (e_bits + m_bits)):
        e, m = code >> m_bits, code & ((1 << m_bits) - 1)
        top = e == (1 << e_bits) - 1
        if specials == "ieee" and top:
            continue  # Inf and NaN
        if specials in ("fn", "p3109") and top and m == (1 << m_bits) - 1:
            continue  # the one NaN magnitude ("fn"), the Inf magnitude ("p3109")
        if e == 0:
            value = F(2) ** (1 - bias) * F(m, 1 << m_bits)
        else:
            value = F(2) ** (e - bias) * (1 + F(m, 1 << m_bits))
        rows.append((value, code))
    return rows


@dataclass
class Side:
    """The magnitudes one sign can take: values (increasing), their final codes, tie parity, and
    the next value of the unbounded grid above the largest (reaching it is overflow)."""

    values: list
    codes: list
    even: list
    next_value: Fraction
    next_even: bool


@dataclass
class Spec:
    name: str
    width: int
    positive: Side
    negative: Side
    negative_neg2: Side  # the negative side with int8_allow_neg2=True (same as negative for floats)
    inf_code: tuple | None  # (positive, negative) codes
    nan_code: tuple | None  # canonical NaN codes (positive, negative)

    @property
    def max_value(self):
        return self.positive.values[-1]


def _float_spec(name, e_bits, m_bits, bias, specials, next_value, next_even, nan_code, inf_code):
    rows = _float_rows(e_bits, m_bits, bias, specials)
    values = [v for v, _ in rows]
    codes = [c for _, c in rows]
    even = [c & 1 == 0 for c in codes]  # the code's last mantissa bit is the significand's LSB
    if m_bits == 0:  # no mantissa: a tie's upper neighbour on the lower binade's grid has
        # significand 2 (even), except 2^emin above 0 (significands 0 and 1: 0 is even)
        even = [True] + [False] + [True] * (len(codes) - 2)
    sign = 1 << (e_bits + m_bits)
    positive = Side(values, codes, even, next_value, next_even)
    # 'fnuz' and 'p3109' have no -0: a negative value rounding to zero is +0 (code 0)
    no_negative_zero = specials in ("fnuz", "p3109")
    negative_codes = [0 if no_negative_zero and c == 0 else c | sign for c in codes]
    negative = Side(values, negative_codes, even, next_value, next_even)
    return Spec(
        name,
        1 + e_bits + m_bits,
        positive,
        negative,
        negative,
        None if inf_code is None else (inf_code, inf_code | sign),
        None if nan_code is None else (nan_code, nan_code | sign),
    )


def _int8_spec():
    values = [F(q, 64) for q in range(128)]
    even = [q % 2 == 0 for q in range(128)]
    positive = Side(values, list(range(128)), even, F(2), True)  # next: q = 128
    negative = Side(values, [(-q) & 0xFF for q in range(128)], even, F(2), True)
    # With int8_allow_neg2, -2.0 (q = -128, code 0x80) is representable; the next is q = -129.
    negative_neg2 = Side(values + [F(2)], negative.codes + [0x80], even + [True], F(129, 64), False)
    return Spec("int8", 8, positive, negative, negative_neg2, None, None)


SPECS = {
    # E4M3: the unbounded grid's next value above 448 = 1.110b * 2^8 is 480 = 1.111b * 2^8 (the
    # NaN code's magnitude): odd, so the tie 464 goes to 448.
    "fp8_e4m3": _float_spec("fp8_e4m3", 4, 3, 7, "fn", F(480), False, 0x7F, None),
    # E5M2: above 57344 = 1.11b * 2^15 comes 2^16 = 1.00b * 2^16: even, so the tie 61440 overflows.
    "fp8_e5m2": _float_spec("fp8_e5m2", 5, 2, 15, "ieee", F(2**16), True, 0x7E, 0x7C),
    "fp6_e3m2": _float_spec("fp6_e3m2", 3, 2, 3, "none", F(32), True, None, None),
    "fp6_e2m3": _float_spec("fp6_e2m3", 2, 3, 1, "none", F(8), True, None, None),
    "fp4_e2m1": _float_spec("fp4_e2m1", 2, 1, 1, "none", F(8), True, None, None),
    "int8": _int8_spec(),
    # FNUZ (no Inf, NaN 0x80 for both signs): the next value above the all-ones magnitude is the
    # next binade's 1.000b: even. E4M3FNUZ: 240 = 1.111b * 2^7, next 256; E5M2FNUZ: 57344, next 2^16.
    "fp8_e4m3fnuz": _float_spec("fp8_e4m3fnuz", 4, 3, 8, "fnuz", F(256), True, 0x80, None),
    "fp8_e5m2fnuz": _float_spec("fp8_e5m2fnuz", 5, 2, 16, "fnuz", F(2**16), True, 0x80, None),
    # P3109 binary8pP (bias 2^(7-P), NaN 0x80, Inf 0x7F): the next value above max is the Inf
    # magnitude's, all mantissa ones: odd. P = 1 has no mantissa: max 2^62, next 2^63 (even).
    "binary8p1": _float_spec("binary8p1", 7, 0, 64, "p3109", F(2) ** 63, True, 0x80, 0x7F),
    "binary8p2": _float_spec("binary8p2", 6, 1, 32, "p3109", F(3) * 2**30, False, 0x80, 0x7F),
    "binary8p3": _float_spec("binary8p3", 5, 2, 16, "p3109", F(57344), False, 0x80, 0x7F),
    "binary8p4": _float_spec("binary8p4", 4, 3, 8, "p3109", F(240), False, 0x80, 0x7F),
    "binary8p5": _float_spec("binary8p5", 3, 4, 4, "p3109", F(31, 2), False, 0x80, 0x7F),
    "binary8p6": _float_spec("binary8p6", 2, 5, 2, "p3109", F(63, 16), False, 0x80, 0x7F),
    "binary8p7": _float_spec("binary8p7", 1, 6, 1, "p3109", F(127, 64), False, 0x80, 0x7F),
    "bf16": _float_spec("bf16", 8, 7, 127, "ieee", F(2) ** 128, True, 0x7FC0, 0x7F80),
    "fp16": _float_spec("fp16", 5, 10, 15, "ieee", F(2) ** 16, True, 0x7E00, 0x7C00),
}
FNUZ_P3109 = ["fp8_e4m3fnuz", "fp8_e5m2fnuz"] + [f"binary8p{p}" for p in range(1, 8)]
SMALL = ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"] + FNUZ_P3109
WIDE = ["bf16", "fp16"]  # sampled pairs
ALL = SMALL + WIDE

# ---------------------------------------------------------------------------------------------
# The expected code of one input, from the definitions.
# ---------------------------------------------------------------------------------------------


def _sign_bit(x: float) -> bool:
    return math.copysign(1.0, x) < 0


def _rounds_toward_zero(rounding: str, negative: bool) -> bool:
    return rounding == "rtz" or (rounding == "rup" and negative) or (rounding == "rdn" and not negative)


@dataclass(frozen=True)
class Where:
    """Where an input lies: kind 'nan' | 'inf' | 'exact' (index) | 'between' (index, fraction of
    the gap to the next value) | 'beyond' (at or above the next value of the unbounded grid)."""

    kind: str
    negative: bool
    index: int = 0
    fraction: Fraction = F(0)


def locate(side: Side, x: float) -> Where:
    negative = _sign_bit(x)
    if math.isnan(x):
        return Where("nan", negative)
    if math.isinf(x):
        return Where("inf", negative)
    a = abs(F(x))
    if a >= side.next_value:
        return Where("beyond", negative)
    i = bisect.bisect_right(side.values, a) - 1
    if side.values[i] == a:
        return Where("exact", negative, i)
    upper = side.values[i + 1] if i + 1 < len(side.values) else side.next_value
    return Where("between", negative, i, (a - side.values[i]) / (upper - side.values[i]))


def expected_outcome(spec: Spec, side: Side, where: Where, rounding, overflow, rand=None, rand_width=None) -> int:
    """The code, or OVERFLOW_ERROR / VALUE_ERROR."""
    neg = where.negative
    if where.kind == "nan":
        return VALUE_ERROR if spec.nan_code is None else spec.nan_code[neg]
    if where.kind in ("exact", "between"):
        index = where.index
        if where.kind == "between":
            f = where.fraction
            upper_even = side.even[index + 1] if index + 1 < len(side.values) else side.next_even
            up = {
                "rtz": False,
                "rup": not neg,
                "rdn": neg,
                "rna": f >= F(1, 2),
                "rne": f > F(1, 2) or (f == F(1, 2) and upper_even),
            }.get(rounding)
            if rounding == "stochastic":  # floor(|x| / ulp + r / 2^R)
                up = f + F(rand, 2**rand_width) >= 1
            index += up
        if index < len(side.values):
            return side.codes[index]  # -0 for negatives rounding to zero (0 in two's complement)
    # overflow: 'beyond', 'inf', or rounded up to the next value of the unbounded grid
    if overflow == "error":
        return OVERFLOW_ERROR
    if overflow == "ieee" and (where.kind == "inf" or not _rounds_toward_zero(rounding, neg)):
        if spec.inf_code is not None:
            return spec.inf_code[neg]
        if spec.nan_code is not None:
            return spec.nan_code[neg]
    return side.codes[-1]  # saturate: +-max finite


def _side(spec: Spec, x: float, allow_neg2: bool) -> Side:
    if not _sign_bit(x):
        return spec.positive
    return spec.negative_neg2 if allow_neg2 else spec.negative


def expected_code(name, x, rounding="rne", overflow="saturate", allow_neg2=False, rand=None, rand_width=None):
    spec = SPECS[name]
    side = _side(spec, x, allow_neg2)
    return expected_outcome(spec, side, locate(side, x), rounding, overflow, rand, rand_width)


# ---------------------------------------------------------------------------------------------
# The boundary inputs.
# ---------------------------------------------------------------------------------------------

INPUT_DTYPES = {
    "float64": np.float64,
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
}


def _exact_in(dtype, x: float) -> bool:
    if math.isnan(x) or math.isinf(x):
        return True
    with np.errstate(over="ignore"):
        y = float(np.array([x], dtype=dtype)[0])
    return y == x and _sign_bit(y) == _sign_bit(x)


def _pairs(name: str):
    spec = SPECS[name]
    sides = [spec.positive] + ([spec.negative_neg2] if name == "int8" else [])
    pairs = set()
    for side in sides:
        values = side.values + [side.next_value]
        pairs.update(zip(values[:-1], values[1:]))
    pairs = sorted(pairs)
    if name in WIDE:  # the bottom (subnormals and first normals), the top, and a random middle
        rng = np.random.default_rng(1234)
        middle = rng.choice(np.arange(160, len(pairs) - 160), size=300, replace=False)
        pairs = pairs[:160] + [pairs[i] for i in sorted(middle)] + pairs[-160:]
    return pairs


@lru_cache(maxsize=None)
def boundary_inputs(name: str) -> dict:
    """{dtype name: float64 array of inputs exactly representable in that dtype} (NaN excluded)."""
    spec = SPECS[name]
    top = spec.positive.values[-1]
    magnitudes = {float(v) for v in (0, top * 2, top * 4)}
    magnitudes.update((3.4028234663852886e38, 1e300, 2.0**-149, 2.0**-1074, math.inf))
    nudged = {key: set() for key in INPUT_DTYPES}
    for lo, hi in _pairs(name):
        mid = (lo + hi) / 2
        for v in (lo, hi, mid):
            assert F(float(v)) == v
            magnitudes.add(float(v))
        for key in ("float64", "float32", "float16"):
            dtype = INPUT_DTYPES[key]
            if _exact_in(dtype, float(mid)):
                m = np.array([float(mid)], dtype=dtype)
                for direction in (np.inf, -np.inf):
                    nudged[key].add(float(np.nextafter(m, np.array([direction], dtype=dtype))[0]))
    out = {}
    for key, dtype in INPUT_DTYPES.items():
        mags = {v for v in magnitudes | nudged[key] if _exact_in(dtype, v)}
        values = sorted(mags) + sorted(-v for v in mags)
        out[key] = np.array(values, dtype=np.float64)
    return out


@lru_cache(maxsize=None)
def union_inputs(name: str) -> np.ndarray:
    """All boundary inputs of every dtype, unique by bit pattern (so -0 and 0 both stay)."""
    arrays = list(boundary_inputs(name).values())
    bits = np.unique(np.concatenate(arrays).view(np.uint64))
    return bits.view(np.float64)


@lru_cache(maxsize=None)
def locations(name: str, allow_neg2: bool = False) -> tuple:
    spec = SPECS[name]
    return tuple(
        (x, _side(spec, x, allow_neg2), locate(_side(spec, x, allow_neg2), x)) for x in union_inputs(name).tolist()
    )


@lru_cache(maxsize=None)
def expected_table(name: str, rounding: str, overflow: str, allow_neg2: bool = False) -> np.ndarray:
    """Expected outcome of every union input (aligned with union_inputs)."""
    spec = SPECS[name]
    return np.array(
        [expected_outcome(spec, side, where, rounding, overflow) for _, side, where in locations(name, allow_neg2)],
        dtype=np.int64,
    )


def located(name, xs64: np.ndarray, allow_neg2=False) -> list:
    """(side, where) of each input, looked up in the cache of the union inputs."""
    union = union_inputs(name).view(np.uint64)
    index = np.searchsorted(union, xs64.view(np.uint64))
    assert np.array_equal(union[index], xs64.view(np.uint64))
    table = locations(name, allow_neg2)
    return [table[i][1:] for i in index.tolist()]


def expected_for(name, xs64: np.ndarray, rounding, overflow, allow_neg2=False) -> np.ndarray:
    union = union_inputs(name).view(np.uint64)
    index = np.searchsorted(union, xs64.view(np.uint64))
    assert np.array_equal(union[index], xs64.view(np.uint64))
    return expected_table(name, rounding, overflow, allow_neg2)[index]


def _show(xs, got, want, limit=10):
    bad = np.flatnonzero(got != want)
    def show(v):  # codes in hex, decoded values as floats
        return f"{int(v):#x}" if np.issubdtype(np.asarray(v).dtype, np.integer) else repr(float(v))

    rows = [f"x={float(xs[i])!r} ({float(xs[i]).hex()}): got {show(got[i])}, want {show(want[i])}" for i in bad[:limit]]
    return "\n".join(rows + [f"{bad.size} mismatches of {len(xs)}"])


def code_dtype(name):
    return np.uint8 if SPECS[name].width <= 8 else np.uint16


# ---------------------------------------------------------------------------------------------
# The expectation itself, on cases typed in from the reference notes (section 1.4, trap T6).
# ---------------------------------------------------------------------------------------------

HAND_CASES = [
    # (format, x, rounding, overflow, code)
    ("fp4_e2m1", 0.25, "rne", "saturate", 0x0),
    ("fp4_e2m1", 0.75, "rne", "saturate", 0x2),
    ("fp4_e2m1", 1.25, "rne", "saturate", 0x2),
    ("fp4_e2m1", 1.75, "rne", "saturate", 0x4),
    ("fp4_e2m1", 2.5, "rne", "saturate", 0x4),
    ("fp4_e2m1", 3.5, "rne", "saturate", 0x6),
    ("fp4_e2m1", 5.0, "rne", "saturate", 0x6),
    ("fp4_e2m1", 7.0, "rne", "saturate", 0x7),
    ("fp4_e2m1", 7.0, "rne", "error", OVERFLOW_ERROR),
    ("fp4_e2m1", -0.25, "rne", "saturate", 0x8),
    ("fp4_e2m1", 0.75, "rna", "saturate", 0x2),
    ("fp4_e2m1", 2.5, "rna", "saturate", 0x5),
    ("fp4_e2m1", -0.2, "rdn", "saturate", 0x9),
    ("fp4_e2m1", -0.2, "rup", "saturate", 0x8),
    ("fp4_e2m1", 6.5, "rtz", "error", 0x7),
    ("fp4_e2m1", 8.0, "rtz", "error", OVERFLOW_ERROR),
    ("fp8_e4m3", 464.0, "rne", "saturate", 0x7E),
    ("fp8_e4m3", 464.0, "rne", "error", 0x7E),
    ("fp8_e4m3", 464.0, "rna", "ieee", 0x7F),
    ("fp8_e4m3", 470.0, "rne", "ieee", 0x7F),
    ("fp8_e4m3", -470.0, "rne", "ieee", 0xFF),
    ("fp8_e4m3", 470.0, "rtz", "ieee", 0x7E),
    ("fp8_e4m3", 470.0, "rtz", "error", 0x7E),
    ("fp8_e4m3", 500.0, "rtz", "ieee", 0x7E),
    ("fp8_e4m3", 500.0, "rtz", "error", OVERFLOW_ERROR),
    ("fp8_e4m3", -500.0, "rdn", "ieee", 0xFF),
    ("fp8_e4m3", -500.0, "rup", "ieee", 0xFE),
    ("fp8_e4m3", math.inf, "rtz", "ieee", 0x7F),
    ("fp8_e4m3", -math.inf, "rne", "saturate", 0xFE),
    ("fp8_e4m3", 2.0**-10, "rne", "saturate", 0x00),
    ("fp8_e4m3", 3 * 2.0**-10, "rne", "saturate", 0x02),
    ("fp8_e5m2", 61440.0, "rne", "ieee", 0x7C),
    ("fp8_e5m2", 61440.0, "rne", "saturate", 0x7B),
    ("fp8_e5m2", 61440.0, "rne", "error", OVERFLOW_ERROR),
    ("fp8_e5m2", 61439.0, "rne", "error", 0x7B),
    ("fp8_e5m2", -61440.0, "rdn", "ieee", 0xFC),
    ("fp8_e5m2", -61440.0, "rup", "ieee", 0xFB),
    ("fp8_e5m2", math.inf, "rtz", "ieee", 0x7C),
    ("fp6_e3m2", 30.0, "rne", "ieee", 0x1F),
    ("fp6_e2m3", 7.75, "rne", "error", OVERFLOW_ERROR),
    ("fp6_e2m3", 7.74, "rne", "error", 0x1F),
    ("int8", 0.5 / 64, "rne", "saturate", 0x00),
    ("int8", 0.5 / 64, "rna", "saturate", 0x01),
    ("int8", 1.5 / 64, "rne", "saturate", 0x02),
    ("int8", 2.5 / 64, "rne", "saturate", 0x02),
    ("int8", 2.5 / 64, "rna", "saturate", 0x03),
    ("int8", -0.5 / 64, "rne", "saturate", 0x00),
    ("int8", -0.5 / 64, "rna", "saturate", 0xFF),
    ("int8", -1.5 / 64, "rne", "saturate", 0xFE),
    ("int8", 126.5 / 64, "rne", "saturate", 0x7E),
    ("int8", 127.5 / 64, "rne", "saturate", 0x7F),
    ("int8", 127.5 / 64, "rne", "error", OVERFLOW_ERROR),
    ("int8", -1.999, "rne", "saturate", 0x81),
    ("int8", -2.0, "rne", "saturate", 0x81),
    ("int8", -2.0, "rne", "error", OVERFLOW_ERROR),
    ("int8", -0.0, "rne", "saturate", 0x00),
    ("int8", -1e-9, "rdn", "saturate", 0xFF),
    ("int8", -1e-9, "rtz", "saturate", 0x00),
]


def _hand_id(case):
    name, x, rounding, overflow, _ = case
    return f"{name}-{x!r}-{rounding}-{overflow}"


@pytest.mark.parametrize("case", HAND_CASES, ids=[_hand_id(c) for c in HAND_CASES])
def test_hand_cases(case):
    name, x, rounding, overflow, want = case
    assert expected_code(name, x, rounding, overflow) == want  # the oracle itself
    if want == OVERFLOW_ERROR:
        with pytest.raises(OverflowError):
            ref.encode(x, name, rounding, overflow)
        with pytest.raises(OverflowError):
            mxsim.encode(np.array([x]), name, rounding, overflow)
    else:
        assert ref.encode(x, name, rounding, overflow) == want
        got = mxsim.encode(np.array([x, x], dtype=np.float64), name, rounding, overflow)
        assert got.tolist() == [want, want]


MXINT8_NEG2_CASES = [
    # (x, rounding, overflow, code) with int8_allow_neg2=True
    (-1.999, "rne", "saturate", 0x80),
    (-2.0, "rne", "saturate", 0x80),
    (-2.0, "rne", "error", 0x80),
    (-127.5 / 64, "rne", "saturate", 0x80),
    (-128.5 / 64, "rne", "saturate", 0x80),
    (-128.5 / 64, "rne", "error", 0x80),
    (-128.5 / 64, "rna", "saturate", 0x80),
    (-128.5 / 64, "rna", "error", OVERFLOW_ERROR),
    (-3.0, "rne", "saturate", 0x80),
    (-math.inf, "rne", "saturate", 0x80),
    (-math.inf, "rne", "ieee", 0x80),
    (1.999, "rne", "saturate", 0x7F),
    (127.5 / 64, "rne", "saturate", 0x7F),
    (-1.99, "rne", "saturate", 0x81),
]


@pytest.mark.parametrize("case", MXINT8_NEG2_CASES, ids=[_hand_id(("int8",) + c) for c in MXINT8_NEG2_CASES])
def test_mxint8_allow_neg2_cases(case):
    x, rounding, overflow, want = case
    assert expected_code("int8", x, rounding, overflow, allow_neg2=True) == want
    for dtype in (np.float32, np.float64):
        arr = np.array([x], dtype=dtype)
        xv = float(arr[0])
        if want == OVERFLOW_ERROR:
            with pytest.raises(OverflowError):
                ref.encode(xv, "int8", rounding, overflow, int8_allow_neg2=True)
            with pytest.raises(OverflowError):
                mxsim.encode(arr, "int8", rounding, overflow, int8_allow_neg2=True)
        else:
            assert ref.encode(xv, "int8", rounding, overflow, int8_allow_neg2=True) == want
            assert mxsim.encode(arr, "int8", rounding, overflow, int8_allow_neg2=True)[0] == want


def test_mxint8_minus_1_999_default_and_allow_neg2():
    assert ref.encode(-1.999, "int8") == 0x81
    assert ref.encode(-1.999, "int8", int8_allow_neg2=True) == 0x80
    for dtype in (np.float32, np.float64, np.float16):
        x = np.array([-1.999], dtype=dtype)
        assert mxsim.encode(x, "int8")[0] == 0x81
        assert mxsim.encode(x, "int8", int8_allow_neg2=True)[0] == 0x80


# ---------------------------------------------------------------------------------------------
# Every boundary input, every mode: the fast path and the reference.
# ---------------------------------------------------------------------------------------------


def _fast_check(name, xs64, dtype_key, rounding, overflow, allow_neg2=False):
    xs = xs64.astype(INPUT_DTYPES[dtype_key])
    assert np.array_equal(xs.astype(np.float64).view(np.uint64), xs64.view(np.uint64))
    want = expected_for(name, xs64, rounding, overflow, allow_neg2)
    kw = {"int8_allow_neg2": True} if allow_neg2 else {}
    ok = want >= 0
    assert not (want == VALUE_ERROR).any()
    got = mxsim.encode(xs[ok], name, rounding, overflow, **kw)
    assert got.dtype == code_dtype(name)
    assert np.array_equal(got.astype(np.int64), want[ok]), _show(xs64[ok], got, want[ok])
    for i in np.flatnonzero(~ok):
        assert want[i] == OVERFLOW_ERROR and overflow == "error"
        with pytest.raises(OverflowError):
            mxsim.encode(xs[i : i + 1], name, rounding, overflow, **kw)
    if overflow == "error":
        assert (~ok).any()  # +-inf at least


@pytest.mark.parametrize("overflow", OVERFLOWS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("dtype_key", list(INPUT_DTYPES))
@pytest.mark.parametrize("name", ALL)
def test_fast_encode_boundaries(name, dtype_key, rounding, overflow):
    xs64 = boundary_inputs(name)[dtype_key]
    assert xs64.size > 20
    _fast_check(name, xs64, dtype_key, rounding, overflow)


@pytest.mark.parametrize("overflow", OVERFLOWS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("dtype_key", ["float64", "float32"])
def test_fast_encode_boundaries_int8_allow_neg2(dtype_key, rounding, overflow):
    _fast_check("int8", boundary_inputs("int8")[dtype_key], dtype_key, rounding, overflow, allow_neg2=True)


REF_SAMPLE = 800  # inputs per (format, mode) for the wide formats


def _ref_inputs(name, overflow):
    """Indices of the union inputs the reference is run on: all of them for the small formats under
    overflow='saturate'; for 'ieee' and 'error' (which only differ at the top) every input at or
    above half the largest value and a third of the rest; for bf16/fp16 the top, the bottom and
    a random sample."""
    xs = union_inputs(name)
    rng = np.random.default_rng(99)
    values = SPECS[name].positive.values
    keep = np.zeros(xs.size, bool)
    if name in WIDE:
        keep[rng.choice(xs.size, REF_SAMPLE, replace=False)] = True
        keep[np.abs(xs) >= float(values[-24])] = True  # all of the top and the overflow region
        keep[np.abs(xs) <= float(values[24])] = True  # all of the bottom (subnormals)
    elif overflow == "saturate":
        keep[:] = True
    else:
        keep[rng.random(xs.size) < 1 / 3] = True
        keep[~(np.abs(xs) < float(values[-1]) / 2)] = True  # the top, +-inf
    return np.flatnonzero(keep)


@pytest.mark.parametrize("overflow", OVERFLOWS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("name", ALL)
def test_ref_encode_boundaries(name, rounding, overflow):
    xs = union_inputs(name)
    want = expected_table(name, rounding, overflow)
    bad = []
    for i in _ref_inputs(name, overflow):
        x = float(xs[i])
        if want[i] == OVERFLOW_ERROR:
            try:
                got = ref.encode(x, name, rounding, overflow)
            except OverflowError:
                continue
            bad.append((x, hex(got), "OverflowError"))
        else:
            got = ref.encode(x, name, rounding, overflow)
            if got != want[i]:
                bad.append((x, hex(got), hex(want[i])))
    assert not bad, bad[:10] + [f"{len(bad)} mismatches"]


@pytest.mark.parametrize("overflow", OVERFLOWS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_ref_encode_boundaries_int8_allow_neg2(rounding, overflow):
    xs = union_inputs("int8")
    want = expected_table("int8", rounding, overflow, True)
    for i, x in enumerate(xs.tolist()):
        if want[i] == OVERFLOW_ERROR:
            with pytest.raises(OverflowError):
                ref.encode(x, "int8", rounding, overflow, int8_allow_neg2=True)
        else:
            assert ref.encode(x, "int8", rounding, overflow, int8_allow_neg2=True) == want[i], x


# ---------------------------------------------------------------------------------------------
# NaN input.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overflow", OVERFLOWS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("name", ALL)
def test_nan_input(name, rounding, overflow):
    nans = [math.nan, math.copysign(math.nan, -1.0)]
    assert [_sign_bit(x) for x in nans] == [False, True]
    spec = SPECS[name]
    for x in nans:
        want = expected_code(name, x, rounding, overflow)
        for dtype in (np.float64, np.float32, np.float16, ml_dtypes.bfloat16):
            arr = np.array([1.0, x, 0.5], dtype=dtype)
            assert _sign_bit(float(arr[1])) == _sign_bit(x)
            if spec.nan_code is None:
                assert want == VALUE_ERROR
                with pytest.raises(ValueError):
                    mxsim.encode(arr, name, rounding, overflow)
            else:
                assert want == spec.nan_code[_sign_bit(x)]
                assert mxsim.encode(arr, name, rounding, overflow)[1] == want
        if spec.nan_code is None:
            with pytest.raises(ValueError):
                ref.encode(x, name, rounding, overflow)
        else:
            assert ref.encode(x, name, rounding, overflow) == want


# ---------------------------------------------------------------------------------------------
# Stochastic rounding: floor(|x| / ulp + r / 2^R) on the magnitude.
# ---------------------------------------------------------------------------------------------

STOCHASTIC_HAND_CASES = [
    # (format, x, rand_width, [(r, code), ...])
    ("fp4_e2m1", 0.75, 1, [(0, 0x1), (1, 0x2)]),
    ("fp4_e2m1", 0.75, 8, [(0, 0x1), (127, 0x1), (128, 0x2), (255, 0x2)]),
    ("fp4_e2m1", 0.75, 32, [(0, 0x1), (2**31 - 1, 0x1), (2**31, 0x2), (2**32 - 1, 0x2)]),
    ("fp4_e2m1", -0.75, 8, [(0, 0x9), (127, 0x9), (128, 0xA), (255, 0xA)]),
    ("fp4_e2m1", 0.625, 2, [(0, 0x1), (2, 0x1), (3, 0x2)]),  # 1.25 ulps: up from r >= 3/4 * 2^R
    ("fp4_e2m1", 0.625, 8, [(191, 0x1), (192, 0x2)]),
    ("fp4_e2m1", 1.0, 8, [(0, 0x2), (255, 0x2)]),  # exact: never moves
    ("fp4_e2m1", 5.5, 4, [(3, 0x6), (4, 0x7)]),  # 2.75 ulps of 2
    ("fp4_e2m1", 0.1, 4, [(12, 0x0), (13, 0x1)]),  # 0.2 ulps of 0.5: up iff r/16 >= 0.8
    ("fp4_e2m1", -0.1, 4, [(12, 0x8), (13, 0x9)]),  # -0 below the threshold
    ("fp8_e4m3", 2.0**-10, 8, [(127, 0x00), (128, 0x01)]),
    ("fp8_e4m3", -(2.0**-10), 8, [(127, 0x80), (128, 0x81)]),
    ("int8", 0.25 / 64, 4, [(11, 0x00), (12, 0x01)]),
    ("int8", -0.25 / 64, 4, [(11, 0x00), (12, 0xFF)]),
]


@pytest.mark.parametrize("case", STOCHASTIC_HAND_CASES, ids=lambda c: f"{c[0]}-{c[1]!r}-R{c[2]}")
def test_stochastic_hand_cases(case):
    name, x, width, expectations = case
    for r, want in expectations:
        assert expected_code(name, x, "stochastic", "saturate", rand=r, rand_width=width) == want
        assert ref.encode(x, name, "stochastic", rand_bits=r, rand_width=width) == want, r
        for dtype in (np.float64, np.float32):
            got = mxsim.encode(np.array([x], dtype), name, "stochastic", rand_bits=np.array([r]), rand_width=width)
            assert got[0] == want, (dtype, r)


STOCHASTIC_OVERFLOW_CASES = [
    # (format, x, rand_width, r, overflow, code)
    ("fp4_e2m1", 6.5, 4, 11, "saturate", 0x7),  # 3.25 ulps: r/16 < 0.75 stays at 6
    ("fp4_e2m1", 6.5, 4, 12, "saturate", 0x7),  # rounds to 8: saturates
    ("fp4_e2m1", 6.5, 4, 12, "ieee", 0x7),  # no Inf, no NaN
    ("fp4_e2m1", 6.5, 4, 11, "error", 0x7),
    ("fp4_e2m1", 6.5, 4, 12, "error", OVERFLOW_ERROR),
    ("fp8_e4m3", 460.0, 3, 4, "ieee", 0x7E),  # 14.375 ulps of 32: r/8 < 0.625 gives 448
    ("fp8_e4m3", 460.0, 3, 5, "ieee", 0x7F),  # 480: NaN under ieee
    ("fp8_e4m3", -460.0, 3, 5, "ieee", 0xFF),
    ("fp8_e4m3", 460.0, 3, 5, "saturate", 0x7E),
    ("fp8_e4m3", 460.0, 3, 5, "error", OVERFLOW_ERROR),
    ("fp8_e5m2", 60000.0, 8, 0, "ieee", 0x7B),
    ("fp8_e5m2", 60000.0, 8, 255, "ieee", 0x7C),
]


@pytest.mark.parametrize("case", STOCHASTIC_OVERFLOW_CASES, ids=lambda c: f"{c[0]}-{c[1]!r}-r{c[3]}-{c[4]}")
def test_stochastic_overflow_cases(case):
    name, x, width, r, overflow, want = case
    assert expected_code(name, x, "stochastic", overflow, rand=r, rand_width=width) == want
    arr = np.array([x])
    if want == OVERFLOW_ERROR:
        with pytest.raises(OverflowError):
            ref.encode(x, name, "stochastic", overflow, rand_bits=r, rand_width=width)
        with pytest.raises(OverflowError):
            mxsim.encode(arr, name, "stochastic", overflow, rand_bits=np.array([r]), rand_width=width)
    else:
        assert ref.encode(x, name, "stochastic", overflow, rand_bits=r, rand_width=width) == want
        assert mxsim.encode(arr, name, "stochastic", overflow, rand_bits=np.array([r]), rand_width=width)[0] == want


def _stochastic_bits(n, width, rng):
    half = 1 << (width - 1)
    edges = np.array([0, max(half - 1, 0), half, (1 << width) - 1], dtype=np.int64)
    randoms = rng.integers(0, 1 << width, size=n, dtype=np.int64)
    return np.concatenate([np.repeat(edges[None, :], n, axis=0).reshape(-1), randoms])


def _stochastic_expected(name, xs64, bits, rand_width, overflow):
    """expected_outcome for each (x, r). Per input the outcome is the one of r = 0 below the
    threshold t = ceil((1 - f) * 2^R) (f: position in the gap) and the one of r = t from it on,
    so the definition is evaluated twice per input, not once per (x, r)."""
    spec = SPECS[name]
    unique, inverse = np.unique(xs64.view(np.uint64), return_inverse=True)
    low, high, threshold = [], [], []
    for side, where in located(name, unique.view(np.float64)):
        t = 1 << rand_width
        if where.kind == "between":
            t = math.ceil((1 - where.fraction) * (1 << rand_width))
        low.append(expected_outcome(spec, side, where, "stochastic", overflow, 0, rand_width))
        r_high = min(t, (1 << rand_width) - 1)
        high.append(expected_outcome(spec, side, where, "stochastic", overflow, r_high, rand_width))
        threshold.append(t)
    threshold, high, low = (np.array(a, dtype=np.int64)[inverse] for a in (threshold, high, low))
    return np.where(bits >= threshold, high, low)


@pytest.mark.parametrize("overflow", ["saturate", "ieee"])
@pytest.mark.parametrize("rand_width", [1, 5, 32])
@pytest.mark.parametrize("dtype_key", ["float64", "float32"])
@pytest.mark.parametrize("name", ALL)
def test_stochastic_boundaries(name, dtype_key, rand_width, overflow):
    """Fast path on every boundary input with edge and random bits; the reference on a sample."""
    rng = np.random.default_rng(rand_width)
    xs64 = boundary_inputs(name)[dtype_key]
    n = xs64.size
    xs64 = np.concatenate([np.repeat(xs64[:, None], 4, axis=1).reshape(-1), xs64])
    bits = _stochastic_bits(n, rand_width, rng)
    want = _stochastic_expected(name, xs64, bits, rand_width, overflow)
    xs = xs64.astype(INPUT_DTYPES[dtype_key])
    got = mxsim.encode(xs, name, "stochastic", overflow, rand_bits=bits, rand_width=rand_width)
    assert np.array_equal(got.astype(np.int64), want), _show(xs64, got, want)
    spec = SPECS[name]
    sample = rng.choice(xs64.size, size=min(150, xs64.size), replace=False)
    for i in sample:
        x, r = float(xs64[i]), int(bits[i])
        side = _side(spec, x, False)
        assert expected_outcome(spec, side, locate(side, x), "stochastic", overflow, r, rand_width) == want[i]
        assert ref.encode(x, name, "stochastic", overflow, rand_bits=r, rand_width=rand_width) == want[i], (x, r)


@pytest.mark.parametrize("name", SMALL)
def test_stochastic_error_mode_raises_exactly_on_overflow(name):
    rng = np.random.default_rng(7)
    xs64 = boundary_inputs(name)["float64"]
    xs64 = xs64[np.isfinite(xs64) & (np.abs(xs64) >= float(SPECS[name].max_value) / 2)]
    for x in xs64.tolist():
        r = int(rng.integers(0, 16))
        want = expected_code(name, x, "stochastic", "error", rand=r, rand_width=4)
        if want == OVERFLOW_ERROR:
            with pytest.raises(OverflowError):
                ref.encode(x, name, "stochastic", "error", rand_bits=r, rand_width=4)
            with pytest.raises(OverflowError):
                mxsim.encode(np.array([x]), name, "stochastic", "error", rand_bits=np.array([r]), rand_width=4)
        else:
            assert ref.encode(x, name, "stochastic", "error", rand_bits=r, rand_width=4) == want
            got = mxsim.encode(np.array([x]), name, "stochastic", "error", rand_bits=np.array([r]), rand_width=4)
            assert got[0] == want


@pytest.mark.parametrize("name", ALL)
def test_stochastic_ref_and_fast_agree_on_random_inputs(name):
    rng = np.random.default_rng(2024)
    top = float(SPECS[name].max_value)
    high = min(math.log2(top) + 1.5, 127.9)  # finite in float32
    exponents = rng.uniform(math.log2(float(SPECS[name].positive.values[1])) - 3, high, 1500)
    xs = np.exp2(exponents) * rng.choice([-1.0, 1.0], 1500)
    xs = xs.astype(np.float32).astype(np.float64)
    bits = rng.integers(0, 1 << 16, size=xs.size, dtype=np.int64)
    got = mxsim.encode(xs, name, "stochastic", "saturate", rand_bits=bits, rand_width=16)
    got32 = mxsim.encode(xs.astype(np.float32), name, "stochastic", "saturate", rand_bits=bits, rand_width=16)
    assert np.array_equal(got, got32)
    for x, r, g in zip(xs.tolist()[:500], bits.tolist(), got.tolist()):
        assert ref.encode(x, name, "stochastic", rand_bits=r, rand_width=16) == g, (x, r)
        assert expected_code(name, x, "stochastic", "saturate", rand=r, rand_width=16) == g, (x, r)


# ---------------------------------------------------------------------------------------------
# ml_dtypes casts (rne): the same rounding, with each type's own overflow behaviour.
# ---------------------------------------------------------------------------------------------

ML_CASTS = {
    # name: (ml_dtypes type, the mxsim overflow mode that matches the cast)
    "fp8_e5m2": (ml_dtypes.float8_e5m2, "ieee"),  # overflow -> Inf
    "fp8_e4m3": (ml_dtypes.float8_e4m3fn, "ieee"),  # overflow -> NaN
    "fp6_e3m2": (ml_dtypes.float6_e3m2fn, "saturate"),
    "fp6_e2m3": (ml_dtypes.float6_e2m3fn, "saturate"),
    "fp4_e2m1": (ml_dtypes.float4_e2m1fn, "saturate"),
    "fp8_e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, "ieee"),  # overflow -> NaN (0x80)
    "fp8_e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, "ieee"),
}


def _random_float32(n: int, name: str, seed: int) -> np.ndarray:
    """Random float32 values over every binade (subnormals included) and, for half of them, the
    binades around the format's own range; +-inf and a few exact grid values too."""
    rng = np.random.default_rng(seed)
    spec = SPECS[name]
    lo_exp = math.floor(math.log2(float(spec.positive.values[1]))) - 4
    hi_exp = math.floor(math.log2(float(spec.max_value))) + 3
    everywhere = rng.integers(0, 0x7F800000, size=n // 2, dtype=np.uint32)  # all finite non-negatives
    field = rng.integers(lo_exp + 127, hi_exp + 128, size=n - n // 2).astype(np.uint32)
    near = (field << np.uint32(23)) | rng.integers(0, 1 << 23, size=n - n // 2, dtype=np.uint32)
    # Many values close to target grid points: drop low mantissa bits.
    near[::3] &= np.uint32(0xFFFF0000)
    bits = np.concatenate([everywhere, near])
    bits |= rng.integers(0, 2, size=bits.size, dtype=np.uint32) << np.uint32(31)
    xs = bits.view(np.float32)
    return np.concatenate([xs, np.array([np.inf, -np.inf, 0.0, -0.0], np.float32)])


def _random_float64(n: int, name: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spec = SPECS[name]
    lo_exp = math.floor(math.log2(float(spec.positive.values[1]))) - 4
    hi_exp = math.floor(math.log2(float(spec.max_value))) + 3
    field = rng.integers(lo_exp + 1023, hi_exp + 1024, size=n).astype(np.uint64)
    bits = (field << np.uint64(52)) | rng.integers(0, 1 << 52, size=n, dtype=np.uint64)
    bits[::3] &= np.uint64(0xFFFFFFF000000000)  # near float32 and grid values
    bits |= rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    wide = rng.integers(0, 0x7FF0000000000000, size=n // 4, dtype=np.uint64)  # every binade
    return np.concatenate([bits.view(np.float64), wide.view(np.float64)])


def _ml_comparable_float64(name: str, xs: np.ndarray) -> np.ndarray:
    """ml_dtypes 0.6 casts float64 to these types through float32 (double rounding): keep the
    inputs whose float32 rounding does not land on a midpoint of the target grid unless the input
    was that midpoint already; for the rest the double rounding cannot change the result."""
    spec = SPECS[name]
    values = spec.positive.values + [spec.positive.next_value]
    mids = np.array([float((a + b) / 2) for a, b in zip(values[:-1], values[1:])])
    with np.errstate(over="ignore"):
        via32 = np.abs(xs.astype(np.float32).astype(np.float64))
    moved = via32 != np.abs(xs)
    return xs[~(moved & np.isin(via32, mids))]


def _compare_with_ml_dtypes(name, xs):
    ml_type, overflow = ML_CASTS[name]
    with np.errstate(over="ignore", invalid="ignore"):
        ml_codes = xs.astype(ml_type).view(np.uint8)
    got = mxsim.encode(xs, name, "rne", overflow)
    ml_nan = np.isnan(mxsim.decode(ml_codes, name))
    got_nan = np.isnan(mxsim.decode(got, name))
    assert np.array_equal(ml_nan, got_nan), _show(xs, got, ml_codes)
    same = np.where(ml_nan, True, got == ml_codes)
    assert same.all(), _show(xs[~same], got[~same], ml_codes[~same])


@pytest.mark.parametrize("dtype_key", ["float32", "float64"])
@pytest.mark.parametrize("name", list(ML_CASTS))
def test_ml_dtypes_on_boundaries(name, dtype_key):
    xs64 = boundary_inputs(name)[dtype_key]
    if dtype_key == "float64":
        kept = _ml_comparable_float64(name, xs64)
        assert kept.size > xs64.size // 2
        xs64 = kept
    xs = xs64.astype(INPUT_DTYPES[dtype_key])
    if SPECS[name].nan_code is not None:
        xs = np.concatenate([xs, np.array([np.nan, -np.nan], xs.dtype)])
    _compare_with_ml_dtypes(name, xs)


@pytest.mark.parametrize("name", list(ML_CASTS))
def test_ml_dtypes_on_random_float32(name):
    xs = _random_float32(100_000, name, seed=11)
    assert (np.abs(xs[np.isfinite(xs)]) < np.float32(2.0**-126)).sum() > 50  # subnormal float32s
    _compare_with_ml_dtypes(name, xs)


@pytest.mark.parametrize("name", list(ML_CASTS))
def test_ml_dtypes_on_random_float64(name):
    xs = _ml_comparable_float64(name, _random_float64(60_000, name, seed=12))
    assert xs.size > 50_000
    _compare_with_ml_dtypes(name, xs)


@pytest.mark.parametrize("name", ["fp6_e3m2", "fp6_e2m3", "fp4_e2m1"])
def test_nan_into_nanless_formats_raises_where_ml_dtypes_gives_minus_zero(name):
    ml_type, overflow = ML_CASTS[name]
    x = np.array([1.0, np.nan], np.float32)
    assert x.astype(ml_type).view(np.uint8)[1] == 1 << (SPECS[name].width - 1)  # ml_dtypes: -0
    with pytest.raises(ValueError):
        mxsim.encode(x, name, "rne", overflow)
    with pytest.raises(ValueError):
        ref.encode(math.nan, name, "rne", overflow)


def test_e8m0_matches_ml_dtypes_on_positive_values():
    """float8_e8m0fnu: nearest with ties up (E8M0 has a 1-bit significand: ties go to 2, i.e. up),
    below 2^-127 to 2^-127, overflow to NaN; that is mxsim rne with overflow='ieee'.

    ml_dtypes 0.6 sends every float32 in (2^-127, 2^-126) to 2^-126 (0x01), below the tie at
    1.5 * 2^-127 too; that binade is checked against the definition instead."""
    rng = np.random.default_rng(5)
    bits = rng.integers(1, 0x7F800000, size=50_000, dtype=np.uint32)
    xs = np.concatenate(
        [
            bits.view(np.float32),
            np.float32([1.5 * 2.0**127, 1.25 * 2.0**127, 3.0, 0.75, 6.0, 1.5 * 2.0**-126, 2.0**-140]),
        ]
    )
    xs = xs[(xs <= np.float32(2.0**-127)) | (xs >= np.float32(2.0**-126))]
    ml_codes = xs.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    got = mxsim.encode(xs, "e8m0", "rne", "ieee")
    assert np.array_equal(got, ml_codes), _show(xs, got, ml_codes)


@pytest.mark.parametrize(
    "x, code",
    [(1.0, 0x00), (1.25, 0x00), (1.4375, 0x00), (1.5, 0x01), (1.75, 0x01), (0.875, 0x00), (0.5, 0x00), (0.75, 0x00)],
)
def test_e8m0_lowest_binade(x, code):
    """x * 2^-127: nearest of 2^-127 (0x00) and 2^-126 (0x01), the tie up; below 2^-127: 0x00."""
    v = np.float32(x * 2.0**-127)
    assert float(v) == x * 2.0**-127
    assert ref.encode(float(v), "e8m0") == code
    assert mxsim.encode(np.array([v]), "e8m0")[0] == code
    assert mxsim.encode(np.array([v], np.float64), "e8m0", overflow="ieee")[0] == code


# ---------------------------------------------------------------------------------------------
# gfloat's round_float (sat=True, every rounding mode): mxsim overflow='saturate'.
# ---------------------------------------------------------------------------------------------

GFLOAT_FORMATS = {name: info for name, info in ORACLE_GFLOAT.items() if name != "e8m0"}


def _decoded(codes, name):
    return mxsim.decode(codes, name, dtype=np.float64)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("name", list(GFLOAT_FORMATS))
def test_gfloat_round_float_saturating(name, rounding):
    """gfloat with sat=True against mxsim saturate; for MXINT8 with int8_allow_neg2=True (gfloat
    uses -2.0), and the default mxsim result is gfloat's clamped to -127/64."""
    fi, mode = GFLOAT_FORMATS[name], GFLOAT_MODES[rounding]
    # float32 inputs only: gfloat 0.5.2 rounds ties away as floor(x / ulp + 0.5) in float64, which
    # is wrong for the float64 just below a midpoint (e.g. E4M3 2^-10 - 2^-63 gives 2^-9).
    xs = boundary_inputs(name)["float32"]
    rng = np.random.default_rng(3)
    spread = float(SPECS[name].max_value) * 1.5
    small = float(SPECS[name].positive.values[4])
    randoms = np.concatenate([rng.uniform(-spread, spread, 2000), rng.uniform(-1, 1, 500) * small])
    xs = np.concatenate([xs, randoms.astype(np.float32).astype(np.float64)])
    gf = np.array([round_float(fi, float(x), mode, True) for x in xs])
    kw = {"int8_allow_neg2": True} if name == "int8" else {}
    got = _decoded(mxsim.encode(xs, name, rounding, "saturate", **kw), name)
    if name == "int8":  # no -0 in two's complement: compare values only
        assert np.array_equal(got, gf), _show(xs, got, gf)
        default = _decoded(mxsim.encode(xs, name, rounding, "saturate"), name)
        clamped = np.maximum(gf, -127 / 64)
        assert np.array_equal(default, clamped), _show(xs, default, clamped)
    else:
        same = (got == gf) & (np.signbit(got) == np.signbit(gf))
        assert same.all(), _show(xs[~same], got[~same], gf[~same])


def test_gfloat_int8_rne_minus_1_999():
    assert round_float(format_info_ocp_int8, -1.999, RoundMode.TiesToEven, True) == -2.0
    assert ref.encode(-1.999, "int8", int8_allow_neg2=True) == 0x80


# ---------------------------------------------------------------------------------------------
# The input dtypes agree with each other on exactly representable values.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("name", ALL)
def test_every_input_dtype_gives_the_same_codes(name, rounding):
    xs64 = np.array([x for x in boundary_inputs(name)["bfloat16"].tolist() if _exact_in(np.float16, x)])
    assert xs64.size > 20
    results = [mxsim.encode(xs64.astype(INPUT_DTYPES[k]), name, rounding, "ieee") for k in INPUT_DTYPES]
    for other in results[1:]:
        assert np.array_equal(results[0], other)


# ---------------------------------------------------------------------------------------------
# IEEE P3109 binary8pP against gfloat's own P3109 rounding and encoder (round_float, then
# encode_float): sat=True is mxsim overflow='saturate', sat=False is overflow='ieee' (Inf, and
# +-max where the direction is toward zero). Every code gfloat gives is compared.
# ---------------------------------------------------------------------------------------------


def _p3109_inputs(name: str, seed: int) -> np.ndarray:
    """float32 boundary inputs of the format (every value, midpoint and its float32 neighbours),
    random float32 over the format's binades, +-inf and +-NaN (float32 only: see the note in
    test_gfloat_round_float_saturating on gfloat's float64 ties)."""
    rng = np.random.default_rng(seed)
    spec = SPECS[name]
    lo = math.log2(float(spec.positive.values[1])) - 2
    hi = math.log2(float(spec.max_value)) + 1.5
    randoms = np.exp2(rng.uniform(lo, hi, 1000)) * rng.choice([-1.0, 1.0], 1000)
    special = np.array([np.inf, -np.inf, np.nan, -np.nan])
    return np.concatenate([boundary_inputs(name)["float32"], randoms, special]).astype(np.float32)


def _gfloat_codes(fi, xs, mode, sat, bits=None, width=0) -> np.ndarray:
    if bits is None:
        return np.array([encode_float(fi, round_float(fi, float(x), mode, sat)) for x in xs])
    return np.array([encode_float(fi, round_float(fi, float(x), mode, sat, int(r), width)) for x, r in zip(xs, bits)])


def _p1_rne_ties(xs: np.ndarray, got: np.ndarray, gf: np.ndarray) -> np.ndarray:
    """Where binary8p1 rne differs from gfloat: the ties 1.5 * 2^e between 2^e, whose exponent
    field is even, and 2^(e+1). mxsim's rne rounds the magnitude to an even significand on the grid
    2^e (1.5 -> 2, up: mxsim.options.encode); gfloat's P3109 rounding picks the even code (down)."""
    differ = got != gf
    for x, g, want in zip(xs[differ].tolist(), got[differ].tolist(), gf[differ].tolist()):
        mantissa, exponent = math.frexp(abs(x))  # |x| = 0.75 * 2^exponent = 1.5 * 2^(exponent - 1)
        assert mantissa == 0.75 and exponent - 1 >= -63, x
        assert want & 0x7F == exponent - 1 + 64 and want & 1 == 0 and g == want + 1, (x, hex(g), hex(want))
    return differ


@pytest.mark.parametrize("sat", [True, False], ids=["saturate", "ieee"])
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("name", list(GFLOAT_P3109))
def test_gfloat_p3109_encoder(name, rounding, sat):
    fi, mode, overflow = GFLOAT_P3109[name], GFLOAT_MODES[rounding], "saturate" if sat else "ieee"
    xs = _p3109_inputs(name, seed=5)
    gf = _gfloat_codes(fi, xs, mode, sat)
    got = mxsim.encode(xs, name, rounding, overflow).astype(np.int64)
    differ = got != gf
    if name == "binary8p1" and rounding == "rne":
        differ = _p1_rne_ties(xs, got, gf)
        assert 0 < differ.sum() < 130  # one tie per even exponent field, both signs (mxsim's side of
        # each tie is checked against the definition by test_fast_encode_boundaries)
    else:
        assert not differ.any(), _show(xs[differ], got[differ], gf[differ])
    sample = np.random.default_rng(6).choice(xs.size, 300, replace=False)
    for i in sample:
        assert ref.encode(float(xs[i]), name, rounding, overflow) == got[i], float(xs[i])


@pytest.mark.parametrize("rand_width", [3, 16])
@pytest.mark.parametrize("sat", [True, False], ids=["saturate", "ieee"])
@pytest.mark.parametrize("name", list(GFLOAT_P3109))
def test_gfloat_p3109_stochastic(name, sat, rand_width):
    """gfloat's StochasticFastest rounds away iff delta + r / 2^R >= 1 (delta: the fraction of an
    ulp above the lower value): floor(|x| / ulp + r / 2^R), mxsim's stochastic rounding. Exact in
    float64 for float32 inputs and R <= 16."""
    fi, overflow = GFLOAT_P3109[name], "saturate" if sat else "ieee"
    xs = _p3109_inputs(name, seed=7)
    rng = np.random.default_rng(rand_width)
    bits = rng.integers(0, 1 << rand_width, xs.size)
    bits[::4] = (1 << rand_width) - 1
    bits[1::4] = 0
    gf = _gfloat_codes(fi, xs, RoundMode.StochasticFastest, sat, bits, rand_width)
    got = mxsim.encode(xs, name, "stochastic", overflow, rand_bits=bits, rand_width=rand_width).astype(np.int64)
    assert np.array_equal(got, gf), _show(xs[got != gf], got[got != gf], gf[got != gf])
