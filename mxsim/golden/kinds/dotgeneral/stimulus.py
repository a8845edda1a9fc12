"""The inputs of a ``dotgeneral`` suite: the dot kind's blocks n to a vector, then cancelling vectors.
The dot kind's corner and random blocks (:mod:`..dot.stimulus`), then vectors whose second block
cancels the first."""

from __future__ import annotations

import random

from ....formats.element import negated_code
from ...values import pack_word, unpack_word
from ..dot.stimulus import DotStimulus


class DotGeneralStimulus:
    """``_block_stimulus``, ``_block_count`` and ``_random_vector`` of a dotgeneral suite, over those
    of :class:`..dot.stimulus.DotStimulus` (needs ``self.n_blocks``, ``self.fa``, ``self.fb`` and
    ``self._join``)."""

    def _block_stimulus(self, rng: random.Random, level: int):
        """The dot corners and level-1 random blocks, n to a vector, then vectors whose second block
        cancels the first (the single blocks, a few hundred, are drawn first: held in memory)."""
        singles = [row for row, origin in DotStimulus._block_stimulus(self, rng, 1) if origin != "exhaustive"]
        n = self.n_blocks
        rows = []
        for start in range(0, len(singles) - n + 1, n):
            rows.append((self._join(singles[start : start + n]), "directed" if start < 64 else "random"))
        for _ in range(8):  # cancellation across blocks: block 1 is block 0 with a negated b side
            first = dict(rng.choice(singles))
            other = dict(first)
            element = self.fb.element
            if element.kind == "float":  # negated_code: a FNUZ/P3109 zero stays +0 (its 0x80 is the NaN)
                codes = unpack_word(first["b_elems"], element.width, self.fb.block_size)
                other["b_elems"] = pack_word([negated_code(c, element) for c in codes], element.width)
            rows.append((self._join([first, other] + [rng.choice(singles) for _ in range(n - 2)]), "directed"))
        yield from rows[: 60 * level + 8] if level == 1 else rows

    def _block_count(self, level: int) -> int:
        exhaustive = sum(-(-len(group) // self.fa.block_size) for group in self._exhaustive_groups())
        singles = DotStimulus._block_count(self, 1) - exhaustive
        rows = len(range(0, singles - self.n_blocks + 1, self.n_blocks)) + 8
        return min(rows, 60 * level + 8) if level == 1 else rows

    def _random_vector(self, rng: random.Random) -> dict:
        """n random blocks of the dot kind, drawn as the dot catalogue's random blocks (a run of
        them at once: :meth:`..dot.random_run.DotRandomRun.random_run`, ``vector_blocks`` = n)."""
        return self._join([self._random_block(rng) for _ in range(self.n_blocks)])
