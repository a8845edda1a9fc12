"""The inputs of a ``dequantize`` suite: every element code swept at directed scales (the output's
overflow and subnormal edges, UE4M3's edges, NVFP4 tensor scales at the output's rounding ties),
near-tie and underflow blocks per output band, then random blocks."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

from ....ref.decode import finite_magnitudes
from ....ref.encode import encode
from ....ref.exact import Exact, floor_log2
from ...coverage.catalogue import class_names, flag_bits
from ...coverage.reach import MIN_CLASS_VECTORS
from ...values import decode, fp32_bits, fp32_value, pack_word
from .exponents import EXPONENT_RANGE, scale_code_of_exponent


class DequantizeStimulus:
    """``stimulus`` and ``random_inputs`` of a dequantize suite (needs ``self.fmt``, ``self.out``,
    ``self.scale_encoding`` and ``self._rounding_map``: :class:`.reach.DequantizeReach`). A vector:
    ``scale``, ``subscales`` (two-level formats), ``tensor_scale`` (NVFP4: fp32 bits), ``codes``."""

    def _exponents(self) -> list[int]:
        """Scale exponents at the output's edges for this element: the largest element crossing
        the output's overflow threshold, elements straddling its smallest normal, the smallest
        element at, half and a quarter of its smallest subnormal; 0; the encoding's extremes."""
        element, out = self.fmt.element, self.out
        top = floor_log2(finite_magnitudes(element)[-1])
        bottom = floor_log2(finite_magnitudes(element)[1])
        over = out.emax - top
        subnormal_floor = out.emin - out.mantissa_bits - bottom
        wanted = [
            0,
            over - 1,
            over,
            over + 1,
            out.emin - top,
            out.emin - top + 2,
            out.emin - bottom,
            subnormal_floor + 1,
            subnormal_floor,
            subnormal_floor - 1,
            subnormal_floor - 2,
        ]
        low, high = EXPONENT_RANGE[self.scale_encoding]
        return sorted({min(max(e, low), high) for e in wanted} | {low, high})

    def _scales(self) -> list[int]:
        """Directed scale codes: the exponents above (E8M0), or UE4M3's edges (NVFP4), then the
        NaN code where the encoding has one."""
        scale = self.fmt.scale
        if scale.name != "e8m0":
            finite = [c for c in range(1 << scale.width) if decode(c, scale).is_finite and decode(c, scale).magnitude]
            return [finite[0], encode(scale.min_normal, scale), encode(1, scale), finite[-1], scale.nan_code()]
        codes = [scale_code_of_exponent(e, self.scale_encoding) for e in self._exponents()]
        return codes + ([0xFF] if self.scale_encoding == "e8m0" else [])

    def _tensor_scales(self) -> list[Fraction]:
        """NVFP4 directed tensor scales: 1, values that put the largest element near the output's
        overflow threshold and the smallest near its subnormal floor (inside fp32's range), and
        ties of the output rounding: (1 + 2^-(m+1)) and (1 + 3 * 2^-(m+1)) times a power of two, and
        2^(emin - m - 2), 2^(emin - m) (elements at scale 1 in the lowest subnormal bands)."""
        out = self.out
        half = Fraction(1, 1 << (out.mantissa_bits + 1))
        largest = 6 * 448
        wanted = [
            Fraction(1),
            Fraction(2) ** (out.emax - 11) * (1 + half),
            Fraction(2) ** (out.emax - 12) * 3,
            Fraction(2) ** (out.emin - out.mantissa_bits + 9),
            1 + half,
            1 + 3 * half,
            Fraction(2) ** (out.emax + 1) / largest,
            # elements times scale 1 in the output's lowest subnormal bands: near-ties there (3.3)
            Fraction(2) ** (out.emin - out.mantissa_bits - 2),
            Fraction(2) ** (out.emin - out.mantissa_bits),
        ]
        return [self._fp32_scale(x) for x in wanted]

    @staticmethod
    def _fp32_scale(x: Fraction) -> Fraction:
        """x rounded to a positive normal-or-subnormal fp32 tensor scale (never 0 or Inf)."""
        bits = fp32_bits(Exact(0, x))
        return fp32_value(min(max(bits, 1), 0x7F7FFFFF)).magnitude

    def _row(self, scale: int, codes: list[int], subscales: int, tensor_scale: Fraction | None) -> dict:
        row = {"scale": scale, "codes": pack_word(codes, self.fmt.element.width)}
        if self.fmt.subblocks:
            row["subscales"] = subscales
        if self.fmt.tensor_scale is not None:
            row["tensor_scale"] = fp32_bits(Exact(0, tensor_scale))
        return row

    def stimulus(self, rng: random.Random, level: int):
        fmt, k = self.fmt, self.fmt.block_size
        w, sub_bits = fmt.element.width, fmt.subblocks * fmt.subscale_bits
        every = list(range(1 << w))  # every code, block after block
        sweeps = [(every + every)[i : i + k] for i in range(0, len(every), k)]
        sweeps = [s + every[: k - len(s)] for s in sweeps]
        tensor_scales = self._tensor_scales() if fmt.tensor_scale is not None else [None]
        rows = []
        for scale in self._scales():
            for tensor_scale in tensor_scales:
                for j, codes in enumerate(sweeps):
                    subscales = (0, (1 << sub_bits) - 1, rng.getrandbits(sub_bits))[j % 3] if sub_bits else 0
                    rows.append((self._row(scale, codes, subscales, tensor_scale), "directed"))
        rows += [(row, "directed") for row in self._subnormal_tie_rows(sweeps)]
        rows += [(self._row(scale, codes, 0, None), "directed") for scale, codes in self._band_rows()]
        directed_scales = self._scales()
        for _ in range(100 * level):
            rows.append((self._random_row(rng, directed_scales, tensor_scales), "random"))
        return rows

    def _subnormal_tie_rows(self, sweeps: list[list[int]]) -> list[dict]:
        """NVFP4: every code at block multipliers s_t * scale = u/2, u/4, u/8 (u the output's
        smallest subnormal), each with three power-of-two UE4M3 scales (the smallest whose s_t is
        an fp32 value), so that the elements 1.5, 3 and 6 land on 3/4 of u: near-ties in the
        output's lowest band (docs/numerics.md section 3.3). Other formats: none (their E8M0 sweeps reach it)."""
        if self.fmt.tensor_scale is None:
            return []
        u = self.out.min_subnormal
        rows = []
        for product in (u / 2, u / 4, u / 8):
            scales = [Fraction(2) ** j for j in range(-9, 9) if product / Fraction(2) ** j >= Fraction(1, 1 << 149)]
            for scale in scales[:3]:
                code = encode(scale, self.fmt.scale)
                rows += [self._row(code, codes, 0, product / scale) for codes in sweeps]
        return rows

    def _band_rows(self) -> list[tuple[int, list[int]]]:
        """(scale code, block codes) of the per-band near-tie and underflow stimulus (docs/numerics.md
        3.3 (1), (2)): for every scale exponent X where some element lands on a near-tie of the
        output (:attr:`_rounding_map`; MXFP8 and FP4 values only in its subnormal and zero bands),
        blocks holding every such code of X and the negative
        codes that round to zero there, rotated one lane further in each block; as many blocks at
        X as its rarest class needs for MIN_CLASS_VECTORS in all (a class met at n exponents gets
        ceil(MIN_CLASS_VECTORS / n) blocks at each). If no such X has a negative value rounding to
        zero, the highest X where one does gets MIN_CLASS_VECTORS blocks."""
        zero_sign = flag_bits(["zero_result_sign"])
        k = self.fmt.block_size
        found = self._rounding_map
        at = {x: set(class_names(self._or(hits) & ~zero_sign)) for x, hits in found.items()}
        spread = Counter(name for names in at.values() for name in names)
        blocks = {x: max(-(-MIN_CLASS_VECTORS // spread[name]) for name in names) for x, names in at.items() if names}
        underflowing = [x for x, hits in found.items() if self._or(hits) & zero_sign]
        if underflowing and not any(self._or(found[x]) & zero_sign for x in blocks):
            blocks[max(underflowing)] = MIN_CLASS_VECTORS
        rows = []
        for exponent in sorted(blocks):
            codes = sorted(found[exponent])
            for r in range(blocks[exponent]):
                rows.append((scale_code_of_exponent(exponent, self.scale_encoding),
                             [codes[(i + r) % len(codes)] for i in range(k)]))
        return rows

    @staticmethod
    def _or(hits: dict[int, int]) -> int:
        flags = 0
        for f in hits.values():
            flags |= f
        return flags

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        tensor_scales = self._tensor_scales() if self.fmt.tensor_scale is not None else [None]
        return self._random_row(rng, self._scales(), tensor_scales)

    def _random_row(self, rng: random.Random, directed_scales: list[int], tensor_scales: list) -> dict:
        """A random block: a directed scale (70 %) or any scale code, random element codes and
        sub-scales, one of the directed tensor scales (NVFP4)."""
        fmt = self.fmt
        scale = rng.choice(directed_scales) if rng.random() < 0.7 else rng.getrandbits(fmt.scale.width)
        codes = [rng.getrandbits(fmt.element.width) for _ in range(fmt.block_size)]
        subscales = rng.getrandbits(fmt.subblocks * fmt.subscale_bits)
        return self._row(scale, codes, subscales, rng.choice(tensor_scales))
