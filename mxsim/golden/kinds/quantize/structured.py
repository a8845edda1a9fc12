"""The structured blocks of a ``quantize`` suite: every rounding case of every band, and clamped scales.
Blocks that reach every rounding case of every band of the element grid against the divisor the
quantizer actually uses, and E8M0 blocks whose scale clamps at ``scale_min`` (docs/numerics.md
section 3.3)."""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

from ....ref.block import quantize_block_roundings
from ....ref.decode import finite_magnitudes
from ....ref.exact import Exact, floor_log2
from ....ref.refusals import NoMXEncoding
from ...coverage.reach import MIN_CLASS_VECTORS
from ...stimulus.patterns import CASES, both_signs, grid_intervals, rounding_cases
from ...values import fp32_bits, fp32_value

LOW_BAND_COPIES = -(-MIN_CLASS_VECTORS // 2)  # blocks per point of the zero or a subnormal band (both signs: MIN)


class QuantizeStructuredStimulus:
    """``_decision_blocks`` and ``_low_scale_blocks`` of a quantize suite (needs ``self.fmt``,
    ``self.opts``, ``self._refused_layouts`` and ``self._inputs`` (:class:`.stimulus.QuantizeStimulus`))."""

    def _anchors(self) -> list[Exact]:
        """Block maxima that fix the scale: the largest fp32 value below the binade above the
        element's largest magnitude (under the floor rule it saturates, E unchanged), times 2^0
        and times 2^scale_min (E8M0 families: elements reach into fp32's subnormals); NVFP4
        6 * 448 * 2^j for j = 0, -128 (tensor scale 2^j, block scale 448)."""
        if self.fmt.scale.name != "e8m0":
            return [Exact(0, Fraction(6 * 448) * Fraction(2) ** j) for j in (0, -128)]
        above = Fraction(2) ** (floor_log2(finite_magnitudes(self.fmt.element)[-1]) + 1)
        top = above - above / (1 << 24)
        return [Exact(0, top * Fraction(2) ** s) for s in (0, self.opts.scale_min)]

    def _divisor_of(self, values: list[Exact]) -> list[Fraction]:
        """The element divisors D (exact) of the block ``values`` as the reference quantizes it (its
        :class:`mxsim.ref.block.BlockRoundings`); NVFP4 ``fp32_steps`` and ``fp32_reciprocal`` round
        fp32(x * factor) against 1, so a point of x / D is aimed at with D = 1 / factor (0 for a factor
        that is zero or Inf)."""
        inputs = self._inputs(values)
        xs = [float(v.magnitude) * (-1) ** v.sign for v in values]
        tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        _, roundings = quantize_block_roundings(xs, self.fmt, self.opts, tensor_scale=tensor_scale)
        factor = roundings.factor
        if factor is not None:  # x * factor is rounded to fp32 first; aim at x = point / factor
            aim = 1 / factor.value if factor.is_finite and factor.value else Fraction(0)
            return [aim] * self.fmt.block_size
        return [Fraction(n, d) for n, d in roundings.divisors]

    @cached_property
    def _decision_blocks(self) -> list[list[Exact]]:
        """Blocks that reach every rounding case (:func:`...stimulus.patterns.rounding_cases`) of the
        intervals standing for every band of the element grid (:func:`...stimulus.patterns.grid_intervals`),
        against the divisor the quantizer actually uses, with both signs: per anchor
        (:meth:`_anchors`) the block maximum in slot 0, the points (at most the maximum, exact fp32
        values) dealt round-robin into at least MIN_CLASS_VECTORS blocks (so each case is met in
        as many blocks; a point of the zero or a subnormal band in MIN_CLASS_VECTORS / 2 consecutive
        blocks, so that the per-band near-tie classes are met as often), a -0 in the last free slot
        of each. Sub-block formats twice: every
        pair partnered with the maximum (microexponent 0, points in the odd slots), and pairs of
        points alone (microexponent 1)."""
        fmt, k = self.fmt, self.fmt.block_size
        grid = finite_magnitudes(fmt.element)
        min_normal = fmt.element.min_normal if fmt.element.kind == "float" and fmt.element.subnormals else None
        intervals = grid_intervals(grid, min_normal)
        blocks = []
        for amax in self._anchors():
            layouts = [[amax] + [Exact(0)] * (k - 1)]
            if fmt.subblocks:
                layouts.append([amax if i % 2 == 0 else Exact(0) for i in range(k)])
            for pilot in layouts:
                free = [i for i, v in enumerate(pilot) if v.is_zero]
                try:
                    divisors = self._divisor_of(pilot)
                except NoMXEncoding as refused:  # its maximum has no MX encoding: no block of it has one
                    self._refused_layouts[refused.option] += 1
                    continue
                d = divisors[free[-1]]
                if not d:
                    continue
                cases = [case for lo, hi, _ in intervals for case in rounding_cases(lo * d, hi * d)]
                cases.sort(key=lambda case: CASES.index(case[0]))  # a case's points go to different blocks
                points = [v for v in dict.fromkeys(v for _, v in cases) if v <= amax.magnitude and _is_fp32(v)]
                # the zero band and the subnormal bands have one or two intervals each: their points go to
                # MIN_CLASS_VECTORS / 2 consecutive blocks each, so every per-band class meets enough blocks
                low_edge = min_normal * d if min_normal else 0
                copies = [LOW_BAND_COPIES if x.magnitude < low_edge else 1 for x in both_signs(points)]
                signed = [x for x, n in zip(both_signs(points), copies) for _ in range(n)]
                count = max(MIN_CLASS_VECTORS, -(-len(signed) // (len(free) - 1)))
                for b in range(count):
                    block = list(pilot)
                    dealt = signed[b::count]
                    for slot, value in zip(free, dealt + [Exact(1)] * (len(free) - len(dealt))):
                        block[slot] = value
                    blocks.append(block)
        return blocks

    @cached_property
    def _low_scale_blocks(self) -> list[list[Exact]]:
        """E8M0 families: blocks whose shared exponent E = floor(log2 amax) - emax_elem falls 1, 2 and 3
        below the smallest scale exponent (``scale_min``), so the scale clamps there and the elements
        (amax * (k - i) / k, alternating signs) round against the clamped scale (docs/numerics.md section 2);
        amax's significand 1 and 1.5. Found missing by the RTL mutation campaign (rtl/mutate.py)."""
        if self.fmt.scale.name != "e8m0":
            return []
        k = self.fmt.block_size
        emax_elem = floor_log2(finite_magnitudes(self.fmt.element)[-1])
        blocks = []
        for below in (1, 2, 3):
            for significand in (Fraction(1), Fraction(3, 2)):
                amax = significand * Fraction(2) ** (self.opts.scale_min - below + emax_elem)
                blocks.append([Exact(i & 1, amax * Fraction(k - i, k)) for i in range(k)])
        return blocks


def _is_fp32(v: Fraction) -> bool:
    """Whether fp32 holds the magnitude v exactly."""
    return fp32_value(fp32_bits(Exact(0, v))).magnitude == v

