"""The fused-step kernel: route choice, per-product tables, and the step loop over tiles of a chunk of rows.

:class:`FusedKernel` holds one format pair and accumulator; it chooses the route and checks its
bounds (see :mod:`mxsim.fast.fused`, docs/numerics.md section 4.1), computes what every route
needs per product and per chunk (values, anchors, specials, scales) from tables of every code
pair, and runs the steps tile by tile. The routes' own terms and steps are its mixins:
:mod:`mxsim.fast.fused_max`, :mod:`mxsim.fast.fused_fixed`, :mod:`mxsim.fast.fused_late`.
"""

from __future__ import annotations

import numpy as np

from ..options import Accumulator
from ..ref import dot as ref_dot
from ..ref.fused import integer_offset
from .fused_fixed import FixedAnchorRoute
from .fused_late import LateJoinRoute
from .fused_max import MaxAnchorRoute
from .fused_tables import COUNTS, FLOAT_EXACT, NO_ANCHOR, _counts, _element, _Layout, _read, _scale
from .fused_wide import LIMB, WIDE_BITS, _C, _combine
from .output import FINITE, NAN, NEG_INF, POS_INF, fp32_words, round_output

CHUNK_PRODUCTS = 1 << 20  # products per tile of a chunk (about 8 MB per float64 array)


class FusedKernel(MaxAnchorRoute, FixedAnchorRoute, LateJoinRoute):
    """Fused steps of one format pair and accumulator over chunks of rows (see :mod:`mxsim.fast.fused`
    for the routes and their bounds)."""

    def __init__(self, fmt_a, fmt_b, acc: Accumulator, n_blocks: int):
        self.fmt_a, self.fmt_b, self.acc = fmt_a, fmt_b, acc
        k, step = fmt_a.block_size, acc.effective_step(fmt_a.block_size)
        term_size = acc.effective_term_size(k) if acc.step_terms == "block" else 1
        # a step that does not divide the block restarts at every block: each block is padded with
        # zero products to whole steps (contract 4.1 as Accumulator.step_ranges reads it)
        self.pad = (-k) % step if step < k else 0
        self.layout = _Layout(k + self.pad, step, n_blocks, term_size)
        self.ea = _read(_element(fmt_a.element), integer_offset(fmt_a.element, acc), acc.zero_exponent,
                        acc.convert_elements)
        self.eb = _read(_element(fmt_b.element), integer_offset(fmt_b.element, acc), acc.zero_exponent,
                        acc.convert_elements)
        self.order = acc.product_order(k)  # interleave_steps: each block's products in the order the steps take them
        self.sa, self.sb = _scale(fmt_a.scale), _scale(fmt_b.scale)
        self.route = self._choose_route()
        self.narrow_sums = self._fixed_bits() <= 62
        self.grid_integers = self._float_fixed_tables()
        self.ones = np.ones(self.layout.terms_per_step)
        self._tables: dict[str, tuple] = {}  # tables of every code pair, by field function

    def _choose_route(self) -> str:
        exact, ratio = self._float_terms()
        if self.pad and (self.fmt_a.subblocks or self.fmt_b.subblocks):
            return "reference"
        if self.acc.sum_frac_bits is not None:
            return "late" if exact and self.acc.step_terms == "product" and self._late_bound(ratio) else "reference"
        if self.acc.anchor == "max":
            fits = exact and (self.layout.terms_per_step * ratio + 2) * 2.0**self.acc.frac_bits < FLOAT_EXACT
        elif self.acc.step_terms == "block":
            # each term cut to the grid is an exact float64 integer; a step's sum is below 2^60
            largest = ratio * 2.0**self.acc.frac_bits
            fits = exact and largest < FLOAT_EXACT and self.layout.terms_per_step * largest < 2.0**60
        else:
            fits = self._fixed_bits() <= WIDE_BITS
        return self.acc.anchor if fits else "reference"

    def _float_terms(self) -> tuple[bool, float]:
        """(whether every term value is exact in float64, R = the largest |term| / 2^(its anchor
        exponent)). Product terms: |product| / 2^e = Ma*Mb / 2^(fa + fb) (at most 4), exact when
        Ma*Mb has at most 53 bits. Block terms: R = term_size * the largest |product| * 4 (scale
        significands are below 2); the group sum is exact on the pair's fixed grid while below
        2^53 units, and times the two scale significands while the bits add up to at most 53.
        With anchor="max", |q_term| <= R * 2^F and |q_C| < 2^(F + 1): the step sum is exact in
        float64 while (terms_per_step * R + 2) * 2^F < 2^53."""
        ea, eb, layout = self.ea, self.eb, self.layout
        if self.acc.step_terms == "product":
            significands = int(ea.significand.max()) * int(eb.significand.max())
            return significands.bit_length() <= 53, significands / 2.0 ** (ea.frac_bits + eb.frac_bits)
        largest = float(np.abs(ea.value).max()) * float(np.abs(eb.value).max())
        grid = ref_dot.largest_grid_value(self.fmt_a) * ref_dot.largest_grid_value(self.fmt_b)
        bits = (layout.term_size * grid).bit_length() + self.sa.significand_bits + self.sb.significand_bits
        return bits <= 53, layout.term_size * largest * 4

    def _fixed_bits(self) -> int:
        """An upper bound on the bits of a step's product sum on the fixed grid: each product is
        Ma*Mb * 2^shift with shift <= Ea_max + Eb_max - fa - fb + F, and a step adds ``step``."""
        ea, eb = self.ea, self.eb
        largest_shift = int(ea.exponent.max() + eb.exponent.max()) - ea.frac_bits - eb.frac_bits + self.acc.frac_bits
        significand_bits = int(ea.significand.max() * eb.significand.max()).bit_length()
        if significand_bits > 62 - LIMB or largest_shift > 2 * LIMB:
            return WIDE_BITS + 1  # beyond _shift_left's reach
        return significand_bits + max(largest_shift, 0) + (self.layout.step - 1).bit_length()

    # --- per product: from tables of every code pair, or element by element --------------------
    def _pair_index(self, ca, cb) -> np.ndarray | None:
        """(code_a << width_b) | code_b, the index into tables of every code pair; None for pairs
        with sub-block microexponents or more than 2^16 code pairs (computed per element)."""
        wa, wb = self.fmt_a.element.width, self.fmt_b.element.width
        if self.fmt_a.subblocks or self.fmt_b.subblocks or wa + wb > 16:
            return None
        index = ca.astype(np.uint16)
        index <<= wb
        index |= cb
        return index

    def _per_product(self, fields, ca, cb, sub_a, sub_b, index):
        """The arrays ``fields(codes_a, codes_b, tau)`` returns for every product: looked up in
        tables of every code pair (built once per kernel) when ``index`` is given, else computed
        with tau = tauA + tauB (the products' microexponents)."""
        if index is None:
            tau = 0
            for fmt, sub in ((self.fmt_a, sub_a), (self.fmt_b, sub_b)):
                if fmt.subblocks:
                    tau = tau + np.repeat(sub.astype(np.int32), fmt.subblock_size, axis=2)
            return fields(ca, cb, tau)
        tables = self._tables.get(fields.__name__)
        if tables is None:
            codes_a, codes_b = np.divmod(
                np.arange(1 << (self.fmt_a.element.width + self.fmt_b.element.width)), 1 << self.fmt_b.element.width
            )
            tables = self._tables[fields.__name__] = fields(codes_a, codes_b, 0)
        return tuple(np.take(table, index) for table in tables)

    def _value_fields(self, ca, cb, tau):
        """(value float64,): the product's exact value, scales not included."""
        value = np.take(self.ea.value, ca) * np.take(self.eb.value, cb)
        if not np.isscalar(tau):
            value *= np.ldexp(1.0, -tau)
        return (value,)

    def _anchor_fields(self, ca, cb, tau):
        """(anchor exponent Ea + Eb - tau,): not counting (:func:`_counts`) unless both elements
        are finite and nonzero (or ``zero_exponent`` is set); int8 or int16 (sentinel: the type's
        minimum) for a table whose exponents fit, else int32."""
        anchor = np.take(self.ea.anchor, ca) + np.take(self.eb.anchor, cb) - tau
        counts = anchor > COUNTS
        if np.isscalar(tau):
            largest = np.abs(anchor[counts]).max(initial=0)
            for small in (np.int8, np.int16):
                if largest < np.iinfo(small).max:
                    return (np.where(counts, anchor, np.iinfo(small).min).astype(small),)
        return (anchor,)

    def _product_classes(self, ca, cb):
        """The special class of every product (int8): NaN (NaN element, Inf x 0), +-Inf, FINITE."""
        ea, eb = self.ea, self.eb
        a_nan, b_nan = np.take(ea.nan, ca), np.take(eb.nan, cb)
        a_inf, b_inf = np.take(ea.inf, ca), np.take(eb.inf, cb)
        nan = a_nan | b_nan | (a_inf & np.take(eb.zero, cb)) | (np.take(ea.zero, ca) & b_inf)
        negative = np.take(ea.negative, ca) ^ np.take(eb.negative, cb)
        inf = np.where(negative, NEG_INF, POS_INF)
        return np.where(nan, NAN, np.where(a_inf | b_inf, inf, FINITE)).astype(np.int8)

    # --- per chunk: everything that does not depend on C ----------------------------------------
    def _scales(self, scales_a, scales_b):
        """(value float64 = both scale values, X = XA + XB int32, NaN) of every block."""
        value = np.take(self.sa.value, scales_a) * np.take(self.sb.value, scales_b)
        exponent = np.take(self.sa.exponent, scales_a) + np.take(self.sb.exponent, scales_b)
        return value, exponent, np.take(self.sa.nan, scales_a) | np.take(self.sb.nan, scales_b)

    def _specials(self, ca, cb, scale_nan) -> np.ndarray:
        """(rows, n_steps) int8: the special outcome of each step's products and scales."""
        layout = self.layout.tile(ca.shape[1])
        special = np.where(layout.per_step(scale_nan, False, np.any), NAN, FINITE).astype(np.int8)
        if not (self.ea.has_specials or self.eb.has_specials):
            return special
        odd = [e.special_codes(codes) for e, codes in ((self.ea, ca), (self.eb, cb)) if e.has_specials]
        if not any(o.any() for o in odd):
            return special
        rows = np.flatnonzero(np.logical_or.reduce(odd).any(axis=(1, 2)))
        classes = self._product_classes(ca[rows], cb[rows])
        for outcome in (POS_INF, NEG_INF, NAN):
            hit = layout.steps_of(classes == outcome, False, np.any)
            special[rows] = _combine(special[rows], np.where(hit, outcome, FINITE))
        return special

    def _terms(self, ca, cb, sub_a, sub_b, scales_a, scales_b, index):
        """(value float64 (rows, n_blocks, terms per block): each term's exact value, scales
        included; X = XA + XB int32 (rows, n_blocks); scale NaN (rows, n_blocks))."""
        (value,) = self._per_product(self._value_fields, ca, cb, sub_a, sub_b, index)
        scale_value, exponent, scale_nan = self._scales(scales_a, scales_b)
        if self.acc.step_terms == "block":
            size = self.layout.term_size
            value = value.reshape(*ca.shape[:2], self.layout.k // size, size).sum(axis=3)
        value *= scale_value[:, :, None]
        return value, exponent, scale_nan

    def _anchors(self, ca, cb, sub_a, sub_b, exponent, index):
        """(rows, n_steps) int64: each step's largest anchor exponent of a counting term (product:
        Ea + Eb + XA + XB; block term: XA + XB), NO_ANCHOR if none. The products' exponents are
        reduced over each step's part of a block before the scale exponent is added."""
        layout = self.layout.tile(ca.shape[1])
        (anchor,) = self._per_product(self._anchor_fields, ca, cb, sub_a, sub_b, index)
        part = min(layout.step, layout.k)
        largest = anchor.reshape(*ca.shape[:2], layout.k // part, part).max(axis=3)
        counts = _counts(largest)
        base = largest.astype(np.int64) if self.acc.step_terms == "product" else 0
        anchors = np.where(counts, base + exponent[:, :, None], NO_ANCHOR)
        if layout.step <= layout.k:
            return anchors.reshape(ca.shape[0], layout.n_steps)
        return layout.per_step(anchors[:, :, 0], NO_ANCHOR, np.max)

    # --- per chunk: the step loop ----------------------------------------------------------------
    def run(self, fetch, n_blocks: int, words, keep_steps: bool):
        """(the last step's codes (rows,), every step's codes (rows, n_steps) if ``keep_steps``
        else None, rows to recompute by the reference (bool)) of a chunk of rows whose C are the
        fp32 ``words``. ``fetch(j0, j1)`` gives the chunk's blocks [j0, j1) of both operands
        (codes_a, codes_b, subscales_a, subscales_b, scales_a, scales_b; shaped (rows, blocks,
        ...)); a tile of whole steps (about CHUNK_PRODUCTS products) is fetched at a time, so the
        temporaries do not grow with K."""
        rows = words.shape[0]
        if self.order is not None:
            fetch = self._reordered(fetch)
        if self.pad:
            fetch = self._padded(fetch)
        unit = max(1, self.layout.step // self.layout.k)  # blocks per tile are whole steps
        tile = max(unit, CHUNK_PRODUCTS // max(1, rows * self.layout.k) // unit * unit)
        if self.grid_integers is not None:
            state, run_tile = words.astype(np.uint32).view(np.float32), self._float_fixed_tile
        else:
            state, run_tile = words, self._integer_tile
        refer = np.zeros(rows, dtype=bool)
        kept = []
        for first in range(0, n_blocks, tile):
            state, codes = run_tile(fetch(first, min(first + tile, n_blocks)), state, refer)
            kept.extend(codes if keep_steps else codes[-1:])
        return kept[-1], (np.stack(kept, axis=1) if keep_steps else None), refer

    def _reordered(self, fetch):
        """``fetch`` with every block's codes in the order the steps take them (``product_order``)."""
        order = np.asarray(self.order)

        def reordered(j0, j1):
            ca, cb, *rest = fetch(j0, j1)
            return (np.take(ca, order, axis=2), np.take(cb, order, axis=2), *rest)
        return reordered

    def _padded(self, fetch):
        """``fetch`` with every block's codes padded with zero codes (code 0 is +0) to whole steps."""
        def padded(j0, j1):
            ca, cb, *rest = fetch(j0, j1)
            width = ((0, 0), (0, 0), (0, self.pad))
            return (np.pad(ca, width), np.pad(cb, width), *rest)
        return padded

    def _integer_tile(self, arrays, words, refer):
        """(fp32 words of the last D, each step's codes) of a tile by the integer steps of either
        anchor; ``refer`` gathers the rows the reference must recompute."""
        terms, step = {
            "max": (self._max_terms, self._max_step),
            "fixed": (self._fixed_terms, self._fixed_step),
            "late": (self._late_terms, self._late_step),
        }[self.route]
        parts = terms(*arrays)
        codes = []
        for s in range(parts[-1].shape[1]):
            c = _C.from_words(words, self.acc)
            code, misfit = step(c, *(part[:, s] for part in parts))
            refer |= misfit
            codes.append(code)
            words = fp32_words(code, self.acc)
        return words, codes

    def _pass_c(self, code, c: _C, products_zero, special):
        """``zero_product_sum="pass_c"``: D = C (rounded to the output, its sign kept) where the
        step's cut product sum is exactly zero; the codes unchanged otherwise."""
        if self.acc.zero_product_sum != "pass_c" or not products_zero.any():
            return code
        return np.where(products_zero, round_output(c.negative, c.significand, c.exponent, special, self.acc), code)
