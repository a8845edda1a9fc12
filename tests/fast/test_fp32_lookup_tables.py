"""The 16-bit lookup of float32 values into narrow float codes (mxsim.fast.encode.fp32_rne_table,
used by the block quantizer) against ml_dtypes' float32 casts (rne), bit for bit.

The lookup keeps the top 16 bits of a float32 and folds the low 16 into a sticky bit, so the cases
that matter are values whose rounding is decided by those low bits: every midpoint between two
neighbouring codes, nudged by one low bit either way and by larger amounts still inside the low
16 bits, plus random patterns over the format's range and below it. Saturation: ml_dtypes
overflows to Inf/NaN, so the oracle sees the values clipped to +-max finite (which is what
saturating rne gives for every larger magnitude)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mxsim.fast.encode import fp32_rne_table, fp32_table_index
from mxsim.formats import get_format

ORACLE = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}
NUDGES = np.array([0, 1, 2, 0x7FFF, 0x8000, 0xFFFF], dtype=np.int64)


def _oracle_codes(values: np.ndarray, name: str) -> np.ndarray:
    dtype = ORACLE[name]
    top = float(ml_dtypes.finfo(dtype).max)
    return np.clip(values, -top, top).astype(dtype).view(np.uint8)


def _lookup(values: np.ndarray, name: str) -> np.ndarray:
    bits = values.view(np.uint32)
    index = fp32_table_index(bits, np.empty_like(bits))
    return fp32_rne_table(get_format(name, kind="element"))[index]


def _midpoint_cases(name: str) -> np.ndarray:
    width = get_format(name, kind="element").width
    grid = np.arange(1 << width, dtype=np.uint8).view(ORACLE[name]).astype(np.float64)
    grid = np.unique(np.abs(grid[np.isfinite(grid)]))
    mids = ((grid[1:] + grid[:-1]) / 2).astype(np.float32)  # exact: a few significant bits
    points = np.concatenate([mids, grid.astype(np.float32)]).view(np.uint32).astype(np.int64)
    nudged = (points[:, None] + NUDGES).ravel().tolist() + (points[:, None] - NUDGES[1:]).ravel().tolist()
    magnitudes = np.array([b for b in nudged if 0 <= b < 0x7F800000], dtype=np.uint32).view(np.float32)
    return np.concatenate([magnitudes, -magnitudes])


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_midpoints_and_low_bit_nudges(name):
    values = _midpoint_cases(name)
    assert values.size > 100
    np.testing.assert_array_equal(_lookup(values, name), _oracle_codes(values, name))


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_random_patterns_over_and_below_the_range(name):
    fmt = get_format(name, kind="element")
    rng = np.random.default_rng(14)
    n = 200_000
    field = rng.integers(max(1, fmt.emin + 127 - 30), fmt.emax + 127 + 4, n).astype(np.uint32)
    sign = rng.integers(0, 2, n).astype(np.uint32) << 31
    bits = sign | (field << 23) | rng.integers(0, 1 << 23, n).astype(np.uint32)
    tiny = rng.integers(0, 1 << 23, 1000).astype(np.uint32)  # fp32 subnormals, +-0
    values = np.concatenate([bits, tiny, tiny | np.uint32(1 << 31), [0x7F800000, 0xFF800000]]).astype(np.uint32)
    values = values.view(np.float32)
    np.testing.assert_array_equal(_lookup(values, name), _oracle_codes(values, name))


def test_table_serves_only_narrow_float_formats():
    assert fp32_rne_table(get_format("int8", kind="element")) is None
