"""The rounding-decision classes of a dot's output rounding (contract sections 3.3, 4 and 4.1): the
exact value a block Dot or a fused step rounds to the accumulator's output format, classified by
the one routine of every suite kind, :func:`.rounding_classes.decision_flags`, here on exact
Fractions (a fused step's sum has up to 70 significant bits and more; binary64 cannot hold it).

For a magnitude x > 0 rounded to an output float with m fraction bits and smallest normal
exponent emin: the ulp is 2^(max(floor(log2 x), emin) - m), lo = x cut to it, hi = lo + ulp;
the resolution r (the bottom sticky position) is 2^low, ``low`` the exponent of the datapath's
lowest bit (see the callers: a separate Dot's register LSB times its scales, a fused step's grid
or C's LSB). A value whose rounding with unbounded exponent exceeds the output's largest finite
value (an overflow) gets no class; nor do zeros, NaN and Inf.
"""

from __future__ import annotations

from fractions import Fraction

from ...ref.exact import floor_log2
from .catalogue import class_names
from .rounding import decision_flags

__all__ = ["NO_LOW", "output_rounding_classes", "dyadic_rounding_flags"]

TWO = Fraction(2)
NO_LOW = -(1 << 63)  # ``low`` of a rounding with no fixed lowest bit, in int64 arrays (None in the scalar routines)


def output_rounding_classes(magnitude: Fraction, negative: bool, low: int | None, out, result: Fraction) -> set[str]:
    """The decision classes of rounding the exact ``magnitude`` (> 0; of sign ``negative``) to the
    float format ``out``, giving a finite output of magnitude ``result``; ``low``: the exponent of
    the datapath's lowest bit, or None when none is fixed (then r is taken below every bit of x,
    so no near_tie_bottom or near_tie_below). Dyadic values (every value a datapath rounds) go
    through :func:`dyadic_rounding_flags`; any other through the same routine on Fractions."""
    d, rd = magnitude.denominator, result.denominator
    if d & (d - 1) or rd & (rd - 1):
        return _fraction_classes(magnitude, negative, low, out, result)
    return set(class_names(dyadic_rounding_flags(magnitude.numerator, 1 - d.bit_length(), negative, low, out, result)))


def dyadic_rounding_flags(n: int, x: int, negative: bool, low: int | None, out, result: Fraction) -> int:
    """The flags word of :func:`output_rounding_classes` of the magnitude n * 2^x (integers, n > 0)
    rounded to a finite ``result`` (a Fraction whose denominator is a power of two): every quantity
    as a Python integer on a common grid 2^E below all of them (the classes compare linear
    quantities and test hi for a power of two, both unchanged by a common power-of-two factor)."""
    rn, rx = result.numerator, 1 - result.denominator.bit_length()  # result = rn * 2^rx
    ulp = max(n.bit_length() - 1 + x, out.emin) - out.mantissa_bits
    if low is None:  # no fixed lowest bit: half x's lowest set bit, which neither near-tie can match
        low = (n & -n).bit_length() - 1 + x - 1
    grid = min(x, rx, ulp, low, out.emin)
    value = n << (x - grid)
    u = 1 << (ulp - grid)
    lo = value - value % u
    return decision_flags(value, lo, lo + u, 1 << (low - grid), rn << (rx - grid), negative, 1 << (out.emin - grid))


def _fraction_classes(magnitude: Fraction, negative: bool, low: int | None, out, result: Fraction) -> set[str]:
    t = floor_log2(magnitude)
    ulp = TWO ** (max(t, out.emin) - out.mantissa_bits)
    lo = (magnitude // ulp) * ulp
    if low is None:
        n = magnitude.numerator
        low = floor_log2(Fraction(n & -n, magnitude.denominator)) - 1
    resolution = TWO**low
    flags = decision_flags(magnitude, lo, lo + ulp, resolution, result, negative, TWO**out.emin)
    return set(class_names(flags))
