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

__all__ = ["output_rounding_classes"]

TWO = Fraction(2)


def output_rounding_classes(magnitude: Fraction, negative: bool, low: int | None, out, result: Fraction) -> set[str]:
    """The decision classes of rounding the exact ``magnitude`` (> 0; of sign ``negative``) to the
    float format ``out``, giving a finite output of magnitude ``result``; ``low``: the exponent of
    the datapath's lowest bit, or None when none is fixed (then r is taken below every bit of x,
    so no near_tie_bottom or near_tie_below)."""
    t = floor_log2(magnitude)
    ulp = TWO ** (max(t, out.emin) - out.mantissa_bits)
    lo = (magnitude // ulp) * ulp
    if low is None:  # no fixed lowest bit: half x's lowest set bit, which neither near-tie can match
        n = magnitude.numerator
        low = floor_log2(Fraction(n & -n, magnitude.denominator)) - 1
    resolution = TWO**low
    flags = decision_flags(magnitude, lo, lo + ulp, resolution, result, negative, TWO**out.emin)
    return set(class_names(flags))
