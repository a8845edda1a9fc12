"""The corner classes of a chunk of ``quantize`` vectors, and which classes a suite must reach.
From the fp32 bit fields of the inputs, the scale and the codes, as flag words (docs/numerics.md
section 3.3)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ....ref.scale import E8M0_MAX
from ...coverage.rounding import band_class, format_bands
from ..batch import bit, code_table


@lru_cache(maxsize=None)
def _code_words(element) -> np.ndarray:
    """Per code of ``element``, the word of the classes that code gives a block: ``max``,
    ``subnormal_output``, ``int8_neg2`` and ``negative_zero`` (a zero code with the sign)."""
    table = code_table(element)
    words = (table.max * bit("max") | table.subnormal * bit("subnormal_output") | table.neg2 * bit("int8_neg2")
             | (table.zero & table.negative) * bit("negative_zero"))
    return words.astype(np.int64)


class QuantizeClasses:
    """``_batch_flags`` and ``reachable_classes`` of a quantize suite (needs ``self.fmt`` and
    ``self.opts``)."""

    def _batch_flags(self, bits: np.ndarray, exponent, scale_nan, codes, subscales) -> np.ndarray:
        """The classes of :meth:`compute` but the rounding decisions, of N vectors from the fp32 bit
        fields of the inputs ((N, k) words; fp32 magnitude bits order like the values: above
        0x7F800000 NaN, equal Inf, below 2^23 zero or subnormal), their scale exponents, NaN-scale
        mask and codes (each code's classes one word of :func:`_code_words`, ORed per vector)."""
        fmt = self.fmt
        magnitude = bits.astype(np.uint32) & np.uint32(0x7FFFFFFF)
        finite = magnitude < np.uint32(0x7F800000)
        flags = np.bitwise_or.reduce(_code_words(fmt.element)[codes], axis=1)
        flags[(magnitude > np.uint32(0x7F800000)).any(axis=1)] |= bit("nan")
        flags[(magnitude == np.uint32(0x7F800000)).any(axis=1)] |= bit("inf")
        largest_bits = magnitude.max(axis=1)
        flags[largest_bits == 0] |= bit("all_zero")
        flags[((magnitude < np.uint32(1 << 23)) & (magnitude != 0)).any(axis=1)] |= bit("subnormal_input")
        flags[(bits == 0x80000000).any(axis=1)] |= bit("negative_zero")
        flags[scale_nan] |= bit("scale_nan")
        if fmt.scale.name == "e8m0":
            flags[~scale_nan & (exponent == self.opts.scale_min)] |= bit("scale_min")
            flags[~scale_nan & (exponent == E8M0_MAX)] |= bit("scale_max")
            if fmt.element.kind == "float":
                # the largest finite magnitude
                largest = np.where(finite, magnitude, 0).max(axis=1).astype(np.int64)
                top_field, top_fraction = largest >> 23, largest & 0x7FFFFF
                subnormal_log2 = np.frexp(np.maximum(top_fraction, 1).astype(np.float64))[1] - 1 - 149
                log2 = np.where(top_field > 0, top_field - 127, subnormal_log2)
                wanted = log2 - fmt.element.emax
                clamped = (largest > 0) & ((wanted < self.opts.scale_min) | (wanted > E8M0_MAX))
                flags[~scale_nan & clamped] |= bit("scale_clamp")
        return flags

    def reachable_classes(self) -> frozenset[str]:
        """The classes every quantize catalogue must hit (docs/numerics.md section 3.3): ``negative_zero`` and
        the rounding decisions of the elements: every case and both near-ties; ``subnormal_near_tie``
        where the element has subnormals; ``increment`` and ``carry`` except under rtz;
        ``zero_result_sign`` except under rdn (a negative element rounds away from zero);
        ``saturation`` under the floor rule (the block maximum may lie above max_normal x 2^E; a
        shared-exponent element may round to 2^m) and for NVFP4 (its UE4M3 scale may round below
        amax / 6 / s_t).
        NVFP4 with ``nvfp4_arith='fp32_steps'`` and an amax tensor scale rounds fp32(x * factor),
        whose factor fp32(2^-j / 448) is inexact, and with ``'fp32_reciprocal'`` and an amax global
        scale gs the fp32 quotient x / fp32(scale / gs) (an inexact step), so the ties and near-ties
        are met only by chance: not required there. Per band (:func:`...coverage.rounding.format_bands`): both near-ties in the
        normal range, the zero band and every subnormal band of the element.
        """
        reachable = {"negative_zero", "exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom",
                     "near_tie_below", "truncate", "increment", "carry", "zero_result_sign"}
        element, opts = self.fmt.element, self.opts
        if element.kind == "float" and element.subnormals:
            reachable.add("subnormal_near_tie")
        reachable |= {band_class(kind, band) for band in format_bands(element) for kind in ("top", "bottom")}
        if opts.rounding == "rtz":
            reachable -= {"increment", "carry"}
        if opts.rounding == "rdn":
            reachable.discard("zero_result_sign")
        if opts.scale_rule == "floor" or self.fmt.scale.name != "e8m0":
            reachable.add("saturation")
        if (self.fmt.scale.name != "e8m0" and opts.nvfp4_arith in ("fp32_steps", "fp32_reciprocal")
                and opts.nvfp4_tensor_scale == "amax"):
            reachable -= {"exact", "tie", "near_tie_top", "near_tie_bottom", "near_tie_below", "subnormal_near_tie"}
            reachable = {name for name in reachable if not name.startswith(("near_tie_top_", "near_tie_bottom_"))}
        return frozenset(reachable)
