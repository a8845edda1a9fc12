"""Wide field words kept as bytes (``mxsim.golden.kinds.word_column.WordColumn``): read as the Python
ints ``pack_items`` gives, hex lines and unpacked items the same as from those ints, joined and
sliced as lists, a word wider than its field refused as the int path refuses it."""

from __future__ import annotations

import numpy as np
import pytest

from mxsim.golden.kinds.batch import pack_items, pack_words, unpack_items
from mxsim.golden.kinds.fields import Field
from mxsim.golden.kinds.word_column import WordColumn, concatenated

SHAPES = [(8, 32), (4, 32), (6, 32), (9, 8), (6, 16), (12, 7)]  # (item width, items a word): 256 .. 84 bits


def _ints(items, width):
    """Field words computed here, item by item: item i at bits [i*width, (i+1)*width)."""
    return [sum(int(v) << (i * width) for i, v in enumerate(row)) for row in items]


@pytest.mark.parametrize("width,count", SHAPES)
def test_a_column_reads_as_its_words(width, count):
    items = np.random.default_rng(width * count).integers(0, 1 << width, size=(300, count))
    words = _ints(items, width)
    column = pack_words(items, width)
    assert isinstance(column, WordColumn)
    assert list(column) == words == pack_items(items, width) == column.tolist()
    assert column == words and column[17] == words[17] and column[-1] == words[-1]
    assert column[10:20] == words[10:20] and isinstance(column[10:20], WordColumn)
    bits = width * count
    assert Field("x", bits).to_hex_lines(column) == "".join(f"{w:0{-(-bits // 4)}x}\n" for w in words)
    assert np.array_equal(unpack_items(column, width, count), items)
    assert np.array_equal(unpack_items(words, width, count), items)


def test_words_of_at_most_64_bits_stay_lists():
    assert pack_words(np.array([[1, 2], [3, 4]]), 8) == [0x0201, 0x0403]


def test_joined_pieces():
    a, b = pack_words(np.full((2, 32), 1), 8), pack_words(np.full((3, 32), 2), 8)
    joined = concatenated([a, b])
    assert isinstance(joined, WordColumn) and joined == list(a) + list(b)
    mixed = concatenated([a, [5, 6]])
    assert isinstance(mixed, list) and mixed == list(a) + [5, 6]
    assert concatenated([]) == []


def test_a_word_wider_than_its_field_is_refused_by_name():
    column = pack_words(np.full((2, 32), 0xFF), 8)  # 256 bits set
    with pytest.raises(ValueError, match="field 'x'.*does not fit 255 bits"):
        Field("x", 255).to_hex_lines(column)
    with pytest.raises(ValueError, match="bits above"):
        unpack_items(column, 8, 16)  # a 128-bit field


def test_a_word_column_holds_bytes_only():
    with pytest.raises(ValueError, match="uint8"):
        WordColumn(np.zeros((2, 4), dtype=np.int64))


def test_a_word_is_replaced_as_in_a_list():
    items = np.arange(64).reshape(2, 32)
    column, words = pack_words(items, 8), pack_items(items, 8)
    column[1] ^= 1 << 200
    words[1] ^= 1 << 200
    assert column == words
    with pytest.raises(ValueError, match="does not fit a word of 32 bytes"):
        column[0] = 1 << 256
    with pytest.raises(ValueError, match="does not fit"):
        column[0] = -1
