"""The corner classes of a chunk of ``dotgeneral`` vectors from the fast path's values.
As flag words: of the DotGeneral result, of every block's Dot and its output rounding, and an Inf
element per operand (docs/numerics.md section 3.3)."""

from __future__ import annotations

import numpy as np

from ....fast.dot import BlockDots
from ...coverage.rounding_record import OutputCodes
from ..batch import bit, code_table
from ..dot.classes import rounding_flags


class DotGeneralClasses:
    """``_general_flags`` and ``_batch_block_flags`` of a dotgeneral suite (needs ``self.n_blocks``,
    ``self.fa``, ``self.fb``, ``self.out_format``)."""

    def _general_flags(self, result: np.ndarray, block_codes: np.ndarray, sides, blocks: BlockDots,
                       count: int) -> np.ndarray:
        """The classes of :meth:`compute` of ``count`` vectors as flag words, from the DotGeneral
        codes ``result`` (count,), the blocks' codes ``block_codes`` (count, n) and ``blocks``
        (every block's Dot, (count, n))."""
        out_format = self.out_format
        value, block = OutputCodes.of(result, out_format), OutputCodes.of(block_codes, out_format)
        flags = np.zeros(count, dtype=np.int64)
        flags[value.nan] |= bit("nan")
        flags[value.inf] |= bit("inf")
        flags[value.inf & ~(block.nan | block.inf).any(axis=1)] |= bit("overflow")
        flags[value.zero & ~value.negative] |= bit("zero")
        flags[value.zero & value.negative] |= bit("negative_zero")
        flags[value.zero & ~block.zero.all(axis=1)] |= bit("cancellation")
        flags[value.subnormal] |= bit("subnormal_output")
        finite_nonzero = ~(block.nan | block.inf | block.zero)
        flags |= self._batch_block_flags(sides, blocks, count)
        flags[(finite_nonzero & block.negative).any(axis=1) & (finite_nonzero & ~block.negative).any(axis=1)] |= bit("mixed_signs")
        return flags

    def _batch_block_flags(self, sides, blocks: BlockDots, count: int) -> np.ndarray:
        """Flags of the batch path (as :meth:`compute`): every block's output-rounding classes, and
        an Inf element per operand."""
        (scales_a, _, ca), (scales_b, _, cb) = sides
        n, k = self.n_blocks, self.fa.block_size
        flat = blocks.reshape((count * n,))
        block_flags = rounding_flags(self, scales_a, scales_b, flat).reshape(count, n)
        flags = np.bitwise_or.reduce(block_flags, axis=1) if n else np.zeros(count, dtype=np.int64)
        ta, tb = code_table(self.fa.element), code_table(self.fb.element)
        flags[ta.inf[ca].reshape(count, n * k).any(axis=1)] |= bit("inf_a")
        flags[tb.inf[cb].reshape(count, n * k).any(axis=1)] |= bit("inf_b")
        return flags
