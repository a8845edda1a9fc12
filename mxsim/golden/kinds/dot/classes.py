"""The corner classes of ``dot`` vectors, and which classes a suite must reach.
Of one block Dot from the reference, of a chunk of them from the fast path's values (flag words)
(docs/numerics.md section 3.3)."""

from __future__ import annotations

import numpy as np

from ....fast.dot import FINITE, BlockDots
from ....ref import dot as ref_dot
from ...coverage.accumulator import block_lows, element_classes
from ...coverage.rounding_record import OutputRoundings
from ...stimulus import dot as dot_stimulus
from ...values import is_subnormal_code
from ..batch import FloatBits, add_operand_classes, bit, code_table, dyadic_differ


class DotClasses:
    """``reachable_classes``, ``_classes`` and ``_batch_flags`` of a dot suite (needs ``self.fa``,
    ``self.fb``, ``self.acc``, ``self.out_format``, ``self.unbounded_acc`` and ``self.exact_acc``
    (aligned accumulators) and ``self._block_dots``: :class:`.fast_batch.DotFastBatch`)."""

    def reachable_classes(self) -> frozenset[str]:
        """The classes this suite's configuration reaches at least MIN_CLASS_VECTORS times: those
        its structured stimulus builds (:func:`.dot_stimulus.reachable_classes`)."""
        return dot_stimulus.reachable_classes(self)

    def _classes(self, a, b, r) -> set:
        """The classes of one block Dot ``r`` but its output rounding's (:meth:`rounding_rows`)."""
        out = self.out_format
        prods = ref_dot.block_products(a.codes, a.subscales, self.fa, b.codes, b.subscales, self.fb)
        classes = element_classes(a, b, self.fa, self.fb, prods)
        finite_products = any(kind == "finite" and magnitude for _, magnitude, _, kind in prods)
        if r.value.is_nan:
            classes.add("nan")
        if r.value.is_inf:
            classes.add("inf")
        if r.value.is_zero:
            classes.add("negative_zero" if r.value.sign else "zero")
            if finite_products and r.exact.is_zero:
                classes.add("cancellation")
        if r.value.is_finite and is_subnormal_code(r.code, out):
            classes.add("subnormal_output")
        if r.value.is_inf and r.exact.is_finite:
            classes.add("overflow")
        if self.acc.mode == "aligned" and finite_products:
            unbounded, unbounded_lsb, _ = ref_dot.block_register(prods, self.fa, self.fb, self.unbounded_acc)
            if unbounded != r.accumulator:
                classes.add("acc_overflow")
            exact, exact_lsb, _ = ref_dot.block_register(prods, self.fa, self.fb, self.exact_acc)
            low = min(unbounded_lsb, exact_lsb)  # the two values on a common grid 2^low
            if unbounded << (unbounded_lsb - low) != exact << (exact_lsb - low):
                classes.add("shift_inexact")
        return classes

    def _batch_flags(self, sides, groups, r: BlockDots) -> np.ndarray:
        """The classes of :meth:`_classes`, vector by vector, as flag words."""
        (scales_a, _, ca), (scales_b, _, cb) = sides
        ta, tb = code_table(self.fa.element), code_table(self.fb.element)
        value = FloatBits.of(r.codes, self.out_format)
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
            unbounded = self._block_dots(sides, groups, self.unbounded_acc)
            exact = self._block_dots(sides, groups, self.exact_acc)
            add("acc_overflow", any_finite_product & (unbounded.accumulator != r.accumulator))
            differ = dyadic_differ(unbounded.accumulator, unbounded.lsb_exponent, exact.accumulator, exact.lsb_exponent)
            add("shift_inexact", any_finite_product & differ)
        return flags


def rounding_flags(suite, scales_a, scales_b, r: BlockDots) -> np.ndarray:
    """The flags of :func:`.accumulator_classes.block_rounding_classes` of every block of a batch,
    all at once (:class:`..coverage.rounding_record.OutputRoundings` of the fast path's values)."""
    tensor = any(fmt.tensor_scale is not None for fmt in (suite.fa, suite.fb)) and suite.tensor_scales
    return OutputRoundings.from_block_dots(r, block_lows(r.lsb_exponent, scales_a, scales_b, suite.fa, suite.fb, tensor),
                                           FINITE).flags(suite.acc)

