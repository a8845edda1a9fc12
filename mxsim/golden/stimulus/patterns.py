"""Structured stimulus for every golden suite kind: significand patterns, exponent boundaries and the
values next to every rounding point, after Berkeley TestFloat's generators (docs/numerics.md section 3.3).

A design's bugs live in bit patterns, not value kinds, so suites build their catalogue from these
before anything random. The public surface (all exact: ints and Fractions, no float arithmetic):

* :func:`significand_patterns`: TestFloat's significand patterns of a width (a single 1 bit at
  each position, runs of ones from the top and from the bottom, runs of zeros in all ones, all
  ones, alternating bits, zero);
* :func:`exponent_boundaries`: the unbiased exponents at every boundary of a float format (each
  subnormal band, the binades around the smallest normal, 0, the largest binades and one past);
* :func:`pattern_values`: magnitudes (1 + pattern / 2^bits) * 2^e of patterns x exponents, in a
  fixed order (the dot suites' accumulators and operands take these);
* :func:`accumulator_values`: fp32 accumulator values whose last bit lies at given distances from a
  grid's last bit (above it, on it, below it, beyond a window), with sparse or patterned
  significands (for fused and aligned dots);
* :func:`fp32_step`: the spacing of fp32 values at a magnitude (the input's resolution);
* :func:`rounding_cases`: the values of one rounding interval [lo, hi) of an output grid that
  reach each rounding case (:data:`CASES`), for inputs of a given resolution;
* :func:`grid_intervals`: the intervals of a sorted magnitude grid that stand for each band (every
  subnormal band, the zero band, the lowest, a middle and the top normal binade), each with an
  even and an odd lower end (ties to even go both ways);
* :func:`both_signs`: a value list as :class:`~mxsim.ref.exact.Exact` of either sign, in turn.

Rounding cases of an interval [lo, hi), u = hi - lo, mid = lo + u/2, input resolution r (the
spacing of input values at that magnitude; guard = the first bit below the output's LSB, sticky =
every input bit below the guard, from weight u/4 (the top sticky position) down to r (the bottom)):
``exact`` lo; ``below_half`` lo + r and lo + u/4; ``near_tie_below`` mid - r (guard clear, every
sticky bit set); ``tie`` mid; ``near_tie_bottom`` mid + r (guard and the bottom sticky bit only);
``near_tie_top`` mid + u/4 (guard and the top sticky bit only); ``above_half`` hi - r. A case
whose value is not a multiple of the input's resolution (too few input bits) is left out.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Iterable

from ...ref.exact import Exact, floor_log2

__all__ = [
    "CASES", "significand_patterns", "exponent_boundaries", "pattern_values", "accumulator_values", "fp32_step",
    "rounding_cases",
    "grid_intervals", "both_signs",
]

CASES = ("exact", "below_half", "near_tie_below", "tie", "near_tie_bottom", "near_tie_top", "above_half")
FP32_MIN_NORMAL_EXP = -126
FP32_FRACTION_BITS = 23


def significand_patterns(bits: int) -> tuple[int, ...]:
    """TestFloat-style patterns of ``bits`` fraction bits, each once, in a fixed order: zero, all
    ones, a single 1 at each position (top first), runs of ones from the top and from the bottom,
    all ones with a run of zeros from the top and from the bottom, and the two alternating
    patterns 1010... and 0101...."""
    if bits < 0:
        raise ValueError(f"bits={bits!r} is not allowed; expected a non-negative integer")
    ones = (1 << bits) - 1
    found = [0, ones]
    found += [1 << (bits - 1 - i) for i in range(bits)]
    found += [ones ^ ((1 << (bits - j)) - 1) for j in range(1, bits)]  # ones from the top
    found += [(1 << j) - 1 for j in range(1, bits)]  # ones from the bottom
    found += [ones >> j for j in range(1, bits)]  # zeros from the top
    found += [ones ^ ((1 << j) - 1) for j in range(1, bits)]  # zeros from the bottom
    found += [int("10" * bits, 2) >> bits & ones, int("01" * bits, 2) >> bits & ones]
    return tuple(dict.fromkeys(found))


def exponent_boundaries(fmt) -> tuple[int, ...]:
    """Unbiased exponents at every boundary of a float format ``fmt`` (an element or output format
    with ``emin``, ``emax``, ``mantissa_bits``), ascending: below the smallest subnormal, every
    subnormal band (emin - mantissa_bits .. emin - 1), the two lowest normal binades, 0, and the
    two largest binades and the one past them. An integer format: its binades 0 down to -7."""
    if fmt.kind != "float":
        return tuple(range(-7, 1))
    low = fmt.emin - fmt.mantissa_bits - 2 if fmt.subnormals else fmt.emin - 2
    wanted = set(range(low, fmt.emin + 2)) | {0, fmt.emax - 1, fmt.emax, fmt.emax + 1}
    return tuple(sorted(wanted))


def pattern_values(exponents: Iterable[int], bits: int = FP32_FRACTION_BITS,
                   patterns: Iterable[int] | None = None) -> list[Fraction]:
    """(1 + p / 2^bits) * 2^e for every exponent e (outer) and pattern p (inner; default
    :func:`significand_patterns` of ``bits``): normal values of a float with ``bits`` fraction
    bits, in a fixed order."""
    chosen = significand_patterns(bits) if patterns is None else tuple(patterns)
    one = 1 << bits
    out = []
    for e in exponents:
        power = Fraction(2) ** e
        out += [Fraction(one + p, one) * power for p in chosen]
    return out


def accumulator_values(grid_lsb: int, distances: Iterable[int], patterns: Iterable[int] | None = None
                       ) -> list[Fraction]:
    """Normal fp32 magnitudes C whose last significand bit has weight 2^(grid_lsb + d) for each
    distance d (outer; negative: below the grid, e.g. beyond a fused step's window) and each
    23-bit fraction pattern (inner; default :func:`significand_patterns` of 23: sparse single bits,
    runs, all ones, zero). C = (1 + p / 2^23) * 2^(grid_lsb + d + 23); exponents outside fp32's
    normal range [-126, 127] are left out."""
    exponents = [grid_lsb + d + FP32_FRACTION_BITS for d in distances]
    return pattern_values([e for e in exponents if FP32_MIN_NORMAL_EXP <= e <= 127], FP32_FRACTION_BITS, patterns)


def fp32_step(magnitude: Fraction, below: bool = False) -> Fraction:
    """The spacing of fp32 values at ``magnitude`` (> 0): 2^(max(floor(log2 m), -126) - 23), the
    weight of the input's last bit there; ``below``: the spacing just below ``magnitude`` (half
    that at a power of two of the normal range)."""
    e = max(floor_log2(magnitude), FP32_MIN_NORMAL_EXP)
    step = Fraction(2) ** (e - FP32_FRACTION_BITS)
    if below and e > FP32_MIN_NORMAL_EXP and magnitude == Fraction(2) ** e:
        return step / 2
    return step


def rounding_cases(lo: Fraction, hi: Fraction, step: Callable[..., Fraction] = fp32_step
                   ) -> list[tuple[str, Fraction]]:
    """(case, value) of every rounding case of the interval [lo, hi) (see the module docstring),
    in :data:`CASES` order; ``step(v, below=False)`` gives the input's resolution at v (default
    fp32). Values that are not multiples of their own resolution, or fall outside (lo, hi) (other
    than ``exact`` = lo > 0), are left out."""
    if not 0 <= lo < hi:
        raise ValueError(f"[lo, hi) = [{lo}, {hi}) is not a rounding interval; expected 0 <= lo < hi")
    u, mid = hi - lo, (lo + hi) / 2
    wanted = [("exact", lo)] if lo else []
    first = lo + step(lo) if lo else step(u / 4)  # one bit at the bottom (at zero: u/4's last bit)
    wanted += [("below_half", v) for v in (first, lo + u / 4)]
    wanted += [
        ("near_tie_below", mid - step(mid, below=True)),
        ("tie", mid),
        ("near_tie_bottom", mid + step(mid)),
        ("near_tie_top", mid + u / 4),
        ("above_half", hi - step(hi, below=True)),
    ]
    out, seen = [], set()
    for case, v in wanted:
        on_grid = v > 0 and (v / step(v)).denominator == 1
        inside = lo < v < hi or (case == "exact" and v == lo)
        if on_grid and inside and (case, v) not in seen:
            seen.add((case, v))
            out.append((case, v))
    return out


def grid_intervals(grid: tuple[Fraction, ...], min_normal: Fraction | None) -> list[tuple[Fraction, Fraction, str]]:
    """(lo, hi, band) of the intervals [grid[i], grid[i+1]) that stand for every band of a sorted
    magnitude grid (zero first): ``zero`` [0, smallest), every subnormal band below ``min_normal``
    (None: the grid has none; ``subnormal`` bands are named by their binade), the lowest normal
    binade, a middle one and the top one; from each normal band its first two intervals (an even
    and an odd lower end) and its last one, from the zero band and each subnormal band every
    interval (at most 2^(m-1) of an element with m mantissa bits: the per-band near-tie classes
    need every distinct input there, :mod:`..coverage.rounding`)."""
    by_band: dict[str, list[tuple[Fraction, Fraction]]] = {}
    for lo, hi in zip(grid, grid[1:]):
        if lo == 0:
            name = "zero"
        else:
            subnormal = min_normal is not None and hi <= min_normal
            name = f"{'subnormal' if subnormal else 'normal'}_{floor_log2(lo)}"
        by_band.setdefault(name, []).append((lo, hi))
    normal = [name for name in by_band if name.startswith("normal")]
    keep = {name for name in by_band if not name.startswith("normal")}
    if normal:
        keep |= {normal[0], normal[len(normal) // 2], normal[-1]}
    out = []
    for name, intervals in by_band.items():
        if name in keep:
            chosen = dict.fromkeys(intervals if not name.startswith("normal") else intervals[:2] + intervals[-1:])
            out += [(lo, hi, name) for lo, hi in chosen]
    return out


def both_signs(values: Iterable[Fraction]) -> list[Exact]:
    """Each magnitude as +value, then -value (an :class:`Exact` each)."""
    return [Exact(sign, v) for v in values for sign in (0, 1)]
