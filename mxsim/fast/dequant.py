"""Vectorized dequantization to an output float type, bit-identical to :mod:`mxsim.ref.dequant`.

Words are IEEE bit patterns: uint32 for float32, uint16 for float16 and bfloat16, uint64 for
float64. Steps, each exact or a single nearest-even rounding:

1. round with IEEE overflow (to +-Inf): float32 from E8M0 scales is one float32 product of two
   exact operands (:func:`mxsim.fast.block.dequantize_blocks_float32`); everything else is the
   exact float64 value (:func:`mxsim.fast.block.dequantize_blocks`; float64 holds every MX
   value) cast to float32 (one IEEE conversion) or encoded to float16 / bfloat16 by
   :func:`mxsim.fast.encode.encode` (rne, saturating) with +-Inf set at the overflow threshold;
2. :func:`apply_options`: saturation of finite overflows, flushing of subnormal words, and the
   NaN word of every NaN lane (the sign a hardware product gives a NaN is not relied on).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..options.dequantize import OUTPUTS, DequantizeOptions, output_name
from ..formats import get_format
from .block import dequantize_blocks, dequantize_blocks_float32
from .decode import scale_table, value_table
from .encode import encode

__all__ = ["WORD_DTYPES", "dequantize_blocks_bits", "apply_options", "dequantize_blocks_traced", "OutputRoundings"]

WORD_DTYPES = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16, "float64": np.uint64}


class _Words:
    """Bit-field constants of one output type, in its word dtype."""

    def __init__(self, output: str):
        fmt = get_format(OUTPUTS[output], kind="float")
        u = np.dtype(WORD_DTYPES[output]).type
        self.dtype = np.dtype(u)
        self.sign = u(fmt.sign_mask)
        self.magnitude = u(fmt.sign_mask - 1)
        self.inf = u(fmt.inf_code(False))
        self.max = u(fmt.max_code)
        self.min_normal = u(1 << fmt.mantissa_bits)
        self.nan = u(fmt.nan_code(False))


@lru_cache(maxsize=None)
def _element_tables(element):
    """Per element code: is it +-Inf, and is its sign bit set (NaN codes included)."""
    values = value_table(element)
    return np.isinf(values), np.signbit(values)


def _fp32_reciprocal_values(scales, codes, fmt, global_scale) -> np.ndarray:
    """nvfp4_arith='fp32_reciprocal' (see mxsim.ref.dequant.fp32_reciprocal_values): float32
    fp32(element * fp32(scale / gs)) in NumPy float32 arithmetic (IEEE, nearest-even, overflow to
    +-Inf; a step beyond float32 is +Inf, and 0 * Inf NaN); a NaN scale code gives NaN lanes."""
    if global_scale is None:
        raise ValueError("nvfp4_arith='fp32_reciprocal' dequantizes against the global scale gs; tensor_scale is None")
    elements = value_table(fmt.element).astype(np.float32)[codes]
    with np.errstate(over="ignore", invalid="ignore"):  # a step beyond float32 is +Inf; 0 * Inf is NaN
        step = scale_table(fmt.scale)[scales].astype(np.float32) / np.float32(global_scale)
        return elements * step[:, None]


def _round_ieee(scales, subscales, codes, fmt, output: str, tensor_scale, scale_encoding, nvfp4_arith="exact"):
    """Step 1: (words of every value rounded once to nearest-even, overflow to +-Inf; False if
    no word can be NaN, else True). nvfp4_arith='fp32_reciprocal': the library's float32 values,
    then converted to the output type."""
    if nvfp4_arith == "fp32_reciprocal":
        values = _fp32_reciprocal_values(scales, codes, fmt, tensor_scale)
        if output == "float32":
            return values.view(np.uint32), True
        if output == "float64":
            return values.astype(np.float64).view(np.uint64), True
        return _encode_half(values.astype(np.float64), output), True
    if output == "float32" and fmt.scale.name == "e8m0" and tensor_scale is None:
        values, any_nan = dequantize_blocks_float32(scales, subscales, codes, fmt, scale_encoding, nan_flag=True)
        return values.view(np.uint32), any_nan
    exact = dequantize_blocks(scales, subscales, codes, fmt, tensor_scale, scale_encoding)
    if output == "float64":
        return exact.view(np.uint64), True
    if output == "float32":
        with np.errstate(over="ignore"):
            return exact.astype(np.float32).view(np.uint32), True
    return _encode_half(exact, output), True


def _overflow_threshold(out_fmt) -> float:
    """The smallest magnitude that rounds (nearest-even) beyond the largest finite value: max +
    half its ulp, a tie that goes up because max's significand is odd (all ones)."""
    return float(out_fmt.max_normal + Fraction(2) ** (out_fmt.emax - out_fmt.mantissa_bits - 1))


def _encode_half(exact: np.ndarray, output: str) -> np.ndarray:
    """float16 / bfloat16 words of exact float64 values, rne, overflow to +-Inf: the saturating
    kernel of mxsim.fast.encode (several times faster than its IEEE-overflow kernel), then +-Inf
    wherever |x| reaches the overflow threshold (Inf elements included; NaN never compares)."""
    out_fmt = get_format(OUTPUTS[output], kind="float")
    words = encode(exact, out_fmt, "rne", "saturate").view(np.uint16)
    with np.errstate(invalid="ignore"):
        beyond = np.flatnonzero(np.abs(exact.reshape(-1)) >= _overflow_threshold(out_fmt))
    if beyond.size:
        flat = words.reshape(-1)
        flat[beyond] = (flat[beyond] & np.uint16(out_fmt.sign_mask)) | np.uint16(out_fmt.inf_code(False))
    return words


def _nan_lanes(flat, output: str, w: _Words) -> np.ndarray:
    """Mask of the NaN words (float32 / float64 read as floats: one vectorized isnan pass)."""
    if output in ("float32", "float64"):
        return np.isnan(flat.view(np.float32 if output == "float32" else np.float64))
    return (flat & w.magnitude) > w.inf


def apply_options(words, output: str, options: DequantizeOptions, element_inf, nan_sign, maybe_nan: bool = True):
    """Step 2, in place on ``words`` (IEEE-overflow words of one output type):

    * ``dequant_overflow='saturate'``: +-Inf words whose element is not +-Inf become +-max finite;
    * ``dequant_ftz``: subnormal words become zeros of their sign;
    * NaN words become the output's quiet NaN, with the sign bit ``nan_sign`` (a callable giving
      a boolean mask for the NaN lanes' flat indices) under ``keep_sign``, positive under
      ``canonical``.
    ``element_inf``: callable giving, for flat indices, whether the element there is +-Inf.
    ``maybe_nan=False`` (the caller knows no word is NaN) skips the search for NaN words."""
    w = _Words(output)
    flat = np.ascontiguousarray(words).reshape(-1)
    nan = _nan_lanes(flat, output, w) if maybe_nan else None
    if options.dequant_overflow == "saturate" or options.dequant_ftz:
        magnitude = flat & w.magnitude
        if options.dequant_overflow == "saturate":
            lanes = np.flatnonzero(magnitude == w.inf)
            lanes = lanes[~element_inf(lanes)]
            flat[lanes] = (flat[lanes] & w.sign) | w.max
        if options.dequant_ftz:
            subnormal = (magnitude != 0) & (magnitude < w.min_normal)
            flat[subnormal] &= w.sign
    lanes = np.flatnonzero(nan) if maybe_nan else np.zeros(0, np.intp)
    if lanes.size:
        negative = nan_sign(lanes) if options.dequant_nan == "keep_sign" else np.zeros(lanes.size, bool)
        flat[lanes] = np.where(negative, w.nan | w.sign, w.nan)
    return flat.reshape(words.shape)


def dequantize_blocks_bits(
    scales,
    subscales,
    codes,
    fmt,
    output="float32",
    options: DequantizeOptions = DequantizeOptions(),
    tensor_scale=None,
    scale_encoding: str = "e8m0",
    nvfp4_arith: str = "exact",
) -> np.ndarray:
    """Output words of (n_blocks, block_size) codes, same shape, dtype per :data:`WORD_DTYPES`.

    ``scales`` (n_blocks,), ``subscales`` (n_blocks, subblocks) or None, ``codes`` (n_blocks,
    block_size); ``tensor_scale``: NVFP4's s_t (the divisor gs under ``nvfp4_arith='fp32_reciprocal'``,
    the quantize option the tensor was made under). Same words as :func:`mxsim.ref.dequant.
    dequantize_block_bits`: a NaN scale gives the positive quiet NaN for its whole block, a NaN
    element its own sign under ``keep_sign``, an Inf element +-Inf."""
    output = output_name(output)
    if not isinstance(options, DequantizeOptions):
        raise ValueError(f"options must be DequantizeOptions, got {type(options).__name__}")
    fmt = get_format(fmt, kind="block")
    words, maybe_nan = _round_ieee(scales, subscales, codes, fmt, output, tensor_scale, scale_encoding, nvfp4_arith)
    inf_table, sign_table = _element_tables(fmt.element)
    flat_codes = codes.reshape(-1)
    k = fmt.block_size

    def element_inf(lanes):
        return inf_table[flat_codes[lanes]]

    def nan_sign(lanes):
        nan_scale = np.isnan(scale_table(fmt.scale, scale_encoding)[scales.reshape(-1)[lanes // k]])
        return sign_table[flat_codes[lanes]] & ~nan_scale

    return apply_options(words, output, options, element_inf, nan_sign, maybe_nan)


class OutputRoundings(NamedTuple):
    """What the output roundings of :func:`dequantize_blocks_traced` decided on, flat arrays of
    n_blocks * block_size values (docs/numerics.md sections 3.1 and 3.3): the fast path's half of the
    record whose reference half is :class:`mxsim.ref.dequant.OutputRounding`. ``rounds`` (bool): the
    value is finite and nonzero (not a NaN-scale block's); ``negative`` (bool): its sign; ``value``
    (float64 >= 0, exact): its magnitude, 0 where it does not round; ``grid`` (int64): the exponent of
    the output's step at it (2^(max(floor(log2 value), emin) - mantissa_bits)); ``quotient``
    (int64): the step count of the value's nearest-even IEEE word (before ``dequant_overflow`` and
    ``dequant_ftz``; 0 where that word is Inf); ``last_bit`` (float64 > 0): the value's resolution,
    its element's last significand bit times the block's multiplier (1 where it does not round)."""

    rounds: np.ndarray
    negative: np.ndarray
    value: np.ndarray
    grid: np.ndarray
    quotient: np.ndarray
    last_bit: np.ndarray


def _word_magnitudes(words: np.ndarray, output: str) -> np.ndarray:
    """float64 magnitudes of IEEE words of ``output`` (Inf and NaN as such)."""
    if output == "bfloat16":
        as_float = (words.astype(np.uint32) << np.uint32(16)).view(np.float32)
    else:
        as_float = words.view({"float32": np.float32, "float64": np.float64, "float16": np.float16}[output])
    return np.abs(as_float.astype(np.float64))


@lru_cache(maxsize=None)
def _element_last_bits(element) -> np.ndarray:
    """Per element code: the weight of its last significand bit (2^(max(floor(log2 |v|), emin) -
    mantissa_bits) for floats, 2^-frac_bits for integers); 1 for zeros, NaN and Inf."""
    values = np.abs(value_table(element))
    usable = np.isfinite(values) & (values > 0)
    if element.kind != "float":
        return np.where(usable, 2.0 ** -element.frac_bits, 1.0)
    exponent = np.frexp(np.where(usable, values, 1.0))[1] - 1
    return np.where(usable, np.ldexp(1.0, np.maximum(exponent, element.emin) - element.mantissa_bits), 1.0)


def dequantize_blocks_traced(scales, subscales, codes, fmt, output="float32", options: DequantizeOptions = DequantizeOptions(),
                             tensor_scale=None, scale_encoding: str = "e8m0") -> tuple[np.ndarray, OutputRoundings]:
    """(:func:`dequantize_blocks_bits` under nvfp4_arith 'exact', what each value's output rounding
    decided on: :class:`OutputRoundings`), from the exact float64 values
    (:func:`mxsim.fast.block.dequantize_blocks`) and the step-1 words (nearest-even, overflow to
    +-Inf)."""
    output = output_name(output)
    fmt = get_format(fmt, kind="block")
    words = dequantize_blocks_bits(scales, subscales, codes, fmt, output, options, tensor_scale, scale_encoding)
    out_fmt = get_format(OUTPUTS[output], kind="float")
    exact = dequantize_blocks(scales, subscales, codes, fmt, tensor_scale, scale_encoding).reshape(-1)
    ieee, _ = _round_ieee(scales, subscales, codes, fmt, output, tensor_scale, scale_encoding)
    result = _word_magnitudes(ieee.reshape(-1), output)
    rounds = np.isfinite(exact) & (exact != 0)
    value = np.where(rounds, np.abs(exact), 0.0)
    grid = np.where(rounds, np.maximum(np.frexp(np.where(rounds, value, 1.0))[1] - 1, out_fmt.emin)
                    - out_fmt.mantissa_bits, 0).astype(np.int64)
    with np.errstate(invalid="ignore"):
        steps = np.ldexp(result, -grid)
    quotient = np.where(rounds & np.isfinite(steps), steps, 0).astype(np.int64)
    factor = scale_table(fmt.scale, scale_encoding)[scales] * (1.0 if tensor_scale is None else float(tensor_scale))
    factor = np.repeat(factor[:, None], fmt.block_size, axis=1)
    if subscales is not None:
        factor = np.ldexp(factor, -np.repeat(np.asarray(subscales).astype(np.int64), fmt.subblock_size, axis=1))
    last_bit = np.where(rounds, _element_last_bits(fmt.element)[codes].reshape(-1) * factor.reshape(-1), 1.0)
    return words, OutputRoundings(rounds, np.signbit(exact) & rounds, value, grid, quotient, last_bit)
