"""Timing helper shared by the benchmark scripts: median throughput over repeated runs."""

from __future__ import annotations

import statistics
import time


def median_rate(function, n: int, repeat: int) -> float:
    """Median elements per second of ``function()`` over ``repeat`` timed runs, after a warm-up."""
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times)
