"""The vectors of a suite as a stream, and their expected values a chunk at a time; shared by
``generate``, ``stream`` and ``verify``.

Numbering (0-based vector i of a suite of N vectors, the same whatever the chunking or sharding):

* the *catalogue* comes first, in its fixed order: ``suite.stimulus(rng, level)`` (exhaustive
  enumerations, directed corners, then the level's random vectors) with one generator ``rng`` =
  ``random.Random("mxsim-golden:<seed>:<kind>:<suite name>")`` drawn in turn; it has
  C = ``suite.catalogue_size(level)`` vectors, whatever the seed;
* vectors i >= C (only with a count) come in runs of :data:`RUN` = 256: vector i is drawn by
  ``suite.random_inputs(rng, i)``, origin ``random``, from the generator of its run r = (i - C) //
  256, ``random.Random("mxsim-golden:<seed>:<kind>:<suite name>:random:<r>")``, after the
  (i - C) % 256 vectors of the run before it: it depends on i alone (not on the chunk or shard
  that asks for it), and a shard starts anywhere after drawing at most 255 vectors it drops
  (one seeding per run, not per vector: seeding costs more than drawing a cheap vector). Kinds
  with ``random_run`` (dot and dotgeneral, every configuration: with C, unit scales, fused; quantize:
  a million vectors in seconds rather than minutes) draw the 256 vectors of run r at once,
  ``suite.random_run(run_generator(seed, suite, r), C + 256r, 256)``, with NumPy's PCG64
  (:func:`run_generator`), from the same distribution as ``random_inputs`` (a dot suite's C: one
  :class:`random.Random` per run seeded from that generator, aimed by one fast first-step call);
* N = C without a count (the suite as it always was: the canonical ``golden/``); N = count
  otherwise; a count below C keeps the first N vectors of the catalogue; ``forever`` never ends.

Expected values: :func:`expected` calls the suite's ``compute_batch`` (the NumPy fast path) when
it has one (see :class:`.suite.Suite`), else ``compute`` per vector; :func:`reference_expected`
always calls ``compute`` (the reference model). :func:`computed_chunks` yields every field of
:data:`CHUNK` vectors at a time, so memory stays bounded whatever N, with the fast path's values
after the reference model has recomputed the catalogue and a seeded sample
(:class:`.crosscheck.CrossCheck`, which it fills in for the manifest).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..coverage.catalogue import flag_bits
from .crosscheck import CrossCheck, fast_path, reference_expected
from ..kinds.suite import Suite
from ..kinds.word_column import concatenated

__all__ = ["CHUNK", "Plan", "plan", "vectors", "vector_columns", "expected", "reference_expected", "computed_chunks",
           "suite_rng", "run_rng", "RUN"]

CHUNK = 4096  # vectors per chunk; any value gives the same bytes (tests set a small one)
RUN = 256  # random vectors beyond the catalogue per generator: fixed, part of what the vectors are
RUNS_AT_ONCE = CHUNK // RUN  # random runs drawn together as columns (any value gives the same bytes)

_ORIGIN_FLAGS = {origin: flag_bits([origin]) for origin in ("exhaustive", "directed", "random")}


def suite_rng(seed: int, suite: Suite) -> random.Random:
    """The generator of the catalogue (Python's ``random.Random`` seeded with a string is stable
    across platforms and versions)."""
    return random.Random(f"mxsim-golden:{seed}:{suite.kind}:{suite.name}")


def run_rng(seed: int, suite: Suite, run: int) -> random.Random:
    """The generator of run ``run`` of random vectors beyond the catalogue."""
    return random.Random(f"mxsim-golden:{seed}:{suite.kind}:{suite.name}:random:{run}")


def run_generator(seed: int, suite: Suite, run: int) -> np.random.Generator:
    """The NumPy generator of run ``run`` for the kinds that draw a run at once (``random_run``):
    PCG64 seeded with the first 16 bytes of SHA-256 of the same string as :func:`run_rng`'s, as a
    little-endian integer (PCG64's stream is stable across NumPy versions and platforms)."""
    digest = hashlib.sha256(f"mxsim-golden:{seed}:{suite.kind}:{suite.name}:random:{run}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


@dataclass(frozen=True)
class Plan:
    """How many vectors a suite has and where they come from: ``catalogue`` (C) vectors in the
    catalogue, ``count`` asked for (None: the catalogue), ``forever`` (no end)."""

    catalogue: int
    count: int | None = None
    forever: bool = False

    @property
    def total(self) -> int | None:
        """N, the number of vectors (None: forever)."""
        if self.forever:
            return None
        return self.catalogue if self.count is None else self.count

    @property
    def from_catalogue(self) -> int | None:
        return self.catalogue if self.total is None else min(self.catalogue, self.total)

    def describe(self) -> dict:
        """The manifest's ``stimulus`` entry."""
        total = self.total
        return {
            "catalogue": self.catalogue,
            "count_requested": "forever" if self.forever else self.count,
            "from_catalogue": self.from_catalogue,
            "beyond_catalogue": None if total is None else total - self.from_catalogue,
            "rule": "lines 1..C are the catalogue in order (exhaustive, directed, then the level's random); line "
                    f"C + 1 + {RUN}r + j (j < {RUN}) is random, draw j of run r from the string "
                    "'mxsim-golden:<seed>:<kind>:<suite>:random:<r>': random.Random(string) one vector at a time, or "
                    "for the kinds that draw a run at once (dot, dotgeneral, quantize) NumPy's PCG64 seeded with the "
                    "first 16 bytes of SHA-256(string) as a little-endian integer; a count below C keeps the first "
                    "count lines of the catalogue (mxsim.golden.compute.pipeline)",
        }


def plan(suite: Suite, level: int, count: int | None = None, forever: bool = False) -> Plan:
    """The :class:`Plan` of ``suite`` at ``level``; ValueError for a count that is not a positive integer."""
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"count={count!r} is not allowed; expected a positive integer")
    if forever and count is not None:
        raise ValueError("a count and forever exclude each other")
    return Plan(suite.catalogue_size(level), count, forever)


def vectors(suite: Suite, seed: int, level: int, plan: Plan, first: int = 0, last: int | None = None
            ) -> Iterator[tuple[dict, str]]:
    """``(inputs, origin)`` of vectors ``first`` .. ``last - 1`` (``last`` None: to the end of the
    plan). Vectors before ``first`` in the catalogue, or in the run of ``first``, are drawn and
    dropped (their generator runs in order)."""
    end = plan.total if last is None else last
    catalogue = plan.catalogue
    in_catalogue = catalogue if end is None else min(end, catalogue)
    if first < in_catalogue:
        yield from itertools.islice(suite.stimulus(suite_rng(seed, suite), level), first, in_catalogue)
    index = max(first, catalogue)
    run = (index - catalogue) // RUN
    drawn_at_once = getattr(suite, "random_run", None)
    while end is None or index < end:
        if drawn_at_once is not None:
            base = catalogue + run * RUN
            stop = base + RUN if end is None else min(base + RUN, end)
            if stop <= index:
                return
            rows = drawn_at_once(run_generator(seed, suite, run), base, RUN)
            for row in rows[index - base : stop - base]:
                yield row, "random"
            index, run = base + RUN, run + 1
            continue
        rng = run_rng(seed, suite, run)
        for position in range(catalogue + run * RUN, catalogue + (run + 1) * RUN):
            if end is not None and position >= end:
                return
            inputs = suite.random_inputs(rng, position)
            if position >= index:
                yield inputs, "random"
        index, run = catalogue + (run + 1) * RUN, run + 1


def expected(suite: Suite, inputs: dict[str, list[int]]) -> tuple[dict[str, list[int]], list[int]]:
    """The outputs (one list per output field) and the flags words (computed classes, no origin
    bits) of the vectors whose inputs are given as one list per input field: the fast path's
    (``compute_batch``) where the kind has one, else the reference model's."""
    batch = fast_path(suite)
    if batch is not None:
        return batch(inputs)
    return reference_expected(suite, inputs)


def vector_columns(suite: Suite, seed: int, level: int, plan: Plan, first: int = 0, last: int | None = None
                   ) -> Iterator[tuple[dict[str, list[int]], list[str]]]:
    """The vectors of :func:`vectors` (the same, in the same order) as pieces of columns: (one list
    per input field, the origins). A kind with ``random_columns`` hands random runs over as
    columns, :data:`RUNS_AT_ONCE` runs a call (each from its own generator), with no dict per
    vector (the columns :meth:`random_run`'s rows hold)."""
    names = [f.name for f in suite.inputs]
    end = plan.total if last is None else last
    drawn_as_columns = getattr(suite, "random_columns", None)
    if drawn_as_columns is None or (end is not None and end <= plan.catalogue):
        yield from _row_pieces(vectors(suite, seed, level, plan, first, last), names)
        return
    catalogue = plan.catalogue
    if first < catalogue:
        yield from _row_pieces(vectors(suite, seed, level, plan, first, catalogue), names)
    index = max(first, catalogue)
    run = (index - catalogue) // RUN
    while end is None or index < end:
        runs = RUNS_AT_ONCE if end is None else min(RUNS_AT_ONCE, (end - 1 - catalogue) // RUN - run + 1)
        bases = [catalogue + r * RUN for r in range(run, run + runs)]
        drawn = drawn_as_columns([run_generator(seed, suite, r) for r in range(run, run + runs)], bases, RUN)
        for base, columns in zip(bases, drawn):
            stop = base + RUN if end is None else min(base + RUN, end)
            yield {name: columns[name][index - base : stop - base] for name in names}, ["random"] * (stop - index)
            index = base + RUN
        run += runs


def _row_pieces(stream, names: list[str]):
    """(inputs, origin) pairs of :func:`vectors` as pieces of columns, :data:`RUN` vectors at a time."""
    while piece := list(itertools.islice(stream, RUN)):
        yield {name: [row[name] for row, _ in piece] for name in names}, [origin for _, origin in piece]


def computed_chunks(suite: Suite, seed: int, level: int, plan: Plan, first: int = 0, last: int | None = None,
                    size: int | None = None, check: CrossCheck | None = None) -> Iterator[dict[str, list[int]]]:
    """Every field (inputs, outputs, ``flags`` with the origin bit) of vectors ``first`` ..
    ``last - 1``, ``size`` (default :data:`CHUNK`) vectors at a time. The expected values come
    from ``check`` (a :class:`.crosscheck.CrossCheck` of this suite, seed and plan; a new one if
    None), which raises :class:`.crosscheck.ReferenceDisagreement` where the fast path and the
    reference model differ and counts what the reference recomputed."""
    size = size or CHUNK
    check = check or CrossCheck(suite, seed, plan)
    start = first
    names = [f.name for f in suite.inputs]
    held: list[tuple[dict, list[str]]] = []  # pieces of vector_columns not handed on yet
    pieces = vector_columns(suite, seed, level, plan, first, last)
    while True:
        count = sum(len(origins) for _, origins in held)
        for piece in pieces:  # gather at least one chunk's vectors
            held.append(piece)
            count += len(piece[1])
            if count >= size:
                break
        if not held:
            return
        inputs, origins, held = _first_vectors(held, names, size)
        outputs, flags = check.expected(inputs, start)
        start += len(origins)
        yield {**inputs, **outputs, "flags": [f | _ORIGIN_FLAGS[o] for f, o in zip(flags, origins)]}


def _first_vectors(pieces: list, names: list[str], size: int):
    """(the columns and origins of the first ``size`` vectors of ``pieces``, the pieces left):
    a column joined from its pieces by :func:`..kinds.word_column.concatenated`."""
    taken, left, count = [], [], 0
    for columns, origins in pieces:
        if count >= size:
            left.append((columns, origins))
            continue
        keep = size - count
        if len(origins) > keep:
            left.append(({name: columns[name][keep:] for name in names}, origins[keep:]))
            columns, origins = {name: columns[name][:keep] for name in names}, origins[:keep]
        taken.append((columns, origins))
        count += len(origins)
    inputs = {name: concatenated([columns[name] for columns, _ in taken]) for name in names}
    return inputs, [origin for _, origins in taken for origin in origins], left
