"""What the suites' ``compute_batch`` share: field words <-> NumPy arrays, per-code class tables, flag
words, and the per-vector fallback.

``compute_batch(inputs) -> (outputs, flags)`` computes the expected values of many vectors at once
with the NumPy fast path (:mod:`mxsim.fast`, proven bit-identical to the reference by its own
tests and, for the suites, by ``tests/golden/test_fast_batches_equal_reference.py``): ``inputs`` maps each input field to
a sequence of N ints (a list, or a NumPy integer array for fields of at most 64 bits); ``outputs``
maps each output field to a list of N ints (a wide one may be a :class:`.word_column.WordColumn`, read as one), and ``flags`` is the list of N flag words, each
exactly ``flag_bits(compute(vector)[1])`` (no origin bits: the pipeline adds those).

Field words hold item i of ``width`` bits at bits [i*width, (i+1)*width) (see
:func:`mxsim.golden.values.pack_word`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..coverage.catalogue import flag_bits
from ..values import code_sets
from .word_column import WordColumn

__all__ = ["unpack_items", "pack_items", "pack_words", "CodeTable", "code_table", "bit", "compute_each", "fast_dot_models",
           "dyadic_differ", "add_operand_classes"]


def fast_dot_models(acc) -> bool:
    """Whether :mod:`mxsim.fast.dot` models an accumulator configuration: separate accumulation
    with the output stage it implements (overflow to +-Inf, the canonical NaN, an IEEE output
    format). The suites compute the others vector by vector through the reference."""
    return (acc.accumulate == "separate" and acc.output_overflow == "inf" and acc.nan_bits is None
            and not acc.output.startswith("fp32_"))


def bit(name: str) -> int:
    """The flag word of one class."""
    return flag_bits([name])


def compute_each(suite, inputs: dict) -> tuple[dict, list]:
    """``compute`` of every vector (the reference), in the ``compute_batch`` shape: for the
    configurations the fast path does not model. A kind with ``compute_many`` (the reference
    vector by vector, its classes for all of them at once) computes the chunk in one call."""
    names = [f.name for f in suite.inputs]
    n = len(inputs[names[0]])
    rows = [{name: int(inputs[name][i]) for name in names} for i in range(n)]
    many = getattr(suite, "compute_many", None)
    outputs = {f.name: [] for f in suite.outputs}
    flags = []
    for out, classes in (many(rows) if many is not None else map(suite.compute, rows)):
        for name, column in outputs.items():
            column.append(out[name])
        flags.append(flag_bits(classes))
    return outputs, flags


def _words_as_bytes(values, nbytes: int) -> np.ndarray:
    """(N, nbytes) uint8: each value's little-endian bytes."""
    if isinstance(values, WordColumn):
        raw = values.raw
        if raw.shape[1] >= nbytes:
            if raw.shape[1] > nbytes and raw[:, nbytes:].any():
                raise ValueError(f"a field word has bits above its {8 * nbytes} bits")
            return raw[:, :nbytes]
        return np.pad(raw, ((0, 0), (0, nbytes - raw.shape[1])))
    if nbytes <= 8 and not isinstance(values, np.ndarray):
        try:  # words of at most 64 bits: one conversion in C (a negative or wider value goes the long way)
            values = np.array(values, dtype=np.uint64)
        except (OverflowError, TypeError, ValueError):
            pass
    if isinstance(values, np.ndarray) and values.dtype.kind in "ui" and nbytes <= 8:
        if values.dtype.kind == "u" or not values.size or values.min() >= 0:
            words = np.ascontiguousarray(values.astype("<u8")).view(np.uint8).reshape(-1, 8)
            if nbytes == 8 or not words[:, nbytes:].any():
                return words[:, :nbytes]
    data = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, nbytes)


_UINT = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def unpack_items(values, width: int, count: int) -> np.ndarray:
    """Field words -> an (N, count) array of their ``width``-bit items (uint8/16/32/64, the
    narrowest that holds ``width`` bits). ``width`` is at most 64."""
    n = len(values)
    nbytes = max(1, -(-width * count // 8))
    raw = _words_as_bytes(values, nbytes) if n else np.zeros((0, nbytes), np.uint8)
    item_bytes = next(b for b in (1, 2, 4, 8) if 8 * b >= width)
    if width % 8 == 0 and width // 8 in _UINT:  # whole bytes: a view
        return np.ascontiguousarray(raw).view(_UINT[width // 8]).reshape(n, count).astype(_UINT[item_bytes])
    bits = np.unpackbits(raw, axis=1, bitorder="little")[:, : width * count].reshape(n, count, width)
    weights = np.left_shift(np.uint64(1), np.arange(width, dtype=np.uint64))
    return (bits.astype(np.uint64) * weights).sum(axis=2, dtype=np.uint64).astype(_UINT[item_bytes])


def _packed_bytes(items: np.ndarray, width: int) -> np.ndarray:
    """An (N, count) array of ``width``-bit items -> the (N, ceil(count * width / 8)) uint8
    little-endian bytes of their field words."""
    items = np.asarray(items)
    n, count = items.shape
    if width % 8 == 0 and width // 8 in _UINT:
        return np.ascontiguousarray(items.astype(_UINT[width // 8])).view(np.uint8).reshape(n, -1)
    shifts = np.arange(width, dtype=np.uint64)
    bits = ((items.astype(np.uint64)[:, :, None] >> shifts) & np.uint64(1)).astype(np.uint8).reshape(n, count * width)
    return np.packbits(bits, axis=1, bitorder="little")


def pack_items(items: np.ndarray, width: int) -> list[int]:
    """An (N, count) array of ``width``-bit items -> N field words (Python ints)."""
    packed = pack_words(items, width)
    return packed.tolist() if isinstance(packed, WordColumn) else packed


def pack_words(items: np.ndarray, width: int):
    """:func:`pack_items` as a column: a list of ints for words of at most 64 bits, else a
    :class:`.word_column.WordColumn` of their bytes (no Python int made until one is read)."""
    raw = _packed_bytes(items, width)
    n, count = np.shape(items)
    if count * width <= 64:
        padded = np.zeros((n, 8), np.uint8)
        padded[:, : raw.shape[1]] = raw
        return padded.view("<u8").reshape(n).tolist()
    return WordColumn(raw)


@dataclass(frozen=True)
class CodeTable:
    """:func:`mxsim.golden.values.code_sets` of a format as boolean arrays indexed by code: ``nan``,
    ``inf``, ``zero``, ``nonzero``, ``negative``, ``max``, ``subnormal``, ``neg2``."""

    nan: np.ndarray
    inf: np.ndarray
    zero: np.ndarray
    nonzero: np.ndarray
    negative: np.ndarray
    max: np.ndarray
    subnormal: np.ndarray
    neg2: np.ndarray


@lru_cache(maxsize=None)
def code_table(fmt) -> CodeTable:
    """The :class:`CodeTable` of a format of at most 16 bits."""
    sets = code_sets(fmt)
    arrays = {}
    for name in CodeTable.__dataclass_fields__:
        column = np.zeros(1 << fmt.width, dtype=bool)
        column[sorted(sets[name])] = True
        arrays[name] = column
    return CodeTable(**arrays)


def add_operand_classes(add, operands) -> None:
    """The classes each operand of a block pair sets (``scale_nan``; ``scale_min`` / ``scale_max`` of
    E8M0 scales; ``max``; ``int8_neg2``), through ``add(name, mask)``; ``operands`` holds per operand
    (block format, scale codes (P,), its element :class:`CodeTable`, element codes (P, k))."""
    for fmt, scales, table, codes in operands:
        scale_nan = code_table(fmt.scale).nan[scales]
        add("scale_nan", scale_nan)
        if fmt.scale.name == "e8m0":
            add("scale_min", ~scale_nan & (scales == 0))
            add("scale_max", ~scale_nan & (scales == 0xFE))
        add("max", table.max[codes].any(axis=1))
        add("int8_neg2", table.neg2[codes].any(axis=1))


def dyadic_differ(a, a_exponent, b, b_exponent) -> np.ndarray:
    """Element-wise a * 2^a_exponent != b * 2^b_exponent for integer arrays (int64, or Python ints
    in object arrays), exactly. int64: the side with the larger exponent is compared after
    shifting the other right (equal iff the bits shifted out are 0 and the rest match); a shift of
    more than 62 bits can only match zeros (|values| < 2^62)."""
    if a.dtype == object or b.dtype == object:
        low = np.minimum(a_exponent, b_exponent)
        return np.array([int(x) << int(ex - lo) != int(y) << int(ey - lo)
                         for x, ex, y, ey, lo in zip(a, a_exponent, b, b_exponent, low)], dtype=bool)
    a, b = a.astype(np.int64), b.astype(np.int64)
    d = a_exponent.astype(np.int64) - b_exponent.astype(np.int64)

    def matches(small, big, shift):  # big * 2^shift == small, shift >= 0
        s = np.minimum(shift, 62)
        fits = ((small >> s) == big) & ((small & ((np.int64(1) << s) - 1)) == 0)
        return np.where(shift > 62, (small == 0) & (big == 0), fits)

    equal = np.where(d >= 0, matches(b, a, np.maximum(d, 0)), matches(a, b, np.maximum(-d, 0)))
    return ~equal
