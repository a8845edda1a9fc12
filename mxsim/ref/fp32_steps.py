"""Float32 arithmetic of software quantizers, emulated exactly (docs/numerics.md section 6.2).

The libraries that make MX data (microxcaling, Intel Neural Compressor) compute the scale and
each element's binade with float32 ``torch.log2`` and round elements with ``floor(|x| + 0.5)``
evaluated in float32. These are the exact rules (integers and Fractions only):

* **float32 log2, floored** (:func:`fp32_log2_floor`): floor(RN32(log2 x)) for a positive
  float32 value x, where RN32 is rounding to the nearest float32. It is floor(log2 x) = k - 1
  for x in [2^(k-1), 2^k), except where x lies so close below 2^k that log2 x = k - delta rounds
  up to the integer k: iff delta < h_k, half the float32 spacing just below k (k > 0: 2^(p-24),
  or 2^(p-25) where k = 2^p starts its binade, p = floor(log2 k); k < 0: 2^(p-24), p =
  floor(log2 |k|); k = 0 never: -delta is a float32 of its own). delta < 2^-j iff
  x > 2^k * 2^(-2^-j): see :func:`log2_rounds_up_threshold`. torch 2.13's CPU ``log2`` is
  correctly rounded at every float32 within 3000 steps below each power of two 2^-148 .. 2^128
  (measured on the machine of the tests: x86-64, vectorized and scalar tails alike), so this
  rule is torch's there; elsewhere in a binade no 1-ulp error can change the floor. Another CPU
  or build may differ at those points (a profile notes it).
* **microxcaling element rounding** (:func:`fp32_log2_element`): an element value a (a float32,
  already divided by the block scale) has the binade pe = max(fp32_log2_floor(|a|), emin) (a
  zero: 0; integer elements: no binade, the grid is 2^-frac_bits); v = |a| / 2^(pe - m) (exact,
  m the mantissa bits); then ``rna`` ('nearest'): r = floor(RN32(v + 1/2)); ``rne`` ('even'):
  the same minus 1 where v - 1/2 is an even integer (RN32(v - 1/2) is exact there); ``rtz``
  ('floor'): floor(v). RN32(v + 1/2) double-rounds: a v just under 1/2 whose sum with 1/2 lies
  within half a float32 step of 1 gives r = 1. The value is r * 2^(pe - m), clamped to max
  normal (saturating).

Each rule is computed once, on integers: a value is a ratio n / d (the float32 values here are
dyadic, n / 2^k) and RN32 is :func:`fp32_round`, the encoder's rounding onto the float32 grid
giving S * 2^q. The ``*_ratio`` functions take and give such integers (the block quantizer calls
them per element); the functions of a Fraction read its numerator and denominator and call them.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import isqrt

from ..formats import get_format
from ..options.quantize import FP32_STEP_ROUNDINGS
from .encode import round_ratio_to_grid
from .exact import dyadic, floor_log2_ratio

__all__ = [
    "FP32_STEP_ROUNDINGS",
    "log2_rounds_up_threshold",
    "log2_rounds_down_threshold",
    "log2_half_spacing_bits",
    "fp32_log2_floor",
    "fp32_log2_floor_ratio",
    "fp32_log2_ceil",
    "fp32_log2_element",
    "fp32_log2_element_ratio",
    "fp32_rne",
    "fp32_round",
    "is_fp32",
    "is_fp32_ratio",
]

_PRECISION = 128  # fraction bits of the fixed-point square roots of 2
_FP32 = get_format("fp32")
_RNE = ("rne", False, None, 32)  # round_ratio_to_grid's rounding arguments: nearest-even, magnitude
_FP32_TOP_GRID = _FP32.emax - _FP32.mantissa_bits  # the float32 maximum is max_significand * 2^this


def fp32_round(n: int, d: int) -> tuple[int, int]:
    """RN32(n / d) of a magnitude (integers n >= 0, d > 0, not necessarily reduced) as (S, q), the
    value S * 2^q (S an integer, (0, 0) for zero): nearest-even at the binade of n / d (fp32's
    smallest normal binade for subnormals: steps of 2^-149), saturating at the float32 maximum
    (2^24 - 1) * 2^104, as the encoder's rounding (:func:`mxsim.ref.encode.round_ratio_to_grid`)
    gives it. (Saturating nearest-even is min(unbounded nearest-even, maximum).)"""
    if not n:
        return 0, 0
    significand, grid = round_ratio_to_grid(n, d, _FP32, _RNE)
    if grid >= _FP32_TOP_GRID and significand << (grid - _FP32_TOP_GRID) > _FP32.max_significand:
        return _FP32.max_significand, _FP32_TOP_GRID
    return significand, grid


def fp32_rne(q: Fraction) -> Fraction:
    """q rounded to the nearest float32 (ties to even, subnormals kept, saturating; a negative q
    that rounds to zero gives 0): :func:`fp32_round` of |q| with q's sign."""
    n, d = q.numerator, q.denominator
    significand, grid = fp32_round(abs(n), d)
    value = dyadic(significand, grid)
    return -value if n < 0 else value


def is_fp32(q: Fraction) -> bool:
    """Whether q is exactly a finite float32 value."""
    return is_fp32_ratio(abs(q.numerator), q.denominator)


def is_fp32_ratio(n: int, d: int) -> bool:
    """Whether the magnitude n / d (integers n >= 0, d > 0) is exactly a finite float32 value: its
    :func:`fp32_round` equals it."""
    significand, grid = fp32_round(n, d)
    return (significand << grid) * d == n if grid >= 0 else significand * d == n << -grid


def _root_of_two_bounds(j: int) -> tuple[int, int]:
    """(low, high) with low <= 2^(2^-j) * 2^P <= high, P = _PRECISION: j square roots of 2 taken in
    fixed point from below and from above (integers only)."""
    if j < 1:
        raise ValueError(f"j={j} must be at least 1")
    low = high = 2 << _PRECISION
    for _ in range(j):
        low = isqrt(low << _PRECISION)
        high = isqrt(high << _PRECISION) + 1
    return low, high


@lru_cache(maxsize=None)
def log2_rounds_up_threshold(j: int, bits: int) -> int:
    """The smallest integer S with S > 2^bits * 2^(-2^-j) (never equal: irrational for j >= 1).

    j square roots of 2 taken in fixed point from below and from above (integers only); the
    quotient's floor must agree between the two bounds."""
    low, high = _root_of_two_bounds(j)
    # 2^(2^-j) * 2^P lies in [low, high]; R = 2^(bits + P) / 2^(2^-j) * 2^-P lies between:
    numerator = 1 << (bits + _PRECISION)
    floor_high, floor_low = numerator // low, numerator // high
    if floor_high != floor_low:  # pragma: no cover - 128 bits leave a margin of about 2^-100
        raise ArithmeticError(f"log2_rounds_up_threshold({j}, {bits}) needs more precision")
    return floor_low + 1


def log2_rounds_down_threshold(j: int, bits: int) -> int:
    """The smallest integer S with S > 2^bits * 2^(2^-j) (never equal: irrational for j >= 1): an
    S * 2^q in (2^bits * 2^q, that) has a log2 within 2^-j above the integer. Bounds as
    :func:`log2_rounds_up_threshold`."""
    low, high = _root_of_two_bounds(j)
    floor_low, floor_high = (low << bits) >> _PRECISION, (high << bits) >> _PRECISION
    if floor_high != floor_low:  # pragma: no cover - 128 bits leave a margin of about 2^-100
        raise ArithmeticError(f"log2_rounds_down_threshold({j}, {bits}) needs more precision")
    return floor_low + 1


def log2_half_spacing_bits(k: int) -> int | None:
    """j with 2^-j half the float32 spacing just below the integer k (None for k = 0: no
    float32 log2 rounds up to 0). See the module docstring."""
    if k == 0:
        return None
    p = abs(k).bit_length() - 1
    return 24 - p + (k > 0 and k == 1 << p)


def _positive_ratio(x: Fraction) -> tuple[int, int]:
    """(numerator, denominator) of a positive Fraction (or int); ValueError otherwise."""
    n, d = x.numerator, x.denominator
    if n <= 0:
        raise ValueError("floor_log2 needs a positive value")
    return n, d


def _fp32_significand(n: int, d: int, e: int) -> tuple[int, int]:
    """(S, q) with n / d = S * 2^q, q = max(e - 23, -149), e = floor(log2(n / d)): the integer
    significand of a float32 value (24 bits, or subnormal steps 2^-149); ValueError where S is
    not an integer (n / d is no float32 value)."""
    q = max(e - 23, -149)
    significand, rest = divmod(n, d << q) if q >= 0 else divmod(n << -q, d)
    if rest:
        raise ValueError(f"{Fraction(n, d)} is not a float32 value")
    return significand, q


def fp32_log2_floor(x: Fraction) -> int:
    """floor(RN32(log2 x)) of a positive float32 value x (see the module docstring)."""
    return fp32_log2_floor_ratio(*_positive_ratio(x))


def fp32_log2_floor_ratio(n: int, d: int) -> int:
    """:func:`fp32_log2_floor` of x = n / d (integers n, d > 0, not necessarily reduced)."""
    e = floor_log2_ratio(n, d)
    k = e + 1
    j = log2_half_spacing_bits(k)
    if j is None:
        return e
    significand, q = _fp32_significand(n, d, e)
    return k if significand >= log2_rounds_up_threshold(j, k - q) else e


def fp32_log2_ceil(x: Fraction) -> int:
    """ceil(RN32(log2 x)) of a positive float32 value x (Quark's 'ceil' mode; contract 6.2): the
    exact ceiling, except for x a few float32 steps above a power of two 2^e (e != 0), whose log2
    rounds down to e (half the float32 spacing just above e is 2^-j, j = log2_half_spacing_bits(-e))."""
    n, d = _positive_ratio(x)
    e = floor_log2_ratio(n, d)
    if (n == d << e) if e >= 0 else (n << -e == d):  # x = 2^e
        return e
    j = log2_half_spacing_bits(-e)
    if j is None:  # e = 0: log2 x in (0, 1) is a float32 of its own
        return e + 1
    significand, q = _fp32_significand(n, d, e)
    return e if significand < log2_rounds_down_threshold(j, e - q) else e + 1


def fp32_log2_element(a: Fraction, element, rounding: str) -> Fraction:
    """The magnitude microxcaling's element step gives for the float32 value ``a`` (its sign
    is the caller's): see the module docstring. Clamped to the element's max normal."""
    return Fraction(*fp32_log2_element_ratio(abs(a.numerator), a.denominator, element, rounding))


def fp32_log2_element_ratio(n: int, d: int, element, rounding: str) -> tuple[int, int]:
    """:func:`fp32_log2_element` of the magnitude |a| = n / d (integers n >= 0, d > 0, not
    necessarily reduced), as integers (numerator, denominator), not necessarily reduced. Dyadic
    arithmetic: the element grid is 2^g, so v = |a| / 2^g and v +- 1/2 are ratios of integers."""
    if rounding not in FP32_STEP_ROUNDINGS:
        raise ValueError(
            f"rounding={rounding!r} is not allowed with element_arith='fp32_log2'; expected one of: "
            f"{', '.join(FP32_STEP_ROUNDINGS)}"
        )
    if element.kind == "float":
        binade = max(fp32_log2_floor_ratio(n, d), element.emin) if n else 0
        g = binade - element.mantissa_bits
    else:
        g = -element.frac_bits
    vn, vd = (n, d << g) if g >= 0 else (n << -g, d)  # v = |a| / 2^g = vn / vd
    if rounding == "rtz":
        r = vn // vd
    else:
        significand, q = fp32_round(2 * vn + vd, 2 * vd)  # RN32(v + 1/2)
        r = significand << q if q >= 0 else significand >> -q
        if rounding == "rne":  # minus 1 where t = RN32(v - 1/2) is an even integer (t >= 0; -0 reads as 0)
            above = 2 * vn >= vd
            significand, q = fp32_round(abs(2 * vn - vd), 2 * vd)
            if not significand:
                r -= 1
            elif above and (q >= 0 or not significand & ((1 << -q) - 1)):
                r -= not (significand << q if q >= 0 else significand >> -q) & 1
    top = element.max_normal
    if (r << g) * top.denominator > top.numerator if g >= 0 else r * top.denominator > top.numerator << -g:
        return top.numerator, top.denominator
    return (r << g, 1) if g >= 0 else (r, 1 << -g)
