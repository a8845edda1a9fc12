"""Writing one suite's files a chunk of vectors at a time, in bounded memory, all or nothing. A
complete suite already there is kept until its replacement is complete.

The suite is written aside, into a staging directory ``.<suite>.new-<token>/`` next to it
(:mod:`.staging`): every field to a temporary file ``.<field>.hex.<random>.tmp`` there, its SHA-256
computed as it is written; :meth:`SuiteWriter.commit` fsyncs and renames them to their names,
writes the manifest last (atomically) and swaps the staging directory's files in for the previous
suite's (:func:`.staging.swap_in`, SIGINT and SIGTERM held back), so a suite with a manifest is
complete, and the previous one stays whole until then. On any failure or interrupt,
:meth:`SuiteWriter.abort` removes the staging directory and the directories it created that are
left empty; a previous suite is not touched. What a killed writer left (``kill -9``) is removed,
and a swap it cut short undone, by the next writer of a suite in that directory
(:func:`.staging.remove_stale`).

Destination (docs/cli.md "Output files"): a suite directory that is a symbolic link to a
directory is written in the link's target (the link stays); one that is not a directory, or
holds a suite file (``*.hex``, ``vectors.npz``, ``manifest.json``) that is not a regular file, is
refused before anything is written.

Errors: an OSError while writing names the file (:func:`mxsim.writing.naming_file`).

``vectors.npz`` (``npz=True``): one ``.npy`` per field, also written as it goes (uint64 for fields
of at most 64 bits, else the hex strings as ``U<digits>``), stored uncompressed in a zip whose
entries carry a fixed date, so that the same vectors give the same bytes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from ...writing import atomic_write, file_mode, naming_file
from ..kinds.fields import Field
from .staging import Staging, parent_locked, remove_stale, remove_temporary_files, suite_files, swap_in

__all__ = ["SuiteWriter", "NPZ", "MANIFEST", "npy_dtype"]

MANIFEST = "manifest.json"
NPZ = "vectors.npz"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _temporary(directory: Path, name: str):
    """An open binary file ``.<name>.<random>.tmp`` in ``directory``, with the permissions
    ``<name>`` will have (:func:`mxsim.writing.file_mode`), and its path."""
    fd, path = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    file = os.fdopen(fd, "wb")
    try:
        os.fchmod(fd, file_mode(directory / name))
    except BaseException:
        file.close()
        os.unlink(path)
        raise
    return file, Path(path)


def npy_dtype(field: Field) -> np.dtype:
    """The dtype of a field's array in ``vectors.npz``: uint64 up to 64 bits, else its hex digits."""
    return np.dtype(np.uint64) if field.bits <= 64 else np.dtype(f"<U{field.hex_digits}")


class _NpyColumn:
    """One field as a .npy array of ``total`` rows written a chunk at a time."""

    def __init__(self, directory: Path, field: Field, total: int):
        self.field = field
        self.dtype = npy_dtype(field)
        self.file, self.path = _temporary(directory, f"{field.name}.npy")
        np.lib.format.write_array_header_1_0(self.file, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                         "fortran_order": False, "shape": (total,)})

    def encode(self, values: list[int], text: str) -> bytes:
        """The .npy data (no header) of ``values``, whose hex lines are ``text``."""
        if self.field.bits <= 64:
            unsigned = [v % (1 << self.field.bits) for v in values] if self.field.signed else values
            array = np.array(unsigned, dtype=np.uint64)
        else:
            array = np.array(text.split("\n")[:-1], dtype=self.dtype)
        return array.tobytes()


class SuiteWriter:
    """Write the fields of ``total`` vectors for ``directory`` (see the module docstring):
    :meth:`write` per chunk, then :meth:`commit` with the manifest; :meth:`abort` on failure.
    ``root``: the directory above which nothing is removed."""

    def __init__(self, root: Path, directory: Path, fields: list[Field], total: int, npz: bool = False):
        self.root, self.directory, self.fields, self.npz = root, directory, fields, npz
        self.target = Path(os.path.realpath(directory)) if directory.is_symlink() else directory
        self.files: dict[str, tuple] = {}
        self.columns: dict[str, _NpyColumn] = {}
        self.digests = {f.file: hashlib.sha256() for f in fields}
        self.staging = None
        _check_replaceable(self.target)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            with parent_locked(self.target.parent):
                remove_stale(self.target.parent, MANIFEST)
                remove_temporary_files(self.target)
                self.staging = Staging.beside(self.target)
            self.work = self.staging.path
            for f in fields:
                self.files[f.file] = _temporary(self.work, f.file)
                if npz:
                    self.columns[f.name] = _NpyColumn(self.work, f, total)
        except BaseException:
            self.abort()
            raise

    def write(self, chunk: dict[str, list[int]]) -> None:
        """Append one chunk: a list of values per field, all of the same length."""
        for f in self.fields:
            text = f.to_hex_lines(chunk[f.name])
            self.append(f, text.encode("ascii"), self.columns[f.name].encode(chunk[f.name], text) if self.npz else None)

    def append(self, field: Field, hex_data: bytes, npy_data: bytes | None = None) -> None:
        """Append bytes as they are: ``hex_data`` to the field's hex file (whole lines, or the
        rest of them later) and, with ``npz``, ``npy_data`` (the rows' .npy data, no header) to
        its array (:mod:`.merge` copies shards' files this way)."""
        with naming_file(self.directory / field.file):
            self.files[field.file][0].write(hex_data)
        self.digests[field.file].update(hex_data)
        if npy_data:
            with naming_file(self.directory / NPZ):
                self.columns[field.name].file.write(npy_data)

    def commit(self, manifest_for, publish=None) -> bytes:
        """Put every file in place and write the manifest, ``manifest_for(files)`` given the
        SHA-256 of each file, then swap the suite in (:func:`.staging.swap_in`), calling
        ``publish(manifest)`` (the index update) before SIGINT or SIGTERM is let through; returns
        the manifest's bytes."""
        hashes = {name: digest.hexdigest() for name, digest in self.digests.items()}
        for name, (file, path) in self.files.items():
            with naming_file(self.directory / name):
                _close_synced(file)
                os.replace(path, self.work / name)
        if self.npz:
            with naming_file(self.directory / NPZ):
                hashes[NPZ] = self._write_npz()
        manifest = manifest_for(hashes)
        atomic_write(self.work / MANIFEST, manifest)
        self.files.clear()
        swap_in(self.staging, MANIFEST, None if publish is None else lambda: publish(manifest))
        return manifest

    def _write_npz(self) -> str:
        file, path = _temporary(self.work, NPZ)
        with file, zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as archive:
            for name, column in self.columns.items():
                _close_synced(column.file)
                info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
                info.file_size = column.path.stat().st_size  # as writestr would set it: the same bytes
                with open(column.path, "rb") as source, archive.open(info, "w") as entry:
                    shutil.copyfileobj(source, entry, 1 << 20)
                column.path.unlink()
        digest = hashlib.sha256()
        with open(path, "rb") as written:
            while data := written.read(1 << 20):
                digest.update(data)
        os.replace(path, self.work / NPZ)
        self.columns.clear()
        return digest.hexdigest()

    def abort(self) -> None:
        """Remove the staging directory and the directories left empty; a previous suite stays."""
        for file, _ in [*self.files.values(), *((c.file, c.path) for c in self.columns.values())]:
            with contextlib.suppress(OSError):
                file.close()
        if self.staging is not None:
            self.staging.remove()
        directory = self.directory
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()  # only if empty
            except FileNotFoundError:  # a new suite's directory is made by the swap only
                pass
            except OSError:
                break
            directory = directory.parent


def _check_replaceable(target: Path) -> None:
    """Refuse a suite directory that is not a directory, or whose suite files are not all regular files."""
    if os.path.lexists(target) and not target.is_dir():
        raise OSError(errno.ENOTDIR, f"cannot write suite directory {target}: it exists and is not a directory")
    for name in suite_files(target, MANIFEST):
        if not stat.S_ISREG(os.lstat(target / name).st_mode):
            raise OSError(errno.EINVAL, f"cannot write {target / name}: it is not a regular file (a link, a FIFO or a "
                                        "device), so it is not a suite file mxsim wrote; remove it or write elsewhere")


def _close_synced(file) -> None:
    file.flush()
    os.fsync(file.fileno())
    file.close()
