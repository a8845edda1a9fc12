"""The inputs of a ``pack`` suite: directed code patterns (each with all-zero and all-ones scales),
then random blocks."""

from __future__ import annotations

import random

from ...stimulus.patterns import significand_patterns
from ...values import pack_word


class PackStimulus:
    """``stimulus``, ``catalogue_size`` and ``random_inputs`` of a pack suite (needs ``self.fmt``,
    the block format). A vector: ``scale`` (the scale code), ``subscales`` (two-level formats:
    sub-scale j at bits [j*d2, (j+1)*d2)), ``codes`` (element i at bits [i*w, (i+1)*w))."""

    def _patterns(self) -> list[list[int]]:
        """Element codes: zeros, all ones, counting, a walking 1 bit, then TestFloat's patterns of
        the element width (:func:`...stimulus.patterns.significand_patterns`) dealt across the block, each
        element a different pattern (rotated by one per block), so every bit of every element
        position is seen set alone and beside its neighbours' (docs/numerics.md section 3.3)."""
        k, w = self.fmt.block_size, self.fmt.element.width
        fixed = [[0] * k, [(1 << w) - 1] * k, [i % (1 << w) for i in range(k)], [1 << (i % w) for i in range(k)]]
        patterns = significand_patterns(w)
        return fixed + [[patterns[(i + r) % len(patterns)] for i in range(k)] for r in range(len(patterns))]

    def stimulus(self, rng: random.Random, level: int):
        fmt = self.fmt
        for codes in self._patterns():
            yield self._inputs(codes, 0, 0), "directed"
            ones = (1 << fmt.scale.width) - 1, (1 << (fmt.subblocks * fmt.subscale_bits)) - 1
            yield self._inputs(codes, *ones), "directed"
        for i in range(100 * level):
            yield self.random_inputs(rng, i), "random"

    def catalogue_size(self, level: int) -> int:
        return 2 * len(self._patterns()) + 100 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        fmt = self.fmt
        codes = [rng.getrandbits(fmt.element.width) for _ in range(fmt.block_size)]
        return self._inputs(codes, rng.getrandbits(fmt.scale.width), rng.getrandbits(fmt.subblocks * fmt.subscale_bits))

    def _inputs(self, codes, scale, subscales) -> dict:
        inputs = {"scale": scale, "codes": pack_word(codes, self.fmt.element.width)}
        if self.fmt.subblocks:
            inputs["subscales"] = subscales
        return inputs
