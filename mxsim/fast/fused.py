"""Vectorized fused multiply-accumulate steps (``accumulate="fused"``; conventions.md section 4.1,
as resolved by the fused-step specification): the model of :mod:`mxsim.ref.fused` on many
DotGeneral rows at once, bit-identical to it.

A row's K = n_blocks * k products are cut into steps of ``step`` products; each step computes
D = C + (its terms) in one exact multi-term adder and rounds once to the output; D is the next
step's C. Steps are sequential, so the step loop runs over steps and is vectorized over rows
(in chunks of rows, on up to two threads); everything that does not depend on C (term values,
anchor exponents of the terms, specials) is computed for all steps at once.

Terms (``step_terms``): every product (value (-1)^s * Ma*Mb * 2^(Ea + Eb - fa - fb + XA + XB),
anchor exponent e = Ea + Eb + XA + XB), or each group of ``term_size`` products of one scale block
(value: the group's exact product sum times both scale values; anchor exponent XA + XB). A term
counts for the anchor iff one of its products has two finite nonzero elements. C counts with
e_C = max(floor(log2 |C|), -126), or ``c_zero_exponent`` for a zero C.

Routes, chosen per format pair and accumulator (the bounds are derived in :class:`_FusedKernel`):

* ``anchor="max"`` in float64: every term value is exact in float64 (element values and scale
  values are short dyadic numbers); per step and row, A = max(term anchors, e_C), and each term
  times 2^(F - A) is an exact float64 that ``np.trunc`` (truncate) or ``np.rint`` (rne) cuts to
  the grid. |q_term| <= R * 2^F (R: the largest term / 2^anchor exponent: 4 for products) and
  |q_C| < 2^(F + 1), so the step sum S stays below 2^53 and is exact in any order whenever
  terms_per_step * R * 2^F + 2^(F + 1) < 2^53 (F <= 44 for 64 product terms).
* ``anchor="fixed"`` in int64 limbs: the terms cut to the grid 2^(XA + XB - F) do not depend
  on C, so their step sums P are computed for all steps at once, as two int64 limbs
  P = H * 2^40 + L (0 <= L < 2^40; up to 100 bits: the 70-bit sums of FP8 E5M2 at F = 34).
  Products are cut from their integer significands, Ma*Mb * 2^(Ea + Eb - fa - fb + F), which do
  not depend on the scales either (bits(Ma*Mb) + the largest shift + bits(step) <= 100); block
  terms from their exact float64 values (each cut term below 2^53, a step's sum below 2^60).
  Per step, V = C + P * 2^g is formed exactly on the grid 2^min(g, expC) (g = XA + XB - F, expC
  the exponent of C's LSB) by shifting one operand's limbs, then narrowed to 61 bits with a
  sticky bit (which keeps every rounding decision of a <= 24-bit output) and rounded. Lanes whose
  aligned sum would exceed 100 bits (C more than 76 bits above the grid and not bypassed, or far
  below a nonzero P) are detected per step and their rows recomputed by the reference.
* the reference (:func:`mxsim.ref.dot.dot_general`, row by row) for configurations outside these
  bounds (F beyond 44 with 64 product terms and ``anchor="max"``, block terms of FP8 E5M2, whose
  group sums exceed 53 bits, ...): correct, slow.

Specials (decided before the integer sum, as the hardware's side path): a NaN C, a NaN scale in
the step's blocks, a NaN product (NaN element, Inf x 0) or Inf terms of both signs (Inf products
and an Inf C) make the step NaN (``nan_bits``); other Inf products or an Inf C make it +-Inf. An
exactly zero step sum V gives +0, whatever the signs of C and the products.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from ..options import Accumulator
from ..ref import dot as ref_dot
from ..ref.output import fp32_bits
from .chunks import map_chunks
from .dot import Operand, _check_operands, _terms, float32_parts
from .encode import floor_log2_int64
from .output import FINITE, NAN, NEG_INF, POS_INF, fp32_words, round_output
from .round import round_shifted

__all__ = ["check_fused_operands", "dot_general_steps"]

FLOAT_EXACT = 1 << 53  # every integer below this is a float64
LIMB = 40  # bits of the low limb of a wide integer H * 2^LIMB + L
WIDE_BITS = 60 + LIMB  # |H| < 2^60 keeps sums of two wide values inside int64
NO_ANCHOR = -(1 << 24)  # anchor exponent of a term that does not count
COUNTS = -(1 << 22)  # anchor exponents above this belong to counting terms
ROW_CHUNK = 8192  # rows per chunk at most: the step loop's operations run on arrays of this length
CHUNK_PRODUCTS = 1 << 20  # products per tile of a chunk (about 8 MB per float64 array)


def check_fused_operands(a: Operand, b: Operand, acc: Accumulator):
    """The format pair of two operands for fused steps, or ValueError: the settings must suit the
    formats (:meth:`Accumulator.check_block_format`), and fused steps take no tensor scale (the
    hardware multiplies NVFP4's tensor scale in outside the MMA)."""
    fmt_a, fmt_b = _check_operands(a, b)
    acc.check_block_format(fmt_a, fmt_b)
    for name, op in (("a", a), ("b", b)):
        if op.tensor_scale is not None and op.tensor_scale != 1:
            raise ValueError(
                f"operand {name} ({op.fmt.name}) has tensor scale {op.tensor_scale}: accumulate='fused' takes no "
                "tensor scale (quantize with nvfp4_tensor_scale='none', or use accumulate='separate')"
            )
    return fmt_a, fmt_b


# --- tables -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Element:
    """Every code of an element format: ``value`` (float64, exact; 0 for Inf and NaN),
    ``anchor`` (E, int32; NO_ANCHOR unless finite and nonzero), ``significand`` and ``exponent``
    (int64, the reference's Term: value = +-significand * 2^(exponent - f)), and the special
    classes ``nan``, ``inf``, ``zero``, ``negative``."""

    value: np.ndarray
    anchor: np.ndarray
    significand: np.ndarray
    exponent: np.ndarray
    nan: np.ndarray
    inf: np.ndarray
    zero: np.ndarray
    negative: np.ndarray
    frac_bits: int
    magnitude_mask: int  # the code bits below the sign bit

    @property
    def has_specials(self) -> bool:
        return bool(self.nan.any() or self.inf.any())

    @property
    def special_threshold(self) -> int | None:
        """The smallest magnitude code of an Inf or NaN when every larger magnitude code is one
        too (IEEE and "fn" float formats: their specials are the top magnitudes), else None."""
        special = self.nan | self.inf
        if not special.any():
            return None
        magnitudes = np.arange(special.size) & self.magnitude_mask
        threshold = int(magnitudes[special].min())
        return threshold if np.array_equal(special, magnitudes >= threshold) else None

    def special_codes(self, codes: np.ndarray) -> np.ndarray:
        """True where a code is Inf or NaN."""
        threshold = self.special_threshold
        if threshold is None:
            return np.take(self.nan | self.inf, codes)
        return (codes & self.magnitude_mask) >= threshold


@cache
def _element(element) -> _Element:
    t = _terms(element)
    f = ref_dot._frac_bits(element)
    value = np.ldexp(t.significand.astype(np.float64), (t.exponent - f).astype(np.int32))
    value = np.where(t.negative, -value, value)
    counts = t.significand != 0  # Inf and NaN have significand 0
    anchor = np.where(counts, t.exponent, NO_ANCHOR).astype(np.int32)
    magnitude_mask = ((1 << element.width) - 1) & ~element.sign_mask
    return _Element(value, anchor, t.significand, t.exponent, t.nan, t.inf, t.zero, t.negative, f, magnitude_mask)


@dataclass(frozen=True)
class _Scale:
    """Every code of a scale format: ``value`` (float64, exact; 0 for NaN), ``exponent`` X (the
    unbiased exponent, int32: E8M0 code - 127; UE4M3 max(floor(log2 scale), -6)), ``nan``, and
    ``significand_bits`` (bits of the integer significand of the largest scale)."""

    value: np.ndarray
    exponent: np.ndarray
    nan: np.ndarray
    significand_bits: int


@cache
def _scale(scale_fmt) -> _Scale:
    t = _terms(scale_fmt)
    f = ref_dot._frac_bits(scale_fmt)
    value = np.ldexp(t.significand.astype(np.float64), (t.exponent - f).astype(np.int32))
    return _Scale(value, t.exponent.astype(np.int32), t.nan, int(t.significand.max()).bit_length())


# --- layout -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    """How a row's n_blocks * k products fall into steps. Steps either divide a block (step <= k)
    or span step / k whole blocks; a last partial step is padded with blocks of zero products.
    ``term_size``: products per term (1 for product terms)."""

    k: int
    step: int
    n_blocks: int
    term_size: int

    @property
    def n_steps(self) -> int:
        return -(-self.n_blocks * self.k // self.step)

    @property
    def padded_blocks(self) -> int:
        return self.n_steps * self.step // self.k

    @property
    def terms_per_step(self) -> int:
        return self.step // self.term_size

    def per_step(self, per_block: np.ndarray, fill, reduce) -> np.ndarray:
        """A (rows, n_blocks) array of a block property, per step: (rows, n_steps). Steps inside a
        block take its value; steps over several blocks ``reduce`` theirs (padding is ``fill``)."""
        if self.step <= self.k:
            return np.repeat(per_block, self.k // self.step, axis=1)
        padded = self.pad_blocks(per_block, fill)
        return reduce(padded.reshape(padded.shape[0], self.n_steps, self.step // self.k), axis=2)

    def tile(self, n_blocks: int) -> _Layout:
        """The layout of ``n_blocks`` of the row's blocks (a tile of whole steps)."""
        return replace(self, n_blocks=n_blocks)

    def pad_blocks(self, per_block: np.ndarray, fill) -> np.ndarray:
        """Pad axis 1 (blocks) to whole steps with ``fill``."""
        extra = self.padded_blocks - per_block.shape[1]
        if not extra:
            return per_block
        pad = [(0, 0)] * per_block.ndim
        pad[1] = (0, extra)
        return np.pad(per_block, pad, constant_values=fill)

    def steps_of(self, per_product: np.ndarray, fill, reduce) -> np.ndarray:
        """A (rows, n_blocks, k) array of a product property reduced per step: (rows, n_steps)."""
        padded = self.pad_blocks(per_product, fill)
        return reduce(padded.reshape(padded.shape[0], self.n_steps, self.step), axis=2)


def _sum(x: np.ndarray, axis: int) -> np.ndarray:
    """x.sum(axis) of an integer array along a short last axis (einsum: several times faster)."""
    assert axis == x.ndim - 1
    return np.einsum("...j->...", x)


# --- the accumulator input C --------------------------------------------------------------------
@dataclass(frozen=True)
class _C:
    """C of a step for each row, from its fp32 word: C = (-1)^negative * significand *
    2^exponent (significand < 2^24, 0 for Inf and NaN); ``anchor`` e_C (see the module
    docstring); ``special`` FINITE, POS_INF, NEG_INF or NAN."""

    negative: np.ndarray
    significand: np.ndarray
    exponent: np.ndarray
    anchor: np.ndarray
    special: np.ndarray

    @classmethod
    def from_words(cls, words: np.ndarray, zero_exponent: int) -> _C:
        negative, significand, exponent, special = float32_parts(words.astype(np.uint32).view(np.float32))
        field = (words >> 23) & 0xFF
        anchor = np.where(field > 0, field - 127, np.where(significand != 0, -126, zero_exponent))
        return cls(negative, significand, exponent, anchor, special)

    def signed(self) -> np.ndarray:
        return np.where(self.negative, -self.significand, self.significand)


def _combine(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The special outcome of two parts of a sum: NaN if either is NaN or they are Inf of both
    signs; else an Inf of either; else FINITE."""
    if not second.any():  # the usual case: a finite C
        return first
    if not first.any():
        return second
    nan = (first == NAN) | (second == NAN) | ((first == POS_INF) & (second == NEG_INF))
    nan |= (first == NEG_INF) & (second == POS_INF)
    return np.where(nan, NAN, np.where(first != FINITE, first, second)).astype(np.int8)


# --- wide integers: H * 2^LIMB + L with 0 <= L < 2^LIMB ----------------------------------------
_LOW = (1 << LIMB) - 1


def _normalize(high: np.ndarray, low: np.ndarray):
    """Carry a low limb of any sign into the high limb (floor division), leaving 0 <= L < 2^LIMB."""
    carry = low >> LIMB
    return high + carry, low - (carry << LIMB)


def _shift_left(high: np.ndarray, low: np.ndarray, shift: np.ndarray):
    """(H, L) * 2^shift, normalized in and out, for 0 <= shift <= 2 * LIMB (two stages of at most
    LIMB); the caller checks that the result stays below 2^WIDE_BITS."""
    for part in (np.minimum(shift, LIMB), np.maximum(shift - LIMB, 0)):
        high = (high << part) + (low >> (LIMB - part))
        low = (low & (_LOW >> part)) << part
    return high, low


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bits of |x| (int64, |x| < 2^62): 0 for 0."""
    magnitude = np.abs(x)
    return np.where(magnitude > 0, floor_log2_int64(np.maximum(magnitude, 1)) + 1, 0)


def _narrow(high: np.ndarray, low: np.ndarray, exponent: np.ndarray):
    """(H * 2^LIMB + L) * 2^exponent as (negative, magnitude < 2^61, exponent): the top 61 bits of
    the magnitude with the dropped bits ORed into the last one (round to odd, which keeps every
    rounding decision of an output of at most 59 bits). Zero is +0."""
    negative = high < 0
    borrow = negative & (low > 0)
    high = np.where(negative, -high - borrow, high)
    low = np.where(borrow, (1 << LIMB) - low, low)
    drop = np.maximum(_bit_length(high) + LIMB - 61, 0)
    sticky = (low & ((1 << drop) - 1)) != 0
    magnitude = (high << (LIMB - drop)) | (low >> drop) | sticky
    return negative, magnitude, exponent + drop


# --- the kernel ---------------------------------------------------------------------------------
class _FusedKernel:
    """Fused steps of one format pair and accumulator over chunks of rows (see the module
    docstring for the routes and their bounds)."""

    def __init__(self, fmt_a, fmt_b, acc: Accumulator, n_blocks: int):
        self.fmt_a, self.fmt_b, self.acc = fmt_a, fmt_b, acc
        k = fmt_a.block_size
        term_size = acc.effective_term_size(k) if acc.step_terms == "block" else 1
        self.layout = _Layout(k, acc.effective_step(k), n_blocks, term_size)
        self.ea, self.eb = _element(fmt_a.element), _element(fmt_b.element)
        self.sa, self.sb = _scale(fmt_a.scale), _scale(fmt_b.scale)
        self.route = self._choose_route()
        self.narrow_sums = self._fixed_bits() <= 62
        self.ones = np.ones(self.layout.terms_per_step)
        self._tables: dict[str, tuple] = {}  # tables of every code pair, by field function

    def _choose_route(self) -> str:
        exact, ratio = self._float_terms()
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
        """(anchor exponent Ea + Eb - tau,): below COUNTS unless both elements are finite and
        nonzero; int8 (sentinel -128) for a table whose exponents fit, else int32."""
        anchor = np.take(self.ea.anchor, ca) + np.take(self.eb.anchor, cb) - tau
        counts = anchor > COUNTS
        if np.isscalar(tau) and np.abs(anchor[counts]).max(initial=0) < 128:
            return (np.where(counts, anchor, -128).astype(np.int8),)
        return (anchor,)

    def _fixed_fields(self, ca, cb, tau):
        """The product cut to the grid 2^(XA + XB - F) by ``shift_rounding``, signed: (q,) int64
        when step sums fit in 62 bits (``narrow_sums``), else (high, low) int64 with q = high *
        2^LIMB + low (low not normalized: it carries the sign too)."""
        acc, ea, eb = self.acc, self.ea, self.eb
        magnitude = np.take(ea.significand, ca) * np.take(eb.significand, cb)
        shift = np.take(ea.exponent, ca) + np.take(eb.exponent, cb) - tau
        shift += acc.frac_bits - ea.frac_bits - eb.frac_bits
        negative = np.take(ea.negative, ca) ^ np.take(eb.negative, cb)
        rounding = "rtz" if acc.shift_rounding == "truncate" else "rne"
        magnitude = np.where(shift < 0, round_shifted(magnitude, -shift, rounding, negative), magnitude)
        if self.narrow_sums:
            q = magnitude << np.maximum(shift, 0)
            return (np.where(negative, -q, q),)
        high, low = _shift_left(np.zeros_like(magnitude), magnitude, np.maximum(shift, 0))
        return np.where(negative, -high, high), np.where(negative, -low, low)

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
        counts = largest > (COUNTS if anchor.dtype != np.int8 else -128)
        base = largest.astype(np.int64) if self.acc.step_terms == "product" else 0
        anchors = np.where(counts, base + exponent[:, :, None], NO_ANCHOR)
        if layout.step <= layout.k:
            return anchors.reshape(ca.shape[0], layout.n_steps)
        return layout.per_step(anchors[:, :, 0], NO_ANCHOR, np.max)

    def _max_terms(self, ca, cb, sub_a, sub_b, scales_a, scales_b):
        """(values (rows, n_steps, terms_per_step) float64, anchors (rows, n_steps) int64,
        specials (rows, n_steps)) of anchor="max"."""
        layout = self.layout.tile(ca.shape[1])
        index = self._pair_index(ca, cb)
        value, exponent, scale_nan = self._terms(ca, cb, sub_a, sub_b, scales_a, scales_b, index)
        values = layout.pad_blocks(value, 0.0).reshape(ca.shape[0], layout.n_steps, layout.terms_per_step)
        anchors = self._anchors(ca, cb, sub_a, sub_b, exponent, index)
        return values, anchors, self._specials(ca, cb, scale_nan)

    def _fixed_terms(self, ca, cb, sub_a, sub_b, scales_a, scales_b):
        """(P high, P low, grid g) (rows, n_steps) int64 and specials of anchor="fixed": each
        step's terms cut to the grid 2^g = 2^(XA + XB - F), summed exactly as wide integers.
        Product terms are cut from their integer significands (tables of every code pair); block
        terms from their exact float64 values (every cut term is an integer below 2^53)."""
        layout = self.layout.tile(ca.shape[1])
        if self.acc.step_terms == "block":
            value, exponent, scale_nan = self._terms(ca, cb, sub_a, sub_b, scales_a, scales_b, self._pair_index(ca, cb))
            cut = np.trunc if self.acc.shift_rounding == "truncate" else np.rint
            q = cut(value * np.ldexp(1.0, self.acc.frac_bits - exponent)[:, :, None]).astype(np.int64)
            sums = [_sum(q.reshape(ca.shape[0], layout.n_steps, layout.terms_per_step), axis=2)]
        else:
            products = self._per_product(self._fixed_fields, ca, cb, sub_a, sub_b, self._pair_index(ca, cb))
            sums = [layout.steps_of(q, 0, _sum) for q in products]
            _, exponent, scale_nan = self._scales(scales_a, scales_b)
        high, low = _normalize(*sums) if len(sums) == 2 else (sums[0] >> LIMB, sums[0] & _LOW)
        grid = layout.per_step(exponent.astype(np.int64), 0, np.max) - self.acc.frac_bits
        return high, low, grid, self._specials(ca, cb, scale_nan)

    # --- per chunk: the step loop ----------------------------------------------------------------
    def run(self, ca, cb, sub_a, sub_b, scales_a, scales_b, words):
        """(step codes (rows, n_steps), rows to recompute by the reference (bool)) of a chunk of
        rows, a tile of whole steps (about CHUNK_PRODUCTS products) at a time."""
        terms = self._max_terms if self.route == "max" else self._fixed_terms
        step = self._max_step if self.route == "max" else self._fixed_step
        unit = max(1, self.layout.step // self.layout.k)  # blocks per tile are whole steps
        tile = max(unit, CHUNK_PRODUCTS // max(1, ca.shape[0] * self.layout.k) // unit * unit)
        codes = []
        refer = np.zeros(words.shape, dtype=bool)
        for first in range(0, ca.shape[1], tile):
            blocks = slice(first, first + tile)
            parts = terms(
                ca[:, blocks],
                cb[:, blocks],
                sub_a[:, blocks],
                sub_b[:, blocks],
                scales_a[:, blocks],
                scales_b[:, blocks],
            )
            for s in range(parts[-1].shape[1]):
                c = _C.from_words(words, self.acc.effective_c_zero_exponent)
                code, misfit = step(c, *(part[:, s] for part in parts))
                refer |= misfit
                codes.append(code)
                words = fp32_words(code, self.acc)
        return np.stack(codes, axis=1), refer

    def _max_step(self, c: _C, values, anchors, specials):
        """One step of anchor="max": S = the terms and C cut to the grid 2^(A - F), A =
        max(anchors, e_C), summed exactly in float64 (see the module docstring)."""
        acc = self.acc
        cut = np.trunc if acc.shift_rounding == "truncate" else np.rint
        lsb = np.maximum(anchors, c.anchor).astype(np.int64) - acc.frac_bits
        # beyond +-1000 every term is 0 (no counting term) or C is far below the grid: the clip
        # changes no cut value and keeps the power of two finite
        unit = np.ldexp(1.0, np.minimum(np.maximum(-lsb, -1000), 1000).astype(np.int32))
        terms = values * unit[:, None]
        cut(terms, out=terms)
        total = terms @ self.ones
        c_exponent = np.minimum(np.maximum(c.exponent - lsb, -1000), 1000).astype(np.int32)
        total += cut(np.ldexp(c.signed().astype(np.float64), c_exponent))
        special = _combine(specials, c.special)
        magnitude = np.abs(total).astype(np.int64)
        return round_output(total < 0, magnitude, lsb, special, acc), np.zeros(total.shape, dtype=bool)

    def _fixed_step(self, c: _C, high, low, grid, specials):
        """One step of anchor="fixed": V = C + P * 2^g exactly (or D = C under bypass)."""
        acc = self.acc
        negative, magnitude, exponent, fits = self._fixed_sum(c, high, low, grid)
        special = _combine(specials, c.special)
        if acc.bypass is not None:
            bypass = (c.special == FINITE) & (c.anchor - 23 - grid > acc.bypass)
            negative = np.where(bypass, c.negative, negative)
            magnitude = np.where(bypass, c.significand, magnitude)
            exponent = np.where(bypass, c.exponent, exponent)
            fits |= bypass
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


# --- entry point --------------------------------------------------------------------------------
def dot_general_steps(a: Operand, b: Operand, acc: Accumulator, rows: int = 1, n_blocks: int | None = None, c=None):
    """Fused DotGeneral of ``rows`` rows of ``n_blocks`` block pairs each (codes of shape
    (rows * n_blocks, k), row-major): the same results as :func:`mxsim.ref.dot.dot_general` with
    ``accumulate="fused"`` on each row.

    ``c``: each row's accumulator input C as fp32 words (shape (rows,), integers below 2^32), or
    None for C = +0. Returns (output codes (rows,), every step's output code (rows, n_steps)),
    uint32 for fp32 storage, uint16 for bf16 and fp16; with no products the output is C rounded.
    """
    fmt_a, fmt_b = check_fused_operands(a, b, acc)
    n = n_blocks if n_blocks is not None else (a.codes.shape[0] // rows if rows else 0)
    if rows * n != a.codes.shape[0]:
        raise ValueError(f"{a.codes.shape[0]} blocks do not make {rows} rows of {n} blocks")
    words = np.zeros(rows, dtype=np.int64) if c is None else np.asarray(c).astype(np.int64).reshape(rows)
    kernel = _FusedKernel(fmt_a, fmt_b, acc, n)
    layout = kernel.layout
    dtype = np.uint32 if acc.output_storage == "fp32" else np.uint16
    steps = np.zeros((rows, layout.n_steps), dtype=dtype)
    refer = np.ones(rows, dtype=bool) if kernel.route == "reference" else np.zeros(rows, dtype=bool)
    if kernel.route != "reference" and rows and layout.n_steps:
        _run_chunks(kernel, a, b, rows, n, words, steps, refer)
    codes = steps[:, -1].copy() if layout.n_steps else _round_c(words, acc).astype(dtype)
    if refer.any():
        _by_reference(np.flatnonzero(refer), a, b, fmt_a, fmt_b, acc, n, words, codes, steps)
    return codes, steps


def _run_chunks(kernel: _FusedKernel, a: Operand, b: Operand, rows: int, n: int, words, steps, refer) -> None:
    """Run the kernel over chunks of rows (on up to two threads), filling ``steps`` and ``refer``."""
    k = kernel.layout.k
    empty = np.zeros((rows, n, 0), np.uint8)
    arrays = [
        a.codes.reshape(rows, n, k),
        b.codes.reshape(rows, n, k),
        empty if a.subscales is None else a.subscales.reshape(rows, n, -1),
        empty if b.subscales is None else b.subscales.reshape(rows, n, -1),
        a.scales.reshape(rows, n),
        b.scales.reshape(rows, n),
        words,
        steps,
        refer,
    ]

    def chunk(start, stop, ca, cb, sub_a, sub_b, sc_a, sc_b, c_words, out_steps, out_refer):
        out_steps[...], out_refer[...] = kernel.run(ca, cb, sub_a, sub_b, sc_a, sc_b, c_words)

    # at least four chunks when there are enough rows, so that both threads work
    map_chunks(chunk, rows, *arrays, chunk=min(ROW_CHUNK, max(1, -(-rows // 4))))


def _round_c(words: np.ndarray, acc: Accumulator) -> np.ndarray:
    """C rounded to the output (the result of a DotGeneral without products)."""
    negative, significand, exponent, special = float32_parts(words.astype(np.uint32).view(np.float32))
    return round_output(negative, significand, exponent, special, acc)


def _by_reference(rows_index, a: Operand, b: Operand, fmt_a, fmt_b, acc: Accumulator, n: int, words, codes, steps):
    """Recompute some rows with the reference model, in place (exact Python integers)."""
    for r in rows_index:
        blocks_a = [a.block(r * n + j) for j in range(n)]
        blocks_b = [b.block(r * n + j) for j in range(n)]
        result = ref_dot.dot_general(blocks_a, blocks_b, fmt_a, fmt_b, acc, c=fp32_bits(int(words[r])))
        codes[r] = result.code
        steps[r] = result.steps
