"""The inputs of a ``quantize`` suite: directed blocks, the structured blocks, then random blocks.
Directed: all zero, an outlier, NaN, Inf, tiny, huge, values on and between the element grid; the
structured blocks come from :mod:`.structured`; random blocks of varied dynamic range one at a time
or a run of them drawn with NumPy. NVFP4 blocks carry the tensor scale of their maximum."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import numpy as np

from ....fast.nvfp4 import nvfp4_tensor_scales
from ....ref.block import nvfp4_tensor_scale
from ....ref.decode import finite_magnitudes
from ....ref.exact import Exact, dyadic
from ...stimulus.refused import accepted, left_out_record
from ...values import fp32_bits, fp32_value, pack_word
from ..batch import pack_words


class QuantizeStimulus:
    """``stimulus``, ``catalogue_size``, ``left_out``, ``random_inputs``, ``random_run`` and ``random_columns`` of a
    quantize suite (needs ``self.fmt``, ``self.opts``, ``self._refused_layouts`` and the blocks of
    :class:`.structured.QuantizeStructuredStimulus`). A vector: ``x``, k fp32 words, element i at
    bits [32i, 32i + 32); NVFP4 also ``tensor_scale``, the fp32 bits of s_t."""

    def _block_values(self, rng: random.Random, kind: str) -> list[Exact]:
        k = self.fmt.block_size

        def gauss(scale_exp: int) -> Exact:
            # integer draws only (no libm), so that every platform makes the same vectors: a
            # random 24-bit significand at a bell-shaped exponent around scale_exp
            exponent = scale_exp + rng.randint(-3, 0) + rng.randint(-3, 1)
            sign = rng.getrandbits(1)  # drawn before the significand
            return Exact.trusted(sign, dyadic(rng.getrandbits(23) | (1 << 23), exponent - 23))

        if kind == "all_zero":
            return [Exact(rng.getrandbits(1)) for _ in range(k)]
        if kind == "outlier":
            xs = [gauss(-8) for _ in range(k)]
            xs[rng.randrange(k)] = Exact(rng.getrandbits(1), Fraction(rng.randint(1, 1 << 20)))
            return xs
        if kind == "nan":
            xs = [gauss(0) for _ in range(k)]
            xs[rng.randrange(k)] = Exact.nan()
            return xs
        if kind == "inf":
            xs = [gauss(0) for _ in range(k)]
            xs[rng.randrange(k)] = Exact.inf(rng.getrandbits(1))
            return xs
        if kind == "tiny":
            return [Exact(rng.getrandbits(1), Fraction(rng.randint(0, 1 << 23), 1 << 149)) for _ in range(k)]
        if kind == "huge":
            return [Exact(rng.getrandbits(1), Fraction(rng.randint(1 << 23, (1 << 24) - 1)) * Fraction(2) ** 104) for _ in range(k)]
        if kind == "grid":  # values on and between the element grid at a random scale: ties, carries
            values = finite_magnitudes(self.fmt.element)
            shift = Fraction(2) ** rng.randint(-20, 20)
            xs = []
            for _ in range(k):
                i = rng.randrange(len(values) - 1)
                v = rng.choice([values[i], values[i + 1], (values[i] + values[i + 1]) / 2])
                xs.append(Exact(rng.getrandbits(1), v * shift))
            xs[0] = Exact(0, values[-1] * shift)  # fix the scale at amax = max_normal * shift
            return xs
        spread = rng.randint(0, 40)
        return [gauss(rng.randint(-spread, spread) // 4 + rng.randint(-30, 30) * (kind == "wide")) for _ in range(k)]

    _DIRECTED = ["all_zero", "outlier", "nan", "inf", "tiny", "huge"] * 2 + ["grid"] * 20

    def stimulus(self, rng: random.Random, level: int):
        yield from self._catalogue(rng, level, Counter())

    def _catalogue(self, rng: random.Random, level: int, left_out: Counter):
        """The stimulus; under options that refuse blocks, each block without an MX encoding is
        replaced and counted in ``left_out`` (:mod:`...stimulus.refused`)."""
        directed = (self._inputs(self._block_values(rng, kind)) for kind in self._DIRECTED)
        fixed = (self._inputs(values) for values in self._decision_blocks + self._low_scale_blocks)
        drawn = (self.random_inputs(rng, i) for i in range(100 * level))
        for inputs, origin in itertools.chain(zip(directed, itertools.repeat("directed")),
                                              zip(fixed, itertools.repeat("directed")),
                                              zip(drawn, itertools.repeat("random"))):
            if self.opts.refuses_blocks:
                kept = accepted(self, inputs, rng, left_out)
                inputs, origin = kept, (origin if kept is inputs else "random")  # a replacement is a random draw
            yield inputs, origin

    def left_out(self, rng: random.Random, level: int, vectors: int) -> dict:
        """The manifest's ``left_out`` entry for the first ``vectors`` lines of the catalogue drawn
        with ``rng`` (:func:`...stimulus.refused.left_out_record`; {} for options that refuse no block)."""
        if not self.opts.refuses_blocks:
            return {}
        blocks = Counter()
        for _ in itertools.islice(self._catalogue(rng, level, blocks), vectors):
            pass
        return left_out_record(blocks, self._refused_layouts)

    def catalogue_size(self, level: int) -> int:
        return len(self._DIRECTED) + len(self._decision_blocks) + len(self._low_scale_blocks) + 100 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """A block of varied dynamic range; every other one (odd ``index``) spread 2^+-30 wider."""
        return self._inputs(self._block_values(rng, "wide" if index % 2 else "normal"))

    def random_run(self, rng: np.random.Generator, first: int, n: int) -> list[dict]:
        """``n`` random vectors beyond the catalogue drawn at once with NumPy (see
        :func:`mxsim.golden.compute.pipeline.vectors`), from the distribution of :meth:`random_inputs`
        (vector ``first + j`` is "wide" for odd indices): a spread s in 0 .. 40 per block, each
        element a random sign and 24-bit significand at exponent randint(-s, s) // 4 (+ randint(-30,
        30) when wide) + randint(-3, 0) + randint(-3, 1), always a normal fp32 value."""
        columns = self._run_columns(rng, first, n)
        names = list(columns)
        return [dict(zip(names, values)) for values in zip(*columns.values())]

    def random_columns(self, rngs: list[np.random.Generator], firsts: list[int], n: int) -> list[dict[str, list[int]]]:
        """:meth:`random_run` of each run (``n`` vectors from ``rngs[i]``, the first being vector
        ``firsts[i]``) as columns (one list per input field: ``x``, and NVFP4's ``tensor_scale``): the
        same vectors, drawn the same way, without a dict per vector."""
        return [self._run_columns(rng, first, n) for rng, first in zip(rngs, firsts)]

    def _run_columns(self, rng: np.random.Generator, first: int, n: int) -> dict[str, list[int]]:
        k = self.fmt.block_size
        wide = (np.arange(first, first + n) % 2 == 1)[:, None]
        spread = rng.integers(0, 41, size=(n, 1))
        centre = np.floor_divide(rng.integers(-spread, spread + 1, size=(n, k)), 4)
        exponent = centre + wide * rng.integers(-30, 31, size=(n, k)) + rng.integers(-3, 1, size=(n, k)) + rng.integers(-3, 2, size=(n, k))
        words = rng.integers(0, 2, size=(n, k)) << 31 | (exponent + 127) << 23 | rng.integers(0, 1 << 23, size=(n, k))
        columns = {"x": pack_words(words, 32)}
        if self.fmt.tensor_scale is not None:  # every value is finite: the bits order like the values
            largest = (words & 0x7FFFFFFF).max(axis=1).astype(np.uint32).view(np.float32)
            columns["tensor_scale"] = nvfp4_tensor_scales(largest, self.opts).view(np.uint32).tolist()
        return columns

    def _inputs(self, xs: list[Exact]) -> dict:
        bits = [fp32_bits(x) for x in xs]
        inputs = {"x": pack_word(bits, 32)}
        if self.fmt.tensor_scale is not None:
            values = [fp32_value(b) for b in bits]
            amax = max((v.magnitude for v in values if v.is_finite), default=Fraction(0))
            inputs["tensor_scale"] = fp32_bits(Exact(0, nvfp4_tensor_scale(amax, self.opts)))
        return inputs
