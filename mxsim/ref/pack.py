"""Reference bit packing of block-quantized data (conventions.md sections 2.1 and 3).

Bit-level reference written with the ``bitstring`` library and Python ints, one field at a time;
:mod:`mxsim.fast.pack` is the vectorized NumPy version, bit-identical, with the same API.

Layout
------

Every block contributes three kinds of *fields*: its scale code, its sub-scale codes (two-level
formats such as MX9/MX6/MX4 only: one microexponent per sub-block, sub-block 0 first), and its
``block_size`` element codes (element 0 first). Fields are written into a bit stream in that order
and the stream is cut into bytes according to ``element_stream``:

* ``"lsb"`` (default): a field of width w starting at stream bit p occupies stream bits
  [p, p + w), its least significant bit first; stream bit b is bit b % 8 of byte b // 8. FP4:
  element 0 in the low nibble of byte 0 (PyTorch ``float4_e2m1fn_x2``, NVIDIA, Triton); FP6: the
  ONNX / CUTLASS stream (byte0 = b[1:0] a[5:0], byte1 = c[3:0] b[5:2], byte2 = d[5:0] c[5:4]).
* ``"msb"``: big-endian bit stream: a field's most significant bit first, stream bit b is bit
  7 - b % 8 of byte b // 8 (element 0 in the highest bits of byte 0).
* ``"bytes"``: every element and sub-scale code sits in its own container of whole bytes (one
  byte for widths up to 8; ceil(w / 8) little-endian bytes for wider codes), code in the low
  bits, high bits zero. Equivalently: the ``lsb`` stream with each width rounded up to a
  multiple of 8.

The scale field is ``fmt.scale_storage_bits`` wide (the scale width rounded up to whole bytes:
UE4M3's 7 bits are stored as a byte with the top bit 0), so a block's scale always starts and
ends on a byte boundary; with 8-bit storage it is simply one byte, whichever element stream.

``scale_placement``:

* ``"separate"`` (default): first the scale section, one record per block: the scale byte, then
  that block's sub-scale fields in the element-stream order, zero-padded to a whole byte (MX9,
  lsb: 2 bytes per block, byte 1 = the 8 microexponent bits, pair 0 in bit 0; msb: pair 0 in
  bit 7; bytes: 1 + 8 bytes per block). Then the element section: the codes of all blocks, block
  0 first, as ONE continuous stream, zero-padded to a whole byte only at its end.
* ``"interleaved"``: one record per block: scale byte, sub-scale fields, element fields as one
  stream, zero-padded to a whole byte at the end of each block (conventions 2.1: MX9 lsb =
  exponent byte, 8 microexponent bits, 16 x 8 element bits = 18 bytes; MXFP4 = scale byte then
  16 bytes).

Blocks are taken in the C order of an MXTensor's ``scales`` array (codes moved so the block
axis is last, padded to a whole block). An NVFP4 tensor scale is not part of the payload (the
file format stores it in its header).

Unpacking checks the payload length exactly, that every padding bit is zero, and that every
field holds a code of its format's width (e.g. a UE4M3 scale byte below 0x80); anything else is
a ValueError.

API (shared with :mod:`mxsim.fast.pack`)
----------------------------------------

* ``pack_blocks(fmt, scales, subscales, codes, element_stream="lsb", scale_placement="separate")
  -> bytes``: flat block arrays (any shapes holding n, n * subblocks and n * block_size codes);
* ``unpack_blocks(fmt, data, n_blocks, element_stream=..., scale_placement=...) -> (scales,
  subscales, codes)``: shapes (n,), (n, subblocks) or None, (n, block_size);
* ``pack(tensor, element_stream=..., scale_placement=...) -> bytes``: an MXTensor's payload;
* ``unpack(data, fmt, shape, axis=-1, element_stream=..., scale_placement=...,
  tensor_scale=None, **options) -> MXTensor``;
* ``packed_nbytes(fmt, n_blocks, element_stream=..., scale_placement=...) -> int``.
"""

from __future__ import annotations

import numpy as np
from bitstring import Bits

from ..formats import get_format
from ..policy import check_choice

__all__ = [
    "ELEMENT_STREAMS",
    "SCALE_PLACEMENTS",
    "DEFAULT_ELEMENT_STREAM",
    "DEFAULT_SCALE_PLACEMENT",
    "check_layout",
    "packed_nbytes",
    "pack_blocks",
    "unpack_blocks",
    "pack",
    "unpack",
]

ELEMENT_STREAMS = ("lsb", "msb", "bytes")
SCALE_PLACEMENTS = ("separate", "interleaved")
DEFAULT_ELEMENT_STREAM = "lsb"
DEFAULT_SCALE_PLACEMENT = "separate"


# --- layout arithmetic, shared by the reference and the fast path ---------------------------------
def check_layout(element_stream, scale_placement) -> None:
    """Raise ValueError naming the field and the allowed values for an unknown layout name."""
    check_choice("element_stream", element_stream, ELEMENT_STREAMS)
    check_choice("scale_placement", scale_placement, SCALE_PLACEMENTS)


def field_bits(width: int, element_stream: str) -> int:
    """Stream bits one code of ``width`` bits occupies (a whole number of bytes under 'bytes')."""
    return -(-width // 8) * 8 if element_stream == "bytes" else width


def _record_bits(fmt, element_stream: str) -> tuple[int, int, int]:
    """(scale field, one sub-scale field, one element field) widths in stream bits."""
    return (
        fmt.scale_storage_bits,
        field_bits(fmt.subscale_bits, element_stream) if fmt.subblocks else 0,
        field_bits(fmt.element.width, element_stream),
    )


def section_sizes(fmt, n_blocks: int, element_stream: str, scale_placement: str) -> tuple[int, int]:
    """(bytes per scale-section record, bytes of the element section) for 'separate', or
    (bytes per block record, 0) for 'interleaved'."""
    sw, dw, ew = _record_bits(fmt, element_stream)
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


# --- the reference packer: bitstring, one field at a time ---------------------------------------------
def _field(value: int, width: int, order: str) -> Bits:
    bits = Bits.from_dtype(f"u{width}", value)
    return bits if order == "msb" else bits[::-1]  # lsb stream: the field's bit 0 goes first


def _record_bytes(fields: list[tuple[int, int]], order: str) -> bytes:
    """Write (value, width) fields into one stream, zero-pad it to whole bytes, cut it into bytes."""
    stream = Bits.from_joined([_field(value, width, order) for value, width in fields])
    stream = Bits.from_joined([stream, Bits.from_zeros(-len(stream) % 8)])
    if order == "msb":
        return stream.to_bytes()
    # lsb: stream bit b is bit b % 8 of byte b // 8, so each group of 8 stream bits, reversed,
    # is a byte written most significant bit first
    return Bits.from_joined([stream[i : i + 8][::-1] for i in range(0, len(stream), 8)]).to_bytes()


def _stream_bits(data: bytes, order: str) -> Bits:
    """The stream bits of a byte string, stream bit 0 first."""
    if order == "msb":
        return Bits.from_bytes(data)
    return Bits.from_joined([Bits.from_bytes(bytes([byte]))[::-1] for byte in data])


class _Reader:
    def __init__(self, data: bytes, order: str):
        self.bits, self.order, self.pos = _stream_bits(data, order), order, 0

    def read(self, width: int) -> int:
        field = self.bits[self.pos : self.pos + width]
        self.pos += width
        return (field if self.order == "msb" else field[::-1]).u

    def check_padding(self, where: str) -> None:
        if self.bits[self.pos :].any(True):
            raise padding_error(where)


def _order(element_stream: str) -> str:
    return "msb" if element_stream == "msb" else "lsb"


def pack_blocks(fmt, scales, subscales, codes, element_stream: str = DEFAULT_ELEMENT_STREAM,
                scale_placement: str = DEFAULT_SCALE_PLACEMENT) -> bytes:
    """Pack n blocks (n scales, n * subblocks sub-scales or None, n * block_size codes)."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    scales, subscales, codes = check_blocks(fmt, scales, subscales, codes)
    sw, dw, ew = _record_bits(fmt, element_stream)
    order = _order(element_stream)
    heads, bodies = [], []
    for b in range(scales.size):
        head = [(int(scales[b]), sw)]
        if subscales is not None:
            head += [(int(s), dw) for s in subscales[b]]
        heads.append(head)
        bodies.append([(int(c), ew) for c in codes[b]])
    if scale_placement == "interleaved":
        records = [head + body for head, body in zip(heads, bodies)]
    else:
        records = heads + [[field for body in bodies for field in body]]
    return b"".join(_record_bytes(fields, order) for fields in records if fields)


def unpack_blocks(fmt, data, n_blocks: int, element_stream: str = DEFAULT_ELEMENT_STREAM,
                  scale_placement: str = DEFAULT_SCALE_PLACEMENT):
    """Inverse of :func:`pack_blocks`: (scales (n,), subscales (n, subblocks) or None, codes
    (n, block_size)) from a payload of exactly :func:`packed_nbytes` bytes."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    data = check_payload(fmt, data, n_blocks, element_stream, scale_placement)
    n, k, sb = int(n_blocks), fmt.block_size, fmt.subblocks
    sw, dw, ew = _record_bits(fmt, element_stream)
    order = _order(element_stream)
    record, _ = section_sizes(fmt, n, element_stream, scale_placement)
    scales, subscales, codes = [], [], []
    for b in range(n):
        reader = _Reader(data[b * record : (b + 1) * record], order)
        scales.append(reader.read(sw))
        subscales.append([reader.read(dw) for _ in range(sb)])
        if scale_placement == "interleaved":
            codes.append([reader.read(ew) for _ in range(k)])
        reader.check_padding(f"block {b}" if scale_placement == "interleaved" else f"the scale record of block {b}")
    if scale_placement == "separate":
        reader = _Reader(data[n * record :], order)
        codes = [[reader.read(ew) for _ in range(k)] for _ in range(n)]
        reader.check_padding("the end of the element section")
    return finish_unpack(
        fmt,
        np.array(scales, dtype=np.uint64).reshape(n),
        np.array(subscales, dtype=np.uint64).reshape(n, sb) if sb else None,
        np.array(codes, dtype=np.uint64).reshape(n, k),
    )


# --- MXTensor level (shared by both implementations) -------------------------------------------------
def tensor_layout(fmt, shape, axis) -> tuple[tuple[int, ...], int]:
    """(codes shape, axis) of an MXTensor of ``fmt`` holding an array of ``shape`` blocked along
    ``axis``: the block axis moved last and padded to a whole block (as :func:`mxsim.quantize`)."""
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"shape={shape!r} is not allowed; expected a sequence of non-negative integers") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"shape={shape!r} is not allowed; expected a sequence of non-negative integers")
    from ..tensor import normalize_axis

    moved = shape or (1,)
    axis = normalize_axis(axis, len(shape))
    lead = moved[:axis] + moved[axis + 1 :]
    length = moved[axis]
    return lead + (length + (-length % fmt.block_size),), axis


def _pack_tensor(pack_fn, tensor, element_stream, scale_placement) -> bytes:
    from ..tensor import MXTensor

    if not isinstance(tensor, MXTensor):
        raise ValueError(f"tensor must be an MXTensor, got {type(tensor).__name__}")
    return pack_fn(tensor.fmt, tensor.scales, tensor.subscales, tensor.codes, element_stream, scale_placement)


def _unpack_tensor(unpack_fn, data, fmt, shape, axis, element_stream, scale_placement, tensor_scale, options):
    from ..tensor import MXTensor

    fmt = get_format(fmt, kind="block")
    codes_shape, axis = tensor_layout(fmt, shape, axis)
    n_blocks = int(np.prod(codes_shape, dtype=np.int64)) // fmt.block_size
    scales, subscales, codes = unpack_fn(fmt, data, n_blocks, element_stream, scale_placement)
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


def pack(tensor, element_stream: str = DEFAULT_ELEMENT_STREAM, scale_placement: str = DEFAULT_SCALE_PLACEMENT) -> bytes:
    """The payload of an :class:`mxsim.MXTensor` (scales, sub-scales, element codes)."""
    return _pack_tensor(pack_blocks, tensor, element_stream, scale_placement)


def unpack(data, fmt, shape, axis: int = -1, element_stream: str = DEFAULT_ELEMENT_STREAM,
           scale_placement: str = DEFAULT_SCALE_PLACEMENT, tensor_scale=None, **options):
    """Inverse of :func:`pack`: an MXTensor of ``fmt`` for an array of ``shape`` blocked along
    ``axis``; ``tensor_scale`` and the QuantizeOptions ``options`` are recorded on it."""
    return _unpack_tensor(unpack_blocks, data, fmt, shape, axis, element_stream, scale_placement, tensor_scale, options)
