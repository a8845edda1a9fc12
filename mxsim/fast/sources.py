"""Input arrays of the fast path: which source type an array holds, and its exact values as a
float32 or float64 array (see :mod:`mxsim.ref.sources` for what the source type decides).

Accepted inputs (``source`` argument of :func:`mxsim.encode` and :func:`mxsim.quantize`):

* float arrays, ``source=None`` (or the matching name): float32 (fp32), float64 (fp64), float16
  (fp16), ml_dtypes bfloat16 (bf16), ml_dtypes float8_e4m3fn (fp8_e4m3) and float8_e5m2
  (fp8_e5m2);
* unsigned-integer bit patterns with an explicit ``source``: uint32 for fp32, uint64 for fp64,
  uint16 for fp16 or bf16 (bf16: the top half of an fp32, sign in bit 15), uint8 for fp8_e4m3 or
  fp8_e5m2 (the codes).

fp16, bf16 and FP8 values are widened to float32 exactly: NaN stays NaN with its sign bit, Inf
stays Inf, -0 stays -0. float32 and float64 arrays pass unchanged (no copy).
"""

from __future__ import annotations

import numpy as np

from ..ref.sources import SOURCE_TYPES, source_name
from .decode import native_array

__all__ = ["read_source", "SOURCE_DTYPES"]

# NumPy / ml_dtypes dtype name -> source type
SOURCE_DTYPES = {
    "float16": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float64": "fp64",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
}
_BIT_DTYPES = {"fp32": np.uint32, "fp64": np.uint64, "fp16": np.uint16, "bf16": np.uint16, "fp8_e4m3": np.uint8, "fp8_e5m2": np.uint8}
_FP8_TABLES: dict = {}


def _fp8_table(name: str) -> np.ndarray:
    """float32 value of every FP8 code (exact), NaN codes as NaN carrying the code's sign bit."""
    if name not in _FP8_TABLES:
        from ..formats import get_format
        from .decode import value_table

        values = value_table(get_format(name)).astype(np.float32)
        signs = np.where(np.arange(256) & 0x80, np.float32(-1), np.float32(1))
        _FP8_TABLES[name] = np.copysign(values, signs)
    return _FP8_TABLES[name]


def _widen(bits: np.ndarray, source: str) -> np.ndarray:
    """float32/float64 values of bit patterns of the source type."""
    if source == "fp32":
        return bits.view(np.float32)
    if source == "fp64":
        return bits.view(np.float64)
    if source == "fp16":
        return bits.view(np.float16).astype(np.float32)
    if source == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return _fp8_table(source)[bits]


def read_source(x, source=None) -> tuple[np.ndarray, str]:
    """(float32 or float64 array of the exact values, source type name) of an input array; see the
    module docstring. ValueError for another dtype, a ``source`` that does not match a float
    dtype, or bit patterns without ``source`` (or of the wrong width)."""
    arr = native_array(x)
    name = arr.dtype.name
    if arr.dtype.kind == "u":
        if source is None:
            raise ValueError(
                f"input dtype {name} holds bit patterns: pass source= naming their type (one of: "
                f"{', '.join(s for s, d in _BIT_DTYPES.items() if np.dtype(d) == arr.dtype) or 'none for this width'})"
            )
        source = source_name(source)
        if np.dtype(_BIT_DTYPES[source]) != arr.dtype:
            raise ValueError(
                f"source={source!r} reads {np.dtype(_BIT_DTYPES[source]).name} bit patterns; got input dtype {name}"
            )
        return _widen(arr, source), source
    if name not in SOURCE_DTYPES:
        raise ValueError(
            f"input dtype {name} is not allowed; expected one of: {', '.join(SOURCE_DTYPES)} "
            f"(or unsigned-integer bit patterns with source= one of: {', '.join(SOURCE_TYPES)})"
        )
    own = SOURCE_DTYPES[name]
    if source is not None and source_name(source) != own:
        raise ValueError(
            f"source={source!r} does not match the input dtype {name} (source {own!r}); pass source= only for "
            "bit patterns, or leave it None"
        )
    if own in ("fp32", "fp64"):
        return arr, own
    if own == "fp16":
        return arr.astype(np.float32), own
    return _widen(arr.view(_BIT_DTYPES[own]), own), own
