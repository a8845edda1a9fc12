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

from ..options import QuantizeOptions
from ..ref.block import FP32_MAX, FP32_MIN_NORMAL, nan_block_element_code, quantize_block
from ..ref.scale import E8M0_MAX, E8M0_MIN, fraction_bits, root2_threshold, scale_exponent
from .chunks import BLOCK_CHUNK, map_chunks
from .decode import scale_table, value_table
from .encode import _Binary, _IntKernel, _RneSaturateKernel, encode

__all__ = ["quantize_blocks", "dequantize_blocks", "dequantize_blocks_float32", "floor_log2"]

TINY = 2.0**-1000


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
    if rule == "rceil_fp32":
        return _rceil_fp32_exponents(amax, element)
    raise ValueError(f"scale_rule={rule!r} is not allowed")


def _rceil_fp32_exponents(amax: np.ndarray, element) -> np.ndarray:
    """scale_rule='rceil_fp32' (see mxsim.ref.scale): d = amax / max_normal in float32 (IEEE
    division of two float32 values: max_normal is one), then ceil of log2(d) rounded to float32,
    decided with the reference's integer thresholds. Maxima float32 cannot hold (float64 inputs)
    go through the reference."""
    with np.errstate(over="ignore"):
        exact32 = amax.astype(np.float32).astype(np.float64) == amax
    with np.errstate(under="ignore"):
        d = (amax.astype(np.float32) / np.float32(element.max_normal)).astype(np.float64)
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


def _read(blocks: np.ndarray, options: QuantizeOptions):
    with np.errstate(invalid="ignore"):  # signalling NaNs quieten when widened; they stay NaN
        x = blocks.astype(np.float64)
    if options.flush_subnormal_inputs:
        x = np.where(np.abs(x) < float(FP32_MIN_NORMAL), np.copysign(0.0, x), x)
    nan = np.isnan(x)
    inf = np.isinf(x)
    nan_blocks = nan.any(axis=1) | (inf.any(axis=1) if options.inf_policy == "nan" else False)
    magnitude = np.where(inf, 2.0**128 if options.inf_policy == "exponent_field" else float(FP32_MAX), np.abs(x))
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
    codes[nan_blocks] = nan_block_element_code(fmt.element)


class _ChunkedE8M0Quantizer:
    """Single-level E8M0 formats, float32 input, rne, no flushing: cache-sized chunks of blocks,
    block maxima from the integer bit patterns, the scale applied as an exact power-of-two
    float32 product, and the element kernels of mxsim.fast.encode on the result.

    Why the float32 product is exact enough: x * 2^-E is exact unless it falls below 2^-126,
    and anything that small lies far below half the smallest step of every element format, so
    rne gives (signed) zero either way."""

    FP32 = _Binary(np.float32)

    @classmethod
    def applies(cls, blocks, fmt, options: QuantizeOptions) -> bool:
        element = fmt.element
        kernel_fits = _RneSaturateKernel.applies(element, "rne", "saturate", cls.FP32) or _IntKernel.applies(
            element, "rne", "saturate", cls.FP32
        )
        return (
            blocks.dtype == np.float32
            and fmt.scale.name == "e8m0"
            and not fmt.subblocks
            and options.rounding == "rne"
            and not options.flush_subnormal_inputs
            and options.inf_policy in ("nan", "saturate")
            and options.min_scale_divisor == "scale"
            and kernel_fits
        )

    def __init__(self, fmt, options: QuantizeOptions):
        self.fmt, self.options = fmt, options
        element = fmt.element
        if element.kind == "float":
            self.element_kernel = _RneSaturateKernel(element, self.FP32)
        else:
            self.element_kernel = _IntKernel(element, "rne", "saturate", options.int8_allow_neg2)
        self.nan_element = nan_block_element_code(element)

    def __call__(self, start, stop, x, scales, codes):
        magnitude = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
        # Block maxima of the bit patterns (ordered like the magnitudes); reduceat on the flat
        # view is about 1.6x faster than max(axis=1) on short rows.
        k = self.fmt.block_size
        amax_bits = np.maximum.reduceat(magnitude.reshape(-1), np.arange(0, magnitude.size, k))
        nan_blocks = None
        if amax_bits.max() >= 0x7F800000:  # Inf or NaN somewhere in the chunk
            nan_blocks = (magnitude > 0x7F800000).any(axis=1)
            infinite = amax_bits == 0x7F800000
            if self.options.inf_policy == "nan":
                nan_blocks |= infinite
            else:
                amax_bits = np.where(infinite, np.uint32(0x7F7FFFFF), amax_bits)  # Inf counts as fp32 max
            x = np.where(nan_blocks[:, None], np.float32(0), x)
            amax_bits = np.where(nan_blocks, np.uint32(0), amax_bits)  # no NaN bit patterns below
        amax = amax_bits.view(np.float32).astype(np.float64)
        exponent = np.full(amax.shape, E8M0_MIN, dtype=np.int64)
        nonzero = amax > 0
        exponent[nonzero] = _scale_exponents(amax[nonzero], self.fmt.element, self.options.scale_rule)
        np.clip(exponent, E8M0_MIN, E8M0_MAX, out=exponent)
        factor = np.ldexp(np.float32(1), -exponent).astype(np.float32)
        scaled = np.multiply(x, factor[:, None])
        self.element_kernel(start, stop, scaled.reshape(-1), codes.reshape(-1))
        np.add(exponent, -E8M0_MIN, out=scales, casting="unsafe")
        if nan_blocks is not None:
            scales[nan_blocks] = self.fmt.scale.nan_code()
            codes[nan_blocks] = self.nan_element


def quantize_blocks(blocks: np.ndarray, fmt, options: QuantizeOptions, tensor_scale=None, rand_bits=None):
    """Quantize (n_blocks, block_size) values: returns (scales, subscales, codes) with scales of
    shape (n_blocks,), subscales (n_blocks, subblocks) or None, codes (n_blocks, block_size)."""
    if fmt.scale.name == "ue4m3":
        return _quantize_nvfp4(blocks, fmt, options, tensor_scale, rand_bits)
    if _ChunkedE8M0Quantizer.applies(blocks, fmt, options):
        scales = np.empty(len(blocks), dtype=np.uint8)
        codes = np.empty(blocks.shape, dtype=np.uint8)
        kernel = _ChunkedE8M0Quantizer(fmt, options)
        map_chunks(kernel, len(blocks), blocks, scales, codes, chunk=max(1, BLOCK_CHUNK // fmt.block_size))
        return scales, None, codes
    x, magnitude, nan_blocks = _read(blocks, options)
    amax = magnitude.max(axis=1, initial=0.0)
    zero = amax == 0
    exponent = np.full(amax.shape, E8M0_MIN, dtype=np.int64)
    exponent[~zero] = _scale_exponents(amax[~zero], fmt.element, options.scale_rule)
    if options.inf_policy == "max_scale":
        exponent[np.isinf(x).any(axis=1)] = E8M0_MAX
    np.clip(exponent, E8M0_MIN, E8M0_MAX, out=exponent)
    shift = np.repeat(exponent[:, None], fmt.block_size, axis=1)
    if options.min_scale_divisor != "scale":  # blocks at E = -127 are divided by 2^-126 or by 1
        shift[exponent == E8M0_MIN] = -126 if options.min_scale_divisor == "min_normal" else 0
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
    scales[nan_blocks] = fmt.scale.nan_code()
    return scales, subscales, codes


def _fp32_exact(x: np.ndarray) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):
        narrowed = x.astype(np.float32).astype(np.float64)
    return bool(np.all((narrowed == x) | np.isnan(x)))


def _quantize_nvfp4(blocks, fmt, options, tensor_scale, rand_bits):
    s_t = 1.0 if tensor_scale is None else float(tensor_scale)
    if options.rounding == "stochastic" or not _fp32_exact(blocks):
        return _nvfp4_by_reference(blocks, fmt, options, tensor_scale, rand_bits)
    x, magnitude, nan_blocks = _read(blocks, options)
    amax = magnitude.max(axis=1, initial=0.0)
    lowest = float(options.nvfp4_scale_lowest)
    if options.nvfp4_arith == "fp32_steps":
        with np.errstate(over="ignore"):
            wanted = ((amax / 6).astype(np.float32).astype(np.float64) / s_t).astype(np.float32).astype(np.float64)
    else:
        wanted = amax / (6 * s_t)
    scale_codes = encode(np.clip(wanted, lowest, float(fmt.scale.max_normal)), fmt.scale)
    scale = value_table(fmt.scale)[scale_codes]
    if options.nvfp4_arith == "fp32_steps":
        with np.errstate(over="ignore"):
            inverse = np.float64(np.float32(1 / s_t))
            factor = (inverse / scale).astype(np.float32).astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = (x * factor[:, None]).astype(np.float32).astype(np.float64)
        scaled = np.where(np.isinf(x) | (x == 0), x, scaled)  # zeros stay zero even when factor is Inf
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


def dequantize_blocks(scales, subscales, codes, fmt, tensor_scale=None, scale_encoding: str = "e8m0") -> np.ndarray:
    """Exact float64 values of (n_blocks, block_size) codes. Scale values come from
    :func:`mxsim.fast.decode.scale_table` (``scale_encoding`` e8m0 | int8_exponent). A NaN scale
    gives the positive quiet NaN for its whole block; NaN and Inf elements keep their sign."""
    values = value_table(fmt.element)[codes]
    scale_values = scale_table(fmt.scale, scale_encoding)[scales]
    if tensor_scale is not None:
        scale_values = scale_values * float(tensor_scale)
    factor = np.repeat(scale_values[:, None], fmt.block_size, axis=1)
    if subscales is not None:
        factor = np.ldexp(factor, -np.repeat(subscales.astype(np.int64), fmt.subblock_size, axis=1))
    values = values * factor
    nan_scale = np.isnan(scale_values)
    if nan_scale.any():  # x86 returns the first NaN operand of a product: make the sign the scale's
        values[nan_scale] = np.nan
    return values


def dequantize_blocks_float32(scales, subscales, codes, fmt, scale_encoding: str = "e8m0") -> np.ndarray:
    """float32 values of E8M0-scaled blocks: element * 2^(E - tau) as one float32 product of two
    exact float32 operands (the element and a power of two, 2^-128 included), hence rounded once,
    nearest-even, overflowing to +-Inf; chunked over blocks on two threads. NaN lanes carry the
    NaN of the product (callers that promise a NaN sign set it; see mxsim.fast.dequant)."""
    if fmt.scale.name != "e8m0":
        raise ValueError("dequantize_blocks_float32 handles E8M0-scaled formats only")
    elements = value_table(fmt.element).astype(np.float32)
    powers = scale_table(fmt.scale, scale_encoding).astype(np.float32)  # 2^-128 .. 2^127 and NaN: all exact
    out = np.empty(codes.shape, dtype=np.float32)
    arrays = [codes, scales, out] + ([] if subscales is None else [subscales])

    def kernel(start, stop, codes, scales, out, subscales=None):
        np.take(elements, codes, out=out)
        factor = powers[scales][:, None]
        if subscales is not None:
            factor = np.ldexp(factor, -np.repeat(subscales.astype(np.int32), fmt.subblock_size, axis=1))
        with np.errstate(over="ignore"):
            np.multiply(out, factor, out=out)

    map_chunks(kernel, len(codes), *arrays, chunk=max(1, BLOCK_CHUNK // fmt.block_size))
    return out
