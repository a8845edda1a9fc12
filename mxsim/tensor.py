"""MXTensor: a block-quantized tensor (scale codes, element codes, shape, axis, options).

Layout of the arrays (blocks run along the last axis of ``codes``):

* ``codes``: element codes, shape = the original shape with the block axis moved last and
  padded to a multiple of block_size; uint8 (uint16 for wider elements);
* ``scales``: one scale byte per block, shape ``codes.shape[:-1] + (n_blocks,)``, uint8
  (E8M0 code, or UE4M3 code for NVFP4; under ``options.scale_encoding == 'int8_exponent'`` the
  unbiased exponent E as an 8-bit two's complement, see :mod:`mxsim.ref.scale`);
* ``subscales``: for shared-microexponent formats, one microexponent per sub-block, shape
  ``scales.shape + (subblocks,)``, uint8; else None;
* ``tensor_scale``: NVFP4's fp32 tensor scale s_t as an exact Fraction; else None.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .options import QuantizeOptions
from .options.dequantize import options_for, output_name
from .options.profiles import get_profile, resolve_quantize
from .fast.block import quantize_blocks
from .fast.decode import check_codes, code_dtype
from .fast.dequant import dequantize_blocks_bits
from .fast.sources import read_source
from .formats import get_format
from .packing import normalize_axis
from .ref.block import nvfp4_tensor_scale
from .ref.stored_block import check_tensor_scale

from .ref.sources import check_source_options, inf_stand_in

__all__ = ["MXTensor", "quantize"]


def _float_dtype(output: str) -> np.dtype:
    """The NumPy dtype of an output type; bfloat16 is ml_dtypes' (imported here, on use)."""
    if output != "bfloat16":
        return np.dtype(output)
    try:
        import ml_dtypes
    except ImportError:
        raise ValueError(
            "dtype='bfloat16' needs the ml_dtypes package; dequantize_bits('bfloat16') gives the bits"
        ) from None
    return np.dtype(ml_dtypes.bfloat16)


def restore_layout(values: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    """Blocked values (block axis last, padded) back to the original ``shape`` and ``axis``."""
    length = shape[axis] if shape else 1
    return np.moveaxis(values[..., :length], -1, axis).reshape(shape)


class MXTensor:
    """A block-quantized tensor. Build one with :func:`mxsim.quantize` or :meth:`from_codes`."""

    def __init__(
        self, fmt, scales, codes, shape, axis, options: QuantizeOptions, subscales=None, tensor_scale=None, profile=None
    ):
        self.fmt = get_format(fmt, kind="block")
        self.scales, self.codes, self.subscales = scales, codes, subscales
        self.shape, self.axis, self.options = tuple(shape), axis, options
        self.tensor_scale = None if tensor_scale is None else Fraction(tensor_scale)
        #: the :class:`mxsim.options.profiles.Profile` the tensor was made under, or None
        self.profile = None if profile is None else get_profile(profile)

    @staticmethod
    def _options(fmt, profile, options: dict):
        """(profile, QuantizeOptions): a profile's options for ``fmt`` with keyword ``options`` on top."""
        return resolve_quantize(profile, options, fmt)

    @property
    def scale_encoding(self) -> str:
        """How ``scales`` store the block exponents: 'e8m0' or 'int8_exponent' (options.scale_encoding)."""
        return self.options.scale_encoding

    # --- construction --------------------------------------------------------------------------
    @classmethod
    def quantize(
        cls, x, fmt, axis: int = -1, rand_bits=None, *, source=None, scales=None, profile=None, **options
    ) -> "MXTensor":
        """Quantize an array along ``axis``.

        ``x``: float16, ml_dtypes bfloat16, float32, float64, or ml_dtypes float8_e4m3fn /
        float8_e5m2 values; or unsigned-integer bit patterns with ``source`` naming their type
        ('fp32' uint32, 'fp16' or 'bf16' uint16, 'fp8_e4m3' or 'fp8_e5m2' uint8 codes, 'fp64'
        uint64). Values are read exactly (see :mod:`mxsim.fast.sources`); the source type decides
        what an Inf counts as under inf_policy='saturate' (its own largest finite value).
        ``scales``: caller-supplied scale bytes instead of computed ones (E8M0-scaled formats):
        the shape of the result's ``scales`` (x's shape with ``axis`` moved last and replaced by
        the number of blocks), E8M0 codes 0x00..0xFE or, under scale_encoding='int8_exponent',
        int8 exponent bytes not below scale_min; the elements are quantized against them,
        saturating. ``options`` are the fields of :class:`mxsim.QuantizeOptions`.
        ``profile``: the name of a profile (:data:`mxsim.options.profiles.PROFILES`) whose options
        apply, ``options`` overriding them; the tensor remembers it for :meth:`dequantize`.
        ``rand_bits``: random words of x's shape, for rounding='stochastic'.
        """
        fmt = get_format(fmt, kind="block")
        profile, opts = cls._options(fmt, profile, options)
        opts.check_format(fmt)
        if (opts.rounding == "stochastic") != (rand_bits is not None):
            raise ValueError("rand_bits is needed with rounding='stochastic', and only then")
        values, source = read_source(x, source)
        check_source_options(source, opts)
        axis = normalize_axis(axis, values.ndim)
        moved = np.moveaxis(values.reshape(values.shape or (1,)), axis, -1)
        blocks, padded_shape = cls._blocks(moved, fmt, opts)
        lead = padded_shape[:-1]
        n_blocks = padded_shape[-1] // fmt.block_size
        if scales is not None:
            scales = np.asarray(scales)
            if scales.shape != lead + (n_blocks,):
                raise ValueError(
                    f"scales have shape {scales.shape}; expected {lead + (n_blocks,)} (x's shape with axis {axis} "
                    f"moved last, as blocks of {fmt.block_size})"
                )
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
                # an Inf counts as its type's largest value, as in the block amax
                amax = max(amax, inf_stand_in(source))
            tensor_scale = nvfp4_tensor_scale(amax, opts)
        out_scales, subscales, codes = quantize_blocks(blocks, fmt, opts, tensor_scale, rand, source, scales)
        return cls(
            fmt,
            out_scales.reshape(lead + (n_blocks,)),
            codes.reshape(padded_shape),
            values.shape,
            axis,
            opts,
            None if subscales is None else subscales.reshape(lead + (n_blocks, fmt.subblocks)),
            tensor_scale,
            profile,
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
        cls, scales, codes, fmt, axis: int = -1, shape=None, subscales=None, tensor_scale=None, *, profile=None,
        **options,
    ) -> "MXTensor":
        """Wrap existing codes (e.g. read from a checkpoint). ``codes`` has blocks along its last
        axis; ``shape`` is the unpadded original shape (default: codes moved back, unpadded).
        ``options``: the :class:`mxsim.QuantizeOptions` the codes were made with (recorded on the
        tensor; ``scale_encoding`` says how ``scales`` store the exponents); options that do not
        apply to ``fmt`` are refused as in :func:`quantize`. ``profile``: the profile the codes were
        made under (its options, ``options`` overriding them; :meth:`dequantize` then follows it).

        Codes, scales and sub-scales: integer arrays of any integer dtype and byte order, each
        value within its field's width. ``tensor_scale`` (NVFP4 only): a finite positive value
        exactly representable in fp32 (see :func:`mxsim.ref.stored_block.check_tensor_scale`).
        ValueError for anything else."""
        fmt = get_format(fmt, kind="block")
        profile, opts = cls._options(fmt, profile, options)
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
        return cls(
            fmt, scales.astype(np.uint8), codes.astype(code_dtype(fmt.element)), shape, axis, opts, subscales, tensor_scale,
            profile,
        )

    # --- decoding ------------------------------------------------------------------------------

    def dequantize_bits(self, dtype="float32", options=None, **dequant_options) -> np.ndarray:
        """IEEE bit patterns of the values in the original shape: uint32 for float32, uint16 for
        float16 and bfloat16, uint64 for float64 (docs/numerics.md section 3.1).

        Each value is element * scale (times s_t for NVFP4), exact, rounded once to nearest even;
        a tensor made under ``nvfp4_arith='fp32_reciprocal'`` (compressed-tensors NVFP4, contract
        6.2) gives the library's fp32(element * fp32(scale / gs)) instead, converted to ``dtype``
        (see :func:`mxsim.ref.dequant.dequantize_block_bits`). ``options``: a
        :class:`mxsim.DequantizeOptions`, or a mapping output type -> DequantizeOptions (e.g.
        :data:`mxsim.options.dequantize.IDMA_DEQUANTIZE`) whose entry for
        ``dtype`` applies (defaults if it has none); ``dequant_options`` (dequant_overflow,
        dequant_ftz, dequant_nan) override fields of the chosen options. Without ``options``, a
        tensor made under a profile uses the profile's DequantizeOptions for ``dtype``. Defaults:
        overflow to +-Inf, subnormals kept, NaN elements keep their sign; a NaN scale gives the
        positive quiet NaN for its whole block."""
        output = output_name(dtype)
        if options is None and self.profile is not None:
            options = self.profile.dequantize
        opts = options_for(output, options, **dequant_options)
        k = self.fmt.block_size
        subscales = None if self.subscales is None else self.subscales.reshape(-1, self.fmt.subblocks)
        words = dequantize_blocks_bits(
            self.scales.reshape(-1), subscales, self.codes.reshape(-1, k), self.fmt, output, opts,
            self.tensor_scale, self.scale_encoding, self.options.nvfp4_arith,
        )
        return restore_layout(words.reshape(self.codes.shape), self.shape, self.axis)

    def dequantize(self, dtype=np.float32, options=None, **dequant_options) -> np.ndarray:
        """Values in the original shape as ``dtype``: float32 (default), float16, bfloat16 (an
        ml_dtypes bfloat16 array; ml_dtypes is imported on use) or float64 (exact). Options as for
        :meth:`dequantize_bits`, whose words this returns viewed as ``dtype``."""
        output = output_name(dtype)
        words = self.dequantize_bits(output, options, **dequant_options)
        return words.view(_float_dtype(output))

    def __repr__(self) -> str:
        return f"MXTensor({self.fmt.name}, shape={self.shape}, axis={self.axis}, blocks={self.scales.size})"


def quantize(x, fmt, axis: int = -1, rand_bits=None, *, source=None, scales=None, profile=None, **options) -> MXTensor:
    """Quantize ``x`` along ``axis`` into an :class:`MXTensor` (see :meth:`MXTensor.quantize`;
    ``profile``: a profile name, see :mod:`mxsim.options.profiles`)."""
    return MXTensor.quantize(x, fmt, axis, rand_bits=rand_bits, source=source, scales=scales, profile=profile, **options)
