"""MXTensor: a block-quantized tensor (scale codes, element codes, shape, axis, options).

Layout of the arrays (blocks run along the last axis of ``codes``):

* ``codes``: element codes, shape = the original shape with the block axis moved last and
  padded to a multiple of block_size; uint8 (uint16 for wider elements);
* ``scales``: one scale code per block, shape ``codes.shape[:-1] + (n_blocks,)``, uint8
  (E8M0 code, or UE4M3 code for NVFP4);
* ``subscales``: for shared-microexponent formats, one microexponent per sub-block, shape
  ``scales.shape + (subblocks,)``, uint8; else None;
* ``tensor_scale``: NVFP4's fp32 tensor scale s_t as an exact Fraction; else None.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .block_policy import QuantizeOptions
from .fast.block import dequantize_blocks, dequantize_blocks_float32, quantize_blocks
from .fast.decode import check_codes, code_dtype
from .fast.encode import _as_binary_array
from .formats import get_format
from .ref.block import FP32_MAX, check_tensor_scale, nvfp4_tensor_scale
from .ref.exact import as_int

__all__ = ["MXTensor", "quantize"]


def normalize_axis(axis, ndim: int) -> int:
    """``axis`` of an ``ndim``-d array (a scalar counts as 1-d) as an index in [0, ndim).
    ValueError unless ``axis`` is an integer (int or NumPy integer; not a bool) in [-ndim, ndim)."""
    n = max(ndim, 1)
    index = as_int(axis)
    if index is None:
        raise ValueError(f"axis={axis!r} is not allowed; expected an integer (not a bool) in [{-n}, {n})")
    if not -n <= index < n:
        raise ValueError(f"axis={axis!r} is out of range for a {ndim}-d array; expected an integer in [{-n}, {n})")
    return index % n


def restore_layout(values: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    """Blocked values (block axis last, padded) back to the original ``shape`` and ``axis``."""
    length = shape[axis] if shape else 1
    return np.moveaxis(values[..., :length], -1, axis).reshape(shape)


class MXTensor:
    """A block-quantized tensor. Build one with :func:`mxsim.quantize` or :meth:`from_codes`."""

    def __init__(self, fmt, scales, codes, shape, axis, options: QuantizeOptions, subscales=None, tensor_scale=None):
        self.fmt = get_format(fmt, kind="block")
        self.scales, self.codes, self.subscales = scales, codes, subscales
        self.shape, self.axis, self.options = tuple(shape), axis, options
        self.tensor_scale = None if tensor_scale is None else Fraction(tensor_scale)

    # --- construction --------------------------------------------------------------------------
    @classmethod
    def quantize(cls, x, fmt, axis: int = -1, rand_bits=None, **options) -> "MXTensor":
        """Quantize a float array (float16, bfloat16, float32, float64) along ``axis``.

        ``options`` are the fields of :class:`mxsim.QuantizeOptions` (scale_rule, rounding,
        inf_policy, flush_subnormal_inputs, partial_block, int8_allow_neg2, nvfp4_*).
        ``rand_bits``: random words of x's shape, for rounding='stochastic'.
        """
        fmt = get_format(fmt, kind="block")
        opts = QuantizeOptions.from_kwargs(**options)
        opts.check_format(fmt)
        if (opts.rounding == "stochastic") != (rand_bits is not None):
            raise ValueError("rand_bits is needed with rounding='stochastic', and only then")
        values = _as_binary_array(x)
        axis = normalize_axis(axis, values.ndim)
        moved = np.moveaxis(values.reshape(values.shape or (1,)), axis, -1)
        blocks, padded_shape = cls._blocks(moved, fmt, opts)
        rand = None
        if rand_bits is not None:
            try:
                rand = np.broadcast_to(np.asarray(rand_bits), values.shape).reshape(values.shape or (1,))
            except ValueError:
                raise ValueError(f"rand_bits do not broadcast to the input shape {values.shape}") from None
            rand, _ = cls._blocks(np.moveaxis(rand, axis, -1), fmt, opts)
        tensor_scale = None
        if fmt.tensor_scale is not None:
            finite = np.abs(values[np.isfinite(values)]).astype(np.float64)
            amax = Fraction(float(finite.max())) if finite.size else Fraction(0)
            if opts.inf_policy == "saturate" and np.isinf(values).any():
                amax = max(amax, FP32_MAX)  # an Inf counts as the largest fp32, as in the block amax
            tensor_scale = nvfp4_tensor_scale(amax, opts)
        scales, subscales, codes = quantize_blocks(blocks, fmt, opts, tensor_scale, rand)
        lead = padded_shape[:-1]
        n_blocks = padded_shape[-1] // fmt.block_size
        return cls(
            fmt,
            scales.reshape(lead + (n_blocks,)),
            codes.reshape(padded_shape),
            values.shape,
            axis,
            opts,
            None if subscales is None else subscales.reshape(lead + (n_blocks, fmt.subblocks)),
            tensor_scale,
        )

    @staticmethod
    def _blocks(moved: np.ndarray, fmt, opts: QuantizeOptions):
        length = moved.shape[-1]
        padding = -length % fmt.block_size
        if padding and opts.partial_block == "error":
            raise ValueError(
                f"axis length {length} is not a multiple of block_size {fmt.block_size} (partial_block='error')"
            )
        if padding:
            moved = np.concatenate([moved, np.zeros(moved.shape[:-1] + (padding,), moved.dtype)], axis=-1)
        return np.ascontiguousarray(moved).reshape(-1, fmt.block_size), moved.shape

    @classmethod
    def from_codes(
        cls, scales, codes, fmt, axis: int = -1, shape=None, subscales=None, tensor_scale=None, **options
    ) -> "MXTensor":
        """Wrap existing codes (e.g. read from a checkpoint). ``codes`` has blocks along its last
        axis; ``shape`` is the unpadded original shape (default: codes moved back, unpadded).

        Codes, scales and sub-scales: integer arrays of any integer dtype and byte order, each
        value within its field's width. ``tensor_scale`` (NVFP4 only): a finite positive value
        exactly representable in fp32 (see :func:`mxsim.ref.block.check_tensor_scale`).
        ``options``: :class:`mxsim.QuantizeOptions` fields to record; options that do not apply
        to ``fmt`` are refused as in :func:`quantize`. ValueError for anything else."""
        fmt = get_format(fmt, kind="block")
        opts = QuantizeOptions.from_kwargs(**options)
        opts.check_format(fmt)
        codes = np.asarray(codes)
        scales = np.asarray(scales)
        if codes.ndim == 0 or codes.shape[-1] % fmt.block_size:
            raise ValueError(f"codes' last axis ({codes.shape[-1:] or 'none'}) must be a multiple of block_size {fmt.block_size}")
        n_blocks = codes.shape[-1] // fmt.block_size
        if scales.shape != codes.shape[:-1] + (n_blocks,):
            raise ValueError(f"scales have shape {scales.shape}; expected {codes.shape[:-1] + (n_blocks,)} for codes {codes.shape}")
        check_codes("codes", codes, fmt.element.width)
        check_codes("scales", scales, fmt.scale.width)
        if fmt.subblocks:
            if subscales is None:
                raise ValueError(f"format {fmt.name!r} needs subscales of shape {scales.shape + (fmt.subblocks,)}")
            subscales = np.asarray(subscales)
            if subscales.shape != scales.shape + (fmt.subblocks,):
                raise ValueError(f"subscales have shape {subscales.shape}; expected {scales.shape + (fmt.subblocks,)}")
            check_codes("subscales", subscales, fmt.subscale_bits)
            subscales = subscales.astype(np.uint8)
        elif subscales is not None:
            raise ValueError(f"format {fmt.name!r} has no sub-scales")
        tensor_scale = check_tensor_scale(fmt, tensor_scale)
        axis = normalize_axis(axis, codes.ndim)
        stored = np.moveaxis(np.empty(codes.shape, dtype=np.bool_), -1, axis).shape
        if shape is None:
            shape = stored
        shape = tuple(int(n) for n in shape)
        if shape == ():  # a scalar is stored as one padded block
            fits = stored == (fmt.block_size,)
        elif len(shape) == len(stored):
            padded = -(-shape[axis] // fmt.block_size) * fmt.block_size
            fits = padded == stored[axis] and all(a == b for i, (a, b) in enumerate(zip(shape, stored)) if i != axis)
        else:
            fits = False
        if not fits:
            raise ValueError(
                f"shape {shape} does not fit codes of shape {codes.shape} (axis {axis}, block_size "
                f"{fmt.block_size}): the block axis must pad to {stored[axis]} and the other axes match"
            )
        return cls(fmt, scales.astype(np.uint8), codes.astype(code_dtype(fmt.element)), shape, axis, opts, subscales, tensor_scale)

    # --- decoding ------------------------------------------------------------------------------
    def dequantize(self, dtype=np.float32) -> np.ndarray:
        """Values in the original shape: exact in float64; float32 rounds each once (nearest-even,
        overflow to +-Inf, subnormals kept). A NaN scale gives NaN for its whole block."""
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype={dtype} is not allowed; expected float32 or float64")
        k = self.fmt.block_size
        subscales = None if self.subscales is None else self.subscales.reshape(-1, self.fmt.subblocks)
        blocks = (self.scales.reshape(-1), subscales, self.codes.reshape(-1, k), self.fmt)
        if dtype == np.float32 and self.fmt.scale.name == "e8m0":
            values = dequantize_blocks_float32(*blocks)
        else:  # exact in float64, then (for float32) one rounding
            values = dequantize_blocks(*blocks, self.tensor_scale)
        values = restore_layout(values.reshape(self.codes.shape), self.shape, self.axis)
        with np.errstate(over="ignore"):
            return values.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"MXTensor({self.fmt.name}, shape={self.shape}, axis={self.axis}, blocks={self.scales.size})"

    def save(self, path, **layout) -> None:
        """Write this tensor to ``path`` (see :func:`mxsim.fileformat.save`; ``layout``:
        element_stream='lsb'|'msb'|'bytes', scale_placement='separate'|'interleaved')."""
        from .fileformat import save

        save(self, path, **layout)


def quantize(x, fmt, axis: int = -1, rand_bits=None, **options) -> MXTensor:
    """Quantize ``x`` along ``axis`` into an :class:`MXTensor` (see :meth:`MXTensor.quantize`)."""
    return MXTensor.quantize(x, fmt, axis, rand_bits=rand_bits, **options)
