"""Exit codes, printing and output files of the command line.

One-line errors, stdout that may be closed or full, interrupted golden commands, atomically written
``.npy`` files.

Exit codes: 0 done; 1 a verification or check that ran and found mismatches (:class:`VerifyFailed`,
:class:`CheckFailed`); 2 a usage or file error (one line on stderr); 128 + the signal's number for
an interrupted or terminated command (130 for Ctrl-C, 143 for SIGTERM).
"""

from __future__ import annotations

import io
import os
import sys

import numpy as np

from .. import signals
from ..writing import atomic_write, naming_file

MAX_ERROR = 2000  # characters of an error message: every echoed input is cut shorter where it is made


class VerifyFailed(Exception):
    """A verification that ran and found problems: its report goes to stderr, exit code 1."""


class CheckFailed(Exception):
    """A check that ran: its report, and the exit code (1 mismatches, 2 file errors)."""

    def __init__(self, text: str, code: int):
        super().__init__(text)
        self.text, self.code = text, code


def printable(text: str) -> str:
    """``text`` with what the terminal's encoding cannot show (a lone surrogate from a file's JSON,
    say) as backslash escapes, so printing it never raises UnicodeEncodeError."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return text.encode(encoding, "backslashreplace").decode(encoding, "replace")


def print_quietly(text: str) -> int:
    """Print ``text`` on stdout: 0, or 2 after a one-line error if stdout cannot take it (a full disk)."""
    try:
        with naming_file("<stdout>"):
            print(printable(text))
            sys.stdout.flush()
    except BrokenPipeError:  # e.g. `mxsim info | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as the Python docs advise
    except OSError as error:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more is flushed at exit
        print(f"mxsim: error: {error}", file=sys.stderr)
        return 2
    return 0


def save_npy(path, array: np.ndarray) -> None:
    """``array`` as a .npy file at ``path``, written atomically (no suffix added, no pickled objects)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    atomic_write(path, buffer.getvalue())


def interrupted(what: str):
    """Ctrl-C (or SIGTERM) in a golden command: one line on stderr and exit code 128 + the signal's
    number (130 for SIGINT, 143 for SIGTERM)."""
    print(f"mxsim: interrupted: {what}", file=sys.stderr)
    raise SystemExit(signals.exit_code())


def show_progress(flag) -> bool:
    """A --progress/--no-progress flag's value; not given (None): whether stderr is a terminal."""
    return sys.stderr.isatty() if flag is None else flag
