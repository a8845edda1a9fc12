"""Run an element-wise kernel over a flat array in cache-sized chunks, on up to two threads.

NumPy releases the GIL inside its loops, so two threads use both cores of the target machines.
Chunks of 2^16 elements keep every temporary of a kernel in L2 cache.
"""

from __future__ import annotations

import os
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

    Exceptions raised by the kernel propagate to the caller (the first one, in index order).
    """

    def run(lo: int, hi: int) -> None:
        for start in range(lo, hi, chunk):
            stop = min(start + chunk, hi)
            kernel(start, stop, *(a if a.shape[0] == 1 else a[start:stop] for a in arrays))

    if n <= 2 * chunk or _THREADS == 1:
        run(0, n)
        return
    half = (n // 2 + chunk - 1) // chunk * chunk
    futures = [_executor().submit(run, 0, half), _executor().submit(run, half, n)]
    for future in futures:
        future.result()
