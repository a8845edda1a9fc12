"""The corner classes of ``encode`` vectors: each code's classes, and which classes a suite's
configuration can reach (docs/numerics.md section 3.3). The rounding-decision classes come from the
encoder's record (:mod:`...coverage.cast_roundings`, read by :mod:`.expected`)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ....ref.decode import finite_magnitudes
from ...coverage.reach import MIN_CLASS_VECTORS
from ...coverage.rounding import band_class, format_bands
from ...values import decode, is_subnormal_code
from ..batch import bit, code_table


class EncodeClasses:
    """The classes of an encode suite (needs ``self.fmt`` and ``self.rounding``)."""

    def _code_classes(self, code: int) -> tuple[bool, frozenset]:
        """(whether the code holds +-max_normal, its classes ``max``, ``subnormal_output``, ``zero`` /
        ``negative_zero``) of a code of a finite nonzero input, from the decoded value; kept per
        code (a code recurs)."""
        known = self._codes_seen.get(code)
        if known is None:
            y = decode(code, self.fmt)
            is_max = y.is_finite and y.magnitude == self.fmt.max_normal
            classes = {"max"} if is_max else set()
            if is_subnormal_code(code, self.fmt):
                classes.add("subnormal_output")
            if y.is_zero:
                classes.add("negative_zero" if y.sign else "zero")
            known = self._codes_seen[code] = (is_max, frozenset(classes))
        return known

    def _batch_flags(self, bits: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The classes of :meth:`.expected.EncodeExpected.compute_many` but the rounding decisions, of
        N vectors from their fp32 input words (uint32; magnitude bits above 0x7F800000 NaN, equal
        Inf, 0 zero, below 2^23 subnormal) and codes (int64): ``nan``, ``inf``, ``zero`` /
        ``negative_zero`` of the input; of a finite nonzero input ``subnormal_input``, ``overflow``
        (above the largest magnitude), the code's ``max`` (``saturation`` with ``overflow``),
        ``subnormal_output`` and ``zero`` / ``negative_zero``; ``int8_neg2`` of the code."""
        table = code_table(self.fmt)
        magnitude = bits & np.uint32(0x7FFFFFFF)
        negative = (bits >> np.uint32(31)).astype(bool)
        flags = np.zeros(len(bits), dtype=np.int64)

        def add(name, mask):
            np.bitwise_or(flags, bit(name), out=flags, where=mask)

        add("nan", magnitude > np.uint32(0x7F800000))
        add("inf", magnitude == np.uint32(0x7F800000))
        input_zero = magnitude == 0
        add("zero", input_zero & ~negative)
        add("negative_zero", input_zero & negative)
        rounded = ~input_zero & (magnitude < np.uint32(0x7F800000))
        add("subnormal_input", rounded & (magnitude < np.uint32(1 << 23)))
        over = rounded & (np.abs(bits.view(np.float32).astype(np.float64)) > float(self.fmt.max_normal))
        add("overflow", over)
        is_max = rounded & table.max[codes]
        add("max", is_max)
        add("saturation", is_max & over)
        add("subnormal_output", rounded & table.subnormal[codes])
        code_zero = rounded & table.zero[codes]
        add("zero", code_zero & ~table.negative[codes])
        add("negative_zero", code_zero & table.negative[codes])
        add("int8_neg2", table.neg2[codes])
        return flags

    @cached_property
    def _codes_seen(self) -> dict:
        return {}

    @cached_property
    def _min_normal(self) -> float:
        """The smallest normal magnitude where the format has subnormals, else 0 (no subnormal band)."""
        return float(self.fmt.min_normal) if self.fmt.kind == "float" and self.fmt.subnormals else 0.0

    def reachable_classes(self) -> frozenset[str]:
        """The rounding-decision classes of fp32 inputs rounded to the element (docs/numerics.md section 3.3):
        every case and both near-ties (fp32 has at least two bits more than any enumerable
        element); ``subnormal_near_tie`` where the element has subnormals and a mantissa bit; ``increment`` and
        ``carry`` except under rtz; ``zero_result_sign`` except under rdn (a negative value rounds
        away from zero, to the smallest subnormal). A format with fewer than MIN_CLASS_VECTORS / 2
        intervals has too few distinct inputs of the one-per-interval cases: those are not required."""
        reachable = {"exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
                     "truncate", "increment", "carry", "zero_result_sign"}
        if self._min_normal and self.fmt.mantissa_bits >= 1:
            # without mantissa bits (binary8p1) the band below the smallest normal is the one interval
            # [0, 2^emin], whose near-ties give 6 distinct inputs (top, bottom, below; both signs)
            reachable.add("subnormal_near_tie")
        for band in format_bands(self.fmt):
            intervals = 1 if band == "zero_band" else 1 << (int(band[3:]) - 1) if band != "normal" else None
            if intervals is None or 2 * intervals >= MIN_CLASS_VECTORS:
                reachable |= {band_class("top", band), band_class("bottom", band)}
        if self.rounding == "rtz":
            reachable -= {"increment", "carry"}
        if self.rounding == "rdn":
            reachable.discard("zero_result_sign")
        if 2 * (len(finite_magnitudes(self.fmt)) - 1) < MIN_CLASS_VECTORS:
            # too few values for MIN_CLASS_VECTORS distinct inputs of a case that one interval reaches
            # once per sign (int3_sm: 3 intervals)
            reachable -= {"exact", "tie", "near_tie_top", "near_tie_bottom", "near_tie_below", "subnormal_near_tie"}
            reachable = {name for name in reachable if not name.startswith(("near_tie_top_", "near_tie_bottom_"))}
        return frozenset(reachable)
