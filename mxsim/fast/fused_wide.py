"""Wide integers, the accumulator input C and special outcomes of fused steps (docs/numerics.md section 4.1).

A wide integer is H * 2^LIMB + L with 0 <= L < 2^LIMB (two int64 arrays, up to WIDE_BITS bits):
the exact step sums of anchor="fixed" (:mod:`mxsim.fast.fused_fixed`). :class:`_C` reads each
row's C from its fp32 word (Inf and NaN as special classes, -0 kept in ``negative``);
:func:`_combine` joins the special outcomes (NaN, +-Inf, FINITE) of two parts of a sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..options import Accumulator
from .encode import floor_log2_int64
from .output import FINITE, NAN, NEG_INF, POS_INF, float32_parts

LIMB = 40  # bits of the low limb of a wide integer H * 2^LIMB + L
WIDE_BITS = 60 + LIMB  # |H| < 2^60 keeps sums of two wide values inside int64
_LOW = (1 << LIMB) - 1


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
