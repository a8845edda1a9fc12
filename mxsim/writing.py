"""Writing files whole or not at all: :func:`atomic_write` (temporary file, fsync, rename) and the
permissions it gives (:func:`file_mode`). Also what it does with a destination that is not a
regular file (:func:`destination_kind`), and :func:`naming_file`, which makes an OSError name the
file being written. Used by the tensor file format (:mod:`mxsim.fileformat`), the CLI's output files
and the golden-vector writer; it imports nothing of mxsim, so a command that writes golden
vectors does not load the tensor modules.

Destinations (every writer follows this; docs/cli.md "Output files"):

* absent, or a regular file: a temporary file in the same directory, fsync, ``os.replace``
  (a replaced file keeps its mode);
* a symbolic link (or a chain of them) to a regular file or to nothing yet: the same at the
  link's final target; the link stays a link;
* a FIFO or a character device (``/dev/null``, ``/dev/stdout`` on a pipe or terminal): written
  through, in place, as the shell's ``>`` would (opening a FIFO waits for its reader); no
  temporary file and no rename, so the node is never replaced. Writers of files that must be
  read back (``streams=False``: a suite's index) refuse it instead;
* anything else (a directory, a block device, a socket): refused, naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile

__all__ = ["atomic_write", "destination_kind", "directory_mode", "file_mode", "naming_file", "sync_directory"]

# read once, while the import is single-threaded: os.umask can only be read by setting it
_UMASK = os.umask(0)
os.umask(_UMASK)

_STREAM_TYPES = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device"}
_REFUSED_TYPES = {stat.S_IFDIR: "a directory", stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def file_mode(path) -> int:
    """The permissions a file written to ``path`` gets: an existing file's, else 0o666 minus the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_UMASK


def directory_mode() -> int:
    """The permissions a new directory gets from ``mkdir``: 0o777 minus the umask."""
    return 0o777 & ~_UMASK


@contextlib.contextmanager
def naming_file(path):
    """Re-raise an OSError without a file name (a full disk on ``write``, say) as one of the same
    errno that names ``path``: ``[Errno 28] cannot write PATH: No space left on device``."""
    try:
        yield
    except OSError as error:
        if error.filename is not None:
            raise
        raise _cannot_write(path, error) from None


def _cannot_write(path, error: OSError, detail: str = "") -> OSError:
    """``error`` as an OSError of the same errno (and so the same type) saying which file it was
    writing: ``[Errno 28] cannot write PATH: No space left on device``."""
    text = f"cannot write {os.fspath(path)}: {detail}{error.strerror or error}"
    return OSError(error.errno, text) if error.errno is not None else OSError(text)


def destination_kind(path, streams: bool = True) -> str:
    """How :func:`atomic_write` writes ``path`` (see the module docstring): ``"replace"`` (absent or
    a regular file, after following any symbolic links) or ``"through"`` (a FIFO or a character
    device, with ``streams``). OSError naming ``path`` for anything else."""
    try:
        mode = os.stat(path).st_mode  # follows symbolic links
    except FileNotFoundError:
        return "replace"  # nothing there yet (or a link to nothing yet): created
    except OSError as error:
        raise _cannot_write(path, error) from None
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFREG:
        return "replace"
    if kind in _STREAM_TYPES and streams:
        return "through"
    what = _STREAM_TYPES.get(kind) or _REFUSED_TYPES.get(kind, "not a regular file")
    allowed = "a regular file, a symbolic link to one, a FIFO or a character device" if streams else \
        "a regular file or a symbolic link to one (this file is read back)"
    raise OSError(errno.EISDIR if kind == stat.S_IFDIR else errno.EINVAL,
                  f"cannot write {os.fspath(path)}: it is {what}; expected {allowed}")


def atomic_write(path, data: bytes, streams: bool = True) -> None:
    """Write ``data`` to ``path`` whole or not at all, by the destination rules of the module
    docstring: a regular file (or a symbolic link's target) through a temporary file in the same
    directory, fsync and os.replace; a FIFO or character device written through in place (with
    ``streams``; refused without); anything else refused.

    On any failure the temporary file is removed and an existing ``path`` is untouched; every
    error is an OSError naming ``path``. A new file gets the usual permissions (0o666 minus the
    umask); a replaced file keeps its mode.
    """
    path = os.fspath(path)
    if destination_kind(path, streams) == "through":
        _write_through(path, data)
        return
    target = os.path.realpath(path) if os.path.islink(path) else path  # the link stays; its target is written
    directory = os.path.dirname(os.path.abspath(target))
    mode = file_mode(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise _cannot_write(path, error, f"no temporary file in {directory}: ") from None
    try:
        with naming_file(path), os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), mode)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.replace(tmp, target)
        except OSError as error:
            raise _cannot_write(path, error) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    sync_directory(directory)


def sync_directory(directory) -> None:
    """fsync a directory, so that the renames into it are durable; a platform that does not allow it
    (opening a directory, or fsync on it) is passed over."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _write_through(path: str, data: bytes) -> None:
    """``data`` written in place to the FIFO or character device at ``path`` (opened without
    creating or truncating it; a FIFO's open waits for a reader), every byte or an OSError naming it."""
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as error:
        raise _cannot_write(path, error) from None
