"""Writing a suite aside and swapping it in whole, and cleaning up after writers that were killed.
A complete suite already there is kept until its replacement is complete.

Names, next to the suite directory ``<parent>/<name>``:

* ``.<name>.new-<token>/``: the suite being written (:class:`Staging`). Its writer holds an
  exclusive ``flock`` on it for as long as it lives, so another process can tell a live write
  from one left by a process that was killed (``kill -9``, a power cut): the lock goes with the
  process;
* ``.<name>.old-<token>/``: the previous suite's files during the swap, for the few renames it
  takes (:func:`swap_in`); holds ``.moved`` once every old file is in it.

:func:`remove_stale` (run by every generate and merge before it writes a suite) removes the
directories of writers that are gone, after putting back a previous suite whose swap was cut
short; :func:`remove_temporary_files` removes ``.<file>.<random>.tmp`` files left in a suite
directory by an interrupted write of an earlier mxsim. SIGINT and SIGTERM are held back during a
swap (:func:`signals_deferred`); only ``kill -9`` or a power cut can stop one half-way, and the
next generate or merge puts the previous suite back.

The suite's own files in a directory are its ``*.hex`` files, ``vectors.npz`` and the
``marker`` (``manifest.json``, written last: a directory with it is complete); anything else in
the directory (shard directories, a user's notes) is left where it is.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path

from ...writing import directory_mode, sync_directory

__all__ = ["Staging", "parent_locked", "remove_stale", "remove_temporary_files", "signals_deferred", "suite_files",
           "swap_in", "STAGING_SUFFIX_BYTES", "SHARDS_PREFIX"]

STAGING_SUFFIX_BYTES = len(".") + len(".new-") + 8  # what a staging directory's name adds to a suite's name
SHARDS_PREFIX = ".mxsim-shards-"  # a cluster generation's staging directory (:mod:`..cluster`), cleaned the same way
_SHARDS_DIRECTORY = re.compile(re.escape(SHARDS_PREFIX) + r"[a-z0-9_]{8}")
_ASIDE = re.compile(r"\.(?P<name>.+)\.(?P<role>new|old)-(?P<token>[a-z0-9_]{8})")
_TEMPORARY_FILE = re.compile(r"\..+\.tmp")
_MOVED = ".moved"


def _lock(fd: int, wait: bool) -> bool:
    """An exclusive flock on ``fd``: True if taken (no lock where fcntl is missing: True)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _is_live(directory: Path) -> bool:
    """Whether a live process holds ``directory``'s lock (its writer is still writing)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        return not _lock(fd, wait=False)
    finally:
        os.close(fd)  # releases the lock if we took it


@contextlib.contextmanager
def parent_locked(parent: Path):
    """An exclusive flock on the directory ``parent`` (no lock where fcntl is missing): held while
    stale directories are cleaned and staging ones made there, and while a root's index is updated."""
    fd = os.open(parent, os.O_RDONLY)
    try:
        _lock(fd, wait=True)
        yield
    finally:
        os.close(fd)


class Staging:
    """A new directory ``<parent>/<prefix><token>`` held locked until :meth:`release` (see the
    module docstring); made under :func:`parent_locked`, so that :func:`remove_stale` never sees
    it unlocked. ``target``: the suite directory it is for (None: a directory of other files)."""

    def __init__(self, parent: Path, prefix: str, target: Path | None = None):
        self.target = target
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        if target is not None:  # mkdtemp's 0o700, as mkdir would make the suite directory
            os.chmod(self.path, directory_mode())
        self.token = self.path.name[-8:]
        self.fd = os.open(self.path, os.O_RDONLY)
        _lock(self.fd, wait=True)

    @classmethod
    def beside(cls, target: Path) -> Staging:
        """The staging directory ``.<name>.new-<token>`` of the suite directory ``target``."""
        return cls(target.parent, f".{target.name}.new-", target)

    @property
    def backup(self) -> Path:
        return self.target.parent / f".{self.target.name}.old-{self.token}"

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def remove(self) -> None:
        """Remove the staging directory (if still there) and release its lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.release()


def suite_files(directory: Path, marker: str) -> list[str]:
    """The suite's own files in ``directory`` (``*.hex``, ``vectors.npz``, ``marker``), the
    marker first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    own = [n for n in names if (n.endswith(".hex") or n in ("vectors.npz", marker)) and not n.startswith(".")]
    return sorted(own, key=lambda n: (n != marker, n))


@contextlib.contextmanager
def signals_deferred():
    """SIGINT and SIGTERM held back until the block ends, then handled as they would have been
    (KeyboardInterrupt, or the default action); an ignored signal stays ignored. Python runs
    signal handlers in the main thread only, so elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler not in (signal.SIG_IGN, None):
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: received.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in received:
            if callable(previous[signum]):
                previous[signum](signum, None)  # KeyboardInterrupt for SIGINT (and the CLI's SIGTERM)
            else:
                signal.raise_signal(signum)  # the default action: the process ends, the suite complete


def swap_in(staging: Staging, marker: str, publish=None) -> None:
    """Put the complete suite in ``staging`` in place of ``staging.target`` (signals held back):
    a new directory is renamed into place; into an existing one, its suite files go aside first
    (the marker first), then the new ones in (the marker last). ``publish()`` (the index update)
    runs before the signals are let through. A failure puts the previous files back."""
    target, backup = staging.target, staging.backup
    with signals_deferred():
        if not os.path.lexists(target):
            os.rename(staging.path, target)
        else:
            os.mkdir(backup)
            try:
                for name in suite_files(target, marker):
                    os.rename(target / name, backup / name)
                (backup / _MOVED).touch()
                for name in reversed(suite_files(staging.path, marker)):  # the marker last
                    os.rename(staging.path / name, target / name)
            except BaseException:
                _put_back(backup, target, marker)
                raise
        sync_directory(target.parent)
        sync_directory(target)
        try:
            if publish is not None:
                publish()
        finally:  # the swap is done: the previous files and the staging directory go
            staging.remove()
            shutil.rmtree(backup, ignore_errors=True)


def _put_back(backup: Path, target: Path, marker: str) -> None:
    """Return the previous suite's files in ``backup`` to ``target``: after the new files began
    to come in (``.moved`` there), the suite files in ``target`` are new ones and go first."""
    if (backup / _MOVED).exists():
        for name in suite_files(target, marker):
            (target / name).unlink()
    target.mkdir(exist_ok=True)
    for name in reversed(suite_files(backup, marker)):  # the marker last
        os.replace(backup / name, target / name)
    shutil.rmtree(backup)


def remove_stale(parent: Path, marker: str) -> list[Path]:
    """Clean up after writers that are gone (see the module docstring) in ``parent``: a previous
    suite whose swap was cut short is put back, then the staging directories and
    ``.mxsim-shards-<token>`` directories of dead writers are removed. Returns what was removed
    or put back."""
    try:
        entries = sorted(os.listdir(parent))
    except (FileNotFoundError, NotADirectoryError):
        return []
    cleaned = []
    asides = [(entry, match) for entry in entries if (match := _ASIDE.fullmatch(entry))]
    for entry, match in sorted(asides, key=lambda item: item[1]["role"] != "old"):  # put back before removing
        path = parent / entry
        if not path.is_dir() or path.is_symlink():
            continue
        staging = parent / f".{match['name']}.new-{match['token']}"
        if match["role"] == "old":
            if _is_live(staging):
                continue
            target = parent / match["name"]
            if (target / marker).exists() and (path / _MOVED).exists() and not (staging / marker).exists():
                shutil.rmtree(path, ignore_errors=True)  # the swap was done: the old files are not needed
            else:
                _put_back(path, target, marker)
            cleaned.append(path)
        elif not _is_live(path):
            shutil.rmtree(path, ignore_errors=True)
            cleaned.append(path)
    for entry in entries:
        path = parent / entry
        if _SHARDS_DIRECTORY.fullmatch(entry) and path.is_dir() and not path.is_symlink() and not _is_live(path):
            shutil.rmtree(path, ignore_errors=True)
            cleaned.append(path)
    return cleaned


def remove_temporary_files(directory: Path) -> list[Path]:
    """The ``.<file>.<random>.tmp`` files in ``directory`` removed (an interrupted write of an
    earlier mxsim left them; this one writes a suite's files in its staging directory only)."""
    try:
        entries = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for entry in entries:
        path = directory / entry
        if _TEMPORARY_FILE.fullmatch(entry) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
