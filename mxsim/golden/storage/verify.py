"""Verifying golden suites: files, manifests, the root's index, and the vectors themselves.

Verifying a directory reports, suite by suite, and never stops at the first bad suite: a
directory of hex files without a manifest (an incomplete suite), a leftover temporary file, a
manifest that cannot be read or lacks a key, a file not listed in its manifest, a SHA-256 or
line count that differs, CRLF line endings, a line that is not hex (file, line and field), what
the manifest records that can be recomputed and differs (``seed``, ``level``, the ``stimulus`` and
the ``count`` it makes, a shard's place, the ``coverage`` counted from ``flags.hex``), a line whose
inputs or origin are not the vector the seed draws for it (lines reordered, cut or edited), and
every vector whose recomputed outputs or flags differ from the file's (the first per suite; a shard
beside its merged suite is compared with it line for line instead, :mod:`.merged_shards`); and, against the index
at the root (found in the directory or up to three levels above), every indexed suite that is
missing, unfinished or whose manifest changed, and every suite the index does not list.

Files are read a block at a time (SHA-256, line count) and then a chunk of lines at a time
(:mod:`.columns`: every line's format), so memory stays bounded whatever the suite's size.

Every vector is recomputed as generation computes it (:class:`..compute.crosscheck.CrossCheck`):
by the fast path where the suite's kind has one, with the reference model recomputing every
catalogue line and the seeded sample beyond it (the manifest's ``reference_check`` rule; a fast
path that disagrees with the reference is a problem of its own); by the reference model alone for
kinds without a fast path and for a chunk of lines the reference recomputes every one of (the
catalogue's: the fast path would add nothing there). The canonical suite is catalogue only, so
the reference recomputes every one of its vectors, as before. ``reference_only=True`` recomputes every vector with the reference
model. ``sample=K`` recomputes (with the reference model) every *directed* vector (flags bit
``directed``) and K vectors drawn uniformly from all lines with
``random.Random("mxsim-verify:<sample_seed>:<kind>/<suite>")`` (a drawn vector may be directed
too), checking those lines' stimulus, and still checks every file's hash, line count and format
and the coverage in full.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
from tqdm import tqdm

from ... import __version__
from ...reading import shorten
from ..compute import limits
from ..compute import pipeline
from ..coverage.catalogue import CLASSES, ORIGIN_MASK, class_names, flag_bits
from ..compute.crosscheck import CrossCheck, ReferenceDisagreement
from .columns import NotRegularFile, RecordError, RecordReader, field_values, open_regular
from .merged_shards import compare_with_merged, merged_suite
from .suite_files import check_files
from .files import INDEX, MANIFEST, MANIFEST_KEYS, MAX_JSON_BYTES, NPZ, _is_temporary, _read_index, read_json, _sha256
from .files import shard_lines as files_shard_lines
from ..kinds.registry import suite_from_spec

__all__ = ["verify", "VerifyReport", "load_suite", "recompute", "flags_coverage"]

_DIRECTED = flag_bits(["directed"])


@dataclass
class VerifyReport:
    """What :func:`verify` found: ``suites`` checked, ``lines`` (vectors) read, ``vectors``
    recomputed (all of them unless ``sample``), ``reference`` of them by the reference model (every
    catalogue line and the seeded sample where a fast path computed the rest; all of them with
    ``reference_only``, ``sample`` or a kind without a fast path), and every problem (the first
    mismatching line of each suite, with its field and both values). ``shards``: shards of merged
    suites verified here too, compared line for line with them (:mod:`.merged_shards`; their
    ``shard_lines`` counted in neither ``suites``, ``lines`` nor ``vectors``)."""

    suites: int = 0
    vectors: int = 0
    lines: int = 0
    sample: int | None = None
    sample_seed: int = 0
    problems: list[str] = field(default_factory=list)
    reference: int = 0
    shards: int = 0
    shard_lines: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line: what was checked."""
        text = f"{self.suites} suite(s), {self.vectors} vectors recomputed"
        if self.reference < self.vectors:
            text += (f" ({self.reference} by the reference model: every catalogue line and the seeded sample; "
                     "the rest by the fast path)")
        if self.sample is not None:
            text += (f" of {self.lines} (every directed vector and {self.sample} sampled per suite, sample seed "
                     f"{self.sample_seed}; every line's hash and format checked)")
        if self.shards:
            text += (f"; {self.shards} shard(s) of merged suites ({self.shard_lines} lines) compared line for line "
                     "with their merged suite")
        return text


def verify(path, progress: bool = False, sample: int | None = None, sample_seed: int = 0,
           cluster=None, reference_only: bool = False) -> VerifyReport:
    """Verify every suite at or under ``path`` against its manifest, the recomputed vectors and the
    root's index (see the module docstring). Every problem is reported; none stops the rest.
    ``sample``: recompute only the directed vectors and ``sample`` drawn ones per suite.
    ``reference_only``: recompute every vector with the reference model (no fast path).
    ``cluster``: a :class:`.cluster.Cluster` to recompute ranges of lines on (the same report)."""
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 0):
        raise ValueError(f"sample={sample!r} is not allowed; expected a non-negative integer")
    path = Path(path)
    report = VerifyReport(sample=sample, sample_seed=sample_seed)
    if not path.is_dir():  # a usage error, not a suite that fails (exit 2, not 1)
        raise ValueError(f"{path}: {'not a directory' if path.exists() else 'no such directory'} (verify takes the "
                         "directory of a suite, or a root of suites with its index.json)")
    manifests = sorted(path.rglob(MANIFEST))
    _check_tree(path, report)
    _check_index(path, manifests, report)
    if not manifests:
        report.problems.append(f"{path}: no {MANIFEST} found")
    parts, jobs = [], []  # per suite: its report and its jobs (cluster only)
    verified = {manifest.parent for manifest in manifests}
    for number, manifest_path in enumerate(manifests, 1):
        directory = manifest_path.parent
        whole = merged_suite(directory)  # a shard beside its merged suite (verified here too): compared with it
        whole = whole if whole in verified else None
        part = VerifyReport(sample=sample, sample_seed=sample_seed)
        try:
            prepared = _prepare_suite(directory, part)
        except Exception as error:  # noqa: BLE001 - report it and go on with the other suites
            part.problems.append(_not_checked(directory, error))
            prepared = None
        if whole is not None:
            report.shards += 1
            part.shard_lines, part.lines = part.lines, 0
            if prepared is not None:
                suite, count, _, located = prepared
                problem = compare_with_merged(directory, whole, suite.fields, located[3], count)
                part.problems += [problem] if problem else []
            parts.append((part, []))
            continue
        report.suites += 1
        if prepared is None:
            parts.append((part, []))
        elif cluster is None:
            label = f"suite {number}/{len(manifests)} {directory}" if progress else None
            suite, count, picked, located = prepared
            _add_ranges(part, [recompute(directory, 0, count, picked, label, suite, reference_only=reference_only,
                                         located=located)])
            parts.append((part, []))
        else:
            suite, count, picked, _ = prepared
            ranges = cluster.ranges(count, _RANGE_VECTORS, pipeline.CHUNK)
            parts.append((part, ranges))
            jobs += [(str(directory), first, last, _within(picked, first, last), None, None, os.getcwd(),
                      reference_only) for first, last in ranges]
    results = iter(cluster.map(recompute, jobs, "verify" if progress else None)) if jobs else iter(())
    for part, ranges in parts:
        _add_ranges(part, [next(results) for _ in ranges])
        report.vectors += part.vectors
        report.reference += part.reference
        report.lines += part.lines
        report.shard_lines += part.shard_lines
        report.problems += part.problems
    return report


_RANGE_VECTORS = 1 << 14  # at least this many lines per task on a cluster


def _within(picked, first: int, last: int):
    return None if picked is None else picked[(picked >= first) & (picked < last)]


def _not_checked(directory: Path, error: Exception) -> str:
    return f"{directory}: could not be checked ({type(error).__name__}: {error})"


def _add_ranges(part: VerifyReport, results: list[VerifyReport]) -> None:
    """Add the results of consecutive ranges of one suite's lines up to the first with a problem
    (what one pass over the lines finds: it stops at the first)."""
    for result in results:
        part.vectors += result.vectors
        part.reference += result.reference
        if result.problems:
            part.problems += result.problems
            return


def _check_tree(path: Path, report: VerifyReport) -> None:
    """Directories of hex files without a manifest, and leftover temporary files."""
    for directory, _, names in sorted(os.walk(path)):
        for name in sorted(names):
            if _is_temporary(name):
                report.problems.append(f"{Path(directory) / name}: leftover temporary file (a write was interrupted)")
        if MANIFEST not in names and any(name.endswith(".hex") or name == NPZ for name in names):
            report.problems.append(
                f"{directory}: hex files but no {MANIFEST}: an incomplete suite (its generation was cut short, or "
                "the manifest deleted); generate it again"
            )


def _find_index(path: Path):
    """(root, index, problem): the index in ``path`` or up to three directories above (a suite
    directory, its kind and the root; a shard one more). An unreadable index in ``path`` itself is
    a problem; above it, a file that is not an mxsim index is passed over."""
    here = path.resolve()
    for candidate in [here, *list(here.parents)[:3]]:
        file = candidate / INDEX
        if not file.is_file():
            if candidate == here and os.path.lexists(file):  # there, but a FIFO, a device, a broken link
                return candidate, None, f"{path / INDEX}: {_not_regular(file)}"
            continue
        try:
            return candidate, _read_index(file), None
        except (OSError, ValueError) as error:
            if candidate == here:
                return candidate, None, f"{path / INDEX}: {error}"
    return None, None, None


def _not_regular(path: Path) -> str:
    """What ``path`` is, when it is there but not a regular file (:func:`.columns.open_regular`)."""
    try:
        open_regular(path).close()
    except OSError as error:
        if isinstance(error, NotRegularFile):
            return error.strerror
        return f"unreadable ({error.strerror}; a symlink to nothing?)"
    return "changed while it was read"


def _check_index(path: Path, manifests: list[Path], report: VerifyReport) -> None:
    root, index, problem = _find_index(path)
    if problem:
        report.problems.append(problem)
        return
    if index is None:
        if not (path / MANIFEST).exists():  # a lone suite directory needs no index
            report.problems.append(
                f"{path}: no {INDEX} here or in the directories above, so missing suites cannot be told "
                "(mxsim golden generate writes one at the root)"
            )
        return
    here = PurePosixPath(path.resolve().relative_to(root).as_posix())

    def shown(key: str) -> Path:
        return path / PurePosixPath(key).relative_to(here) if str(here) != "." else path / key

    def inside(key: str) -> bool:
        return str(here) == "." or key == str(here) or key.startswith(f"{here}/")

    entries = {key: entry for key, entry in index["suites"].items() if inside(key)}
    found = {manifest.parent.resolve().relative_to(root).as_posix(): manifest for manifest in manifests}
    for key, entry in sorted(entries.items()):
        manifest = found.get(key)
        if entry is None:
            report.problems.append(f"{shown(key)}: listed in {INDEX} but its generation did not finish (interrupted "
                                   "or failed); generate it again")
        elif manifest is None:
            report.problems.append(f"{shown(key)}: missing (listed in {INDEX})")
        else:
            try:
                with open_regular(manifest) as file:
                    data = file.read(MAX_JSON_BYTES + 1)
            except OSError as error:
                report.problems.append(f"{manifest}: unreadable ({error.strerror})")
                continue
            if _sha256(data) != entry["manifest_sha256"]:
                report.problems.append(f"{manifest}: SHA-256 differs from {INDEX} (the manifest was edited or the "
                                       "suite replaced)")
    for key in sorted(set(found) - set(entries)):
        report.problems.append(f"{shown(key)}: not listed in {INDEX} (copied in from elsewhere, or the index is stale)")


def _manifest_problem(manifest) -> str | None:
    if not isinstance(manifest, dict):
        return f"expected a JSON object, found {type(manifest).__name__}"
    for key, kind in MANIFEST_KEYS.items():
        if key not in manifest:
            return f"missing key {key!r} (a manifest mxsim writes has {', '.join(MANIFEST_KEYS)} and more)"
        value = manifest[key]
        if not isinstance(value, kind) or isinstance(value, bool) or (key == "count" and value < 0):
            expected = {int: "a non-negative integer", str: "a string", dict: "a JSON object", list: "a list"}[kind]
            return f"{key!r} is {json.dumps(value)[:60]}, expected {expected}"
    if not all(isinstance(v, str) for v in manifest["files"].values()):
        return "'files' must map file names to SHA-256 strings"
    return None


def load_suite(directory) -> tuple[dict, object]:
    """(manifest, suite) of a suite directory; ValueError naming the file and what is wrong with
    it (unreadable, a key missing, params that do not make a suite, another field layout)."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    try:
        manifest = read_json(manifest_path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{manifest_path}: {getattr(error, 'strerror', None) or error}") from None
    problem = _manifest_problem(manifest)
    if problem:
        raise ValueError(f"{manifest_path}: {problem}")
    try:
        suite = suite_from_spec(manifest["kind"], **manifest["params"])
    except (ValueError, TypeError) as error:
        raise ValueError(f"{manifest_path}: its kind and params do not make a suite ({error})") from None
    if suite.name != manifest["suite"]:
        raise ValueError(f"{manifest_path}: 'suite' is {manifest['suite']!r}, but its kind and params make "
                         f"{suite.name!r}")
    if [f.describe() for f in suite.fields] != manifest["fields"]:
        raise ValueError(f"{directory}: the manifest's field layout differs from what mxsim {__version__} writes for "
                         "this suite")
    return manifest, suite


def _load_suite(directory: Path, report: VerifyReport):
    """The manifest and the suite it describes, or None after reporting why not."""
    try:
        return load_suite(directory)
    except ValueError as error:
        report.problems.append(str(error))
        return None


def _prepare_suite(directory: Path, part: VerifyReport):
    """Load a suite and check its files (problems into ``part``); (suite, lines, sampled lines or
    None, what :func:`_located` found) when its vectors can be recomputed, else None."""
    loaded = _load_suite(directory, part)
    if loaded is None or not check_files(directory, *loaded, part.problems):
        return None
    manifest, suite = loaded
    located = _check_recorded(directory, manifest, suite, part)
    if located is None:
        return None
    count = manifest["count"]
    part.lines += count
    picked = None
    if part.sample is not None and part.sample < count:
        rng = random.Random(f"mxsim-verify:{part.sample_seed}:{suite.kind}/{suite.name}")
        picked = np.array(sorted(rng.sample(range(count), part.sample)), dtype=np.int64)
    return suite, count, picked, located


def _check_recorded(directory: Path, manifest: dict, suite, part: VerifyReport):
    """What the manifest records besides the files, recomputed (problems into ``part``; what
    :func:`_located` found if the vectors are worth recomputing, else None): ``seed`` and
    ``level``; the ``stimulus`` (what ``plan`` gives for the suite, level and count asked for), the
    ``count`` it makes (a shard: its share, at its ``first_line``); and the ``coverage`` (every
    class counted from ``flags.hex``). The stimulus of every line, and so the lines' order, is
    checked against the seed as the vectors are read (:func:`recompute`)."""
    where = directory / MANIFEST
    located = _located(manifest, suite)
    if isinstance(located, str):
        part.problems.append(f"{where}: {located}")
        return None
    coverage = manifest.get("coverage")
    try:
        counted = flags_coverage(directory / suite.fields[-1].file, suite.fields[-1], manifest["count"])
    except (RecordError, OSError):
        return located  # the lines are reported as recompute reads them
    if coverage != counted:
        differs = [f"{name} {coverage.get(name) if isinstance(coverage, dict) else None} (flags.hex: {n})"
                   for name, n in counted.items() if not isinstance(coverage, dict) or coverage.get(name) != n]
        part.problems.append(f"{where}: 'coverage' differs from the classes counted in flags.hex: "
                             f"{', '.join(differs) or _short(coverage)}")
    return located


def _short(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _located(manifest: dict, suite):
    """(seed, level, plan, the first line of the whole suite this directory holds), or the
    problem with ``seed``, ``level``, ``stimulus``, ``count`` or ``shard``."""
    seed, level, stimulus = manifest.get("seed"), manifest.get("level"), manifest.get("stimulus")
    if type(seed) is not int:
        return f"'seed' is {_short(seed)}, expected an integer"
    if not (type(level) is int and 1 <= level <= 10):
        return f"'level' is {_short(level)}, expected an integer in [1, 10]"
    requested = stimulus.get("count_requested") if isinstance(stimulus, dict) else None
    try:
        plan = pipeline.plan(suite, level, requested)
    except ValueError:
        return f"'stimulus' is {_short(stimulus)}, not what mxsim draws (its count_requested is no count)"
    if stimulus != plan.describe():
        return (f"'stimulus' is {_short(stimulus)}; at level {level} with count_requested {requested} this suite "
                f"draws {_short(plan.describe())}")
    shard = manifest.get("shard")
    first, last = 0, plan.total
    if shard is not None:
        keys = ("index", "count", "first_line", "total")
        if not (isinstance(shard, dict) and all(type(shard.get(k)) is int for k in keys)
                and 0 <= shard["index"] < shard["count"] and shard["total"] == plan.total):
            return f"'shard' is {_short(shard)}, expected {{{', '.join(keys)}}} of a split of {plan.total} vectors"
        first, last = files_shard_lines(plan.total, (shard["index"], shard["count"]))
        if shard["first_line"] != first + 1:
            return (f"'shard' says first_line {shard['first_line']}; shard {shard['index']}/{shard['count']} starts "
                    f"at line {first + 1}")
    if manifest["count"] != last - first:
        return (f"'count' is {manifest['count']}, but the stimulus makes {last - first} vectors"
                + (f" in shard {shard['index']}/{shard['count']}" if shard is not None else ""))
    return seed, level, plan, first


def flags_coverage(path: Path, flags_field, count: int) -> dict[str, int]:
    """How many of the ``count`` lines of a ``flags.hex`` have each class's bit (the manifest's
    ``coverage``), a chunk at a time; RecordError for a line that is not a flags word."""
    counts = np.zeros(len(CLASSES), dtype=np.int64)
    bits = np.arange(len(CLASSES), dtype=np.uint64)
    size = limits.chunk_vectors(flags_field.hex_digits + 1, pipeline.CHUNK)
    with open_regular(path) as file:
        reader = RecordReader(file, [flags_field], str(path))
        for start in range(0, count, size):
            flags = field_values(reader.read(min(size, count - start))[:, :flags_field.hex_digits], flags_field)
            counts += ((flags[:, None] >> bits) & np.uint64(1)).sum(axis=0).astype(np.int64)
    return {name: int(n) for name, n in zip(CLASSES, counts)}


def recompute(directory, first: int, last: int, picked=None, label: str | None = None, suite=None,
              base: str | None = None, reference_only: bool = False, located=None) -> VerifyReport:
    """Recompute lines [first, last) (0-based) of the suite in ``directory`` (its files checked
    already): all of them as generation computes them (the fast path, the reference model
    recomputing the catalogue and the seeded sample; ``reference_only``: the reference model), or
    with ``picked`` (sorted 0-based lines) the directed ones and those picked, with the reference
    model. Returns a report of the vectors recomputed and the first
    problem (a mismatch or a malformed line), after which it stops, as a pass over the whole
    suite would; the lines are read from their offsets (every line of a field has one width).
    ``suite``: the suite, if loaded already; ``label``: a progress bar's; ``base``: the directory
    a relative ``directory`` is in (a cluster's worker has another working directory; problems
    name ``directory`` as given); ``located``: with ``suite``, what :func:`_located` found in the
    manifest when it was checked (else the manifest is read and checked again: a cluster's worker)."""
    directory = Path(directory)
    where = directory if base is None else Path(base) / directory
    part = VerifyReport()
    try:
        if located is None or suite is None:
            manifest, loaded = load_suite(where)
            suite = suite or loaded
            located = _located(manifest, suite)
            if isinstance(located, str):
                raise ValueError(located)
        drawn = _Stimulus(suite, *located, first, last, everything=picked is None)
        seed, _, plan, offset = located
        check = None if picked is not None else (CrossCheck(suite, seed, plan, fast=not reference_only), offset)
        files = {}
        try:
            for f in suite.fields:
                files[f.name] = open_regular(where / f.file)
                files[f.name].seek(first * (f.hex_digits + 1))
            readers = {f.name: RecordReader(files[f.name], [f], str(directory / f.file), first_line=first + 1)
                       for f in suite.fields}
            chunk = limits.chunk_vectors(sum(f.hex_digits + 1 for f in suite.fields), pipeline.CHUNK)
            with tqdm(total=last - first, desc=label, disable=label is None, leave=False) as bar:
                for start in range(first, last, chunk):
                    size = min(chunk, last - start)
                    if not _verify_chunk(directory, suite, readers, start, size, picked, part, drawn, check):
                        break
                    bar.update(size)
        except RecordError as error:
            part.problems.append(str(error))
        finally:
            for file in files.values():
                file.close()
    except Exception as error:  # noqa: BLE001 - reported as verify reports it
        part.problems.append(_not_checked(directory, error))
    return part


def _verify_chunk(directory: Path, suite, readers: dict, start: int, size: int, picked, report: VerifyReport,
                  drawn, check=None) -> bool:
    """Read ``size`` lines of every file, check every line's inputs and origin against the
    stimulus ``drawn`` (:func:`.pipeline.vectors`) and recompute the chosen vectors: every line
    with ``check`` = (a :class:`.crosscheck.CrossCheck` of the suite, the directory's first line in
    the whole suite), else the ``picked`` and directed lines with the reference model; False after
    a mismatch."""
    fields = {f.name: f for f in suite.fields}
    digits = {name: reader.read(size)[:, :fields[name].hex_digits] for name, reader in readers.items()}
    flags = field_values(digits["flags"], fields["flags"])
    rows = np.arange(size)
    if picked is not None:
        lines = start + rows
        chosen = ((flags & np.uint64(_DIRECTED)) != 0) | np.isin(lines, picked)
        rows = rows[chosen]
    if not len(rows):
        return True
    if not _same_stimulus(directory, suite, digits, flags, rows, drawn.rows((start + rows).tolist()), start, report):
        return False
    values = {name: _as_ints(field_values(digits[name][rows], f)) for name, f in fields.items()}
    inputs = {f.name: values[f.name] for f in suite.inputs}
    try:
        cross, offset = check if check is not None else (None, 0)
        if cross is None or not cross.fast or len(cross.positions(offset + start, len(rows))) == len(rows):
            # the reference recomputes every line here (a catalogue chunk): the fast path would add nothing
            outputs, computed = pipeline.reference_expected(suite, inputs)
            report.reference += len(rows)
            by = "reference"
        else:
            by = "mxsim"  # the fast path's value (the reference agreed on the lines it recomputed)
            before = cross.catalogue_checked + cross.sample_checked
            outputs, computed = cross.expected(inputs, offset + start)
            report.reference += cross.catalogue_checked + cross.sample_checked - before
    except ReferenceDisagreement as error:
        report.problems.append(f"{directory}: {error}".replace("; nothing was written for this suite", ""))
        return False
    except ValueError:
        return _report_failure(directory, suite, inputs, start + rows, report)
    report.vectors += len(rows)
    found = {**outputs, "flags": computed}
    for position, line in enumerate(start + rows):
        for name, column in found.items():
            got = values[name][position] & ~ORIGIN_MASK if name == "flags" else values[name][position]
            if got != column[position]:
                f = fields[name]
                shown = (f.to_hex(column[position]), f.to_hex(values[name][position])) if name != "flags" else (
                    ",".join(class_names(column[position])), ",".join(class_names(got)))
                report.problems.append(f"{directory}/{f.file}: line {line + 1}: field {name!r}: {by} gives "
                                       f"{shorten(shown[0])}, file has {shorten(shown[1])}")
                return False
    return True


class _Stimulus:
    """The vectors the manifest's seed, level and plan draw for lines of a suite directory (0-based
    lines of the directory; a shard's start at ``offset`` in the whole suite): consecutive lines as
    one stream (``everything``: a full verify), or chosen lines only (a sample: the catalogue drawn
    once if a chosen line is in it, a line beyond it from its run of :data:`.pipeline.RUN`)."""

    def __init__(self, suite, seed: int, level: int, plan, offset: int, first: int, last: int, everything: bool):
        self.suite, self.seed, self.level, self.plan, self.offset = suite, seed, level, plan, offset
        self.stream = pipeline.vectors(suite, seed, level, plan, offset + first, offset + last) if everything else None
        self.catalogue = None

    def rows(self, lines: list[int]) -> list:
        """(inputs, origin) of each of ``lines`` (sorted; consecutive ones for a stream)."""
        if self.stream is not None:
            return list(itertools.islice(self.stream, len(lines)))
        found = []
        for line in lines:
            index = self.offset + line
            if index < self.plan.catalogue:
                if self.catalogue is None:
                    self.catalogue = list(pipeline.vectors(self.suite, self.seed, self.level, self.plan, 0,
                                                           min(self.plan.catalogue, self.plan.total)))
                found.append(self.catalogue[index])
            else:
                found += pipeline.vectors(self.suite, self.seed, self.level, self.plan, index, index + 1)
        return found


def _same_stimulus(directory: Path, suite, digits: dict, flags, positions, drawn: list, start: int,
                   report: VerifyReport) -> bool:
    """Whether the lines at ``positions`` of the chunk (starting at line ``start``) hold the inputs
    and origin bits of the vectors ``drawn`` for them (a line moved, dropped, or from another seed,
    level or stimulus does not); the first that differs is reported."""
    origins = (flags[positions] & np.uint64(ORIGIN_MASK)).tolist()
    bad = [i for i, (got, (_, origin)) in enumerate(zip(origins, drawn)) if got != _ORIGINS[origin]]
    for f in suite.inputs:
        got = _as_ints(field_values(digits[f.name][positions], f))
        bad += [i for i, (value, (row, _)) in enumerate(zip(got, drawn)) if value != row[f.name]]
    if not bad and len(drawn) == len(origins):
        return True
    line = int(positions[min(bad, default=len(drawn))])
    report.problems.append(f"{directory}: line {start + line + 1}: not the vector the manifest's seed, level and "
                           "stimulus draw for this line (its inputs or origin differ: lines reordered, cut or edited, "
                           "or the manifest's seed, level or stimulus edited)")
    return False


_ORIGINS = {origin: flag_bits([origin]) for origin in ("exhaustive", "directed", "random")}


def _as_ints(values) -> list[int]:
    return values.tolist() if isinstance(values, np.ndarray) else values


def _report_failure(directory: Path, suite, inputs: dict, lines, report: VerifyReport) -> bool:
    """The first line whose inputs the reference model refuses (ValueError), reported; False."""
    for position, line in enumerate(lines):
        try:
            pipeline.reference_expected(suite, {name: [column[position]] for name, column in inputs.items()})
        except ValueError as error:
            report.problems.append(f"{directory}: line {line + 1}: {error}")
            return False
    raise AssertionError("a chunk failed but none of its vectors")  # pragma: no cover
