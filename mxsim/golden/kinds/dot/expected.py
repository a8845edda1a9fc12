"""The expected outputs of ``dot`` vectors from the reference, with each vector's classes.
The block Dot (register, LSB, anchor, result, with C), or the fused steps and result; the classes
of a chunk of separate block Dots at once, from the reference's values as the fast path's record
(:mod:`.reference_record`)."""

from __future__ import annotations

import numpy as np

from ....fast.dot import Operand
from ....ref import dot as ref_dot
from ....ref.block import QuantizedBlock
from ....ref.exact import Exact
from ....ref.fused import fused_result, fused_step_details
from ....ref.output import storage_format
from ...coverage.accumulator import c_classes
from ...coverage.catalogue import class_names
from ...coverage.rounding_record import fused_flag_words
from ...values import float_value, fp32_value, pack_word, unpack_word
from ..fused_batch import element_flags
from .reference_record import pair_registers, reference_block_dots, stacked_registers


class DotExpected:
    """``compute``, ``compute_many`` and ``reference_codes`` of a dot suite (needs ``self.fa``,
    ``self.fb``, ``self.acc``, ``self.fused``, ``self.has_c``, ``self.c_format``, ``self.steps``
    and ``self._classes``: :class:`.classes.DotClasses`)."""

    def _blocks(self, inputs: dict):
        blocks, scales = [], []
        for side, fmt in (("a", self.fa), ("b", self.fb)):
            codes = unpack_word(inputs[f"{side}_elems"], fmt.element.width, fmt.block_size)
            subs = tuple(unpack_word(inputs[f"{side}_sub"], fmt.subscale_bits, fmt.subblocks)) if fmt.subblocks else ()
            blocks.append(QuantizedBlock(inputs[f"{side}_scale"], subs, tuple(codes)))
            ts = inputs.get(f"{side}_tensor_scale")
            scales.append(None if ts is None else fp32_value(ts).magnitude)
        return blocks, scales

    def _vector_blocks(self, inputs: dict):
        """(blocks_a, blocks_b, tensor_scale_a, tensor_scale_b) of a vector."""
        (a, b), (ta, tb) = self._blocks(inputs)
        return [a], [b], ta, tb

    def reference_codes(self, inputs: dict, c: Exact, first_steps: int | None = None) -> tuple[int, ...]:
        """The reference's output codes of a vector's blocks with accumulator input ``c``: every
        fused step's D (``first_steps``: only the first that many; the reference's steps, as
        :meth:`compute` takes them), or the one result of separate accumulation (for aiming stimulus)."""
        blocks_a, blocks_b, ta, tb = self._vector_blocks(inputs)
        if self.fused:
            details = fused_step_details(blocks_a, blocks_b, self.fa, self.fb, self.acc, c, first_steps)
            return tuple(step.code for step in details)
        g = ref_dot.dot_general(blocks_a, blocks_b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb,
                                c=c)
        return g.steps or (g.code,)

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference vector by vector; for separate
        accumulation the classes of all of them at once, from the reference's block Dots as the
        record the fast path fills (:mod:`.reference_record`, :meth:`.classes.DotClasses._batch_flags`)."""
        if self.fused:
            return self._fused_chunk(rows) if rows else []
        return self._reference_chunk(rows) if rows else []

    def _reference_chunk(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """(outputs, classes) of vectors of separate accumulation from the reference."""
        computed = [self._reference_vector(inputs) for inputs in rows]
        columns = {f.name: [inputs[f.name] for inputs in rows] for f in self.block_fields}
        sides = [self._operand_arrays(columns, side, fmt, 1) for side, fmt in (("a", self.fa), ("b", self.fb))]
        registers = stacked_registers(list(zip(*(pair for *_, pair in computed)))) if self.acc.mode == "aligned" else None
        record = reference_block_dots([r for r, _, _, _ in computed])
        words = self._batch_flags(sides, record, registers).tolist()
        return [(out, set(class_names(word)) | c_set) for (_, out, c_set, _), word in zip(computed, words)]

    def _fused_chunk(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """(outputs, classes) of vectors of fused accumulation from the reference (:meth:`_fused`,
        no tensor scales): every vector's ``vector_blocks`` block pairs unpacked from the chunk's
        field words at once (:meth:`_operand_arrays`), then the steps vector by vector, then the
        classes of all of them at once (:meth:`_with_fused_classes`)."""
        n = self.vector_blocks
        columns = {f.name: [inputs[f.name] for inputs in rows] for f in self.block_fields}
        sides = [self._operand_arrays(columns, side, fmt, n) for side, fmt in (("a", self.fa), ("b", self.fb))]
        blocks_a, blocks_b = (Operand(fmt, *side).blocks() for side, fmt in zip(sides, (self.fa, self.fb)))
        cs = [float_value(inputs["c"], self.c_format) if self.has_c else None for inputs in rows]
        vectors = [self._fused(blocks_a[i * n : (i + 1) * n], blocks_b[i * n : (i + 1) * n], c)
                   for i, c in enumerate(cs)]
        return self._with_fused_classes(vectors, sides)

    def _reference_vector(self, inputs: dict):
        """(the reference's :class:`~mxsim.ref.dot.BlockDot`, the outputs, the classes of C against the
        blocks' exact value, :func:`.reference_record.pair_registers` for an aligned accumulator) of
        one vector of separate accumulation. With C, ``result`` is the Dot + C and the other fields
        the Dot's (docs/numerics.md section 4.1)."""
        (a, b), (ta, tb) = self._blocks(inputs)
        r = ref_dot.dot(a, b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb)
        out = {"acc": r.accumulator, "lsb": r.lsb_exponent, "anchor": r.anchor, "result": r.code}
        c_set = set()
        if self.has_c:
            c = float_value(inputs["c"], self.c_format)
            with_c = ref_dot.dot(a, b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb, c=c)
            out["result"] = with_c.code
            c_set = c_classes(c, r.exact)
        pair = None  # the registers of acc_overflow and shift_inexact (aligned), while the pair's products are kept
        if self.acc.mode == "aligned":
            pair = pair_registers(a, b, r, self.fa, self.fb, self.exact_acc)
        return r, out, c_set, pair

    def _fused(self, blocks_a, blocks_b, c: Exact):
        """(outputs, (the steps, c, the result)) of a fused vector (the reference's steps; no
        tensor scales): its classes come for many vectors at once (:meth:`_with_fused_classes`)."""
        details = fused_step_details(blocks_a, blocks_b, self.fa, self.fb, self.acc, c)
        codes = [step.code for step in details]
        out = {"result": fused_result(codes, c, self.acc, self.fa.block_size, len(blocks_a))}
        if self.steps:
            out["steps"] = pack_word(codes, storage_format(self.acc).width)
        return out, (details, c, out["result"])

    def _with_fused_classes(self, vectors, sides) -> list[tuple[dict, set]]:
        """(outputs, classes) of the vectors of :meth:`_fused`: every step of every vector classed
        at once (:func:`...coverage.rounding_record.fused_flag_words`), and every block pair's element
        classes (:func:`..fused_batch.element_flags` of the chunk's operand arrays ``sides``: each
        vector's ``vector_blocks`` pairs in turn), ORed into each vector's classes."""
        words = np.array(fused_flag_words((steps for _, steps in vectors), self.acc), dtype=np.int64)
        (scales_a, _, codes_a), (scales_b, _, codes_b) = sides
        if len(codes_a):
            pair_words = element_flags(self.fa, self.fb, scales_a.astype(np.int64), codes_a.astype(np.int64),
                                       scales_b.astype(np.int64), codes_b.astype(np.int64))
            words |= np.bitwise_or.reduce(pair_words.reshape(len(vectors), -1), axis=1)
        return [(out, set(class_names(word))) for (out, _), word in zip(vectors, words.tolist())]
