"""The corner classes of a chunk of ``quantize`` vectors, and which classes a suite must reach.
From the fp32 bit fields of the inputs, the scale and the codes, as flag words (docs/numerics.md
section 3.3)."""

from __future__ import annotations

import numpy as np

from ....ref.scale import E8M0_MAX
from ...coverage.rounding import band_class, format_bands
from ..batch import bit, code_table


class QuantizeClasses:
    """``_batch_flags`` and ``reachable_classes`` of a quantize suite (needs ``self.fmt`` and
    ``self.opts``)."""

    def _batch_flags(self, bits: np.ndarray, exponent, scale_nan, codes, subscales) -> np.ndarray:
        """The classes of :meth:`compute`, from the fp32 bit fields of the inputs."""
        fmt = self.fmt
        magnitude = (bits & 0x7FFFFFFF).astype(np.int64)
        field, fraction = magnitude >> 23, magnitude & 0x7FFFFF
        flags = np.zeros(len(bits), dtype=np.int64)
        flags[((field == 0xFF) & (fraction != 0)).any(axis=1)] |= bit("nan")
        flags[((field == 0xFF) & (fraction == 0)).any(axis=1)] |= bit("inf")
        flags[(magnitude == 0).all(axis=1)] |= bit("all_zero")
        flags[((field == 0) & (fraction != 0)).any(axis=1)] |= bit("subnormal_input")
        flags[scale_nan] |= bit("scale_nan")
        if fmt.scale.name == "e8m0":
            flags[~scale_nan & (exponent == self.opts.scale_min)] |= bit("scale_min")
            flags[~scale_nan & (exponent == E8M0_MAX)] |= bit("scale_max")
            if fmt.element.kind == "float":
                # the largest finite magnitude (fp32 magnitude bits order like the values)
                largest = np.where(field < 0xFF, magnitude, 0).max(axis=1)
                top_field, top_fraction = largest >> 23, largest & 0x7FFFFF
                subnormal_log2 = np.frexp(np.maximum(top_fraction, 1).astype(np.float64))[1] - 1 - 149
                log2 = np.where(top_field > 0, top_field - 127, subnormal_log2)
                wanted = log2 - fmt.element.emax
                clamped = (largest > 0) & ((wanted < self.opts.scale_min) | (wanted > E8M0_MAX))
                flags[~scale_nan & clamped] |= bit("scale_clamp")
        table = code_table(fmt.element)
        flags[table.max[codes].any(axis=1)] |= bit("max")
        flags[table.subnormal[codes].any(axis=1)] |= bit("subnormal_output")
        flags[table.neg2[codes].any(axis=1)] |= bit("int8_neg2")
        negative_zero = (bits == 0x80000000).any(axis=1) | (table.zero[codes] & table.negative[codes]).any(axis=1)
        flags[negative_zero] |= bit("negative_zero")
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
        whose factor fp32(2^-j / 448) is inexact, so the ties and near-ties are met only by chance:
        not required there. Per band (:func:`...coverage.rounding.format_bands`): both near-ties in the
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
        if self.fmt.scale.name != "e8m0" and opts.nvfp4_arith == "fp32_steps" and opts.nvfp4_tensor_scale == "amax":
            reachable -= {"exact", "tie", "near_tie_top", "near_tie_bottom", "near_tie_below", "subnormal_near_tie"}
            reachable = {name for name in reachable if not name.startswith(("near_tie_top_", "near_tie_bottom_"))}
        return frozenset(reachable)
