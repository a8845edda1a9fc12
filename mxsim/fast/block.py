"""Vectorized block quantization and dequantization, bit-identical to :mod:`mxsim.ref.block`.

Blocks arrive as a (n_blocks, block_size) float32 or float64 array. Why the float64 arithmetic
here is exact:

* block maxima, floor/ceil(log2) and the scale rules use frexp/ldexp and comparisons, all exact;
* x / 2^(E - tau) is a power-of-two scaling: exact in float64 for any float32 input; a float64
  input scaled below 2^-1000 is replaced by +-2^-1000, which lies below half the smallest step of
  every element format and so rounds the same way in every mode;
* NVFP4 divides by s_t * scale (a 28-bit float64) or follows torchao's fp32 steps. For inputs
  that float32 holds exactly, every such quotient lies at least 2^-50 (relative) from any point
  where one more rounding could change its decision, so float64's 2^-53 error never matters.
  Other NVFP4 inputs, and stochastic rounding, go block by block through the reference.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..block_policy import QuantizeOptions
from ..ref.block import FP32_MAX, quantize_block
from ..ref.scale import E8M0_MAX, E8M0_MIN, fraction_bits
from .decode import value_table
from .encode import encode

__all__ = ["quantize_blocks", "dequantize_blocks", "floor_log2"]

TINY = 2.0**-1000
E8M0_NAN = 0xFF


def floor_log2(magnitude: np.ndarray) -> np.ndarray:
    """floor(log2 |x|) of positive finite float64 values, exactly (frexp reads the exponent)."""
    return np.frexp(magnitude)[1].astype(np.int64) - 1


def _scale_exponents(amax: np.ndarray, element, rule: str) -> np.ndarray:
    """Unclamped scale exponents for positive finite maxima (see mxsim.ref.scale)."""
    e = floor_log2(amax)
    floor = e - element.emax
    if rule == "floor":
        return floor
    mantissa = np.frexp(amax)[0]  # in [0.5, 1): amax = mantissa * 2^(e + 1)
    if rule == "ceil":
        return floor + (mantissa != 0.5)
    if rule == "even":
        return floor + (mantissa >= 1 - 2.0 ** (-fraction_bits(element) - 2))
    top = np.ldexp(amax, -floor)  # in [2^emax, 2^(emax + 1)), exact
    if rule == "rceil":
        return floor + (top > float(element.max_normal))
    if rule == "tosa":
        grid = element.emax - element.mantissa_bits if element.kind == "float" else -element.frac_bits
        return floor + (np.rint(np.ldexp(top, -grid)) > float(element.max_normal * Fraction(2) ** -grid))
    raise ValueError(f"scale_rule={rule!r} is not allowed")


def _read(blocks: np.ndarray, options: QuantizeOptions):
    x = blocks.astype(np.float64)
    if options.flush_subnormal_inputs:
        x = np.where(np.abs(x) < 2.0**-126, np.copysign(0.0, x), x)
    nan = np.isnan(x)
    inf = np.isinf(x)
    nan_blocks = nan.any(axis=1) | (inf.any(axis=1) if options.inf_policy == "nan" else False)
    magnitude = np.where(inf, float(FP32_MAX), np.abs(x))
    magnitude[nan_blocks] = 0.0
    x[nan_blocks] = 0.0
    return x, magnitude, nan_blocks


def _element_codes(scaled: np.ndarray, fmt, options: QuantizeOptions, rand_bits) -> np.ndarray:
    tiny = (np.abs(scaled) < TINY) & (scaled != 0)
    scaled = np.where(tiny, np.copysign(TINY, scaled), scaled)
    return encode(
        scaled,
        fmt.element,
        options.rounding,
        "saturate",
        rand_bits=rand_bits,
        rand_width=options.rand_width,
        int8_allow_neg2=options.int8_allow_neg2,
    )


def _nan_codes(fmt, codes: np.ndarray, nan_blocks: np.ndarray) -> None:
    codes[nan_blocks] = fmt.element.nan_code() if fmt.element.has_nan else 0


def quantize_blocks(blocks: np.ndarray, fmt, options: QuantizeOptions, tensor_scale=None, rand_bits=None):
    """Quantize (n_blocks, block_size) values: returns (scales, subscales, codes) with scales of
    shape (n_blocks,), subscales (n_blocks, subblocks) or None, codes (n_blocks, block_size)."""
    if fmt.scale.name == "ue4m3":
        return _quantize_nvfp4(blocks, fmt, options, tensor_scale, rand_bits)
    x, magnitude, nan_blocks = _read(blocks, options)
    amax = magnitude.max(axis=1, initial=0.0)
    zero = amax == 0
    exponent = np.full(amax.shape, E8M0_MIN, dtype=np.int64)
    exponent[~zero] = _scale_exponents(amax[~zero], fmt.element, options.scale_rule)
    np.clip(exponent, E8M0_MIN, E8M0_MAX, out=exponent)
    shift = np.repeat(exponent[:, None], fmt.block_size, axis=1)
    subscales = None
    if fmt.subblocks:
        pair_max = magnitude.reshape(len(x), fmt.subblocks, fmt.subblock_size).max(axis=2)
        e_pair = np.full(pair_max.shape, E8M0_MIN, dtype=np.int64)
        e_pair[pair_max > 0] = np.maximum(floor_log2(pair_max[pair_max > 0]), E8M0_MIN)
        taus = np.clip(exponent[:, None] - e_pair, 0, (1 << fmt.subscale_bits) - 1)
        taus[nan_blocks] = 0
        shift -= np.repeat(taus, fmt.subblock_size, axis=1)
        subscales = taus.astype(np.uint8)
    codes = _element_codes(np.ldexp(x, -shift), fmt, options, rand_bits)
    _nan_codes(fmt, codes, nan_blocks)
    scales = (exponent - E8M0_MIN).astype(np.uint8)
    scales[nan_blocks] = E8M0_NAN
    return scales, subscales, codes


def _fp32_exact(x: np.ndarray) -> bool:
    with np.errstate(over="ignore"):
        narrowed = x.astype(np.float32).astype(np.float64)
    return bool(np.all((narrowed == x) | np.isnan(x)))


def _quantize_nvfp4(blocks, fmt, options, tensor_scale, rand_bits):
    s_t = 1.0 if tensor_scale is None else float(tensor_scale)
    if options.rounding == "stochastic" or not _fp32_exact(blocks):
        return _nvfp4_by_reference(blocks, fmt, options, tensor_scale, rand_bits)
    x, magnitude, nan_blocks = _read(blocks, options)
    amax = magnitude.max(axis=1, initial=0.0)
    lowest = 2.0**-6 if options.nvfp4_scale_min == "normal" else 2.0**-9
    if options.nvfp4_arith == "fp32_steps":
        wanted = ((amax / 6).astype(np.float32).astype(np.float64) / s_t).astype(np.float32).astype(np.float64)
    else:
        wanted = amax / (6 * s_t)
    scale_codes = encode(np.clip(wanted, lowest, float(fmt.scale.max_normal)), fmt.scale)
    scale = value_table(fmt.scale)[scale_codes]
    if options.nvfp4_arith == "fp32_steps":
        inverse = np.float64(np.float32(1 / s_t))
        factor = (inverse / scale).astype(np.float32).astype(np.float64)
        with np.errstate(over="ignore"):
            scaled = (x * factor[:, None]).astype(np.float32).astype(np.float64)
        scaled = np.where(np.isinf(x), x, scaled)
    else:
        scaled = x / (s_t * scale)[:, None]
    codes = _element_codes(scaled, fmt, options, rand_bits)
    _nan_codes(fmt, codes, nan_blocks)
    scale_codes[nan_blocks] = fmt.scale.nan_code()
    return scale_codes, None, codes


def _nvfp4_by_reference(blocks, fmt, options, tensor_scale, rand_bits):
    s_t = None if tensor_scale is None else Fraction(tensor_scale)
    rand = None if rand_bits is None else np.broadcast_to(rand_bits, blocks.shape)
    results = [
        quantize_block(
            [float(v) for v in block], fmt, options, tensor_scale=s_t, rand_bits=None if rand is None else rand[i]
        )
        for i, block in enumerate(blocks)
    ]
    scales = np.array([r.scale for r in results], dtype=np.uint8)
    codes = np.array([r.codes for r in results], dtype=np.uint8).reshape(blocks.shape)
    return scales, None, codes


def dequantize_blocks(scales, subscales, codes, fmt, tensor_scale=None) -> np.ndarray:
    """Exact float64 values of (n_blocks, block_size) codes (NaN scale: the whole block NaN)."""
    values = value_table(fmt.element)[codes]
    scale_values = value_table(fmt.scale)[scales]
    if tensor_scale is not None:
        scale_values = scale_values * float(tensor_scale)
    factor = np.repeat(scale_values[:, None], fmt.block_size, axis=1)
    if subscales is not None:
        factor = np.ldexp(factor, -np.repeat(subscales.astype(np.int64), fmt.subblock_size, axis=1))
    return values * factor
