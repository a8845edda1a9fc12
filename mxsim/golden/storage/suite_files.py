"""A suite directory's files against its manifest (:mod:`.verify`'s first step): every file listed
and present, a regular file (:func:`.columns.open_regular`: a FIFO or a device is a problem, never
waited on or read to its end), of the manifest's SHA-256 and line count, LF line endings, at most
twice its lines' bytes read (a file that never ends is not read to its end); ``vectors.npz``
within its size bound and its arrays equal to the hex files (:mod:`.npz`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..compute import limits
from .columns import NotRegularFile, open_regular
from .files import MANIFEST, NPZ
from .npz import npz_problem, npz_sha256

__all__ = ["check_files"]


def _scan(path: Path, limit: int) -> tuple[str, str, bool, int] | None:
    """(SHA-256, SHA-256 with CRLF made LF, whether there is a CRLF, lines) of a file, a block at a
    time; None if it holds more than ``limit`` bytes (read no further: a device never ends)."""
    digest, as_lf = hashlib.sha256(), hashlib.sha256()
    crlf, lines, last, carry, size = False, 0, b"", b"", 0
    with open_regular(path) as file:
        while data := file.read(min(1 << 20, limit + 1 - size)):
            size += len(data)
            if size > limit:
                return None
            digest.update(data)
            lines += data.count(b"\n")
            last = data[-1:]
            block, carry = carry + data, b""
            if block.endswith(b"\r"):
                block, carry = block[:-1], b"\r"
            if b"\r\n" in block:
                crlf, block = True, block.replace(b"\r\n", b"\n")
            as_lf.update(block)
    as_lf.update(carry)
    return digest.hexdigest(), as_lf.hexdigest(), crlf, lines + (last not in (b"", b"\n"))


def check_files(directory: Path, manifest: dict, suite, problems: list[str]) -> bool:
    """Every file of the suite in ``directory`` against its manifest (listed, present, a regular
    file, SHA-256, CRLF, line count; vectors.npz's arrays against the hex files), each problem
    appended to ``problems``; whether the vectors can be read."""
    listed, ours = manifest["files"], {f.file for f in suite.fields}
    manifest_path = directory / MANIFEST
    for name in sorted(set(listed) - ours - {NPZ}):
        problems.append(f"{manifest_path}: lists {name}, which a {suite.kind} suite does not have")
    for name in sorted(os.listdir(directory)):
        if name not in listed and (name.endswith(".hex") or name == NPZ) and (directory / name).is_file():
            problems.append(f"{directory / name}: not listed in the manifest")
    count, readable = manifest["count"], True
    npz_found = NPZ in listed and _npz_hash_checked(directory, listed[NPZ], suite, count, problems)
    for f in suite.fields:
        file = directory / f.file
        try:
            size = file.stat().st_size
            if size > limits.MAX_SUITE_BYTES:
                problems.append(f"{file}: {size} bytes, more than a suite may have ({limits.MAX_SUITE_BYTES})")
                return False
            scanned = _scan(file, 2 * count * (f.hex_digits + 1) + 2)  # CRLF endings: at most a byte more a line
        except OSError as error:
            problems.append(_unreadable(file, error))
            return False
        if scanned is None:
            problems.append(f"{file}: more than twice the {count * (f.hex_digits + 1)} bytes of the manifest's "
                                   f"{count} lines (not read further)")
            return False
        digest, as_lf, crlf, lines = scanned
        if crlf:
            matches = "matches the manifest" if as_lf == listed.get(f.file) else "still differs from the manifest"
            problems.append(
                f"{file}: CRLF line endings (\\r\\n; e.g. from git core.autocrlf or a Windows editor): the files use "
                f"LF only; with LF endings it {matches}"
            )
            readable = False
        elif digest != listed.get(f.file):
            problems.append(f"{file}: SHA-256 differs from the manifest (edited or truncated)")
        if lines != count:
            problems.append(f"{file}: {lines} lines, manifest says {count}")
            return False
    if npz_found and readable:  # its arrays against the hex files (which the vectors' recomputation checks)
        problem = npz_problem(directory / NPZ, directory, suite.fields, count)
        if problem:
            problems.append(problem)
    return readable


def _unreadable(path: Path, error: OSError) -> str:
    if isinstance(error, NotRegularFile):
        return f"{path}: {error.strerror}"
    return f"{path}: missing ({error.strerror})"


def _npz_hash_checked(directory: Path, listed: str, suite, count: int, problems: list[str]) -> bool:
    """Whether vectors.npz is a regular file within its size bound (else a problem, and its
    arrays are not read); a SHA-256 that differs from the manifest's is a problem too."""
    try:
        if npz_sha256(directory / NPZ, suite.fields, count) != listed:
            problems.append(f"{directory}/{NPZ}: SHA-256 differs from the manifest (edited or truncated)")
    except OSError as error:
        problems.append(_unreadable(directory / NPZ, error))
        return False
    except ValueError as error:
        problems.append(f"{directory / NPZ}: {error}")
        return False
    return True
