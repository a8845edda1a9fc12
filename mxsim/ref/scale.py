"""Shared power-of-two scale of a block: the scale rules, exactly (integers and Fractions only).

For a block with largest magnitude ``amax`` > 0 and element format with emax_elem, the unbiased
scale exponent E (scale = 2^E) before clamping is:

* ``floor`` (OCP MX 6.3): floor(log2 amax) - emax_elem;
* ``ceil``: ceil(log2 amax) - emax_elem;
* ``even`` (torchao EVEN): floor(log2(amax + 2^(e - f - 1))) - emax_elem, with e = floor(log2 amax)
  and f the element's significand fraction bits: amax rounded half-up to f fraction bits;
* ``rceil`` (NVIDIA): ceil(log2(amax / max_normal));
* ``tosa``: the smallest E for which amax / 2^E, rounded to nearest-even in the element format,
  does not exceed max_normal (floor, or floor + 1 where floor's element would saturate).

The E8M0 code is clamp(E, -127, 127) + 127.
"""

from __future__ import annotations

from fractions import Fraction

from .encode import round_to_grid
from .exact import floor_log2

__all__ = ["scale_exponent", "ceil_log2", "fraction_bits"]

E8M0_MIN, E8M0_MAX = -127, 127


def ceil_log2(q: Fraction) -> int:
    e = floor_log2(q)
    return e if q == Fraction(2) ** e else e + 1


def fraction_bits(element) -> int:
    """Significand fraction bits of the element's largest values: m for floats, and for integers
    the bits below the leading bit of max_int (6 for MXINT8)."""
    return element.mantissa_bits if element.kind == "float" else element.max_int.bit_length() - 1


def scale_exponent(amax: Fraction, element, rule: str) -> int:
    """The unclamped scale exponent E of a block with largest magnitude ``amax`` > 0."""
    if rule == "floor":
        return floor_log2(amax) - element.emax
    if rule == "ceil":
        return ceil_log2(amax) - element.emax
    if rule == "even":
        e = floor_log2(amax)
        return floor_log2(amax + Fraction(2) ** (e - fraction_bits(element) - 1)) - element.emax
    if rule == "rceil":
        return ceil_log2(amax / element.max_normal)
    if rule == "tosa":
        e = floor_log2(amax) - element.emax
        significand, grid = round_to_grid(amax / Fraction(2) ** e, element, ("rne", False, None, 32))
        return e + (significand * Fraction(2) ** grid > element.max_normal)
    raise ValueError(f"scale_rule={rule!r} is not allowed")
