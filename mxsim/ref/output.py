"""The output side of the dot-product datapath (docs/numerics.md sections 4 and 4.1): the one routine
that rounds a result to the accumulator's output format, the fp32 addition of separate
accumulation, and the accumulator input C. Integers and Fractions only.

Output codes are stored in ``accumulator.output_storage``: fp32 (32-bit word), bf16 or fp16
(16-bit words); ``fp32_eXmY`` results are rounded to the float with X exponent bits (bias
2^(X-1) - 1) and Y fraction bits (:func:`mxsim.options.accumulate.output_float_format`;
``fp32_e8m13`` is :data:`mxsim.formats.FP32_E8M13`) and stored as the fp32 word of that value (for
X = 8: the code shifted left by 23 - Y, its low bits 0).
"""

from __future__ import annotations


from ..options import Accumulator
from ..options.accumulate import output_float_format
from .stored_block import fp32_of_ratio, to_fp32
from .decode import decode
from .encode import encode_ratio, ratio_encoder
from .exact import Exact, Number, dyadic, to_exact

__all__ = [
    "output_format", "storage_format", "round_output", "round_finite_output", "finite_rounder", "output_value",
    "fp32_add", "fp32_add_dyadic", "fp32_bits", "fp32_input",
]


def output_format(accumulator: Accumulator):
    """The float format results are rounded to: ``output`` (``fp32_eXmY``: that float)."""
    return output_float_format(accumulator.output)


def storage_format(accumulator: Accumulator):
    """The IEEE format output codes are stored in (fp32 for ``fp32_eXmY``)."""
    return output_float_format(accumulator.output_storage)


def round_output(x: Exact, accumulator: Accumulator) -> int:
    """The output code (in :func:`storage_format`) of a result ``x``.

    * NaN: ``nan_bits``, or the storage format's canonical quiet NaN (fp32 0x7FC00000, bf16 0x7FC0,
      fp16 0x7E00) when it is None; the NaN's sign is not kept.
    * +-Inf: the Inf code of its sign.
    * finite: rounded once with ``output_rounding`` (subnormals kept); a zero keeps its sign (the
      callers turn an exactly-zero sum into +0 first). Overflow (the rounding with unbounded
      exponent exceeds the largest finite value) follows ``output_overflow``: ``inf`` gives +-Inf,
      ``ieee`` gives +-max finite where the rounding is toward zero for the sign (rtz; rup of a
      negative; rdn of a positive) and +-Inf otherwise, ``saturate`` gives +-max finite.
      ``ftz``: a result that rounds to a subnormal (or zero) becomes a zero of its sign;
      ``zero_sign="plus"``: a nonzero result that rounds or flushes to zero is +0 (an exact zero
      keeps the sign it is given).
    """
    if x.is_nan:
        return storage_format(accumulator).nan_code() if accumulator.nan_bits is None else accumulator.nan_bits
    if x.is_inf:
        return storage_format(accumulator).inf_code(bool(x.sign))
    magnitude = x.magnitude
    return round_finite_output(bool(x.sign), magnitude.numerator, magnitude.denominator, accumulator)


def round_finite_output(negative: bool, numerator: int, denominator: int, accumulator: Accumulator) -> int:
    """:func:`round_output` of the finite value (-1)^negative * numerator / denominator (integers,
    numerator >= 0, denominator > 0, not necessarily reduced; -0 is numerator 0 with ``negative``
    True): for callers that hold a sum as integers (a fused step's dyadic total)."""
    return finite_rounder(accumulator)(negative, numerator, denominator)


def finite_rounder(accumulator: Accumulator):
    """:func:`round_finite_output` of one accumulator as a function of (negative, numerator,
    denominator), its formats and options looked up once (a fused reference rounds every step of
    every vector with it). Kept per accumulator object, found by identity (hashing an Accumulator's
    fields costs more than a rounding; the entry holds the object, so its id stays its own)."""
    held = _ROUNDERS.get(id(accumulator))
    if held is not None and held[0] is accumulator:
        return held[1]
    rounder = _finite_rounder(accumulator)
    if len(_ROUNDERS) >= _ROUNDERS_HELD:
        _ROUNDERS.clear()
    _ROUNDERS[id(accumulator)] = (accumulator, rounder)
    return rounder


_ROUNDERS_HELD = 256  # accumulators whose rounders are kept (then it starts again)
_ROUNDERS: dict = {}  # id(accumulator) -> (accumulator, its finite_rounder)


def _finite_rounder(accumulator: Accumulator):
    """The rule of :func:`round_finite_output` (see :func:`round_output`): encode with
    ``output_rounding`` and ``output_overflow`` (``inf``: an overflow is +-Inf), then ``ftz`` and
    ``zero_sign``, then the storage word (:func:`_widen`)."""
    out, storage = output_format(accumulator), storage_format(accumulator)
    overflow = "error" if accumulator.output_overflow == "inf" else accumulator.output_overflow
    rounding, encoder = accumulator.output_rounding, ratio_encoder(out)
    ftz, plus_zero = accumulator.ftz, accumulator.zero_sign == "plus"
    sign_mask, subnormal_top = out.sign_mask, 1 << out.mantissa_bits

    def rounder(negative: bool, numerator: int, denominator: int) -> int:
        try:
            code = encoder(numerator, denominator, negative, out, rounding, overflow, None, 32, False)
        except OverflowError:
            code = out.inf_code(negative)
        if ftz and code & ~sign_mask < subnormal_top:
            code &= sign_mask
        if plus_zero and numerator and not code & ~sign_mask:
            code = 0  # a nonzero value that rounded or flushed to zero is +0 (NVIDIA's fp16 D, contract 6.1)
        return _widen(code, out, storage)

    return rounder


def _widen(code: int, out, storage) -> int:
    """The storage word of an output code (its value is a storage value): with the same exponent
    field, the fraction field padded with zeros below (fp32_e8m13 -> fp32: shift left by 10;
    identity when out is storage); else the storage code of the same value (Inf included)."""
    if out.exponent_bits == storage.exponent_bits:
        return code << (storage.mantissa_bits - out.mantissa_bits)
    x = decode(code, out)
    if x.is_inf:
        return storage.inf_code(bool(x.sign))
    return encode_ratio(x.magnitude.numerator, x.magnitude.denominator, bool(x.sign), storage, "rne", "error")


def output_value(code: int, accumulator: Accumulator) -> Exact:
    """The exact value of an output code (read in the storage format)."""
    return decode(code, storage_format(accumulator))


def fp32_add(x: Exact, y: Exact) -> Exact:
    """x + y rounded once to binary32, nearest-even, with IEEE 754 special cases (NaN, Inf, -0).

    ``y`` may be any exact value (a product, for an FMA chain); ``x`` is the fp32 register."""
    if x.is_nan or y.is_nan or (x.is_inf and y.is_inf and x.sign != y.sign):
        return Exact.nan()
    if x.is_inf or y.is_inf:
        return x if x.is_inf else y
    nx, dx = x.magnitude.numerator, x.magnitude.denominator
    ny, dy = y.magnitude.numerator, y.magnitude.denominator
    if dx & (dx - 1) or dy & (dy - 1):  # not both dyadic: the sum as a Fraction
        total = x.value + y.value
        if total == 0:  # exact zero: -0 only for (-0) + (-0)
            return Exact(int(x.sign and y.sign and x.is_zero and y.is_zero))
        return to_fp32(total)
    sign, n, e = fp32_add_dyadic((x.sign, nx, 1 - dx.bit_length()), (y.sign, ny, 1 - dy.bit_length()))
    return Exact.inf(sign) if n is None else Exact.trusted(sign, dyadic(n, e))


def fp32_add_dyadic(x: tuple[int, int, int], y: tuple[int, int, int]) -> tuple[int, int | None, int]:
    """:func:`fp32_add` of two finite dyadic values given as (sign, n, e), the value
    (-1)^sign * n * 2^e (n >= 0 an integer; a zero keeps its sign): integers only. Returns the
    sum as (sign, n, e), or (sign, None, 0) when it overflows to +-Inf. An exact zero sum is +0,
    -0 only for (-0) + (-0); a sum fp32 holds exactly (at most 24 significant bits on a grid of
    2^-149 or coarser, below 2^128) is returned as it is, any other is rounded by the encoder."""
    (sx, nx, ex), (sy, ny, ey) = x, y
    grid = min(ex, ey)
    total = (-nx if sx else nx) << (ex - grid)
    total += (-ny if sy else ny) << (ey - grid)
    if total == 0:
        return int(sx and sy and not nx and not ny), 0, 0
    sign, magnitude = int(total < 0), abs(total)
    size = magnitude.bit_length()
    if size <= 24 and grid >= _FP32_GRID_MIN and size + grid <= 128:
        return sign, magnitude, grid
    rounded = fp32_of_ratio(total << grid, 1) if grid >= 0 else fp32_of_ratio(total, 1 << -grid)
    if rounded.is_inf:
        return sign, None, 0
    return sign, rounded.magnitude.numerator, 1 - rounded.magnitude.denominator.bit_length()


_FP32_GRID_MIN = -149  # fp32's smallest subnormal is 2^-149


def fp32_bits(bits: int) -> Exact:
    """The exact value of an fp32 bit pattern (a 32-bit unsigned int; -0, subnormals, Inf and NaN
    included): the accumulator input C of a golden vector, for ``dot_general(..., c=fp32_bits(w))``."""
    return decode(bits, "fp32")


def fp32_input(c: Number | None, name: str = "c") -> Exact | None:
    """Read the accumulator input ``c``: None stays None; an :class:`Exact`, Fraction, int or
    float (read exactly) must be an fp32 value (NaN and +-Inf of any sign, -0, subnormals
    included). An int is a value, not a bit pattern: use :func:`fp32_bits` for bits."""
    if c is None:
        return None
    x = to_exact(c)
    if x.is_finite and to_fp32(x.magnitude) != Exact(0, x.magnitude):
        raise ValueError(
            f"{name}={c!r} is not allowed: the accumulator input must be an fp32 value (exactly representable "
            "in binary32); round it first, or pass fp32_bits(bits) for a bit pattern"
        )
    return x
