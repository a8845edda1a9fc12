"""SIGTERM handled as Ctrl-C while a CLI command runs (:func:`terminate_as_interrupt`). A job
scheduler's or ``kill``'s SIGTERM then unwinds as Ctrl-C does: temporary files and staging
directories removed, a previous complete golden suite kept (docs/cli.md "Output files").
``kill -9`` cannot be handled; the next ``golden generate`` or ``golden merge`` cleans up after it."""

from __future__ import annotations

import contextlib
import signal

__all__ = ["exit_code", "terminate_as_interrupt", "terminated"]

_received: list[int] = []  # SIGTERM once it arrived during the current command


def _on_sigterm(signum, frame):
    _received.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt inside the block (in the main thread, and only where
    SIGTERM is at its default: an embedding program's handler is left alone)."""
    _received.clear()
    try:
        install = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        if install:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        install = False
    try:
        yield
    finally:
        if install:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def terminated() -> bool:
    """Whether the last KeyboardInterrupt came from SIGTERM."""
    return bool(_received)


def exit_code() -> int:
    """128 + the signal's number: 143 after SIGTERM, else 130 (SIGINT)."""
    return 128 + (_received[-1] if _received else signal.SIGINT)
