"""The anchor="fixed" route of fused steps: products on the fixed grid 2^(XA + XB - F), C aligned exactly.

Two ways (docs/numerics.md section 4.1; bounds in :mod:`mxsim.fast.fused`): step sums P as wide
integers and V = C + P * 2^g formed exactly in int64 limbs (:meth:`FixedAnchorRoute._fixed_step`),
or, in the usual case, P * 2^g as an exact float64 with C added by TwoSum and rounded to odd
(:class:`_FloatLanes`), the integer step taking the lanes it leaves (bypassed C, specials,
results from 2^127).

A mixin of :class:`mxsim.fast.fused_kernel.FusedKernel`: its methods read the kernel's ``acc``,
``layout``, element and scale tables and call its per-product and per-chunk methods
(``_per_product``, ``_pair_index``, ``_terms``, ``_scales``, ``_specials``, ``_pass_c``).
"""

from __future__ import annotations

import numpy as np

from ..options import Accumulator
from ..ref.round import CUT_ROUNDING
from .dot_tables import FLOAT_CUTS
from .fused_tables import _grid_integers, _sum
from .fused_wide import LIMB, WIDE_BITS, _LOW, _C, _bit_length, _combine, _narrow, _normalize, _shift_left
from .output import FINITE, FLOAT32_ROUNDINGS, fp32_round, round_output
from .round import round_shifted


class _FloatLanes:
    """The float64 steps of a tile of anchor="fixed" (:meth:`FusedKernel._float_fixed_tables`):
    per step (arrays of the rows, contiguous) P * 2^g as an exact float64, the bound below which a
    nonzero C is not bypassed, the lanes the integer step must take whatever C is (specials), and
    those it takes when C is zero (a bypassed zero C)."""

    def __init__(self, sums, grid, specials, base: int, acc: Accumulator):
        self.rounding = acc.output_rounding
        self.products = np.ascontiguousarray((sums * np.ldexp(1.0, (grid + base).astype(np.int32)) + 0.0).T)  # -0 -> +0
        if acc.bypass is None:
            self.bound = np.full(self.products.shape, 2.0**128)  # every finite C
        else:  # bypassed iff max(floor(log2 |C|), -126) > g + 23 + bypass: |C| >= 2^(g + 24 + bypass),
            # or every nonzero C (subnormals included) when that is 2^-126 or less
            least = grid + 24 + acc.bypass
            self.bound = np.ldexp(1.0, np.where(least > -126, least, -149).astype(np.int32)).T.copy()
        # a zero product sum passes a zero C (its sign kept) here; a nonzero C is C + 0 = C either way
        self.pass_zero_c = np.broadcast_to(
            acc.zero_sum_passes_c(acc.effective_c_zero_exponent - 23 - grid), grid.shape
        ).T.copy()
        self.special = (specials != FINITE).T
        zero_bypass = acc.bypass is not None and acc.effective_c_zero_exponent - 23 - grid > acc.bypass
        self.zero_bypass = np.broadcast_to(zero_bypass, grid.shape).T
        self.check = (self.special | self.zero_bypass).any(axis=1)

    def step(self, s: int, previous: np.ndarray):
        """(D float32, fast): D = C + P * 2^g rounded once, right wherever ``fast``. The float sum
        s and its exact error e (TwoSum) give V = s + e; s rounded to odd at 53 bits (one ulp
        toward e when e != 0 and s is even) keeps every rounding decision of fp32."""
        with np.errstate(invalid="ignore"):  # a signalling NaN C (fp32 0x7F800001) signals in the cast
            c = previous.astype(np.float64)
        p = self.products[s]
        total = p + c
        with np.errstate(invalid="ignore"):  # Inf and NaN C: their lanes are not fast
            back = total - p
            error = (p - (total - back)) + (c - back)
        inexact = error != 0
        if inexact.any():
            bits = total.view(np.int64)
            toward = np.where((error > 0) == (total > 0), 1, -1)
            bits += np.where(inexact & ((bits & 1) == 0), toward, 0)
        passes = self.pass_zero_c[s]
        if passes.any():  # D = C where the product sum is exactly zero (C + 0 would turn -0 into +0)
            total = np.where((p == 0) & passes, c, total)
        fast = (np.abs(c) < self.bound[s]) & (np.abs(total) < 2.0**127)
        if self.check[s]:
            fast &= ~(self.special[s] | (self.zero_bypass[s] & (c == 0)))
        return fp32_round(total, self.rounding), fast


class FixedAnchorRoute:
    """anchor="fixed": the float64 tables and steps where they apply (:meth:`_float_fixed_tables`,
    :meth:`_float_fixed_tile`), else the products cut to the grid (:meth:`_fixed_fields`), their
    step sums (:meth:`_fixed_terms`) and the integer step (:meth:`_fixed_step`)."""

    def _float_fixed_tables(self) -> tuple[np.ndarray, np.ndarray, int] | None:
        """(qa, qb, base) of the float64 steps of anchor="fixed", or None where they do not apply.

        A product on the grid 2^(XA + XB - F) is qa * qb * 2^base, with q = +-Ma * 2^(E - Emin)
        per code (float64; +0 for zeros, Inf and NaN) and base = Emin_a + Emin_b - fa - fb + F:
        no product is cut when base >= 0, and a step's sum of qa * qb is exact in float64 while
        bits(qa) + bits(qb) + bits(step) <= 53, so P * 2^g is an exact float64 (:class:`_FloatLanes`
        adds C to it exactly and rounds once; an fp32 output without ftz). The lanes it leaves to
        the integer step need P below 2^62 there (bits(qa) + bits(qb) + bits(step) + base <= 61)."""
        acc, layout = self.acc, self.layout
        if (self.route != "fixed" or acc.step_terms != "product" or acc.output != "fp32" or acc.ftz
                or acc.zero_sign != "keep" or acc.output_rounding not in FLOAT32_ROUNDINGS or self.fmt_a.subblocks
                or self.fmt_b.subblocks or not self.narrow_sums):
            return None
        (qa, emin_a, bits_a), (qb, emin_b, bits_b) = _grid_integers(self.ea), _grid_integers(self.eb)
        base = emin_a + emin_b - self.ea.frac_bits - self.eb.frac_bits + acc.frac_bits
        step_bits = (layout.step - 1).bit_length()
        p_bits = bits_a + bits_b + step_bits + base
        if base < 0 or bits_a + bits_b + step_bits > 53 or p_bits > 61:
            return None
        return qa, qb, base

    def _fixed_fields(self, ca, cb, tau):
        """The product cut to the grid 2^(XA + XB - F) by ``shift_rounding``, signed: (q,) int64
        when step sums fit in 62 bits (``narrow_sums``), else (high, low) int64 with q = high *
        2^LIMB + low (low not normalized: it carries the sign too)."""
        acc, ea, eb = self.acc, self.ea, self.eb
        magnitude = np.take(ea.significand, ca) * np.take(eb.significand, cb)
        shift = np.take(ea.exponent, ca) + np.take(eb.exponent, cb) - tau
        shift += acc.frac_bits - ea.frac_bits - eb.frac_bits
        negative = np.take(ea.negative, ca) ^ np.take(eb.negative, cb)
        rounding = CUT_ROUNDING[acc.shift_rounding]
        magnitude = np.where(shift < 0, round_shifted(magnitude, -shift, rounding, negative), magnitude)
        if self.narrow_sums:
            q = magnitude << np.maximum(shift, 0)
            return (np.where(negative, -q, q),)
        high, low = _shift_left(np.zeros_like(magnitude), magnitude, np.maximum(shift, 0))
        return np.where(negative, -high, high), np.where(negative, -low, low)

    def _fixed_terms(self, ca, cb, sub_a, sub_b, scales_a, scales_b):
        """(P high, P low, grid g) (rows, n_steps) int64 and specials of anchor="fixed": each
        step's terms cut to the grid 2^g = 2^(XA + XB - F), summed exactly as wide integers.
        Product terms are cut from their integer significands (tables of every code pair); block
        terms from their exact float64 values (every cut term is an integer below 2^53)."""
        layout = self.layout.tile(ca.shape[1])
        if self.acc.step_terms == "block":
            value, exponent, scale_nan = self._terms(ca, cb, sub_a, sub_b, scales_a, scales_b, self._pair_index(ca, cb))
            cut = FLOAT_CUTS[self.acc.shift_rounding]
            q = cut(value * np.ldexp(1.0, self.acc.frac_bits - exponent)[:, :, None]).astype(np.int64)
            sums = [_sum(q.reshape(ca.shape[0], layout.n_steps, layout.terms_per_step), axis=2)]
        else:
            products = self._per_product(self._fixed_fields, ca, cb, sub_a, sub_b, self._pair_index(ca, cb))
            sums = [layout.steps_of(q, 0, _sum) for q in products]
            _, exponent, scale_nan = self._scales(scales_a, scales_b)
        high, low = _normalize(*sums) if len(sums) == 2 else (sums[0] >> LIMB, sums[0] & _LOW)
        grid = layout.per_step(exponent.astype(np.int64), 0, np.max) - self.acc.frac_bits
        return high, low, grid, self._specials(ca, cb, scale_nan)

    def _float_fixed_tile(self, arrays, previous, refer):
        """(the last D as float32, each step's codes) of a tile by the float64 steps of
        anchor="fixed" (see :meth:`_float_fixed_tables`); the integer step takes the lanes they
        leave. D travels as float32 between steps."""
        acc = self.acc
        qa, qb, base = self.grid_integers
        ca, cb, _, _, scales_a, scales_b = arrays
        layout = self.layout.tile(ca.shape[1])
        products = np.take(qa, ca) * np.take(qb, cb)
        sums = layout.steps_of(products, 0.0, _sum)  # exact integers: P / 2^base
        _, exponent, scale_nan = self._scales(scales_a, scales_b)
        grid = layout.per_step(exponent.astype(np.int64), 0, np.max) - acc.frac_bits
        specials = self._specials(ca, cb, scale_nan)
        lanes = _FloatLanes(sums, grid, specials, base, acc)
        codes = []
        for s in range(grid.shape[1]):
            rounded, fast = lanes.step(s, previous)
            if not fast.all():
                odd = np.flatnonzero(~fast)
                c = _C.from_words(previous.view(np.uint32)[odd].astype(np.int64), acc)
                q = (sums[odd, s] * 2.0**base).astype(np.int64)
                code, misfit = self._fixed_step(c, q >> LIMB, q & _LOW, grid[odd, s], specials[odd, s])
                rounded[odd] = code.view(np.float32)
                refer[odd] |= misfit
            codes.append(rounded.view(np.uint32))
            previous = rounded
        return previous, codes

    def _fixed_step(self, c: _C, high, low, grid, specials):
        """One step of anchor="fixed": V = C + P * 2^g exactly (or D = C under bypass)."""
        acc = self.acc
        negative, magnitude, exponent, fits = self._fixed_sum(c, high, low, grid)
        special = _combine(specials, c.special)
        keep_c = np.zeros(grid.shape, dtype=bool)
        if acc.bypass is not None:
            keep_c |= (c.special == FINITE) & (c.anchor - 23 - grid > acc.bypass)
        if acc.zero_product_sum != "add":  # D = C where the product sum is exactly zero (and C outside the window)
            keep_c |= (high == 0) & (low == 0) & acc.zero_sum_passes_c(c.anchor - 23 - grid)
        if keep_c.any():
            negative = np.where(keep_c, c.negative, negative)
            magnitude = np.where(keep_c, c.significand, magnitude)
            exponent = np.where(keep_c, c.exponent, exponent)
            fits |= keep_c
        return round_output(negative, magnitude, exponent, special, acc), ~fits & (special == FINITE)

    @staticmethod
    def _fixed_sum(c: _C, high, low, grid):
        """V = C + P * 2^g as (negative, magnitude < 2^62, exponent, fits). When every lane has
        |P| < 2^60 and C zero or at most 36 bits above the grid (the usual case), V is exact in
        int64 on the grid; else it is formed with wide integers on the grid 2^min(g, expC), and
        lanes that exceed them (``fits`` False) are left to the reference."""
        shift = c.exponent - grid
        c_zero = c.significand == 0
        if ((high >> 20 == 0) | (high >> 20 == -1)).all() and ((shift >= 0) & (shift <= 36) | c_zero).all():
            v = (high << LIMB) + low + (c.signed() << np.where(c_zero, 0, shift))
            return v < 0, np.abs(v), grid, np.ones(v.shape, dtype=bool)
        p_zero = (high == 0) & (low == 0)
        base = np.where(c_zero, grid, np.where(p_zero, c.exponent, np.minimum(grid, c.exponent)))
        p_shift, c_shift = grid - base, c.exponent - base
        fits = (p_zero | ((p_shift <= 2 * LIMB) & (_bit_length(high) + p_shift < 60))) & (
            c_zero | (c_shift <= WIDE_BITS - 24)
        )
        p_shift = np.where(fits & ~p_zero, p_shift, 0)
        c_shift = np.where(fits & ~c_zero, c_shift, 0)
        v_high, v_low = _shift_left(high, low, p_shift)
        c_high, c_low = _shift_left(np.zeros_like(high), c.significand, c_shift)
        c_high, c_low = np.where(c.negative, -c_high, c_high), np.where(c.negative, -c_low, c_low)
        v_high, v_low = _normalize(v_high + c_high, v_low + c_low)
        return (*_narrow(v_high, v_low, base), fits)
