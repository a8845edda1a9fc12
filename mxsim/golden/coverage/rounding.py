"""The rounding-decision classes of one rounding (element encode, block quantize under any option or
profile, dequantize), computed from the exact value rounded, its output interval and the input's
resolution (docs/numerics.md section 3.3). One routine, :func:`decision_flags`, for every suite kind, on
NumPy arrays of float64 (every quantity below is exact in binary64, see the bounds there).

For a magnitude x > 0 (finite, the input as the rounding reads it) rounded onto an output grid:
lo <= x < hi are the adjacent output magnitudes around it (both on the grid, in x's domain: the
element grid times the block's divisor D for a quantize), u = hi - lo, t = x - lo; r is the
input's resolution at x (the weight of its last bit: fp32's 2^(max(floor(log2 x), -126) - 23),
2^-150 for a subnormal read ``as_normal``, an element's last bit times its scale for a
dequantize). The guard bit is the bit of weight u/2, the sticky bits are those of weights u/4
(the top sticky position) down to r (the bottom one). Classes:

* ``exact``: t = 0; ``below_half``: 0 < 2t < u; ``tie``: 2t = u; ``above_half``: 2t > u;
* ``near_tie_top``: 4t = 3u (guard and the top sticky bit only); ``near_tie_bottom``: 2t = u + 2r
  (guard and the bottom sticky bit only); ``near_tie_below``: 2t = u - 2r (guard clear, every
  sticky bit set); the three need 4r <= u (a sticky bit exists);
* ``subnormal_near_tie``: one of the three where hi <= the output's smallest normal (a subnormal
  band, or the zero band under the smallest subnormal);
* per band (:data:`BAND_CLASSES`): ``near_tie_top_<band>`` and ``near_tie_bottom_<band>`` where the
  interval lies in the normal range (lo >= the smallest normal), in the zero band (lo = 0, hi the
  smallest subnormal s) or in the subnormal binade ``sub<j>`` = [2^(j-1) s, 2^j s), j = 1, 2, 3:
  a band is a binade of the subnormal range (every subnormal interval has width s, so j is the bit
  length of lo / s). Every subnormal band of an MX element format (at most 3 mantissa bits) has its
  class; of fp32, fp16 and bf16 outputs the three lowest (where low-precision values land), the
  others counted by ``subnormal_near_tie`` only (the 64-bit flags word has no room for 23 bands);
* ``increment`` / ``truncate``: the result's magnitude above / below x (the rounding direction,
  which depends on the mode and on the sign); ``carry``: an increment onto hi where hi (in the
  element's own units) is a power of two: the result lies in a higher binade than x;
* ``zero_result_sign``: a negative x whose result has magnitude 0;
* ``saturation``: x above the grid's largest magnitude (no decision class then).

Zeros, NaN and Inf are not roundings (no class here). Bounds: x has at most 24 significant bits,
D at most 28 (an fp32 tensor scale times a UE4M3 scale) and the element grid at most 16, so grid
points times D have at most 44 and x - lo, hi - lo (of x's order) at most 53: the comparisons
are exact.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ...ref.decode import decode
from .catalogue import flag_bits

__all__ = [
    "DECISION_CLASSES", "BANDS", "BAND_CLASSES", "band_class", "format_bands", "magnitude_grid", "grid_interval",
    "ieee_interval", "decision_flags", "fp32_resolution",
]

DECISION_CLASSES = (
    "exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
    "subnormal_near_tie", "increment", "truncate", "carry", "zero_result_sign", "saturation",
)
BANDS = ("normal", "zero_band", "sub1", "sub2", "sub3")
BAND_CLASSES = tuple(f"near_tie_{kind}_{band}" for band in BANDS for kind in ("top", "bottom"))
_BIT = {name: flag_bits([name]) for name in DECISION_CLASSES + BAND_CLASSES}


@lru_cache(maxsize=None)
def magnitude_grid(element, negative: bool, int8_allow_neg2: bool = False) -> tuple[float, ...]:
    """The finite magnitudes an element code of that sign can hold, ascending (zero first), as
    exact binary64 values (MXINT8's magnitude 2 only for negative values under ``int8_allow_neg2``)."""
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


def fp32_resolution(x, min_exponent: int = -126):
    """2^(max(floor(log2 x), min_exponent) - 23) of float64 magnitudes x > 0 (an array, or a
    float): the last bit of an fp32 value (``min_exponent`` -127 for fp32 subnormals read
    ``as_normal``)."""
    if not isinstance(x, np.ndarray):
        return math.ldexp(1.0, max(math.frexp(x)[1] - 1, min_exponent) - 23)
    return np.ldexp(1.0, np.maximum(np.frexp(x)[1] - 1, min_exponent) - 23)


def grid_interval(x, divisor, grid: tuple[float, ...]):
    """(lo, hi, saturated) element-grid magnitudes with lo * D <= x < hi * D (in the element's
    units), for x > 0 and divisors D > 0 (arrays of one shape, or D a scalar; or floats x and D,
    then floats and a bool); at or above the
    grid's largest magnitude g, [g, 2g - g') (g' the one below: on the grid, x = g is exact);
    ``saturated``: x above g times D."""
    if not isinstance(x, np.ndarray):  # one float: the same steps with bisect (no NumPy call overhead)
        n = len(grid)
        i = min(max(bisect_right(grid, x / divisor) - 1, 0), n - 2)
        if grid[i] * divisor > x and i > 0:
            i -= 1
        if grid[i + 1] * divisor <= x and i < n - 2:
            i += 1
        if x >= grid[-1] * divisor:
            return grid[-1], 2 * grid[-1] - grid[-2], x > grid[-1] * divisor
        return grid[i], grid[i + 1], False
    points = np.asarray(grid)
    n = len(points)
    d = np.broadcast_to(np.asarray(divisor, dtype=np.float64), x.shape)
    i = np.clip(np.searchsorted(points, x / d, side="right") - 1, 0, n - 2)
    # x / D is rounded where D is not a power of two: one step either way fixes it exactly
    i = np.where((points[i] * d > x) & (i > 0), i - 1, i)
    i = np.where((points[np.minimum(i + 1, n - 1)] * d <= x) & (i < n - 2), i + 1, i)
    saturated = x > points[-1] * d
    lo, hi = points[i], points[i + 1]
    top = x >= points[-1] * d  # the largest magnitude itself is exact: the interval above it (virtual)
    return np.where(top, points[-1], lo), np.where(top, 2 * points[-1] - points[-2], hi), saturated


def ieee_interval(x: np.ndarray, mantissa_bits: int, emin: int, max_finite: float):
    """(lo, hi, over) of an IEEE-style output (subnormals kept) around float64 magnitudes x > 0:
    lo = x cut to the output's spacing 2^(max(floor(log2 x), emin) - mantissa_bits), hi = lo + that
    spacing; ``over``: x above ``max_finite`` (an overflow, no rounding class)."""
    ulp = np.ldexp(1.0, np.maximum(np.frexp(x)[1] - 1, emin) - mantissa_bits)
    lo = np.floor(x / ulp) * ulp
    return lo, lo + ulp, x > max_finite


def decision_flags(x, lo, hi, resolution, result, negative, min_normal, hi_unit=None):
    """The flags word (int64) of each rounding, from arrays of one shape (or floats and a bool: an
    int), the same classes either way: magnitudes x > 0, their
    interval [lo, hi) and the result's magnitude in x's domain, the input ``resolution`` r at x,
    ``negative`` (bool), ``min_normal`` (the output's smallest normal magnitude in x's domain, an
    array or scalar; 0: no subnormal band). ``hi_unit``: hi in the output's own units (for
    ``carry``; default hi). ``saturation`` is the caller's (see :func:`grid_interval`)."""
    hi_unit = hi if hi_unit is None else hi_unit
    if isinstance(x, np.ndarray):
        return _array_flags(x, lo, hi, resolution, result, negative, min_normal, hi_unit)
    t, u, r = x - lo, hi - lo, resolution
    sticky = 4 * r <= u
    top = sticky and 4 * t == 3 * u
    bottom = sticky and 2 * t == u + 2 * r
    below = sticky and 2 * t == u - 2 * r
    if isinstance(hi_unit, int):  # Python integers (a dyadic value on a common grid): of any size
        power_of_two = hi_unit > 0 and not hi_unit & (hi_unit - 1)
    else:
        power_of_two = math.frexp(hi_unit)[0] == 0.5
    increment = result > x
    cases = [
        ("exact", t == 0),
        ("below_half", t > 0 and 2 * t < u),
        ("tie", 2 * t == u),
        ("above_half", 2 * t > u),
        ("near_tie_top", top),
        ("near_tie_bottom", bottom),
        ("near_tie_below", below),
        ("subnormal_near_tie", (top or bottom or below) and hi <= min_normal),
        ("increment", increment),
        ("truncate", result < x),
        ("carry", increment and result == hi and power_of_two),
        ("zero_result_sign", negative and result == 0),
    ]
    word = sum(_BIT[name] for name, hit in cases if hit)
    if top or bottom:  # the per-band class of a near-tie at the top or bottom
        word |= _band_flags(lo, hi, u, min_normal, top, bottom)
    return word


def _array_flags(x, lo, hi, r, result, negative, min_normal, hi_unit) -> np.ndarray:
    """:func:`decision_flags` of arrays: each class ORed in where it holds (the per-band classes
    computed only at the near-ties at the top or bottom, which alone have one)."""
    t, u = x - lo, hi - lo
    twice_t = 2 * t
    sticky = 4 * r <= u
    top = sticky & (2 * twice_t == 3 * u)  # 4t = 3u (2 * 2t is 4t exactly)
    bottom = sticky & (twice_t == u + 2 * r)
    below = sticky & (twice_t == u - 2 * r)
    increment = result > x
    flags = np.zeros(np.shape(x), dtype=np.int64)
    cases = [
        ("exact", t == 0),
        ("below_half", (t > 0) & (twice_t < u)),
        ("tie", twice_t == u),
        ("above_half", twice_t > u),
        ("near_tie_top", top),
        ("near_tie_bottom", bottom),
        ("near_tie_below", below),
        ("increment", increment),
        ("truncate", result < x),
        ("carry", increment & (result == hi) & (np.frexp(hi_unit)[0] == 0.5)),
        ("zero_result_sign", negative & (result == 0)),
    ]
    near = top | bottom | below
    if near.any():
        cases.append(("subnormal_near_tie", near & (hi <= min_normal)))
    for name, hit in cases:
        np.bitwise_or(flags, _BIT[name], out=flags, where=hit)
    banded = top | bottom
    if banded.any():
        at = np.nonzero(banded)
        lo_b, hi_b, u_b = (np.broadcast_to(a, flags.shape)[at] for a in (lo, hi, u))
        flags[at] |= _band_flags(lo_b, hi_b, u_b, np.broadcast_to(min_normal, flags.shape)[at], top[at], bottom[at])
    return flags


def _band_flags(lo, hi, u, min_normal, top, bottom):
    """The per-band near-tie classes (``near_tie_top_<band>``, ``near_tie_bottom_<band>``) of
    roundings with a near-tie at the top (``top``) or bottom (``bottom``): arrays, or floats and
    bools (an int)."""
    array = isinstance(lo, np.ndarray)
    subnormal = (hi <= min_normal) & (lo >= 0)
    band = (np.frexp(lo / u) if array else math.frexp(lo / u))[1]  # j: lo / u has j bits
    where = [("normal", (hi > min_normal) & (lo > 0)), ("zero_band", subnormal & (lo == 0))]
    where += [(f"sub{j}", subnormal & (band == j)) for j in (1, 2, 3)]
    cases = []
    for name, in_band in where:
        cases += [(f"near_tie_top_{name}", top & in_band), (f"near_tie_bottom_{name}", bottom & in_band)]
    if not array:
        return sum(_BIT[name] for name, hit in cases if hit)
    flags = np.zeros(np.shape(lo), dtype=np.int64)
    for name, hit in cases:
        np.bitwise_or(flags, _BIT[name], out=flags, where=hit)
    return flags


def band_class(kind: str, band: str) -> str:
    """The per-band near-tie class of ``kind`` ('top' or 'bottom') in ``band`` (one of :data:`BANDS`)."""
    if kind not in ("top", "bottom") or band not in BANDS:
        raise ValueError(f"kind={kind!r}, band={band!r}: expected top|bottom and one of {', '.join(BANDS)}")
    return f"near_tie_{kind}_{band}"


def format_bands(fmt) -> tuple[str, ...]:
    """The :data:`BANDS` a float format's roundings have: ``normal``, and where it keeps subnormals
    (with at least one mantissa bit) the zero band and its subnormal binades ``sub1`` .. ``sub<m>``
    (at most ``sub3``). Other formats: ``normal`` only."""
    if fmt.kind != "float" or not fmt.subnormals or fmt.mantissa_bits < 1:
        return ("normal",)
    return ("normal", "zero_band") + tuple(f"sub{j}" for j in range(1, min(fmt.mantissa_bits, 3) + 1))
