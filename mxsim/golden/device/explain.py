"""Explaining a device's mismatches: the configuration that reproduces them (``check --explain``).

After :func:`.check.check` found mismatching vectors, :func:`explain` recomputes the expected
values of the suite under other configurations and asks which one gives the device's values:

* **candidates**, in this order: the named bundles the suite's kind offers (its
  ``explain_bundles``: the block profiles of :data:`mxsim.options.profiles.PROFILES` for
  ``quantize`` and ``dequantize`` suites, cast profiles for ``encode`` suites, the accumulator
  presets of :data:`mxsim.options.PRESETS` for ``dot`` and ``dotgeneral`` suites; the kind's
  ``with_bundle`` makes the params under one); then every single option change: each allowed
  value of each option of the suite's options classes (``nested_options``: QuantizeOptions,
  DequantizeOptions, Accumulator; and the kind's ``explain_options``, the options it takes as
  top-level params: EncodeOptions ``rounding`` / ``overflow`` of ``encode`` suites,
  ``scale_encoding`` of ``dequantize`` suites). A choice option takes each of its other values, a
  flag the other one, an integer option its neighbours (current +-1, 2, 3, 4, 8, 16 within its
  range; an unset one, all values of a range of at most 8, else the values its range names as
  worth trying (``tries``: ``promote_every`` 32, 64, 128, 256), else it is not varied). A change
  the options layer or the
  suite refuses (an option that does not apply to the format: ValueError) is skipped, and so is
  one that makes the same suite as another candidate;
* **pairs** of two changes among the best single candidates that reproduce part (not all) of the
  mismatching vectors (at most :data:`PAIR_POOL` of them), when no single candidate explains
  everything;
* **evaluation** on the mismatching vectors (all of them, or a seeded sample of
  :data:`MAX_MISMATCHING`) plus a seeded sample of :data:`MAX_MATCHING` matching vectors: a
  candidate *reproduces* a mismatching vector when its values equal the device's in every
  compared field, and *breaks* a matching vector when they do not. Expected values come from
  :func:`.pipeline.expected` (the suite's ``compute_batch`` fast path where a kind has one, else the
  reference model per vector);
* **ranking** by reproduced minus broken (then fewer broken, then fewer changes); each result
  names the corner classes of the vectors it reproduces and of those it leaves
  (:mod:`..coverage.catalogue`, origin classes left out); the winner, if it breaks nothing in the sample, is
  **confirmed** on every vector of the suite.

The search is bounded by ``budget`` seconds: it stops between candidates (and between chunks of
the confirmation) when the budget is spent and reports what it did not try.
"""

from __future__ import annotations

import copy
import io
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ...options.spec import Choice, Flag, IntRange, NameOrPattern, options_of
from .check import CHUNK, CheckError, CheckReport, _Device, open_suite_files
from ..coverage.catalogue import ORIGIN_MASK, class_names
from ..storage.columns import RecordReader
from ..compute.pipeline import expected
from ..kinds.registry import suite_from_spec

__all__ = ["explain", "ExplainReport", "Result", "Change", "explain_lines", "candidates", "MAX_MISMATCHING",
           "MAX_MATCHING", "PAIR_POOL"]

MAX_MISMATCHING = 200  # mismatching vectors each candidate is tried on (a seeded sample beyond)
MAX_MATCHING = 200  # matching vectors each candidate must not break (a seeded sample)
PAIR_POOL = 8  # best partial single candidates whose pairs are tried
_STEPS = (1, 2, 3, 4, 8, 16)  # neighbours of an integer option
_SMALL_RANGE = 8  # an unset integer option with at most this many values tries them all


@dataclass(frozen=True)
class Change:
    """One change of a suite's params: ``key`` an option name, or ``profile`` / ``preset`` (a
    named bundle); ``target`` the params key holding the option (a nested options dict such as
    ``options`` or ``accumulator``), None for a top-level param or a bundle."""

    key: str
    value: object
    target: str | None = None

    @property
    def label(self) -> str:
        if self.key in ("profile", "preset"):
            return f"{self.key} {self.value}"
        value = f"0x{self.value:X}" if self.key in ("nan_code", "nan_bits") and isinstance(self.value, int) \
            else self.value
        return f"{self.key}={value}"


def _label(changes: tuple[Change, ...]) -> str:
    return " + ".join(change.label for change in changes)


@dataclass
class Result:
    """One candidate tried: ``reproduced``, the 0-based lines of the sampled mismatching vectors
    whose device values it gives; ``broken``, how many sampled matching vectors it changes;
    the corner classes of the reproduced and of the remaining mismatching vectors; ``confirmed``
    (the winner only): (vectors compared, vectors where it differs from the device, the first
    such lines) over the whole suite, None if not run."""

    changes: tuple[Change, ...]
    name: str
    reproduced: np.ndarray
    broken: int
    accounts: Counter
    left: Counter
    confirmed: tuple[int, int, list[int]] | None = None

    @property
    def label(self) -> str:
        return _label(self.changes)

    def score(self) -> tuple:
        return (-(len(self.reproduced) - self.broken), self.broken, len(self.changes), self.label)


@dataclass
class ExplainReport:
    """What :func:`explain` found: the sample sizes, every candidate result ranked, the
    candidates skipped (refused by the options layer or the suite, with the reason), how many
    changed nothing on the sample, and the ones the budget left untried."""

    mismatching: int
    sampled_mismatching: int
    sampled_matching: int
    vectors: int
    results: list[Result] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    no_effect: list[str] = field(default_factory=list)
    duplicates: int = 0
    untried: list[str] = field(default_factory=list)
    not_varied: list[str] = field(default_factory=list)
    pairs_tried: int = 0
    pairs_skipped: bool = False
    budget: float = 0.0
    seconds: float = 0.0
    budget_out: bool = False

    @property
    def explaining(self) -> list[Result]:
        """Results that reproduce at least one mismatching vector and break no matching one."""
        return [r for r in self.results if len(r.reproduced) and not r.broken]

    @property
    def best(self) -> Result | None:
        explaining = self.explaining
        return explaining[0] if explaining else None


# --- candidates ------------------------------------------------------------------------------
def _values(definition, current) -> list:
    """The values an option is tried at, nearest first (see the module docstring)."""
    allowed = definition.allowed
    if isinstance(allowed, Flag):
        return [not current]
    if isinstance(allowed, Choice):
        return [v for v in allowed.values if v != current] + ([None] if allowed.none and current is not None else [])
    if isinstance(allowed, NameOrPattern):  # the named values (an output's fp32_eXmY family is not enumerated)
        return [v for v in allowed.values if v != current]
    if isinstance(allowed, IntRange):
        if current is None:
            span = allowed.high - allowed.low + 1
            return list(range(allowed.low, allowed.high + 1)) if span <= _SMALL_RANGE else list(allowed.tries)
        near = [current + sign * step for step in _STEPS for sign in (-1, 1)]
        values = [v for v in near if allowed.low <= v <= allowed.high]
        values += [v for v in allowed.tries if v != current and v not in values]
        return values + ([None] if allowed.none else [])
    return []  # Data: caller-supplied data, not a setting


def candidates(suite, params: dict) -> tuple[list[tuple[Change, ...]], list[str]]:
    """(single-change candidates in trial order, options not varied) of a suite with manifest
    ``params``: the kind's bundles first (``explain_bundles``), then every option change of its
    nested options and of its top-level ``explain_options`` (see the module docstring)."""
    out: list[tuple[Change, ...]] = [(Change(key, name),) for key, name in suite.explain_bundles(params)]
    not_varied = []
    groups = [(target, cls, params.get(target, {})) for target, cls in suite.nested_options.items()]
    top = suite.explain_options
    if top is not None:
        names = {d.name for d in options_of(top)}
        groups.append((None, top, {k: v for k, v in params.items() if k in names}))
    for target, cls, current in groups:
        for definition in options_of(cls):
            if not definition.cli or (target is None and definition.name not in current):
                continue
            value = current.get(definition.name, definition.default)
            values = _values(definition, value)
            if not values:
                not_varied.append(definition.name)
            out += [(Change(definition.name, v, target),) for v in values]
    return out, not_varied


def apply(suite, params: dict, changes: tuple[Change, ...]) -> dict:
    """The params of ``suite`` (manifest ``params``) with ``changes``, bundles first (the kind's
    ``with_bundle``)."""
    p = copy.deepcopy(params)
    for change in sorted(changes, key=lambda c: c.key not in ("profile", "preset")):
        if change.key in ("profile", "preset"):
            p = suite.with_bundle(p, change.key, change.value)
        elif change.target is not None:
            p[change.target] = {**p.get(change.target, {}), change.key: change.value}
        else:
            p[change.key] = change.value
    return p


# --- the vectors -----------------------------------------------------------------------------
@dataclass
class _Sample:
    """The sampled vectors: 0-based ``lines`` (mismatching first), their inputs (one list per
    input field), device values (one list per compared field) and flags."""

    lines: np.ndarray
    mismatching: int
    inputs: dict[str, list[int]]
    device: dict[str, list[int]]
    flags: list[int]


def _chunks(report: CheckReport, dut, chunk: int = CHUNK, pick=None):
    """(start, inputs, device values, flags) of every chunk of the suite's vectors as lists of
    Python ints (only the rows ``pick(start, size)`` returns, an index array, when given);
    ``dut`` a directory, or the bytes of a stream."""
    suite, suite_dir = report.suite, report.suite_dir
    outputs = [f for f in suite.outputs if f.name in report.fields]
    scratch = CheckReport(suite_dir, suite, report.manifest, report.source, report.fields)
    device = _Device(suite, dut if isinstance(dut, (str, Path)) else io.BytesIO(dut), outputs, scratch)
    ours = suite.inputs + [suite.fields[-1]]
    files = open_suite_files(suite_dir, ours)
    try:
        readers = {f.name: RecordReader(files[f.name], [f], str(suite_dir / f.file)) for f in ours}
        for start in range(0, report.vectors, chunk):
            size = min(chunk, report.vectors - start)
            digits = {name: reader.read(size)[:, :-1] for name, reader in readers.items()}
            got = device.read(size, start)
            if scratch.errors:
                raise CheckError(f"the device's results could not be read again: {scratch.errors[0]}")
            rows = np.arange(size) if pick is None else pick(start, size)
            if not len(rows):
                continue

            def ints(f, array):
                return [f.from_hex(array[row].tobytes().decode()) for row in rows]

            yield (start + rows, {f.name: ints(f, digits[f.name]) for f in suite.inputs},
                   {f.name: ints(f, got[f.name]) for f in outputs}, ints(suite.fields[-1], digits["flags"]))
    finally:
        device.close()
        for file in files.values():
            file.close()


def _sample(report: CheckReport, dut, seed: int) -> _Sample:
    rng = np.random.default_rng(seed)
    mismatching = report.mismatching
    if len(mismatching) > MAX_MISMATCHING:
        mismatching = np.sort(rng.choice(mismatching, MAX_MISMATCHING, replace=False))
    matching = np.setdiff1d(np.arange(report.vectors), report.mismatching)
    if len(matching) > MAX_MATCHING:
        matching = np.sort(rng.choice(matching, MAX_MATCHING, replace=False))
    lines = np.concatenate([mismatching, matching]).astype(np.int64)
    order = np.argsort(lines, kind="stable")
    wanted = lines[order]
    inputs = {f.name: [0] * len(lines) for f in report.suite.inputs}
    device = {name: [0] * len(lines) for name in report.fields}
    flags = [0] * len(lines)

    def pick(start, size):
        low, high = np.searchsorted(wanted, [start, start + size])
        return wanted[low:high] - start

    done = 0
    for numbers, ins, dev, fl in _chunks(report, dut, pick=pick):
        for j in range(len(numbers)):
            i = int(order[done + j])
            for name, column in ins.items():
                inputs[name][i] = column[j]
            for name, column in dev.items():
                device[name][i] = column[j]
            flags[i] = fl[j]
        done += len(numbers)
    return _Sample(lines, len(mismatching), inputs, device, flags)


def _computed(candidate_suite, inputs: dict, fast: bool = False) -> dict[str, list]:
    """The candidate's output values, one list per field (None where a vector's computation fails);
    ``fast``: the kind's ``explain_outputs`` where it has one, else the suite's own
    :func:`.pipeline.expected`."""
    if fast:
        try:
            with np.errstate(all="ignore"):  # Inf maxima in float32 steps; the fast path handles them
                found = candidate_suite.explain_outputs(inputs)
            if found is not None:
                return found
        except (ValueError, ArithmeticError):
            pass  # the reference says which vectors it refuses
    try:
        outputs, _ = expected(candidate_suite, inputs)
        return outputs
    except (ValueError, ArithmeticError):  # one vector the candidate refuses: the others per vector
        pass
    names = list(inputs)
    out: dict[str, list] = {f.name: [] for f in candidate_suite.outputs}
    for values in zip(*inputs.values()):
        try:
            got, _ = expected(candidate_suite, {name: [v] for name, v in zip(names, values)})
        except (ValueError, ArithmeticError):
            got = {name: [None] for name in out}
        for name in out:
            out[name].append(got[name][0])
    return out


def _agrees(computed: dict, device: dict, fields: list[str]) -> np.ndarray:
    n = len(next(iter(device.values())))
    same = np.ones(n, dtype=bool)
    for name in fields:
        same &= np.array([a == b for a, b in zip(computed[name], device[name])], dtype=bool)
    return same


def _classes(flags) -> Counter:
    counts: Counter = Counter()
    for word in flags:
        counts.update(class_names(word & ~ORIGIN_MASK))
    return counts


# --- the search ------------------------------------------------------------------------------
def explain(report: CheckReport, dut, budget: float = 60.0, seed: int = 0, progress: bool = False) -> ExplainReport:
    """Search for the configuration that reproduces the device (see the module docstring).
    ``report``: the :class:`.check.CheckReport` of a complete check with mismatches; ``dut``: the
    device's directory as given to check, or the bytes of the stream it read; ``budget``:
    seconds; ``progress``: a progress bar on stderr."""
    began = time.monotonic()
    deadline = began + budget
    if report.errors:
        raise CheckError("explain needs a complete comparison; the device's results have file errors")
    suite, params = report.suite, report.manifest["params"]
    fields = list(report.fields)
    sample = _sample(report, dut, seed)
    out = ExplainReport(len(report.mismatching), sample.mismatching, len(sample.lines) - sample.mismatching,
                        report.vectors, budget=budget)
    if not sample.mismatching:
        out.seconds = time.monotonic() - began
        return out
    singles, out.not_varied = candidates(suite, params)
    seen = {json.dumps(suite.params(), sort_keys=True, default=str)}
    miss = np.arange(len(sample.lines)) < sample.mismatching
    queue = list(singles)
    bar = tqdm(total=len(queue), desc="explain", unit="config", file=sys.stderr, disable=not progress, leave=False)
    pairs_added = False
    try:
        while queue:
            if time.monotonic() > deadline:
                out.budget_out = True
                out.untried = [_label(c) for c in queue]
                out.pairs_skipped = not pairs_added
                break
            changes = queue.pop(0)
            bar.update(1)
            result = _try(suite, params, changes, sample, fields, miss, seen, out)
            if result is not None:
                out.results.append(result)
            if not queue and not pairs_added:
                pairs_added = True
                pairs = _pairs(out.results, sample.mismatching)
                queue += pairs
                out.pairs_tried = len(pairs)
                bar.total += len(pairs)
                bar.refresh()
        out.results.sort(key=Result.score)
        best = out.best
        if best is not None:
            best.confirmed = _confirm(report, dut, suite, params, best, fields, deadline)
            out.budget_out |= best.confirmed[0] < report.vectors
    finally:
        bar.close()
    out.seconds = time.monotonic() - began
    return out


def _try(suite, params, changes, sample: _Sample, fields, miss, seen: set, out: ExplainReport) -> Result | None:
    label = _label(changes)
    try:
        candidate = suite_from_spec(suite.kind, **apply(suite, params, changes))
    except (ValueError, TypeError, KeyError) as error:
        out.refused.append((label, str(error).split("\n")[0]))
        return None
    key = json.dumps(candidate.params(), sort_keys=True, default=str)
    if key in seen:
        out.duplicates += 1
        return None
    seen.add(key)
    if [(f.name, f.bits) for f in candidate.inputs] != [(f.name, f.bits) for f in suite.inputs] or \
            any(name not in {f.name for f in candidate.outputs} for name in fields):
        out.refused.append((label, "its vectors have other fields"))
        return None
    try:
        computed = _computed(candidate, sample.inputs, fast=True)
    except Exception as error:  # noqa: BLE001 - a suite that cannot compute this configuration: skip it
        out.refused.append((label, f"its expected values cannot be computed ({type(error).__name__}: {error})"))
        return None
    same = _agrees(computed, sample.device, fields)
    reproduced = sample.lines[miss & same]
    broken = int((~miss & ~same).sum())
    flags = np.array(sample.flags, dtype=object)
    result = Result(changes, candidate.name, reproduced, broken, _classes(flags[miss & same]),
                    _classes(flags[miss & ~same]))
    if not len(reproduced) and not broken:
        out.no_effect.append(label)
    return result


def _pairs(results: list[Result], mismatching: int) -> list[tuple[Change, ...]]:
    """Pairs of two changes that may explain more together: for each of the best
    :data:`PAIR_POOL` // 2 single candidates that reproduce part of the mismatching vectors, the
    singles that reproduce most of the vectors it leaves (at most :data:`PAIR_POOL` of them).
    None when a single candidate reproduces all without breaking any."""
    if any(len(r.reproduced) == mismatching and not r.broken for r in results):
        return []
    partial = sorted((r for r in results if len(r.changes) == 1 and len(r.reproduced)), key=Result.score)
    pairs, seen = [], set()
    for first in partial[: PAIR_POOL // 2]:
        covered = set(first.reproduced.tolist())
        gain = [(len(set(r.reproduced.tolist()) - covered), r) for r in partial if r is not first]
        gain = sorted((item for item in gain if item[0]), key=lambda item: (-item[0], item[1].score()))
        for _, second in gain[:PAIR_POOL]:
            a, b = first.changes[0], second.changes[0]
            key = frozenset((a, b))
            if (a.key == b.key and a.target == b.target) or key in seen:
                continue  # one option cannot take two values
            seen.add(key)
            pairs.append((a, b))
    return pairs


def _confirm(report: CheckReport, dut, suite, params, best: Result, fields, deadline: float):
    """(vectors compared, vectors differing, first differing 0-based lines) of the winner over
    the whole suite, chunk by chunk until the deadline."""
    candidate = suite_from_spec(suite.kind, **apply(suite, params, best.changes))
    compared, differing, first = 0, 0, []
    for numbers, inputs, device, _ in _chunks(report, dut, chunk=1024):
        if time.monotonic() > deadline and compared:
            break
        same = _agrees(_computed(candidate, inputs, fast=True), device, fields)
        compared += len(same)
        bad = np.flatnonzero(~same)
        differing += len(bad)
        first += [int(numbers[i]) for i in bad[: max(0, 10 - len(first))]]
    return compared, differing, first


# --- the text --------------------------------------------------------------------------------
def _counts(counter: Counter, limit: int = 6) -> str:
    items = counter.most_common()
    text = ", ".join(f"{name} {n}" for name, n in items[:limit])
    return text + (", ..." if len(items) > limit else "") if items else "no corner class"


def explain_lines(out: ExplainReport, top: int = 10) -> list[str]:
    """The explanation as text: what was tried, the ranked candidates with the classes they
    account for and leave, the winner's confirmation, and what was not tried."""
    m, g = out.sampled_mismatching, out.sampled_matching
    sampled = f"all {m}" if m == out.mismatching else f"a sample of {m} of the {out.mismatching}"
    tried = len(out.results)
    lines = [f"explain: {tried} configuration(s) tried ({out.pairs_tried} of them pairs) on {sampled} mismatching "
             f"vector(s) and {g} matching one(s) (seeded sample) in {out.seconds:.1f} s of a {out.budget:g} s budget"]
    if not out.mismatching:
        return ["explain: no mismatching vector, nothing to explain"]
    ranked = [r for r in out.results if len(r.reproduced)]
    for rank, r in enumerate(ranked[:top], 1):
        n = len(r.reproduced)
        what = f"all {m}" if n == m else f"{n} of {m}"
        text = f"  {rank}. {r.label} reproduces {what} mismatching vector(s)"
        text += f", breaks {r.broken} of {g} matching" if r.broken else f" and none of {g} matching"
        text += f"; accounts for: {_counts(r.accounts)}"
        if n < m:
            text += f"; the other {m - n}: {_counts(r.left)}"
        lines.append(text)
    if len(ranked) > top:
        lines.append(f"  ... {len(ranked) - top} more reproduce some")
    best = out.best
    if best is not None and best.confirmed is not None:
        compared, differing, first = best.confirmed
        whole = f"all {compared}" if compared == out.vectors else f"the first {compared} of {out.vectors}"
        if differing:
            shown = ", ".join(str(i + 1) for i in first)
            lines.append(f"best: {best.label} (suite {best.name}): on {whole} vectors the device still differs "
                         f"from it on {differing} (line(s) {shown}{', ...' if differing > len(first) else ''})")
        else:
            lines.append(f"best: {best.label} (suite {best.name}): on {whole} vectors the device matches it exactly")
        tied = [r.label for r in out.explaining[1:] if r.score()[:2] == best.score()[:2]]
        if tied:
            lines.append(f"equally good on the sampled vectors (these vectors cannot tell them apart): {', '.join(tied[:6])}"
                         + (", ..." if len(tied) > 6 else ""))
    elif best is None:
        lines.append(f"no configuration tried reproduces any of the {out.mismatching} mismatching vector(s) without "
                     "breaking matching ones: not an option or profile mxsim knows (e.g. a flipped bit or a datapath "
                     "defect); see the mismatches above")
    if out.no_effect:
        lines.append(f"{len(out.no_effect)} configuration(s) reproduce none and break none (e.g. "
                     f"{', '.join(out.no_effect[:3])})")
    if out.refused:
        lines.append(f"{len(out.refused)} configuration(s) skipped, refused for this suite (e.g. {out.refused[0][0]}: "
                     f"{out.refused[0][1][:120]})")
    if out.duplicates:
        lines.append(f"{out.duplicates} configuration(s) skipped as the same suite as another")
    if out.not_varied:
        lines.append(f"not varied (unset integer options with no neighbourhood): {', '.join(out.not_varied)}")
    if out.budget_out:
        if out.untried:
            lines.append(f"budget spent: {len(out.untried)} configuration(s) not tried: "
                         f"{', '.join(out.untried[:8])}{', ...' if len(out.untried) > 8 else ''}"
                         f"{'; pairs of changes not tried either' if out.pairs_skipped else ''} (raise --budget)")
        else:
            lines.append("budget spent: the confirmation stopped early (raise --budget)")
    return lines
