"""The anchor="max" route of fused steps: terms and C cut to the grid of the largest anchor, summed in float64.

Per step and row, A = max(term anchors, e_C); each term times 2^(F - A) is an exact float64 that
``shift_rounding`` cuts to the grid, and the step sum is exact while the kernel's bound holds
(see :mod:`mxsim.fast.fused`, docs/numerics.md section 4.1).

A mixin of :class:`mxsim.fast.fused_kernel.FusedKernel`: its methods read the kernel's ``acc``,
``layout``, element and scale tables and call its per-product and per-chunk methods
(``_per_product``, ``_pair_index``, ``_terms``, ``_scales``, ``_specials``, ``_pass_c``).
"""

from __future__ import annotations

import numpy as np

from .dot_tables import FLOAT_CUTS
from .fused_wide import _C, _combine
from .output import round_output


class MaxAnchorRoute:
    """anchor="max": :meth:`_max_terms` (everything that does not depend on C, per tile) and
    :meth:`_max_step` (one step for every row)."""

    def _max_terms(self, ca, cb, sub_a, sub_b, scales_a, scales_b):
        """(values (rows, n_steps, terms_per_step) float64, anchors (rows, n_steps) int64,
        specials (rows, n_steps)) of anchor="max"."""
        layout = self.layout.tile(ca.shape[1])
        index = self._pair_index(ca, cb)
        value, exponent, scale_nan = self._terms(ca, cb, sub_a, sub_b, scales_a, scales_b, index)
        values = layout.pad_blocks(value, 0.0).reshape(ca.shape[0], layout.n_steps, layout.terms_per_step)
        anchors = self._anchors(ca, cb, sub_a, sub_b, exponent, index)
        return values, anchors, self._specials(ca, cb, scale_nan)

    def _max_step(self, c: _C, values, anchors, specials):
        """One step of anchor="max": S = the terms and C cut to the grid 2^(A - F), A =
        max(anchors, e_C), summed exactly in float64 (see the module docstring)."""
        acc = self.acc
        cut = FLOAT_CUTS[acc.shift_rounding]
        lsb = np.maximum(anchors, c.anchor).astype(np.int64) - acc.frac_bits
        # beyond +-1000 every term is 0 (no counting term) or C is far below the grid: the clip
        # changes no cut value and keeps the power of two finite
        unit = np.ldexp(1.0, np.minimum(np.maximum(-lsb, -1000), 1000).astype(np.int32))
        terms = values * unit[:, None]
        cut(terms, out=terms)
        total = terms @ self.ones
        products_zero = total == 0
        c_exponent = np.minimum(np.maximum(c.exponent - lsb, -1000), 1000).astype(np.int32)
        total += cut(np.ldexp(c.signed().astype(np.float64), c_exponent))
        special = _combine(specials, c.special)
        magnitude = np.abs(total).astype(np.int64)
        code = round_output(total < 0, magnitude, lsb, special, acc)
        return self._pass_c(code, c, products_zero, special), np.zeros(total.shape, dtype=bool)
