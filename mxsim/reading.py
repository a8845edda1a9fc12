"""Reading what a user hands mxsim, strictly and in bounded time and memory.

* :func:`loads_json`: JSON whose objects must not repeat a key (Python's ``json`` lets the last one
  win silently: a header with two ``shape`` keys, ``--params`` with two ``block`` keys); ValueError
  naming the key.
* :func:`read_capped`: a file's bytes, at most ``limit`` of them whatever the file is: a regular
  file, a FIFO (opened without waiting for a writer), a device such as ``/dev/zero`` (whose
  ``st_size`` of 0 says nothing); ValueError past the limit.
* :func:`check_allocation`: refuse, before NumPy tries, an array larger than the memory the
  machine has (ValueError saying what was asked), instead of NumPy's ArrayMemoryError.
* :func:`shorten`: any input echoed in an error message, cut to :data:`MAX_ECHO` characters (a
  line of 100,000 characters must not make a 66 KB message).
"""

from __future__ import annotations

import json
import os
import stat

__all__ = ["MAX_ECHO", "shorten", "shorten_list", "loads_json", "read_capped", "available_memory",
           "check_allocation"]

MAX_ECHO = 120  # characters of an input shown in an error message


def shorten(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` if it has at most ``limit`` characters, else its start, ``...`` and how much was cut."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def shorten_list(items, limit: int = 10) -> str:
    """``items`` joined with commas, at most ``limit`` of them (each shortened) and how many more."""
    items = list(items)
    shown = ", ".join(shorten(item, 40) for item in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _unique_keys(pairs):
    found = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"duplicate key {shorten(repr(key), 60)} (JSON objects here must not repeat a key)")
        found[key] = value
    return found


def loads_json(text):
    """``json.loads`` refusing an object that repeats a key (ValueError naming it); ``text`` may be
    bytes (UTF-8). Errors: ValueError (JSONDecodeError and UnicodeDecodeError are ValueErrors too),
    RecursionError for absurd nesting (the caller words it)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    return json.loads(text, object_pairs_hook=_unique_keys)


def read_capped(path, limit: int) -> bytes:
    """The bytes of ``path``, if it holds at most ``limit``; ValueError (without the path) if it
    holds more. Works for any file type: a FIFO is opened without blocking for a writer (no writer:
    no bytes), a device is read up to ``limit + 1`` bytes, never to its end."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if hasattr(os, "set_blocking") and not stat.S_ISREG(mode):
            os.set_blocking(fd, True)  # a FIFO with a writer: wait for its bytes as a normal read would
        chunks, size = [], 0
        while size <= limit:
            try:
                data = os.read(fd, min(1 << 20, limit + 1 - size))
            except BlockingIOError:  # pragma: no cover - a FIFO whose writer has nothing yet
                break
            if not data:
                break
            chunks.append(data)
            size += len(data)
    finally:
        os.close(fd)
    if size > limit:
        kind = "" if stat.S_ISREG(mode) else " (not a regular file)"
        raise ValueError(f"more than the {limit} bytes this file may have{kind}")
    return b"".join(chunks)


def available_memory() -> int:
    """Bytes of memory available to a new allocation (Linux: MemAvailable; else physical memory)."""
    try:
        with open("/proc/meminfo", "rb") as file:
            for line in file:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - no sysconf
        return 1 << 62


def check_allocation(nbytes: int, what: str) -> None:
    """ValueError if ``nbytes`` (what ``what`` needs, e.g. "the result of shape (1048576, 1048576)
    of float32") exceeds the memory available now."""
    free = available_memory()
    if nbytes > free:
        raise ValueError(f"{what} needs {nbytes} bytes ({nbytes / 2**30:.1f} GiB), more than the {free} bytes "
                         f"({free / 2**30:.1f} GiB) of memory available")
