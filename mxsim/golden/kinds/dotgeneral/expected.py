"""The expected outputs of ``dotgeneral`` vectors, from the reference or for a chunk from the fast path.
The reference goes vector by vector (the DotGeneral and every block's Dot), its classes a chunk at
once from the same record the fast path fills (:mod:`..dot.reference_record`); the fast path takes a
chunk (NVFP4 vectors grouped by their pair of tensor scales)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ....fast.dot import dot_general_blocks
from ....ref import dot as ref_dot
from ....ref.exact import Exact
from ....ref.output import storage_format
from ...coverage.accumulator import c_classes
from ...coverage.catalogue import class_names
from ...values import float_value, pack_word, unpack_word
from ..batch import pack_items
from ..dot.fast_batch import merged_block_dots
from ..dot.reference_record import reference_block_dots


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

    def _reference_chunk(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """(outputs, classes) of vectors from the reference: each vector's DotGeneral, then the
        classes of all of them at once from the reference's values as the fast path's record
        (:func:`..dot.reference_record.reference_block_dots`, :meth:`.classes.DotGeneralClasses._general_flags`)."""
        count, n = len(rows), self.n_blocks
        computed = [self._reference_vector(inputs) for inputs in rows]
        columns = {f.name: [inputs[f.name] for inputs in rows] for f in self.block_fields}
        sides = [self._operand_arrays(columns, side, fmt, n) for side, fmt in (("a", self.fa), ("b", self.fb))]
        blocks = reference_block_dots([block for g, _ in computed for block in g.blocks]).reshape((count, n))
        result = np.array([g.code for g, _ in computed], dtype=np.int64)
        words = self._general_flags(result, blocks.codes, sides, blocks, count).tolist()
        width = storage_format(self.acc).width
        return [({"result": g.code, "block_results": pack_word([b.code for b in g.blocks], width)},
                 set(class_names(word)) | c_set) for (g, c_set), word in zip(computed, words)]

    def _reference_vector(self, inputs: dict):
        """(the reference's :class:`~mxsim.ref.dot.GeneralDot`, the classes of C against the blocks'
        exact sum) of one vector."""
        blocks_a, blocks_b, ta, tb = self._vector_blocks(inputs)
        c = float_value(inputs["c"], self.c_format) if self.has_c else None
        g = ref_dot.dot_general(blocks_a, blocks_b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb,
                                c=c)
        c_set = set()
        if c is not None:
            finite = all(b.exact.is_finite for b in g.blocks)
            exact = sum((b.exact.value for b in g.blocks), Fraction(0)) if finite else None
            c_set = c_classes(c, None if exact is None else Exact(int(exact < 0), abs(exact)))
        return g, c_set

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
