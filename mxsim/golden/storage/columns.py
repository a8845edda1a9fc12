"""Reading golden hex files and streams a chunk of lines at a time, as NumPy arrays, fast.

A *record* is one line of fixed width: fields of ``ceil(bits / 4)`` hex digits each, separated by
one space (the ``stream`` format; a ``<field>.hex`` file is a record of one field), ending in a
newline (LF). A chunk of m lines is read as m * width bytes and checked as an (m, width) array of
bytes: separators in place, hex digits (0-9, a-f; A-F are taken and compared as a-f) elsewhere, no
bit above a field's width in its first digit. The first line that breaks any of this is an error
naming the source, the line and the field (:class:`RecordError`): a CRLF line ending, a line of the
wrong width, a character that is not hex. A last line without its newline is taken as if it had one.

:func:`field_values` turns a field's digits into integers (uint64 for up to 16 digits, else Python
ints); :func:`digits_equal` compares two chunks of a field row by row without converting.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import BinaryIO

import numpy as np

from ..kinds.fields import Field

__all__ = ["RecordError", "RecordReader", "NotRegularFile", "open_regular", "field_values", "digits_equal",
           "lowercase", "sha256_file"]

_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i
_SHOWN = 80  # characters of a bad line shown in an error


class RecordError(ValueError):
    """A line that is not a record of the expected layout; the message names source, line and field."""


class RecordReader:
    """Records of ``fields`` from the binary stream ``source`` (named ``label`` in errors), a
    chunk at a time. ``first_line``: the line number of the first record (1 + comment lines
    already read). ``hasher``: a hashlib object updated with every byte read."""

    def __init__(self, source: BinaryIO, fields: list[Field], label: str, first_line: int = 1, hasher=None,
                 pending: bytes = b""):
        self.source, self.fields, self.label, self.hasher = source, fields, label, hasher
        self.offsets = []
        position = 0
        for f in fields:
            self.offsets.append(position)
            position += f.hex_digits + 1
        self.width = position  # digits, a separator after each field (the last one the newline)
        self.lines = 0  # records read so far
        self.first_line = first_line
        self._pending = pending
        if pending and hasher is not None:
            hasher.update(pending)
        self._eof = False

    # reading ---------------------------------------------------------------------------------
    def _take(self, size: int) -> bytes:
        data, self._pending = self._pending[:size], self._pending[size:]
        while len(data) < size and not self._eof:
            more = self.source.read(size - len(data))
            if not more:
                self._eof = True
                break
            if self.hasher is not None:
                self.hasher.update(more)
            data += more
        return data

    def read(self, count: int) -> np.ndarray:
        """Up to ``count`` records as an (m, width) uint8 array (m < count only at the end)."""
        data = self._take(count * self.width)
        if len(data) % self.width == self.width - 1 and self._eof and not data.endswith(b"\n"):
            data += b"\n"  # a last line without its newline
        rows = len(data) // self.width
        array = np.frombuffer(data, dtype=np.uint8, count=rows * self.width).reshape(rows, self.width)
        bad = self._first_bad_row(array)
        if bad is None and len(data) != rows * self.width:
            bad = rows  # a short last line
        if bad is not None:
            raise RecordError(self._describe(data[bad * self.width:], self.lines + bad))
        self.lines += rows
        return array

    def split(self, array: np.ndarray) -> dict[str, np.ndarray]:
        """The (m, digits) view of each field of an array :meth:`read` returned."""
        return {f.name: array[:, start:start + f.hex_digits] for f, start in zip(self.fields, self.offsets)}

    def at_end(self) -> bool:
        """Whether no byte is left (call after the records expected have been read)."""
        byte = self._take(1)
        self._pending = byte + self._pending
        return not byte

    # checking --------------------------------------------------------------------------------
    def _first_bad_row(self, array: np.ndarray) -> int | None:
        if not len(array):
            return None
        ok = np.ones(len(array), dtype=bool)
        for f, start in zip(self.fields, self.offsets):
            digits = array[:, start:start + f.hex_digits]
            nibbles = _NIBBLE[digits]
            ok &= (nibbles != 255).all(axis=1)
            spare = 4 * f.hex_digits - f.bits
            if spare:
                ok &= nibbles[:, 0] < (1 << (4 - spare))  # 255 (not hex) fails here too
            separator = ord("\n") if start + f.hex_digits + 1 == self.width else ord(" ")
            ok &= array[:, start + f.hex_digits] == separator
        if ok.all():
            return None
        return int(np.argmin(ok))

    def _describe(self, rest: bytes, index: int) -> str:
        """The error for the bad line that starts ``rest`` (record ``index``, 0-based)."""
        end = rest.find(b"\n")
        while end < 0 and len(rest) < 1 << 16:
            more = self._take(4096)
            if not more:
                break
            rest += more
            end = rest.find(b"\n")
        line = rest if end < 0 else rest[:end]
        where = f"{self.label}: line {self.first_line + index}"
        if line.endswith(b"\r"):
            return (f"{where}: CRLF line ending (\\r\\n; e.g. from git core.autocrlf or a Windows editor): the files "
                    "use LF only")
        text = line.decode("ascii", errors="replace")
        shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
        columns = text.split(" ")
        if len(columns) != len(self.fields):
            names = " ".join(f"{f.name}({f.hex_digits})" for f in self.fields)
            return (f"{where}: {len(columns)} column(s) {shown!r}, expected {len(self.fields)} separated by one space: "
                    f"{names} (hex digits each)")
        for f, column in zip(self.fields, columns):
            try:
                f.from_hex(column)
            except ValueError as error:
                return f"{where}: {error}"
        return f"{where}: {shown!r} is not a line of {self.width - 1} characters"  # pragma: no cover

    # one line at a time, for files (decomposing a few vectors) --------------------------------
    @staticmethod
    def line_at(path, field: Field, index: int) -> bytes:
        """The digits of record ``index`` (0-based) of a ``<field>.hex`` file already checked."""
        with open_regular(path) as file:
            file.seek(index * (field.hex_digits + 1))
            return file.read(field.hex_digits)


def lowercase(digits: np.ndarray) -> np.ndarray:
    """Hex digits with A-F made a-f (the array must hold hex digits only)."""
    return np.where((digits >= ord("A")) & (digits <= ord("F")), digits | 0x20, digits)


def digits_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row: whether two (m, d) arrays of hex digits hold the same value."""
    return (_NIBBLE[a] == _NIBBLE[b]).all(axis=1)


def field_values(digits: np.ndarray, field: Field):
    """The values of an (m, d) array of one field's hex digits: a uint64 array (int64 for a
    signed field) when the field has at most 64 bits, else a list of Python ints."""
    if field.bits <= 64:
        nibbles = _NIBBLE[digits].astype(np.uint64)
        values = np.zeros(len(digits), dtype=np.uint64)
        for column in range(digits.shape[1]):
            values = (values << np.uint64(4)) | nibbles[:, column]
        if not field.signed:
            return values
        signed = values.astype(np.int64)
        if field.bits < 64:
            signed = np.where(values >> np.uint64(field.bits - 1) & np.uint64(1), signed - (1 << field.bits), signed)
        return signed
    values = [int(row.tobytes(), 16) for row in digits]
    if field.signed:
        half = 1 << (field.bits - 1)
        values = [v - (half << 1) if v >= half else v for v in values]
    return values


def sha256_file(path, block: int = 1 << 20) -> str:
    """SHA-256 of a regular file (:func:`open_regular`), read a block at a time."""
    digest = hashlib.sha256()
    with open_regular(path) as file:
        while data := file.read(block):
            digest.update(data)
    return digest.hexdigest()


class NotRegularFile(OSError):
    """A FIFO, a device, a directory or a socket where a regular file is required;
    ``strerror`` says which (``not a regular file (a FIFO)``), ``filename`` names it."""


_FILE_TYPES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))


def open_regular(path) -> BinaryIO:
    """``path`` (a symlink to one too) opened for binary reading if it is a regular file, else
    :class:`NotRegularFile`. The file is opened with O_NONBLOCK and its type read with fstat
    before a byte is read, so a FIFO without a writer never blocks the caller, one with a writer
    is refused by name (not a "not seekable" error later), and a device (/dev/zero) is never
    read to its end; a regular file is then read as usual (blocking)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = next((name for test, name in _FILE_TYPES if test(mode)), "not a file")
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({what})", os.fspath(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
