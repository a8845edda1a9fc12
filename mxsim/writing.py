"""Writing files whole or not at all: :func:`atomic_write` (temporary file, fsync, rename) and the
permissions it gives (:func:`file_mode`). Used by the tensor file format (:mod:`mxsim.fileformat`)
and the golden-vector writer; it imports nothing of mxsim, so a command that writes golden vectors
does not load the tensor modules."""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["atomic_write", "file_mode"]

# read once, while the import is single-threaded: os.umask can only be read by setting it
_UMASK = os.umask(0)
os.umask(_UMASK)


def file_mode(path) -> int:
    """The permissions a file written to ``path`` gets: an existing file's, else 0o666 minus the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_UMASK


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same directory, fsync, os.replace.

    On any failure the temp file is removed and an existing ``path`` is untouched. A new file
    gets the usual permissions (0o666 minus the umask); a replaced file keeps its mode.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    mode = file_mode(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise OSError(error.errno, f"cannot write {path}: no temporary file in {directory}: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), mode)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename durable; not every platform allows this
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
