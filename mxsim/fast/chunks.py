"""Run an element-wise kernel over a flat array in cache-sized chunks, on up to two threads.

NumPy releases the GIL inside its loops, so two threads use both cores of the target machines.
Chunks of 2^16 elements keep every temporary of a kernel in L2 cache.

Scheduling is dynamic: the calling thread and one pool thread each take the next chunk until none
is left, so a thread that the OS holds back (a shared machine) leaves its share to the other
instead of stalling the call. Results do not depend on the schedule: each chunk's kernel call
reads and writes only its own rows (kernels keep per-thread scratch buffers), and an exception
is reported for the first failing chunk in index order, as a single thread would.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["map_chunks", "CHUNK", "BLOCK_CHUNK"]

CHUNK = 1 << 16
# Elements per chunk of the block kernels: their per-chunk bookkeeping (block maxima, scale
# rules, per-block factors) amortizes best at about 2^18 (measured on the target machines:
# 2^16 gives about half the throughput, 2^20 less again).
BLOCK_CHUNK = 1 << 18
_THREADS = max(1, min(2, os.cpu_count() or 1))
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="mxsim")
    return _pool


def map_chunks(kernel, n: int, *arrays, chunk: int = CHUNK) -> None:
    """Call ``kernel(start, stop, *views)`` over [0, n) in chunks of ``chunk`` rows; ``views``
    are the ``arrays`` sliced along their first axis (arrays of length 1 pass through unsliced).

    Exceptions raised by the kernel propagate to the caller (the first one, in index order:
    chunks are taken in increasing order and none is taken after a failure, so every chunk
    before a failing one has run)."""

    def run(start: int) -> None:
        stop = min(start + chunk, n)
        kernel(start, stop, *(a if a.shape[0] == 1 else a[start:stop] for a in arrays))

    starts = iter(range(0, n, chunk))
    if n <= 2 * chunk or _THREADS == 1:
        for start in starts:
            run(start)
        return
    lock = threading.Lock()
    failures: dict[int, BaseException] = {}

    def work() -> None:
        while True:
            with lock:
                start = None if failures else next(starts, None)
            if start is None:
                return
            try:
                run(start)
            except BaseException as error:  # noqa: BLE001 - re-raised below, in index order
                with lock:
                    failures[start] = error
                return

    helper = _executor().submit(work)
    work()
    if not helper.cancel():  # not started yet (a busy pool): nothing left for it anyway
        helper.result()
    if failures:
        raise failures[min(failures)]
