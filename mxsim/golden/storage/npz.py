"""Reading a suite's ``vectors.npz`` back: every array against the suite's hex files.

A manifest's SHA-256 of ``vectors.npz`` only says the archive is the one the manifest names; a
forged manifest names any archive. So the arrays are compared with the hex files (which verify
recomputes and check compares): :func:`npz_problem` reads the archive as :mod:`.writer` writes it
(one ``<field>.npy`` per field, nothing else; each a version 1.0 array of shape (count,) in C
order, uint64 for fields of at most 64 bits holding the value's bits (a signed field's two's
complement in its width), else the lowercase hex digits as ``<U<digits>``) and compares it with
the field's hex file a chunk of rows at a time, so memory stays bounded. The archive must be a
regular file of at most the bytes its arrays take (plus the zip's and the headers' overhead): a
FIFO, a device (/dev/zero) or a file grown beyond that is refused before it is read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np

from ...reading import shorten
from ..compute import limits
from ..kinds.fields import Field
from .columns import NotRegularFile, RecordError, RecordReader, field_values, lowercase, open_regular
from .writer import npy_dtype

__all__ = ["npz_problem", "npz_limit", "npz_sha256"]

_OVERHEAD = 1 << 12  # bytes of zip entry records and .npy header per array, at most (mxsim writes ~250)
_CHUNK = 1 << 16  # rows compared at a time (fewer for wide fields)


def npz_limit(fields: list[Field], count: int) -> int:
    """The most bytes a ``vectors.npz`` of ``count`` rows of ``fields`` can hold."""
    return sum(count * npy_dtype(f).itemsize + _OVERHEAD for f in fields) + _OVERHEAD


def npz_sha256(path: Path, fields: list[Field], count: int) -> str:
    """The SHA-256 of a regular file of at most :func:`npz_limit` bytes; :class:`.columns.NotRegularFile`
    or OSError if it is not one or cannot be read, ValueError if it is larger."""
    with open_regular(path) as file:
        size, limit = os.fstat(file.fileno()).st_size, npz_limit(fields, count)
        if size > limit:
            raise ValueError(f"{size} bytes, more than the {limit} its arrays of {count} rows can take")
        digest = hashlib.sha256()
        while data := file.read(1 << 20):
            digest.update(data)
    return digest.hexdigest()


def npz_problem(path: Path, directory: Path, fields: list[Field], count: int) -> str | None:
    """None if the archive at ``path`` holds exactly the arrays of ``fields`` with the values of
    their hex files in ``directory`` (``count`` lines each, checked already), else the first
    problem, one line naming the archive (and the array and row where a value differs)."""
    try:
        with open_regular(path) as file:
            size = os.fstat(file.fileno()).st_size
            limit = npz_limit(fields, count)
            if size > limit:
                return f"{path}: {size} bytes, more than the {limit} its arrays of {count} rows can take"
            with zipfile.ZipFile(file) as archive:
                names = archive.namelist()
                wanted = [f"{f.name}.npy" for f in fields]
                if sorted(names) != sorted(wanted):
                    missing = sorted(set(wanted) - set(names))
                    extra = sorted(set(names) - set(wanted)) or sorted({n for n in names if names.count(n) > 1})
                    return (f"{path}: holds {shorten(', '.join(names)) or 'no array'}; expected one array per field: "
                            f"{', '.join(wanted)}" + (f" (missing {', '.join(missing)})" if missing else "")
                            + (f" (not of this suite or repeated: {shorten(', '.join(extra))})" if extra else ""))
                for f in fields:
                    problem = _array_problem(archive, path, directory, f, count)
                    if problem:
                        return problem
    except NotRegularFile as error:
        return f"{path}: {error.strerror}"
    except OSError as error:
        return f"{path}: missing or unreadable ({error.strerror or error})"
    except RecordError as error:
        return f"{path}: not compared: {error}"
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError) as error:
        return f"{path}: not a vectors.npz as mxsim writes it ({shorten(str(error))})"
    return None


def _array_problem(archive: zipfile.ZipFile, path: Path, directory: Path, f: Field, count: int) -> str | None:
    name, dtype = f"{f.name}.npy", npy_dtype(f)
    with archive.open(name) as entry, open_regular(directory / f.file) as hex_file:
        version = np.lib.format.read_magic(entry)
        if version != (1, 0):
            return f"{path}: {name} is a version {version[0]}.{version[1]} .npy array; mxsim writes version 1.0"
        shape, fortran, found = np.lib.format.read_array_header_1_0(entry)
        if shape != (count,) or fortran or found != dtype:
            return (f"{path}: {name} is {found} of shape {shorten(str(shape))}{' in Fortran order' if fortran else ''}, "
                    f"expected {dtype} of shape ({count},)")
        reader = RecordReader(hex_file, [f], str(directory / f.file))
        unsigned = dataclasses.replace(f, signed=False)  # the array holds a signed field's bits
        step = limits.chunk_vectors(f.hex_digits + 1 + dtype.itemsize, _CHUNK)
        for start in range(0, count, step):
            rows = min(step, count - start)
            digits = np.ascontiguousarray(reader.read(rows)[:, :f.hex_digits])
            data = entry.read(rows * dtype.itemsize)
            if len(data) != rows * dtype.itemsize:
                return f"{path}: {name} ends after {start + len(data) // dtype.itemsize} of its {count} rows"
            array = np.frombuffer(data, dtype=dtype)
            if f.bits <= 64:
                expected = field_values(digits, unsigned)
            else:
                expected = lowercase(digits).view(f"S{f.hex_digits}").ravel().astype(dtype)
            differs = np.flatnonzero(array != expected)
            if differs.size:
                row = int(differs[0])
                return (f"{path}: {name} row {start + row} is {_shown(array[row], f)}, but {f.file} line "
                        f"{start + row + 1} has {_shown(expected[row], f)} (the archive was edited or replaced)")
        if entry.read(1):
            return f"{path}: {name} holds more than its {count} rows"
    return None


def _shown(value, f: Field) -> str:
    return shorten(f"{int(value):0{f.hex_digits}x}" if f.bits <= 64 else str(value))
