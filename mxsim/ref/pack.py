"""Reference bit packing of block-quantized data (docs/numerics.md sections 2.1 and 3).

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
  stream, zero-padded to a whole byte at the end of each block (docs/numerics.md section 2.1: MX9 lsb =
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
* ``packed_nbytes(fmt, n_blocks, element_stream=..., scale_placement=...) -> int`` (from
  :mod:`mxsim.packing`, where the layout arithmetic both packers share lives).

Tensor-level packing (an MXTensor's payload, either implementation) is :mod:`mxsim.tensor_pack`.
"""

from __future__ import annotations

import numpy as np
from bitstring import Bits

from ..formats import get_format
from ..packing import (
    DEFAULT_ELEMENT_STREAM,
    DEFAULT_SCALE_PLACEMENT,
    ELEMENT_STREAMS,
    SCALE_PLACEMENTS,
    check_blocks,
    check_layout,
    check_payload,
    finish_unpack,
    packed_nbytes,
    padding_error,
    record_bits,
    section_sizes,
)

__all__ = [
    "ELEMENT_STREAMS",
    "SCALE_PLACEMENTS",
    "DEFAULT_ELEMENT_STREAM",
    "DEFAULT_SCALE_PLACEMENT",
    "check_layout",
    "packed_nbytes",
    "pack_blocks",
    "unpack_blocks",
]


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
    sw, dw, ew = record_bits(fmt, element_stream)
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
    sw, dw, ew = record_bits(fmt, element_stream)
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
