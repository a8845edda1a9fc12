"""Reference decoder: one element code to its exact value (integers and Fractions only).

Codes of formats of at most :data:`TABLE_BITS` bits (every MX element and scale format) are
decoded once per format into a table (:func:`code_table`), which :func:`decode` then indexes;
wider formats (fp16, bf16, fp32) are decoded code by code, the last 2^17 codes of each kept (an
output is often read again). Both use the same rule, :func:`_decode_code`; values are immutable.
:func:`read_back` applies that rule to a code the reference has just rounded to, with no checks
and nothing kept.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..formats import get_format
from .exact import Exact, as_int, dyadic

__all__ = ["decode", "read_back", "code_table", "finite_magnitudes", "TABLE_BITS"]

TABLE_BITS = 8


def _check_code(code, fmt) -> int:
    """``code`` as a Python int (a NumPy integer scalar is fine); ValueError unless it is an
    integer in [0, 2^width)."""
    if code.__class__ is int and 0 <= code < 1 << fmt.width:  # the common case, checked first
        return code
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
    the negative-zero code gives -0 ('ieee', 'fn', 'none'); in 'fnuz' and 'p3109' formats that
    code (0x80) is the one NaN, with its sign bit set (as ml_dtypes reads it), and 'p3109' reads
    the all-ones magnitudes 0x7F / 0xFF as +-Inf (contract section 1). Integer formats:
    q * 2^-frac_bits, where two's-complement codes at or above 2^(bits-1) are negative (MXINT8
    0x80 is -2.0, always) and the sign-magnitude code with only the sign bit set is -0.
    """
    fmt = get_format(fmt, kind="element")
    code = _check_code(code, fmt)
    kept = _kept(fmt)
    if fmt.width <= TABLE_BITS:
        return kept[code]
    value = kept.get(code)  # a wide format: the values decoded lately (a result is often read again)
    if value is None:
        if len(kept) >= _RECENT_HELD:
            kept.clear()
        value = kept[code] = _decode_code(code, fmt)
    return value


def read_back(code: int, fmt) -> Exact:
    """The value of an output code the reference has just rounded to (a Python int the format
    holds; ``fmt`` a format object), read back: :func:`decode`'s rule without its checks and
    without keeping the value (a fused step's D is read once, as the next step's C; kept, the
    values of a suite's steps would only fill the cache of recent codes)."""
    return _decode_code(code, fmt)


def _kept(fmt):
    """The values :func:`decode` keeps for ``fmt``, found by identity (hashing a format costs more
    than decoding): its :func:`code_table`, or a dict code -> value of a wide format."""
    held = _TABLES.get(id(fmt))
    if held is None or held[0] is not fmt:
        if len(_TABLES) >= _TABLES_HELD:
            _TABLES.clear()
        held = _TABLES[id(fmt)] = (fmt, code_table(fmt) if fmt.width <= TABLE_BITS else {})
    return held[1]


_TABLES_HELD = 256  # format objects whose values decode keeps at hand (then it starts again)
_RECENT_HELD = 1 << 17  # decoded codes kept per wide format (then it starts again): a few tens of MB at most
# id(format) -> (format, its code_table, or a dict code -> value of a wide format); the format is held, so
# its id stays its own
_TABLES: dict = {}


@lru_cache(maxsize=None)
def code_table(fmt) -> tuple[Exact, ...]:
    """The decoded value of every code 0 .. 2^width - 1 of a format of at most TABLE_BITS bits."""
    if fmt.width > TABLE_BITS:
        raise ValueError(f"format {fmt.name!r} has {fmt.width}-bit codes; code tables hold formats of at most {TABLE_BITS}")
    return tuple(_decode_code(code, fmt) for code in range(1 << fmt.width))


def _decode_code(code: int, fmt) -> Exact:
    """The value of a checked code (built with Exact.trusted: sign 0/1 and a non-negative
    magnitude hold by construction)."""
    if fmt.kind == "int":
        return _decode_int(code, fmt)
    return _decode_float(code, fmt)


def _decode_int(code: int, fmt) -> Exact:
    if fmt.encoding == "sign_magnitude":
        sign = code >> (fmt.bits - 1)
        return Exact.trusted(sign, dyadic(code & fmt.max_int, -fmt.frac_bits))
    q = code - (1 << fmt.bits) if code & fmt.sign_mask else code
    return Exact.trusted(int(q < 0), dyadic(abs(q), -fmt.frac_bits))


def _decode_float(code: int, fmt) -> Exact:
    m = fmt.mantissa_bits
    sign = int(bool(code & fmt.sign_mask))
    field = (code >> m) & ((1 << fmt.exponent_bits) - 1)
    mantissa = code & ((1 << m) - 1)
    all_ones = (1 << fmt.exponent_bits) - 1
    if fmt.specials == "ieee" and field == all_ones:
        return Exact.nan(sign) if mantissa else Exact.inf(sign)
    top_magnitude = field == all_ones and mantissa == (1 << m) - 1
    if fmt.specials == "fn" and top_magnitude:
        return Exact.nan(sign)
    if fmt.specials == "p3109" and top_magnitude:
        return Exact.inf(sign)
    if fmt.nan_at_negative_zero and code == fmt.sign_mask:  # 'fnuz', 'p3109': the one NaN (sign bit set)
        return Exact.nan(1)
    if field == 0 and fmt.subnormals:
        significand, exponent = mantissa, fmt.emin
    else:
        significand, exponent = (1 << m) | mantissa, field - fmt.bias
    return Exact.trusted(sign, dyadic(significand, exponent - m))


@lru_cache(maxsize=None)
def finite_magnitudes(fmt) -> tuple[Fraction, ...]:
    """The distinct finite non-negative values of an element or scale format, ascending (0 first
    where the format has a zero)."""
    fmt = get_format(fmt, kind="element")
    values = (decode(code, fmt) for code in range(1 << fmt.width))
    return tuple(sorted({v.magnitude for v in values if v.is_finite}))
