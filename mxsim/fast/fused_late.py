"""The late-join route of fused steps (CDNA3): partial sums of the products first, C joins after them.

Steps 1 and 2 of :func:`mxsim.ref.fused._late_join` (each partial sum's anchor, the products cut
to it, the partial sums cut to the largest) do not depend on C and run for every step of a tile
at once; step 3 (:meth:`LateJoinRoute._late_step`) adds C per step. Exact in float64 under
:meth:`LateJoinRoute._late_bound` (docs/numerics.md section 4.1).

A mixin of :class:`mxsim.fast.fused_kernel.FusedKernel`: its methods read the kernel's ``acc``,
``layout``, element and scale tables and call its per-product and per-chunk methods
(``_per_product``, ``_pair_index``, ``_terms``, ``_scales``, ``_specials``, ``_pass_c``).
"""

from __future__ import annotations

import functools

import numpy as np

from .dot_tables import FLOAT_CUTS
from .fused_tables import COUNTS, FLOAT_EXACT, NO_ANCHOR, _counts
from .fused_wide import _C, _combine
from .output import round_output


class LateJoinRoute:
    """``sum_frac_bits`` set (C joins late): the bound (:meth:`_late_bound`), the product sums of
    every step (:meth:`_late_terms`) and one step with C (:meth:`_late_step`)."""

    def _late_bound(self, ratio: float) -> bool:
        """Whether the late-join steps are exact in float64: each partial sum of at most
        ceil(step / n) products below ratio * 2^F units, the product sum S below n times that,
        and the total on the grid 2^(E' - G), G = max(sum_frac_bits, c_frac_bits), below
        S * 2^(G - F) + 2^(G + 1) (C below 2^(e_C + 1) <= 2^(E' + 1)); all under 2^53."""
        acc, n = self.acc, self.acc.partial_sums
        half = -(-self.layout.step // n) * ratio * 2.0**acc.frac_bits
        widest = max(acc.sum_frac_bits, acc.c_frac_bits)
        return n * half * 2.0 ** max(widest - acc.frac_bits, 0) + 2.0 ** (widest + 2) < FLOAT_EXACT

    def _late_terms(self, ca, cb, sub_a, sub_b, scales_a, scales_b):
        """(S, E, specials), each (rows, n_steps): the product sum S of every step in units of
        2^(E - F) and E (NO_ANCHOR when no product counts), by steps 1 and 2 of
        :func:`mxsim.ref.fused._late_join` (they do not depend on C). Exact in float64 (see
        :meth:`_late_bound`): the cuts are np.trunc/np.rint/np.floor of exact values."""
        n = self.acc.partial_sums
        layout = self.layout.tile(ca.shape[1])
        rows, step = ca.shape[0], layout.step
        index = self._pair_index(ca, cb)
        value, exponent, scale_nan = self._terms(ca, cb, sub_a, sub_b, scales_a, scales_b, index)
        (anchor,) = self._per_product(self._anchor_fields, ca, cb, sub_a, sub_b, index)
        extra = (-step) % n  # deal the step's products into n interleaved partial sums
        if layout.padded_blocks != ca.shape[1] or extra:
            return self._late_terms_padded(value, anchor, exponent, scale_nan, ca, cb, layout)
        # (rows, n_steps, step): partial sum h holds the products h, h + n, ... of the step (strided views)
        values = value.reshape(rows, layout.n_steps, step)
        anchors = anchor.reshape(rows, layout.n_steps, step)
        scale_exponent = layout.per_step(exponent.astype(np.int64), 0, np.max)
        e_h, has = [], []
        for h in range(n):
            largest = anchors[:, :, h::n].max(axis=2)  # in the table's small type
            has.append(_counts(largest))
            e_h.append(np.where(has[-1], largest.astype(np.int64) + scale_exponent, NO_ANCHOR))
        return (*self._late_sums(values, e_h, has), self._specials(ca, cb, scale_nan))

    def _late_terms_padded(self, value, anchor, exponent, scale_nan, ca, cb, layout):
        """:meth:`_late_terms` where steps are padded (a partial last step, or a step that is not
        a multiple of ``partial_sums``): per-product anchors, padded with non-counting zeros."""
        n, rows, step = self.acc.partial_sums, ca.shape[0], layout.step
        anchors = np.where(_counts(anchor), anchor.astype(np.int64) + exponent[:, :, None], NO_ANCHOR)
        values = layout.pad_blocks(value, 0.0).reshape(rows, layout.n_steps, step)
        anchors = layout.pad_blocks(anchors, NO_ANCHOR).reshape(rows, layout.n_steps, step)
        extra = (-step) % n
        if extra:
            values = np.pad(values, ((0, 0), (0, 0), (0, extra)))
            anchors = np.pad(anchors, ((0, 0), (0, 0), (0, extra)), constant_values=NO_ANCHOR)
        e_h = [anchors[:, :, h::n].max(axis=2) for h in range(n)]
        return (*self._late_sums(values, e_h, [e > COUNTS for e in e_h]), self._specials(ca, cb, scale_nan))

    def _late_sums(self, values, e_h, has):
        """(S, E) from the products (rows, n_steps, step; partial sum h holds products h, h + n,
        ...) and each partial sum's anchor e_h and ``has`` (some product counts; lists of n arrays
        (rows, n_steps)): each product cut to 2^(e_h - F) by ``shift_rounding`` (in place), each
        partial sum to 2^(E - F) by ``sum_rounding``, added. Strided views per partial sum: NumPy
        is several times faster on them than on a (..., m, n) array with a short last axis."""
        acc, n = self.acc, self.acc.partial_sums
        sums = []
        for h in range(n):
            part = values[:, :, h::n]
            unit = np.ldexp(1.0, np.minimum(np.maximum(acc.frac_bits - e_h[h], -1000), 1000).astype(np.int32))
            np.multiply(part, unit[:, :, None], out=part)
            FLOAT_CUTS[acc.shift_rounding](part, out=part)
            sums.append(np.einsum("rsi->rs", part))  # units 2^(e_h - F), exact
        e = functools.reduce(np.maximum, e_h)
        total = np.zeros(e.shape)
        for q, e_part, counts in zip(sums, e_h, has):
            regrid = np.ldexp(q, np.maximum(np.where(counts, e_part - e, 0), -1000).astype(np.int32))
            total += np.where(counts, FLOAT_CUTS[acc.sum_rounding](regrid), 0.0)  # units 2^(E - F)
        return total, np.where(functools.reduce(np.logical_or, has), e, NO_ANCHOR)

    def _late_step(self, c: _C, total, e, specials):
        """One step of the late join (step 3 of :func:`mxsim.ref.fused._late_join`): E' =
        max(E, e_C); S cut to 2^(E' - sum_frac_bits), C to 2^(E' - c_frac_bits) (or dropped),
        added exactly on the grid 2^(E' - G) and rounded once. (E is NO_ANCHOR, below every e_C,
        where no product counts; S is 0 there.) The exponents are clipped to +-1000, where every
        cut is already decided: |S| and |C| are integers of at most 64 bits times those powers."""
        acc = self.acc
        joint = np.maximum(e, c.anchor)
        widest = max(acc.sum_frac_bits, acc.c_frac_bits)
        cut = FLOAT_CUTS[acc.sum_rounding]
        s_shift = np.maximum(e - joint, -1000) + (acc.sum_frac_bits - acc.frac_bits)
        s_cut = cut(np.ldexp(total, s_shift.astype(np.int32)))
        c_shift = np.minimum(np.maximum(c.exponent - joint + acc.c_frac_bits, -1000), 1000)
        c_cut = cut(np.ldexp(c.signed().astype(np.float64), c_shift.astype(np.int32)))
        if acc.c_drop is not None:
            c_cut[c.anchor < joint - acc.c_drop] = 0.0
        if widest != acc.sum_frac_bits:
            s_cut *= 2.0 ** (widest - acc.sum_frac_bits)
        if widest != acc.c_frac_bits:
            c_cut *= 2.0 ** (widest - acc.c_frac_bits)
        s_cut += c_cut
        special = _combine(specials, c.special)
        code = round_output(s_cut < 0, np.abs(s_cut).astype(np.int64), joint - widest, special, acc)
        return self._pass_c(code, c, total == 0, special), np.zeros(s_cut.shape, dtype=bool)
