"""Vectorized NumPy bit packing, bit-identical to the reference :mod:`mxsim.ref.pack`.

Same API and the same layout (see :mod:`mxsim.ref.pack` for the layout definition; the shared
layout arithmetic is :mod:`mxsim.packing`): ``pack_blocks``, ``unpack_blocks``,
``packed_nbytes``; tensor-level packing is :mod:`mxsim.tensor_pack`.

Method: the element stream, the bulk of a payload, is packed in whole-byte groups of fields
(FP4: two codes per byte, FP6: four per three bytes, MX4's 3-bit fields: eight per three bytes):
each output byte is the OR of its overlapping fields shifted in uint8 arithmetic, on two threads;
1, 2 and 4-bit fields unpack through a 256-entry byte table. One-byte scales without sub-scales
are copied directly. Everything else (sub-scale records, odd interleaved records) goes through a
0/1 bit matrix and ``np.packbits`` / ``np.unpackbits`` (bitorder little for ``lsb``/``bytes``,
big for ``msb``), in chunks of blocks to bound memory. :func:`dequantize_packed_blocks` decodes
packed FP4/FP8 bytes straight to float32.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..formats import get_format
from .decode import value_table
from .chunks import BLOCK_CHUNK, map_chunks
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
    "pack_stream",
    "unpack_stream",
    "pack_blocks",
    "unpack_blocks",
    "dequantize_packed_blocks",
]

CHUNK_BITS = 1 << 21  # stream bits (bytes of 0/1 matrix) per chunk


def _bitorder(element_stream: str) -> str:
    return "big" if element_stream == "msb" else "little"


def _shifts(width: int, element_stream: str) -> np.ndarray:
    """Shift of the value bit at each stream position of a field of ``width`` stream bits."""
    shifts = np.arange(width, dtype=np.uint64)
    return shifts[::-1].copy() if element_stream == "msb" else shifts


def _to_bits(values: np.ndarray, width: int, element_stream: str) -> np.ndarray:
    """(n, m) codes -> (n, m * width) stream bits."""
    n, m = values.shape
    if width == 0 or m == 0:
        return np.zeros((n, 0), np.uint8)
    bits = (values.astype(np.uint64)[..., None] >> _shifts(width, element_stream)) & np.uint64(1)
    return bits.astype(np.uint8).reshape(n, m * width)


def _from_bits(bits: np.ndarray, width: int, element_stream: str) -> np.ndarray:
    """(n, m * width) stream bits -> (n, m) codes (uint64)."""
    n = bits.shape[0]
    if width == 0:
        return np.zeros((n, 0), np.uint64)
    fields = bits.reshape(n, -1, width).astype(np.uint64) << _shifts(width, element_stream)
    return np.bitwise_or.reduce(fields, axis=-1) if fields.shape[1] else np.zeros((n, 0), np.uint64)


def _records_to_bytes(parts: list[np.ndarray], element_stream: str) -> np.ndarray:
    """Stream bits of n records (a list of (n, b_i) matrices) -> (n, record bytes), each record
    zero-padded to a whole byte."""
    bits = np.concatenate(parts, axis=1)
    pad = -bits.shape[1] % 8
    if pad:
        bits = np.concatenate([bits, np.zeros((bits.shape[0], pad), np.uint8)], axis=1)
    return np.packbits(bits, axis=1, bitorder=_bitorder(element_stream))


def _bytes_to_bits(data: np.ndarray, element_stream: str) -> np.ndarray:
    return np.unpackbits(data, axis=-1, bitorder=_bitorder(element_stream))


def _chunks(n: int, bits_per_item: int, multiple: int = 1):
    """Slices of range(n), each about CHUNK_BITS stream bits and a multiple of ``multiple`` items."""
    step = max(CHUNK_BITS // max(bits_per_item, 1), 1)
    step = -(-step // multiple) * multiple
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


def _group(width: int) -> tuple[int, int] | None:
    """(codes, bytes) of the smallest whole-byte group of ``width``-bit fields, if it fits in
    64 bits (every width up to 8, and 10, 12, 16); None otherwise."""
    codes = 8 // np.gcd(width, 8)
    return (codes, codes * width // 8) if 0 < codes * width <= 64 else None


def _word_dtype(bits: int) -> np.dtype:
    """The narrowest unsigned integer holding ``bits`` bits (bits <= 64)."""
    return np.dtype(next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if bits <= 8 * np.dtype(t).itemsize))


def _field_shifts(codes: int, width: int, element_stream: str) -> list[int]:
    """Bit offset of each field of a group inside its group integer (first field lowest for
    lsb, highest for msb)."""
    shifts = [i * width for i in range(codes)]
    return shifts[::-1] if element_stream == "msb" else shifts


def _group_bytes(words: np.ndarray, nbytes: int, element_stream: str) -> np.ndarray:
    """(groups,) integers -> (groups, nbytes) bytes: little-endian low bytes (lsb) or
    big-endian low bytes (msb)."""
    size = words.dtype.itemsize
    if element_stream == "msb":
        return words.astype(words.dtype.newbyteorder(">")).view(np.uint8).reshape(-1, size)[:, size - nbytes :]
    return words.astype(words.dtype.newbyteorder("<")).view(np.uint8).reshape(-1, size)[:, :nbytes]


def _byte_overlaps(codes: int, width: int, element_stream: str):
    """For each byte j of a group and each field i that overlaps it: (j, i, shift), where the
    field's contribution to the byte is field << shift (shift >= 0) or field >> -shift."""
    for j in range(codes * width // 8):
        for i in range(codes):
            low, high = i * width, (i + 1) * width  # stream bits of field i
            if high <= 8 * j or low >= 8 * j + 8:
                continue
            # lsb: stream bit b is bit b % 8 of its byte; msb: bit 7 - b % 8 (and field MSB first)
            shift = low - 8 * j if element_stream != "msb" else 8 * j + 8 - high
            yield j, i, shift


def _shifted(values: np.ndarray, shift: int) -> np.ndarray:
    return values << np.uint8(shift) if shift >= 0 else values >> np.uint8(-shift)


def pack_stream(flat: np.ndarray, width: int, element_stream: str) -> np.ndarray | None:
    """A stream of ``width``-bit codes as bytes, zero-padded at the end (``element_stream`` 'lsb':
    code i in stream bits [i*width, (i+1)*width), stream bit b = bit b%8 of byte b//8; 'msb':
    big-endian); None if unsupported (some widths above 8 bits; never for widths up to 8)."""
    if width > 8:
        return _stream_pack_words(flat, width, element_stream)
    g, nbytes = _group(width)
    n = flat.size
    if width == 8:
        return flat.astype(np.uint8)
    padded = flat.astype(np.uint8, copy=False)
    if n % g:
        padded = np.zeros(n + g - n % g, np.uint8)
        padded[:n] = flat
    fields = padded.reshape(-1, g)
    out = np.empty((len(fields), nbytes), np.uint8)
    overlaps = list(_byte_overlaps(g, width, element_stream))

    def kernel(start, stop, fields, out):
        out[...] = 0
        for j, i, shift in overlaps:
            out[:, j] |= _shifted(fields[:, i], shift)  # uint8 arithmetic drops bits beyond the byte

    map_chunks(kernel, len(fields), fields, out)
    return out.reshape(-1)[: -(-n * width // 8)]


def _stream_pack_words(flat: np.ndarray, width: int, element_stream: str) -> np.ndarray | None:
    """A stream of ``width``-bit codes as bytes, zero-padded at the end; None if unsupported.

    For fields wider than a byte (10, 12, 16 bits): each group of g codes (g * width = a whole
    number of bytes, at most 64 bits) becomes one integer whose little-endian (lsb) or
    big-endian (msb) bytes are the group's bytes."""
    group = _group(width)
    if group is None:
        return None
    g, nbytes = group
    n = flat.size
    dtype = _word_dtype(g * width)  # wide fields: each group of g fields as one integer
    if n % g:
        padded = np.zeros(n + g - n % g, dtype)
        padded[:n] = flat
    else:
        padded = flat.astype(dtype, copy=False)
    columns = padded.reshape(-1, g)
    words = np.zeros(len(columns), dtype)
    for i, shift in enumerate(_field_shifts(g, width, element_stream)):
        words |= columns[:, i] << dtype.type(shift)
    return _group_bytes(words, nbytes, element_stream).reshape(-1)[: -(-n * width // 8)]


def unpack_stream(section: np.ndarray, count: int, width: int, element_stream: str) -> np.ndarray | None:
    """Inverse of :func:`pack_stream`: ``count`` codes from the section's bytes."""
    if width > 8:
        return _stream_unpack_words(section, count, width, element_stream)
    g, nbytes = _group(width)
    groups = -(-count // g)
    if width == 8:
        return section[:count]
    if nbytes == 1 and section.size == groups:  # 1, 2, 4-bit fields: a byte -> g codes table
        table = _byte_table(width, element_stream)
        codes = np.empty((groups, g), np.uint8)

        def kernel(start, stop, chunk, out):
            np.take(table, chunk, axis=0, out=out, mode="clip")  # a byte indexes 256 rows

        map_chunks(kernel, groups, section, codes)
        return codes.reshape(-1)[:count]
    raw = section[: groups * nbytes]
    if raw.size < groups * nbytes:
        raw = np.concatenate([raw, np.zeros(groups * nbytes - raw.size, np.uint8)])
    return _unpack_planes(raw.reshape(groups, nbytes), width, element_stream).reshape(-1)[:count]


@lru_cache(maxsize=None)
def _byte_table(width: int, element_stream: str) -> np.ndarray:
    """(256, g) codes held by each byte value, for fields that tile a byte exactly."""
    return _unpack_planes(np.arange(256, dtype=np.uint8)[:, None], width, element_stream)


def _unpack_planes(data: np.ndarray, width: int, element_stream: str) -> np.ndarray:
    """(groups, group bytes) -> (groups, g) codes of ``width`` <= 8 bits."""
    g = _group(width)[0]
    codes = np.zeros((len(data), g), np.uint8)
    for j, i, shift in _byte_overlaps(g, width, element_stream):
        codes[:, i] |= _shifted(data[:, j], -shift)
    codes &= np.uint8((1 << width) - 1)
    return codes


def _stream_unpack_words(section: np.ndarray, count: int, width: int, element_stream: str) -> np.ndarray | None:
    group = _group(width)
    if group is None:
        return None
    g, nbytes = group
    groups = -(-count // g)
    dtype = _word_dtype(g * width)
    size = dtype.itemsize
    if nbytes == size and section.size == groups * nbytes:
        raw = section
    else:
        raw = np.zeros(groups * nbytes, np.uint8)
        raw[: section.size] = section[: groups * nbytes]
    if nbytes == size:
        words = raw.view(dtype.newbyteorder(">" if element_stream == "msb" else "<"))
    else:
        wide = np.zeros((groups, size), np.uint8)
        target = wide[:, size - nbytes :] if element_stream == "msb" else wide[:, :nbytes]
        target[...] = raw.reshape(groups, nbytes)
        words = wide.view(dtype.newbyteorder(">" if element_stream == "msb" else "<"))[:, 0]
    words = words.astype(dtype)
    mask = dtype.type((1 << width) - 1)
    codes = np.empty((groups, g), dtype)
    for i, shift in enumerate(_field_shifts(g, width, element_stream)):
        np.bitwise_and(words >> dtype.type(shift), mask, out=codes[:, i])
    return codes.reshape(-1)[:count]


def _tail_padding(section: np.ndarray, used_bits: int, element_stream: str) -> int:
    """The padding bits of the last byte of a stream of ``used_bits`` bits (must be zero): the
    high bits for lsb streams, the low bits for msb streams."""
    used = used_bits % 8
    if not used or not section.size:
        return 0
    last = int(section[-1])
    return last & ((1 << (8 - used)) - 1) if element_stream == "msb" else last >> used


def _byte_scales_route(fmt, scale_bits: int, element_bits: int, scale_placement: str) -> bool:
    """The common layouts with a direct route: one-byte scales, no sub-scales, and element
    fields that group into whole bytes (per block, when interleaved)."""
    whole_blocks = scale_placement == "separate" or (fmt.block_size * element_bits) % 8 == 0
    return scale_bits == 8 and not fmt.subblocks and _group(element_bits) is not None and whole_blocks


def _pack_byte_scales(scales, codes, width: int, order: str, scale_placement: str) -> np.ndarray:
    n = scales.size
    if scale_placement == "separate":
        return np.concatenate([scales.astype(np.uint8, copy=False), pack_stream(codes.reshape(-1), width, order)])
    rows = pack_stream(codes.reshape(-1), width, order).reshape(n, codes.shape[1] * width // 8)
    return np.concatenate([scales.astype(np.uint8, copy=False)[:, None], rows], axis=1).reshape(-1)


def _unpack_byte_scales(raw: np.ndarray, n: int, k: int, width: int, order: str, scale_placement: str):
    if scale_placement == "separate":
        scales, section = raw[:n], raw[n:]
        if _tail_padding(section, n * k * width, order):
            raise padding_error("the end of the element section")
    else:  # whole-byte blocks: no padding anywhere
        rows = raw.reshape(n, 1 + k * width // 8)
        scales, section = rows[:, 0], rows[:, 1:].reshape(-1)
    return scales, unpack_stream(section, n * k, width, order).reshape(n, k)


def pack_blocks(fmt, scales, subscales, codes, element_stream: str = DEFAULT_ELEMENT_STREAM,
                scale_placement: str = DEFAULT_SCALE_PLACEMENT) -> bytes:
    """Pack n blocks (n scales, n * subblocks sub-scales or None, n * block_size codes)."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    scales, subscales, codes = check_blocks(fmt, scales, subscales, codes)
    n, k = scales.size, fmt.block_size
    sw, dw, ew = record_bits(fmt, element_stream)
    order = "lsb" if element_stream == "bytes" else element_stream
    if _byte_scales_route(fmt, sw, ew, scale_placement):
        return _pack_byte_scales(scales, codes, ew, order, scale_placement).tobytes()
    heads = []
    out = []
    bits_per_record = sw + fmt.subblocks * dw + (k * ew if scale_placement == "interleaved" else 0)
    for part in _chunks(n, bits_per_record):
        fields = [_to_bits(scales[part, None], sw, order)]
        if subscales is not None:
            fields.append(_to_bits(subscales[part], dw, order))
        if scale_placement == "interleaved":
            fields.append(_to_bits(codes[part], ew, order))
        (out if scale_placement == "interleaved" else heads).append(_records_to_bytes(fields, order).reshape(-1))
    if scale_placement == "separate":
        flat = codes.reshape(-1)
        out = heads
        stream = pack_stream(flat, ew, order)
        if stream is not None:
            out.append(stream)
        else:  # widths whose byte groups exceed 64 bits: the bit-matrix route
            # chunks of a multiple of 8 codes hold whole bytes, so they concatenate exactly
            for part in _chunks(flat.size, ew, 8):
                out.append(_records_to_bytes([_to_bits(flat[None, part], ew, order)], order).reshape(-1))
    return b"".join(chunk.tobytes() for chunk in out)


def unpack_blocks(fmt, data, n_blocks: int, element_stream: str = DEFAULT_ELEMENT_STREAM,
                  scale_placement: str = DEFAULT_SCALE_PLACEMENT):
    """Inverse of :func:`pack_blocks`: (scales (n,), subscales (n, subblocks) or None, codes
    (n, block_size)) from a payload of exactly :func:`packed_nbytes` bytes."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    data = check_payload(fmt, data, n_blocks, element_stream, scale_placement)
    n, k, sb = int(n_blocks), fmt.block_size, fmt.subblocks
    sw, dw, ew = record_bits(fmt, element_stream)
    order = "lsb" if element_stream == "bytes" else element_stream
    if _byte_scales_route(fmt, sw, ew, scale_placement):
        scales, codes = _unpack_byte_scales(np.frombuffer(data, dtype=np.uint8), n, k, ew, order, scale_placement)
        return finish_unpack(fmt, scales, None, codes)
    record, _ = section_sizes(fmt, n, element_stream, scale_placement)
    raw = np.frombuffer(data, dtype=np.uint8)
    records = raw[: n * record].reshape(n, record)
    used = sw + sb * dw + (k * ew if scale_placement == "interleaved" else 0)
    scales = np.empty(n, np.uint64)
    subscales = np.empty((n, sb), np.uint64)
    codes = np.empty((n, k), np.uint64)
    for part in _chunks(n, record * 8):
        bits = _bytes_to_bits(records[part], order)
        if bits[:, used:].any():
            first = part.start + int(np.flatnonzero(bits[:, used:].any(axis=1))[0])
            where = f"block {first}" if scale_placement == "interleaved" else f"the scale record of block {first}"
            raise padding_error(where)
        scales[part] = _from_bits(bits[:, :sw], sw, order)[:, 0]
        subscales[part] = _from_bits(bits[:, sw : sw + sb * dw], dw, order)
        if scale_placement == "interleaved":
            codes[part] = _from_bits(bits[:, sw + sb * dw : used], ew, order)
    if scale_placement == "separate":
        flat = codes.reshape(-1)
        section = raw[n * record :]
        stream = unpack_stream(section, flat.size, ew, order)
        if stream is not None:
            if _tail_padding(section, flat.size * ew, order):
                raise padding_error("the end of the element section")
            flat[:] = stream
            return finish_unpack(fmt, scales, subscales if sb else None, codes)
        # chunks of a multiple of 8 codes start and end on byte boundaries
        for part in _chunks(flat.size, ew, 8):
            first_byte, stop_byte = part.start * ew // 8, -(-part.stop * ew // 8)
            bits = _bytes_to_bits(section[None, first_byte:stop_byte], order)
            count = (part.stop - part.start) * ew
            if part.stop == flat.size and bits[:, count:].any():
                raise padding_error("the end of the element section")
            flat[part] = _from_bits(bits[:, :count], ew, order).reshape(-1)
    return finish_unpack(fmt, scales, subscales if sb else None, codes)


def dequantize_packed_blocks(fmt, data, n_blocks: int, element_stream: str = DEFAULT_ELEMENT_STREAM,
                             scale_placement: str = DEFAULT_SCALE_PLACEMENT) -> np.ndarray | None:
    """The float32 values of ``n_blocks`` packed blocks, shape (n_blocks, block_size), in one table
    lookup and one scale product, or None where the layout does not allow it (the route needs
    one-byte E8M0 scales, no sub-scales, element fields that tile a byte: FP4, FP8). Each packed
    byte is looked up in a table of the float32 values it holds, then multiplied by its block's
    power-of-two scale: the same single rounding as :meth:`mxsim.MXTensor.dequantize` with default
    DequantizeOptions (a NaN scale gives the positive quiet NaN for its block, a NaN element its
    own sign as the product propagates it, overflow gives +-Inf)."""
    fmt = get_format(fmt, kind="block")
    check_layout(element_stream, scale_placement)
    sw, _, ew = record_bits(fmt, element_stream)
    order = "lsb" if element_stream == "bytes" else element_stream
    # fields that tile a byte and are exactly the element's width (every byte value is valid)
    tiles_a_byte = ew == fmt.element.width and _group(ew) is not None and _group(ew)[1] == 1
    if not (fmt.scale.name == "e8m0" and tiles_a_byte and _byte_scales_route(fmt, sw, ew, scale_placement)):
        return None
    n = int(n_blocks)
    raw = np.frombuffer(check_payload(fmt, data, n, element_stream, scale_placement), dtype=np.uint8)
    per_block = fmt.block_size * ew // 8
    if scale_placement == "separate":
        scales, packed = raw[:n], raw[n:].reshape(n, per_block)
    else:
        rows = raw.reshape(n, 1 + per_block)
        scales, packed = rows[:, 0], rows[:, 1:]
    codes_of_byte = _byte_table(ew, order)  # (256, codes per byte)
    table = value_table(fmt.element).astype(np.float32)[codes_of_byte]
    powers = value_table(fmt.scale).astype(np.float32)
    out = np.empty((n, per_block, codes_of_byte.shape[1]), np.float32)

    def kernel(start, stop, packed, scales, out):
        np.take(table, packed, axis=0, out=out, mode="clip")  # a byte indexes 256 rows
        factor = powers[scales]
        with np.errstate(over="ignore"):
            np.multiply(out, factor[:, None, None], out=out)
        nan_scale = np.isnan(factor)
        if nan_scale.any():  # the positive quiet NaN, whatever the product's NaN operand order gives
            out[nan_scale] = np.float32(np.nan)

    map_chunks(kernel, n, packed, scales, out, chunk=max(1, BLOCK_CHUNK // fmt.block_size))
    return out.reshape(n, fmt.block_size)
