"""Fast expected values, trusted: the reference model recomputes a seeded part of every suite.

A suite kind with ``compute_batch`` (the NumPy fast path, :mod:`..kinds.batch`) gets its expected values
from it; :class:`CrossCheck` then has the reference model (``compute``, vector by vector)
recompute

* every vector of the catalogue (exhaustive, directed, and the level's random vectors: the
  corners the suite exists for), and
* a seeded sample of the vectors beyond it: ``max(10,000, ceil(N / 100))`` of them (at least
  10,000 vectors or 1 % of the N vectors, whichever is larger), capped at the vectors there are,
  so a suite of at most C + 10,000 vectors is recomputed whole. The sample is
  ``random.Random("mxsim-golden:<seed>:<kind>:<suite>:reference-sample").sample(range(C, N), k)``:
  the same lines whatever the chunking or sharding (a shard checks the sampled lines it holds).
  A stream without end (``forever``) checks 3 lines of every run of 256 instead (about 1.2 %),
  ``random.Random("...:reference-sample:<r>").sample(range(256), 3)`` for run r of lines
  C + 256r .. C + 256r + 255; so does a suite whose sample would exceed :data:`SAMPLE_LIST_MAX`
  lines (N above about 10^8), so that the sample's list stays small.

Any disagreement, in any output field or in the flags word, raises :class:`ReferenceDisagreement`
naming the line, the field and both values: generation stops and writes nothing (the writer
removes the partial suite). :meth:`CrossCheck.describe` is what the manifest records under
``reference_check``. Kinds without ``compute_batch`` are computed by the reference for every
vector, and the manifest says so.
"""

from __future__ import annotations

import random
import numpy as np

from ..kinds.batch import compute_each
from ..kinds.suite import Suite

__all__ = ["SAMPLE_MIN", "SAMPLE_PERCENT", "SAMPLE_LIST_MAX", "FOREVER_RUN", "FOREVER_PER_RUN", "ReferenceDisagreement", "CrossCheck",
           "fast_path", "reference_expected", "sample_size", "merge_descriptions"]

SAMPLE_MIN = 10_000  # vectors beyond the catalogue the reference recomputes, at least ...
SAMPLE_PERCENT = 1  # ... or this percentage of the suite, whichever is larger
FOREVER_RUN, FOREVER_PER_RUN = 256, 3  # an endless stream: 3 lines of every 256
SAMPLE_LIST_MAX = 1_000_000  # larger samples are drawn per run, like an endless stream's


class ReferenceDisagreement(RuntimeError):
    """The fast path and the reference model gave different expected values for a vector."""


def fast_path(suite: Suite):
    """The suite's ``compute_batch`` (the NumPy fast path), or None if its kind has none or it
    does not model the suite's configuration (``suite.fast_path_applies`` false: its
    compute_batch would go vector by vector through the reference anyway)."""
    batch = getattr(suite, "compute_batch", None)
    return batch if getattr(suite, "fast_path_applies", True) else None


def reference_expected(suite: Suite, inputs: dict[str, list[int]]) -> tuple[dict[str, list[int]], list[int]]:
    """The outputs (one list per output field) and flags words (computed classes, no origin bits)
    of the vectors whose inputs are given as one list per input field, from the reference model
    alone (``compute`` per vector, or the kind's ``compute_many`` of them all where it has one: the
    same reference per vector, its classes computed for all the vectors at once)."""
    return compute_each(suite, inputs)


def sample_size(total: int, catalogue: int) -> int:
    """How many of the ``total - catalogue`` vectors beyond the catalogue the reference recomputes."""
    beyond = max(0, total - catalogue)
    return min(beyond, max(SAMPLE_MIN, -(-total * SAMPLE_PERCENT // 100)))


class CrossCheck:
    """The reference's share of one suite (or shard): which lines it recomputes, the comparison,
    and the counts for the manifest (see the module docstring). ``fast=False``: the reference
    model computes every vector (the pure-reference generation)."""

    def __init__(self, suite: Suite, seed: int, plan, fast: bool = True):
        self.suite, self.seed, self.plan = suite, seed, plan
        self.fast = fast and fast_path(suite) is not None
        self.catalogue = plan.from_catalogue
        self.vectors = self.catalogue_checked = self.sample_checked = 0
        self._prefix = f"mxsim-golden:{seed}:{suite.kind}:{suite.name}:reference-sample"
        self._sample = None
        if self.fast and plan.total is not None and sample_size(plan.total, self.catalogue) <= SAMPLE_LIST_MAX:
            k = sample_size(plan.total, self.catalogue)
            self._sample = np.array(sorted(random.Random(self._prefix).sample(range(self.catalogue, plan.total), k)),
                                    dtype=np.int64)

    def positions(self, start: int, size: int) -> list[int]:
        """The offsets (0 .. size - 1) of the lines ``start`` .. ``start + size - 1`` the reference recomputes."""
        catalogue = list(range(0, max(0, min(size, self.catalogue - start))))
        if self._sample is not None:
            lo, hi = np.searchsorted(self._sample, [start, start + size])
            return catalogue + (self._sample[lo:hi] - start).tolist()
        sampled = []  # forever or huge: FOREVER_PER_RUN lines of every FOREVER_RUN beyond the catalogue
        first_run = max(0, start - self.catalogue) // FOREVER_RUN
        last_run = max(0, start + size - 1 - self.catalogue) // FOREVER_RUN
        for run in range(first_run, last_run + 1):
            base = self.catalogue + run * FOREVER_RUN
            for j in sorted(random.Random(f"{self._prefix}:{run}").sample(range(FOREVER_RUN), FOREVER_PER_RUN)):
                if start <= base + j < start + size and base + j >= self.catalogue:
                    sampled.append(base + j - start)
        return catalogue + sampled

    def expected(self, inputs: dict[str, list[int]], start: int) -> tuple[dict[str, list[int]], list[int]]:
        """The outputs and flags words of the vectors of lines ``start`` .. (inputs as one list per
        field): the fast path's, after the reference has agreed on the chosen lines; or the
        reference's for every vector when the kind has no fast path."""
        size = len(next(iter(inputs.values()))) if inputs else 0
        self.vectors += size
        if not self.fast:
            self.catalogue_checked += max(0, min(size, self.catalogue - start))
            self.sample_checked += size - max(0, min(size, self.catalogue - start))
            return reference_expected(self.suite, inputs)
        outputs, flags = fast_path(self.suite)(inputs)
        chosen = self.positions(start, size)
        if chosen:
            picked = {name: [column[p] for p in chosen] for name, column in inputs.items()}
            ref_outputs, ref_flags = reference_expected(self.suite, picked)
            for k, p in enumerate(chosen):
                for name, column in ref_outputs.items():
                    if int(outputs[name][p]) != column[k]:
                        self._disagree(start + p, name, outputs[name][p], column[k], picked, k)
                if int(flags[p]) != ref_flags[k]:
                    self._disagree(start + p, "flags", flags[p], ref_flags[k], picked, k)
        in_catalogue = sum(1 for p in chosen if start + p < self.catalogue)
        self.catalogue_checked += in_catalogue
        self.sample_checked += len(chosen) - in_catalogue
        return outputs, flags

    def _disagree(self, line: int, name: str, fast, reference, picked: dict, k: int):
        inputs = ", ".join(f"{field}={column[k]:#x}" for field, column in picked.items())
        raise ReferenceDisagreement(
            f"{self.suite.kind}/{self.suite.name}: line {line + 1}: field {name!r}: the fast path gives {int(fast):#x}, "
            f"the reference model {int(reference):#x} (inputs {inputs}); nothing was written for this suite"
        )

    def describe(self) -> dict:
        """The manifest's ``reference_check`` entry: what the reference recomputed of these lines."""
        entry = {
            "expected_values": "fast path (compute_batch), checked by the reference model" if self.fast
            else "reference model (every vector)",
            "vectors": self.vectors,
            "reference_checked": self.catalogue_checked + self.sample_checked,
            "catalogue_checked": self.catalogue_checked,
            "sample_checked": self.sample_checked,
        }
        if self.fast:
            entry["sample_rule"] = (
                f"every catalogue line, and beyond the catalogue max({SAMPLE_MIN}, ceil(N * {SAMPLE_PERCENT} / 100)) "
                "lines (all if fewer): random.Random(sample_seed).sample(range(C, N), k); an endless stream, or a sample above "
                f"{SAMPLE_LIST_MAX} lines: "
                f"{FOREVER_PER_RUN} lines per run r of 256, random.Random(sample_seed + ':<r>').sample(range(256), "
                f"{FOREVER_PER_RUN}) (mxsim.golden.compute.crosscheck)"
            )
            entry["sample_seed"] = self._prefix
            entry["sample_size"] = None if self._sample is None else int(len(self._sample))
        return entry


_SUMMED = ("vectors", "reference_checked", "catalogue_checked", "sample_checked")


def merge_descriptions(entries: list[dict]) -> dict:
    """The ``reference_check`` entry of a suite assembled from shards, from the shards' entries:
    the counts summed (each shard checked the catalogue and sample lines of its own range, and
    the sample is drawn over the whole suite, so the sum is what one run checks); every other key
    (the rule, the seed, the sample size) must be the same in every shard. ValueError otherwise."""
    merged = {}
    for key in entries[0]:
        values = [entry.get(key) for entry in entries]
        if key in _SUMMED:
            if not all(type(v) is int and v >= 0 for v in values):
                raise ValueError(f"reference_check {key!r}: {values!r} are not vector counts")
            merged[key] = sum(values)
        elif any(v != values[0] for v in values):
            raise ValueError(f"reference_check {key!r} differs between the shards: {values!r}")
        else:
            merged[key] = values[0]
    if any(set(entry) != set(merged) for entry in entries):
        raise ValueError("reference_check entries of the shards have different keys")
    return merged

