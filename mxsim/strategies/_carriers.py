"""The binary input types ("carriers") strategies draw values in: fp32, fp64, bf16, fp16.

Values are built from bit patterns, never computed with floats. Each carrier names the NumPy
type a drawn value comes back as; bfloat16 has no NumPy type, so a bf16 value comes back as the
``np.float32`` with the same value (its fp32 bits are the bf16 bits shifted left by 16, so
``ml_dtypes.bfloat16(x)`` is exact and ``np.float32(x).view(np.uint32) >> 16`` gives the bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from ..formats import get_format
from ..options.spec import check_choice
from ..ref import encode as ref_encode

__all__ = ["CARRIERS", "Carrier", "get_carrier"]


@dataclass(frozen=True)
class Carrier:
    """An IEEE binary interchange type of the format catalogue (``format_name``: fp32, fp64,
    bf16, fp16), with ``storage`` the NumPy type values come back as and ``shift`` the left
    shift from the carrier's code to the storage bits (16 for bf16 in float32, else 0). The
    layout (exponent and mantissa bits, bias, Inf and NaN codes) is read from the format."""

    name: str
    format_name: str
    storage: type
    storage_bits: type
    shift: int = 0

    @cached_property
    def format(self):
        return get_format(self.format_name)

    @property
    def exponent_bits(self) -> int:
        return self.format.exponent_bits

    @property
    def mantissa_bits(self) -> int:
        return self.format.mantissa_bits

    @property
    def width(self) -> int:
        return self.format.width

    @property
    def sign_bit(self) -> int:
        return self.format.sign_mask

    @property
    def bias(self) -> int:
        return self.format.bias

    @property
    def max_biased_exponent(self) -> int:
        """The largest biased exponent of a finite value (all-ones is Inf/NaN)."""
        return (1 << self.exponent_bits) - 2

    @property
    def inf_code(self) -> int:
        return self.format.inf_code()

    @property
    def quiet_nan_code(self) -> int:
        return self.format.nan_code()

    def code_of(self, magnitude: Fraction) -> int:
        """The code of a non-negative exact magnitude rounded to this type (nearest-even,
        overflow to +Inf), by the reference encoder."""
        return ref_encode(magnitude, self.format_name, "rne", "ieee")

    def from_code(self, code: int):
        """The NumPy scalar whose bits are ``code`` (a code of this carrier, sign included)."""
        return self.storage_bits(code << self.shift).view(self.storage)

    def from_codes(self, codes) -> np.ndarray:
        """An array of values from an array-like of codes of this carrier."""
        bits = np.asarray(codes, dtype=np.uint64) << np.uint64(self.shift)
        return bits.astype(self.storage_bits).view(self.storage)

    def code_from_value(self, value) -> int:
        """The carrier code of a value this carrier produced (the inverse of :meth:`from_code`)."""
        return int(np.asarray(value, self.storage).view(self.storage_bits)) >> self.shift

    def hex(self, code: int) -> str:
        return f"0x{code:0{(self.width + 3) // 4}x}"


CARRIERS = {
    "float32": Carrier("float32", "fp32", np.float32, np.uint32),
    "float64": Carrier("float64", "fp64", np.float64, np.uint64),
    "bfloat16": Carrier("bfloat16", "bf16", np.float32, np.uint32, shift=16),
    "float16": Carrier("float16", "fp16", np.float16, np.uint16),
}


def get_carrier(dtype) -> Carrier:
    """The carrier called ``dtype`` (float32, float64, bfloat16, float16; also fp32, fp64, bf16, fp16)."""
    if isinstance(dtype, Carrier):
        return dtype
    names = {c.format_name: c.name for c in CARRIERS.values()}
    if isinstance(dtype, str):
        dtype = names.get(dtype, dtype)
    elif dtype in (np.float32, np.float64, np.float16) or isinstance(dtype, np.dtype):
        dtype = np.dtype(dtype).name
    check_choice("dtype", dtype, tuple(CARRIERS))
    return CARRIERS[dtype]
