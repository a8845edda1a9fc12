"""The expected outputs of ``quantize`` vectors, from the reference or for a chunk from the fast path.
The reference quantizer goes vector by vector, the NumPy fast path takes a whole chunk at once (NVFP4
vectors, each with its own tensor scale, in one call); either hands its outputs and its record of the
element roundings (:class:`...coverage.element_roundings.ElementRoundings`) to the one classifier of a
chunk (:meth:`QuantizeExpected._expected`: the classes of :mod:`.classes` and the rounding decisions)."""

from __future__ import annotations

import struct

import numpy as np

from ....fast.block import quantize_blocks_traced
from ....ref.block import quantize_block_roundings
from ....ref.scale import byte_exponent
from ...coverage.catalogue import class_names
from ...coverage.element_roundings import SLICE_ELEMENTS, ElementRoundings
from ...values import fp32_value
from ..batch import code_table, compute_each, pack_words, unpack_items


class QuantizeExpected:
    """``compute``, ``compute_many`` and ``compute_batch`` of a quantize suite (needs ``self.fmt``,
    ``self.opts`` and ``self._batch_flags`` (:class:`.classes.QuantizeClasses`))."""

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference quantizer
        (:func:`mxsim.ref.block.quantize_block_roundings`) vector by vector, then the classes of all
        of them at once from its blocks and its record (:meth:`_expected`)."""
        if not rows:
            return []
        fmt, k = self.fmt, self.fmt.block_size
        raws, blocks, roundings = [], [], []
        for inputs in rows:
            raw = inputs["x"].to_bytes(4 * k, "little")
            # the inputs as Python floats: fp32 -> binary64 is exact (NaNs stay NaN), and the reference
            # reads a float exactly (mxsim.ref.to_exact)
            tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
            block, record = quantize_block_roundings(struct.unpack(f"<{k}f", raw), fmt, self.opts,
                                                     tensor_scale=tensor_scale)
            raws.append(raw)
            blocks.append(block)
            roundings.append(record)
        bits = np.frombuffer(b"".join(raws), dtype="<u4").reshape(len(rows), k)
        codes = np.array([block.codes for block in blocks], dtype=np.int64)
        subscales = np.array([block.subscales for block in blocks], dtype=np.int64).reshape(len(rows), fmt.subblocks)
        out, flags = self._expected(bits, np.array([block.scale for block in blocks], dtype=np.int64), subscales,
                                    codes, ElementRoundings.from_reference(roundings, codes, k))
        names = {word: frozenset(class_names(word)) for word in set(flags)}  # few distinct words
        return [({name: column[i] for name, column in out.items()}, set(names[word])) for i, word in enumerate(flags)]

    def _expected(self, bits: np.ndarray, scales: np.ndarray, subscales: np.ndarray, codes: np.ndarray,
                  roundings: ElementRoundings) -> tuple[dict, list[int]]:
        """(outputs, flags words) of N vectors from either path: ``bits`` (N, k) fp32 input words,
        ``scales`` (N,) scale bytes, ``subscales`` (N, subblocks) and ``codes`` (N, k) (int64), and the
        path's record of the element roundings. Classes: :meth:`_batch_flags` (inputs, scale, codes)
        and the rounding decisions of the record."""
        fmt = self.fmt
        # int8_exponent has no NaN scale (its 0xFF is 2^-1)
        scale_nan = code_table(fmt.scale).nan[scales] & (self.opts.scale_encoding == "e8m0")
        exponent = byte_exponent(scales, self.opts.scale_encoding)
        out = {"scale": scales.tolist(), "codes": pack_words(codes, fmt.element.width)}
        if fmt.scale.name == "e8m0":
            out["scale_exp"] = np.where(scale_nan, -128, exponent).tolist()
        if fmt.subblocks:
            out["subscales"] = pack_words(subscales, fmt.subscale_bits)
        step = max(1, SLICE_ELEMENTS // fmt.block_size)  # blocks at a time: arrays that stay in cache
        flags = np.concatenate([self._batch_flags(bits[i:i + step], exponent[i:i + step], scale_nan[i:i + step],
                                                  codes[i:i + step], subscales[i:i + step])
                                for i in range(0, len(bits), step)])
        flags |= roundings.flags(fmt.element, self.opts.int8_allow_neg2)
        return out, flags.tolist()

    # expected values of many vectors at once (mxsim.golden.kinds.batch) ---------------------------
    def compute_batch(self, inputs: dict):
        """``compute`` of N vectors with the fast quantizer (:func:`mxsim.fast.block.quantize_blocks`
        on the float32 inputs): (outputs, flags), see :mod:`mxsim.golden.kinds.batch`. NVFP4 vectors,
        each with its own tensor scale, go in one call. A batch with an invalid vector (a tensor scale
        that is not positive and finite) goes vector by vector through ``compute``, which raises
        the reference's error."""
        try:
            return self._batch(inputs)
        except (ValueError, ZeroDivisionError, OverflowError):
            return compute_each(self, inputs)

    def _batch(self, inputs: dict):
        fmt = self.fmt
        bits = unpack_items(inputs["x"], 32, fmt.block_size).astype(np.uint32)
        tensor_scale = None
        if "tensor_scale" in inputs:  # one s_t per vector, all in one fast call (ValueError: not an fp32 s_t)
            tensor_scale = np.asarray(inputs["tensor_scale"], dtype=np.uint32).view(np.float32).astype(np.float64)
        scales, sub, codes, record = quantize_blocks_traced(bits.view(np.float32), fmt, self.opts, tensor_scale)
        codes = codes.astype(np.int64)
        subscales = np.zeros((len(bits), fmt.subblocks), dtype=np.int64) if sub is None else sub.astype(np.int64)
        return self._expected(bits, scales.astype(np.int64), subscales, codes, ElementRoundings.from_fast(record, codes))
