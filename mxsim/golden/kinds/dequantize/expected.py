"""The expected output words of ``dequantize`` vectors, from the reference dequantizer
(:func:`mxsim.ref.dequant.round_to_output` of :func:`mxsim.ref.stored_block.dequantize_block`), with each
vector's classes (the decision classes of many vectors at once: :mod:`.classes`)."""

from __future__ import annotations

from ....ref.stored_block import QuantizedBlock, dequantize_block
from ....ref.dequant import round_to_output
from ...coverage.catalogue import class_names
from ...values import fp32_value, pack_word, unpack_word


class DequantizeExpected:
    """``compute`` and ``compute_many`` of a dequantize suite (needs ``self.fmt``, ``self.out``,
    ``self.output``, ``self.opts``, ``self.scale_encoding`` and :class:`.classes.DequantizeClasses`)."""

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference dequantizer vector by vector, then
        the rounding-decision classes of all their values at once (:meth:`_decision_flags_of` on the
        stacked rows of :meth:`_decision_rows`: the same operations per value as for one vector)."""
        fmt, k = self.fmt, self.fmt.block_size
        done, picked, owners = [], [], []
        for inputs in rows:
            codes = tuple(unpack_word(inputs["codes"], fmt.element.width, k))
            subscales = ()
            if fmt.subblocks:
                subscales = tuple(unpack_word(inputs["subscales"], fmt.subscale_bits, fmt.subblocks))
            tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
            block = QuantizedBlock(inputs["scale"], subscales, codes)
            values = dequantize_block(block, fmt, tensor_scale, self.scale_encoding)
            words = [round_to_output(x, self.output, self.opts) for x in values]
            vector_rows, _ = self._decision_rows(values, words, block.codes)
            owners += [len(done)] * len(vector_rows)
            picked += vector_rows
            done.append(({"values": pack_word(words, self.out.width)}, self._classes(block, values, words)))
        flags = [0] * len(done)
        for owner, f in zip(owners, self._decision_flags_of(picked).tolist() if picked else ()):
            flags[owner] |= f
        return [(out, classes | set(class_names(f))) for (out, classes), f in zip(done, flags)]
