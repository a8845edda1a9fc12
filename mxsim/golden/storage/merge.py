"""Merging the shards of suites (``generate --shard I/N``, e.g. one task of a job array each)
into whole suites: byte for byte the files, manifest and index entry that one ``generate``
without ``--shard`` writes.

Finding shards: each directory given is a shard directory (``shard-<i>-of-<n>/`` with its
manifest) or any directory above shards, searched recursively (hidden directories skipped); a
manifest without a ``shard`` entry (a whole suite) is passed over. Shards are grouped by suite
(``<kind>/<suite name>``).

Before anything is written, every group must be one generation's shards, whole (a
:class:`ShardError` naming the suite, the shard directories and what differs otherwise):

* every manifest reads as a suite of this mxsim (:func:`.verify.load_suite`) and was written by
  this mxsim version (the merged manifest is this version's, as a generation's would be);
* the same params, seed, level, ``stimulus`` (catalogue and count asked for) and the same N;
* every index 0 .. N-1 exactly once (a missing or duplicated shard is named), each shard's
  ``first_line`` and ``count`` those of lines [i*T//N, (i+1)*T//N) of the T vectors;
* ``vectors.npz`` in every shard or in none.

Then every shard's files are checked (size and SHA-256 against its manifest, its ``coverage`` a
count per class): a damaged shard stops the merge before OUT is touched, so a good suite already
in OUT stays. Then each suite is written to ``OUT/<kind>/<suite>/`` through :class:`.writer.SuiteWriter`
(temporary files renamed into place, the manifest last: whole or not at all) by copying the
shards' files in order, each file's size and SHA-256 checked against its shard's manifest as it
is read (a difference stops that suite with an error and leaves nothing of it); the coverage is
the sum of the shards'. ``OUT/index.json`` first lists every suite to merge as unfinished and
gets each one's manifest hash when it is written, as ``generate`` does.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._version import __version__
from ..compute import pipeline
from ..coverage.catalogue import CLASSES
from ..compute.crosscheck import merge_descriptions
from ..kinds.fields import Field
from .files import read_json, _update_index, manifest_bytes, shard_lines, suite_dir, writing_error
from ..coverage.reach import check_reachable_coverage
from .columns import NotRegularFile, open_regular
from .npz import npz_problem, npz_sha256
from .verify import flags_coverage, load_suite
from .writer import MANIFEST, NPZ, SuiteWriter, npy_dtype

__all__ = ["Shard", "ShardError", "find_shards", "check_group", "merge", "merge_group"]

_BLOCK = 1 << 20  # bytes copied at a time
_SHARD_NAME = re.compile(r"shard-[0-9]+-of-[0-9]+")
_SAME = ("params", "seed", "level", "stimulus")  # manifest keys every shard of a suite shares


class ShardError(ValueError):
    """Shards that cannot be merged: the message names the suite, the shards and what is wrong."""


@dataclass(frozen=True)
class Shard:
    """One shard directory: its manifest, the suite it belongs to, its ``index`` of ``count`` (N),
    its 0-based ``first`` line in the whole suite and ``total`` (T, the whole suite's vectors)."""

    directory: Path
    manifest: dict
    suite: object
    index: int
    count: int
    first: int
    total: int

    @property
    def key(self) -> str:
        return f"{self.suite.kind}/{self.suite.name}"


def _manifests(directory: Path):
    """Every manifest at or under ``directory``, hidden directories below it skipped, in sorted order."""
    for here, directories, names in os.walk(directory):
        directories[:] = sorted(d for d in directories if not d.startswith("."))
        if MANIFEST in names:
            yield Path(here) / MANIFEST


def _shard(directory: Path) -> Shard | None:
    """The shard in ``directory``; None if its manifest is a whole suite's (or, outside a
    ``shard-<i>-of-<n>`` directory, not readable JSON); ShardError for a shard that cannot be read."""
    path = directory / MANIFEST
    try:
        entry = read_json(path).get("shard")
    except (OSError, ValueError, AttributeError) as error:
        if not _SHARD_NAME.fullmatch(directory.name):
            return None
        raise ShardError(f"{path}: cannot be read ({getattr(error, 'strerror', None) or error})") from None
    if entry is None:
        return None
    try:
        manifest, suite = load_suite(directory)
    except ValueError as error:
        raise ShardError(f"cannot merge: {error}") from None
    keys = ("index", "count", "first_line", "total")
    if not (isinstance(entry, dict) and all(type(entry.get(k)) is int for k in keys)):
        raise ShardError(f"{path}: 'shard' is {_short(entry)}, expected {{{', '.join(keys)}}} integers")
    return Shard(directory, manifest, suite, entry["index"], entry["count"], entry["first_line"] - 1, entry["total"])


def find_shards(directories) -> dict[str, list[Shard]]:
    """The shards at or under ``directories``, grouped by suite key and sorted by index (each
    directory once, however often it is reached). ShardError if a directory is missing or holds
    no shard."""
    seen: dict[Path, Shard] = {}
    for given in map(Path, directories):
        if not given.is_dir():
            raise ShardError(f"{given}: {'not a directory' if given.exists() else 'no such directory'}")
        found = False
        for manifest in _manifests(given):
            where = manifest.parent.resolve()
            if where not in seen and (shard := _shard(manifest.parent)) is not None:
                seen[where] = shard
            found = found or where in seen
        if not found:
            raise ShardError(f"{given}: no shards found (directories shard-<i>-of-<n> with a {MANIFEST}, written by "
                             "mxsim golden generate --shard I/N)")
    groups: dict[str, list[Shard]] = defaultdict(list)
    for shard in seen.values():
        groups[shard.key].append(shard)
    return {key: sorted(group, key=lambda s: (s.index, str(s.directory))) for key, group in sorted(groups.items())}


def check_group(key: str, shards: list[Shard]) -> pipeline.Plan:
    """Check that ``shards`` (one suite's, sorted by index) are one generation's shards, all of
    them (see the module docstring); returns the suite's plan."""
    first = shards[0]
    for shard in shards:
        version = shard.manifest.get("mxsim_version")
        if version != __version__:
            raise ShardError(f"{key}: {shard.directory} was written by mxsim {version}, this is mxsim {__version__}; "
                             "merge shards with the mxsim that generated them")
        for name in _SAME:
            if shard.manifest.get(name) != first.manifest.get(name):
                raise ShardError(
                    f"{key}: {shard.directory} and {first.directory} come from different generations ({name} "
                    f"{_short(shard.manifest.get(name))} vs {_short(first.manifest.get(name))}); the shards of a suite "
                    "must share seed, level, params and count")
        if shard.count != first.count:
            raise ShardError(f"{key}: {shard.directory} is a shard of {shard.count}, {first.directory} of "
                             f"{first.count}; give the shards of one split (--shard I/N with one N)")
        if (NPZ in shard.manifest["files"]) != (NPZ in first.manifest["files"]):
            with_npz = shard if NPZ in shard.manifest["files"] else first
            raise ShardError(f"{key}: {with_npz.directory} has {NPZ} and another shard not; generate every shard with "
                             "--npz or none")
    indices = [shard.index for shard in shards]
    for a, b in zip(shards, shards[1:]):
        if a.index == b.index:
            raise ShardError(f"{key}: shard {a.index}/{a.count} twice: {a.directory} and {b.directory}; give each "
                             "shard once")
    missing = sorted(set(range(first.count)) - set(indices))
    if missing:
        shown = ", ".join(map(str, missing[:20])) + (", ..." if len(missing) > 20 else "")
        raise ShardError(f"{key}: {len(missing)} of {first.count} shard(s) missing: {shown} (found: "
                         f"{', '.join(map(str, indices))}); generate them with --shard I/{first.count}")
    stimulus, manifest = first.manifest.get("stimulus"), first.manifest
    requested = stimulus.get("count_requested") if isinstance(stimulus, dict) else "?"
    if not (requested is None or type(requested) is int) or type(manifest["level"]) is not int:
        raise ShardError(f"{first.directory / MANIFEST}: 'stimulus' or 'level' is not what generate writes")
    plan = pipeline.plan(first.suite, manifest["level"], requested)
    if plan.describe() != stimulus:
        raise ShardError(f"{key}: the shards' stimulus {_short(stimulus)} is not what this mxsim draws for their "
                         f"params and count ({_short(plan.describe())})")
    for shard in shards:
        lines = shard_lines(plan.total, (shard.index, shard.count))
        if (shard.total, shard.first, shard.first + shard.manifest["count"]) != (plan.total, *lines):
            raise ShardError(f"{key}: {shard.directory} holds lines {shard.first + 1}.. of {shard.total} "
                             f"({shard.manifest['count']} vectors); shard {shard.index}/{shard.count} of {plan.total} "
                             f"vectors is lines {lines[0] + 1}..{lines[1]}")
    return plan


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def merge(out, directories) -> list[Path]:
    """Merge every suite whose shards are at or under ``directories`` into ``out`` (see the
    module docstring); every group is checked before anything is written. Returns the suite
    directories written."""
    groups = find_shards(directories)
    plans = {key: check_group(key, shards) for key, shards in groups.items()}
    for shards in groups.values():  # every file whole before OUT is touched: a bad shard leaves OUT as it was
        for shard in shards:
            _check_files(shard)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _update_index(out, dict.fromkeys(groups))
    return [merge_group(out, shards, plans[key]) for key, shards in groups.items()]


def merge_group(out: Path, shards: list[Shard], plan: pipeline.Plan) -> Path:
    """Write the suite of ``shards`` (checked by :func:`check_group`, giving ``plan``) to
    ``out``, and enter it in ``out``'s index; returns its directory."""
    first = shards[0]
    suite, manifest = first.suite, first.manifest
    directory = suite_dir(out, suite)
    npz = NPZ in manifest["files"]
    writer = SuiteWriter(out, directory, suite.fields, plan.total, npz)
    try:
        coverage = dict.fromkeys(CLASSES, 0)
        for shard in shards:
            for f in suite.fields:
                _copy_hex(shard, f, writer)
            if npz:
                _copy_npz(shard, suite.fields, writer)
            for name, n in _coverage(shard).items():
                coverage[name] += n
        try:
            reference_check = merge_descriptions([shard.manifest["reference_check"] for shard in shards])
        except (KeyError, TypeError, ValueError) as error:
            raise ShardError(f"{directory}: the shards' reference_check entries do not combine: {error}") from None
        if plan.from_catalogue == plan.catalogue:  # the whole catalogue: every reachable class (as generate)
            check_reachable_coverage(suite, coverage)
        extra = {"shard": None, "count": plan.total, "reference_check": reference_check, "coverage": coverage}

        def publish(written: bytes) -> None:  # the index entry, made as the suite is swapped in
            digest = hashlib.sha256(written).hexdigest()
            _update_index(out, {first.key: {"count": plan.total, "manifest_sha256": digest}})

        writer.commit(lambda files: manifest_bytes(suite, manifest["seed"], manifest["level"], plan, **extra,
                                                   files=files), publish)
    except OSError as error:  # a full disk, say
        writer.abort()
        raise writing_error(error, directory, suite) from None
    except BaseException:
        writer.abort()
        raise
    return directory


def _check_files(shard: Shard) -> None:
    """Every file of ``shard`` there, of its manifest's size and SHA-256, its coverage class counts
    (ShardError otherwise); :func:`merge` checks them all before it writes anything, and the copy
    checks the bytes it copies again."""
    for f in shard.suite.fields:
        digest = hashlib.sha256()
        with _open(shard, _sized(shard, f)) as file:
            while data := file.read(_BLOCK):
                digest.update(data)
        _same_hash(shard, f.file, digest.hexdigest())
    if NPZ in shard.manifest["files"]:
        _same_hash(shard, NPZ, _npz_digest(shard))
        problem = npz_problem(shard.directory / NPZ, shard.directory, shard.suite.fields, shard.manifest["count"])
        if problem:  # its arrays must be its hex files' values (a forged manifest names any archive)
            raise ShardError(f"{problem}; generate shard {shard.index}/{shard.count} again")
    _coverage(shard)


def _open(shard: Shard, path: Path):
    """A file of the shard, open (:func:`.columns.open_regular`; ShardError if it is not a regular file)."""
    try:
        return open_regular(path)
    except OSError as error:
        what = error.strerror if isinstance(error, NotRegularFile) else f"missing ({error.strerror})"
        raise ShardError(f"{path}: {what}; generate shard {shard.index}/{shard.count} again") from None


def _coverage(shard: Shard) -> dict[str, int]:
    """The shard's ``coverage``, which must be the classes counted in its ``flags.hex`` (ShardError
    otherwise: the merged suite's coverage is their sum)."""
    coverage = shard.manifest.get("coverage")
    flags = shard.suite.fields[-1]
    try:
        counted = flags_coverage(shard.directory / flags.file, flags, shard.manifest["count"])
    except (OSError, ValueError) as error:
        raise ShardError(f"{shard.directory / flags.file}: cannot be read ({getattr(error, 'strerror', None) or error})"
                         f"; generate shard {shard.index}/{shard.count} again") from None
    if coverage != counted:
        differs = [f"{name} {coverage.get(name) if isinstance(coverage, dict) else None} (flags.hex: {n})"
                   for name, n in counted.items() if not isinstance(coverage, dict) or coverage.get(name) != n]
        raise ShardError(f"{shard.directory / MANIFEST}: 'coverage' differs from the classes counted in its flags.hex: "
                         f"{_short(', '.join(differs)) if differs else _short(coverage)}; generate shard {shard.index}/"
                         f"{shard.count} again")
    return counted


def _npz_digest(shard: Shard) -> str:
    """The SHA-256 of the shard's vectors.npz, a regular file within its size bound (ShardError otherwise)."""
    path = shard.directory / NPZ
    try:
        return npz_sha256(path, shard.suite.fields, shard.manifest["count"])
    except OSError as error:
        what = error.strerror if isinstance(error, NotRegularFile) else f"missing ({error.strerror})"
    except ValueError as error:
        what = str(error)
    raise ShardError(f"{path}: {what}; generate shard {shard.index}/{shard.count} again")


def _sized(shard: Shard, field: Field) -> Path:
    """The shard's hex file of ``field``, checked to have its manifest's lines' bytes."""
    path = shard.directory / field.file
    expected = shard.manifest["count"] * (field.hex_digits + 1)
    try:
        size = path.stat().st_size
    except OSError as error:
        raise ShardError(f"{path}: missing ({error.strerror}); generate shard {shard.index}/{shard.count} again") from None
    if size != expected:
        raise ShardError(f"{path}: {size} bytes, its manifest's {shard.manifest['count']} lines make {expected} "
                         f"(truncated or edited); generate shard {shard.index}/{shard.count} again")
    return path


def _copy_hex(shard: Shard, field: Field, writer: SuiteWriter) -> None:
    digest = hashlib.sha256()
    with _open(shard, _sized(shard, field)) as file:
        while data := file.read(_BLOCK):
            digest.update(data)
            writer.append(field, data)
    _same_hash(shard, field.file, digest.hexdigest())


def _same_hash(shard: Shard, name: str, sha256: str) -> None:
    if sha256 != shard.manifest["files"].get(name):
        raise ShardError(f"{shard.directory / name}: SHA-256 differs from its manifest (edited or truncated); "
                         f"generate shard {shard.index}/{shard.count} again")


def _copy_npz(shard: Shard, fields: list[Field], writer: SuiteWriter) -> None:
    """Each field's rows from the shard's vectors.npz (checked whole against its SHA-256 first)."""
    path = shard.directory / NPZ
    _same_hash(shard, NPZ, _npz_digest(shard))
    try:
        with _open(shard, path) as file, zipfile.ZipFile(file) as archive:
            for f in fields:
                with archive.open(f"{f.name}.npy") as entry:
                    np.lib.format.read_magic(entry)
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(entry)
                    if shape != (shard.manifest["count"],) or fortran or dtype != npy_dtype(f):
                        raise ShardError(f"{path}: {f.name}.npy is {dtype} of shape {shape}, expected {npy_dtype(f)} of "
                                         f"({shard.manifest['count']},)")
                    while data := entry.read(_BLOCK):
                        writer.append(f, b"", data)
    except (zipfile.BadZipFile, KeyError, EOFError, ValueError) as error:
        if isinstance(error, ShardError):
            raise
        raise ShardError(f"{path}: not a vectors.npz as mxsim writes it ({error}); generate shard {shard.index}/"
                         f"{shard.count} again") from None
