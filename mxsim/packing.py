"""Bit layouts of packed block data (docs/numerics.md sections 2.1 and 3): the layout names, the
field and section sizes, and the checks both packers share (:mod:`mxsim.ref.pack`, bitstring, and
:mod:`mxsim.fast.pack`, NumPy). The layouts themselves are described in :mod:`mxsim.ref.pack`.
"""

from __future__ import annotations

import numpy as np

from .options.layout import (
    DEFAULT_ELEMENT_STREAM,
    DEFAULT_SCALE_PLACEMENT,
    ELEMENT_STREAMS,
    SCALE_PLACEMENTS,
    check_layout,
)
from .formats.registry import get_format

__all__ = [
    "ELEMENT_STREAMS",
    "SCALE_PLACEMENTS",
    "DEFAULT_ELEMENT_STREAM",
    "DEFAULT_SCALE_PLACEMENT",
    "check_layout",
    "field_bits",
    "record_bits",
    "section_sizes",
    "packed_nbytes",
    "check_blocks",
    "check_payload",
    "code_dtype",
    "padding_error",
    "finish_unpack",
    "normalize_axis",
    "tensor_layout",
]

def field_bits(width: int, element_stream: str) -> int:
    """Stream bits one code of ``width`` bits occupies (a whole number of bytes under 'bytes')."""
    return -(-width // 8) * 8 if element_stream == "bytes" else width


def record_bits(fmt, element_stream: str) -> tuple[int, int, int]:
    """(scale field, one sub-scale field, one element field) widths in stream bits."""
    return (
        fmt.scale_storage_bits,
        field_bits(fmt.subscale_bits, element_stream) if fmt.subblocks else 0,
        field_bits(fmt.element.width, element_stream),
    )


def section_sizes(fmt, n_blocks: int, element_stream: str, scale_placement: str) -> tuple[int, int]:
    """(bytes per scale-section record, bytes of the element section) for 'separate', or
    (bytes per block record, 0) for 'interleaved'."""
    sw, dw, ew = record_bits(fmt, element_stream)
    head = sw + fmt.subblocks * dw
    if scale_placement == "interleaved":
        return -(-(head + fmt.block_size * ew) // 8), 0
    return -(-head // 8), -(-(n_blocks * fmt.block_size * ew) // 8)


def packed_nbytes(fmt, n_blocks: int, element_stream: str = DEFAULT_ELEMENT_STREAM,
                  scale_placement: str = DEFAULT_SCALE_PLACEMENT) -> int:
    """Exact payload length of ``n_blocks`` blocks of ``fmt`` in the given layout."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    if not isinstance(n_blocks, (int, np.integer)) or n_blocks < 0:
        raise ValueError(f"n_blocks={n_blocks!r} is not allowed; expected a non-negative integer")
    record, elements = section_sizes(fmt, int(n_blocks), element_stream, scale_placement)
    return int(n_blocks) * record + elements


def _check_field(name: str, array: np.ndarray, width: int, what: str) -> None:
    if array.dtype.kind not in "ui":
        raise ValueError(f"{name} must be an integer array, got dtype {array.dtype}")
    below_zero = array.dtype.kind == "i" and array.size and int(array.min()) < 0
    if array.size and (below_zero or int(array.max()) >= (1 << width)):
        bad = array[(array < 0) | (array >= (1 << width))].reshape(-1)[0]
        raise ValueError(
            f"{name} hold values outside [0, {(1 << width) - 1}] ({width}-bit {what}); first offender: {int(bad)}"
        )


def check_blocks(fmt, scales, subscales, codes):
    """Validate block arrays against ``fmt``; return them flat: scales (n,), subscales
    (n, subblocks) or None, codes (n, block_size), all integer arrays."""
    scales = np.asarray(scales)
    codes = np.asarray(codes)
    n = scales.size
    k = fmt.block_size
    _check_field("scales", scales, fmt.scale.width, f"{fmt.scale.name} scale codes of {fmt.name}")
    _check_field("codes", codes, fmt.element.width, f"{fmt.element.name} element codes of {fmt.name}")
    if codes.size != n * k:
        raise ValueError(
            f"codes hold {codes.size} codes; expected n_blocks * block_size = {n} * {k} = {n * k} for {n} scales"
        )
    if fmt.subblocks:
        if subscales is None:
            raise ValueError(f"format {fmt.name!r} needs subscales ({fmt.subblocks} per block)")
        subscales = np.asarray(subscales)
        _check_field("subscales", subscales, fmt.subscale_bits, f"sub-scale codes of {fmt.name}")
        if subscales.size != n * fmt.subblocks:
            raise ValueError(
                f"subscales hold {subscales.size} codes; expected n_blocks * subblocks = {n} * {fmt.subblocks}"
                f" = {n * fmt.subblocks}"
            )
        subscales = subscales.reshape(n, fmt.subblocks)
    elif subscales is not None:
        raise ValueError(f"format {fmt.name!r} has no sub-scales; subscales must be None")
    return scales.reshape(n), subscales, codes.reshape(n, k)


def check_payload(fmt, data, n_blocks: int, element_stream: str, scale_placement: str) -> bytes:
    """The payload as bytes, after checking its type and exact length."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    expected = packed_nbytes(fmt, n_blocks, element_stream, scale_placement)
    if len(data) != expected:
        raise ValueError(
            f"payload is {len(data)} bytes; expected {expected} bytes for {n_blocks} blocks of {fmt.name} "
            f"with element_stream={element_stream!r}, scale_placement={scale_placement!r}"
        )
    return data


def code_dtype(width: int) -> np.dtype:
    """The smallest unsigned dtype holding ``width``-bit codes."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if width <= np.dtype(dtype).itemsize * 8:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


def padding_error(where: str) -> ValueError:
    return ValueError(f"nonzero padding bits in {where}; the payload does not match the layout")


def finish_unpack(fmt, scales, subscales, codes):
    """Range-check unpacked fields (containers wider than a code must hold zeros above it) and
    give them their dtypes."""
    what = "in the payload"
    _check_field(f"scales {what}", scales, fmt.scale.width, f"{fmt.scale.name} scale codes of {fmt.name}")
    _check_field(f"codes {what}", codes, fmt.element.width, f"{fmt.element.name} element codes of {fmt.name}")
    if subscales is not None:
        _check_field(f"subscales {what}", subscales, fmt.subscale_bits, f"sub-scale codes of {fmt.name}")
        subscales = subscales.astype(np.uint8)
    scale_type, code_type = code_dtype(fmt.scale_storage_bits), code_dtype(fmt.element.width)
    return scales.astype(scale_type, copy=False), subscales, codes.astype(code_type, copy=False)


def normalize_axis(axis, ndim: int) -> int:
    """``axis`` of an ``ndim``-d array (a scalar counts as 1-d) as an index in [0, ndim).
    ValueError unless ``axis`` is an integer (int or NumPy integer; not a bool) in [-ndim, ndim)."""
    n = max(ndim, 1)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise ValueError(f"axis={axis!r} is not allowed; expected an integer (not a bool) in [{-n}, {n})")
    if not -n <= axis < n:
        raise ValueError(f"axis={axis!r} is out of range for a {ndim}-d array; expected an integer in [{-n}, {n})")
    return int(axis) % n


def tensor_layout(fmt, shape, axis) -> tuple[tuple[int, ...], int]:
    """(codes shape, axis) of an MXTensor of ``fmt`` holding an array of ``shape`` blocked along
    ``axis``: the block axis moved last and padded to a whole block (as :func:`mxsim.quantize`)."""
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"shape={shape!r} is not allowed; expected a sequence of non-negative integers") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"shape={shape!r} is not allowed; expected a sequence of non-negative integers")
    moved = shape or (1,)
    axis = normalize_axis(axis, len(shape))
    lead = moved[:axis] + moved[axis + 1 :]
    length = moved[axis]
    return lead + (length + (-length % fmt.block_size),), axis
