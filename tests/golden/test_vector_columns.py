"""``pipeline.vector_columns`` hands over the vectors of ``pipeline.vectors`` as columns (issue 33:
no dict per random vector): the same vectors in the same order for any first and last vector
(inside the catalogue, across its end, mid-run, across runs), and ``computed_chunks`` gives the
same fields whatever the chunk size."""

from __future__ import annotations

import pytest

from mxsim.golden.compute import pipeline
from mxsim.golden.kinds.registry import suite_from_spec

SUITES = [
    ("dot", {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "aligned", "frac_bits": 8, "width": 14}}),
    ("dot", {"block_a": "mxfp4_e2m1", "accumulator": {"mode": "exact"}, "c_input": True}),
    ("dotgeneral", {"block_a": "nvfp4", "n_blocks": 2}),
    ("quantize", {"block": "mxfp8_e4m3"}),
    ("dot", {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}),  # C aimed by the fast path
]


def _rows_of(pieces, names):
    rows, origins = [], []
    for columns, piece_origins in pieces:
        assert {len(columns[name]) for name in names} == {len(piece_origins)}
        rows += [dict(zip(names, values)) for values in zip(*(columns[name] for name in names))]
        origins += piece_origins
    return rows, origins


@pytest.mark.parametrize("kind,params", SUITES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SUITES)])
def test_columns_are_the_vectors(kind, params):
    suite = suite_from_spec(kind, **params)
    names = [f.name for f in suite.inputs]
    c = suite.catalogue_size(1)
    plan = pipeline.plan(suite, 1, c + 900)
    for first, last in [(0, None), (c - 5, c + 10), (c + 100, c + 700), (c + 256, c + 512), (3, 40), (c + 899, None)]:
        expected = list(pipeline.vectors(suite, 2, 1, plan, first, last))
        rows, origins = _rows_of(pipeline.vector_columns(suite, 2, 1, plan, first, last), names)
        assert rows == [{name: row[name] for name in names} for row, _ in expected], (first, last)
        assert origins == [origin for _, origin in expected], (first, last)


@pytest.mark.parametrize("kind,params", [SUITES[1], SUITES[4]], ids=["c-exact", "c-fused"])
def test_more_runs_than_are_drawn_at_once_are_the_vectors(kind, params):
    """vector_columns draws RUNS_AT_ONCE runs a call (each from its own generator; with C, the first
    steps of all of them from one fast-path call): across several such calls, from mid-run to a
    last vector mid-run, the vectors are pipeline.vectors' (each run drawn alone)."""
    suite = suite_from_spec(kind, **params)
    names = [f.name for f in suite.inputs]
    c = suite.catalogue_size(1)
    runs = 2 * pipeline.RUNS_AT_ONCE + 3
    plan = pipeline.plan(suite, 1, c + runs * pipeline.RUN)
    first, last = c + 100, c + runs * pipeline.RUN - 30
    expected = list(pipeline.vectors(suite, 3, 1, plan, first, last))
    rows, origins = _rows_of(pipeline.vector_columns(suite, 3, 1, plan, first, last), names)
    assert len(rows) == last - first
    assert rows == [{name: row[name] for name in names} for row, _ in expected]
    assert origins == ["random"] * (last - first)


@pytest.mark.parametrize("size", [7, 256, 1000])
def test_chunks_are_the_same_whatever_their_size(size):
    kind, params = SUITES[0]
    suite = suite_from_spec(kind, **params)
    plan = pipeline.plan(suite, 1, suite.catalogue_size(1) + 1300)
    whole = list(pipeline.computed_chunks(suite, 4, 1, plan, size=10_000))
    assert len(whole) == 1
    chunks = list(pipeline.computed_chunks(suite, 4, 1, plan, size=size))
    assert all(len(chunk["flags"]) == size for chunk in chunks[:-1])
    joined = {name: [v for chunk in chunks for v in chunk[name]] for name in whole[0]}
    assert joined == whole[0]
