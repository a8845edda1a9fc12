"""The cyclic garbage collector's settings while a command runs.

A command allocates millions of short-lived objects (the reference model's integers, tuples and
exact values) and holds a few hundred thousand long-lived ones (the modules, the format and
product tables, a chunk's vectors). Python's default thresholds (a young collection every 700
allocations, a full one every 100 young ones) then spend a tenth to a fifth of a fused golden
suite's CPU rescanning objects that are never garbage: almost everything mxsim frees, it frees by
reference counting. :func:`batch_collection` freezes what exists when the command starts (the
imported modules and tables: full collections skip it) and collects the young generation every
100,000 allocations instead; on the way out both are undone, so a process that runs many commands
(the tests) collects its cycles as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "batch_collection"]

YOUNG_THRESHOLD = 100_000  # allocations (net) between young collections while a command runs


@contextmanager
def batch_collection() -> Iterator[None]:
    """Run the body with the objects that exist now frozen (:func:`gc.freeze`) and young
    collections every :data:`YOUNG_THRESHOLD` allocations; restore the thresholds and unfreeze
    after it, however it ends."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
