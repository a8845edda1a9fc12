"""Packing an :class:`~mxsim.tensor.MXTensor`: its payload (scales, sub-scales, element codes) as
bytes and back, in any layout of :mod:`mxsim.packing` (docs/numerics.md section 3).

Both packers serve here: ``implementation="fast"`` (default, :mod:`mxsim.fast.pack`, NumPy) and
``"reference"`` (:mod:`mxsim.ref.pack`, bitstring); they are bit-identical. Blocks are taken in the
C order of the tensor's ``scales`` array (codes with the block axis last, padded to a whole
block). An NVFP4 tensor scale is not part of the payload (the file format keeps it in its header).
"""

from __future__ import annotations

import numpy as np

from .fast import pack as fast_pack
from .formats import get_format
from .packing import DEFAULT_ELEMENT_STREAM, DEFAULT_SCALE_PLACEMENT, check_layout, tensor_layout
from .options.dequantize import options_for, output_name
from .options.spec import check_choice
from .ref import pack as ref_pack
from .tensor import MXTensor, restore_layout

__all__ = ["IMPLEMENTATIONS", "pack", "unpack", "dequantize_packed"]

IMPLEMENTATIONS = {"fast": fast_pack, "reference": ref_pack}


def _packer(implementation: str):
    check_choice("implementation", implementation, tuple(IMPLEMENTATIONS))
    return IMPLEMENTATIONS[implementation]


def pack(tensor, element_stream: str = DEFAULT_ELEMENT_STREAM, scale_placement: str = DEFAULT_SCALE_PLACEMENT,
         *, implementation: str = "fast") -> bytes:
    """The payload of an :class:`mxsim.MXTensor` (scales, sub-scales, element codes)."""
    packer = _packer(implementation)
    if not isinstance(tensor, MXTensor):
        raise ValueError(f"tensor must be an MXTensor, got {type(tensor).__name__}")
    return packer.pack_blocks(tensor.fmt, tensor.scales, tensor.subscales, tensor.codes, element_stream, scale_placement)


def unpack(data, fmt, shape, axis: int = -1, element_stream: str = DEFAULT_ELEMENT_STREAM,
           scale_placement: str = DEFAULT_SCALE_PLACEMENT, tensor_scale=None, *, implementation: str = "fast",
           **options) -> MXTensor:
    """Inverse of :func:`pack`: an MXTensor of ``fmt`` for an array of ``shape`` blocked along
    ``axis``; ``tensor_scale`` and the QuantizeOptions ``options`` are recorded on it."""
    packer = _packer(implementation)
    fmt = get_format(fmt, kind="block")
    codes_shape, axis = tensor_layout(fmt, shape, axis)
    n_blocks = int(np.prod(codes_shape, dtype=np.int64)) // fmt.block_size
    scales, subscales, codes = packer.unpack_blocks(fmt, data, n_blocks, element_stream, scale_placement)
    lead, n_per_row = codes_shape[:-1], codes_shape[-1] // fmt.block_size
    return MXTensor.from_codes(
        scales.reshape(lead + (n_per_row,)),
        codes.reshape(codes_shape),
        fmt,
        axis=axis,
        shape=tuple(int(s) for s in shape),
        subscales=None if subscales is None else subscales.reshape(lead + (n_per_row, fmt.subblocks)),
        tensor_scale=tensor_scale,
        **options,
    )


def dequantize_packed(data, fmt, shape, axis: int = -1, element_stream: str = DEFAULT_ELEMENT_STREAM,
                      scale_placement: str = DEFAULT_SCALE_PLACEMENT, dtype=np.float32, *, dequantize_options=None,
                      **unpack_options) -> np.ndarray:
    """``unpack(data, ...).dequantize(dtype, dequantize_options)`` in one pass where the layout
    allows (float32 output with default DequantizeOptions, OCP E8M0 scale bytes, no sub-scales,
    FP4/FP8 fields: :func:`mxsim.fast.pack.dequantize_packed_blocks`); other layouts, formats,
    output types and options go through :func:`unpack` and :meth:`MXTensor.dequantize`.
    ``dequantize_options``: a DequantizeOptions or a mapping output type -> DequantizeOptions."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    codes_shape, axis = tensor_layout(fmt, shape, axis)
    output = output_name(dtype)
    values = None
    if output == "float32" and options_for(output, dequantize_options).is_default and not unpack_options:
        n_blocks = int(np.prod(codes_shape, dtype=np.int64)) // fmt.block_size
        values = fast_pack.dequantize_packed_blocks(fmt, data, n_blocks, element_stream, scale_placement)
    if values is None:
        tensor = unpack(data, fmt, shape, axis, element_stream, scale_placement, **unpack_options)
        return tensor.dequantize(output, dequantize_options)
    return restore_layout(values.reshape(codes_shape), tuple(int(s) for s in shape), axis)
