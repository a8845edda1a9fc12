"""A column of wide field words kept as the bytes NumPy drew them in, read as Python ints on demand.

A field word (:func:`mxsim.golden.values.pack_word`: item i of ``width`` bits at bits
[i*width, (i+1)*width)) of a random run is drawn as NumPy items; turning 256-bit words into Python
ints and back into bytes for the fast path costs more than computing them. :class:`WordColumn`
holds N words as an (N, nbytes) array of little-endian bytes (word j = ``int.from_bytes(raw[j],
"little")``) and behaves as the sequence of those ints wherever a column of ints is read (indexing,
iteration, equality, replacing one word); :func:`mxsim.golden.kinds.batch.unpack_items` and
:meth:`mxsim.golden.kinds.fields.Field.to_hex_lines` read its bytes directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

__all__ = ["WordColumn", "concatenated"]


class WordColumn(Sequence):
    """N non-negative field words held as ``raw``, an (N, nbytes) C-contiguous uint8 array of
    their little-endian bytes (nbytes >= 1)."""

    __slots__ = ("raw",)

    def __init__(self, raw: np.ndarray):
        if raw.dtype != np.uint8 or raw.ndim != 2 or raw.shape[1] < 1:
            raise ValueError(f"a WordColumn holds an (N, nbytes) uint8 array, not {raw.dtype} of shape {raw.shape}")
        self.raw = np.ascontiguousarray(raw)

    def __len__(self) -> int:
        return self.raw.shape[0]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return WordColumn(self.raw[index])
        return int.from_bytes(self.raw[index].tobytes(), "little")

    def __setitem__(self, index: int, value: int) -> None:
        """Replace word ``index`` (a list's item assignment; no slices): ValueError for a value that
        is negative or does not fit the column's bytes."""
        size = self.raw.shape[1]
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"a WordColumn's words are replaced one at a time, not by {type(index).__name__}")
        if not 0 <= value < 1 << (8 * size):
            raise ValueError(f"{value} does not fit a word of {size} bytes")
        self.raw[index] = np.frombuffer(int(value).to_bytes(size, "little"), dtype=np.uint8)

    def __iter__(self):
        data, size = self.raw.tobytes(), self.raw.shape[1]
        return (int.from_bytes(data[j : j + size], "little") for j in range(0, len(data), size))

    def __eq__(self, other) -> bool:
        if isinstance(other, WordColumn) and other.raw.shape == self.raw.shape:
            return bool(np.array_equal(self.raw, other.raw))
        return isinstance(other, Sequence) and not isinstance(other, (str, bytes)) and list(self) == list(other)

    __hash__ = None  # mutable bytes, like a list

    def __repr__(self) -> str:
        return f"WordColumn({len(self)} words of {self.raw.shape[1]} bytes)"

    def tolist(self) -> list[int]:
        return list(self)


def concatenated(pieces: list) -> Sequence:
    """The pieces of one column (lists of ints or :class:`WordColumn`) joined in order: a
    :class:`WordColumn` when every piece is one of the same byte width, else a list of ints."""
    if pieces and all(isinstance(p, WordColumn) for p in pieces) and len({p.raw.shape[1] for p in pieces}) == 1:
        return pieces[0] if len(pieces) == 1 else WordColumn(np.concatenate([p.raw for p in pieces]))
    return list(chain.from_iterable(pieces))
