"""Writing a golden suite to disk, and verifying one.

Layout: ``<root>/<kind>/<suite name>/`` holds ``<field>.hex`` per field and ``manifest.json``.
Files are written atomically, hex files first and the manifest last: a suite whose manifest
exists is complete, and the manifest's SHA-256 of every file exposes any later edit or
truncation. The same seed, level and options give byte-identical files on any machine (Python's
``random.Random`` seeded with a string is stable across platforms and versions).

Shards: ``shard=(i, n)`` writes lines [i*N//n, (i+1)*N//n) of the suite into
``<suite dir>/shard-<i>-of-<n>/``; the shards' files, concatenated in order, are the whole
suite's files.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from .. import __version__
from ..fileformat import atomic_write
from .classes import CLASSES, ORIGIN_MASK, class_names, flag_bits
from .suites import Suite, suite_from_spec

__all__ = ["generate", "verify", "VerifyReport", "suite_dir"]

MANIFEST = "manifest.json"
NPZ = "vectors.npz"


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


def generate(suite: Suite, root, seed: int = 0, level: int = 1, shard: tuple[int, int] | None = None,
             progress: bool = False, npz: bool = False) -> Path:
    """Write ``suite`` under ``root``; returns the directory written. ``npz``: also write
    ``vectors.npz`` (one array per field: uint64 for fields of at most 64 bits, else the hex
    strings), listed in the manifest like the hex files."""
    if not (isinstance(level, int) and 1 <= level <= 10):
        raise ValueError(f"level={level!r} is not allowed; expected an integer in [1, 10]")
    rows = suite.stimulus(_rng(seed, suite), level)
    total = len(rows)
    directory = suite_dir(root, suite)
    first, last = 0, total
    if shard is not None:
        index, count = shard
        if not (isinstance(count, int) and count >= 1 and isinstance(index, int) and 0 <= index < count):
            raise ValueError(f"shard={shard!r} is not allowed; expected (i, n) with 0 <= i < n")
        first, last = index * total // count, (index + 1) * total // count
        directory = directory / f"shard-{index}-of-{count}"
    lines = {f.name: [] for f in suite.fields}
    coverage = {name: 0 for name in CLASSES}
    for inputs, origin in tqdm(rows[first:last], desc=f"{suite.kind}/{suite.name}", disable=not progress, leave=False):
        outputs, classes = suite.compute(inputs)
        classes = set(classes) | {origin}
        values = {**inputs, **outputs, "flags": flag_bits(classes)}
        for f in suite.fields:
            lines[f.name].append(f.to_hex(values[f.name]))
        for name in classes:
            coverage[name] += 1
    directory.mkdir(parents=True, exist_ok=True)
    hashes = {}
    for f in suite.fields:
        data = "".join(line + "\n" for line in lines[f.name]).encode()
        atomic_write(directory / f.file, data)
        hashes[f.file] = _sha256(data)
    if npz:
        data = _npz_bytes(suite, lines)
        atomic_write(directory / NPZ, data)
        hashes[NPZ] = _sha256(data)
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
        "files": hashes,
    }
    atomic_write(directory / MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n").encode())
    return directory


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
    """Verify every suite at or under ``path`` against its manifest and the reference model."""
    path = Path(path)
    manifests = [path / MANIFEST] if (path / MANIFEST).exists() else sorted(path.rglob(MANIFEST))
    report = VerifyReport()
    if not manifests:
        report.problems.append(f"{path}: no {MANIFEST} found")
    for manifest_path in manifests:
        report.suites += 1
        _verify_suite(manifest_path.parent, report, progress)
    return report


def _verify_suite(directory: Path, report: VerifyReport, progress: bool) -> None:
    where = str(directory)
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        suite = suite_from_spec(manifest["kind"], **manifest["params"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        report.problems.append(f"{where}: unreadable manifest ({error})")
        return
    fields = {f.name: f for f in suite.fields}
    if [f.describe() for f in suite.fields] != manifest["fields"]:
        report.problems.append(f"{where}: the manifest's field layout differs from what mxsim {__version__} writes for this suite")
        return
    if NPZ in manifest["files"]:
        try:
            if _sha256((directory / NPZ).read_bytes()) != manifest["files"][NPZ]:
                report.problems.append(f"{where}/{NPZ}: SHA-256 differs from the manifest (edited or truncated)")
        except OSError as error:
            report.problems.append(f"{where}/{NPZ}: missing ({error.strerror})")
    columns = {}
    for f in suite.fields:
        try:
            data = (directory / f.file).read_bytes()
        except OSError as error:
            report.problems.append(f"{where}/{f.file}: missing ({error.strerror})")
            return
        if _sha256(data) != manifest["files"].get(f.file):
            report.problems.append(f"{where}/{f.file}: SHA-256 differs from the manifest (edited or truncated)")
        columns[f.name] = data.decode(errors="replace").splitlines()
        if len(columns[f.name]) != manifest["count"]:
            report.problems.append(f"{where}/{f.file}: {len(columns[f.name])} lines, manifest says {manifest['count']}")
            return
    for line in tqdm(range(manifest["count"]), desc=where, disable=not progress, leave=False):
        try:
            values = {name: fields[name].from_hex(columns[name][line]) for name in fields}
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
