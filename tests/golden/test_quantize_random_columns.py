"""A quantize suite's random run as columns (``random_columns``, which the pipeline's vector_columns
hands over without a dict per vector) holds exactly the vectors of ``random_run``, field by field,
and draws as many numbers from the generator (the next run starts at the same place)."""

from __future__ import annotations

import numpy as np
import pytest

from mxsim.golden.kinds.registry import suite_from_spec


@pytest.mark.parametrize("block", ["mxfp8_e4m3", "nvfp4", "mx9"])
def test_random_columns_hold_the_random_run(block):
    suite = suite_from_spec("quantize", block=block)
    by_rows, by_columns = np.random.default_rng(11), np.random.default_rng(11)
    rows = suite.random_run(by_rows, 101, 256)
    (columns,) = suite.random_columns([by_columns], [101], 256)
    assert sorted(columns) == sorted(f.name for f in suite.inputs)
    for name, column in columns.items():
        assert column == [row[name] for row in rows]
        assert all(type(value) is int for value in column)
    assert len(set(columns["x"])) == 256
    assert by_rows.integers(0, 1 << 62) == by_columns.integers(0, 1 << 62)
