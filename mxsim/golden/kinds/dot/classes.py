"""The corner classes of ``dot`` vectors, and which classes a suite must reach.
A chunk at once, as flag words, from the block Dots' record (:class:`mxsim.fast.dot.BlockDots`,
filled by the fast path or by the reference: :mod:`.reference_record`) (docs/numerics.md section 3.3)."""

from __future__ import annotations

import numpy as np

from ....fast.dot import FINITE, BlockDots
from ...coverage.accumulator import block_lows
from ...coverage.rounding_record import OutputCodes, OutputRoundings
from ...stimulus import dot as dot_stimulus
from ..batch import add_operand_classes, bit, code_table, dyadic_differ


class DotClasses:
    """``reachable_classes`` and ``_batch_flags`` of a dot suite (needs ``self.fa``, ``self.fb``,
    ``self.acc`` and ``self.out_format``)."""

    def reachable_classes(self) -> frozenset[str]:
        """The classes this suite's configuration reaches at least MIN_CLASS_VECTORS times: those
        its structured stimulus builds (:func:`.dot_stimulus.reachable_classes`)."""
        return dot_stimulus.reachable_classes(self)

    def _batch_flags(self, sides, r: BlockDots, registers=None) -> np.ndarray:
        """The classes of block Dots as flag words, from the record ``r`` (either path's: the fast
        path's arrays or :func:`.reference_record.reference_block_dots`) and the operands ``sides``
        ((scales, sub-scales, codes) of a and b): NaN/Inf/zero/subnormal elements and results,
        overflow, cancellation, mixed signs, operand edges, the output rounding's classes; for an
        aligned accumulator ``registers`` ((accumulator, lsb) of the unbounded register, of the exact
        one: :data:`.reference_record.Registers`) give ``acc_overflow`` (the width lost bits) and
        ``shift_inexact`` (the frac_bits grid cut bits) (docs/numerics.md section 3.3)."""
        (scales_a, _, ca), (scales_b, _, cb) = sides
        ta, tb = code_table(self.fa.element), code_table(self.fb.element)
        value = OutputCodes.of(r.codes, self.out_format)
        exact_finite = r.special == FINITE
        flags = np.zeros(len(r.codes), dtype=np.int64)

        def add(name: str, mask) -> None:
            flags[mask] |= bit(name)

        finite_products = ta.nonzero[ca] & tb.nonzero[cb]
        any_finite_product = finite_products.any(axis=1)
        add("nan", ta.nan[ca].any(axis=1) | tb.nan[cb].any(axis=1) | value.nan)
        add("inf", ta.inf[ca].any(axis=1) | tb.inf[cb].any(axis=1) | value.inf)
        add("all_zero", ta.zero[ca].all(axis=1) & tb.zero[cb].all(axis=1))
        add("zero", value.zero & ~value.negative)
        add("negative_zero", value.zero & value.negative)
        add("cancellation", value.zero & any_finite_product & exact_finite & (r.significand == 0))
        negative = ta.negative[ca] ^ tb.negative[cb]
        add("mixed_signs", (finite_products & negative).any(axis=1) & (finite_products & ~negative).any(axis=1))
        add_operand_classes(add, ((self.fa, scales_a, ta, ca), (self.fb, scales_b, tb, cb)))
        add("subnormal_product", (finite_products & (ta.subnormal[ca] | tb.subnormal[cb])).any(axis=1))
        add("subnormal_output", value.subnormal)
        add("overflow", value.inf & exact_finite)
        add("inf_a", ta.inf[ca].any(axis=1))
        add("inf_b", tb.inf[cb].any(axis=1))
        flags |= rounding_flags(self, scales_a, scales_b, r)
        if self.acc.mode == "aligned":
            (unbounded, unbounded_lsb), (exact, exact_lsb) = registers
            add("acc_overflow", any_finite_product & (unbounded != r.accumulator))
            add("shift_inexact", any_finite_product & dyadic_differ(unbounded, unbounded_lsb, exact, exact_lsb))
        return flags


def rounding_flags(suite, scales_a, scales_b, r: BlockDots) -> np.ndarray:
    """The flags of :func:`.accumulator_classes.block_rounding_classes` of every block of a batch,
    all at once (:class:`..coverage.rounding_record.OutputRoundings` of the fast path's values)."""
    tensor = any(fmt.tensor_scale is not None for fmt in (suite.fa, suite.fb)) and suite.tensor_scales
    return OutputRoundings.from_block_dots(r, block_lows(r.lsb_exponent, scales_a, scales_b, suite.fa, suite.fb, tensor),
                                           FINITE).flags(suite.acc)

