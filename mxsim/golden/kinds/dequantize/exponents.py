"""The scale exponents of a ``dequantize`` suite: each scale encoding's exponent range and the scale
byte of 2^X (mxsim.ref.scale_code)."""

from __future__ import annotations

from ....ref.scale_code import scale_code_exponent

EXPONENT_RANGE = {"e8m0": (-127, 127), "int8_exponent": (-128, 127)}
"""Scale encoding -> (lowest, highest) exponent X of its finite scale codes (E8M0's 0xFF is NaN)."""


def scale_code_of_exponent(exponent: int, encoding: str) -> int:
    """The scale byte of 2^exponent (inverse of mxsim.ref.scale_code.scale_code_exponent)."""
    code = exponent + 127 if encoding == "e8m0" else exponent & 0xFF
    if scale_code_exponent(code, encoding) != exponent:
        raise ValueError(f"2^{exponent} has no {encoding} scale code")
    return code
