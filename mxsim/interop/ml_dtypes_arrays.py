"""Element and scale codes as ml_dtypes arrays, and back (zero-copy views of the code bytes)."""

from __future__ import annotations

import numpy as np

from ..fast.decode import check_codes
from ..formats import get_format
from ._codes import DTYPE_NAMES, as_codes, dtype_format
from ._optional import require

__all__ = ["from_ml_dtypes", "to_ml_dtypes"]


def _dtype(ml_dtypes, name: str) -> np.dtype:
    return np.dtype(np.int8 if name == "int8" else getattr(ml_dtypes, name))


def to_ml_dtypes(codes, fmt) -> np.ndarray:
    """Codes of ``fmt`` viewed as the matching ml_dtypes (or numpy) dtype, one code per byte.

    ``codes``: an integer array of codes, code in the low bits of each byte (mxsim's layout).
    ``fmt``: fp8_e4m3 -> float8_e4m3fn, fp8_e5m2 -> float8_e5m2, fp6_e3m2 -> float6_e3m2fn,
    fp6_e2m3 -> float6_e2m3fn, fp4_e2m1 -> float4_e2m1fn (one code per byte, unpacked),
    e8m0 -> float8_e8m0fnu, ue4m3 -> float8_e4m3fn (its 7-bit codes have the sign bit 0, so
    E4M3 gives the same values), int8 (MXINT8) -> numpy int8 (the integer q; the value is q/64),
    fp8_e4m3fnuz -> float8_e4m3fnuz, fp8_e5m2fnuz -> float8_e5m2fnuz (0x80 NaN, no -0).

    Same shape. No copy when ``codes`` is uint8 (the result is a view of it: writing one writes
    the other); other integer dtypes are converted (a copy). ValueError for a format without an
    ml_dtypes dtype (mx9's sign-magnitude elements, custom parameters, block formats), a
    non-integer dtype, or codes with bits above the format's width.
    """
    ml_dtypes = require("ml_dtypes", "to_ml_dtypes")
    fmt = dtype_format(fmt)
    codes = as_codes(codes, fmt)
    return codes.view(_dtype(ml_dtypes, DTYPE_NAMES[fmt.name][0]))


def from_ml_dtypes(array, fmt=None) -> tuple[np.ndarray, str]:
    """(uint8 codes, mxsim format name) of an ml_dtypes array: a zero-copy uint8 view, same shape.

    The format is the dtype's own (float8_e4m3fn -> 'fp8_e4m3', ..., numpy int8 -> 'int8'), or
    ``fmt`` when given and carried by that dtype (``fmt='ue4m3'`` reads float8_e4m3fn, whose
    sign bits must then be 0). ValueError for another dtype, a format the dtype does not carry,
    or bytes with bits above the format's width (ml_dtypes decodes such stray bits inconsistently).
    """
    ml_dtypes = require("ml_dtypes", "from_ml_dtypes")
    array = np.asarray(array)
    # the first format listed for a dtype is its own (float8_e4m3fn: fp8_e4m3, not ue4m3)
    names = {_dtype(ml_dtypes, dtype): name for name, (dtype, _) in reversed(DTYPE_NAMES.items())}
    if array.dtype not in names:
        allowed = ", ".join(dict.fromkeys(str(_dtype(ml_dtypes, d)) for d, _ in DTYPE_NAMES.values()))
        raise ValueError(f"array has dtype {array.dtype}; allowed dtypes: {allowed}")
    found = get_format(names[array.dtype])
    if fmt is not None:
        found = dtype_format(fmt)
        if _dtype(ml_dtypes, DTYPE_NAMES[found.name][0]) != array.dtype:
            carried = [name for name, (dtype, _) in DTYPE_NAMES.items() if _dtype(ml_dtypes, dtype) == array.dtype]
            raise ValueError(f"fmt={found.name!r} is not carried by dtype {array.dtype}; allowed: {', '.join(carried)}")
    codes = array.view(np.uint8)
    check_codes("array", codes, found.width)
    return codes, found.name
