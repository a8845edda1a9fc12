"""Checking a device's results against a golden suite (TestFloat's ``testfloat_ver``).

The device's results come either as a directory of files named and formatted like the suite's
output fields (``<field>.hex``: one value per line, the suite's hex width, LF endings, aligned by
line with the suite; a ``flags.hex`` is not needed and is ignored), or as a stream of lines in the
``mxsim golden stream`` format (:mod:`..storage.stream`: every input field, every output field and
optionally ``flags``, fixed-width hex separated by one space, ``#`` comment lines first): a
stream's inputs must be the suite's, line by line (else it is not this suite's stream, or a line
was dropped: an error), and its output columns are compared; its flags column is ignored.

Comparison works on whole chunks of lines as NumPy arrays (:mod:`..storage.columns`), never a Python loop
per vector. Hex digits compare by value (A-F as a-f). :func:`check` returns a :class:`CheckReport`:
per field the 0-based lines that differ, per corner class how many mismatching vectors have it,
and the first few mismatching vectors with both values; :func:`report_lines` writes it out with
each vector's inputs decomposed (:mod:`.decompose`). The suite's own files are checked against
the SHA-256 of its manifest as they are read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ...printable import escape_controls
from ...reading import shorten
from ..compute import limits
from ..coverage.catalogue import CLASSES
from ..storage.columns import (NotRegularFile, RecordError, RecordReader, digits_equal, field_values,
                               open_regular, sha256_file)
from .decompose import difference_lines, vector_lines
from ..kinds.fields import Field
from ..storage.stream import parse_header
from ..storage.verify import load_suite

__all__ = ["check", "compare_range", "CheckReport", "Mismatch", "CheckError", "report_lines", "open_suite_files",
           "load_checked_suite", "CHUNK"]

CHUNK = 1 << 16  # lines compared at a time (fewer for long lines: :func:`.limits.chunk_vectors`)
MAX_COMMENT_LINES = 1000  # comment lines a stream may start with (a stream of ours has one)
MAX_COMMENT_BYTES = 1 << 16  # bytes of one comment line


def _line(source: BinaryIO, limit: int, number: int) -> bytes:
    """The next line of a stream, at most ``limit`` bytes (an endless line is not read to its end)."""
    line = source.readline(limit + 1)
    if len(line) > limit:
        raise CheckError(f"stdin: line {number}: more than {limit} bytes without a line end (not a line of this "
                         "suite's stream; read no further)")
    return line


class CheckError(ValueError):
    """The check could not be made (a suite that cannot be read, a field the suite does not
    have); the device's file problems are in :attr:`CheckReport.errors` instead."""


@dataclass
class Mismatch:
    """One mismatching vector: its 0-based ``line``, its ``flags`` word (the suite's), and per
    mismatching field (expected hex, device hex)."""

    line: int
    flags: int
    fields: dict[str, tuple[str, str]]


@dataclass
class CheckReport:
    """What :func:`check` found. ``mismatches``: per compared field, the 0-based lines whose device
    value differs (a NumPy int64 array); ``classes``: per corner class, how many mismatching
    vectors have it (``class_totals``: how many vectors of the suite have it); ``first``: the first
    ``errors`` mismatching vectors; ``errors``: the device's file problems (missing, short, long,
    malformed; then the comparison is incomplete)."""

    suite_dir: Path
    suite: object
    manifest: dict
    source: str
    fields: list[str]
    vectors: int = 0
    mismatches: dict[str, np.ndarray] = field(default_factory=dict)
    classes: dict[str, int] = field(default_factory=dict)
    class_totals: dict[str, int] = field(default_factory=dict)
    first: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def mismatching(self) -> np.ndarray:
        """Every 0-based line with a mismatch in any field, sorted."""
        arrays = list(self.mismatches.values())
        return np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, dtype=np.int64)

    @property
    def ok(self) -> bool:
        return not self.errors and not any(len(a) for a in self.mismatches.values())


class _Device:
    """The device's output columns a chunk at a time, from a directory or a stream."""

    def __init__(self, suite, dut, fields: list[Field], report: CheckReport, first: int = 0):
        self.suite, self.fields, self.report = suite, fields, report
        self.files: list[BinaryIO] = []
        self.readers: dict[str, RecordReader] = {}  # field name (or "" for a stream) -> reader
        self.inputs: list[Field] = []  # a stream's input fields (checked against the suite's)
        if isinstance(dut, (str, Path)):
            self._open_directory(Path(dut), first)
        else:
            self._open_stream(dut)

    def _open_directory(self, directory: Path, first: int) -> None:
        if not directory.is_dir():
            raise CheckError(f"{directory}: {'not a directory' if directory.exists() else 'no such directory'} "
                             "(the device's results: one <field>.hex per output field, or - for a stream on stdin)")
        for f in self.fields:
            path = directory / f.file
            try:
                file = open_regular(path)  # a FIFO or a device is refused, never waited on or read to its end
            except OSError as error:
                expected = ", ".join(g.file for g in self.fields)
                what = error.strerror if isinstance(error, NotRegularFile) else f"missing ({error.strerror})"
                self.report.errors.append(f"{path}: {what}; the device's results are {expected}, "
                                          "one value per line, aligned with the suite")
                continue
            self.files.append(file)
            file.seek(first * (f.hex_digits + 1))
            self.readers[f.name] = RecordReader(file, [f], str(path), first_line=first + 1)

    def _open_stream(self, source: BinaryIO) -> None:
        suite = self.suite
        columns = suite.inputs + suite.outputs
        longest = sum(f.hex_digits + 1 for f in columns + [suite.fields[-1]])  # a vector line with flags
        lines, header = 0, None
        first = _line(source, max(longest, MAX_COMMENT_BYTES), 1)
        while first.startswith(b"#"):
            lines += 1
            if lines > MAX_COMMENT_LINES:
                raise CheckError(f"stdin: more than {MAX_COMMENT_LINES} comment lines before the first vector "
                                 "(not a stream of this suite; read no further)")
            header = header or parse_header(first.decode("ascii", errors="replace"))
            first = _line(source, max(longest, MAX_COMMENT_BYTES), lines + 1)
        if header is not None:
            _check_header(header, suite)
        width = sum(f.hex_digits + 1 for f in columns)
        with_flags = len(first.rstrip(b"\r\n")) + 1 != width  # inputs and outputs only, or flags too
        self.inputs = suite.inputs
        self.first_line = lines + 1
        self.readers[""] = RecordReader(source, columns + [suite.fields[-1]] * with_flags, "stdin",
                                        first_line=lines + 1, pending=first)

    def read(self, size: int, start: int) -> dict[str, np.ndarray]:
        """The digits of the next ``size`` lines of every readable field (inputs too for a
        stream; fewer lines where a source ends early); a source that fails or ends early is
        reported and dropped."""
        out = {}
        for name, reader in list(self.readers.items()):
            try:
                array = reader.read(size)
            except RecordError as error:
                self._drop(name, str(error))
                continue
            out.update(reader.split(array))
            if len(array) < size:
                total = self.report.manifest["count"]
                self._drop(name, f"{reader.label}: ends after {start + len(array)} vector line(s), the suite has "
                                 f"{total} (short: line {reader.first_line + reader.lines} onward missing)")
        return out

    def finish(self, total: int) -> None:
        """Report every source with bytes beyond the suite's lines; what follows is not read (an
        endless stream, or a file with a long tail, ends the check at the suite's last line)."""
        for name, reader in list(self.readers.items()):
            if not reader.at_end():
                self._drop(name, f"{reader.label}: more than the suite's {total} vector line(s) (long: line "
                                 f"{reader.first_line + total} onward is extra; not read further)")

    def _drop(self, name: str, error: str) -> None:
        self.report.errors.append(error)
        del self.readers[name]

    def close(self) -> None:
        for file in self.files:
            file.close()


def check(suite_dir, dut, errors: int = 20, fields: list[str] | None = None, cluster=None) -> CheckReport:
    """Compare the device's results ``dut`` (a directory, or a binary stream of ``stream``-format
    lines) with the suite in ``suite_dir``: every output field, or those named in ``fields``.
    ``errors``: how many mismatching vectors :attr:`CheckReport.first` keeps. ``cluster``: a
    :class:`.cluster.Cluster` to compare ranges of lines on, when ``dut`` is a directory whose
    files have the suite's size (the same report; otherwise the check runs here)."""
    began = time.perf_counter()
    suite_dir = Path(suite_dir)
    manifest, suite, outputs = _suite_and_fields(suite_dir, fields)
    directory = isinstance(dut, (str, Path))
    if cluster is not None and not directory:
        raise CheckError("a stream on stdin is read by one process: --scheduler and --workers need the device's "
                         "results as a directory")

    def new_report() -> CheckReport:
        report = CheckReport(suite_dir, suite, manifest, str(dut) if directory else "stdin", [f.name for f in outputs])
        report.class_totals = {name: manifest.get("coverage", {}).get(name, 0) for name in CLASSES}
        return report

    report = new_report()
    if cluster is not None and _sized(Path(dut), outputs, manifest["count"]):
        if _check_on(cluster, suite_dir, manifest, suite, outputs, Path(dut), report, errors):
            report.seconds = time.perf_counter() - began
            return report
        report = new_report()  # a file error: the one-process check reports it
    device = _Device(suite, dut, outputs, report)
    try:
        _compare(suite_dir, manifest, suite, outputs, device, report, errors)
    finally:
        device.close()
    report.seconds = time.perf_counter() - began
    return report


def load_checked_suite(suite_dir) -> tuple[dict, object]:
    """(manifest, suite) of the suite in ``suite_dir``, ready to be compared with: CheckError (a
    usage error, exit 2) if its manifest cannot be read, its ``count`` is beyond
    :data:`.limits.MAX_VECTORS` or is not the lines its files hold (each file a regular file of
    ``count`` lines of its field's width: the suite is checked before the device is blamed), or
    its ``coverage`` is not a count per class."""
    suite_dir = Path(suite_dir)
    try:
        manifest, suite = load_suite(suite_dir)
    except ValueError as error:
        raise CheckError(str(error)) from None
    where, count = suite_dir / "manifest.json", manifest["count"]
    if count > limits.MAX_VECTORS:
        raise CheckError(f"{where}: 'count' is {count}, more than a suite may have ({limits.MAX_VECTORS}); "
                         f"mxsim golden verify {suite_dir}")
    coverage = manifest.get("coverage", {})
    if not (isinstance(coverage, dict) and all(type(n) is int and n >= 0 for n in coverage.values())):
        raise CheckError(f"{where}: 'coverage' is {shorten(json.dumps(coverage, default=str))}, expected a count per "
                         f"class (a JSON object of non-negative integers); mxsim golden verify {suite_dir}")
    for f in suite.fields:
        path = suite_dir / f.file
        try:
            status = os.stat(path)
        except OSError as error:
            raise CheckError(f"{path}: missing ({error.strerror}) (a file of the suite; mxsim golden verify "
                             f"{suite_dir})") from None
        if not stat.S_ISREG(status.st_mode):
            open_suite_files(suite_dir, [f])  # names what it is
        if status.st_size != count * (f.hex_digits + 1):
            raise CheckError(f"{path}: {status.st_size} bytes, but the manifest's {count} vectors make "
                             f"{count * (f.hex_digits + 1)} (the suite's file or manifest was edited or truncated; "
                             f"mxsim golden verify {suite_dir})")
    return manifest, suite


def _suite_and_fields(suite_dir: Path, fields: list[str] | None):
    """(manifest, suite, the output fields compared)."""
    manifest, suite = load_checked_suite(suite_dir)
    outputs = suite.outputs
    if fields is not None:
        known = {f.name: f for f in outputs}
        unknown = [name for name in fields if name not in known]
        twice = sorted({name for name in fields if fields.count(name) > 1})
        if twice:
            raise CheckError(f"--fields {shorten(','.join(fields))}: {', '.join(twice)} given more than once; "
                             f"name each output field once (the output fields of {suite.kind}/{suite.name} are "
                             f"{', '.join(known)})")
        if unknown or not fields:
            given, unknown_text = shorten(",".join(fields)), shorten(", ".join(unknown)) or "none given"
            raise CheckError(f"--fields {given}: {unknown_text}; the output fields of {suite.kind}/{suite.name} are "
                             f"{', '.join(known)}")
        outputs = [known[name] for name in fields]
    return manifest, suite, outputs


def _compare(suite_dir: Path, manifest: dict, suite, outputs: list[Field], device: _Device, report: CheckReport,
             errors: int, first: int = 0, last: int | None = None) -> None:
    """Compare lines [first, last) (default: all, then the device's extra lines and the suite's
    hashes too; a range reads from the lines' offsets and checks neither)."""
    flags_field = suite.fields[-1]
    expected_fields = outputs + [flags_field] + device.inputs
    files = open_suite_files(suite_dir, expected_fields)
    digests = {f.name: hashlib.sha256() for f in expected_fields}
    counts = np.zeros(len(CLASSES), dtype=np.int64)
    found: dict[str, list[np.ndarray]] = {f.name: [] for f in outputs}
    total = manifest["count"]
    last = total if last is None else last
    whole = (first, last) == (0, total)
    try:
        for f in expected_fields:
            files[f.name].seek(first * (f.hex_digits + 1))
        suite_readers = {f.name: RecordReader(files[f.name], [f], str(suite_dir / f.file), first_line=first + 1,
                                              hasher=digests[f.name] if whole else None)
                         for f in expected_fields}
        chunk = limits.chunk_vectors(sum(f.hex_digits + 1 for f in expected_fields + device.inputs), CHUNK)
        for start in range(first, last, chunk):
            size = min(chunk, last - start)
            try:
                expected = {name: reader.read(size)[:, :-1] for name, reader in suite_readers.items()}
            except RecordError as error:
                raise CheckError(f"{error} (a file of the suite; mxsim golden verify {suite_dir})") from None
            got = device.read(size, start)
            _check_inputs(device, expected, got, start)
            compared = _compare_chunk(outputs, flags_field, expected, got, start, found, counts, report, errors)
            if device.inputs and compared < size:
                return  # the stream ended early (reported); the rest of the suite is not read
        if whole:
            device.finish(total)
            for f in expected_fields:
                if digests[f.name].hexdigest() != manifest["files"].get(f.file):
                    _changed(suite_dir, f)
    finally:
        for file in files.values():
            file.close()
        report.mismatches = {name: np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
                             for name, arrays in found.items()}
        report.classes = {name: int(n) for name, n in zip(CLASSES, counts) if n}


def open_suite_files(suite_dir: Path, fields: list[Field]) -> dict[str, BinaryIO]:
    """The suite's files of ``fields``, open (:func:`.columns.open_regular`: a FIFO or a device
    in the suite is a CheckError naming it); the caller closes them."""
    files: dict[str, BinaryIO] = {}
    try:
        for f in fields:
            files[f.name] = open_regular(suite_dir / f.file)
    except OSError as error:
        for file in files.values():
            file.close()
        raise CheckError(f"{suite_dir / f.file}: {error.strerror} (a file of the suite; mxsim golden verify "
                         f"{suite_dir})") from None
    return files


def _changed(suite_dir: Path, f: Field):
    raise CheckError(f"{suite_dir / f.file}: SHA-256 differs from the suite's manifest (edited or truncated); "
                     f"mxsim golden verify {suite_dir}")


# --- on a cluster ----------------------------------------------------------------------------
_RANGE_LINES = 4 * CHUNK  # at least this many lines per task on a cluster


def _sized(dut: Path, outputs: list[Field], total: int) -> bool:
    """Whether every device file is there with exactly the suite's lines of the field's width."""
    try:
        return all((dut / f.file).stat().st_size == total * (f.hex_digits + 1) for f in outputs)
    except OSError:
        return False


def compare_range(suite_dir: str, dut: str, fields: list[str], errors: int, first: int, last: int) -> dict:
    """A task: compare lines [first, last) of the device directory ``dut`` with the suite
    (``fields``: the output fields compared); the parts of a :class:`CheckReport` it found."""
    manifest, suite, outputs = _suite_and_fields(Path(suite_dir), fields)
    report = CheckReport(Path(suite_dir), suite, manifest, dut, fields)
    device = _Device(suite, dut, outputs, report, first)
    try:
        _compare(Path(suite_dir), manifest, suite, outputs, device, report, errors, first, last)
    finally:
        device.close()
    return {"vectors": report.vectors, "mismatches": report.mismatches, "classes": report.classes,
            "first": report.first, "errors": report.errors}


def _check_on(cluster, suite_dir: Path, manifest: dict, suite, outputs: list[Field], dut: Path, report: CheckReport,
              errors: int) -> bool:
    """Compare on ``cluster`` into ``report``; False (report unfinished) if a file has an error,
    which the one-process check then reports as it does."""
    names = [f.name for f in outputs]
    jobs = [(str(suite_dir.resolve()), str(dut.resolve()), names, errors, first, last)
            for first, last in cluster.ranges(manifest["count"], _RANGE_LINES, CHUNK)]
    try:
        parts = list(cluster.map(compare_range, jobs))
    except CheckError:  # a suite file that cannot be read: the one-process check names it as given
        return False
    if any(part["errors"] for part in parts):
        return False
    for f in outputs + [suite.fields[-1]]:
        if sha256_file(suite_dir / f.file) != manifest["files"].get(f.file):
            _changed(suite_dir, f)
    report.vectors = sum(part["vectors"] for part in parts)
    report.mismatches = {name: np.concatenate([part["mismatches"][name] for part in parts]) for name in names}
    classes = {name: sum(part["classes"].get(name, 0) for part in parts) for name in CLASSES}
    report.classes = {name: n for name, n in classes.items() if n}
    report.first = [mismatch for part in parts for mismatch in part["first"]][:errors]
    return True


def _compare_chunk(outputs: list[Field], flags_field: Field, expected: dict, got: dict, start: int, found: dict,
                   counts: np.ndarray, report: CheckReport, errors: int) -> int:
    """Compare one chunk: mismatching lines per field into ``found``, their classes into
    ``counts``, the first ``errors`` mismatching vectors into the report; returns the lines compared."""
    size = len(expected[flags_field.name])
    differs = {}
    for f in outputs:
        if f.name in got:
            differs[f.name] = ~digits_equal(expected[f.name][:len(got[f.name])], got[f.name])
            found[f.name].append(start + np.flatnonzero(differs[f.name]))
    compared = max((len(d) for d in differs.values()), default=0)
    report.vectors += compared
    mismatch = np.zeros(size, dtype=bool)
    for d in differs.values():
        mismatch[:len(d)] |= d
    if not mismatch.any():
        return compared
    flags = field_values(expected[flags_field.name], flags_field)
    bits = np.arange(len(CLASSES), dtype=np.uint64)
    counts += ((flags[mismatch][:, None] >> bits) & np.uint64(1)).sum(axis=0).astype(np.int64)
    for row in np.flatnonzero(mismatch)[: max(0, errors - len(report.first))]:
        pairs = {name: (expected[name][row].tobytes().decode(), got[name][row].tobytes().decode())
                 for name, d in differs.items() if row < len(d) and d[row]}
        report.first.append(Mismatch(start + int(row), int(flags[row]), pairs))
    return compared


def _check_header(header: dict, suite) -> None:
    """A stream's header must name the suite and its fields (flags optional)."""
    name = f"{suite.kind}/{suite.name}"
    if header.get("suite") not in (None, name):
        raise CheckError(f"stdin: the header names a stream of {header['suite']}, not of the suite {name}")
    for key, fields in (("inputs", suite.inputs), ("outputs", suite.outputs)):
        given = [column for column in header.get(key, []) if column[0] != "flags"]
        wanted = [(f.name, f.bits, f.signed) for f in fields]
        if key in header and given != wanted:
            raise CheckError(f"stdin: the header's {key} are {given}, the suite's {wanted}")


def _check_inputs(device: _Device, expected: dict, got: dict, start: int) -> None:
    """A stream's input columns must be the suite's, line by line."""
    for f in device.inputs:
        if f.name not in got:
            continue
        same = digits_equal(expected[f.name][:len(got[f.name])], got[f.name])
        if not same.all():
            row = int(np.argmin(same))
            first_line = device.first_line
            raise CheckError(
                f"stdin: line {first_line + start + row}: input {f.name} is "
                f"{shorten(got[f.name][row].tobytes().decode())}, but vector {start + row + 1} of the suite has "
                f"{shorten(expected[f.name][row].tobytes().decode())}: not this suite's vectors in order (another seed, "
                "level or count, or a line dropped or reordered)")


def report_lines(report: CheckReport) -> list[str]:
    """The report as text: a summary line, per field the mismatch count and first lines, the
    summary per corner class, and the first mismatching vectors with their inputs decomposed;
    control characters of the names echoed escaped (:func:`mxsim.printable.escape_controls`: a
    file name's newline or ESC forges no line and moves no cursor)."""
    return [escape_controls(line) for line in _report_lines(report)]


def _report_lines(report: CheckReport) -> list[str]:
    suite = report.suite
    name = f"{suite.kind}/{suite.name}"
    mismatching = report.mismatching
    head = (f"check {report.suite_dir} ({name}) against {report.source}: {report.vectors} vectors, fields "
            f"{', '.join(report.fields)}: ")
    compared = "all match" if not report.errors else "no mismatch in the lines compared"
    lines = [head + (f"{len(mismatching)} mismatching vector(s)" if len(mismatching) else compared)
             + (f", {len(report.errors)} file error(s): the comparison is incomplete" if report.errors else "")]
    lines += [f"ERROR {error}" for error in report.errors]
    for field_name, rows in report.mismatches.items():
        if len(rows):
            shown = ", ".join(str(int(r) + 1) for r in rows[:10]) + (", ..." if len(rows) > 10 else "")
            lines.append(f"field {field_name}: {len(rows)} mismatch(es), line(s) {shown}")
    if report.classes:
        lines.append("mismatching vectors per class (of the suite's vectors of that class): " + ", ".join(
            f"{cls} {n}/{report.class_totals.get(cls, 0)}" for cls, n in report.classes.items()))
    fields = {f.name: f for f in suite.fields}
    for mismatch in report.first:
        lines.append(f"--- line {mismatch.line + 1}")
        inputs = _inputs_at(report.suite_dir, suite, mismatch.line)
        lines += ["  " + text for text in vector_lines(suite, inputs, suite.inputs, mismatch.flags)]
        for field_name, (want, got) in mismatch.fields.items():
            f = fields[field_name]
            lines += ["  " + text for text in difference_lines(suite, f, f.from_hex(want), f.from_hex(got))]
    return lines


def _inputs_at(suite_dir: Path, suite, line: int) -> dict[str, int]:
    return {f.name: f.from_hex(RecordReader.line_at(suite_dir / f.file, f, line).decode()) for f in suite.inputs}
