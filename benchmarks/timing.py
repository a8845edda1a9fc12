"""Timing helper shared by the benchmark scripts: median throughput over repeated runs."""

from __future__ import annotations

import statistics
import time


def median_rate(function, n: int, repeat: int, clock=time.perf_counter) -> float:
    """Median elements per second of ``function()`` over ``repeat`` timed runs, after a warm-up;
    ``clock``: wall time (default) or ``time.process_time`` (CPU time of every thread of the process:
    steady on a loaded machine, and for the two-thread fast paths the sum of both threads)."""
    function()
    times = []
    for _ in range(repeat):
        start = clock()
        function()
        times.append(clock() - start)
    return n / statistics.median(times)
