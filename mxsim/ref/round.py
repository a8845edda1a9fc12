"""Rounding a non-negative rational to an integer: the one rounding rule of the reference model.

Every encoder (float and integer elements, later block elements and accumulators) reduces its
rounding to this: ``round_magnitude(n, d, ...)`` rounds the magnitude n/d of a signed value to an
integer. ``negative`` says which sign the value has, for the directed modes rup and rdn.
"""

from __future__ import annotations

from .exact import as_int

__all__ = ["CUT_ROUNDING", "round_magnitude", "round_shift"]

#: A cut of a datapath value to a grid (``shift_rounding``, ``sum_rounding``) as a rounding of
#: :func:`round_magnitude`: truncate is toward zero, floor toward minus infinity (an arithmetic right
#: shift of the two's-complement value: a negative magnitude rounds up).
CUT_ROUNDING = {"truncate": "rtz", "rne": "rne", "floor": "rdn"}


def round_magnitude(
    numerator: int,
    denominator: int,
    rounding: str,
    negative: bool,
    rand_bits: int | None = None,
    rand_width: int = 32,
) -> int:
    """Round the magnitude ``numerator / denominator`` (both >= 0, denominator > 0) to an integer.

    ``rounding`` is one of rne, rna, rtz, rup, rdn, stochastic (see :mod:`mxsim.options.encode`).
    ``stochastic`` returns floor(n/d + rand_bits / 2^rand_width); ``rand_bits`` (an int or a NumPy
    integer) must lie in [0, 2^rand_width).
    """
    if numerator < 0 or denominator <= 0:
        raise ValueError("round_magnitude needs numerator >= 0 and denominator > 0")
    floor, remainder = divmod(numerator, denominator)
    if rounding == "stochastic":
        bits = as_int(rand_bits)
        if bits is None or not 0 <= bits < (1 << rand_width):
            raise ValueError(f"rand_bits={rand_bits!r} is not allowed; expected an integer in [0, 2^{rand_width})")
        rand_bits = bits
        # floor(q + r/2^R) = floor((floor(q * 2^R) + r) / 2^R): only R bits below the LSB count.
        return ((numerator << rand_width) // denominator + rand_bits) >> rand_width
    if remainder == 0:
        return floor
    if rounding == "rne":  # (the common mode first)
        twice = 2 * remainder
        return floor + (twice > denominator or (twice == denominator and floor & 1))
    if rounding == "rtz":
        return floor
    if rounding == "rup":
        return floor + (not negative)
    if rounding == "rdn":
        return floor + negative
    twice = 2 * remainder
    if twice != denominator:
        return floor + (twice > denominator)
    if rounding == "rna":
        return floor + 1
    raise ValueError(f"rounding={rounding!r} is not allowed")


def round_shift(
    magnitude: int,
    shift: int,
    rounding: str,
    negative: bool,
    rand_bits: int | None = None,
    rand_width: int = 32,
) -> int:
    """``round_magnitude(magnitude, 2^shift, ...)``: a magnitude (>= 0) shifted right by ``shift``
    bits and rounded; a ``shift`` <= 0 is an exact left shift (nothing to round), and ``rtz`` is
    the right shift itself (floor of a non-negative value)."""
    if shift <= 0:
        return magnitude << -shift
    if rounding == "rtz":
        return magnitude >> shift
    return round_magnitude(magnitude, 1 << shift, rounding, negative, rand_bits, rand_width)
