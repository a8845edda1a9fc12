"""The output side of the vectorized dot-product datapath: results rounded to the accumulator's
output format, bit-identical to :func:`mxsim.ref.output.round_output` (docs/numerics.md sections 4
and 4.1), and output codes read back as numbers or as fp32 words.

Output codes are stored in ``accumulator.output_storage``: fp32 as uint32 words, bf16 and fp16 as
uint16 words. ``fp32_eXmY`` results are rounded to the float with X exponent bits (bias 2^(X-1) - 1)
and Y fraction bits (:func:`mxsim.options.accumulate.output_float_format`; ``fp32_e8m13``: 8
exponent bits, bias 127, emin -126, smallest subnormal 2^-139; 13 fraction bits; IEEE specials)
and stored as the fp32 word of that value: for X = 8 the code shifted left by 23 - Y.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..options import Accumulator
from ..options.accumulate import output_float_format
from ..options.encode import overflow_code
from .encode import encode_dyadic, floor_log2_int64

__all__ = [
    "FINITE", "NAN", "NEG_INF", "POS_INF", "FLOAT32_ROUNDINGS", "float32_parts", "fp32_round", "fp32_words", "output_format",
    "output_values", "round_output",
]

FINITE, POS_INF, NEG_INF, NAN = 0, 1, 2, 3


@cache
def output_format(acc: Accumulator):
    """The float format results are rounded to: ``output`` (``fp32_eXmY``: that float)."""
    return output_float_format(acc.output)


@cache
def _storage_format(acc: Accumulator):
    return output_float_format(acc.output_storage)


def _code_dtype(acc: Accumulator):
    return np.uint32 if _storage_format(acc).width == 32 else np.uint16


def _overflow_codes(acc: Accumulator, out) -> np.ndarray:
    """The codes (in ``out``) of an overflowing result, indexed by its sign (0 +, 1 -):
    ``output_overflow`` inf -> +-Inf; ieee -> +-max finite where ``output_rounding`` is toward zero
    for that sign, else +-Inf; saturate -> +-max finite."""
    if acc.output_overflow == "inf":
        return np.array([out.inf_code(False), out.inf_code(True)], dtype=np.int64)
    return np.array(
        [overflow_code(out, s, acc.output_overflow, acc.output_rounding) for s in (False, True)], dtype=np.int64
    )


def nan_word(acc: Accumulator) -> int:
    """The stored word of a NaN result: ``nan_bits``, or the storage format's canonical quiet NaN
    (fp32 0x7FC00000, bf16 0x7FC0, fp16 0x7E00)."""
    return _storage_format(acc).nan_code() if acc.nan_bits is None else acc.nan_bits


def round_output(negative, magnitude, exponent, special, acc: Accumulator) -> np.ndarray:
    """Stored output codes of (-1)^negative * magnitude * 2^exponent, or of the special outcome.

    ``negative`` bool, ``magnitude`` int64 in [0, 2^62), ``exponent`` int64, ``special`` int8
    (FINITE, POS_INF, NEG_INF, NAN), all of one shape. A finite value is rounded once with
    ``output_rounding`` (subnormals kept; a zero keeps the sign ``negative`` gives it); overflow
    (the rounding with unbounded exponent exceeds the largest finite value) follows
    ``output_overflow``; ``ftz`` turns a result that rounds to a subnormal into a zero of its sign
    (``zero_sign="plus"``: a nonzero value that rounds or flushes to zero gives +0);
    +-Inf gives the Inf code of its sign and NaN :func:`nan_word`. Returns uint32 (fp32 storage)
    or uint16 (bf16, fp16) codes.
    """
    out = output_format(acc)
    if _by_float32(out, acc.output_rounding):
        code, overflows = _round_by_float32(negative, magnitude, exponent, acc.output_rounding)
        code >>= FP32_MANTISSA_BITS - out.mantissa_bits  # fp32_e8mY (rtz only): its Y fraction bits
    else:
        code, overflows = encode_dyadic(magnitude, exponent, negative, out, acc.output_rounding)
    if overflows.any():
        code = np.where(overflows, _overflow_codes(acc, out)[negative.astype(np.intp)], code)
    if acc.ftz:
        code = np.where((code & ~out.sign_mask) < (1 << out.mantissa_bits), code & out.sign_mask, code)
    if acc.zero_sign == "plus":  # a nonzero value that rounded or flushed to zero is +0
        code = np.where((magnitude != 0) & ((code & ~out.sign_mask) == 0), 0, code)
    storage = _storage_format(acc)
    code = _widen(code, out, storage)
    if special.any():
        code = np.where(special == POS_INF, storage.inf_code(False), code)
        code = np.where(special == NEG_INF, storage.inf_code(True), code)
        code = np.where(special == NAN, nan_word(acc), code)
    return code.astype(_code_dtype(acc))


# Outputs rounded by the float32 hardware: fp32 with rne, rtz, rup, rdn; fp32_e8mY with rtz
# (truncating an fp32 truncation to Y fraction bits truncates the value: the fp32 grid contains
# the e8mY grid, subnormals included, and both overflow at 2^128).
FLOAT32_ROUNDINGS = ("rne", "rtz", "rup", "rdn")  # the roundings :func:`fp32_round` makes
FP32_MANTISSA_BITS = 23


def _by_float32(out, rounding: str) -> bool:
    """Whether :func:`_round_by_float32` rounds to ``out`` with ``rounding``."""
    if out.name == "fp32":
        return rounding in FLOAT32_ROUNDINGS
    return out.name.startswith("fp32_") and out.exponent_bits == 8 and rounding == "rtz"


def _widen(code: np.ndarray, out, storage) -> np.ndarray:
    """Storage words of output codes (as :func:`mxsim.ref.output.round_output`): with the same
    exponent field, the fraction padded with zeros below; else (fp32_eXmY, X < 8) the fp32 word of
    the same value, built from the fields (exact in float64, then float32; Inf stays Inf)."""
    if out.exponent_bits == storage.exponent_bits:
        return code << (storage.mantissa_bits - out.mantissa_bits)
    m, top = out.mantissa_bits, (1 << out.exponent_bits) - 1
    field = (code >> m) & top
    fraction = code & ((1 << m) - 1)
    significand = np.where(field > 0, fraction | (1 << m), fraction).astype(np.float64)
    value = np.ldexp(significand, (np.maximum(field, 1) - out.bias - m).astype(np.int32))
    value = np.where(field == top, np.inf, value)  # only Inf reaches here (NaN is written later)
    words = value.astype(np.float32).view(np.uint32).astype(np.int64)
    return np.where(code & out.sign_mask, words | storage.sign_mask, words)
_TOWARD = {"rtz": 0.0, "rup": np.inf, "rdn": -np.inf}


def _round_by_float32(negative, magnitude, exponent, rounding: str):
    """(fp32 bits int64, overflows) of (-1)^negative * magnitude * 2^exponent (magnitude < 2^62)
    rounded with rne, rtz, rup or rdn, by the hardware.

    The magnitude is first rounded to odd at 53 bits (the dropped bits ORed into the last kept
    one: exact in float64, and every rounding decision of a 24-bit result is kept); the exponent
    is clamped where the result is beyond fp32 either way (so ldexp stays exact); then
    :func:`fp32_round`. Overflow: the rounding with unbounded exponent exceeds the largest finite
    value iff the result is Inf or |x| >= 2^128.
    """
    top = floor_log2_int64(np.maximum(magnitude, 1))
    drop = np.maximum(top - 52, 0)
    sticky = (magnitude & ((1 << drop) - 1)) != 0
    magnitude = (magnitude >> drop) | sticky
    exponent = exponent + drop
    top += exponent - drop
    # beyond 2^200 or below 2^-400 the fp32 result is Inf, max, 0 or the smallest subnormal whatever the exact value
    exponent = np.where(top > 200, exponent - (top - 200), np.where(top < -400, exponent - (top + 400), exponent))
    value = np.ldexp(magnitude.astype(np.float64), exponent.astype(np.int32))
    np.negative(value, out=value, where=negative)  # -0 included
    rounded = fp32_round(value, rounding)
    overflows = np.isinf(rounded) | (np.abs(value) >= 2.0**128)
    return rounded.view(np.uint32).astype(np.int64), overflows


def fp32_round(value: np.ndarray, rounding: str) -> np.ndarray:
    """float64 values rounded once to float32 with rne, rtz, rup or rdn (subnormals kept, -0
    kept, NaN stays NaN). Each value must be exact, or rounded to odd at 26 bits or more, so that
    the one rounding is right: the float64 -> float32 cast rounds to nearest-even (Inf beyond);
    a directed rounding then steps a result that went the wrong way by one fp32 ulp toward its
    target (np.nextafter, which also steps Inf back to the largest finite value)."""
    with np.errstate(over="ignore", invalid="ignore"):  # Inf beyond; NaN stays NaN
        rounded = value.astype(np.float32)
    if rounding == "rne":
        return rounded
    target = _TOWARD[rounding]
    wrong = np.abs(rounded) > np.abs(value) if rounding == "rtz" else (rounded < value if target > 0 else rounded > value)
    with np.errstate(over="ignore"):  # max -> Inf under rup/rdn: an overflow, caught by the caller
        return np.where(wrong, np.nextafter(rounded, np.float32(target)), rounded)


def output_values(codes: np.ndarray, acc: Accumulator) -> np.ndarray:
    """Output codes as numbers: float32 for fp32, fp32_e8m13 and bf16 (every bf16 value is a
    float32), float16 for fp16."""
    if acc.output_storage == "fp32":
        return codes.astype(np.uint32).view(np.float32)
    if acc.output == "bf16":
        return (codes.astype(np.uint32) << 16).view(np.float32)
    return codes.astype(np.uint16).view(np.float16)


def fp32_words(codes: np.ndarray, acc: Accumulator) -> np.ndarray:
    """Output codes as the fp32 words of the same values (int64; exact: every output value is an
    fp32 value). A NaN stays a NaN (its payload is not kept for fp16)."""
    if acc.output == "fp16":
        with np.errstate(invalid="ignore"):
            return output_values(codes, acc).astype(np.float32).view(np.uint32).astype(np.int64)
    return output_values(codes, acc).view(np.uint32).astype(np.int64)


def float32_parts(x: np.ndarray):
    """A float32 array as (negative, significand int64, exponent int64, special): finite values
    are (-1)^negative * significand * 2^exponent (exponent = the value's own ulp)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    negative = (bits >> 31).astype(bool)
    field = (bits >> 23) & 0xFF
    fraction = bits & 0x7FFFFF
    significand = np.where(field == 0, fraction, fraction | (1 << 23))
    exponent = np.maximum(field, 1) - 150
    special = np.where(field == 0xFF, np.where(fraction != 0, NAN, np.where(negative, NEG_INF, POS_INF)), FINITE)
    return negative, np.where(field == 0xFF, 0, significand), exponent, special.astype(np.int8)
