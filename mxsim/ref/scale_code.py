"""The value of a block-scale code: the one place that reads scale bytes (docs/numerics.md section 2.3, 3.2).

Scale encodings of the E8M0 scale byte (``scale_encoding``):

* ``e8m0`` (default, OCP): byte = E + 127 for E in [-127, 127]; 0xFF is NaN;
* ``int8_exponent`` (pulp-platform iDMA): byte = E as an 8-bit two's-complement integer, E in
  [-128, 127]; no NaN (0xFF is 2^-1, 0x80 is 2^-128, 0x00 is 2^0).

The UE4M3 scale of NVFP4 has only the ``e8m0`` reading (its own E4M3 decoding; 0x7F is NaN).
Both dequantizers (:func:`mxsim.ref.stored_block.dequantize_block` and the NumPy tables of
:mod:`mxsim.fast.dequant`) get scale values from :func:`decode_scale` and nowhere else, so a new
encoding is added here once. (The quantizers' inverse, exponent -> byte, lives with them.)
"""

from __future__ import annotations

from fractions import Fraction

from ..formats import get_format
from ..options.quantize import SCALE_ENCODINGS
from ..options.spec import check_choice
from .decode import decode
from .exact import Exact
from .scale import E8M0_NAN, byte_exponent

__all__ = ["SCALE_ENCODINGS", "check_scale_encoding", "scale_code_exponent", "decode_scale"]


def check_scale_encoding(encoding: str, scale_fmt=None) -> None:
    """ValueError unless ``encoding`` is one of SCALE_ENCODINGS and, given a scale format, applies
    to it (``int8_exponent`` reads E8M0 scale bytes only)."""
    check_choice("scale_encoding", encoding, SCALE_ENCODINGS)
    if scale_fmt is not None and encoding != "e8m0" and get_format(scale_fmt, kind="element").name != "e8m0":
        raise ValueError(
            f"scale_encoding={encoding!r} is not allowed for a {get_format(scale_fmt).name!r} scale; expected 'e8m0'"
        )


def scale_code_exponent(code: int, encoding: str = "e8m0") -> int | None:
    """The unbiased exponent E (scale = 2^E) of an 8-bit power-of-two scale byte, or None for
    the NaN code (e8m0 0xFF; int8_exponent has none)."""
    check_scale_encoding(encoding)
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 0xFF:
        raise ValueError(f"scale code {code!r} is out of range: expected an integer in [0, 0xff]")
    if encoding == "e8m0" and code == E8M0_NAN:
        return None
    return byte_exponent(code, encoding)


def decode_scale(code: int, scale_fmt, encoding: str = "e8m0") -> Exact:
    """The exact value of a block-scale code: 2^E from :func:`scale_code_exponent` for an E8M0
    scale, NaN (positive) for its NaN code; the UE4M3 value (or NaN) for a UE4M3 scale."""
    scale_fmt = get_format(scale_fmt, kind="element")
    check_scale_encoding(encoding, scale_fmt)
    if scale_fmt.name != "e8m0":
        return decode(code, scale_fmt)
    exponent = scale_code_exponent(code, encoding)
    return Exact.nan() if exponent is None else Exact(0, Fraction(2) ** exponent)
