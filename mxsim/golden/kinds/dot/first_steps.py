"""The first fused step's D (with C = +0) of many ``dot`` vectors at once, for aiming C at it.
From the fast path, for :mod:`...stimulus.accumulator`."""

from __future__ import annotations

import numpy as np

from ....fast.dot import Operand
from ....fast.fused import dot_general_steps
from ....ref.exact import Exact
from ..fused_batch import exact_outputs


class DotFirstSteps:
    """``first_step_codes`` and ``first_step_values`` of a dot suite (needs ``self.fused``,
    ``self.acc``, ``self.fa``, ``self.fb``, ``self.vector_blocks``, ``self.block_fields`` and
    ``self._operand_arrays``: :class:`.fast_batch.DotFastBatch`)."""

    def first_step_codes(self, rows: list[dict]) -> list[int] | None:
        """``reference_codes(row, +0)[0]`` of every vector of ``rows`` at once, for aiming C
        (:mod:`..stimulus.accumulator`): a fused suite's first step's D with C = +0 from the fast path
        (:func:`mxsim.fast.fused.dot_general_steps`, bit for bit the reference's; it hands the
        configurations it does not model to the reference itself). None for separate accumulation,
        or a batch the fast path refuses: the caller asks the reference vector by vector."""
        codes = self._first_steps(rows)
        return None if codes is None else codes.astype(np.int64).tolist()

    def first_step_values(self, rows: list[dict]) -> list[Exact] | None:
        """:meth:`first_step_codes` decoded: the exact value of each vector's first step's D with
        C = +0 (:func:`.fused_batch.exact_outputs`); None where that gives None."""
        codes = self._first_steps(rows)
        return None if codes is None else exact_outputs(codes, self.acc)

    def _first_steps(self, rows: list[dict]) -> np.ndarray | None:
        """The first step's D codes of :meth:`first_step_codes` as an array, from the blocks the
        first step reads alone (the first ceil(step / k) of each vector's blocks: the step's D with
        C = +0 depends on its own products only)."""
        if not self.fused or not rows:
            return None
        k = self.fa.block_size
        n, count = min(self.vector_blocks, -(-self.acc.effective_step(k) // k)), len(rows)
        inputs = {f.name: [row[f.name] for row in rows] for f in self.block_fields}
        try:
            (sa, ua, ca), (sb, ub, cb) = [self._first_blocks(inputs, side, fmt, n)
                                          for side, fmt in (("a", self.fa), ("b", self.fb))]
            _, steps = dot_general_steps(Operand(self.fa, sa, ua, ca, None), Operand(self.fb, sb, ub, cb, None),
                                         self.acc, (count,), (count,), n, keep_steps=True)
        except ValueError:
            return None
        return steps[:, 0]

    def _first_blocks(self, inputs: dict, side: str, fmt, n: int):
        """:meth:`_operand_arrays` of the first ``n`` of each vector's ``vector_blocks`` blocks."""
        scales, subs, codes = self._operand_arrays(inputs, side, fmt, self.vector_blocks)
        if n == self.vector_blocks:
            return scales, subs, codes
        count = len(scales) // self.vector_blocks

        def first(array):
            return None if array is None else array.reshape(count, self.vector_blocks, *array.shape[1:])[:, :n].reshape(
                count * n, *array.shape[1:])

        return first(scales), first(subs), first(codes)
