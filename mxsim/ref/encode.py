"""Reference encoder: one exact value to an element code (integers and Fractions only).

The value is rounded once, on the grid of the format at the value's own binade (the grid of the
smallest normal binade for subnormals), then checked for overflow. See :mod:`mxsim.options.encode` for the
rounding and overflow modes.
"""

from __future__ import annotations

from fractions import Fraction

from ..formats import get_format
from ..options.encode import check_encode_options, check_int8_allow_neg2, overflow_code
from .exact import Exact, Number, floor_log2, to_exact
from .round import round_magnitude

__all__ = ["encode", "round_to_grid"]


def encode(
    x: Number,
    fmt,
    rounding: str = "rne",
    overflow: str = "saturate",
    *,
    rand_bits: int | None = None,
    rand_width: int = 32,
    int8_allow_neg2: bool = False,
) -> int:
    """Encode the exact value of ``x`` (int, Fraction, float, or :class:`Exact`) into ``fmt``.

    * NaN: the format's canonical NaN code with the input's sign bit; ValueError for formats
      without NaN (FP6, FP4, integers, unless a block rule handles it first).
    * +-Inf and finite overflow: per ``overflow`` (saturate / ieee / error, see mxsim.options.encode).
    * -0 and negative values that round to zero: -0 in float formats and sign-magnitude
      integers; 0 in two's-complement integers (they have no -0).
    * Unsigned formats (e8m0, ue4m3): ValueError for negative input; -0 encodes as +0.
    * Formats without subnormals (e8m0) have no zero: zero raises ValueError, and a magnitude below
      the smallest normal encodes as the smallest normal.
    * Two's-complement integers: the most negative code (MXINT8 0x80 = -2.0) is produced only with
      ``int8_allow_neg2=True``; otherwise -max_int is the negative saturation value.
      ``int8_allow_neg2=True`` for any other format is a ValueError (it does not apply there).

    Returns the code as an int in [0, 2^width).
    """
    fmt = get_format(fmt, kind="element")
    check_encode_options(rounding, overflow, rand_bits, rand_width)
    check_int8_allow_neg2(fmt, int8_allow_neg2)
    x = to_exact(x)
    negative = bool(x.sign) and fmt.signed
    if x.is_nan:
        if not fmt.has_nan:
            raise ValueError(f"NaN input cannot be encoded: format {fmt.name!r} has no NaN")
        return fmt.nan_code(negative)
    if x.sign and not fmt.signed and not x.is_zero:
        raise ValueError(f"negative input {x} cannot be encoded: format {fmt.name!r} is unsigned")
    if x.is_inf:
        return overflow_code(fmt, negative, overflow, rounding, infinite_input=True, int8_allow_neg2=int8_allow_neg2)
    rounding_args = (rounding, negative, rand_bits, rand_width)
    if fmt.kind == "int":
        return _encode_int(x, fmt, overflow, rounding_args, int8_allow_neg2)
    return _encode_float(x, fmt, overflow, rounding_args)


def round_to_grid(magnitude: Fraction, fmt, rounding_args) -> tuple[int, int]:
    """Round a positive magnitude on the format's grid with unbounded exponent range.

    Returns (significand, grid) with rounded value significand * 2^grid; grid is the exponent of
    the last significand bit at the magnitude's binade (the smallest normal binade for
    subnormals) for floats, and -frac_bits for integers. ``rounding_args`` are
    (rounding, negative, rand_bits, rand_width) as for :func:`round_magnitude`.
    """
    if fmt.kind == "int":
        grid = -fmt.frac_bits
    else:
        grid = max(floor_log2(magnitude), fmt.emin) - fmt.mantissa_bits
    scaled = magnitude / Fraction(2) ** grid
    return round_magnitude(scaled.numerator, scaled.denominator, *rounding_args), grid


def _encode_int(x: Exact, fmt, overflow: str, rounding_args, int8_allow_neg2: bool) -> int:
    rounding, negative = rounding_args[:2]
    q = round_to_grid(x.magnitude, fmt, rounding_args)[0]
    limit = fmt.max_int
    if negative and fmt.encoding == "twos_complement" and int8_allow_neg2:
        limit += 1
    if q > limit:
        return overflow_code(fmt, negative, overflow, rounding, int8_allow_neg2=int8_allow_neg2, value_text=str(x))
    if fmt.encoding == "sign_magnitude":
        return (fmt.sign_mask if negative else 0) | q
    return (-q if negative else q) & ((1 << fmt.bits) - 1)


def _encode_float(x: Exact, fmt, overflow: str, rounding_args) -> int:
    rounding, negative = rounding_args[:2]
    sign_bits = fmt.sign_mask if negative else 0
    magnitude = x.magnitude
    if magnitude == 0:
        if not fmt.has_zero:
            raise ValueError(f"zero cannot be encoded: format {fmt.name!r} has no zero")
        return sign_bits
    if magnitude < fmt.min_normal and not fmt.subnormals:
        return sign_bits  # field 0 is the smallest normal binade; nothing lies below it
    m = fmt.mantissa_bits
    significand, grid = round_to_grid(magnitude, fmt, rounding_args)
    if significand * Fraction(2) ** grid > fmt.max_normal:
        return overflow_code(fmt, negative, overflow, rounding, value_text=str(x))
    if significand == 0:
        return sign_bits
    if significand == 1 << (m + 1):  # rounding carried into the next binade
        significand, grid = significand >> 1, grid + 1
    if significand < 1 << m:  # subnormal: exponent field 0
        return sign_bits | significand
    field = grid + m + fmt.bias
    return sign_bits | (field << m) | (significand - (1 << m))
