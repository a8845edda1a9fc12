"""Vectorized fused multiply-accumulate steps (``accumulate="fused"``; docs/numerics.md section 4.1,
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
counts for the anchor iff one of its products has two finite nonzero elements (``convert_elements``:
an element's anchor exponent is read in that format; ``interleave_steps``: each block's codes are
permuted into the order the steps take them, :meth:`Accumulator.product_order`). C counts with
e_C = max(floor(log2 |C|), ``c_min_exponent`` or -126), or ``c_zero_exponent`` for a zero C.

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
* ``anchor="fixed"`` in float64, the usual case of the above (FP8/FP6/FP4 products that are not
  cut on the grid and whose step sums are exact in float64, an fp32 output without ftz, rne/rtz/
  rup/rdn; :meth:`_FusedKernel._float_fixed_tables`): P * 2^g is an exact float64; C is added with
  one float addition whose exact error comes from TwoSum, the sum is rounded to odd at 53 bits
  with it, and one cast rounds to fp32. Lanes with a bypassed C, a result from 2^127 or specials
  take the integer step above.
* the reference (:func:`mxsim.ref.dot.dot_general`, row by row) for configurations outside these
  bounds (F beyond 44 with 64 product terms and ``anchor="max"``, block terms of FP8 E5M2, whose
  group sums exceed 53 bits, ...): correct, slow.

Specials (decided before the integer sum, as the hardware's side path): a NaN C, a NaN scale in
the step's blocks, a NaN product (NaN element, Inf x 0) or Inf terms of both signs (Inf products
and an Inf C) make the step NaN (``nan_bits``); other Inf products or an Inf C make it +-Inf. An
exactly zero step sum V gives +0, whatever the signs of C and the products, but where a zero
product sum passes C on (:meth:`Accumulator.zero_sum_passes_c`: D = C, -0 kept).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from ..options import Accumulator
from ..options.accumulate import output_float_format
from ..ref import dot as ref_dot
from ..ref.fused import integer_offset
from ..ref.output import fp32_bits
from ..ref.round import CUT_ROUNDING
from .chunks import map_chunks
from .dot import FLOAT_CUTS, Operand, _check_operands, _rows_of, _terms, float32_parts
from .encode import floor_log2_int64
from .promote import group_blocks, promoted_steps
from .output import FINITE, FLOAT32_ROUNDINGS, NAN, NEG_INF, POS_INF, fp32_round, fp32_words, round_output
from .round import round_shifted

__all__ = ["check_fused_operands", "dot_general_steps"]

FLOAT_EXACT = 1 << 53  # every integer below this is a float64
LIMB = 40  # bits of the low limb of a wide integer H * 2^LIMB + L
WIDE_BITS = 60 + LIMB  # |H| < 2^60 keeps sums of two wide values inside int64
NO_ANCHOR = -(1 << 24)  # anchor exponent of a term that does not count
COUNTS = -(1 << 22)  # anchor exponents above this belong to counting terms
ROW_CHUNK = 8192  # rows per chunk at most: the step loop's operations run on arrays of this length
MIN_ROW_CHUNK = 1024  # rows per chunk at least (but for the last): a chunk costs a fixed few ms of Python besides
CHUNK_PRODUCTS = 1 << 20  # products per tile of a chunk (about 8 MB per float64 array)


def check_fused_operands(a: Operand, b: Operand, acc: Accumulator):
    """The format pair of two operands for fused steps, or ValueError: the settings must suit the
    formats (:meth:`Accumulator.check_block_format`), and fused steps take no tensor scale (the
    hardware multiplies NVFP4's tensor scale in outside the MMA)."""
    fmt_a, fmt_b = _check_operands(a, b, paired=False)
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
            special = np.flatnonzero(self.nan | self.inf)
            if special.size == 1:  # FNUZ and P3109 NaN 0x80: one comparison instead of a lookup
                return codes == special[0]
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


def _read(e: _Element, offset: int, zero_exponent: int | None, convert: str | None = None) -> _Element:
    """An element table as fused products read it: exponents raised by ``offset`` (an integer
    element read as its plain code, ``int_elements="integer"``); with ``convert`` (``convert_elements``)
    a nonzero code's anchor its exponent in that format, max(floor(log2 |x|), emin) (fp16: an E4M3
    subnormal's own exponent; Hopper's mma.sync); with ``zero_exponent``, a zero code's anchor that
    exponent (it counts for the anchor; CDNA3)."""
    if not offset and zero_exponent is None and convert is None:
        return e
    anchor = e.anchor
    if convert is not None:
        own = _bit_length(e.significand) - 1 + e.exponent - e.frac_bits  # floor(log2 |x|) of a nonzero code
        anchor = np.where(anchor != NO_ANCHOR, np.maximum(own, output_float_format(convert).emin), NO_ANCHOR)
    anchor = np.where(anchor != NO_ANCHOR, anchor + offset, NO_ANCHOR)
    if zero_exponent is not None:
        anchor = np.where(e.zero, zero_exponent + offset, anchor)
    value = e.value * 2.0**offset
    return replace(e, value=value, anchor=anchor.astype(np.int32), exponent=e.exponent + offset)


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


def _grid_integers(e: _Element) -> tuple[np.ndarray, int, int]:
    """(q, Emin, bits): q = +-significand * 2^(exponent - Emin) of every code as float64 (+0 for
    zeros, Inf and NaN), Emin the smallest exponent of a nonzero finite code, bits of max |q|."""
    counts = e.significand != 0
    emin = int(e.exponent[counts].min())
    q = np.where(counts, e.significand << np.where(counts, e.exponent - emin, 0), 0)
    return np.where(e.negative, -q, q).astype(np.float64), emin, int(q.max()).bit_length()


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


def _counts(anchor: np.ndarray) -> np.ndarray:
    """Where an anchor exponent of :meth:`_FusedKernel._anchor_fields` counts: above its sentinel
    (int8/int16: the type's minimum; int32/int64: COUNTS)."""
    if anchor.dtype in (np.int8, np.int16):
        return anchor > np.iinfo(anchor.dtype).min
    return anchor > COUNTS


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
    def from_words(cls, words: np.ndarray, acc: Accumulator) -> _C:
        """C from fp32 words; e_C = max(floor(log2 |C|), ``c_min_exponent``) for a nonzero C (fp32's
        -126, or fp16's -14 for an fp16 C), ``effective_c_zero_exponent`` for a zero C."""
        negative, significand, exponent, special = float32_parts(words.astype(np.uint32).view(np.float32))
        field = (words >> 23) & 0xFF
        floor = acc.effective_c_min_exponent
        anchor = np.where(significand != 0, np.maximum(np.where(field > 0, field - 127, -126), floor),
                          acc.effective_c_zero_exponent)
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


# --- float64 steps of anchor="fixed" ------------------------------------------------------------
class _FloatLanes:
    """The float64 steps of a tile of anchor="fixed" (:meth:`_FusedKernel._float_fixed_tables`):
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


# --- the kernel ---------------------------------------------------------------------------------
class _FusedKernel:
    """Fused steps of one format pair and accumulator over chunks of rows (see the module
    docstring for the routes and their bounds)."""

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

    def _late_bound(self, ratio: float) -> bool:
        """Whether the late-join steps are exact in float64: each partial sum of at most
        ceil(step / n) products below ratio * 2^F units, the product sum S below n times that,
        and the total on the grid 2^(E' - G), G = max(sum_frac_bits, c_frac_bits), below
        S * 2^(G - F) + 2^(G + 1) (C below 2^(e_C + 1) <= 2^(E' + 1)); all under 2^53."""
        acc, n = self.acc, self.acc.partial_sums
        half = -(-self.layout.step // n) * ratio * 2.0**acc.frac_bits
        widest = max(acc.sum_frac_bits, acc.c_frac_bits)
        return n * half * 2.0 ** max(widest - acc.frac_bits, 0) + 2.0 ** (widest + 2) < FLOAT_EXACT

    def _fixed_bits(self) -> int:
        """An upper bound on the bits of a step's product sum on the fixed grid: each product is
        Ma*Mb * 2^shift with shift <= Ea_max + Eb_max - fa - fb + F, and a step adds ``step``."""
        ea, eb = self.ea, self.eb
        largest_shift = int(ea.exponent.max() + eb.exponent.max()) - ea.frac_bits - eb.frac_bits + self.acc.frac_bits
        significand_bits = int(ea.significand.max() * eb.significand.max()).bit_length()
        if significand_bits > 62 - LIMB or largest_shift > 2 * LIMB:
            return WIDE_BITS + 1  # beyond _shift_left's reach
        return significand_bits + max(largest_shift, 0) + (self.layout.step - 1).bit_length()

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

    def _pass_c(self, code, c: _C, products_zero, special):
        """``zero_product_sum="pass_c"``: D = C (rounded to the output, its sign kept) where the
        step's cut product sum is exactly zero; the codes unchanged otherwise."""
        if self.acc.zero_product_sum != "pass_c" or not products_zero.any():
            return code
        return np.where(products_zero, round_output(c.negative, c.significand, c.exponent, special, self.acc), code)

    # --- the late join (CDNA3: partial sums, C after the products) -------------------------------
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


# --- entry point --------------------------------------------------------------------------------
def dot_general_steps(a: Operand, b: Operand, acc: Accumulator, shape_a: tuple, shape_b: tuple, n_blocks: int,
                      c=None, keep_steps: bool = False):
    """Fused DotGeneral of rows of ``n_blocks`` block pairs, the rows broadcast NumPy style (as
    :func:`mxsim.fast.dot.dot_general_broadcast`: ``a`` holds prod(shape_a) rows of ``n_blocks``
    blocks, codes of shape (prod(shape_a) * n_blocks, k), row-major; ``b`` likewise; the result
    rows run over lead = np.broadcast_shapes(shape_a, shape_b)): on each row the same results as
    :func:`mxsim.ref.dot.dot_general` with ``accumulate="fused"``.

    ``c``: each result row's accumulator input C as fp32 words (shape (prod(lead),), integers
    below 2^32), or None for C = +0. Returns (output codes of shape lead, every step's output
    code of shape lead + (n_steps,) if ``keep_steps`` else None), uint32 for fp32 storage, uint16
    for bf16 and fp16; with no products the output is C rounded.

    Memory: no broadcast copy of an operand is made; beyond the results, the temporaries are
    bounded by ROW_CHUNK rows and CHUNK_PRODUCTS products per chunk, whatever the shapes.
    """
    fmt_a, fmt_b = check_fused_operands(a, b, acc)
    lead = np.broadcast_shapes(tuple(shape_a), tuple(shape_b))
    rows = int(np.prod(lead, dtype=np.int64))
    for name, op, shape in (("a", a, shape_a), ("b", b, shape_b)):
        if op.codes.shape[0] != int(np.prod(shape, dtype=np.int64)) * n_blocks:
            raise ValueError(f"operand {name}: {op.codes.shape[0]} blocks do not make rows {tuple(shape)} of {n_blocks} blocks")
    words = np.zeros(rows, dtype=np.int64) if c is None else np.asarray(c).astype(np.int64).reshape(rows)
    if acc.promote_every is not None and group_blocks(acc, fmt_a.block_size):  # promotion (mxsim.fast.promote)
        return promoted_steps(dot_general_steps, a, b, acc, tuple(shape_a), tuple(shape_b), n_blocks, words, keep_steps)
    take_a, take_b = _rows_of(a, shape_a, lead, n_blocks), _rows_of(b, shape_b, lead, n_blocks)
    kernel = _FusedKernel(fmt_a, fmt_b, acc, n_blocks)
    n_steps = kernel.layout.n_steps
    dtype = np.uint32 if acc.output_storage == "fp32" else np.uint16
    codes = np.zeros(rows, dtype=dtype)
    steps = np.zeros((rows, n_steps), dtype=dtype) if keep_steps else None
    refer = np.full(rows, kernel.route == "reference" or acc.promote_every is not None)  # (groups inside blocks)
    if not n_steps:
        codes = _round_c(words, acc).astype(dtype)
    elif rows and not refer[0]:
        _run_chunks(kernel, take_a, take_b, rows, n_blocks, words, codes, steps, refer)
    if refer.any():
        _by_reference(np.flatnonzero(refer), take_a, take_b, fmt_a, fmt_b, acc, n_blocks, words, codes, steps)
    return codes.reshape(lead), (steps.reshape(lead + (n_steps,)) if keep_steps else None)


def _run_chunks(kernel: _FusedKernel, take_a, take_b, rows: int, n: int, words, codes, steps, refer) -> None:
    """Run the kernel over chunks of rows (on up to two threads), filling ``codes``, ``steps``
    (if not None) and ``refer``; each chunk fetches its tiles of blocks from ``take_a`` and
    ``take_b`` (see :func:`mxsim.fast.dot._rows_of`)."""
    k = kernel.fmt_a.block_size

    def fetch(start, stop, j0, j1):
        arrays = []
        for take in (take_a, take_b):
            op = take(start, stop, j0, j1)
            arrays.append((op.codes.reshape(stop - start, j1 - j0, k), op.subscales, op.scales.reshape(stop - start, -1)))
        (ca, sub_a, sc_a), (cb, sub_b, sc_b) = arrays
        subs = [np.zeros((stop - start, j1 - j0, 0), np.uint8) if sub is None else sub.reshape(stop - start, j1 - j0, -1)
                for sub in (sub_a, sub_b)]
        return ca, cb, subs[0], subs[1], sc_a, sc_b

    def chunk(start, stop, c_words, out_codes, out_refer, *out_steps):
        last, kept, misfit = kernel.run(lambda j0, j1: fetch(start, stop, j0, j1), n, c_words, bool(out_steps))
        out_codes[...], out_refer[...] = last, misfit
        if out_steps:
            out_steps[0][...] = kept

    # at least four chunks when there are enough rows, so that both threads work; a few hundred rows (a golden
    # run aiming C) in one chunk, on the calling thread
    arrays = [words, codes, refer] + ([steps] if steps is not None else [])
    map_chunks(chunk, rows, *arrays, chunk=min(ROW_CHUNK, max(MIN_ROW_CHUNK, -(-rows // 4))))


def _round_c(words: np.ndarray, acc: Accumulator) -> np.ndarray:
    """C rounded to the output (the result of a DotGeneral without products)."""
    negative, significand, exponent, special = float32_parts(words.astype(np.uint32).view(np.float32))
    return round_output(negative, significand, exponent, special, acc)


def _by_reference(rows_index, take_a, take_b, fmt_a, fmt_b, acc: Accumulator, n: int, words, codes, steps) -> None:
    """Recompute some rows with the reference model, in place (exact Python integers)."""
    for r in rows_index:
        op_a, op_b = take_a(r, r + 1, 0, n), take_b(r, r + 1, 0, n)
        blocks_a, blocks_b = [op_a.block(j) for j in range(n)], [op_b.block(j) for j in range(n)]
        result = ref_dot.dot_general(blocks_a, blocks_b, fmt_a, fmt_b, acc, c=fp32_bits(int(words[r])))
        codes[r] = result.code
        if steps is not None:
            steps[r] = result.steps
