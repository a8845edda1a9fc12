"""Code tables of the vectorized dot product: every element code's term, grid value, anchor and specials.

Built once per format (or format pair) from the reference's :func:`~mxsim.ref.dot.element_term`
(one rule, one place; docs/numerics.md section 4) and read with ``np.take`` by
:class:`mxsim.fast.dot_kernel._DotKernel` and the fused steps. Grid values are exact integers in
the dtype named; ``_NO_EXPONENT`` marks a code without an exponent (zero, Inf, NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..ref import dot as ref_dot

INT64_LIMIT = 1 << 62  # registers from here take Python ints
#: A cut to the grid of exact float64 values in units of the grid's LSB (``shift_rounding``): truncate
#: toward zero, rne nearest-even, floor toward minus infinity (as CUT_ROUNDING of the reference)
FLOAT_CUTS = {"truncate": np.trunc, "rne": np.rint, "floor": np.floor}
_NO_EXPONENT = -(1 << 20)  # below any anchor: sums of two stay far from int32 limits


def _taumax(fmt) -> int:
    """The largest sub-block microexponent of a format (0 without sub-blocks)."""
    return (1 << fmt.subscale_bits) - 1 if fmt.subblocks else 0


@dataclass(frozen=True)
class _Terms:
    """Every code of a format as a datapath term (see :class:`mxsim.ref.dot.Term`)."""

    negative: np.ndarray
    significand: np.ndarray  # int64, 0 for Inf and NaN
    exponent: np.ndarray  # int64
    nan: np.ndarray
    inf: np.ndarray
    zero: np.ndarray


@lru_cache(maxsize=None)
def _terms(element) -> _Terms:
    if element.width > 16:
        raise ValueError(f"format {element.name!r} has {element.width}-bit codes; the array path handles at most 16")
    terms = [ref_dot.element_term(code, element) for code in range(1 << element.width)]
    kinds = np.array([t.kind for t in terms])
    significand = np.array([t.significand for t in terms], dtype=np.int64)
    return _Terms(
        np.array([t.sign for t in terms], dtype=bool),
        significand,
        np.array([t.exponent for t in terms], dtype=np.int64),
        kinds == "nan",
        kinds == "inf",
        (kinds == "finite") & (significand == 0),
    )


@lru_cache(maxsize=None)
def _grid_table(fmt, dtype_name: str) -> np.ndarray:
    """Signed value of every element code (with tau = 0) in units of 2^(E_min - f). Times
    2^(taumax - tau) it is the element on the block format's fixed grid. Inf and NaN codes are
    0 in integer tables and +-Inf / NaN in float tables (whose products and sums then follow
    IEEE 754, which is the contract's rule for specials)."""
    t = _terms(fmt.element)
    shift = t.exponent - ref_dot.min_exponent(fmt.element)
    if np.dtype(dtype_name).kind == "i" and ref_dot.largest_grid_value(fmt).bit_length() > 62:
        # elements spanning more than int64 on the fixed grid (P3109 binary8p1: 2^-63 .. 2^62):
        # Python ints, for the Python-int routes
        return np.array([(-1 if n else 1) * (int(m) << int(e)) for n, m, e in zip(t.negative, t.significand, shift)],
                        dtype=object)
    values = t.significand << shift
    values = np.where(t.negative, -values, values).astype(dtype_name)
    if np.dtype(dtype_name).kind == "f":
        values[t.inf] = np.where(t.negative[t.inf], -np.inf, np.inf)
        values[t.nan] = np.nan
    return values


@lru_cache(maxsize=None)
def _anchor_table(fmt, wide: bool = False) -> tuple[np.ndarray, int]:
    """(table, sentinel): E of every element code (tau = 0), with zero, Inf and NaN codes at
    ``sentinel``, so low that no product with them can be the anchor. int8 when the
    exponents are small (faster lookups) and ``wide`` is False, else int32 (a pair whose other
    format is not small needs the int32 sentinel on both sides: P3109 binary8p1's exponents
    reach 62, more than the int8 sentinel's margin)."""
    t = _terms(fmt.element)
    finite_nonzero = t.significand != 0
    small = not wide and int(np.abs(t.exponent[finite_nonzero]).max(initial=0)) + _taumax(fmt) <= 15
    sentinel = -64 if small else _NO_EXPONENT
    table = np.where(finite_nonzero, t.exponent, sentinel).astype(np.int8 if small else np.int32)
    return table, sentinel


@lru_cache(maxsize=None)
def _pair_table(fmt_a, fmt_b, dtype_name: str) -> np.ndarray:
    """Product of every code pair on the fixed grid, indexed by (code_a << width_b) | code_b
    (IEEE specials: Inf * 0 = NaN, ...). For small formats without sub-blocks."""
    va = _grid_table(fmt_a, "float64")
    vb = _grid_table(fmt_b, "float64")
    with np.errstate(invalid="ignore"):
        return np.multiply.outer(va, vb).reshape(-1).astype(dtype_name)


@lru_cache(maxsize=None)
def _special_table(fmt) -> np.ndarray | None:
    """True for Inf and NaN codes; None if the element format has neither."""
    t = _terms(fmt.element)
    special = t.nan | t.inf
    return special if special.any() else None


@lru_cache(maxsize=None)
def _float32_values(fmt) -> np.ndarray | None:
    """float32 value of every element code (Inf/NaN included), or None if one is not exact."""
    t = _terms(fmt.element)
    f = ref_dot.frac_bits(fmt.element)
    values = np.ldexp(t.significand.astype(np.float64), t.exponent - f)
    values = np.where(t.nan, np.nan, np.where(t.inf, np.inf, values))
    values = np.where(t.negative, -values, values)
    narrow = values.astype(np.float32)
    finite = np.isfinite(values)
    if not np.array_equal(narrow[finite].astype(np.float64), values[finite]):
        return None
    return narrow


@lru_cache(maxsize=None)
def _terms_of_scale(scale_fmt):
    """(significand, exponent - frac_bits, is_nan) of every scale code: value = sig * 2^exp."""
    t = _terms(scale_fmt)
    return t.significand, t.exponent - ref_dot.frac_bits(scale_fmt), t.nan


def _dyadic(q: Fraction) -> tuple[int, int]:
    """A positive dyadic rational as (odd-or-1 significand, exponent)."""
    n, d = q.numerator, q.denominator
    if d & (d - 1):
        raise ValueError(f"tensor scale {q} is not a binary floating-point value")
    shift = (n & -n).bit_length() - 1
    return n >> shift, shift - (d.bit_length() - 1)


def _max_abs(table: np.ndarray) -> int:
    return int(np.abs(table.astype(np.int64)).max()) if table.size else 0
