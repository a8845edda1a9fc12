"""Writing golden suites to disk (verifying them: :mod:`.verify`).

Layout: ``<root>/<kind>/<suite name>/`` holds ``<field>.hex`` per field and ``manifest.json``;
``<root>/index.json`` lists every suite generated into the root with its manifest's SHA-256.

Writing: a suite's vectors are drawn and computed a chunk at a time (:mod:`..compute.pipeline`) and
written as they come to a staging directory beside the suite's, which is swapped in when the
suite is complete, the manifest written last (:mod:`.writer`, :mod:`.staging`), so a suite with a
manifest is complete and memory stays bounded whatever the count; the manifest's SHA-256 of every
file exposes any later edit or truncation. If writing fails or is interrupted (SIGINT, SIGTERM),
the staging directory is removed and a complete suite that was there before is kept, its index
entry too: a suite is there whole or not at all, never lost to a regeneration cut short; what a
killed generation left (``kill -9``) is removed by the next generate or merge. A generation first
enters every suite it was asked for that the index does not list as complete as unfinished
(``null``) and fills in each manifest's hash when that suite is swapped in, so the index of an
interrupted generation still names the suites it did not finish. Index updates hold a lock on the
root directory (POSIX), so shards may be generated into one root in parallel.

Checked before anything is touched: the seed (:func:`check_seed`), level, shard, count, and every
suite's name (:func:`check_suite_names`: a file name the root's file system takes).

The same seed, level, count and options give byte-identical files on any machine, whatever the
chunk size (Python's ``random.Random`` seeded with a string is stable across platforms and
versions).

Shards: ``shard=(i, n)`` writes lines [i*N//n, (i+1)*N//n) of the suite into
``<suite dir>/shard-<i>-of-<n>/``; the shards' files, concatenated in order, are the whole
suite's files, and :mod:`.merge` assembles them into the suite one generation writes.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import re
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..._version import __version__
from ...writing import atomic_write
from ...reading import loads_json, read_capped
from ..compute import limits
from ..compute import pipeline
from ..coverage.catalogue import CLASSES
from ..compute.crosscheck import CrossCheck
from ..coverage.reach import check_reachable_coverage
from ..kinds.registry import Suite
from .staging import STAGING_SUFFIX_BYTES, parent_locked, remove_stale
from .writer import MANIFEST, NPZ, SuiteWriter

__all__ = ["generate", "generate_suites", "GenerationInterrupted", "check_seed", "check_suite_names", "suite_dir", "read_json",
           "manifest_dict", "manifest_bytes", "prepare_generation", "write_suite", "writing_error", "shard_lines",
           "shard_name", "INDEX", "MANIFEST", "NPZ"]

INDEX = "index.json"
INDEX_MARK = "mxsim golden index"
MAX_JSON_BYTES = 16 << 20  # a manifest is a few KB, the canonical index about 10 KB
MANIFEST_KEYS = {"kind": str, "suite": str, "params": dict, "fields": list, "count": int, "files": dict}


def suite_dir(root, suite: Suite) -> Path:
    return Path(root) / suite.kind / suite.name


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_temporary(name: str) -> bool:
    """A temporary file of :func:`mxsim.writing.atomic_write` (``.<name>.<random>.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def read_json(path: Path):
    """A JSON file's value; ValueError with a one-line reason (without the path) otherwise: more
    than MAX_JSON_BYTES (whatever the file type), not UTF-8, not JSON, a key repeated in an object."""
    data = read_capped(path, MAX_JSON_BYTES)  # a device or a FIFO too: never more than the cap
    try:
        return loads_json(data)
    except RecursionError:
        raise ValueError("nested too deeply to read (not a file mxsim wrote)") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 text ({error})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    except ValueError as error:  # a repeated key
        raise ValueError(f"not a file mxsim wrote: {error}") from None


# --- the manifest ----------------------------------------------------------------------------
def manifest_dict(suite: Suite, seed: int, level: int, plan: pipeline.Plan, **extra) -> dict:
    """What a manifest records of a suite's vectors (generate adds count, shard, coverage and
    files; a stream's manifest has them not)."""
    manifest = {
        "mxsim_version": __version__,
        "kind": suite.kind,
        "suite": suite.name,
        "params": suite.params(),
        "formats": suite.describe(),
        "contract": "docs/numerics.md (every option is in params)",
        "seed": seed,
        "level": level,
        "stimulus": plan.describe(),
        "inputs": [f.name for f in suite.inputs],
        "outputs": [f.name for f in suite.outputs] + ["flags"],
        "fields": [f.describe() for f in suite.fields],
        "classes": {name: {"bit": i, "description": text} for i, (name, text) in enumerate(CLASSES.items())},
        **extra,
    }
    if suite.profile_record() is not None:  # a suite made under a profile (see mxsim.options.profiles)
        manifest["profile"] = suite.profile_record()
    left_out = getattr(suite, "left_out", None)  # catalogue blocks without an MX encoding (golden.stimulus.refused)
    record = {} if left_out is None else left_out(pipeline.suite_rng(seed, suite), level, plan.from_catalogue)
    if record:  # only where something was left out: other manifests keep their bytes
        manifest["left_out"] = record
    return manifest


def manifest_bytes(suite: Suite, seed: int, level: int, plan: pipeline.Plan, **extra) -> bytes:
    return (json.dumps(manifest_dict(suite, seed, level, plan, **extra), indent=1, sort_keys=True, default=str)
            + "\n").encode()


# --- the root index --------------------------------------------------------------------------
def _locked(root: Path):
    """An exclusive lock on the root directory (:func:`.staging.parent_locked`)."""
    return parent_locked(root)


def _read_index(path: Path) -> dict:
    """The index at ``path``; ValueError (without the path) if it is not one mxsim wrote."""
    index = read_json(path)
    if not (isinstance(index, dict) and index.get("index") == INDEX_MARK):
        raise ValueError(f"not an mxsim golden index (no \"index\": \"{INDEX_MARK}\")")
    suites = index.get("suites")
    if not isinstance(suites, dict):
        raise ValueError("'suites' is not a JSON object")
    for key, entry in suites.items():
        if entry is None:
            continue
        if not (isinstance(entry, dict) and isinstance(entry.get("manifest_sha256"), str)
                and isinstance(entry.get("count"), int)):
            raise ValueError(f"suite {key!r}: expected null or {{\"count\": N, \"manifest_sha256\": \"...\"}}")
    return index


def _update_index(root: Path, entries: dict) -> None:
    """Enter ``entries`` (index key -> {count, manifest_sha256}, or None: unfinished) in the root's
    index; None never replaces a complete suite's entry (that suite is kept until its replacement
    is complete: :mod:`.writer`). Temporary files of an index write cut short are removed."""
    check_suite_names(root, entries)
    path = root / INDEX
    with _locked(root):
        for leftover in root.glob(f".{INDEX}.*.tmp"):  # the lock is ours: no index write is under way
            leftover.unlink(missing_ok=True)
        _remove_stale_under(root)
        if path.exists():
            try:
                index = _read_index(path)
            except (OSError, ValueError) as error:
                raise ValueError(f"{path}: {error}; remove it or generate into another directory") from None
        else:
            index = {
                "index": INDEX_MARK,
                "description": "every suite generated into this directory: its manifest's SHA-256 and vector count "
                               "(null: its generation did not finish); mxsim golden verify checks it",
                "suites": {},
            }
        suites = index["suites"]
        suites.update({key: entry for key, entry in entries.items() if entry is not None or suites.get(key) is None})
        atomic_write(path, (json.dumps(index, indent=1, sort_keys=True) + "\n").encode(), streams=False)


def _remove_stale_under(root: Path) -> None:
    """What killed writers left in ``root`` and its kind directories (a cluster generation's
    ``.mxsim-shards-*``, a suite's staging directory; a swap cut short is undone):
    :func:`.staging.remove_stale`. Called with the root locked."""
    remove_stale(root, MANIFEST)
    for kind in sorted(root.iterdir()):
        if not kind.name.startswith(".") and kind.is_dir() and not kind.is_symlink():
            with parent_locked(kind):
                remove_stale(kind, MANIFEST)


# --- generating ------------------------------------------------------------------------------
class GenerationInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during :func:`generate_suites`: ``written`` of ``total`` suites are
    complete, the one being generated (``current``; None: the signal came as a suite was swapped
    in, held back until it was complete) was not written (``kept``: a complete suite of that name
    was there before and stays), the rest not started."""

    def __init__(self, root, written: int, total: int, current: str, kept: bool = False):
        super().__init__(root, written, total, current, kept)
        self.root, self.written, self.total, self.current, self.kept = root, written, total, current, kept

    def __str__(self) -> str:
        left = self.total - self.written
        kept = (f"the previous complete {self.current} was kept as it was, with its {INDEX} entry" if self.kept
                else "no partial files left")
        cut = (f"{left} not started" if self.current is None else
               f"{self.current} was not written ({kept}) and {left - 1} more not started")
        return (
            f"{self.written} of {self.total} suite(s) written to {self.root}, each complete with its manifest; "
            f"{cut}; {INDEX} marks those of them without a previous complete suite as unfinished, so verify "
            "reports them"
        )


def check_seed(seed) -> int:
    """``seed`` as a Python int: an int or a NumPy integer (not a bool); ValueError naming ``seed``
    otherwise (a manifest records it, and verify takes JSON integers only)."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, (bool, np.bool_)):
        return int(seed)
    raise ValueError(f"seed={seed!r} is not allowed; expected an integer (an int or a NumPy integer; not a bool, "
                     "float or string)")


_NAME_CHARACTERS = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no space


def _name_max(root: Path) -> int:
    """The longest file name (bytes) the file system of ``root`` (or its nearest existing ancestor) takes."""
    here = Path(os.path.abspath(root))
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        return int(os.pathconf(here, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def check_suite_names(root, keys) -> None:
    """Refuse index keys (``<kind>/<suite name>[/shard-<i>-of-<n>]``) whose parts cannot be
    directory names under ``root``, before anything is written: each 1 .. NAME_MAX - 14 bytes
    (the staging directory ``.<name>.new-<token>`` must fit too), printable ASCII without space,
    ``/`` or ``\\``, not starting with ``.``. ValueError naming the suite name and what is allowed."""
    limit = _name_max(Path(root)) - STAGING_SUFFIX_BYTES
    for key in keys:
        parts = key.split("/") if isinstance(key, str) else [key]
        if not 2 <= len(parts) <= 3 or (len(parts) == 3 and not _SHARD.fullmatch(parts[2])):
            raise ValueError(f"suite name {_shorten(str(key))!r} is not allowed: expected <kind>/<suite name> or "
                             "<kind>/<suite name>/shard-<i>-of-<n>, the suite name without '/'")
        for part in parts:
            if not _NAME_CHARACTERS.fullmatch(part) or "\\" in part or part.startswith("."):
                raise ValueError(f"suite name {_shorten(key)!r} is not allowed: {_shorten(part)!r} is not a directory "
                                 "name mxsim writes; expected printable ASCII without space, '/' or '\\', not starting "
                                 "with '.'")
            if len(part.encode()) > limit:
                raise ValueError(f"suite name {_shorten(key)!r} is not allowed: {len(part.encode())} bytes, more than "
                                 f"the {limit} this file system takes ({limit + STAGING_SUFFIX_BYTES}-byte file names, "
                                 f"less {STAGING_SUFFIX_BYTES} for the suite's staging directory); give fewer options "
                                 "that differ from their defaults")


_SHARD = re.compile(r"shard-[0-9]+-of-[0-9]+")


def _shorten(text: str) -> str:
    return text if len(text) <= 80 else text[:60] + "..." + text[-17:]


def _check_request(level, shard) -> None:
    if not (type(level) is int and 1 <= level <= 10):
        raise ValueError(f"level={level!r} is not allowed; expected an integer in [1, 10]")
    if shard is not None:
        index, count = shard
        if not (type(count) is int and count >= 1 and type(index) is int and 0 <= index < count):
            raise ValueError(f"shard={shard!r} is not allowed; expected (i, n) with 0 <= i < n")


def _suite_key(suite: Suite, shard) -> str:
    key = f"{suite.kind}/{suite.name}"
    return key if shard is None else f"{key}/{shard_name(shard)}"


def generate(suite: Suite, root, seed: int = 0, level: int = 1, shard: tuple[int, int] | None = None,
             progress: bool = False, npz: bool = False, count: int | None = None,
             reference_only: bool = False) -> Path:
    """Write ``suite`` under ``root`` (and enter it in the root's index); returns the directory
    written. ``npz``: also write ``vectors.npz`` (one array per field: uint64 for fields of at
    most 64 bits, else the hex strings), listed in the manifest like the hex files. ``count``:
    that many vectors, the catalogue first (:mod:`..compute.pipeline`); None: the catalogue. Expected
    values come from the fast path checked by the reference model (:mod:`..compute.crosscheck`; the
    manifest's ``reference_check``), or with ``reference_only`` from the reference for every
    vector (the same bytes, slower)."""
    return generate_suites([suite], root, seed, level, shard, progress, npz, count, reference_only)[0]


def generate_suites(suites: list[Suite], root, seed: int = 0, level: int = 1, shard: tuple[int, int] | None = None,
                    progress: bool = False, npz: bool = False, count: int | None = None,
                    reference_only: bool = False) -> list[Path]:
    """Write each suite under ``root`` in turn, with ``index.json`` (see the module docstring);
    returns the directories written. Every request is checked before anything is written
    (level, shard, count, :func:`.limits.check_enumerable` and :func:`.limits.check_size` for
    every suite); Ctrl-C raises :class:`GenerationInterrupted` after removing the partial suite."""
    seed = check_seed(seed)
    root, plans, keys = prepare_generation(suites, root, level, shard, count)
    written = []
    for number, (suite, plan, key) in enumerate(zip(suites, plans, keys), 1):
        label = f"suite {number}/{len(suites)} {suite.kind}/{suite.name}"

        published = []

        def publish(manifest: bytes, vectors: int, key=key) -> None:
            _update_index(root, {key: {"count": vectors, "manifest_sha256": _sha256(manifest)}})
            published.append(key)

        try:
            directory, _, _ = write_suite(suite, plan, root, seed, level, shard, label if progress else None, npz,
                                          reference_only, publish)
        except KeyboardInterrupt:
            if published:  # held back while the suite was swapped in: it is complete, the next ones not begun
                raise GenerationInterrupted(root, len(written) + 1, len(suites), None) from None
            kept = (_key_directory(root, key) / MANIFEST).is_file()
            raise GenerationInterrupted(root, len(written), len(suites), key, kept) from None
        written.append(directory)
    return written


def _key_directory(root: Path, key: str) -> Path:
    return Path(root, *key.split("/"))


def prepare_generation(suites: list[Suite], root, level: int, shard, count: int | None, copies: int = 1
                       ) -> tuple[Path, list[pipeline.Plan], list[str]]:
    """Check a generation before anything is written (level, shard, count, the limits of every
    suite, ``copies`` times its bytes of free space), create the root and enter every suite in its
    index as unfinished; returns (root, the suites' plans, their index keys)."""
    _check_request(level, shard)
    for suite in suites:
        if "/" in f"{suite.kind}{suite.name}":
            raise ValueError(f"suite name {_shorten(suite.kind + '/' + suite.name)!r} is not allowed: a kind or "
                             "suite name with '/'; expected a directory name")
    keys = [_suite_key(suite, shard) for suite in suites]
    check_suite_names(root, keys)
    plans = []
    for suite in suites:
        limits.check_enumerable(suite)
        plans.append(pipeline.plan(suite, level, count))
        limits.check_size(suite, plans[-1].total)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    limits.check_space(root, [(suite, plan.total) for suite, plan in zip(suites, plans)] * copies, shard)
    _update_index(root, dict.fromkeys(keys))
    return root, plans, keys


def shard_lines(total: int, shard: tuple[int, int] | None) -> tuple[int, int]:
    """The 0-based lines [first, last) of shard ``(i, n)`` of a suite of ``total`` vectors:
    [i*total//n, (i+1)*total//n); the whole suite for None."""
    if shard is None:
        return 0, total
    index, count = shard
    return index * total // count, (index + 1) * total // count


def shard_name(shard: tuple[int, int]) -> str:
    return f"shard-{shard[0]}-of-{shard[1]}"


def write_suite(suite: Suite, plan: pipeline.Plan, root: Path, seed: int, level: int, shard, label,
                npz: bool, reference_only: bool = False, publish=None) -> tuple[Path, bytes, int]:
    """Compute and write one suite (or shard, into ``<suite dir>/shard-<i>-of-<n>/``) a chunk at a
    time; returns (directory, manifest bytes, vectors). ``label``: a progress bar's (None: no
    bar). ``reference_only``: every expected value from the reference (else the fast path,
    cross-checked: :mod:`..compute.crosscheck`). ``publish(manifest, vectors)``: the index update,
    called as the suite is swapped in, before SIGINT or SIGTERM is let through (None: the index
    is not touched)."""
    total = plan.total
    directory = suite_dir(root, suite)
    first, last = shard_lines(total, shard)
    if shard is not None:
        directory = directory / shard_name(shard)
    coverage = np.zeros(len(CLASSES), dtype=np.int64)
    bits = np.arange(len(CLASSES), dtype=np.uint64)
    writer = SuiteWriter(root, directory, suite.fields, last - first, npz)
    check = CrossCheck(suite, seed, plan, fast=not reference_only)
    try:
        with tqdm(total=last - first, desc=label, disable=label is None, leave=False) as bar:
            size = limits.chunk_vectors(limits.suite_bytes(suite, 1), pipeline.CHUNK)  # by bytes, not lines
            for chunk in pipeline.computed_chunks(suite, seed, level, plan, first, last, size=size, check=check):
                writer.write(chunk)
                flags = np.array(chunk["flags"], dtype=np.uint64)
                coverage += ((flags[:, None] >> bits) & np.uint64(1)).sum(axis=0).astype(np.int64)
                bar.update(len(flags))
        counts = {name: int(n) for name, n in zip(CLASSES, coverage)}
        if shard is None and plan.from_catalogue == plan.catalogue:  # the whole catalogue: every reachable class
            check_reachable_coverage(suite, counts)
        shard_info = None if shard is None else {"index": shard[0], "count": shard[1], "first_line": first + 1,
                                                 "total": total}
        extra = {"shard": shard_info, "count": last - first, "reference_check": check.describe(),
                 "coverage": counts}
        manifest = writer.commit(lambda files: manifest_bytes(suite, seed, level, plan, **extra, files=files),
                                 None if publish is None else lambda written: publish(written, last - first))
    except OSError as error:  # a full disk, say: name the suite and where it was being written
        writer.abort()
        raise writing_error(error, directory, suite) from None
    except BaseException:
        writer.abort()
        raise
    return directory, manifest, last - first


def writing_error(error: OSError, directory: Path, suite: Suite) -> OSError:
    """``error`` (raised while writing a suite) as an OSError of the same errno naming the suite, the
    directory and the file, and saying that nothing of the suite was left."""
    file = f" ({error.filename})" if error.filename else ""
    return OSError(error.errno, f"{directory}: cannot write suite {suite.kind}/{suite.name}: "
                                f"{error.strerror or error}{file}; nothing of this suite was left "
                                "(a complete suite there before is kept)")
