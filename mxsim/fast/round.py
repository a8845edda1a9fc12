"""Array version of :func:`mxsim.ref.round.round_magnitude` for dyadic magnitudes.

The magnitude is ``significand / 2^shift`` with int64 significands below 2^62 and any int64
shift (negative shifts multiply). Same modes, same results as the reference.
"""

from __future__ import annotations

import numpy as np

__all__ = ["round_shifted"]


def round_shifted(
    significand: np.ndarray,
    shift: np.ndarray,
    rounding: str,
    negative: np.ndarray,
    rand_bits: np.ndarray | None = None,
    rand_width: int = 32,
) -> np.ndarray:
    """Round ``significand / 2^shift`` (element-wise, int64) to integers with ``rounding``.

    A negative ``shift`` multiplies; the caller guarantees the product fits in int64.
    ``stochastic`` adds ``rand_bits / 2^rand_width`` below the last kept bit and truncates.
    """
    # np.minimum/np.maximum rather than np.clip: same values, without clip's per-call overhead
    right = np.minimum(np.maximum(shift, 0), 63)
    kept = significand >> right
    remainder = significand - (kept << right)
    kept <<= np.minimum(np.maximum(-shift, 0), 63)
    if rounding == "rtz":
        return kept
    if rounding == "stochastic":
        # The top rand_width bits of the discarded fraction, then add and carry (see round.py).
        up_shift = np.minimum(np.maximum(rand_width - shift, 0), 63)
        down_shift = np.minimum(np.maximum(shift - rand_width, 0), 63)
        fraction = (remainder << up_shift) >> down_shift
        return kept + ((fraction + rand_bits) >> rand_width)
    inexact = remainder != 0
    if rounding == "rup":
        return kept + (inexact & ~negative)
    if rounding == "rdn":
        return kept + (inexact & negative)
    half = np.left_shift(1, np.maximum(right - 1, 0), dtype=np.int64)
    above = remainder > half
    tie = (remainder == half) & inexact
    if rounding == "rna":
        return kept + (above | tie)
    if rounding == "rne":
        return kept + (above | (tie & (kept & 1).astype(bool)))
    raise ValueError(f"rounding={rounding!r} is not allowed")
