"""The expected outputs of ``dotgeneral`` vectors, from the reference or for a chunk from the fast path.
The reference goes vector by vector (the DotGeneral, every block's Dot and the classes of both; the
output roundings' classes of many vectors at once: :mod:`...coverage.rounding_record`); the fast
path takes a chunk (NVFP4 vectors grouped by their pair of tensor scales)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ....fast.dot import dot_general_blocks
from ....ref import dot as ref_dot
from ....ref.exact import Exact
from ....ref.output import storage_format
from ...coverage.accumulator import c_classes
from ...coverage.rounding_record import block_dot_rows
from ...values import code_sets, float_value, is_subnormal_code, pack_word, unpack_word
from ..batch import pack_items
from ..dot.fast_batch import merged_block_dots


class DotGeneralExpected:
    """``compute`` (through the dot kind's ``compute_many``) and ``compute_batch``'s chunk of a
    dotgeneral suite (needs ``self.n_blocks``, ``self.single``, the dot suite's fields and
    ``self._general_flags``: :class:`.classes.DotGeneralClasses`)."""

    def _vector_blocks(self, inputs: dict):
        n = self.n_blocks
        # block j's value of each field at [j]
        fields = {f.name: [inputs[f.name]] * n if f.name.endswith("tensor_scale")
                  else unpack_word(inputs[f.name], f.bits, n) for f in self.single}
        per_block = [{name: values[j] for name, values in fields.items()} for j in range(n)]
        pairs = [self._blocks(row) for row in per_block]
        (ta, tb) = pairs[0][1]
        return [p[0][0] for p in pairs], [p[0][1] for p in pairs], ta, tb

    def _reference_vector(self, inputs: dict):
        """(outputs, the classes but the blocks' output roundings', the roundings' record rows)."""
        blocks_a, blocks_b, ta, tb = self._vector_blocks(inputs)
        c = float_value(inputs["c"], self.c_format) if self.has_c else None
        scales = {"tensor_scale_a": ta, "tensor_scale_b": tb}
        g = ref_dot.dot_general(blocks_a, blocks_b, self.fa, self.fb, self.acc, **scales, c=c)
        out = storage_format(self.acc)
        classes = set()
        if g.value.is_nan:
            classes.add("nan")
        elif g.value.is_inf:
            classes.add("inf")
            if all(b.value.is_finite for b in g.blocks):
                classes.add("overflow")
        elif g.value.is_zero:
            classes.add("negative_zero" if g.value.sign else "zero")
            if any(not b.value.is_zero for b in g.blocks):
                classes.add("cancellation")
        elif is_subnormal_code(g.code, out):
            classes.add("subnormal_output")
        if len({b.value.sign for b in g.blocks if b.value.is_finite and not b.value.is_zero}) == 2:
            classes.add("mixed_signs")
        roundings = block_dot_rows(zip(blocks_a, blocks_b, g.blocks), self.fa, self.fb, ta is not None or tb is not None)
        for side, fmt, blocks in (("a", self.fa, blocks_a), ("b", self.fb, blocks_b)):
            if any(not code_sets(fmt.element)["inf"].isdisjoint(block.codes) for block in blocks):
                classes.add(f"inf_{side}")  # element Inf per operand (contract 3.3 (5))
        if c is not None:
            finite = all(b.exact.is_finite for b in g.blocks)
            exact = sum((b.exact.value for b in g.blocks), Fraction(0)) if finite else None
            classes |= c_classes(c, None if exact is None else Exact(int(exact < 0), abs(exact)))
        return {"result": g.code, "block_results": pack_word([b.code for b in g.blocks], out.width)}, classes, roundings

    def _batch(self, inputs: dict):
        n, count = self.n_blocks, len(inputs["a_scale"])
        sides = [self._operand_arrays(inputs, side, fmt, n) for side, fmt in (("a", self.fa), ("b", self.fb))]
        result = np.zeros(count, dtype=np.int64)
        block_codes = np.zeros((count, n), dtype=np.int64)
        parts = []
        for group in self._tensor_scale_groups(inputs, count):
            op_a, op_b = self._group_operands(sides, group, n)
            rows = group[1]
            size = len(range(count)[rows]) if isinstance(rows, slice) else len(rows)
            codes, group_blocks = dot_general_blocks(op_a, op_b, self.acc, rows=size, n_blocks=n)
            result[rows], block_codes[rows] = codes, group_blocks.codes
            parts.append((rows, group_blocks))
        blocks = merged_block_dots(parts, count, n)
        flags = self._general_flags(result, block_codes, sides, blocks, count)
        outputs = {"result": result.tolist(), "block_results": pack_items(block_codes, self.out_format.width)}
        return outputs, flags.tolist()
