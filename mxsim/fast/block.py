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

The shared scale exponents E (scale rules, clamps, caller-supplied scale bytes) come from
:mod:`.block_scale`; NVFP4's per-tensor parts from :mod:`.nvfp4`.
"""

from __future__ import annotations

import threading

import numpy as np

from ..options import QuantizeOptions
from ..ref.block import (
    FP32_MIN_NORMAL,
    as_normal_fp32_error,
    given_scales_format_error,
    inf_block_error,
    nan_block_element_code,
    nan_block_error,
    nan_block_scale,
    nan_element_code,
    reciprocal_special_error,
)
from ..ref.scale import E8M0_MAX, E8M0_MIN, scale_byte
from ..ref.sources import check_source_options, inf_stand_in, scale_inf_stand_in
from .block_roundings import FP32_LAST_BIT_FLOOR, RoundingInputs, last_bit_floor
from .block_scale import computed_exponents, floor_log2, given_exponents, rule_exponents
from .chunks import BLOCK_CHUNK, map_chunks
from .decode import scale_table, value_table
from .encode import _Binary, _IntKernel, encode, fp32_rne_table, fp32_table_index
from .fp32_steps import fp32_log2_elements, fp32_log2_floor
from .nvfp4 import nvfp4_by_reference, tensor_scales

__all__ = ["quantize_blocks", "quantize_blocks_traced", "dequantize_blocks", "dequantize_blocks_float32", "floor_log2"]

TINY = 2.0**-1000


def _read_subnormals(x: np.ndarray, mode: str) -> np.ndarray:
    """subnormal_inputs (see mxsim.ref.sources.read_subnormal) on float64 values: 'flush' makes
    nonzero magnitudes below 2^-126 signed zeros; 'flush_plus' makes every magnitude below 2^-126
    (zeros included) +0; 'as_normal' reads them (fp32 subnormals m * 2^-149) as 2^-127 + |x| / 2,
    exact in float64. NaN and Inf pass unchanged."""
    if mode == "exact":
        return x
    if mode == "flush_plus":
        with np.errstate(invalid="ignore"):
            return np.where(np.abs(x) < float(FP32_MIN_NORMAL), 0.0, x)
    tiny = (np.abs(x) < float(FP32_MIN_NORMAL)) & (x != 0)
    if mode == "flush":
        return np.where(tiny, np.copysign(0.0, x), x)
    return np.where(tiny, np.copysign(2.0**-127 + np.abs(x) / 2, x), x)


def _read(blocks: np.ndarray, options: QuantizeOptions, source: str):
    """(values, scale magnitudes, NaN-block mask, per-element NaN mask) of (n, k) blocks.

    Scale magnitudes: |x|, an Inf as the source type's largest finite value (specials='block',
    inf_policy='saturate'), NaN and Inf as 0 under specials='per_element'. NaN blocks and NaN
    elements read as 0 in the values (their codes are set afterwards)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs quieten when widened; they stay NaN
        x = blocks.astype(np.float64)
    x = _read_subnormals(x, options.subnormal_inputs)
    nan = np.isnan(x)
    if options.nan_blocks == "error" and nan.any():
        raise nan_block_error(f"block {int(np.flatnonzero(nan.any(axis=1))[0])}")
    inf = np.isinf(x)
    if options.inf_policy == "error" and inf.any():
        raise inf_block_error(f"block {int(np.flatnonzero(inf.any(axis=1))[0])}")
    if options.specials == "block":
        nan_blocks = nan.any(axis=1) | (inf.any(axis=1) if options.inf_policy == "nan" else False)
        if options.inf_policy == "exponent_field":
            stand_in = 2.0**128
        else:  # looked up only where an Inf is: fp64's largest value refuses fp32 arithmetic
            stand_in = float(scale_inf_stand_in(source, options)) if inf.any() else 0.0
        magnitude = np.where(inf, stand_in, np.abs(x))
        nan_elements = None
    else:
        nan_blocks = np.zeros(len(x), dtype=bool)
        magnitude = np.where(nan | inf, 0.0, np.abs(x))
        nan_elements = nan if nan.any() else None
    magnitude[nan_blocks] = 0.0
    x[nan_blocks] = 0.0
    if nan_elements is not None:
        x = np.where(nan_elements, np.copysign(0.0, x), x)
    return x, magnitude, nan_blocks, nan_elements


def _set_nan_codes(fmt, options: QuantizeOptions, codes, scales, nan_blocks, nan_elements, signs) -> None:
    """NaN blocks: scale NaN code, elements the NaN-block code; per-element NaNs: the NaN code
    with the input's sign bit (ValueError for elements without NaN)."""
    if nan_blocks.any():
        scales[nan_blocks] = nan_block_scale(fmt, options)
        codes[nan_blocks] = nan_block_element_code(fmt.element, options)
    if nan_elements is not None:
        nan_code = nan_element_code(fmt.element, options)
        codes[nan_elements] = nan_code | np.where(signs[nan_elements], fmt.element.sign_mask, 0)


def _scaled(x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """x / 2^shift in float64; a nonzero quotient that ldexp flushes to zero (a float64 input far
    below the scale) becomes +-TINY, which rounds like the exact quotient (see the module docstring)."""
    scaled = np.ldexp(x, -shift)
    return np.where((scaled == 0) & (x != 0), np.copysign(TINY, x), scaled)


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


class _ChunkedE8M0Quantizer:
    """Single-level E8M0 formats, float32 input, rne, exact subnormals, specials='block', computed
    E8M0 scales: cache-sized chunks of blocks (on two threads, each writing its own blocks),
    block maxima from the integer bit patterns, the scale applied as an exact power-of-two
    float32 product, and the elements encoded through :func:`mxsim.fast.encode.fp32_rne_table`
    (float elements) or the integer kernel of mxsim.fast.encode (MXINT8).

    Why the float32 product is exact enough: x * 2^-E is exact unless it falls below 2^-126,
    and anything that small lies far below half the smallest step of every element format, so
    rne gives (signed) zero either way. Under scale_rule='floor' the exponent comes from the
    block maximum's exponent field: E = max(field - 127 - emax, -127), which also gives -127 for
    zero and fp32-subnormal maxima (floor(log2) <= -127 and emax >= 0)."""

    FP32 = _Binary(np.float32)

    @classmethod
    def applies(cls, blocks, fmt, options: QuantizeOptions, source: str, scales) -> bool:
        element = fmt.element
        kernel_fits = fp32_rne_table(element) is not None or _IntKernel.applies(element, "rne", "saturate", cls.FP32)
        return (
            blocks.dtype == np.float32
            and source != "fp64"
            and scales is None
            and fmt.scale.name == "e8m0"
            and not fmt.subblocks
            and options.rounding == "rne"
            and options.subnormal_inputs == "exact"
            and options.specials == "block"
            and options.scale_encoding == "e8m0"
            and options.inf_policy in ("nan", "saturate")
            and options.min_scale_divisor == "scale"
            and options.scale_rule not in ("floor_fp32", "ceil_fp32")
            and options.scale_offset == 0
            and options.scale_round_bits is None
            and options.nan_blocks == "nan"
            and options.scale_value_min == "none"
            and options.zero_block_scale == "scale_min"
            and options.scale_min == E8M0_MIN
            and options.scale_underflow == "clamp"
            and options.element_arith == "exact"
            and options.zero_sign == "keep"
            and not options.flush_subnormal_blocks
            and element.emax >= 0
            and kernel_fits
        )

    def __init__(self, fmt, options: QuantizeOptions, source: str):
        self.fmt, self.options = fmt, options
        element = fmt.element
        self.table = fp32_rne_table(element)
        if self.table is None:
            self.element_kernel = _IntKernel(element, "rne", "saturate", options.int8_allow_neg2)
        self.nan_element = nan_block_element_code(element, options)
        # an Inf counts as the source type's largest finite value (exact in float32 for every
        # source but fp64, which never comes here)
        self.inf_stand_in = np.float32(float(inf_stand_in(source))).view(np.uint32)
        # 2^-E for E = E8M0_MIN .. E8M0_MAX, exact float32 (2^127 .. 2^-127, a subnormal)
        self.factors = np.ldexp(np.float32(1), -np.arange(E8M0_MIN, E8M0_MAX + 1)).astype(np.float32)
        self._local = threading.local()

    def _scratch(self, size: int):
        """Per-thread buffers (uint32 work, float32 products) and block offsets, reused across chunks."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None or buffers[0].size < size:
            k = self.fmt.block_size
            buffers = (np.empty(size, np.uint32), np.empty(size, np.float32), np.arange(0, size, k))
            self._local.buffers = buffers
        work, scaled, offsets = buffers
        return work[:size], scaled[:size], offsets[: size // self.fmt.block_size]

    def _exponents(self, amax_bits: np.ndarray) -> np.ndarray:
        """Clamped scale exponents E (int32) of block maxima given as float32 bit patterns."""
        element = self.fmt.element
        if self.options.scale_rule == "floor":
            exponent = (amax_bits >> np.uint32(23)).astype(np.int32)
            exponent -= 127 + element.emax
            return np.maximum(exponent, E8M0_MIN, out=exponent)
        amax = amax_bits.view(np.float32).astype(np.float64)
        exponent = np.full(amax.shape, E8M0_MIN, dtype=np.int32)
        nonzero = amax > 0
        exponent[nonzero] = rule_exponents(amax[nonzero], element, self.options.scale_rule)
        np.maximum(exponent, E8M0_MIN, out=exponent)
        return np.minimum(exponent, E8M0_MAX, out=exponent)

    def __call__(self, start, stop, x, scales, codes):
        flat_codes = codes.reshape(-1)
        work, scaled, offsets = self._scratch(x.size)
        bits = x.reshape(-1).view(np.uint32)
        np.bitwise_and(bits, np.uint32(0x7FFFFFFF), out=work)
        # Block maxima of the bit patterns (ordered like the magnitudes); reduceat on the flat
        # view is about 1.6x faster than max(axis=1) on short rows. A NaN's pattern exceeds
        # Inf's, so the maximum tells NaN blocks too.
        amax_bits = np.maximum.reduceat(work, offsets)
        nan_blocks = None
        if amax_bits.max() >= 0x7F800000:  # Inf or NaN somewhere in the chunk
            nan_blocks = amax_bits > 0x7F800000
            infinite = amax_bits == 0x7F800000
            if self.options.inf_policy == "nan":
                nan_blocks |= infinite
            else:
                amax_bits[infinite] = self.inf_stand_in
            amax_bits[nan_blocks] = 0  # no NaN bit patterns below; the codes are set at the end
        exponent = self._exponents(amax_bits)
        factor = self.factors[exponent - E8M0_MIN]
        with np.errstate(invalid="ignore", over="ignore"):  # NaN blocks only: their codes are set below
            np.multiply(x, factor[:, None], out=scaled.reshape(x.shape))
        if self.table is not None:
            # NaN lanes (NaN blocks only) look up harmless entries, overwritten below
            np.take(self.table, fp32_table_index(scaled.view(np.uint32), work), out=flat_codes, mode="clip")
        else:
            if nan_blocks is not None:
                scaled.reshape(x.shape)[nan_blocks] = 0
            self.element_kernel(start, stop, scaled, flat_codes)
        np.subtract(exponent, E8M0_MIN, out=scales, casting="unsafe")
        if nan_blocks is not None:
            scales[nan_blocks] = self.fmt.scale.nan_code()
            codes[nan_blocks] = self.nan_element


def _check_fp32_inputs(blocks: np.ndarray, options: QuantizeOptions) -> None:
    """scale_rule='floor_fp32' and element_arith='fp32_log2' emulate float32 arithmetic: float32
    values only (as the reference, ValueError naming the first other value)."""
    if not options.fp32_arithmetic:
        return
    if options.subnormal_inputs == "as_normal":
        with np.errstate(invalid="ignore"):
            magnitude = np.abs(blocks.astype(np.float64))
        tiny = (magnitude > 0) & (magnitude < float(FP32_MIN_NORMAL))
        if tiny.any():
            raise as_normal_fp32_error(f"block {int(np.flatnonzero(tiny.any(axis=1))[0])}")
    if blocks.dtype == np.float32:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        bad = (blocks.astype(np.float32).astype(np.float64) != blocks) & np.isfinite(blocks)
    if bad.any():
        index = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
        raise ValueError(
            f"value {float(blocks[index])!r} (block {index[0]}, element {index[1]}) is not a float32 value; "
            "scale_rule='floor_fp32', element_arith='fp32_log2', scale_value_min and nvfp4_arith='fp32_reciprocal' "
                    "reproduce float32 arithmetic and "
            "take float32 inputs only"
        )


def _flush_subnormal_blocks(x: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """flush_subnormal_blocks: zeros (of their sign) for blocks whose amax has a float32 log2
    below -126."""
    amax = magnitude.max(axis=1, initial=0.0)
    flush = np.zeros(len(x), dtype=bool)
    positive = amax > 0
    flush[positive] = fp32_log2_floor(amax[positive]) < -126
    return np.where(flush[:, None], np.copysign(0.0, x), x)


def quantize_blocks(
    blocks: np.ndarray, fmt, options: QuantizeOptions, tensor_scale=None, rand_bits=None, source=None, scales=None
):
    """Quantize (n_blocks, block_size) values: returns (scales, subscales, codes) with scales of
    shape (n_blocks,), subscales (n_blocks, subblocks) or None, codes (n_blocks, block_size).

    ``source``: the type the values came from (mxsim.ref.sources; default fp32 for float32
    blocks, fp64 for float64). ``scales``: caller-supplied scale bytes, n_blocks of them in C
    order, any shape (see :func:`given_exponents`; E8M0-scaled formats only). ``tensor_scale``
    (NVFP4's s_t, docs/numerics.md section 2.2): None (1), one value for every block, or a
    (n_blocks,) array of one per block (blocks of different tensors quantized in one call; each
    block's outputs equal a call with its own scalar s_t); see :func:`.nvfp4.tensor_scales`."""
    return _quantize(blocks, fmt, options, tensor_scale, rand_bits, source, scales, False)[:3]


def quantize_blocks_traced(blocks: np.ndarray, fmt, options: QuantizeOptions, tensor_scale=None):
    """:func:`quantize_blocks` of float32 blocks (deterministic rounding) and what every element's
    rounding decided on: (scales, subscales, codes, :class:`.block_roundings.RoundingInputs`), the
    record taken from this quantizer's own arrays. ValueError where the record is not kept: stochastic
    rounding, or NVFP4 inputs that go block by block through the reference."""
    if options.rounding == "stochastic" or blocks.dtype != np.float32:
        raise ValueError("rounding records are kept for float32 blocks under a deterministic rounding only")
    return _quantize(blocks, fmt, options, tensor_scale, None, None, None, True)


def _quantize(blocks, fmt, options: QuantizeOptions, tensor_scale, rand_bits, source, scales, trace: bool):
    """(scales, subscales, codes, the :class:`RoundingInputs` if ``trace`` else None)."""
    source = source or ("fp32" if blocks.dtype == np.float32 else "fp64")
    check_source_options(source, options)
    if fmt.scale.name == "ue4m3":
        if scales is not None:
            raise given_scales_format_error(fmt)
        return _quantize_nvfp4(blocks, fmt, options, tensor_scale, rand_bits, source, trace)
    if _ChunkedE8M0Quantizer.applies(blocks, fmt, options, source, scales):
        out_scales = np.empty(len(blocks), dtype=np.uint8)
        codes = np.empty(blocks.shape, dtype=np.uint8)
        kernel = _ChunkedE8M0Quantizer(fmt, options, source)
        map_chunks(kernel, len(blocks), blocks, out_scales, codes, chunk=max(1, BLOCK_CHUNK // fmt.block_size))
        return out_scales, None, codes, (_chunked_trace(blocks, out_scales) if trace else None)
    given = None if scales is None else given_exponents(scales, options).reshape(-1)
    if given is not None and given.size != len(blocks):
        raise ValueError(f"scales hold {given.size} scale bytes; expected one per block ({len(blocks)})")
    _check_fp32_inputs(blocks, options)
    x, magnitude, nan_blocks, nan_elements = _read(blocks, options, source)
    if given is None:
        exponent, overflow = computed_exponents(magnitude, fmt, options, x, nan_blocks)
        if overflow is not None and overflow.any():
            nan_blocks = nan_blocks | overflow
            x[overflow] = 0.0
    else:
        exponent = given
    if options.flush_subnormal_blocks:
        x = _flush_subnormal_blocks(x, magnitude)
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
    if options.element_arith == "fp32_log2":
        magnitudes, negative = fp32_log2_elements(x.astype(np.float32), exponent, fmt.element, options.rounding)
        if options.zero_sign == "keep":
            negative = np.signbit(x)
        codes = encode(np.where(negative, -magnitudes, magnitudes), fmt.element, "rne", "saturate")
    elif options.zero_sign == "plus_input":  # +0 where the float32 quotient x / 2^E is zero (|x / 2^E| <= 2^-150)
        scaled = _scaled(x, shift)
        codes = _element_codes(np.where(np.abs(scaled) > 2.0**-150, scaled, 0.0), fmt, options, rand_bits)
    else:
        codes = _element_codes(_scaled(x, shift), fmt, options, rand_bits)
    codes = _plus_zeros(codes, fmt.element, options)
    out_scales = scale_byte(exponent, options.scale_encoding).astype(np.uint8)
    _set_nan_codes(fmt, options, codes, out_scales, nan_blocks, nan_elements, np.signbit(x))
    record = None
    if trace:  # the element rounds x / 2^shift (element_arith='fp32_log2': through its float32 steps)
        record = _trace(blocks, x, np.ldexp(1.0, shift), last_bit_floor(options.subnormal_inputs), nan_blocks)
    return out_scales, subscales, codes, record


def _trace(blocks: np.ndarray, value: np.ndarray, divisor: np.ndarray, floor: int, nan_blocks=None) -> RoundingInputs:
    """The :class:`RoundingInputs` of elements that round the signed float64 ``value`` / ``divisor``
    (NaN blocks and zero, NaN and Inf values do not round); the sign is the input's."""
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(value)
        rounds = (magnitude > 0) & (magnitude < np.inf)
    if nan_blocks is not None:
        rounds &= ~nan_blocks[:, None]
    return RoundingInputs(rounds, np.signbit(blocks), np.where(rounds, magnitude, 0.0), divisor, floor)


def _chunked_trace(blocks: np.ndarray, out_scales: np.ndarray) -> RoundingInputs:
    """The record of :class:`_ChunkedE8M0Quantizer`'s blocks: each element x (read exactly) divided by
    2^E of its block's scale byte E + 127 (0xFF: a NaN block, whose elements do not round)."""
    exponent = out_scales.astype(np.int32) - 127
    with np.errstate(invalid="ignore"):  # signalling NaNs quieten when widened (they do not round)
        values = blocks.astype(np.float64)
    return _trace(blocks, values, np.ldexp(1.0, exponent)[:, None], FP32_LAST_BIT_FLOOR, out_scales == 0xFF)


def _fp32_exact(x: np.ndarray) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):
        narrowed = x.astype(np.float32).astype(np.float64)
    return bool(np.all((narrowed == x) | np.isnan(x)))


def _quantize_nvfp4(blocks, fmt, options, tensor_scale, rand_bits, source: str, trace: bool = False):
    """NVFP4 blocks, each divided by its own tensor scale (:func:`.nvfp4.tensor_scales`; every step below
    is elementwise, so a block's result does not depend on the other blocks of the call). With
    ``trace``, the :class:`RoundingInputs` as a fourth item (else None)."""
    given = tensor_scales(fmt, tensor_scale, len(blocks))
    if options.rounding == "stochastic" or not _fp32_exact(blocks):
        if trace:
            raise ValueError("NVFP4 blocks that go through the reference keep no fast rounding record")
        return (*nvfp4_by_reference(blocks, fmt, options, given, rand_bits, source), None)
    s_t = np.ones(len(blocks)) if given is None else given
    if options.nvfp4_arith == "fp32_reciprocal":
        scale_codes, _, codes, scaled = _quantize_nvfp4_reciprocal(blocks, fmt, options, s_t, rand_bits)
        # each element rounds its fp32 quotient x / fp32(scale / gs), divided by 1
        record = _trace(blocks, scaled, np.ones((len(blocks), 1)), FP32_LAST_BIT_FLOOR) if trace else None
        return scale_codes, None, codes, record
    x, magnitude, nan_blocks, _ = _read(blocks, options, source)
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
        with np.errstate(over="ignore", divide="ignore"):
            inverse = (1 / s_t).astype(np.float32).astype(np.float64)
            factor = (inverse / scale).astype(np.float32).astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = (x * factor[:, None]).astype(np.float32).astype(np.float64)
        scaled = np.where(np.isinf(x) | (x == 0), x, scaled)  # zeros stay zero even when factor is Inf
    else:
        scaled = x / (s_t * scale)[:, None]
    codes = _nvfp4_element_codes(scaled, fmt, options, rand_bits)
    _set_nan_codes(fmt, options, codes, scale_codes, nan_blocks, None, None)
    record = None
    if trace and options.nvfp4_arith == "fp32_steps":  # each element rounds fp32(x * factor), divided by 1
        record = _trace(blocks, scaled, np.ones((len(x), 1)), FP32_LAST_BIT_FLOOR, nan_blocks)
    elif trace:  # each element rounds x / (s_t * scale) (exact in binary64: 24 times 4 bits)
        record = _trace(blocks, x, (s_t * scale)[:, None], last_bit_floor(options.subnormal_inputs), nan_blocks)
    return scale_codes, None, codes, record


def _nvfp4_element_codes(scaled: np.ndarray, fmt, options: QuantizeOptions, rand_bits) -> np.ndarray:
    """Codes of NVFP4 quotients; zero_sign='plus_input': a quotient of magnitude <= 2^-150 (one
    whose float32 value is zero) encodes as +0, as the reference."""
    if options.zero_sign == "plus_input":
        scaled = np.where(np.abs(scaled) > 2.0**-150, scaled, 0.0)
    return _plus_zeros(_element_codes(scaled, fmt, options, rand_bits), fmt.element, options)


def _plus_zeros(codes: np.ndarray, element, options: QuantizeOptions) -> np.ndarray:
    """zero_sign='plus' (contract 6.2, Quark FP4/FP6): every -0 code of a float element becomes +0."""
    if options.zero_sign == "plus" and element.kind == "float":
        return np.where(codes == element.sign_mask, 0, codes).astype(codes.dtype)
    return codes


def _quantize_nvfp4_reciprocal(blocks, fmt, options, global_scale: np.ndarray, rand_bits):
    """nvfp4_arith='fp32_reciprocal' (compressed-tensors 0.20, contract 6.2) in numpy float32
    (IEEE, nearest-even at every step), as :func:`mxsim.ref.block._quantize_nvfp4_reciprocal`, on the
    inputs as ``subnormal_inputs`` reads them ('as_normal' refuses fp32 subnormals, as the reference);
    ``global_scale``: one per block, (n_blocks,). Returns (scale codes, None, codes, the float64 fp32
    quotients the elements round)."""
    _check_fp32_inputs(blocks, options)
    x = _read_subnormals(blocks.astype(np.float64), options.subnormal_inputs).astype(np.float32)
    if not np.isfinite(x).all():
        raise reciprocal_special_error()
    gs = np.asarray(global_scale).astype(np.float32)
    amax = np.abs(x).max(axis=1, initial=np.float32(0))
    with np.errstate(over="ignore"):
        product = gs * (amax / np.float32(6))
    wanted = np.minimum(product.astype(np.float64), float(fmt.scale.max_normal))
    scale_codes = encode(wanted, fmt.scale)
    scale_codes = np.where(scale_codes == 0, encode(np.array([0.125]), fmt.scale)[0], scale_codes).astype(np.uint8)
    step = value_table(fmt.scale)[scale_codes].astype(np.float32) / gs
    with np.errstate(over="ignore"):
        scaled = (x / step[:, None]).astype(np.float64)
    return scale_codes, None, _nvfp4_element_codes(scaled, fmt, options, rand_bits), scaled


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


def dequantize_blocks_float32(scales, subscales, codes, fmt, scale_encoding: str = "e8m0", *, nan_flag: bool = False):
    """float32 values of E8M0-scaled blocks: element * 2^(E - tau) as one float32 product of two
    exact float32 operands (the element and a power of two, 2^-128 included), hence rounded once,
    nearest-even, overflowing to +-Inf; chunked over blocks on two threads. NaN lanes carry the
    NaN of the product (callers that promise a NaN sign set it; see mxsim.fast.dequant).
    ``nan_flag``: return (values, whether any value is NaN), the flag found per chunk while the
    chunk is in cache (a maximum propagates NaN)."""
    if fmt.scale.name != "e8m0":
        raise ValueError("dequantize_blocks_float32 handles E8M0-scaled formats only")
    elements = value_table(fmt.element).astype(np.float32)
    powers = scale_table(fmt.scale, scale_encoding).astype(np.float32)  # 2^-128 .. 2^127 and NaN: all exact
    out = np.empty(codes.shape, dtype=np.float32)
    arrays = [codes, scales, out] + ([] if subscales is None else [subscales])

    nan_chunks = []

    def kernel(start, stop, codes, scales, out, subscales=None):
        np.take(elements, codes, out=out, mode="clip")  # codes < 2^width: no bounds check (mode="raise" buffers out)
        factor = powers[scales][:, None]
        if subscales is not None:
            factor = np.ldexp(factor, -np.repeat(subscales.astype(np.int32), fmt.subblock_size, axis=1))
        with np.errstate(over="ignore"):
            np.multiply(out, factor, out=out)
        if nan_flag and np.isnan(out.max()):
            nan_chunks.append(start)

    map_chunks(kernel, len(codes), *arrays, chunk=max(1, BLOCK_CHUNK // fmt.block_size))
    return (out, bool(nan_chunks)) if nan_flag else out
