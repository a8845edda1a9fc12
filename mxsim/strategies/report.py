"""How checkers print codes and inputs: hex and binary at the format's width, with values."""

from __future__ import annotations

from ..formats import get_format
from ..ref import Exact
from ..ref import decode as ref_decode

__all__ = ["show_code", "show_exact", "show_value"]


def show_exact(x: Exact) -> str:
    """An exact value as text: NaN, +-Inf, -0, an integer, or a fraction with its decimal."""
    if x.is_nan:
        return "-NaN" if x.sign else "NaN"
    if x.is_inf:
        return "-Inf" if x.sign else "+Inf"
    sign = "-" if x.sign else ""
    m = x.magnitude
    if m.denominator == 1:
        return f"{sign}{m.numerator}"
    return f"{sign}{m} (= {sign}{float(m):.9g})"


def show_code(code, fmt) -> str:
    """``0x39 = 0b00111001 (1.125)`` for a code of ``fmt``; anything else printed as it is."""
    fmt = get_format(fmt)
    if isinstance(code, bool) or not isinstance(code, int):
        return f"{code!r} (not an integer code)"
    if not 0 <= code < 1 << fmt.width:
        return f"{code} (outside the {fmt.width}-bit code range of {fmt.name})"
    hex_digits = (fmt.width + 3) // 4
    return f"0x{code:0{hex_digits}x} = 0b{code:0{fmt.width}b} ({show_exact(ref_decode(code, fmt))})"


def show_value(value, carrier) -> str:
    """A carrier value as ``float32 0x3f880000 = 1.0625``."""
    code = carrier.code_from_value(value)
    return f"{carrier.name} {carrier.hex(code)} = {show_exact(ref_decode(code, carrier.format_name))}"
