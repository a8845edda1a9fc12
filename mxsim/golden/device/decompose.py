"""A golden vector taken apart for a reader: each field split into the values it packs, each value
into its encoding's fields, with the exact value.

:func:`layouts` says what every field packs (:class:`Layout`), as the suite's kind tells it
(``field_layouts``, :mod:`..kinds.layout`): value i of a field of ``count`` values at bits
[i*width, (i+1)*width), value 0 in the least significant bits. A float
code splits into sign (top bit, if the format is signed), exponent field (``exponent_bits``) and
significand field (``mantissa_bits``, the low bits), e.g. FP8 E4M3 ``0x3a`` =
``s=0 e=0111 m=010``: 2^0 x 1.25; an E8M0 scale is its exponent (``0x7f`` = 2^0; ``0xff`` NaN); an
integer element is its sign and magnitude bits with the value q x 2^-frac_bits.
"""

from __future__ import annotations

from fractions import Fraction

from ..coverage.catalogue import class_names
from ..kinds.fields import Field
from ..kinds.layout import Layout
from ..values import decode

__all__ = ["Layout", "layouts", "value_text", "vector_lines", "difference_lines", "binary"]

_LISTED = 8  # differing values listed per field


def layouts(suite) -> dict[str, Layout]:
    """What every field of ``suite`` packs, by field name (``flags`` not included): the kind says
    (its ``field_layouts``, :mod:`..kinds.layout`)."""
    return suite.field_layouts()


def _number(x: Fraction) -> str:
    """A rational as a short decimal: exact, or 9 significant digits and '...'."""
    text = f"{float(x):.9g}"
    return text if Fraction(text) == x else f"{text}..."


def value_text(code: int, layout: Layout) -> str:
    """One value: its encoding's fields and its exact value, e.g. ``s=0 e=0111 m=010 = 1.25``."""
    fmt = layout.fmt
    if fmt is None:
        if layout.signed and code >> (layout.width - 1):
            return f"= {code - (1 << layout.width)}"
        return f"= {code}"
    x = decode(code, fmt)
    value = "NaN" if x.is_nan else ("-" if x.sign else "+") + ("Inf" if x.is_inf else _number(x.magnitude))
    if fmt.kind == "int":
        scaled = f"x 2^-{fmt.frac_bits}"
        if fmt.encoding == "twos_complement":
            q = code - (1 << fmt.bits) if code >> (fmt.bits - 1) else code
            return f"q={q} (two's complement {scaled}) = {value}"
        magnitude = format(code & ((1 << (fmt.bits - 1)) - 1), f"0{fmt.bits - 1}b")
        return f"s={code >> (fmt.bits - 1)} q={magnitude} (sign-magnitude {scaled}) = {value}"
    parts = []
    if fmt.signed:
        parts.append(f"s={code >> (fmt.width - 1)}")
    exponent = (code >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    parts.append(f"e={exponent:0{fmt.exponent_bits}b}")
    if fmt.mantissa_bits:
        parts.append(f"m={code & ((1 << fmt.mantissa_bits) - 1):0{fmt.mantissa_bits}b}")
    if x.is_finite and x.magnitude:
        unbiased = max(exponent, 1 if fmt.subnormals else 0) - fmt.bias
        parts.append(f"(2^{unbiased}{', subnormal' if exponent == 0 and fmt.subnormals else ''})")
    return " ".join(parts) + f" = {value}"


def binary(word: int, field: Field, layout: Layout | None) -> str:
    """The field's bits, most significant first, with '_' between its packed values."""
    bits = format(word % (1 << field.bits), f"0{field.bits}b")
    if layout is None or layout.count == 1:
        return bits
    w = layout.width
    return "_".join(bits[i:i + w] for i in range(0, len(bits), w))


def vector_lines(suite, values: dict[str, int], fields: list[Field], flags: int | None = None) -> list[str]:
    """The given fields of one vector, each value decomposed (one line per packed value; a run of
    two or more equal codes within a block on one line, e.g. ``codes[3..31]: 0 x29, each s=0 e=00
    m=0 = +0``)."""
    shapes = layouts(suite)
    lines = [] if flags is None else [f"classes: {', '.join(class_names(flags)) or '(none)'}"]
    for f in fields:
        word = values[f.name]
        layout = shapes.get(f.name)
        lines.append(f"{f.name} = {f.to_hex(word)}")
        if layout is None:
            continue
        codes = layout.values(word % (1 << f.bits))
        digits = -(-layout.width // 4)
        for first, last in layout.runs(codes):  # a run of equal codes on one line
            text = value_text(codes[first], layout)
            repeat = f" x{last - first + 1}, each" if last > first else ""
            lines.append(f"  {layout.span_name(f.name, first, last)}: {codes[first]:0{digits}x}{repeat} {text}")
    return lines


def difference_lines(suite, field: Field, expected: int, got: int) -> list[str]:
    """Expected against device for one field: hex, binary, and the packed values that differ."""
    layout = layouts(suite).get(field.name)
    lines = [
        f"{field.name}: expected {field.to_hex(expected)}, device {field.to_hex(got)}",
        f"  expected bin {binary(expected, field, layout)}",
        f"  device   bin {binary(got, field, layout)}",
    ]
    if layout is None:
        return lines
    pairs = list(zip(layout.values(expected % (1 << field.bits)), layout.values(got % (1 << field.bits))))
    differing = [i for i, (e, g) in enumerate(pairs) if e != g]
    digits = -(-layout.width // 4)
    for i in differing[:_LISTED]:
        e, g = pairs[i]
        lines.append(f"  {layout.name(field.name, i)}: expected {e:0{digits}x} {value_text(e, layout)}; "
                     f"device {g:0{digits}x} {value_text(g, layout)}")
    if len(differing) > _LISTED:
        lines.append(f"  ... {len(differing) - _LISTED} more of {layout.count} differ")
    return lines
