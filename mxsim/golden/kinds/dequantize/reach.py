"""Where a ``dequantize`` suite's rounding decisions lie and which classes it must reach: the exact map
of scale exponents and element codes that land on the output's near-ties or round to a signed zero,
and the classes the configuration can reach (docs/numerics.md sections 3.1 and 3.3)."""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

from ....ref.dequant import element_last_bit, round_elements_traced
from ....ref.exact import Exact
from ...coverage.catalogue import class_names, flag_bits
from ...coverage.rounding import BAND_CLASSES
from ...values import decode
from .exponents import EXPONENT_RANGE


def _significant_bits(magnitude: Fraction) -> int:
    """The bits from the leading to the trailing 1 of a dyadic magnitude (> 0)."""
    n = magnitude.numerator
    return n.bit_length() - (n & -n).bit_length() + 1


class DequantizeReach:
    """The rounding map and reachable classes of a dequantize suite (needs ``self.fmt``,
    ``self.out``, ``self.output``, ``self.opts``, ``self.scale_encoding`` and
    ``self._decision_flag_words``: :class:`.classes.DequantizeClasses`)."""

    def _single_level(self) -> bool:
        """One power-of-two scale per block (E8M0 or int8 exponents), no sub-scales, no tensor scale."""
        return self.fmt.scale.name == "e8m0" and not self.fmt.subblocks and self.fmt.tensor_scale is None

    @cached_property
    def _rounding_map(self) -> dict[int, dict[int, int]]:
        """Single-level formats: scale exponent X -> {code: its flags word of the classes below}, for
        every X of the encoding and every finite nonzero element code whose value times 2^X lands
        on a subnormal near-tie of the output (any band), or is negative and rounds to magnitude 0
        (``zero_result_sign``), or is a near-tie of the normal range. Exact enumeration; empty for
        other formats."""
        if not self._single_level():
            return {}
        magnitudes = [x.magnitude for x in self._nonzero_elements]
        narrow = max(_significant_bits(m) for m in magnitudes) <= self.out.mantissa_bits + 1
        smallest, largest = min(magnitudes), max(magnitudes)
        low, high = EXPONENT_RANGE[self.scale_encoding]
        found, tiny_hits = {}, None
        for exponent in range(low, high + 1):
            if narrow and smallest * Fraction(2) ** exponent >= self.out.min_normal:
                continue  # every value a normal of the output's precision, or beyond its range: no near-tie, no zero
            # every value below a quarter of the smallest subnormal s: each lies in [0, s) short of any
            # near-tie, rounds (nearest-even) to a zero of its sign, and so has the same classes at every
            # such exponent: those of the first
            tiny = 4 * largest * Fraction(2) ** exponent < self.out.min_subnormal
            if tiny and tiny_hits is not None:
                hits = dict(tiny_hits)
            else:  # narrow: a value at or above the smallest normal is a normal of the output's precision (as above)
                hits = self._rounding_hits(exponent, below_normal_only=narrow)
                tiny_hits = hits if tiny else None
            if hits:
                found[exponent] = hits
        return found

    @cached_property
    def _nonzero_codes(self) -> list[int]:
        element = self.fmt.element
        return [c for c in range(1 << element.width) if decode(c, element).is_finite and decode(c, element).magnitude]

    @cached_property
    def _nonzero_elements(self) -> list[Exact]:
        """The values of :attr:`_nonzero_codes`, in their order."""
        return [decode(c, self.fmt.element) for c in self._nonzero_codes]

    def _rounding_hits(self, exponent: int, below_normal_only: bool = False) -> dict[int, int]:
        """{code: its flags word of :attr:`_rounding_map`'s classes} of the codes that set one at
        2^exponent; ``below_normal_only``: of those whose value there is below the output's smallest
        normal (the map's shortcut for narrow elements)."""
        wanted = flag_bits(["subnormal_near_tie", "zero_result_sign"] + list(BAND_CLASSES))
        multiplier, bottom = Fraction(2) ** exponent, self.out.min_normal
        codes = [code for code, element in zip(self._nonzero_codes, self._nonzero_elements)
                 if not (below_normal_only and element.magnitude * multiplier >= bottom)]
        _, _, records = round_elements_traced(codes, self.fmt.element, multiplier, self.output, self.opts)
        flags = self._decision_flag_words(records)
        return {c: f & wanted for c, f in zip(codes, flags) if f & wanted}

    def reachable_classes(self) -> frozenset[str]:
        """The rounding decisions of the output (docs/numerics.md section 3.1, 3.3) where some element times
        some scale has its last bit below the output's smallest subnormal (so it rounds) and the
        output keeps its subnormals (no ``dequant_ftz``): every case, both near-ties, in the
        subnormal bands (nearest-even only). Otherwise every value is exact: none required.
        Single-level formats (:meth:`_single_level`) also require the per-band near-tie classes
        (:data:`...coverage.rounding.BAND_CLASSES`) that some element times some scale reaches (exact
        enumeration, :attr:`_rounding_map`); their stimulus holds every one (:meth:`.stimulus.DequantizeStimulus._band_rows`).
        Two-level formats (sub-scales, NVFP4's fp32 tensor scale) declare none of those: their
        counts are recorded, not required."""
        out, element = self.out, self.fmt.element
        smallest_bit = min(element_last_bit(decode(c, element), element) for c in range(1 << element.width)
                           if decode(c, element).is_finite and decode(c, element).magnitude)
        if self.opts.dequant_ftz or smallest_bit * self._smallest_multiplier() >= out.min_subnormal:
            return frozenset()
        bands = set()
        for hits in self._rounding_map.values():
            for f in hits.values():
                bands |= set(class_names(f)) & set(BAND_CLASSES)
        return frozenset(bands) | frozenset({
            "exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
            "subnormal_near_tie", "truncate", "increment", "carry", "zero_result_sign"})

    def _smallest_multiplier(self) -> Fraction:
        """The smallest factor a block's scales put on its elements: 2^(lowest exponent of the
        encoding), times 2^-1 for a microexponent (shared-exponent formats: 2^(E - tau)); NVFP4: the
        smallest UE4M3 scale times the smallest fp32 tensor scale 2^-149."""
        if self.fmt.scale.name != "e8m0":
            return min(v.magnitude for c in range(1 << self.fmt.scale.width)
                       if (v := decode(c, self.fmt.scale)).is_finite and v.magnitude) * Fraction(1, 1 << 149)
        low = EXPONENT_RANGE[self.scale_encoding][0] - (1 if self.fmt.subblocks else 0)
        return Fraction(2) ** low
