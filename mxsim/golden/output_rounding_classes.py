"""Corner classes of a dot's output rounding (contract sections 3.3, 4 and 4.1): where the exact value
rounded to the accumulator's output format lies against that format's grid, and the sign of a
zero result. One routine per rule, shared by the separate datapath (a block's rounding), fused
steps (every step's rounding) and the fast path's flags.

For an exact nonzero finite value v rounded to an output float format with m fraction bits and
smallest normal exponent emin: t = floor(log2 |v|), the ulp is 2^u with u = max(t, emin) - m,
and r = |v| mod 2^u is the remainder the rounding decides on (integers and Fractions only):

* ``round_below_half``: 0 < r < 2^(u-1); ``tie``: r = 2^(u-1) (half, no sticky bit);
  ``round_above_half``: r > 2^(u-1) (half with sticky bits);
* ``near_tie_top``: r = 2^(u-1) + 2^(u-2): the guard bit and exactly one sticky bit, at the
  highest sticky position;
* ``near_tie_bottom``: r = 2^(u-1) + 2^low: the guard bit and exactly one sticky bit, at the
  lowest bit position ``low`` the datapath holds (see the callers for ``low``; when the datapath
  holds one sticky position only, low = u - 2 and the vector is in both near-tie classes);
* ``tie_subnormal`` / ``near_tie_subnormal``: a tie / a near-tie (top or bottom) with t < emin;
* per rounding mode (from the output code the design gives): ``round_increment`` (inexact, the
  result's magnitude above |v|), ``round_truncate`` (inexact, the magnitude below |v|).

A value beyond the output's largest finite magnitude after rounding with unbounded exponent
(overflow), a zero, NaN and Inf get none of these.

``zero_result_sign``: the result is a zero whose sign a rule decides, not a zero input: a nonzero
exact value that rounded or flushed to zero, a sum of nonzero terms that is exactly zero, or
terms of negative sign (a -0 C, a negative zero product).
"""

from __future__ import annotations

from fractions import Fraction

from ..ref.exact import floor_log2

__all__ = ["ROUNDING_CLASSES", "rounding_position_classes", "zero_result_sign"]

ROUNDING_CLASSES = ("round_below_half", "tie", "round_above_half", "near_tie_top", "near_tie_bottom",
                    "tie_subnormal", "near_tie_subnormal", "round_increment", "round_truncate")


def rounding_position_classes(magnitude: Fraction, low: int | None, out, result: Fraction | None) -> set[str]:
    """The rounding classes (module docstring) of rounding the exact magnitude ``magnitude`` (> 0)
    to the float format ``out``; ``low``: the exponent of the datapath's lowest bit position, or
    None when it has none (then no ``near_tie_bottom``); ``result``: the magnitude of the output
    the design gave (finite), or None for an overflow (then no class)."""
    if not magnitude or result is None:
        return set()
    t = floor_log2(magnitude)
    u = max(t, out.emin) - out.mantissa_bits
    scaled = magnitude / Fraction(2) ** u if u >= 0 else magnitude * (1 << -u)
    remainder = scaled - (scaled.numerator // scaled.denominator)  # r / 2^u, in [0, 1)
    if not remainder:
        return set()
    classes = {"round_increment" if result > magnitude else "round_truncate"}
    half = Fraction(1, 2)
    if remainder < half:
        classes.add("round_below_half")
        return classes
    if remainder == half:
        classes.add("tie")
        if t < out.emin:
            classes.add("tie_subnormal")
        return classes
    classes.add("round_above_half")
    sticky = remainder - half
    near = set()
    if sticky == Fraction(1, 4):
        near.add("near_tie_top")
    if low is not None and low <= u - 2 and sticky == Fraction(2) ** (low - u):
        near.add("near_tie_bottom")
    if near and t < out.emin:
        near.add("near_tie_subnormal")
    return classes | near


def zero_result_sign(result_is_zero: bool, exact_nonzero: bool, nonzero_terms: bool, negative_terms: bool) -> bool:
    """Whether a result is in ``zero_result_sign``: it is a zero, and the exact value was nonzero,
    or nonzero terms summed to it, or a term had a negative sign (a -0 C, a negative zero product)."""
    return result_is_zero and (exact_nonzero or nonzero_terms or negative_terms)
