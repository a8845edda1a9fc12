"""The shared scale exponents E of many E8M0-scaled blocks at once, bit-identical to the reference's.
As :mod:`mxsim.ref.scale` and the reference's block exponent (docs/numerics.md section 2).

Units: E is an int64 per block, the scale being 2^E. A block maximum (``amax``, float64)
gives the scale rule's E exactly (frexp reads the exponent; the fp32 rules decide with the
reference's integer thresholds); then the options clamp it to [scale_min, 127], mark E > 127 as a
NaN block under scale_overflow='nan', replace underflows under scale_underflow='fp32_pow', and
give zero blocks scale_min. Caller-supplied scale bytes (E8M0 codes or int8 exponents) are read
and checked here too. Errors are the reference's, naming the first offending block."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..options import QuantizeOptions
from ..ref.block import (
    BREVITAS_LOG2_MIN,
    FP32_MIN_NORMAL,
    FP32_POW_MIN,
    QUARK_EPS_EXPONENT,
    check_scale_value_min,
    scale_underflow_error,
)
from ..ref.scale import (
    E8M0_MAX,
    E8M0_MIN,
    E8M0_NAN,
    byte_exponent,
    fraction_bits,
    given_scale_error,
    root2_threshold,
    scale_exponent,
)
from .fp32_steps import fp32_log2_ceil, fp32_log2_floor

__all__ = ["computed_exponents", "floor_log2", "given_exponents", "rule_exponents"]


def floor_log2(magnitude: np.ndarray) -> np.ndarray:
    """floor(log2 |x|) of positive finite float64 values, exactly (frexp reads the exponent)."""
    return np.frexp(magnitude)[1].astype(np.int64) - 1


def rule_exponents(amax: np.ndarray, element, rule: str, round_bits: int | None = None) -> np.ndarray:
    """Unclamped scale exponents for positive finite maxima (see mxsim.ref.scale; ``round_bits``:
    the fraction bits of rule 'even', default the element's)."""
    e = floor_log2(amax)
    floor = e - element.emax
    if rule == "floor":
        return floor
    mantissa = np.frexp(amax)[0]  # in [0.5, 1): amax = mantissa * 2^(e + 1)
    if rule == "ceil":
        return floor + (mantissa != 0.5)
    if rule == "even":
        bits = fraction_bits(element) if round_bits is None else round_bits
        return floor + (mantissa >= 1 - 2.0 ** (-bits - 2))
    top = np.ldexp(amax, -floor)  # in [2^emax, 2^(emax + 1)), exact
    if rule == "rceil":
        return floor + (top > float(element.max_normal))
    if rule == "tosa":
        grid = element.emax - element.mantissa_bits if element.kind == "float" else -element.frac_bits
        return floor + (np.rint(np.ldexp(top, -grid)) > float(element.max_normal * Fraction(2) ** -grid))
    if rule == "rceil_fp32":
        return _rceil_fp32_exponents(amax, element)
    if rule == "floor_fp32":
        return fp32_log2_floor(amax) - element.emax
    if rule == "ceil_fp32":
        return fp32_log2_ceil(amax) - element.emax
    raise ValueError(f"scale_rule={rule!r} is not allowed")


def _rceil_fp32_exponents(amax: np.ndarray, element) -> np.ndarray:
    """scale_rule='rceil_fp32' (see mxsim.ref.scale): d = amax / max_normal in float32 (IEEE
    division of two float32 values: max_normal is one), then ceil of log2(d) rounded to float32,
    decided with the reference's integer thresholds. Maxima float32 cannot hold (float64 inputs)
    go through the reference."""
    with np.errstate(over="ignore"):
        exact32 = amax.astype(np.float32).astype(np.float64) == amax
    held = np.where(exact32, amax, 1.0).astype(np.float32)  # the others are replaced below
    with np.errstate(under="ignore"):
        d = (held / np.float32(element.max_normal)).astype(np.float64)
    mantissa, ex = np.frexp(d)
    e = ex.astype(np.int64) - 1
    significand = np.ldexp(mantissa, 24).astype(np.int64)  # in [2^23, 2^24): d = significand * 2^(e - 23)
    magnitude = np.maximum(np.abs(e), 1)
    p = floor_log2(magnitude.astype(np.float64))
    j = 24 - p + ((e < 0) & (magnitude == (1 << p)))
    thresholds = {int(v): root2_threshold(int(v)) for v in np.unique(j)}
    threshold = np.vectorize(thresholds.__getitem__, otypes=[np.int64])(j) if j.size else j
    rounds_down = (e != 0) & (significand < threshold)
    result = np.where(significand == 1 << 23, e, e + ~rounds_down)
    result = np.where(d == 0, E8M0_MIN, result)
    for i in np.nonzero(~exact32)[0]:
        result[i] = scale_exponent(Fraction(float(amax[i])), element, "rceil_fp32")
    return result

def given_exponents(scales, options: QuantizeOptions, name: str = "scales") -> np.ndarray:
    """int64 exponents E of caller-supplied scale bytes (any shape): E8M0 codes 0x00..0xFE, or
    int8 exponent bytes with E >= scale_min under scale_encoding='int8_exponent'. An integer
    array with values in [0, 255]; an int8 array is read as its bytes (two's complement).
    ValueError naming the first bad entry by its index."""
    array = np.asarray(scales)
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array of scale bytes, got dtype {array.dtype}")
    if array.dtype == np.int8:
        array = array.view(np.uint8)
    data = array.astype(np.int64)
    exponent = byte_exponent(data, options.scale_encoding)
    bad = (data < 0) | (data > 0xFF) | (exponent < options.scale_min)
    if options.scale_encoding == "e8m0":
        bad |= data == E8M0_NAN
    if bad.any():
        index = np.unravel_index(int(np.flatnonzero(bad)[0]), data.shape) if data.ndim else ()
        where = f"{name}[{', '.join(str(int(i)) for i in index)}]" if data.ndim else name
        value = int(data[index]) if data.ndim else int(data)
        raise given_scale_error(value, options.scale_encoding, options.scale_min, where)
    return exponent


def computed_exponents(magnitude: np.ndarray, fmt, options: QuantizeOptions, x: np.ndarray, nan_blocks=None):
    """(E, overflow mask) of each block: the scale rule's E clamped to [scale_min, 127]; for
    blocks with no nonzero magnitude scale_min, or under zero_block_scale='min_normal' the rule's
    E of an amax of 2^-126; 127 for blocks holding an Inf (``x``, NaN blocks zeroed) under
    inf_policy='max_scale'. The mask marks the blocks whose E exceeds 127 under
    scale_overflow='nan' (NaN blocks), else None. ``nan_blocks`` (NaN blocks, whose magnitudes
    read 0) are left out of the scale_value_min check."""
    amax = magnitude.max(axis=1, initial=0.0)
    zero = empty = amax == 0
    if options.scale_value_min != "none":
        _check_scale_value_min(np.where(nan_blocks, 1.0, amax) if nan_blocks is not None else amax, options)
    if options.zero_block_scale == "min_normal":
        amax = np.where(zero, float(FP32_MIN_NORMAL), amax)
        zero = np.zeros_like(zero)
    ruled = ~zero & np.isfinite(amax)  # an Inf maximum (inf_policy='max_scale') gets 127 below
    exponent = np.full(amax.shape, options.scale_min, dtype=np.int64)
    exponent[ruled] = (
        rule_exponents(amax[ruled], fmt.element, options.scale_rule, options.scale_round_bits) + options.scale_offset
    )
    if options.scale_underflow == "fp32_pow":
        exponent = _fp32_pow_exponents(exponent, empty, nan_blocks, options.scale_min)
    if options.inf_policy == "max_scale":
        exponent[np.isinf(x).any(axis=1)] = E8M0_MAX
    overflow = exponent > E8M0_MAX if options.scale_overflow == "nan" else None
    return np.clip(exponent, options.scale_min, E8M0_MAX), overflow


def _fp32_pow_exponents(exponent: np.ndarray, zero: np.ndarray, nan_blocks, scale_min: int) -> np.ndarray:
    """scale_underflow='fp32_pow' (see mxsim.ref.block._block_exponent): zero blocks and E below
    -149 get E = -23; E in [-149, scale_min) raises the reference's ValueError (NaN blocks aside)
    unless scale_min is above -127 (it clamps those)."""
    low = ~zero & (exponent < FP32_POW_MIN)
    bad = ~zero & ~low & (exponent < scale_min) & (scale_min <= E8M0_MIN)
    if nan_blocks is not None:
        bad &= ~nan_blocks
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise scale_underflow_error(int(exponent[i]), f"block {i}")
    return np.where(zero | low, QUARK_EPS_EXPONENT, exponent)  # (the caller clamps at scale_min)


def _check_scale_value_min(amax: np.ndarray, options: QuantizeOptions) -> None:
    """scale_value_min (see mxsim.ref.block.check_scale_value_min): the reference's ValueError for
    the first block without an MX encoding (float32 maxima: the log2 floor decides)."""
    bad = amax == 0
    positive = ~bad
    bad[positive] = fp32_log2_floor(amax[positive]) < BREVITAS_LOG2_MIN
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        check_scale_value_min(Fraction(float(amax[i])), options, f"block {i}")
