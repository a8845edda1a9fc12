"""Per-block routes of the vectorized dot product: exact, aligned and fp32_sequential, each on a chunk of block pairs.

:class:`_DotKernel` chooses, per format pair and accumulator (docs/numerics.md section 4), how its
mode runs (see :mod:`mxsim.fast.dot` for the routes and their bounds) and maps a chunk of block
pairs (codes, sub-scales) to (register, LSB exponent, anchor, special) per block, scales not yet
applied; what no route can hold goes to the reference block by block.
"""

from __future__ import annotations

import numpy as np

from ..options import Accumulator
from ..ref import dot as ref_dot
from ..ref.round import CUT_ROUNDING
from ..ref.stored_block import QuantizedBlock
from .dot_tables import (
    FLOAT_CUTS, INT64_LIMIT, _anchor_table, _float32_values, _grid_table, _max_abs, _pair_table, _special_table, _taumax,
    _terms,
)
from .output import FINITE, NAN, NEG_INF, POS_INF, float32_parts
from .round import round_shifted


class _DotKernel:
    """Register, anchor and specials of a chunk of block pairs, for one format pair and
    accumulator. ``anchors``: compute the anchor in modes that do not need it (exact,
    fp32_sequential); otherwise it is reported as 0."""

    def __init__(self, fmt_a, fmt_b, acc: Accumulator, anchors: bool = True):
        self.fmt_a, self.fmt_b, self.acc, self.anchors = fmt_a, fmt_b, acc, anchors
        self.k = fmt_a.block_size
        self.ta, self.tb = _terms(fmt_a.element), _terms(fmt_b.element)
        self.frac = ref_dot.frac_bits(fmt_a.element) + ref_dot.frac_bits(fmt_b.element)
        self.lsb = ref_dot.product_lsb(fmt_a, fmt_b)
        self.has_specials = _special_table(fmt_a) is not None or _special_table(fmt_b) is not None
        # the largest |product| on the fixed grid
        self.product_bound = ref_dot.largest_grid_value(fmt_a) * ref_dot.largest_grid_value(fmt_b)
        self.register_limit = ref_dot.register_limit(fmt_a, fmt_b, acc)
        self.route = getattr(self, f"_route_{acc.mode}")()

    # Each _route_* picks how its mode runs for this pair and returns the chunk function, which
    # maps (codes_a, codes_b, subscales_a, subscales_b) to (register, lsb, anchor, special).
    def _route_exact(self):
        bound = self.register_limit
        self.register_dtype = np.int64 if bound < INT64_LIMIT else object
        # The float dtype that holds every product and partial sum exactly; the lookups may be
        # narrower than the sum.
        self.sum_dtype = "float32" if bound < 1 << 24 else "float64" if bound < 1 << 53 else None
        if self.sum_dtype is None:
            return self._exact_python_ints
        self.ones = np.ones(self.k, dtype=self.sum_dtype)
        small = self.fmt_a.element.width + self.fmt_b.element.width <= 12
        if small and not (self.fmt_a.subblocks or self.fmt_b.subblocks):
            self.pair = _pair_table(self.fmt_a, self.fmt_b, self.sum_dtype)
            return self._exact_pairs
        return self._exact_floats

    def _route_aligned(self):
        # every partial sum must stay inside int64 for the array routes
        bound = self.register_limit
        if bound >= INT64_LIMIT:
            self.register_dtype = object
            return self._by_reference
        self.register_dtype = np.int64
        self.clamp = ref_dot.register_may_overflow(self.fmt_a, self.fmt_b, self.acc)
        if self.product_bound < 1 << 53 and bound < 1 << 53:
            self.ones = np.ones(self.k)
            return self._aligned_floats
        return self._aligned

    def _route_fp32_sequential(self):
        va, vb = _float32_values(self.fmt_a), _float32_values(self.fmt_b)
        sig_bits = int(_max_abs(self.ta.significand)).bit_length() + int(_max_abs(self.tb.significand)).bit_length()
        top = self.fmt_a.element.emax + self.fmt_b.element.emax + 2
        self.register_dtype = np.int64
        if va is None or vb is None or sig_bits > 24 or self.lsb < -149 or top > 127:
            return self._by_reference  # some product is not exact in float32
        self.va, self.vb = va, vb
        return self._fp32_sequential

    # --- pieces ------------------------------------------------------------------------------
    @staticmethod
    def _taus(fmt, subscales) -> np.ndarray:
        return np.repeat(subscales.astype(np.int64), fmt.subblock_size, axis=1)

    def _grid_values(self, fmt, codes, sub, dtype_name: str) -> np.ndarray:
        """Elements on the fixed grid: table value * 2^(taumax - tau)."""
        v = np.take(_grid_table(fmt, dtype_name), codes)
        if fmt.subblocks:
            shift = _taumax(fmt) - self._taus(fmt, sub)
            v = v * np.left_shift(1, shift).astype(v.dtype)
        return v

    def _anchor(self, codes_a, codes_b, sub_a, sub_b):
        """Largest Ea + Eb over products of two finite nonzero elements, 0 if none; and the
        per-product exponents (int64)."""
        (table_a, sentinel_a), (table_b, sentinel_b) = _anchor_table(self.fmt_a), _anchor_table(self.fmt_b)
        if sentinel_a != sentinel_b:
            (table_a, sentinel_a), (table_b, sentinel_b) = (_anchor_table(f, True) for f in (self.fmt_a, self.fmt_b))
        ea, eb = np.take(table_a, codes_a), np.take(table_b, codes_b)
        if ea.dtype != eb.dtype:
            ea, eb = ea.astype(np.int32), eb.astype(np.int32)
        e = ea + eb
        if self.fmt_a.subblocks or self.fmt_b.subblocks:
            e = e.astype(np.int64)
            for fmt, sub in ((self.fmt_a, sub_a), (self.fmt_b, sub_b)):
                if fmt.subblocks:
                    e -= self._taus(fmt, sub)
        anchor = e.max(axis=1).astype(np.int64)
        # a product with a sentinel lies below every real sum of exponents
        return np.where(anchor < max(sentinel_a, sentinel_b) // 2, 0, anchor), e

    def _anchor_if_wanted(self, codes_a, codes_b, sub_a, sub_b):
        if not self.anchors:
            return np.zeros(codes_a.shape[0], dtype=np.int64)
        return self._anchor(codes_a, codes_b, sub_a, sub_b)[0]

    def _special_rows(self, codes_a, codes_b) -> np.ndarray:
        """Indices of the blocks with an Inf or NaN element."""
        if not self.has_specials:
            return np.zeros(0, dtype=np.intp)
        odd = np.zeros(codes_a.shape, dtype=bool)
        for fmt, codes in ((self.fmt_a, codes_a), (self.fmt_b, codes_b)):
            table = _special_table(fmt)
            if table is not None:
                odd |= np.take(table, codes)
        return np.flatnonzero(odd.any(axis=1))

    def _specials(self, codes_a, codes_b, rows=None) -> np.ndarray:
        """Per block: FINITE, POS_INF, NEG_INF or NAN from the element products (exact and
        aligned modes; the rules of :func:`mxsim.ref.dot._special`)."""
        special = np.zeros(codes_a.shape[0], dtype=np.int8)
        if rows is None:
            rows = self._special_rows(codes_a, codes_b)
        if rows.size == 0:
            return special
        ta, tb = self.ta, self.tb
        ca, cb = codes_a[rows], codes_b[rows]
        nan = ta.nan[ca] | tb.nan[cb] | (ta.inf[ca] & tb.zero[cb]) | (ta.zero[ca] & tb.inf[cb])
        inf = (ta.inf[ca] | tb.inf[cb]) & ~nan
        negative = ta.negative[ca] ^ tb.negative[cb]
        pos, neg = (inf & ~negative).any(axis=1), (inf & negative).any(axis=1)
        special[rows] = np.where(nan.any(axis=1) | (pos & neg), NAN, np.where(pos, POS_INF, np.where(neg, NEG_INF, FINITE)))
        return special

    # --- routes ------------------------------------------------------------------------------
    def _exact_python_ints(self, codes_a, codes_b, sub_a, sub_b):
        va = self._grid_values(self.fmt_a, codes_a, sub_a, "int64").astype(object)
        vb = self._grid_values(self.fmt_b, codes_b, sub_b, "int64").astype(object)
        register = (va * vb).sum(axis=1)
        lsb = np.full(codes_a.shape[0], self.lsb, dtype=np.int64)
        anchor = self._anchor_if_wanted(codes_a, codes_b, sub_a, sub_b)
        return register, lsb, anchor, self._specials(codes_a, codes_b)

    def _exact_pairs(self, codes_a, codes_b, sub_a, sub_b):
        index = codes_a.astype(np.uint16)
        index <<= self.fmt_b.element.width
        index |= codes_b
        products = np.take(self.pair, index)
        with np.errstate(invalid="ignore"):
            total = products @ self.ones
        return self._exact_register(total, codes_a, codes_b, sub_a, sub_b)

    def _exact_floats(self, codes_a, codes_b, sub_a, sub_b):
        # products in place, then a matrix-vector product with ones: measured several times
        # faster than np.einsum("ij,ij->i") on these shapes
        products = self._grid_values(self.fmt_a, codes_a, sub_a, self.sum_dtype)
        with np.errstate(invalid="ignore"):
            products *= self._grid_values(self.fmt_b, codes_b, sub_b, self.sum_dtype)
            total = products @ self.ones
        return self._exact_register(total, codes_a, codes_b, sub_a, sub_b)

    def _exact_register(self, total, codes_a, codes_b, sub_a, sub_b):
        """The register from an exact float sum; IEEE specials in the sum flag exactly the blocks
        with an Inf or NaN element, whose registers count the finite products only."""
        odd = np.flatnonzero(~np.isfinite(total))
        total[odd] = 0
        register = total.astype(np.int64)
        special = np.zeros(codes_a.shape[0], dtype=np.int8)
        if odd.size:
            ia = self._grid_values(self.fmt_a, codes_a[odd], sub_a[odd], "int64")
            ib = self._grid_values(self.fmt_b, codes_b[odd], sub_b[odd], "int64")
            register[odd] = (ia * ib).sum(axis=1)
            special = self._specials(codes_a, codes_b, odd)
        lsb = np.full(codes_a.shape[0], self.lsb, dtype=np.int64)
        return register, lsb, self._anchor_if_wanted(codes_a, codes_b, sub_a, sub_b), special

    def _aligned_floats(self, codes_a, codes_b, sub_a, sub_b):
        """Products exact in float64 on the fixed grid, scaled by one power of two per block to
        the grid 2^(anchor - F), then truncated (np.trunc) or rounded half-even (np.rint): every
        step is exact while the bounds checked in _route_aligned hold."""
        acc = self.acc
        products = self._grid_values(self.fmt_a, codes_a, sub_a, "float64")
        anchor, _ = self._anchor(codes_a, codes_b, sub_a, sub_b)
        lsb = anchor - acc.frac_bits
        with np.errstate(invalid="ignore"):
            products *= self._grid_values(self.fmt_b, codes_b, sub_b, "float64")
            products *= np.ldexp(1.0, self.lsb - lsb)[:, None]
            FLOAT_CUTS[acc.shift_rounding](products, out=products)
            total = products @ self.ones
        # IEEE specials in the sum flag exactly the blocks with an Inf or NaN element; their
        # registers count the finite products only
        odd = np.flatnonzero(~np.isfinite(total))
        if odd.size:
            finite = np.where(np.isfinite(products[odd]), products[odd], 0)
            products[odd] = finite
            total[odd] = finite @ self.ones
        special = self._specials(codes_a, codes_b, odd)
        if not self.clamp:
            return total.astype(np.int64), lsb, anchor, special
        return self._sum(products.astype(np.int64), lsb, anchor, special)

    def _aligned(self, codes_a, codes_b, sub_a, sub_b):
        """Significand products and per-product shifts (pairs whose fixed-grid products exceed
        int64, e.g. FP8 E5M2)."""
        acc = self.acc
        magnitude = np.take(self.ta.significand, codes_a) * np.take(self.tb.significand, codes_b)
        anchor, e = self._anchor(codes_a, codes_b, sub_a, sub_b)
        lsb = anchor - acc.frac_bits
        negative = np.take(self.ta.negative, codes_a) ^ np.take(self.tb.negative, codes_b)
        q = round_shifted(magnitude, (lsb + self.frac)[:, None] - e, CUT_ROUNDING[acc.shift_rounding], negative)
        return self._sum(np.where(negative, -q, q), lsb, anchor, self._specials(codes_a, codes_b))

    def _sum(self, q, lsb, anchor, special):
        """The register: the q_i added in index order with the overflow rule."""
        acc = self.acc
        bound = acc.register_bound
        if not self.clamp:
            register = q.sum(axis=1)
        elif acc.overflow == "wrap":  # wrapping after each addition = wrapping the exact sum
            register = (q.sum(axis=1) + bound) % (2 * bound) - bound
        else:
            register = np.zeros(q.shape[0], dtype=np.int64)
            for column in q.T:
                register += column
                np.clip(register, -bound, bound - 1, out=register)
        return register, lsb, anchor, special

    def _fp32_sequential(self, codes_a, codes_b, sub_a, sub_b):
        pa, pb = np.take(self.va, codes_a), np.take(self.vb, codes_b)
        for fmt, p, sub in ((self.fmt_a, pa, sub_a), (self.fmt_b, pb, sub_b)):
            if fmt.subblocks:
                p *= np.ldexp(np.float32(1), -self._taus(fmt, sub)).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            products = pa * pb
            total = np.zeros(products.shape[0], dtype=np.float32)
            for column in products.T:
                total += column
        negative, magnitude, exponent, special = float32_parts(total)
        register = np.where(special == FINITE, np.where(negative, -magnitude, magnitude), 0)
        lsb = np.where(special == FINITE, exponent, 0)
        return register, lsb, self._anchor_if_wanted(codes_a, codes_b, sub_a, sub_b), special

    def _by_reference(self, codes_a, codes_b, sub_a, sub_b):
        results = []
        for i in range(codes_a.shape[0]):
            blocks = []
            for fmt, codes, sub in ((self.fmt_a, codes_a, sub_a), (self.fmt_b, codes_b, sub_b)):
                taus = tuple(int(t) for t in sub[i]) if fmt.subblocks else ()
                # the scale code of 1.0: only the register matters here
                blocks.append(QuantizedBlock(_unit_scale_code(fmt), taus, tuple(int(c) for c in codes[i])))
            r = ref_dot.dot(blocks[0], blocks[1], self.fmt_a, self.fmt_b, self.acc)
            results.append((r.accumulator, r.lsb_exponent, r.anchor if self.anchors or self.acc.mode == "aligned" else 0, r.exact))
        register = np.array([r[0] for r in results] + [None], dtype=object)[:-1]
        lsb = np.array([r[1] for r in results], dtype=np.int64)
        anchor = np.array([r[2] for r in results], dtype=np.int64)
        special = np.array([_special_code(r[3]) for r in results], dtype=np.int8)
        return register, lsb, anchor, special


def _unit_scale_code(fmt) -> int:
    from ..ref.encode import encode

    return encode(1, fmt.scale)


def _special_code(x) -> int:
    if x.is_nan:
        return NAN
    if x.is_inf:
        return NEG_INF if x.sign else POS_INF
    return FINITE
