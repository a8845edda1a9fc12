"""Writing one suite's files a chunk of vectors at a time, in bounded memory, all or nothing.

Every field goes to a temporary file ``.<field>.hex.<random>.tmp`` in the suite directory (the
name :func:`mxsim.golden.storage.files` reports as a leftover of an interrupted write), its SHA-256
computed as it is written; :meth:`SuiteWriter.commit` fsyncs and renames them into place and
writes the manifest last (atomically), so a suite with a manifest is complete. An old manifest
is removed before anything else, so a rewrite cut short never looks complete; on any failure or
interrupt, :meth:`SuiteWriter.abort` removes the temporary files, the suite's files and the
directories left empty: a suite is there whole or not at all.

``vectors.npz`` (``npz=True``): one ``.npy`` per field, also written as it goes (uint64 for fields
of at most 64 bits, else the hex strings as ``U<digits>``), stored uncompressed in a zip whose
entries carry a fixed date, so that the same vectors give the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from ...writing import atomic_write, file_mode
from ..kinds.fields import Field

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
    """Write the fields of ``total`` vectors into ``directory`` (see the module docstring):
    :meth:`write` per chunk, then :meth:`commit` with the manifest; :meth:`abort` on failure.
    ``root``: the directory above which nothing is removed."""

    def __init__(self, root: Path, directory: Path, fields: list[Field], total: int, npz: bool = False):
        self.root, self.directory, self.fields, self.npz = root, directory, fields, npz
        self.ours = {f.file for f in fields} | {NPZ, MANIFEST}
        self.files: dict[str, tuple] = {}
        self.columns: dict[str, _NpyColumn] = {}
        self.digests = {f.file: hashlib.sha256() for f in fields}
        try:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / MANIFEST).unlink(missing_ok=True)  # a rewrite cut short must not look complete
            for f in fields:
                self.files[f.file] = _temporary(directory, f.file)
                if npz:
                    self.columns[f.name] = _NpyColumn(directory, f, total)
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
        self.files[field.file][0].write(hex_data)
        self.digests[field.file].update(hex_data)
        if npy_data:
            self.columns[field.name].file.write(npy_data)

    def commit(self, manifest_for) -> bytes:
        """Put every file in place and write the manifest, ``manifest_for(files)`` given the
        SHA-256 of each file; returns the manifest's bytes."""
        hashes = {name: digest.hexdigest() for name, digest in self.digests.items()}
        for name, (file, path) in self.files.items():
            _close_synced(file)
            os.replace(path, self.directory / name)
        if self.npz:
            hashes[NPZ] = self._write_npz()
        else:
            (self.directory / NPZ).unlink(missing_ok=True)  # from an earlier generation with --npz
        manifest = manifest_for(hashes)
        atomic_write(self.directory / MANIFEST, manifest)
        self.files.clear()
        return manifest

    def _write_npz(self) -> str:
        file, path = _temporary(self.directory, NPZ)
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
        os.replace(path, self.directory / NPZ)
        self.columns.clear()
        return digest.hexdigest()

    def abort(self) -> None:
        """Remove the temporary files, the suite's files and the directories left empty."""
        for file, path in [*self.files.values(), *((c.file, c.path) for c in self.columns.values())]:
            with contextlib.suppress(OSError):
                file.close()
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        for name in self.ours:
            with contextlib.suppress(OSError):
                (self.directory / name).unlink(missing_ok=True)
        directory = self.directory
        while directory != self.root and self.root in directory.parents:
            try:
                directory.rmdir()  # only if empty
            except OSError:
                break
            directory = directory.parent


def _close_synced(file) -> None:
    file.flush()
    os.fsync(file.fileno())
    file.close()
