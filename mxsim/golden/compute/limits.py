"""How large a golden suite may be, checked before anything is allocated or written.

* Every kind of suite enumerates the codes of its element formats somewhere (``decode``: every
  code; ``encode``: every finite value, with its midpoints; ``quantize``: the element grid;
  ``dot``: the finite codes), so an element format may have at most
  :data:`MAX_ENUMERATED_BITS` bits: FP16 and BF16 are enumerated in full, FP32 and FP64 are
  refused (2^32 decode vectors would be 2^32 lines of a catalogue that promises every code).
* Suites are written a chunk at a time (:mod:`.pipeline`, :mod:`..storage.writer`), so memory does not
  grow with the count; a suite (its catalogue, or ``--count``) may hold at most
  :data:`MAX_VECTORS` vectors and :data:`MAX_SUITE_BYTES` bytes of hex files (guards against a
  mistyped count), and a generation must fit in the free space of its file system
  (:func:`check_space`). The largest catalogue within the other limits, ``encode`` of BF16 at
  level 10, has about 270,000 vectors. Shards split a suite's files, not its stimulus: the
  vector and byte limits apply to the whole suite.

``--level`` (1..10), DotGeneral's ``n_blocks`` (1..64) and the accumulator's ``frac_bits`` and
``width`` have bounds of their own, checked where they are read.
"""

from __future__ import annotations

from ...formats import FORMATS

__all__ = ["MAX_ENUMERATED_BITS", "MAX_VECTORS", "MAX_SUITE_BYTES", "CHUNK_BYTES", "check_enumerable", "check_size",
           "check_space", "suite_bytes", "chunk_vectors"]

MAX_ENUMERATED_BITS = 16
MAX_VECTORS = 1 << 36
MAX_SUITE_BYTES = 1 << 42
CHUNK_BYTES = 4 << 20  # bytes of hex lines worked on at a time (generate, verify, check)


def chunk_vectors(line_bytes: int, most: int) -> int:
    """Vectors per chunk for lines of ``line_bytes`` bytes (all of a suite's fields, or those read):
    at most ``most`` and at most :data:`CHUNK_BYTES` of lines, at least one. Work is chunked by
    bytes, not lines: a suite of 65,536-element blocks has lines of half a megabyte, and the
    memory of computing a chunk grows with its bytes (any chunking gives the same results)."""
    return max(1, min(most, CHUNK_BYTES // max(1, line_bytes)))


def _element_formats(suite) -> list:
    """The element formats a suite works on (block formats: their elements and scales)."""
    found = []
    for name in ("fmt", "fa", "fb"):
        fmt = getattr(suite, name, None)
        if fmt is None:
            continue
        found += [fmt.element, fmt.scale] if fmt.kind == "block" else [fmt]
    return found


def check_enumerable(suite) -> None:
    """Refuse a suite whose element format has more than 2^MAX_ENUMERATED_BITS codes."""
    for fmt in _element_formats(suite):
        if fmt.width > MAX_ENUMERATED_BITS:
            allowed = [n for n, f in FORMATS.items() if f.kind != "block" and f.width > 8 and f.width <= MAX_ENUMERATED_BITS]
            raise ValueError(
                f"{suite.kind}/{suite.name}: {fmt.name} has 2^{fmt.width} codes, too many to enumerate; golden "
                f"suites take element formats of at most {MAX_ENUMERATED_BITS} bits (2^{MAX_ENUMERATED_BITS} codes; "
                f"the widest are {', '.join(allowed)})"
            )


def suite_bytes(suite, vectors: int) -> int:
    """Bytes of the hex files of ``vectors`` vectors (every line: its digits and a newline)."""
    return vectors * sum(f.hex_digits + 1 for f in suite.fields)


def check_size(suite, vectors: int) -> None:
    """Refuse a suite of more than MAX_VECTORS vectors or MAX_SUITE_BYTES bytes of hex files."""
    line_bytes = sum(f.hex_digits + 1 for f in suite.fields)
    if vectors > MAX_VECTORS:
        raise ValueError(
            f"{suite.kind}/{suite.name}: {vectors} vectors, more than the limit of {MAX_VECTORS} per suite "
            "(mxsim.golden.compute.limits.MAX_VECTORS); lower --count or --level"
        )
    if vectors * line_bytes > MAX_SUITE_BYTES:
        raise ValueError(
            f"{suite.kind}/{suite.name}: {vectors} vectors of {line_bytes} bytes = {vectors * line_bytes} bytes of hex "
            f"files, more than the limit of {MAX_SUITE_BYTES} bytes per suite (mxsim.golden.compute.limits.MAX_SUITE_BYTES); "
            "lower --count or --level"
        )


def check_space(root, suites: list, shard=None) -> None:
    """Refuse a generation whose hex files (``suites``: (suite, vectors) pairs; a shard's share of
    each) need more bytes than the file system of ``root`` has free."""
    import shutil

    needed = sum(suite_bytes(suite, vectors) for suite, vectors in suites)
    if shard is not None:
        needed = -(-needed // shard[1])
    free = shutil.disk_usage(root).free
    if needed > free:
        raise ValueError(f"{root}: the suites need {needed} bytes of hex files, the file system has {free} free; "
                         "free some space, lower --count, or write shards (--shard I/N) to other disks")
