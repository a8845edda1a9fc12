"""The expected outputs of ``quantize`` vectors, from the reference or for a chunk from the fast path.
The reference quantizer goes vector by vector (with the classes of the inputs, the scale and the
codes); the NumPy fast path takes a whole chunk at once (NVFP4 vectors, each with its own tensor
scale, in one call); the rounding-decision classes of either come from :mod:`.decisions`."""

from __future__ import annotations

import struct

import numpy as np

from ....fast.block import quantize_blocks
from ....ref.block import quantize_block
from ....ref.scale import E8M0_MAX, byte_exponent
from ...coverage.catalogue import class_names
from ...values import FP32_INF_BITS, code_sets, decode, fp32_value, max_codes, pack_word, subnormal_codes
from ..batch import code_table, compute_each, pack_items, unpack_items


def _fp32_floor_log2(magnitude_bits: int) -> int:
    """floor(log2 x) of a positive finite fp32 magnitude given by its bits."""
    field = magnitude_bits >> 23
    return field - 127 if field else magnitude_bits.bit_length() - 1 - 149


class QuantizeExpected:
    """``compute``, ``compute_many`` and ``compute_batch`` of a quantize suite (needs ``self.fmt``,
    ``self.opts``, ``self._batch_flags`` (:class:`.classes.QuantizeClasses`) and
    ``self._decision_flags`` (:class:`.decisions.QuantizeDecisions`))."""

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference quantizer vector by vector, then
        the rounding-decision classes of all of them at once (:meth:`_decision_flags` on the
        stacked blocks: the same operations per element as for one vector)."""
        done = [self._reference_vector(inputs) for inputs in rows]
        if not done:
            return []
        fmt = self.fmt
        tensor = "tensor_scale" in rows[0]
        flags = self._decision_flags(
            np.array([words for _, _, (words, _, _, _, _) in done], dtype=np.uint32),
            np.array([block.scale for _, _, (_, block, _, _, _) in done]),
            np.array([0 if exponent is None else exponent for _, _, (_, _, exponent, _, _) in done]),
            np.array([scale_nan for _, _, (_, _, _, scale_nan, _) in done]),
            np.array([block.codes for _, _, (_, block, _, _, _) in done], dtype=np.int64),
            np.array([block.subscales if fmt.subblocks else () for _, _, (_, block, _, _, _) in done],
                     dtype=np.int64).reshape(len(done), fmt.subblocks),
            np.array([word for _, _, (_, _, _, _, word) in done]) if tensor else None,
        )
        return [(out, classes | set(class_names(int(word)))) for (out, classes, _), word in zip(done, flags.tolist())]

    def _reference_vector(self, inputs: dict):
        """(outputs, classes but the decision classes, (fp32 words, the reference's QuantizedBlock,
        the scale exponent or None, scale NaN, the tensor scale word or None)) of one vector."""
        k, fmt = self.fmt.block_size, self.fmt
        raw = inputs["x"].to_bytes(4 * k, "little")
        words = struct.unpack(f"<{k}I", raw)
        # the inputs as Python floats: fp32 -> binary64 is exact (NaNs stay NaN), and the reference
        # reads a float exactly (mxsim.ref.to_exact)
        xs = struct.unpack(f"<{k}f", raw)
        tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        block = quantize_block(xs, fmt, self.opts, tensor_scale=tensor_scale)
        out = {"scale": block.scale, "codes": pack_word(block.codes, fmt.element.width)}
        e8m0_scaled = fmt.scale.name == "e8m0"
        encoding = self.opts.scale_encoding
        # int8_exponent has no NaN scale (its 0xFF is 2^-1), so E = -128 is never ambiguous there
        scale_nan = encoding == "e8m0" and decode(block.scale, fmt.scale).is_nan
        exponent = byte_exponent(block.scale, encoding) if e8m0_scaled and not scale_nan else None
        if e8m0_scaled:
            out["scale_exp"] = -128 if scale_nan else exponent
        if fmt.subblocks:
            out["subscales"] = pack_word(block.subscales, fmt.subscale_bits)
        # input classes from the fp32 bit fields: magnitude bits above 0x7F800000 are NaN, equal
        # to it Inf, below 2^23 (exponent field 0) zero or subnormal
        magnitudes = [w & 0x7FFFFFFF for w in words]
        nonzero = [m for m in magnitudes if m]
        classes = set()
        if max(magnitudes) > FP32_INF_BITS:
            classes.add("nan")
        if FP32_INF_BITS in magnitudes:
            classes.add("inf")
        if not nonzero:
            classes.add("all_zero")
        elif min(nonzero) < 1 << 23:
            classes.add("subnormal_input")
        if scale_nan:
            classes.add("scale_nan")
        elif e8m0_scaled:
            if exponent == self.opts.scale_min:
                classes.add("scale_min")
            if exponent == E8M0_MAX:
                classes.add("scale_max")
            largest = max((m for m in magnitudes if m < FP32_INF_BITS), default=0)  # the bits order like the values
            low = self.opts.scale_min
            if largest and fmt.element.kind == "float" and not (low <= _fp32_floor_log2(largest) - fmt.element.emax <= E8M0_MAX):
                classes.add("scale_clamp")
        if not max_codes(fmt.element).isdisjoint(block.codes):
            classes.add("max")
        if not subnormal_codes(fmt.element).isdisjoint(block.codes):
            classes.add("subnormal_output")
        if fmt.element.kind == "int" and fmt.element.encoding == "twos_complement" and fmt.element.sign_mask in block.codes:
            classes.add("int8_neg2")
        if any(w == 0x80000000 for w in words) or not code_sets(fmt.element)["negative"].isdisjoint(
                set(block.codes) & code_sets(fmt.element)["zero"]):
            classes.add("negative_zero")
        return out, classes, (words, block, exponent, scale_nan, inputs.get("tensor_scale"))

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
        scales, sub, codes = quantize_blocks(bits.view(np.float32), fmt, self.opts, tensor_scale=tensor_scale)
        scales, codes = scales.astype(np.int64), codes.astype(np.int64)
        subscales = np.zeros((len(bits), fmt.subblocks), dtype=np.int64) if sub is None else sub.astype(np.int64)
        # int8_exponent has no NaN scale (its 0xFF is 2^-1)
        scale_nan = code_table(fmt.scale).nan[scales] & (self.opts.scale_encoding == "e8m0")
        exponent = byte_exponent(scales, self.opts.scale_encoding)
        out = {"scale": scales.tolist(), "codes": pack_items(codes, fmt.element.width)}
        if fmt.scale.name == "e8m0":
            out["scale_exp"] = np.where(scale_nan, -128, exponent).tolist()
        if fmt.subblocks:
            out["subscales"] = pack_items(subscales, fmt.subscale_bits)
        flags = self._batch_flags(bits, exponent, scale_nan, codes, subscales)
        tensor_words = np.asarray(inputs["tensor_scale"], dtype=np.int64) if "tensor_scale" in inputs else None
        flags |= self._decision_flags(bits, scales, exponent, scale_nan, codes, subscales, tensor_words)
        return out, flags.tolist()
