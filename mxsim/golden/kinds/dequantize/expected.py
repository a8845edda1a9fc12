"""The expected output words of ``dequantize`` vectors, from the reference dequantizer
(:func:`mxsim.ref.dequant.dequantize_block_traced`), with each vector's classes (the decision classes of
many vectors at once from the dequantizer's record of its output roundings: :mod:`.classes`)."""

from __future__ import annotations

from ....ref.stored_block import QuantizedBlock
from ....ref.dequant import dequantize_block_traced
from ...coverage.catalogue import class_names
from ...values import fp32_value, pack_word, unpack_word


class DequantizeExpected:
    """``compute`` and ``compute_many`` of a dequantize suite (needs ``self.fmt``, ``self.out``,
    ``self.output``, ``self.opts``, ``self.scale_encoding`` and :class:`.classes.DequantizeClasses`)."""

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference dequantizer vector by vector, then
        the rounding-decision classes of all their values at once (:meth:`_decision_flag_words` of
        the stacked records: the same operations per value as for one vector)."""
        fmt, k = self.fmt, self.fmt.block_size
        done, records, owners = [], [], []
        for inputs in rows:
            codes = tuple(unpack_word(inputs["codes"], fmt.element.width, k))
            subscales = ()
            if fmt.subblocks:
                subscales = tuple(unpack_word(inputs["subscales"], fmt.subscale_bits, fmt.subblocks))
            tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
            block = QuantizedBlock(inputs["scale"], subscales, codes)
            values, words, vector_records = dequantize_block_traced(block, fmt, self.output, self.opts, tensor_scale,
                                                                    self.scale_encoding)
            owners += [len(done)] * len(vector_records)
            records += vector_records
            done.append(({"values": pack_word(words, self.out.width)}, self._classes(block, values, words)))
        flags = [0] * len(done)
        for owner, f in zip(owners, self._decision_flag_words(records)):
            flags[owner] |= f
        return [(out, classes | set(class_names(f))) for (out, classes), f in zip(done, flags)]
