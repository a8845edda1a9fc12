"""Writing golden suites to disk, and verifying them.

Layout: ``<root>/<kind>/<suite name>/`` holds ``<field>.hex`` per field and ``manifest.json``;
``<root>/index.json`` lists every suite generated into the root with its manifest's SHA-256.

Writing: a suite is computed in memory (within :mod:`.limits`), then its files are written
atomically, the old manifest removed first and the new one written last, so a suite with a
manifest is complete; the manifest's SHA-256 of every file exposes any later edit or
truncation. If writing fails or is interrupted, the suite's files are removed: a suite is there
whole or not at all. A generation first enters every suite it was asked for in the index as
unfinished (``null``) and fills in each manifest's hash when that suite is written, so the index
of an interrupted generation still names the suites it did not finish. Index updates hold a lock
on the root directory (POSIX), so shards may be generated into one root in parallel.

The same seed, level and options give byte-identical files on any machine (Python's
``random.Random`` seeded with a string is stable across platforms and versions).

Shards: ``shard=(i, n)`` writes lines [i*N//n, (i+1)*N//n) of the suite into
``<suite dir>/shard-<i>-of-<n>/``; the shards' files, concatenated in order, are the whole
suite's files.

Verifying a directory reports, suite by suite, and never stops at the first bad suite: a
directory of hex files without a manifest (an incomplete suite), a leftover temporary file, a
manifest that cannot be read or lacks a key, a file not listed in its manifest, a SHA-256 or
line count that differs, CRLF line endings, a line that is not hex (file, line and field), and
every vector the reference model disagrees with (the first per suite); and, against the index
at the root (found in the directory or up to three levels above), every indexed suite that is
missing, unfinished or whose manifest changed, and every suite the index does not list.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from .._version import __version__
from ..fileformat import atomic_write
from . import limits
from .classes import CLASSES, ORIGIN_MASK, class_names, flag_bits
from .suites import Suite, suite_from_spec

__all__ = ["generate", "generate_suites", "verify", "VerifyReport", "GenerationInterrupted", "suite_dir", "INDEX"]

MANIFEST = "manifest.json"
NPZ = "vectors.npz"
INDEX = "index.json"
INDEX_MARK = "mxsim golden index"
MAX_JSON_BYTES = 16 << 20  # a manifest is a few KB, the canonical index about 10 KB
MANIFEST_KEYS = {"kind": str, "suite": str, "params": dict, "fields": list, "count": int, "files": dict}


def _npz_bytes(suite: Suite, lines: dict) -> bytes:
    import io
    import zipfile

    import numpy as np

    arrays = {}
    for f in suite.fields:
        if f.bits <= 64:
            arrays[f.name] = np.array([int(x, 16) for x in lines[f.name]], dtype=np.uint64)
        else:
            arrays[f.name] = np.array(lines[f.name], dtype=f"U{f.hex_digits}")
    # np.savez stamps the zip entries with the current time; write them with a fixed one so the
    # same vectors give the same bytes
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            entry = io.BytesIO()
            np.save(entry, array, allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), entry.getvalue())
    return buffer.getvalue()


def suite_dir(root, suite: Suite) -> Path:
    return Path(root) / suite.kind / suite.name


def _rng(seed: int, suite: Suite) -> random.Random:
    return random.Random(f"mxsim-golden:{seed}:{suite.kind}:{suite.name}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_temporary(name: str) -> bool:
    """A temporary file of :func:`mxsim.fileformat.atomic_write` (``.<name>.<random>.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def _read_json(path: Path):
    """A JSON file's value; ValueError with a one-line reason (without the path) otherwise."""
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise ValueError(f"{size} bytes, more than the {MAX_JSON_BYTES} this file may have")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except RecursionError:
        raise ValueError("nested too deeply to read (not a file mxsim wrote)") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 text ({error})") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None


# --- the root index --------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(root: Path):
    """An exclusive lock on the root directory (flock; no lock where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_index(path: Path) -> dict:
    """The index at ``path``; ValueError (without the path) if it is not one mxsim wrote."""
    index = _read_json(path)
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
    path = root / INDEX
    with _locked(root):
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
        index["suites"].update(entries)
        atomic_write(path, (json.dumps(index, indent=1, sort_keys=True) + "\n").encode())


# --- generating ------------------------------------------------------------------------------
class GenerationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`generate_suites`: ``written`` of ``total`` suites are complete, the
    one being generated (``current``) was not written, the rest not started."""

    def __init__(self, root, written: int, total: int, current: str):
        super().__init__(root, written, total, current)
        self.root, self.written, self.total, self.current = root, written, total, current

    def __str__(self) -> str:
        left = self.total - self.written
        return (
            f"{self.written} of {self.total} suite(s) written to {self.root}, each complete with its manifest; "
            f"{self.current} was not written (no partial files left) and {left - 1} more not started; "
            f"{INDEX} marks the {left} as unfinished, so verify reports them"
        )


def _check_request(level, shard) -> None:
    if not (isinstance(level, int) and 1 <= level <= 10):
        raise ValueError(f"level={level!r} is not allowed; expected an integer in [1, 10]")
    if shard is not None:
        index, count = shard
        if not (isinstance(count, int) and count >= 1 and isinstance(index, int) and 0 <= index < count):
            raise ValueError(f"shard={shard!r} is not allowed; expected (i, n) with 0 <= i < n")


def _suite_key(suite: Suite, shard) -> str:
    key = f"{suite.kind}/{suite.name}"
    return key if shard is None else f"{key}/shard-{shard[0]}-of-{shard[1]}"


def generate(suite: Suite, root, seed: int = 0, level: int = 1, shard: tuple[int, int] | None = None,
             progress: bool = False, npz: bool = False) -> Path:
    """Write ``suite`` under ``root`` (and enter it in the root's index); returns the directory
    written. ``npz``: also write ``vectors.npz`` (one array per field: uint64 for fields of at
    most 64 bits, else the hex strings), listed in the manifest like the hex files."""
    return generate_suites([suite], root, seed, level, shard, progress, npz)[0]


def generate_suites(suites: list[Suite], root, seed: int = 0, level: int = 1, shard: tuple[int, int] | None = None,
                    progress: bool = False, npz: bool = False) -> list[Path]:
    """Write each suite under ``root`` in turn, with ``index.json`` (see the module docstring);
    returns the directories written. Every request is checked before anything is written
    (level, shard, and :func:`.limits.check_enumerable` for every suite); Ctrl-C raises
    :class:`GenerationInterrupted` after removing the partial suite."""
    _check_request(level, shard)
    for suite in suites:
        limits.check_enumerable(suite)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    keys = [_suite_key(suite, shard) for suite in suites]
    _update_index(root, dict.fromkeys(keys))
    written = []
    for number, (suite, key) in enumerate(zip(suites, keys), 1):
        label = f"suite {number}/{len(suites)} {suite.kind}/{suite.name}"
        try:
            directory, manifest, count = _write_suite(suite, root, seed, level, shard, label if progress else None, npz)
            _update_index(root, {key: {"count": count, "manifest_sha256": _sha256(manifest)}})
        except KeyboardInterrupt:
            raise GenerationInterrupted(root, len(written), len(suites), key) from None
        written.append(directory)
    return written


def _write_suite(suite: Suite, root: Path, seed: int, level: int, shard, label, npz: bool) -> tuple[Path, bytes, int]:
    rows = suite.stimulus(_rng(seed, suite), level)
    total = len(rows)
    limits.check_size(suite, total)
    directory = suite_dir(root, suite)
    first, last = 0, total
    if shard is not None:
        index, count = shard
        first, last = index * total // count, (index + 1) * total // count
        directory = directory / f"shard-{index}-of-{count}"
    lines = {f.name: [] for f in suite.fields}
    coverage = {name: 0 for name in CLASSES}
    for inputs, origin in tqdm(rows[first:last], desc=label, disable=label is None, leave=False):
        outputs, classes = suite.compute(inputs)
        classes = set(classes) | {origin}
        values = {**inputs, **outputs, "flags": flag_bits(classes)}
        for f in suite.fields:
            lines[f.name].append(f.to_hex(values[f.name]))
        for name in classes:
            coverage[name] += 1
    del rows
    files = {f.file: "".join(line + "\n" for line in lines[f.name]).encode() for f in suite.fields}
    if npz:
        files[NPZ] = _npz_bytes(suite, lines)
    del lines
    manifest = {
        "mxsim_version": __version__,
        "kind": suite.kind,
        "suite": suite.name,
        "params": suite.params(),
        "formats": suite.describe(),
        "contract": "shared/reference/conventions.md (every option is in params)",
        "seed": seed,
        "level": level,
        "count": last - first,
        "shard": None if shard is None else {"index": shard[0], "count": shard[1], "first_line": first + 1, "total": total},
        "inputs": [f.name for f in suite.inputs],
        "outputs": [f.name for f in suite.outputs] + ["flags"],
        "fields": [f.describe() for f in suite.fields],
        "classes": {name: {"bit": i, "description": text} for i, (name, text) in enumerate(CLASSES.items())},
        "coverage": coverage,
        "files": {name: _sha256(data) for name, data in files.items()},
    }
    if suite.profile_record() is not None:
        manifest["profile"] = suite.profile_record()
    manifest_bytes = (json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n").encode()
    _replace_suite(root, directory, files, manifest_bytes, {f.file for f in suite.fields} | {NPZ})
    return directory, manifest_bytes, last - first


def _replace_suite(root: Path, directory: Path, files: dict, manifest: bytes, ours: set) -> None:
    """Write a suite's files, the manifest last; on any failure or interrupt remove them all
    (and the directories left empty), so that no half-written suite remains."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MANIFEST).unlink(missing_ok=True)  # a rewrite cut short must not look complete
        for name, data in files.items():
            atomic_write(directory / name, data)
        for name in ours - set(files):  # e.g. vectors.npz of an earlier generation with --npz
            (directory / name).unlink(missing_ok=True)
        atomic_write(directory / MANIFEST, manifest)
    except BaseException:
        for name in ours | {MANIFEST}:
            with contextlib.suppress(OSError):
                (directory / name).unlink(missing_ok=True)
        while directory != root and root in directory.parents:
            try:
                directory.rmdir()  # only if empty
            except OSError:
                break
            directory = directory.parent
        raise


# --- verifying -------------------------------------------------------------------------------
@dataclass
class VerifyReport:
    """What :func:`verify` found: suites and vectors checked, and every problem (the first
    mismatching line of each suite, with its field and both values)."""

    suites: int = 0
    vectors: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(path, progress: bool = False) -> VerifyReport:
    """Verify every suite at or under ``path`` against its manifest, the reference model and the
    root's index (see the module docstring). Every problem is reported; none stops the rest."""
    path = Path(path)
    report = VerifyReport()
    if not path.is_dir():
        report.problems.append(f"{path}: {'not a directory' if path.exists() else 'no such directory'}")
        return report
    manifests = sorted(path.rglob(MANIFEST))
    _check_tree(path, report)
    _check_index(path, manifests, report)
    if not manifests:
        report.problems.append(f"{path}: no {MANIFEST} found")
    for number, manifest_path in enumerate(manifests, 1):
        report.suites += 1
        directory = manifest_path.parent
        label = f"suite {number}/{len(manifests)} {directory}" if progress else None
        try:
            _verify_suite(directory, report, label)
        except Exception as error:  # noqa: BLE001 - report it and go on with the other suites
            report.problems.append(f"{directory}: could not be checked ({type(error).__name__}: {error})")
    return report


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
            continue
        try:
            return candidate, _read_index(file), None
        except (OSError, ValueError) as error:
            if candidate == here:
                return candidate, None, f"{path / INDEX}: {error}"
    return None, None, None


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
                data = manifest.read_bytes()
            except OSError as error:
                report.problems.append(f"{manifest}: unreadable ({error.strerror})")
                continue
            if _sha256(data) != entry["manifest_sha256"]:
                report.problems.append(f"{manifest}: SHA-256 differs from {INDEX} (the manifest was edited or the suite "
                                       "replaced)")
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


def _verify_suite(directory: Path, report: VerifyReport, label: str | None) -> None:
    where = str(directory)
    manifest_path = directory / MANIFEST
    try:
        manifest = _read_json(manifest_path)
    except (OSError, ValueError) as error:
        report.problems.append(f"{manifest_path}: {error}")
        return
    problem = _manifest_problem(manifest)
    if problem:
        report.problems.append(f"{manifest_path}: {problem}")
        return
    try:
        suite = suite_from_spec(manifest["kind"], **manifest["params"])
    except (ValueError, TypeError) as error:
        report.problems.append(f"{manifest_path}: its kind and params do not make a suite ({error})")
        return
    if suite.name != manifest["suite"]:
        report.problems.append(f"{manifest_path}: 'suite' is {manifest['suite']!r}, but its kind and params make "
                               f"{suite.name!r}")
        return
    fields = {f.name: f for f in suite.fields}
    if [f.describe() for f in suite.fields] != manifest["fields"]:
        report.problems.append(f"{where}: the manifest's field layout differs from what mxsim {__version__} writes for this suite")
        return
    listed, ours = manifest["files"], {f.file for f in suite.fields}
    for name in sorted(set(listed) - ours - {NPZ}):
        report.problems.append(f"{manifest_path}: lists {name}, which a {suite.kind} suite does not have")
    for name in sorted(os.listdir(directory)):
        if name not in listed and (name.endswith(".hex") or name == NPZ) and (directory / name).is_file():
            report.problems.append(f"{directory / name}: not listed in the manifest")
    if NPZ in listed:
        try:
            if _sha256((directory / NPZ).read_bytes()) != listed[NPZ]:
                report.problems.append(f"{where}/{NPZ}: SHA-256 differs from the manifest (edited or truncated)")
        except OSError as error:
            report.problems.append(f"{where}/{NPZ}: missing ({error.strerror})")
    count = manifest["count"]
    columns = {}
    for f in suite.fields:
        file = directory / f.file
        try:
            size = file.stat().st_size
            if size > limits.MAX_SUITE_BYTES:
                report.problems.append(f"{file}: {size} bytes, more than a suite may have ({limits.MAX_SUITE_BYTES})")
                return
            data = file.read_bytes()
        except OSError as error:
            report.problems.append(f"{file}: missing ({error.strerror})")
            return
        if b"\r\n" in data:
            data = data.replace(b"\r\n", b"\n")
            matches = _sha256(data) == listed.get(f.file)
            report.problems.append(
                f"{file}: CRLF line endings (\\r\\n; e.g. from git core.autocrlf or a Windows editor): the files use LF "
                f"only; with LF endings it {'matches the manifest' if matches else 'still differs from the manifest'}"
            )
        elif _sha256(data) != listed.get(f.file):
            report.problems.append(f"{file}: SHA-256 differs from the manifest (edited or truncated)")
        lines = data.decode("ascii", errors="replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        columns[f.name] = lines
        if len(lines) != count:
            report.problems.append(f"{file}: {len(lines)} lines, manifest says {count}")
            return
    for line in tqdm(range(count), desc=label, disable=label is None, leave=False):
        values = {}
        for name, f in fields.items():
            try:
                values[name] = f.from_hex(columns[name][line])
            except ValueError as error:
                report.problems.append(f"{directory / f.file}: line {line + 1}: {error}")
                return
        try:
            outputs, classes = suite.compute({f.name: values[f.name] for f in suite.inputs})
        except ValueError as error:
            report.problems.append(f"{where}: line {line + 1}: {error}")
            return
        outputs["flags"] = flag_bits(classes)
        values["flags"] &= ~ORIGIN_MASK
        report.vectors += 1
        for name, expected in outputs.items():
            got = values[name]
            if got != expected:
                shown = (fields[name].to_hex(expected), columns[name][line]) if name != "flags" else (
                    ",".join(class_names(expected)), ",".join(class_names(got)))
                report.problems.append(
                    f"{where}/{fields[name].file}: line {line + 1}: field {name!r}: reference gives {shown[0]}, file has {shown[1]}"
                )
                return
