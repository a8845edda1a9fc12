"""mxsim.fast.chunks.map_chunks: every chunk exactly once, whatever thread runs it; a thread held
back leaves the remaining chunks to the other (dynamic scheduling); the first failing chunk in
index order is the one reported. The events below only order the threads; their timeouts are a
safety net that turns a scheduling bug into a failure instead of a hang."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from mxsim.fast import chunks
from mxsim.fast.chunks import map_chunks

WAIT = 30  # seconds; never reached unless scheduling is broken


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setattr(chunks, "_THREADS", 2)


def test_every_chunk_once_and_results_as_sequential(two_threads):
    n, chunk = 10_007, 64
    x = np.arange(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    seen = []

    def kernel(start, stop, xs, outs):
        seen.append(start)
        outs[...] = xs * xs + start

    map_chunks(kernel, n, x, out, chunk=chunk)
    assert sorted(seen) == list(range(0, n, chunk))
    expected = x * x + (x // chunk) * chunk
    np.testing.assert_array_equal(out, expected)


def test_a_held_thread_leaves_the_rest_to_the_other(two_threads):
    n, chunk = 64 * 20, 64
    done = []
    rest_done = threading.Event()
    out = np.zeros(n, dtype=np.int64)

    def kernel(start, stop, outs):
        if start == 0:  # hold this thread until the other has run every other chunk
            assert rest_done.wait(WAIT), "the other thread did not take the remaining chunks"
        outs[...] = 1
        done.append(start)
        if len(done) == n // chunk - 1 and 0 not in done:
            rest_done.set()

    map_chunks(kernel, n, out, chunk=chunk)
    assert out.sum() == n and sorted(done) == list(range(0, n, chunk))


def test_first_failing_chunk_in_index_order_is_reported(two_threads):
    n, chunk = 64 * 20, 64
    later_failed = threading.Event()

    def kernel(start, stop, outs):
        if start == 3 * chunk:  # fails, but only after a later chunk has failed on the other thread
            assert later_failed.wait(WAIT), "chunk 10 never ran"
            raise ValueError("chunk 3")
        if start == 10 * chunk:
            later_failed.set()
            raise ValueError("chunk 10")

    with pytest.raises(ValueError, match="chunk 3"):
        map_chunks(kernel, n, np.zeros(n), chunk=chunk)
