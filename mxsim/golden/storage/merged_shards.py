"""The shards of a merged suite, verified against it (``golden merge`` into the shards' own root
leaves ``<suite>/shard-<i>-of-<n>/`` beside the merged files).

A shard directory inside a suite directory that holds a whole suite of the same generation (the
same ``params``, ``seed``, ``level`` and ``stimulus``, no ``shard`` entry) is verified by comparing
its files byte for byte with the whole suite's lines it holds, which verify recomputes; so its
vectors are neither recomputed nor counted twice (a 20,000-vector suite merged from its shards is
20,000 vectors recomputed, not 40,000). A shard of another generation is verified as any suite is.
"""

from __future__ import annotations

import re
from pathlib import Path

from .columns import open_regular
from .files import MANIFEST, read_json

__all__ = ["merged_suite", "compare_with_merged"]

_SHARD_NAME = re.compile(r"shard-[0-9]+-of-[0-9]+")
_SAME = ("kind", "suite", "params", "seed", "level", "stimulus")  # manifest keys of one generation
_BLOCK = 1 << 20  # bytes compared at a time


def merged_suite(directory: Path) -> Path | None:
    """The whole suite ``directory`` is a shard of (its parent), if ``directory`` is named as a
    shard and its parent holds a whole suite of the same generation; else None."""
    if not _SHARD_NAME.fullmatch(directory.name):
        return None
    try:
        shard, whole = read_json(directory / MANIFEST), read_json(directory.parent / MANIFEST)
    except (OSError, ValueError):
        return None
    if not (isinstance(shard, dict) and isinstance(whole, dict)) or whole.get("shard") is not None:
        return None
    return directory.parent if all(shard.get(key) == whole.get(key) for key in _SAME) else None


def compare_with_merged(directory: Path, whole: Path, fields, first: int, count: int) -> str | None:
    """None if every field's file in the shard ``directory`` (``count`` lines, checked already)
    is lines ``first`` .. ``first + count - 1`` (0-based) of the whole suite's file in ``whole``;
    else the first line that differs (or the file that cannot be read)."""
    for f in fields:
        width = f.hex_digits + 1
        try:
            with open_regular(directory / f.file) as shard_file, open_regular(whole / f.file) as whole_file:
                whole_file.seek(first * width)
                left, done = count * width, 0
                while left:
                    size = min(left, _BLOCK // width * width or width)
                    ours, theirs = shard_file.read(size), whole_file.read(size)
                    if ours != theirs:
                        at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
                        line = (done + at) // width
                        return (f"{directory / f.file}: line {line + 1} differs from line {first + line + 1} of the merged "
                                f"suite's {whole / f.file} (the shard or the merged suite was edited)")
                    left, done = left - size, done + size
        except OSError as error:
            return f"{directory / f.file}: not compared with the merged suite ({error.strerror or error})"
    return None
