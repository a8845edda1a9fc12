"""Reference encoder: one exact value to an element code (integers and Fractions only).

The value is rounded once, on the grid of the format at the value's own binade (the grid of the
smallest normal binade for subnormals), then checked for overflow. See :mod:`mxsim.options.encode` for the
rounding and overflow modes.

The arithmetic is on integers: a magnitude n/d (a Fraction's numerator and denominator, or any
ratio the caller forms, such as x / 2^E in block quantization) is placed on the grid 2^g by
rounding the integer ratio (n * 2^-g) / d, with the shift applied to n or to d; no Fraction is
built. :func:`encode` checks its arguments once and calls :func:`encode_ratio`, which block
quantization and the dot-product output call directly with arguments they have checked.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

from ..formats import get_format
from ..options.encode import OVERFLOW_MODES, EncodeOptions, check_encode_options, check_int8_allow_neg2, overflow_code
from .exact import Number, floor_log2_ratio, ratio, to_exact
from .round import round_magnitude

__all__ = ["encode", "encode_traced", "EncodeRounding", "encode_ratio", "ratio_encoder", "round_to_grid", "round_ratio_to_grid"]

_DETERMINISTIC = ("rne", "rna", "rtz", "rup", "rdn")


def encode(
    x: Number,
    fmt,
    rounding: str = "rne",
    overflow: str = "saturate",
    *,
    rand_bits: int | None = None,
    rand_width: int = 32,
    int8_allow_neg2: bool = False,
    options: EncodeOptions | None = None,
) -> int:
    """Encode the exact value of ``x`` (int, Fraction, float, or :class:`Exact`) into ``fmt``.

    The options are the keyword arguments, or ``options``, an :class:`mxsim.options.EncodeOptions`
    holding them all (its ``rand_bits`` one integer here; ``source`` does not apply to a scalar);
    the keyword options must then be left at their defaults.

    * NaN: the format's canonical NaN code with the input's sign bit; ValueError for formats
      without NaN (FP6, FP4, integers, unless a block rule handles it first).
    * +-Inf and finite overflow: per ``overflow`` (saturate / ieee / error, see mxsim.options.encode).
    * -0 and negative values that round to zero: -0 in float formats and sign-magnitude
      integers; +0 in two's-complement integers and in 'fnuz' / 'p3109' floats (no -0 there:
      their 0x80 is the NaN; contract section 1). NaN input gives 0x80 there, whatever its sign.
    * Unsigned formats (e8m0, ue4m3): ValueError for negative input; -0 encodes as +0.
    * Formats without subnormals (e8m0) have no zero: zero raises ValueError, and a magnitude below
      the smallest normal encodes as the smallest normal.
    * Two's-complement integers: the most negative code (MXINT8 0x80 = -2.0) is produced only with
      ``int8_allow_neg2=True``; otherwise -max_int is the negative saturation value.
      ``int8_allow_neg2=True`` for any other format is a ValueError (it does not apply there).

    Returns the code as an int in [0, 2^width).
    """
    return _encode(x, fmt, rounding, overflow, rand_bits, rand_width, int8_allow_neg2, options, None)


class EncodeRounding(NamedTuple):
    """What the rounding of one finite nonzero value decides on (docs/numerics.md sections 1 and 3.3),
    as :func:`encode_traced` computed it: the magnitude ``numerator / denominator`` (integers > 0,
    the value as read, exactly; ``negative``: its sign, False for unsigned formats) is placed on the
    output grid of step 2^``grid`` at its binade (the last significand bit there: the smallest
    normal binade's for subnormals, 2^-frac_bits for integers), between lo = floor(x / 2^grid) *
    2^grid and hi = lo + 2^grid, and rounded to ``quotient`` * 2^grid (``quotient`` the integer
    the rounding chose, lo's or hi's, before the overflow rule: a quotient above the format's
    largest magnitude is then saturated or overflows). A format without subnormals holds nothing
    below its smallest normal 2^emin: such a value is placed on [0, 2^emin) and goes to 2^emin
    (``grid`` emin, ``quotient`` 1)."""

    negative: bool
    numerator: int
    denominator: int
    grid: int
    quotient: int


def encode_traced(x: Number, fmt, rounding: str = "rne", overflow: str = "saturate") -> tuple[int, EncodeRounding | None]:
    """(:func:`encode` of ``x``, what its rounding decided on: :class:`EncodeRounding`, or None for a
    NaN, an infinity or a zero, which do not round). Deterministic roundings only (rne, rna, rtz,
    rup, rdn); errors as :func:`encode`'s."""
    if rounding not in _DETERMINISTIC:
        raise ValueError(f"rounding={rounding!r}: encode_traced takes {'|'.join(_DETERMINISTIC)}")
    trace: list = []
    code = _encode(x, fmt, rounding, overflow, None, 32, False, None, trace)
    return code, (trace[0] if trace else None)


def _encode(x, fmt, rounding, overflow, rand_bits, rand_width, int8_allow_neg2, options, trace) -> int:
    """:func:`encode`; ``trace``: None, or a list that gets the value's :class:`EncodeRounding`."""
    if options is not None:
        rounding, overflow, rand_bits, rand_width, int8_allow_neg2 = _from_options(
            options, rounding, overflow, rand_bits, rand_width, int8_allow_neg2)
    fmt = get_format(fmt, kind="element")
    if not (rand_bits is None and rounding in _DETERMINISTIC and overflow in OVERFLOW_MODES):
        check_encode_options(rounding, overflow, rand_bits, rand_width)  # (the plain case always passes)
    if int8_allow_neg2 is not False:
        check_int8_allow_neg2(fmt, int8_allow_neg2)  # (False always passes)
    sign, n, d = ratio(x)  # d = 0: Inf (n = 1) or NaN (n = 0)
    negative = sign == 1 and fmt.signed
    if not (d or n):
        if not fmt.has_nan:
            raise ValueError(f"NaN input cannot be encoded: format {fmt.name!r} has no NaN")
        return fmt.nan_code(negative)
    if sign and n and not fmt.signed:
        raise ValueError(f"negative input {to_exact(x)} cannot be encoded: format {fmt.name!r} is unsigned")
    if not d:
        return overflow_code(fmt, negative, overflow, rounding, infinite_input=True, int8_allow_neg2=int8_allow_neg2)
    return ratio_encoder(fmt)(n, d, negative, fmt, rounding, overflow, rand_bits, rand_width, int8_allow_neg2, trace)


def _from_options(options, *loose) -> tuple:
    """(rounding, overflow, rand_bits, rand_width, int8_allow_neg2) of ``options``, refusing
    keyword options given beside it (``loose``: their values, each at its default unless given)."""
    if not isinstance(options, EncodeOptions):
        raise ValueError(f"options must be an EncodeOptions or None, not {type(options).__name__}")
    names = ("rounding", "overflow", "rand_bits", "rand_width", "int8_allow_neg2")
    beside = [name for name, value in zip(names, loose) if value != _DEFAULTS[name]]
    if beside:
        raise ValueError(
            f"options=EncodeOptions(...) holds every encode setting; {', '.join(beside)} cannot be given beside it"
        )
    if options.source is not None:
        raise ValueError(f"source={options.source!r} does not apply to mxsim.ref.encode (it reads exact values)")
    return tuple(getattr(options, name) for name in names)


_DEFAULTS = {"rounding": "rne", "overflow": "saturate", "rand_bits": None, "rand_width": 32, "int8_allow_neg2": False}


def encode_ratio(
    numerator: int,
    denominator: int,
    negative: bool,
    fmt,
    rounding: str = "rne",
    overflow: str = "saturate",
    rand_bits: int | None = None,
    rand_width: int = 32,
    int8_allow_neg2: bool = False,
) -> int:
    """The code of the finite value (-1)^negative * numerator / denominator (integers,
    numerator >= 0, denominator > 0, not necessarily reduced), as :func:`encode` gives it.

    For callers that have checked their arguments: ``fmt`` an element format object, the options
    valid, ``negative`` the value's sign (False for unsigned formats; -0 is numerator 0 with
    negative True). Overflow follows ``overflow`` as in :func:`encode`."""
    encoder = ratio_encoder(fmt)
    return encoder(numerator, denominator, negative, fmt, rounding, overflow, rand_bits, rand_width, int8_allow_neg2)


def ratio_encoder(fmt):
    """The function :func:`encode_ratio` hands a value of element format ``fmt`` to, with the
    same nine arguments in the same order (all of them passed; a tenth, ``trace``, may be a list
    that gets the value's :class:`EncodeRounding`): for loops that encode many values of one format
    and look the function up once."""
    return _encode_int if fmt.kind == "int" else _encode_float


def _overflow_text(numerator: int, denominator: int, negative: bool) -> str:
    return ("-" if negative else "") + str(Fraction(numerator, denominator))


def _round_on_grid(numerator: int, denominator: int, grid: int, rounding: str, negative: bool, rand_bits, rand_width) -> int:
    """(numerator / denominator) / 2^grid rounded to an integer (the rounding arguments as for
    :func:`round_magnitude`)."""
    if grid <= 0:
        return round_magnitude(numerator << -grid, denominator, rounding, negative, rand_bits, rand_width)
    return round_magnitude(numerator, denominator << grid, rounding, negative, rand_bits, rand_width)


def round_to_grid(magnitude: Fraction, fmt, rounding_args) -> tuple[int, int]:
    """Round a positive magnitude on the format's grid with unbounded exponent range.

    Returns (significand, grid) with rounded value significand * 2^grid; grid is the exponent of
    the last significand bit at the magnitude's binade (the smallest normal binade for
    subnormals) for floats, and -frac_bits for integers. ``rounding_args`` are
    (rounding, negative, rand_bits, rand_width) as for :func:`round_magnitude`.
    """
    return round_ratio_to_grid(magnitude.numerator, magnitude.denominator, fmt, rounding_args)


def round_ratio_to_grid(n: int, d: int, fmt, rounding_args) -> tuple[int, int]:
    """:func:`round_to_grid` of the magnitude n / d (integers n, d > 0, not necessarily reduced)."""
    if fmt.kind == "int":
        grid = -fmt.frac_bits
    else:
        grid = max(floor_log2_ratio(n, d), fmt.emin) - fmt.mantissa_bits
    return _round_on_grid(n, d, grid, *rounding_args), grid


def _encode_int(n: int, d: int, negative: bool, fmt, rounding, overflow, rand_bits, rand_width, int8_allow_neg2,
                trace=None) -> int:
    q = _round_on_grid(n, d, -fmt.frac_bits, rounding, negative, rand_bits, rand_width)
    if trace is not None and n:
        trace.append(EncodeRounding(negative, n, d, -fmt.frac_bits, q))
    limit = fmt.max_int
    if negative and fmt.encoding == "twos_complement" and int8_allow_neg2:
        limit += 1
    if q > limit:
        text = _overflow_text(n, d, negative) if overflow == "error" else ""
        return overflow_code(fmt, negative, overflow, rounding, int8_allow_neg2=int8_allow_neg2, value_text=text)
    if fmt.encoding == "sign_magnitude":
        return (fmt.sign_mask if negative else 0) | q
    return (-q if negative else q) & ((1 << fmt.bits) - 1)


def _encode_float(
    n: int, d: int, negative: bool, fmt, rounding, overflow, rand_bits, rand_width, int8_allow_neg2=False, trace=None
) -> int:
    """(int8_allow_neg2 applies to integer formats only: ignored here.) ``trace``: None, or a list
    that gets the :class:`EncodeRounding` of a nonzero value."""
    sign_bits = fmt.sign_mask if negative else 0
    if n == 0:
        if not fmt.subnormals:
            raise ValueError(f"zero cannot be encoded: format {fmt.name!r} has no zero")
        return fmt.zero_code(negative)
    exponent = floor_log2_ratio(n, d)
    if exponent < fmt.emin:
        if not fmt.subnormals:
            if trace is not None:
                trace.append(EncodeRounding(negative, n, d, fmt.emin, 1))
            return sign_bits  # below the smallest normal: field 0 is the smallest normal binade
        exponent = fmt.emin
    m = fmt.mantissa_bits
    grid = exponent - m
    significand = _round_on_grid(n, d, grid, rounding, negative, rand_bits, rand_width)
    if trace is not None:
        trace.append(EncodeRounding(negative, n, d, grid, significand))
    # overflow: significand * 2^grid > max_normal = max_significand * 2^(emax - m), compared as
    # integers. Below the top binade (grid < emax - m) there is none: significand <= 2^(m+1) and
    # 2^(m+1) * 2^grid <= 2^emax <= max_normal.
    top_grid = fmt.emax - m
    if grid >= top_grid and significand << (grid - top_grid) > fmt.max_significand:
        text = _overflow_text(n, d, negative) if overflow == "error" else ""
        return overflow_code(fmt, negative, overflow, rounding, value_text=text)
    if significand == 0:
        return fmt.zero_code(negative)
    if significand == 1 << (m + 1):  # rounding carried into the next binade
        significand, grid = significand >> 1, grid + 1
    if significand < 1 << m:  # subnormal: exponent field 0
        return sign_bits | significand
    field = grid + m + fmt.bias
    return sign_bits | (field << m) | (significand - (1 << m))
