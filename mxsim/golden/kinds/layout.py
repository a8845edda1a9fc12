"""What a suite's field packs, for the reports that take a vector apart (:mod:`..device.decompose`).

Every suite kind says, in its ``field_layouts()``, what each of its fields packs: a
:class:`Layout`, ``count`` values of ``width`` bits, value i at bits [i*width, (i+1)*width), value
0 in the least significant bits; each value a code of a format (``fmt``: a float code splits into
sign, exponent and significand fields, an integer element into sign and magnitude) or a plain
integer (``fmt`` None, two's complement when ``signed``). The builders here are the shapes the
kinds share: one code (:func:`code_layout`), plain integers (:func:`plain_layout`), the operand
fields of blocks (:func:`block_layouts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...formats import get_format
from ..values import FP32

__all__ = ["Layout", "code_layout", "plain_layout", "block_layouts", "fp32_layout"]


@dataclass(frozen=True)
class Layout:
    """``count`` values of ``width`` bits each: codes of ``fmt`` (None: plain integers,
    ``signed`` (two's complement) or not); ``per_block`` values per block (DotGeneral) or None."""

    fmt: object | None
    count: int
    width: int
    signed: bool = False
    per_block: int | None = None

    def values(self, word: int) -> list[int]:
        """The ``count`` values of ``word`` (value 0 from the least significant bits)."""
        mask = (1 << self.width) - 1
        return [(word >> (i * self.width)) & mask for i in range(self.count)]

    def name(self, field: str, i: int) -> str:
        """How value i of ``field`` is named in a report: ``field``, ``field[i]`` or
        ``field[block b][j]``."""
        if self.count == 1:
            return field
        if self.per_block and self.per_block < self.count:
            return f"{field}[block {i // self.per_block}][{i % self.per_block}]"
        return f"{field}[{i}]"

    def span_name(self, field: str, first: int, last: int) -> str:
        """How values ``first`` .. ``last`` (inclusive, within one block) of ``field`` are named:
        ``field[first..last]`` or ``field[block b][i..j]`` (one value: :meth:`name`)."""
        if first == last:
            return self.name(field, first)
        if self.per_block and self.per_block < self.count:
            return f"{field}[block {first // self.per_block}][{first % self.per_block}..{last % self.per_block}]"
        return f"{field}[{first}..{last}]"

    def runs(self, codes: list[int]) -> list[tuple[int, int]]:
        """(first, last) of every run of equal values of ``codes`` (inclusive) within one block:
        a run of two or more as one span (the zeros of a sparse block, an exhaustive pair's
        repeated code), every other value alone."""
        spans: list[tuple[int, int]] = []
        for i, code in enumerate(codes):
            same_block = not self.per_block or i % self.per_block
            if spans and code == codes[spans[-1][1]] and same_block:
                spans[-1] = (spans[-1][0], i)
            else:
                spans.append((i, i))
        return spans


def code_layout(fmt, count: int = 1, per_block: int | None = None) -> Layout:
    """``count`` codes of ``fmt`` (its full width each)."""
    return Layout(fmt, count, fmt.width, per_block=per_block)


def plain_layout(width: int, count: int = 1, signed: bool = False, per_block: int | None = None) -> Layout:
    """``count`` plain integers of ``width`` bits (two's complement when ``signed``)."""
    return Layout(None, count, width, signed, per_block)


def fp32_layout(count: int = 1) -> Layout:
    """``count`` fp32 words (an input's bits, a result's)."""
    return code_layout(get_format(FP32), count)


def block_layouts(prefix: str, fmt, blocks: int = 1, sub: str = "sub", elems: str = "elems",
                  scale_encoding: str = "e8m0") -> dict[str, Layout]:
    """The operand fields of ``blocks`` blocks of ``fmt``: ``<prefix>scale``, ``<prefix><sub>``,
    ``<prefix><elems>``, ``<prefix>tensor_scale`` (dot: a_sub, a_elems; quantize, pack and
    dequantize: subscales, codes). ``scale_encoding`` ``int8_exponent``: an 8-bit scale is read as
    a two's complement exponent (mxsim.ref.scale_code), shown as a plain signed integer."""
    per = None if blocks == 1 else fmt.block_size
    if scale_encoding == "int8_exponent":
        scale = plain_layout(fmt.scale.width, blocks, signed=True)
    else:
        scale = code_layout(fmt.scale, blocks)
    out = {f"{prefix}scale": scale}
    if fmt.subblocks:
        out[f"{prefix}{sub}"] = plain_layout(fmt.subscale_bits, blocks * fmt.subblocks,
                                             per_block=None if blocks == 1 else fmt.subblocks)
    out[f"{prefix}{elems}"] = code_layout(fmt.element, blocks * fmt.block_size, per_block=per)
    if fmt.tensor_scale is not None:
        out[f"{prefix}tensor_scale"] = fp32_layout()
    return out
