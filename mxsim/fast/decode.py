"""Vectorized decoder: element codes to floats through a per-format lookup table.

The table is computed with NumPy from the format's bit fields (an implementation independent of
the reference decoder, which the tests compare it with, code by code).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..formats import get_format
from ..ref.scale_code import decode_scale
from .chunks import map_chunks

__all__ = ["decode", "value_table", "scale_table", "check_codes", "native_array", "MAX_FAST_WIDTH"]

MAX_FAST_WIDTH = 16
_DTYPES = {"float32": np.float32, "float64": np.float64}


def native_array(x) -> np.ndarray:
    """``x`` as a NumPy array in the machine's byte order: the array itself when it already is
    (no copy), else a copy with the same values (a '>f4' or '>u2' array read from a big-endian
    file or buffer). The array entry points read their inputs through this, so that no kernel
    sees a foreign byte order (a bit-pattern view of one reads its bytes backwards)."""
    array = np.asarray(x)
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def check_fast_format(fmt) -> None:
    if fmt.width > MAX_FAST_WIDTH:
        raise ValueError(
            f"format {fmt.name!r} has {fmt.width}-bit codes; the array path handles codes of at most "
            f"{MAX_FAST_WIDTH} bits (use mxsim.ref for wider formats)"
        )


def check_codes(name: str, array: np.ndarray, width: int) -> None:
    """ValueError naming ``name`` unless ``array`` is an integer array of ``width``-bit codes
    (every value in [0, 2^width))."""
    if array.dtype.kind not in "ui":
        raise ValueError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.dtype.itemsize * 8 <= width:
        return  # every value of the dtype fits: no pass over the data
    if array.size and (array.min() < 0 or array.max() >= (1 << width)):
        raise ValueError(f"{name} hold values outside [0, {(1 << width) - 1}] ({width}-bit codes)")


def code_dtype(fmt) -> np.dtype:
    """uint8 for formats of at most 8 bits, else uint16."""
    return np.dtype(np.uint8 if fmt.width <= 8 else np.uint16)


@lru_cache(maxsize=None)
def value_table(fmt) -> np.ndarray:
    """float64 value of every code 0 .. 2^width - 1 (NaN codes: quiet NaN with the code's sign).

    Raises ValueError if some value is not exactly a float64 (very wide custom exponents).
    """
    check_fast_format(fmt)
    codes = np.arange(1 << fmt.width, dtype=np.int64)
    if fmt.kind == "int":
        if fmt.encoding == "sign_magnitude":
            q = np.where(codes & fmt.sign_mask, -(codes & fmt.max_int), codes & fmt.max_int)
            negative = (codes & fmt.sign_mask) != 0
        else:
            q = np.where(codes & fmt.sign_mask, codes - (1 << fmt.bits), codes)
            negative = q < 0
        values = np.ldexp(q.astype(np.float64), -fmt.frac_bits)
        return np.copysign(values, np.where(negative, -1.0, 1.0))
    m = fmt.mantissa_bits
    negative = (codes & fmt.sign_mask) != 0
    field = (codes >> m) & ((1 << fmt.exponent_bits) - 1)
    mantissa = codes & ((1 << m) - 1)
    denormal = (field == 0) & fmt.subnormals
    significand = np.where(denormal, mantissa, mantissa | (1 << m)).astype(np.float64)
    exponent = np.where(denormal, fmt.emin, field - fmt.bias) - m
    # significand * 2^exponent is exact in float64 when it neither overflows nor needs bits
    # below 2^-1074; check that before trusting the table.
    if exponent.min() < -1074 or fmt.emax >= 1024:
        raise ValueError(f"format {fmt.name!r} has values outside float64; decode it with mxsim.ref")
    values = np.ldexp(significand, exponent)
    all_ones = (1 << fmt.exponent_bits) - 1
    if fmt.specials == "ieee":
        values = np.where(field == all_ones, np.where(mantissa == 0, np.inf, np.nan), values)
    elif fmt.specials in ("fn", "p3109"):  # the all-ones magnitude: NaN ('fn') or Inf ('p3109')
        top = np.nan if fmt.specials == "fn" else np.inf
        values = np.where((field == all_ones) & (mantissa == (1 << m) - 1), top, values)
    if fmt.nan_at_negative_zero:  # 'fnuz', 'p3109': the code of -0 is the one NaN (sign bit set)
        values = np.where(codes == fmt.sign_mask, np.nan, values)
    return np.copysign(values, np.where(negative, -1.0, 1.0))


@lru_cache(maxsize=None)
def scale_table(scale_fmt, encoding: str = "e8m0") -> np.ndarray:
    """float64 value of every block-scale code under ``encoding`` (e8m0 | int8_exponent), NaN
    (positive) for a NaN code: read from :func:`mxsim.ref.scale_code.decode_scale`, the one
    place that defines scale codes, so both dequantizers agree by construction (256 codes at
    most, built once)."""
    scale_fmt = get_format(scale_fmt, kind="element")
    values = [decode_scale(code, scale_fmt, encoding) for code in range(1 << scale_fmt.width)]
    return np.array([np.nan if v.is_nan else float(v.magnitude) for v in values], dtype=np.float64)


@lru_cache(maxsize=None)
def _table_as(fmt, dtype_name: str) -> np.ndarray:
    table = value_table(fmt)
    narrow = table.astype(_DTYPES[dtype_name])
    finite = np.isfinite(table)
    if not np.array_equal(narrow[finite].astype(np.float64), table[finite]):
        raise ValueError(f"format {fmt.name!r} has values that {dtype_name} cannot hold exactly; use dtype=np.float64")
    return narrow


def _default_dtype(fmt) -> str:
    try:
        _table_as(fmt, "float32")
        return "float32"
    except ValueError:
        return "float64"


def decode(codes, fmt, dtype=None) -> np.ndarray:
    """Decode an integer array of element codes of ``fmt`` to floats, exactly.

    ``dtype``: float32 or float64; by default float32 when it holds every value of the format
    exactly (all the OCP element and scale formats), else float64. ``codes``: any integer dtype,
    any byte order. NaN codes decode to a quiet
    NaN carrying the code's sign bit, Inf codes to +-inf, -0 to -0.0.
    Raises ValueError for a non-integer array or a code outside [0, 2^width).
    """
    fmt = get_format(fmt, kind="element")
    check_fast_format(fmt)
    codes = native_array(codes)
    if codes.dtype.kind not in "ui":
        raise ValueError(f"codes must be an integer array, got dtype {codes.dtype}")
    if codes.size and (codes.min() < 0 or codes.max() >= (1 << fmt.width)):
        bad = np.flatnonzero((codes.ravel() < 0) | (codes.ravel() >= (1 << fmt.width)))[0]
        raise ValueError(
            f"code {int(codes.ravel()[bad])} at flat index {bad} is out of range for format {fmt.name!r}: "
            f"expected [0, {hex((1 << fmt.width) - 1)}]"
        )
    if dtype is None:
        dtype_name = _default_dtype(fmt)
    else:
        dtype_name = np.dtype(dtype).name
        if dtype_name not in _DTYPES:
            raise ValueError(f"dtype={dtype!r} is not allowed; expected one of: {', '.join(_DTYPES)}")
    table = _table_as(fmt, dtype_name)
    flat = np.ascontiguousarray(codes).reshape(-1)
    if flat.dtype.itemsize > 2 or flat.dtype.kind == "i":
        flat = flat.astype(code_dtype(fmt))
    out = np.empty(flat.shape, dtype=table.dtype)

    def kernel(start, stop, chunk, out_chunk):
        np.take(table, chunk, out=out_chunk, mode="clip")  # codes checked above; "raise" would buffer out

    map_chunks(kernel, flat.size, flat, out)
    return out.reshape(codes.shape)
