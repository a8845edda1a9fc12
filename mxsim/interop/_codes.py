"""Rules shared by every interop target: which mxsim formats have a dtype elsewhere, code checks,
and the one FP4 nibble packer (element 2j in the low nibble, 2j+1 in the high nibble)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..fast.decode import check_codes
from ..fast.pack import pack_stream, unpack_stream
from ..formats import get_format

__all__ = ["DTYPE_NAMES", "as_codes", "dtype_format", "pack_fp4", "unpack_fp4", "require_e8m0_scales"]

# mxsim element/scale format -> (ml_dtypes or numpy dtype name, torch dtype name). The dtypes
# hold one code per byte in the low bits, except torch's float4_e2m1fn_x2 (two codes per byte)
# and FP6 in torch (no dtype: uint8, code in the low 6 bits, as torchao stores it). UE4M3 is
# E4M3 with the sign bit 0, so float8_e4m3fn carries its 7-bit codes with the same values.
DTYPE_NAMES = {
    "fp8_e4m3": ("float8_e4m3fn", "float8_e4m3fn"),
    "fp8_e5m2": ("float8_e5m2", "float8_e5m2"),
    "fp6_e3m2": ("float6_e3m2fn", "uint8"),
    "fp6_e2m3": ("float6_e2m3fn", "uint8"),
    "fp4_e2m1": ("float4_e2m1fn", "float4_e2m1fn_x2"),
    "e8m0": ("float8_e8m0fnu", "float8_e8m0fnu"),
    "ue4m3": ("float8_e4m3fn", "float8_e4m3fn"),
    "int8": ("int8", "int8"),  # MXINT8: the two's complement byte q (value q / 64)
    "fp8_e4m3fnuz": ("float8_e4m3fnuz", "float8_e4m3fnuz"),  # AMD CDNA3 fp8: 0x80 NaN, no -0
    "fp8_e5m2fnuz": ("float8_e5m2fnuz", "float8_e5m2fnuz"),  # AMD CDNA3 bf8
}


def dtype_format(fmt, argument: str = "fmt"):
    """The catalogue format with a carrier dtype that ``fmt`` (a name or a format object) equals,
    field by field apart from its name; ValueError naming ``argument`` and the allowed formats."""
    allowed = f"allowed formats: {', '.join(DTYPE_NAMES)}"
    try:
        found = get_format(fmt)
    except ValueError as exc:
        raise ValueError(f"{argument}={fmt!r} is not a known format; {allowed}") from exc
    for name in DTYPE_NAMES:
        known = get_format(name)
        if found.kind == known.kind and dataclasses.replace(found, name=name) == known:
            return known
    raise ValueError(f"{argument}={found.name!r} has no ml_dtypes/torch dtype; {allowed}")


def require_e8m0_scales(encoding, target: str, argument: str = "mx") -> None:
    """Refuse a scale encoding other than E8M0 where ``target`` (torchao, gpt-oss, torch's
    float8_e8m0fnu) stores scales as E8M0 codes: an int8_exponent byte would be misread (its 0xFF
    is 2^-1, E8M0's is NaN). ``encoding`` is an MXTensor's or the caller's scale_encoding."""
    if encoding != "e8m0":
        raise ValueError(
            f"{argument} has scale_encoding={encoding!r}; {target} stores E8M0 scales (float8_e8m0fnu codes), so "
            "only scale_encoding='e8m0' converts (re-quantize with scale_encoding='e8m0')"
        )


def as_codes(codes, fmt, argument: str = "codes") -> np.ndarray:
    """``codes`` as a uint8 array of ``fmt`` codes: the same array if it is uint8 (no copy), else
    an integer array converted after the range check (a copy). ValueError for other dtypes and
    for codes with bits above the format's width (ml_dtypes reads such bytes inconsistently,
    e.g. FP4 0x17 as -6)."""
    array = np.asarray(codes)
    check_codes(argument, array, fmt.width)
    return array.astype(np.uint8, copy=False)


def pack_fp4(codes: np.ndarray, argument: str = "codes") -> np.ndarray:
    """(..., 2n) uint8 FP4 codes -> (..., n) bytes, byte j = code 2j | code 2j+1 << 4 (a copy;
    mxsim's 'lsb' element stream, PyTorch's float4_e2m1fn_x2, torchao, gpt-oss)."""
    if codes.ndim == 0 or codes.shape[-1] % 2:
        raise ValueError(
            f"{argument} of shape {codes.shape}: FP4 codes pack two per byte along the last axis, so its length must "
            "be even"
        )
    packed = pack_stream(np.ascontiguousarray(codes).reshape(-1), 4, "lsb")
    return packed.reshape(codes.shape[:-1] + (codes.shape[-1] // 2,))


def unpack_fp4(packed: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_fp4`: (..., n) bytes -> (..., 2n) uint8 FP4 codes (a new array)."""
    flat = np.ascontiguousarray(packed, dtype=np.uint8).reshape(-1)
    codes = unpack_stream(flat, 2 * flat.size, 4, "lsb")
    return codes.reshape(packed.shape[:-1] + (2 * packed.shape[-1],))
