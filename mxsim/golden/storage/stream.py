"""Golden vectors as lines on a stream (TestFloat's ``testfloat_gen`` piped into a testbench).

One vector per line: every field of the suite in manifest order (inputs, outputs, ``flags``), each
as fixed-width lower-case hex (``ceil(bits / 4)`` digits, two's complement for a signed field, as
in the ``.hex`` files), separated by one space, LF line endings. The first line is a comment that
names the suite and the fields (or, with a manifest file, there is none)::

    # mxsim golden stream kind=decode suite=fp4_e2m1 seed=0 level=1 count=16 inputs=code:4 outputs=value:32,flags:32
    0 00000000 00000009
    1 3f000000 00000201

``name:bits`` per field (``s`` after the bits: signed); ``count=forever`` for an endless stream.
The vectors are those ``generate`` writes for the same seed, level and count (:mod:`..compute.pipeline`).
"""

from __future__ import annotations

import re
from typing import BinaryIO

from ...reading import shorten
from ..compute import pipeline
from ..kinds.fields import Field

__all__ = ["header", "parse_header", "lines", "write_stream", "CHUNK"]

CHUNK = 256  # vectors computed and written at a time (any value gives the same lines)
_MARK = "# mxsim golden stream"
_MAX_BITS_DIGITS = 9  # a field of up to 999,999,999 bits: far beyond any suite's, and never a huge int()
_COLUMN = re.compile(rf"(?P<name>[^\s:,=]+):(?P<bits>[0-9]{{1,{_MAX_BITS_DIGITS}}})(?P<signed>s?)")


def _fields_text(fields: list[Field]) -> str:
    return ",".join(f"{f.name}:{f.bits}{'s' if f.signed else ''}" for f in fields)


def header(suite, seed: int, level: int, plan: pipeline.Plan) -> str:
    """The comment line (without its newline)."""
    count = "forever" if plan.forever else plan.total
    return (f"{_MARK} kind={suite.kind} suite={suite.name} seed={seed} level={level} count={count} "
            f"inputs={_fields_text(suite.inputs)} outputs={_fields_text(suite.fields[len(suite.inputs):])}")


def parse_header(line: str) -> dict | None:
    """The ``key=value`` entries of a header line (``inputs``/``outputs``: lists of (name, bits,
    signed)); None for another comment. ValueError naming the entry and item for an ``inputs`` or
    ``outputs`` item that is not ``name:bits`` (bits: a decimal number, ``s`` after it for a
    signed field)."""
    if not line.startswith(_MARK):
        return None
    entries = dict(token.split("=", 1) for token in line[len(_MARK):].split() if "=" in token)
    for key in ("inputs", "outputs"):
        if key in entries:
            columns = []
            for item in entries[key].split(","):
                match = _COLUMN.fullmatch(item)
                if match is None:
                    raise ValueError(
                        f"the stream header's {key}= item {shorten(repr(item), 60)} is not allowed; expected "
                        f"name:bits (bits a decimal number of at most {_MAX_BITS_DIGITS} digits, then 's' for a "
                        "signed field), as in inputs=code:4 outputs=value:32,flags:64"
                    )
                columns.append((match["name"], int(match["bits"]), bool(match["signed"])))
            entries[key] = columns
    if "kind" in entries and "suite" in entries:
        entries["suite"] = f"{entries['kind']}/{entries['suite']}"
    return entries


def lines(suite, chunk: dict[str, list[int]]) -> str:
    """The lines of a chunk of vectors (every field, :func:`.pipeline.computed_chunks`)."""
    columns = [f.to_hex_lines(chunk[f.name]).split("\n")[:-1] for f in suite.fields]
    return "".join(" ".join(row) + "\n" for row in zip(*columns))


def write_stream(suite, out: BinaryIO, seed: int, level: int, plan: pipeline.Plan, with_header: bool = True) -> int:
    """Write the vectors of ``plan`` to ``out`` (after the header line, if ``with_header``),
    flushing every :data:`CHUNK` vectors; returns how many were written (never, if forever)."""
    if with_header:
        out.write((header(suite, seed, level, plan) + "\n").encode())
        out.flush()
    written = 0
    for chunk in pipeline.computed_chunks(suite, seed, level, plan, size=CHUNK):
        out.write(lines(suite, chunk).encode())
        out.flush()
        written += len(chunk["flags"])
    return written
