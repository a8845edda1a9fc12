"""The expected outputs of a chunk of ``dot`` vectors from the NumPy fast path.
The block Dots of separate accumulation (NVFP4 vectors grouped by their pair of tensor scales), and
fused suites through :mod:`..fused_batch`; what the fast path does not model goes to the reference
(:mod:`..batch`)."""

from __future__ import annotations

import numpy as np

from ....fast.dot import BlockDots, Operand, dot_blocks
from ....options import Accumulator
from ....ref import dot as ref_dot
from ...values import fp32_value
from ..batch import compute_each, fast_dot_models, unpack_items
from ..fused_batch import compute_fused_batch


class DotFastBatch:
    """``fast_path_applies``, ``compute_batch`` and the fast path's operands of a dot suite (needs
    ``self.fa``, ``self.fb``, ``self.acc``, ``self.unbounded_acc`` and ``self.exact_acc`` (aligned), ``self.fused``,
    ``self.has_c`` and ``self._batch_flags``:
    :class:`.classes.DotClasses`)."""

    @property
    def fast_path_applies(self) -> bool:
        """Whether the fast path models this suite: fused accumulation (every preset and setting,
        :mod:`.fused_batch`), or separate accumulation with an accumulator the fast path models
        (:func:`~mxsim.golden.kinds.batch.fast_dot_models`) and no accumulator input C (the fast path
        computes the blocks' Dot alone; a C of separate accumulation goes through the reference)."""
        if self.fused:
            return True
        return fast_dot_models(self.acc) and not self.has_c

    def compute_batch(self, inputs: dict):
        """``compute`` of N vectors with the fast path: (outputs, flags), see
        :mod:`mxsim.golden.kinds.batch`. The configurations the fast path does not model
        (:attr:`fast_path_applies` false: separate accumulation with an accumulator input C,
        output_overflow other than inf, nan_bits, fp32_e8m13) and any batch with an invalid vector
        (the reference then raises its own error) go vector by vector through ``compute``. Fused
        suites: :func:`.fused_batch.compute_fused_batch`."""
        if not self.fast_path_applies:
            return compute_each(self, inputs)
        if self.fused:
            return compute_fused_batch(self, inputs)
        try:
            return self._batch(inputs)
        except ValueError:
            return compute_each(self, inputs)

    def _operand_arrays(self, inputs: dict, side: str, fmt, blocks: int):
        """(scales (N*blocks,), sub-scales (N*blocks, subblocks) or None, codes (N*blocks, k)) of
        one side, with ``blocks`` blocks per vector."""
        k = fmt.block_size
        scales = unpack_items(inputs[f"{side}_scale"], fmt.scale_storage_bits, blocks).reshape(-1)
        subs = None
        if fmt.subblocks:
            subs = unpack_items(inputs[f"{side}_sub"], fmt.subscale_bits, blocks * fmt.subblocks).reshape(-1, fmt.subblocks)
        codes = unpack_items(inputs[f"{side}_elems"], fmt.element.width, blocks * k).reshape(-1, k)
        return scales, subs, codes

    def _tensor_scale_groups(self, inputs: dict, n: int):
        """[((tensor_scale_a, tensor_scale_b), vector indices)]: NVFP4 vectors grouped by their pair
        of tensor scales (each group is one fast call); one group of every vector otherwise."""
        names = [f"{side}_tensor_scale" for side in "ab"]
        if not any(name in inputs for name in names):
            return [((None, None), slice(0, n))]
        groups: dict = {}
        for i in range(n):
            key = tuple(int(inputs[name][i]) if name in inputs else None for name in names)
            groups.setdefault(key, []).append(i)
        return [(tuple(None if w is None else fp32_value(w).magnitude for w in key), np.array(rows))
                for key, rows in groups.items()]

    def _group_operands(self, sides, group, blocks: int = 1) -> list[Operand]:
        """The fast path's operands a and b of one group of :meth:`_tensor_scale_groups` (vectors of
        ``blocks`` blocks)."""
        (ts_a, ts_b), rows = group
        if isinstance(rows, slice):
            picked = slice(rows.start * blocks, rows.stop * blocks)
        else:
            picked = (rows[:, None] * blocks + np.arange(blocks)).reshape(-1)
        return [Operand(fmt, scales[picked], None if subs is None else subs[picked], codes[picked], ts)
                for (scales, subs, codes), fmt, ts in zip(sides, (self.fa, self.fb), (ts_a, ts_b))]

    def _block_dots(self, sides, groups, acc: Accumulator, blocks: int = 1) -> BlockDots:
        """fast.dot.dot_blocks over every vector's blocks, group by group, in vector order."""
        parts = []
        for group in groups:
            op_a, op_b = self._group_operands(sides, group, blocks)
            parts.append((group[1], dot_blocks(op_a, op_b, acc)))
        if len(parts) == 1:
            return parts[0][1]
        vectors = sum(len(rows) for rows, _ in parts)
        merged = merged_block_dots(parts, vectors, blocks)
        return BlockDots(**{name: getattr(merged, name).reshape(-1) for name in BlockDots.__dataclass_fields__})

    def _batch(self, inputs: dict):
        n = len(inputs["a_scale"])
        sides = [self._operand_arrays(inputs, side, fmt, 1) for side, fmt in (("a", self.fa), ("b", self.fb))]
        groups = self._tensor_scale_groups(inputs, n)
        r = self._block_dots(sides, groups, self.acc)
        out = {"acc": r.accumulator.tolist(), "lsb": r.lsb_exponent.tolist(), "anchor": r.anchor.tolist(),
               "result": r.codes.tolist()}
        flags = self._batch_flags(sides, r, self._fast_registers(sides, groups, r))
        return out, flags.tolist()

    def _fast_registers(self, sides, groups, r: BlockDots, blocks: int = 1):
        """The fast path's :data:`.reference_record.Registers` of an aligned accumulator (None for
        another mode): the registers without a width and exact, of every block. A register that
        cannot overflow (:func:`mxsim.ref.dot.register_may_overflow`) is its own sum without a
        width: ``r``'s."""
        if self.acc.mode != "aligned":
            return None
        if ref_dot.register_may_overflow(self.fa, self.fb, self.acc):
            unbounded = self._block_dots(sides, groups, self.unbounded_acc, blocks)
            unbounded_register = (unbounded.accumulator, unbounded.lsb_exponent)
        else:
            unbounded_register = (r.accumulator, r.lsb_exponent)
        exact = self._block_dots(sides, groups, self.exact_acc, blocks)
        return unbounded_register, (exact.accumulator, exact.lsb_exponent)


def merged_block_dots(parts, count: int, n: int) -> BlockDots:
    """One :class:`BlockDots` of shape (count, n) from the groups' (rows, BlockDots) in any order
    (rows: a slice or an index array of vectors; each BlockDots holds its vectors' n blocks in order)."""
    if len(parts) == 1 and isinstance(parts[0][0], slice):
        return parts[0][1]
    fields = {}
    for name in BlockDots.__dataclass_fields__:
        arrays = [getattr(dots, name) for _, dots in parts]
        dtype = object if any(a.dtype == object for a in arrays) else arrays[0].dtype
        merged = np.empty((count, n), dtype=dtype)
        for (rows, _), a in zip(parts, arrays):
            merged[rows] = a.reshape(-1, n)
        fields[name] = merged
    return BlockDots(**fields)
