"""Exact extended-real values for the reference model: a sign bit, a kind, and a rational magnitude.

A :class:`fractions.Fraction` cannot carry -0, Inf or NaN, so the reference model passes
:class:`Exact` values around. Conversions from Python numbers are exact: a ``float`` is read
through ``float.as_integer_ratio`` (its exact binary value), never computed with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Union

__all__ = ["Exact", "as_int", "to_exact", "ratio", "float_ratio", "floor_log2", "floor_log2_ratio", "dyadic"]

_ZERO = Fraction(0)


@dataclass(frozen=True)
class Exact:
    """(-1)^sign * magnitude, or +-Inf, or NaN (with a sign bit, as encodings carry one).

    ``magnitude`` is a non-negative Fraction (0 for Inf and NaN).
    """

    sign: int
    magnitude: Fraction = Fraction(0)
    kind: Literal["finite", "inf", "nan"] = "finite"

    def __post_init__(self) -> None:
        if self.sign not in (0, 1):
            raise ValueError(f"Exact.sign must be 0 or 1, got {self.sign!r}")
        if self.kind not in ("finite", "inf", "nan"):
            raise ValueError(f"Exact.kind must be 'finite', 'inf' or 'nan', got {self.kind!r}")
        magnitude = self.magnitude
        if (magnitude.numerator < 0) if magnitude.__class__ is Fraction else magnitude < 0:
            raise ValueError("Exact.magnitude must be non-negative; the sign lives in Exact.sign")

    @classmethod
    def trusted(cls, sign: int, magnitude: Fraction, kind: str = "finite") -> "Exact":
        """An Exact built without the checks of ``__post_init__``, for the reference's own hot paths,
        whose values hold the invariants by construction (sign 0 or 1, a non-negative Fraction
        magnitude, 0 for Inf and NaN). Equal to ``Exact(sign, magnitude, kind)`` in every way: the
        fields go straight into the instance dict, where the dataclass keeps them (about 5x
        cheaper than the frozen dataclass's ``__init__``)."""
        x = object.__new__(cls)
        fields = x.__dict__
        fields["sign"] = sign
        fields["magnitude"] = magnitude
        fields["kind"] = kind
        return x

    @classmethod
    def nan(cls, sign: int = 0) -> "Exact":
        if sign not in (0, 1):
            raise ValueError(f"Exact.sign must be 0 or 1, got {sign!r}")
        return cls.trusted(sign, _ZERO, "nan")

    @classmethod
    def inf(cls, sign: int = 0) -> "Exact":
        if sign not in (0, 1):
            raise ValueError(f"Exact.sign must be 0 or 1, got {sign!r}")
        return cls.trusted(sign, _ZERO, "inf")

    @property
    def is_nan(self) -> bool:
        return self.kind == "nan"

    @property
    def is_inf(self) -> bool:
        return self.kind == "inf"

    @property
    def is_finite(self) -> bool:
        return self.kind == "finite"

    @property
    def is_zero(self) -> bool:
        return self.kind == "finite" and not self.magnitude

    @property
    def value(self) -> Fraction:
        """The signed rational value (-0 becomes 0). Raises ValueError for Inf and NaN."""
        if self.kind != "finite":
            raise ValueError(f"{self} has no rational value")
        return -self.magnitude if self.sign else self.magnitude

    def __str__(self) -> str:
        sign = "-" if self.sign else ""
        if self.kind == "nan":
            return f"{sign}nan"
        if self.kind == "inf":
            return f"{sign}inf"
        return f"{sign}{self.magnitude}"


Number = Union[Exact, int, Fraction, float]


def _dtype_kind(x) -> str | None:
    """The NumPy kind letter of a NumPy / ml_dtypes scalar (0-d), else None (no NumPy import)."""
    dtype = getattr(x, "dtype", None)
    return dtype.kind if dtype is not None and getattr(x, "shape", None) == () else None


def as_int(x) -> int | None:
    """``x`` as a Python int if it is an integer: a Python int or a NumPy integer scalar (any
    width, signed or unsigned, any byte order). None for anything else, bool and numpy.bool_
    included (a truth value is not a code, an index or a count)."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    return int(x) if _dtype_kind(x) in ("i", "u") else None


def to_exact(x: Number) -> Exact:
    """Convert an int, Fraction, float (exactly, -0.0/inf/nan included) or Exact to Exact.

    NumPy integer scalars and float16/bfloat16/float32/float64 scalars are accepted too (every
    one of them is exactly a Python int or float)."""
    if x.__class__ is float:  # the common case, read without the checks below
        return _float_to_exact(x)
    if isinstance(x, Exact):
        return x
    if isinstance(x, bool) or _dtype_kind(x) == "b":
        raise ValueError("a bool is not a number here; pass an int, Fraction, float or Exact")
    if as_int(x) is not None:
        x = as_int(x)
    elif _dtype_kind(x) is not None and x.dtype.name in ("float16", "bfloat16", "float32", "float64"):
        x = float(x)  # NumPy / ml_dtypes float scalars: widened exactly
    if isinstance(x, (int, Fraction)):
        return Exact(int(x < 0), abs(Fraction(x)))
    if isinstance(x, float):
        return _float_to_exact(x)
    raise ValueError(f"cannot read {type(x).__name__} {x!r} as an exact value; pass an int, Fraction, float or Exact")


_INFINITIES = frozenset((math.inf, -math.inf))


def float_ratio(x: float) -> tuple[int, int, int]:
    """The exact value of a Python float as a *ratio* (sign, n, d): (-1)^sign * n / d with
    integers n >= 0 and d > 0 (here a power of two: ``float.as_integer_ratio``), or d = 0 for the
    non-finite values, n = 1 for Inf and n = 0 for NaN. ``sign`` is the float's sign bit (1 for
    -0.0, -inf and a NaN with its sign bit set). Integers only: nothing is computed with the float."""
    if x != x:
        return int(math.copysign(1.0, x) < 0), 0, 0
    if x in _INFINITIES:
        return int(x < 0), 1, 0
    n, d = x.as_integer_ratio()
    if n > 0:
        return 0, n, d
    if n < 0:
        return 1, -n, d
    return int(math.copysign(1.0, x) < 0), 0, 1  # +-0.0: the sign bit


def ratio(x: Number) -> tuple[int, int, int]:
    """``to_exact(x)`` as a ratio (sign, n, d) (see :func:`float_ratio`: d = 0 for Inf, n = 1,
    and NaN, n = 0; n / d is not necessarily reduced). The reference's hot paths carry values
    this way: three ints, no Fraction or Exact built for a float."""
    if x.__class__ is float:
        return float_ratio(x)
    if x.__class__ is not Exact:
        x = to_exact(x)
    if x.kind == "finite":
        magnitude = x.magnitude
        return x.sign, magnitude.numerator, magnitude.denominator
    return x.sign, int(x.kind == "inf"), 0


def _float_to_exact(x: float) -> Exact:
    sign, n, d = float_ratio(x)
    if d:
        return Exact.trusted(sign, Fraction(n, d))
    return Exact.inf(sign) if n else Exact.nan(sign)


def floor_log2(q: Fraction) -> int:
    """floor(log2(q)) of a positive rational, with integers only (trap T10: never a float log2)."""
    if (q.numerator <= 0) if q.__class__ is Fraction else q <= 0:
        raise ValueError("floor_log2 needs a positive value")
    return floor_log2_ratio(q.numerator, q.denominator)


def floor_log2_ratio(n: int, d: int) -> int:
    """floor(log2(n / d)) for integers n, d > 0 (the fraction need not be reduced)."""
    e = n.bit_length() - d.bit_length()
    # 2^e <= n/d < 2^(e+1) now holds up to one step; fix it with an exact integer comparison
    # of n and d * 2^e.
    if (n < d << e) if e >= 0 else (n << -e < d):
        e -= 1
    return e


def dyadic(significand: int, exponent: int) -> Fraction:
    """The Fraction significand * 2^exponent (integers only: a shift of the numerator or of the
    denominator, never a power computed as a Fraction)."""
    if exponent >= 0:
        return Fraction(significand << exponent)
    return Fraction(significand, 1 << -exponent)
