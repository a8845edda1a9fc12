"""Code tables of fused steps: every element and scale code's value, anchor and specials, and how products fall into steps.

Tables are built once per format (:func:`_element`, :func:`_scale`; float64 values are exact,
exponents int32/int64) and read by :class:`mxsim.fast.fused_kernel.FusedKernel` with ``np.take``;
:class:`_Layout` maps a row's blocks and products to steps (docs/numerics.md section 4.1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from ..options.accumulate import output_float_format
from ..ref import dot as ref_dot
from .dot_tables import _terms
from .fused_wide import _bit_length

FLOAT_EXACT = 1 << 53  # every integer below this is a float64
NO_ANCHOR = -(1 << 24)  # anchor exponent of a term that does not count
COUNTS = -(1 << 22)  # anchor exponents above this belong to counting terms


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
    f = ref_dot.frac_bits(element)
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
    f = ref_dot.frac_bits(scale_fmt)
    value = np.ldexp(t.significand.astype(np.float64), (t.exponent - f).astype(np.int32))
    return _Scale(value, t.exponent.astype(np.int32), t.nan, int(t.significand.max()).bit_length())


def _grid_integers(e: _Element) -> tuple[np.ndarray, int, int]:
    """(q, Emin, bits): q = +-significand * 2^(exponent - Emin) of every code as float64 (+0 for
    zeros, Inf and NaN), Emin the smallest exponent of a nonzero finite code, bits of max |q|."""
    counts = e.significand != 0
    emin = int(e.exponent[counts].min())
    q = np.where(counts, e.significand << np.where(counts, e.exponent - emin, 0), 0)
    return np.where(e.negative, -q, q).astype(np.float64), emin, int(q.max()).bit_length()


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
    """Where an anchor exponent of :meth:`FusedKernel._anchor_fields` counts: above its sentinel
    (int8/int16: the type's minimum; int32/int64: COUNTS)."""
    if anchor.dtype in (np.int8, np.int16):
        return anchor > np.iinfo(anchor.dtype).min
    return anchor > COUNTS


def _sum(x: np.ndarray, axis: int) -> np.ndarray:
    """x.sum(axis) of an integer array along a short last axis (einsum: several times faster)."""
    assert axis == x.ndim - 1
    return np.einsum("...j->...", x)
