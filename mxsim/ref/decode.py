"""Reference decoder: one element code to its exact value (integers and Fractions only)."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..formats import get_format
from .exact import Exact, as_int

__all__ = ["decode", "finite_magnitudes"]


def _check_code(code, fmt) -> int:
    """``code`` as a Python int (a NumPy integer scalar is fine); ValueError unless it is an
    integer in [0, 2^width)."""
    value = as_int(code)
    if value is None or not 0 <= value < (1 << fmt.width):
        raise ValueError(
            f"code {code!r} is out of range for format {fmt.name!r}: expected an integer in [0, {hex((1 << fmt.width) - 1)}]"
        )
    return value


def decode(code: int, fmt) -> Exact:
    """Decode ``code`` (an int or NumPy integer in [0, 2^width)) of an element/scale format to an
    :class:`Exact`.

    Float formats: NaN codes give NaN and Inf codes give +-Inf, each keeping the code's sign bit;
    the negative-zero code gives -0. Integer formats: q * 2^-frac_bits, where two's-complement
    codes at or above 2^(bits-1) are negative (MXINT8 0x80 is -2.0, always) and the
    sign-magnitude code with only the sign bit set is -0.
    """
    fmt = get_format(fmt, kind="element")
    code = _check_code(code, fmt)
    if fmt.kind == "int":
        return _decode_int(code, fmt)
    return _decode_float(code, fmt)


def _decode_int(code: int, fmt) -> Exact:
    step = Fraction(2) ** -fmt.frac_bits
    if fmt.encoding == "sign_magnitude":
        sign = code >> (fmt.bits - 1)
        return Exact(sign, (code & fmt.max_int) * step)
    q = code - (1 << fmt.bits) if code & fmt.sign_mask else code
    return Exact(int(q < 0), abs(q) * step)


def _decode_float(code: int, fmt) -> Exact:
    m = fmt.mantissa_bits
    sign = int(bool(code & fmt.sign_mask))
    field = (code >> m) & ((1 << fmt.exponent_bits) - 1)
    mantissa = code & ((1 << m) - 1)
    all_ones = (1 << fmt.exponent_bits) - 1
    if fmt.specials == "ieee" and field == all_ones:
        return Exact.nan(sign) if mantissa else Exact.inf(sign)
    if fmt.specials == "fn" and field == all_ones and mantissa == (1 << m) - 1:
        return Exact.nan(sign)
    if field == 0 and fmt.subnormals:
        significand, exponent = mantissa, fmt.emin
    else:
        significand, exponent = (1 << m) | mantissa, field - fmt.bias
    return Exact(sign, significand * Fraction(2) ** (exponent - m))


@lru_cache(maxsize=None)
def finite_magnitudes(fmt) -> tuple[Fraction, ...]:
    """The distinct finite non-negative values of an element or scale format, ascending (0 first
    where the format has a zero)."""
    fmt = get_format(fmt, kind="element")
    values = (decode(code, fmt) for code in range(1 << fmt.width))
    return tuple(sorted({v.magnitude for v in values if v.is_finite}))
