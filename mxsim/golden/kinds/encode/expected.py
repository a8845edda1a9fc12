"""The expected codes of ``encode`` vectors, from the reference encoder, with each vector's classes:
the decision classes of all the vectors' roundings at once, from the encoder's own record of them
(:class:`...coverage.cast_roundings.CastRoundings`, filled by :func:`mxsim.ref.encode.encode_traced`)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ....fast.encode import encode_traced as fast_encode_traced
from ....ref.encode import encode_traced
from ...coverage.cast_roundings import CastRoundings
from ...coverage.catalogue import class_names, kind_classes
from ...values import FP32_INF_BITS, fp32_float, fp32_value


class EncodeExpected:
    """``compute``, ``compute_many`` and ``fast_expected`` of an encode suite (needs ``self.fmt``,
    ``self.rounding``, ``self.overflow`` and the classes of :class:`.classes.EncodeClasses`)."""

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference encoder vector by vector, then the
        rounding-decision classes of all of them at once from its records
        (:meth:`...coverage.cast_roundings.CastRoundings.flags`)."""
        done = [self._reference_vector(inputs) for inputs in rows]
        words = CastRoundings.from_reference([record for _, _, record in done]).flags(self.fmt).tolist()
        named = {0: frozenset()}  # flags word -> its class names (a few distinct words recur)
        for word in words:
            if word not in named:
                named[word] = frozenset(class_names(word))
        return [(out, classes | named[word]) for (out, classes, _), word in zip(done, words)]

    def fast_expected(self, inputs: dict) -> tuple[dict, list[int]]:
        """The ``compute_batch`` shape (:mod:`..batch`) of N vectors from the fast encoder
        (:func:`mxsim.fast.encode.encode_traced` on the float32 inputs): (outputs, flags words), the
        classes from the fp32 bit fields and the codes (:meth:`.classes.EncodeClasses._batch_flags`)
        and the decision classes from the fast encoder's record, the same
        :meth:`...coverage.cast_roundings.CastRoundings.flags` as :meth:`compute_many`'s. Not offered
        as ``compute_batch``: the pipeline would then take the canonical encode suites' expected
        values from it and their manifests would say so (``reference_check``), changing golden/."""
        bits = np.asarray(inputs["x"], dtype=np.uint64).astype(np.uint32)
        codes, record = fast_encode_traced(bits.view(np.float32), self.fmt, self.rounding, self.overflow)
        flags = self._batch_flags(bits, codes.astype(np.int64)) | CastRoundings.from_fast(record).flags(self.fmt)
        return {"code": codes.tolist()}, flags.tolist()

    def _reference_vector(self, inputs: dict):
        """(outputs, classes but the decision classes, the encoder's
        :class:`mxsim.ref.encode.EncodeRounding` of x, or None where x does not round). The
        reference encoder reads x as a Python float (exactly); the input classes are
        :func:`...coverage.catalogue.kind_classes` of x for NaN, Inf and zeros (magnitude bits at or
        above 0x7F800000, or 0), else from the bit fields (below 2^23: subnormal), ``overflow``
        above the format's largest magnitude (``saturation`` where the code holds it); the output
        classes come from the code (:meth:`.classes.EncodeClasses._code_classes`)."""
        bits = inputs["x"]
        x = fp32_float(bits)
        code, record = encode_traced(x, self.fmt, self.rounding, self.overflow)
        magnitude_bits = bits & 0x7FFFFFFF
        if magnitude_bits >= FP32_INF_BITS or not magnitude_bits:  # NaN, Inf, +-0: the classes of the value
            classes = kind_classes(fp32_value(bits))
        else:
            classes = {"subnormal_input"} if magnitude_bits < 1 << 23 else set()
            n, d = abs(x).as_integer_ratio()
            top_n, top_d = self._max_normal_ratio
            over = n * top_d > top_n * d
            if over:
                classes.add("overflow")
            is_max, value_classes = self._code_classes(code)
            if is_max and over:
                classes.add("saturation")
            classes |= value_classes
        if code == self._neg2_code:
            classes.add("int8_neg2")
        return {"code": code}, classes, record

    @cached_property
    def _max_normal_ratio(self) -> tuple[int, int]:
        return self.fmt.max_normal.numerator, self.fmt.max_normal.denominator

    @cached_property
    def _neg2_code(self) -> int | None:
        """The two's-complement code -2^(bits-1) (the ``int8_neg2`` class), None for other formats."""
        twos = self.fmt.kind == "int" and self.fmt.encoding == "twos_complement"
        return self.fmt.sign_mask if twos else None
