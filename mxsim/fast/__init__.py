"""The vectorized NumPy fast path: the reference model's operations on arrays, bit-identical."""

from .decode import decode, value_table
from .encode import encode

__all__ = ["encode", "decode", "value_table"]
