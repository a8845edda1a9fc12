"""Sums across blocks of a DotGeneral row (separate accumulation): in fp32 in block order, or exactly.

``across_blocks="fp32"`` (:class:`_Fp32Rows`): each block's output value added in block order
into an fp32 register, nearest-even; ``"exact"`` (:class:`_ExactRows`): the exact sum of the
block values as Python integers, rounded once (docs/numerics.md section 4). Both are fed the
blocks (:class:`mxsim.fast.dot.BlockDots`) piece by piece and start from C when one is given;
:func:`_split_signed` narrows object-array sums to int64 with a sticky bit for the rounding.
"""

from __future__ import annotations

import numpy as np

from ..options import Accumulator
from .output import FINITE, NAN, NEG_INF, POS_INF, float32_parts, output_values


def _narrow(significand: np.ndarray, exponent: np.ndarray):
    """Object-array significands to (negative, int64 magnitude < 2^62, exponent): magnitudes over
    61 bits keep their top 60 bits and OR the dropped ones into a sticky bit."""
    negative = np.array([s < 0 for s in significand], dtype=bool)
    magnitude = np.empty(significand.shape, dtype=np.int64)
    exponent = exponent.astype(np.int64).copy()
    for i, s in enumerate(significand):
        n = abs(int(s))
        extra = max(n.bit_length() - 60, 0)
        if extra:
            n = (n >> extra) | int(n & ((1 << extra) - 1) != 0)
            exponent[i] += extra
        magnitude[i] = n
    return negative, magnitude, exponent


def _split_signed(significand, exponent):
    if significand.dtype == object:
        return _narrow(significand, exponent)
    return significand < 0, np.abs(significand), exponent


class _Fp32Rows:
    """Across blocks in fp32: each block's output value added in block order into an fp32 register
    per row, each addition rounded to nearest-even; fed the blocks piece by piece. The register
    starts at C (float32 values) if given, else at the first block's value."""

    def __init__(self, rows: int, c: np.ndarray | None = None):
        self.rows, self.total = rows, None if c is None else c.copy()

    def add(self, blocks, width: int, acc: Accumulator) -> None:
        values = output_values(blocks.codes, acc).astype(np.float32).reshape(self.rows, width)
        start = 0
        if self.total is None:
            self.total, start = values[:, 0].copy(), 1
        with np.errstate(invalid="ignore", over="ignore"):
            for j in range(start, width):
                self.total += values[:, j]

    def parts(self):
        return float32_parts(self.total if self.total is not None else np.zeros(self.rows, np.float32))


class _ExactRows:
    """Across blocks exactly: per row, the exact sum of the finite block values (and of C, float32
    values, if given) as total * 2^low (Python ints) and the specials seen; fed the blocks piece by
    piece."""

    def __init__(self, rows: int, c: np.ndarray | None = None):
        self.totals = [0] * rows
        self.low: list[int | None] = [None] * rows  # the smallest exponent of a nonzero term
        self.nan, self.pos, self.neg = (np.zeros(rows, dtype=bool) for _ in range(3))
        if c is not None:
            negative, magnitude, exponent, special = float32_parts(c)
            self.nan |= special == NAN
            self.pos |= special == POS_INF
            self.neg |= special == NEG_INF
            for r in np.flatnonzero((special == FINITE) & (magnitude != 0)):
                self.totals[r] = -int(magnitude[r]) if negative[r] else int(magnitude[r])
                self.low[r] = int(exponent[r])

    def add(self, blocks, width: int, acc: Accumulator) -> None:
        shape = (len(self.totals), width)
        special = blocks.special.reshape(shape)
        self.nan |= (special == NAN).any(axis=1)
        self.pos |= (special == POS_INF).any(axis=1)
        self.neg |= (special == NEG_INF).any(axis=1)
        significand, exponent = blocks.significand.reshape(shape), blocks.exponent.reshape(shape)
        for r in range(shape[0]):
            finite = [(int(s), int(e)) for s, e, k in zip(significand[r], exponent[r], special[r]) if k == FINITE and s]
            if not finite:
                continue
            low = min(e for _, e in finite)
            if self.low[r] is not None and self.low[r] < low:
                low = self.low[r]
            total = self.totals[r] << (self.low[r] - low) if self.low[r] is not None else 0
            self.totals[r] = total + sum((s << (e - low) for s, e in finite), 0)
            self.low[r] = low

    def parts(self):
        nan = self.nan | (self.pos & self.neg)
        special = np.where(nan, NAN, np.where(self.pos, POS_INF, np.where(self.neg, NEG_INF, FINITE)))
        totals = np.array(self.totals + [None], dtype=object)[:-1]
        low = np.array([0 if e is None else e for e in self.low], dtype=np.int64)
        negative, magnitude, exponent = _narrow(totals, low)
        return negative, magnitude, exponent, special.astype(np.int8)
