"""The rounding classes of quantized elements: ``tie``, ``carry`` and ``saturation``, from the
exact scaled value q = |x| / 2^(E - tau) and the magnitude of the element code it became. The
scalar version (one block's elements, for :meth:`QuantizeSuite.compute`) and the array version
(for ``compute_batch``) sit side by side and follow one rule. Both compute in binary64, exactly:
q is an fp32 input times a power of two within binary64's range, the grid magnitudes of these
narrow elements (at most 16 significant bits) and their pairwise sums are exact, and floor(log2)
is read off the exponent.

* the grid is the set of finite magnitudes the element can take with the input's sign (MXINT8's
  magnitude 2 only for negative inputs under ``int8_allow_neg2``);
* ``saturation``: q above the grid's largest magnitude (the quantizer clamps it to +-max);
* otherwise, q strictly between two adjacent grid magnitudes a < q < b: ``tie`` when
  q = (a + b) / 2 exactly, ``carry`` when the code's magnitude lies in a higher binade than q
  (floor(log2 r) > floor(log2 q): the rounding carried into the next binade).

q on the grid, zeros, NaN and Inf elements have none of these classes.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from fractions import Fraction
from functools import lru_cache
from typing import Iterable

import numpy as np

from ..ref.decode import decode

__all__ = ["magnitude_grid", "rounding_classes", "rounding_class_arrays"]


@lru_cache(maxsize=None)
def magnitude_grid(element, negative: bool, int8_allow_neg2: bool = False) -> tuple[float, ...]:
    """The finite magnitudes an element code of that sign can hold, ascending (zero first), as
    exact binary64 values."""
    twos_complement = element.kind == "int" and element.encoding == "twos_complement"
    magnitudes = {Fraction(0)}
    for code in range(1 << element.width):
        value = decode(code, element)
        if not value.is_finite or bool(value.sign) != negative:
            continue
        if twos_complement and code == element.sign_mask and not int8_allow_neg2:
            continue
        magnitudes.add(value.magnitude)
    grid = tuple(float(m) for m in sorted(magnitudes))
    assert all(Fraction(g) == m for g, m in zip(grid, sorted(magnitudes))), "a grid magnitude binary64 cannot hold"
    return grid


def rounding_classes(xs: Iterable[float], shifts: Iterable[int], results: Iterable[float], grids) -> set[str]:
    """The classes of a block's elements: input x_i (a float holding an fp32 value; zeros, NaN and
    Inf have no class), q_i = |x_i| * 2^shift_i (shift_i = tau_j - E, exact in binary64), the
    magnitude results_i of the code it was given, and ``grids`` the (positive, negative)
    :func:`magnitude_grid` pair (x_i's sign picks one)."""
    classes = set()
    positive, negative = grids
    ldexp, frexp, isfinite = math.ldexp, math.frexp, math.isfinite
    for x, shift, result in zip(xs, shifts, results):
        if not x or not isfinite(x):
            continue
        q = ldexp(abs(x), shift)
        grid = negative if x < 0 else positive
        if q > grid[-1]:
            classes.add("saturation")
            continue
        i = bisect_left(grid, q)
        above = grid[i]
        if above == q:
            continue
        if 2 * q == grid[i - 1] + above:
            classes.add("tie")
        # a carry puts the result in a higher binade than q, so above q (result 0 never carries)
        if result > q and frexp(result)[1] > frexp(q)[1]:
            classes.add("carry")
    return classes


def _floor_log2(x: np.ndarray) -> np.ndarray:
    return np.frexp(x)[1] - 1


def rounding_class_arrays(q: np.ndarray, grid: tuple[Fraction, ...], result: np.ndarray):
    """(tie, carry, saturation) boolean arrays of :func:`rounding_classes` for float64 arrays of
    q (> 0, exact) and result magnitudes (exact), one grid for all."""
    points = np.array(grid)
    saturation = q > points[-1]
    i = np.minimum(np.searchsorted(points, q), len(points) - 1)
    between = ~saturation & (points[i] != q)
    tie = between & (2 * q == points[np.maximum(i - 1, 0)] + points[i])
    safe = np.where(result > 0, result, 1.0)
    carry = between & (result > 0) & (_floor_log2(safe) > _floor_log2(q))
    return tie, carry, saturation
