"""The roundings of many values cast to a format as one record, and their decision classes for all of
them at once: fp32 inputs encoded to an element, or dequantized values rounded to the output type.

An encode rounds each finite nonzero input x (an fp32 value, read exactly) on the element's grid
(docs/numerics.md sections 1 and 3.3): its step at x's binade is 2^grid (the last significand bit
there; the smallest normal binade's for subnormals; 2^-frac_bits for integers), x lies in
[lo, hi) with lo = floor(x / 2^grid) * 2^grid and hi = lo + 2^grid, and the rounding picks
quotient * 2^grid, lo or hi. :class:`CastRoundings` holds those values for a whole chunk, whichever
encoder computed them: the reference's integers value by value
(:meth:`CastRoundings.from_reference`, :func:`mxsim.ref.encode.encode_traced`) or the fast path's
arrays (:meth:`CastRoundings.from_fast`, :func:`mxsim.fast.encode.encode_traced`); a dequantize's
output roundings come from the reference dequantizer (:meth:`CastRoundings.from_output_roundings`,
:func:`mxsim.ref.dequant.dequantize_block_traced`), with each value's resolution (its element's last
bit times the block's multiplier) in place of fp32's last bit.
:meth:`CastRoundings.flags` classes them all with the one decision rule
(:func:`.rounding.decision_flags`) in binary64 arrays, where every quantity is exact: x has at
most 24 significant bits, 2^grid is a power of two within binary64's range, lo and hi are x cut
to the grid and one step above, and the quotient of a value below 2^(emax + 2) has at most
mantissa_bits + 2 bits.

No classes for a value that does not round (NaN, Inf, zero) or lies above the format's largest
magnitude (it saturates or overflows: the caller's ``overflow`` and ``saturation`` classes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rounding import decision_flags, fp32_resolution

__all__ = ["CastRoundings"]

_QUOTIENT_CAP = 1 << 62


@dataclass(frozen=True)
class CastRoundings:
    """N roundings (arrays of length N): ``rounds`` (bool: the value is finite and nonzero),
    ``negative`` (bool: its sign), ``value`` (float64 >= 0: x, exactly; 0 where it does not round),
    ``grid`` (int64: the exponent of the grid's step at x) and ``quotient`` (int64: the integer
    the rounding chose, the result being quotient * 2^grid); ``last_bit`` (float64 > 0: the weight
    of x's last bit), or None for fp32 inputs: 2^(max(floor(log2 x), -126) - 23)
    (:func:`.rounding.fp32_resolution`)."""

    rounds: np.ndarray
    negative: np.ndarray
    value: np.ndarray
    grid: np.ndarray
    quotient: np.ndarray
    last_bit: np.ndarray | None = None

    @classmethod
    def from_reference(cls, records) -> "CastRoundings":
        """From the reference's :class:`mxsim.ref.encode.EncodeRounding` of N values (None for a value
        that does not round). Ratios become binary64 values exactly: an fp32 value is dyadic with at
        most 24 significant bits (Python's int / int is correctly rounded). A quotient of 2^62 or
        more (a value far above the format's largest magnitude, which is not classed) is kept as
        2^62, within int64."""
        absent = (False, 0, 1, 0, 0)
        rows = [absent if record is None else record for record in records]
        negative, numerator, denominator, grid, quotient = zip(*rows) if rows else ((),) * 5
        return cls(
            np.array([n > 0 for n in numerator], dtype=bool),
            np.array(negative, dtype=bool),
            np.array([n / d for n, d in zip(numerator, denominator)], dtype=np.float64),
            np.array(grid, dtype=np.int64),
            np.array([min(q, _QUOTIENT_CAP) for q in quotient], dtype=np.int64),
        )

    @classmethod
    def from_output_roundings(cls, records) -> "CastRoundings":
        """From the reference dequantizer's :class:`mxsim.ref.dequant.OutputRounding` of N values (None
        for a value that does not round), each with its resolution 2^e * multiplier (the multiplier a
        dyadic value with at most 28 significant bits: exact in binary64, as are the values and the
        resolutions, see :mod:`.rounding`; converted once per distinct multiplier object)."""
        multipliers: dict = {}  # id -> float of the multipliers (alive in ``records`` throughout)
        negative, value, grid, quotient, factor, exponent = [], [], [], [], [], []
        for record in records:
            if record is None:
                negative.append(False)
                value.append(0.0)
                grid.append(0)
                quotient.append(0)
                factor.append(1.0)
                exponent.append(0)
                continue
            rounding, m = record.rounding, record.multiplier
            f = multipliers.get(id(m))
            if f is None:
                f = multipliers[id(m)] = m.numerator / m.denominator
            negative.append(rounding.negative)
            value.append(rounding.numerator / rounding.denominator)
            grid.append(rounding.grid)
            quotient.append(min(rounding.quotient, _QUOTIENT_CAP))
            factor.append(f)
            exponent.append(record.last_bit_exponent)
        value = np.array(value, dtype=np.float64)
        last_bit = np.ldexp(np.array(factor, dtype=np.float64), np.array(exponent, dtype=np.int64))
        return cls(value > 0, np.array(negative, dtype=bool), value, np.array(grid, dtype=np.int64),
                   np.array(quotient, dtype=np.int64), last_bit)

    @classmethod
    def from_fast(cls, record) -> "CastRoundings":
        """From the fast path's :class:`mxsim.fast.encode.EncodeRoundings` (fp32 inputs) or
        :class:`mxsim.fast.dequant.OutputRoundings` (with each value's ``last_bit``)."""
        return cls(record.rounds, record.negative, record.value, record.grid, record.quotient,
                   getattr(record, "last_bit", None))

    def flags(self, element) -> np.ndarray:
        """The decision classes of every rounding onto ``element``'s grid: an (N,) int64 flags word,
        0 where the value does not round or lies above the format's largest magnitude (see the
        module docstring). ``subnormal_near_tie`` and the subnormal bands are below the smallest
        normal of a float format with subnormals (none elsewhere)."""
        words = np.zeros(len(self.value), dtype=np.int64)
        classed = self.rounds & (self.value <= float(element.max_normal))
        if not classed.any():
            return words
        x, negative = self.value[classed], self.negative[classed]
        step = np.ldexp(1.0, self.grid[classed])
        lo = np.floor(x / step) * step
        hi = lo + step
        result = self.quotient[classed] * step
        min_normal = float(element.min_normal) if element.kind == "float" and element.subnormals else 0.0
        resolution = fp32_resolution(x) if self.last_bit is None else self.last_bit[classed]
        words[classed] = decision_flags(x, lo, hi, resolution, result, negative, min_normal)
        return words
