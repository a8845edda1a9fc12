"""Random ``dot`` vectors beyond the catalogue, a run at a time drawn with NumPy.
From the distribution of the one-at-a-time draws of :mod:`.stimulus` (the same code sets, scales
and odds)."""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np

from ....ref.encode import encode
from ...stimulus import accumulator as accumulator_input
from ..batch import pack_words
from .stimulus import DotStimulus, finite_codes


@lru_cache(maxsize=64)
def _np_codes(codes: tuple[int, ...]) -> np.ndarray:
    """A tuple of codes as an int64 array (kept: the same array every call; read only)."""
    array = np.array(codes, dtype=np.int64)
    array.flags.writeable = False
    return array


def _np_code_sets(e) -> dict[str, np.ndarray]:
    """:meth:`DotStimulus._code_sets` of element format ``e`` as int64 arrays."""
    return {name: _np_codes(tuple(codes)) for name, codes in DotStimulus._code_sets(e).items()}


class DotRandomRun:
    """``random_run`` and ``random_columns`` of a dot suite (needs what :class:`.stimulus.DotStimulus` needs)."""

    def random_run(self, rng: np.random.Generator, first: int, n: int) -> list[dict]:
        """``n`` random vectors beyond the catalogue drawn at once with NumPy (see
        :func:`mxsim.golden.compute.pipeline.vectors`), from the distribution of :meth:`random_inputs`.
        Each of a vector's ``vector_blocks`` block pairs (:meth:`_np_side`): block a "normal" (6 in 9),
        "max", "small" or "special", block b "normal", "max" or "small"; scales 2^-8 .. 2^8 (E8M0),
        any finite code of another scale format, the code of 1 with ``unit_scales``; sub-scales
        uniform; NVFP4 tensor scales (suites with tensor-scale fields) m / 2^s, one per vector.
        With an accumulator input, then a C per vector as :func:`.accumulator_input.add_c` draws it
        (a kind by the weights of ``C_KINDS``, its bits from a :class:`random.Random` seeded by
        ``rng``), aimed at the first step's D with C = +0 of the whole run computed in one
        :meth:`first_step_values` call (the reference vector by vector where that gives None:
        separate accumulation)."""
        return self._runs_with_c([rng], n)[0] if self.has_c else _rows(self._block_columns(rng, n))

    def random_columns(self, rngs: list[np.random.Generator], firsts: list[int], n: int) -> list[dict[str, list[int]]]:
        """:meth:`random_run` of each run (``n`` vectors from ``rngs[i]``; ``firsts``, where each
        starts, draws nothing here) as columns (one list per input field): the same vectors, drawn
        the same way, without a dict per vector where there is no C to aim, and with C the first
        steps' D of all the runs from one fast-path call."""
        if not self.has_c:
            return [self._block_columns(rng, n) for rng in rngs]
        return [{f.name: [row[f.name] for row in rows] for f in self.inputs} for rows in self._runs_with_c(rngs, n)]

    def _runs_with_c(self, rngs: list[np.random.Generator], n: int) -> list[list[dict]]:
        """Each run's vectors with their C (:meth:`random_run`): a run's blocks, then the seed of its
        C draws, from its own generator; the first steps' D of every run's vectors at once
        (:meth:`first_step_values`); then each run's C drawn in turn from its seed."""
        drawn = []
        for rng in rngs:
            rows = _rows(self._block_columns(rng, n))
            drawn.append((rows, random.Random(int(rng.integers(0, 1 << 63)))))
        firsts = self.first_step_values([row for rows, _ in drawn for row in rows])
        runs, start = [], 0
        for rows, c_rng in drawn:
            aimed = None if firsts is None else firsts[start : start + len(rows)]
            runs.append(accumulator_input.add_c_aimed(self, rows, c_rng, aimed))
            start += len(rows)
        return runs

    def _block_columns(self, rng: np.random.Generator, n: int) -> dict[str, list[int]]:
        """The block fields of ``n`` vectors (a's then b's), drawn by :meth:`_np_side`."""
        count = n * self.vector_blocks
        a = self._np_side(self.fa, rng, n, rng.choice(["normal"] * 6 + ["max", "small", "special"], size=count))
        b = self._np_side(self.fb, rng, n, rng.choice(["normal", "max", "small"], size=count))
        return {**{f"a_{k}": v for k, v in a.items()}, **{f"b_{k}": v for k, v in b.items()}}

    def _np_side(self, fmt, rng: np.random.Generator, n: int, kinds: np.ndarray) -> dict:
        """One operand's fields of ``n`` vectors of ``vector_blocks`` blocks each: block i (of
        ``len(kinds)`` = n * vector_blocks, vector by vector) drawn as ``_codes(fmt, ., kinds[i])``
        draws it (the same code sets and odds), its scale as :meth:`_scale` (:meth:`_np_scales`),
        its sub-scales uniform and the vector's tensor scale as :meth:`_side` draws them; block j of
        a vector at bits [j*bits, (j+1)*bits) of each field, as :meth:`_join` packs them."""
        k, e, blocks = fmt.block_size, fmt.element, self.vector_blocks
        count = n * blocks
        sets = _np_code_sets(e)
        codes = sets["finite"][rng.integers(0, len(sets["finite"]), size=(count, k))]
        anything = rng.random((count, k)) >= 0.97
        codes = np.where(anything & (kinds == "normal")[:, None], rng.integers(0, 1 << e.width, size=(count, k)), codes)
        for name in ("max", "small"):
            rows = kinds == name
            codes[rows] = sets[name][rng.integers(0, len(sets[name]), size=(int(rows.sum()), k))]
        rows = np.flatnonzero(kinds == "special")
        if len(sets["special"]) and len(rows):
            specials = sets["special"][rng.integers(0, len(sets["special"]), size=len(rows))]  # drawn first
            codes[rows, rng.integers(0, k, size=len(rows))] = specials
        scales = self._np_scales(fmt, rng, count).reshape(n, blocks)
        side = {"scale": pack_words(scales, fmt.scale_storage_bits),
                "elems": pack_words(codes.reshape(n, blocks * k), e.width)}
        if fmt.subblocks:
            subs = rng.integers(0, 1 << fmt.subscale_bits, size=(n, blocks * fmt.subblocks))
            side["sub"] = pack_words(subs, fmt.subscale_bits)
        if fmt.tensor_scale is not None and self.tensor_scales:  # m / 2^s, m a 24-bit significand, s in 20 .. 40
            m, shift = rng.integers(1 << 23, 1 << 24, size=n), rng.integers(20, 41, size=n)  # fp32 exponent 23 - s
            side["tensor_scale"] = ((150 - shift) << 23 | (m & 0x7FFFFF)).tolist()
        return side

    def _np_scales(self, fmt, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` scale codes drawn as :meth:`_scale` (kind "normal") draws one: the code of 1
        with unit scales (no draw), 2^-8 .. 2^8 uniform (E8M0), else a finite code uniform."""
        s = fmt.scale
        if self.unit_scales:
            return np.full(count, encode(1, s), dtype=np.int64)
        if s.name != "e8m0":
            finite = _np_codes(tuple(finite_codes(s)))
            return finite[rng.integers(0, len(finite), size=count)]
        return 127 + rng.integers(-8, 9, size=count)


def _rows(columns: dict[str, list[int]]) -> list[dict]:
    """Columns of equal length -> one dict per vector (the keys in the columns' order)."""
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]
