"""The inputs of an ``encode`` suite: directed fp32 values (every grid point, midpoint and rounding
case of the format, significand patterns at its exponent boundaries), then random fp32 values."""

from __future__ import annotations

import random
from fractions import Fraction
from functools import cached_property

from ....ref.decode import finite_magnitudes
from ....ref.exact import Exact, floor_log2
from ...stimulus.patterns import exponent_boundaries, grid_intervals, pattern_values, rounding_cases, significand_patterns
from ...values import fp32_bits, fp32_value

# fp32 fraction patterns at the format's exponent boundaries (docs/numerics.md section 3.3): zero, all ones, the
# bottom bit, and in the top seven bits (the kept, guard and top sticky bits of every enumerable
# element) a single 1 at each position and the runs of ones from the top
_PATTERNS = tuple(p for p in significand_patterns(23) if p in (0, 1, (1 << 23) - 1) or (p >> 16 and not p & 0xFFFF))


class EncodeStimulus:
    """``stimulus``, ``catalogue_size`` and ``random_inputs`` of an encode suite (needs ``self.fmt``
    and ``self._min_normal``: :class:`.classes.EncodeClasses`). A vector: ``x``, the fp32 bits of
    the input."""

    def _directed(self) -> list[Fraction | Exact]:
        values = finite_magnitudes(self.fmt)
        out: list = [Exact(0), Exact(1), Exact.inf(0), Exact.inf(1)]
        if getattr(self.fmt, "has_nan", False):  # elsewhere NaN is a block-level matter
            out += [Exact.nan(0), Exact.nan(1)]  # both signs: a NaN's code keeps its sign
        ulp = Fraction(1, 1 << 149)
        for lo, hi in zip(values, values[1:]):
            mid = (lo + hi) / 2
            out += [lo, mid, hi]
            step = Fraction(2) ** (floor_log2(mid) - 23) if mid else ulp
            out += [mid - step, mid + step]
        top = values[-1]
        top_step = (values[-1] - values[-2]) if len(values) > 1 else top
        out += [top + top_step / 2, top + top_step, 2 * top, Fraction(2) ** 127, Fraction(1, 1 << 149), Fraction(1, 1 << 126)]
        # every rounding case of the intervals standing for each band (docs/numerics.md section 3.3), then
        # TestFloat's significand patterns at every exponent boundary of the format
        min_normal = Fraction(self._min_normal) if self._min_normal else None
        for lo, hi, _ in grid_intervals(values, min_normal):
            out += [v for _, v in rounding_cases(lo, hi)]
        out += pattern_values(exponent_boundaries(self.fmt), patterns=_PATTERNS)
        return out

    @cached_property
    def _directed_bits(self) -> list[int]:
        """The fp32 bits of the directed values, both signs, each once, in catalogue order."""
        bits_list, seen = [], set()
        for v in self._directed():
            for sign in (0, 1):
                x = v if isinstance(v, Exact) else Exact(sign, v)
                bits = fp32_bits(x)
                if fp32_value(bits).is_finite and x.is_finite and fp32_value(bits).magnitude != x.magnitude:
                    continue  # not an fp32 value (e.g. a midpoint below fp32 resolution)
                if bits not in seen:
                    seen.add(bits)
                    bits_list.append(bits)
        return bits_list

    @cached_property
    def _exponent_range(self) -> tuple[int, int]:
        """(low, high) exponents of the random fp32 values: the format's range, two binades wider."""
        values = finite_magnitudes(self.fmt)
        span = max(floor_log2(values[-1]), 0) + 2
        low = floor_log2(values[1]) - 2 if len(values) > 1 else -10
        return max(low, -149), min(span, 127)

    def stimulus(self, rng: random.Random, level: int):
        for bits in self._directed_bits:
            yield {"x": bits}, "directed"
        for i in range(1000 * level):
            yield self.random_inputs(rng, i), "random"

    def catalogue_size(self, level: int) -> int:
        return len(self._directed_bits) + 1000 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """A random fp32 value with its exponent uniform over the format's range (two binades wider)."""
        exponent = rng.randint(*self._exponent_range)
        sig = rng.getrandbits(24) | (1 << 23)
        x = Exact(rng.getrandbits(1), Fraction(sig, 1 << 23) * Fraction(2) ** exponent)
        return {"x": fp32_bits(x)}
