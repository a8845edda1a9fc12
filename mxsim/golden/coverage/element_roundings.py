"""The element roundings of many quantized blocks as one record, and their decision classes for all at once.

A block quantization rounds each finite nonzero element value x (the input as the quantizer reads
it) divided by its element divisor D onto the element grid, giving the element's code
(docs/numerics.md sections 2 and 3.3). :class:`ElementRoundings` holds what those roundings
decide on for a whole chunk of blocks, whichever path computed it: the fast path's arrays
(:meth:`ElementRoundings.from_fast`, :func:`mxsim.fast.block.quantize_blocks_traced`) or the
reference's integers, block by block (:meth:`ElementRoundings.from_reference`,
:func:`mxsim.ref.block.quantize_block_roundings`). :meth:`ElementRoundings.flags` classes them all
with the one decision rule (:func:`.rounding.decision_flags`) in binary64 arrays, where every
quantity is exact (see :mod:`.rounding`).

The interval [lo, hi) of the element grid around x / D is found from the result: a rounding gives
one of its two ends, so the result and its neighbour on the far side of x are the candidates; the
candidates are then checked (lo * D <= x < hi * D, or x at or above the grid's largest magnitude
g, whose interval is [g, 2g - g')), and any element they do not hold is looked up on the grid
(:func:`.rounding.grid_interval`), so the interval is the grid's whatever the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..values import decode
from .catalogue import flag_bits
from .rounding import decision_flags, fp32_resolution, grid_interval, magnitude_grid

__all__ = ["ElementRoundings", "SLICE_ELEMENTS"]

_SATURATION = flag_bits(["saturation"])
SLICE_ELEMENTS = 1 << 14  # elements classed at once


@dataclass(frozen=True)
class ElementRoundings:
    """N blocks of k elements: (N, k) arrays (``divisor`` may be (N, 1), one per block).
    ``rounds`` (bool): the element's code comes from a rounding; ``negative`` (bool): the input's
    sign; ``value`` (float64 >= 0): x, the magnitude rounded (0 where it does not round);
    ``divisor`` (float64 > 0): D; ``last_bit_floor`` (an int, or (N, 1) int32): the resolution
    of x, the weight of its last bit, is 2^(max(floor(log2 x), last_bit_floor) - 23)
    (:func:`.rounding.fp32_resolution`); ``code`` (int64): the element code."""

    rounds: np.ndarray
    negative: np.ndarray
    value: np.ndarray
    divisor: np.ndarray
    last_bit_floor: int | np.ndarray
    code: np.ndarray

    @classmethod
    def from_fast(cls, record, codes: np.ndarray) -> "ElementRoundings":
        """From the fast path's :class:`mxsim.fast.block_roundings.RoundingInputs` and its codes."""
        return cls(record.rounds, record.negative, record.value, record.divisor, record.last_bit_floor,
                   np.asarray(codes, dtype=np.int64))

    @classmethod
    def from_reference(cls, blocks, codes, k: int) -> "ElementRoundings":
        """From the reference's :class:`mxsim.ref.block.BlockRoundings` of N blocks (None for a NaN
        block) and their codes ((N, k) integers). Ratios become binary64 values exactly: every value
        and divisor of a quantization is dyadic with at most 28 significant bits (Python's int / int
        is correctly rounded)."""
        n = len(blocks)
        absent = ((0, 0, 0),) * k  # a NaN block: no element rounds
        values = [value for block in blocks for value in (absent if block is None else block.values)]
        divisors = [d for block in blocks for d in (((1, 1),) * k if block is None else block.divisors)]
        negative = np.array([sign == 1 for sign, _, _ in values], dtype=bool).reshape(n, k)
        value = np.array([num / den if num and den else 0.0 for _, num, den in values]).reshape(n, k)
        divisor = np.array([num / den for num, den in divisors]).reshape(n, k)
        floor = np.array([-126 if block is None else block.last_bit_floor for block in blocks],
                         dtype=np.int32).reshape(n, 1)
        return cls(value > 0, negative, value, divisor, floor, np.asarray(codes, dtype=np.int64))

    def flags(self, element, int8_allow_neg2: bool = False) -> np.ndarray:
        """The decision classes of every block: an (N,) int64 flags word, the OR over its rounding
        elements (``saturation`` alone for an x above the grid's largest magnitude times D). Where
        every divisor is a power of two the rule runs on x / D and r / D (exact: the rule's
        comparisons and band tests are unchanged by an exact power-of-two scaling), else on x.
        Blocks go :data:`SLICE_ELEMENTS` elements at a time (arrays that stay in cache: about 3x
        faster than a whole chunk at once)."""
        n, k = self.value.shape
        if not n * k:
            return np.zeros(n, dtype=np.int64)
        step = max(1, SLICE_ELEMENTS // k)
        floor = self.last_bit_floor
        fields = (self.rounds, self.negative, self.value, self.divisor)
        return np.concatenate([
            ElementRoundings(*(a[i:i + step] for a in fields), floor if np.ndim(floor) == 0 else floor[i:i + step],
                             self.code[i:i + step])._slice_flags(element, int8_allow_neg2)
            for i in range(0, n, step)])

    def _slice_flags(self, element, int8_allow_neg2: bool) -> np.ndarray:
        x, d = self.value, self.divisor
        r = fp32_resolution(x, self.last_bit_floor)
        if (np.frexp(d)[0] == 0.5).all():  # x / D and r / D are exact: the rule in the element's units
            inverse = 1.0 / d  # exact: a power of two
            x, r, d = x * inverse, r * inverse, None
        in_x = (lambda a: a) if d is None else (lambda a: a * d)  # element units -> x's domain
        grids = _Grids.of(element, int8_allow_neg2)
        negative = self.negative
        sign = 0 if grids.symmetric else negative.astype(np.int64)  # which grid: the input's sign
        lo_at = np.take(grids.position, self.code)
        if not grids.symmetric:
            lo_at += grids.negative_offset * sign
        lo_at -= in_x(np.take(grids.points, lo_at)) > x  # the result above x: it is hi, lo the point below
        lo, hi = np.take(grids.points, lo_at), np.take(grids.points, lo_at + 1)
        held = (in_x(lo) <= x) & ((x < in_x(hi)) | (lo_at == grids.top[sign]))
        missed = self.rounds & ~held
        if missed.any():  # a result that is no end of x's interval: the grid's own interval
            rows, cols = np.nonzero(missed)
            lo, hi = lo.copy(), hi.copy()
            d_full = np.broadcast_to(1.0 if d is None else d, x.shape)
            for flag in (False, True):
                pick = negative[rows, cols] == flag
                i, j = rows[pick], cols[pick]
                lo[i, j], hi[i, j], _ = grid_interval(x[i, j], d_full[i, j], grids.grid[flag])
        saturated = x > in_x(grids.largest[sign])
        result = np.take(grids.magnitude, self.code)
        words = decision_flags(x, in_x(lo), in_x(hi), r, in_x(result), negative, in_x(grids.min_normal), hi_unit=hi)
        np.copyto(words, _SATURATION, where=saturated)
        np.copyto(words, 0, where=~self.rounds)  # no class where the element does not round
        return np.bitwise_or.reduce(words, axis=1)


@dataclass(frozen=True)
class _Grids:
    """The element grids of both signs (:func:`.rounding.magnitude_grid`) as one array ``points``:
    the positive grid then its virtual point 2g - g' above its largest g, then the negative grid
    (from ``negative_offset``) and its virtual point; per code, ``position`` (its magnitude's
    index in the grid of its sign, 0 for NaN and Inf codes) and ``magnitude`` (0 for NaN and Inf);
    per sign, ``top`` (the index of g in ``points``) and ``largest`` (g); ``min_normal`` (the
    element's smallest normal if it has subnormals, else 0). ``symmetric``: both grids are one (all
    but MXINT8 under ``int8_allow_neg2``)."""

    grid: tuple
    symmetric: bool
    points: np.ndarray
    negative_offset: int
    position: np.ndarray
    magnitude: np.ndarray
    top: np.ndarray
    largest: np.ndarray
    min_normal: float

    @staticmethod
    @lru_cache(maxsize=None)
    def of(element, int8_allow_neg2: bool) -> "_Grids":
        grid = tuple(magnitude_grid(element, negative, int8_allow_neg2) for negative in (False, True))
        extended = [list(g) + [2 * g[-1] - g[-2]] for g in grid]
        offset = len(extended[0])
        position, magnitude = [], []
        for code in range(1 << element.width):
            value = decode(code, element)
            m = float(value.magnitude) if value.is_finite else 0.0
            g = grid[bool(value.sign)]
            position.append(g.index(m) if m in g else 0)
            magnitude.append(m)
        min_normal = float(element.min_normal) if element.kind == "float" and element.subnormals else 0.0
        return _Grids(grid, grid[0] == grid[1], np.array(extended[0] + extended[1]), offset, np.array(position, dtype=np.int64),
                      np.array(magnitude), np.array([len(grid[0]) - 1, offset + len(grid[1]) - 1]),
                      np.array([grid[0][-1], grid[1][-1]]), min_normal)
