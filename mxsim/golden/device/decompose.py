"""A golden vector taken apart for a reader: each field split into the values it packs, each value
into its encoding's fields, with the exact value.

:func:`layouts` says, per suite kind, what every field packs (:class:`Layout`): value i of a field
of ``count`` values at bits [i*width, (i+1)*width), value 0 in the least significant bits. A float
code splits into sign (top bit, if the format is signed), exponent field (``exponent_bits``) and
significand field (``mantissa_bits``, the low bits), e.g. FP8 E4M3 ``0x3a`` =
``s=0 e=0111 m=010``: 2^0 x 1.25; an E8M0 scale is its exponent (``0x7f`` = 2^0; ``0xff`` NaN); an
integer element is its sign and magnitude bits with the value q x 2^-frac_bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ...formats import get_format
from ...ref.output import storage_format
from ..coverage.catalogue import class_names
from ..kinds.fields import Field
from ..values import FP32, decode

__all__ = ["Layout", "layouts", "value_text", "vector_lines", "difference_lines", "binary"]

_LISTED = 8  # differing values listed per field


@dataclass(frozen=True)
class Layout:
    """``count`` values of ``width`` bits each: codes of ``fmt`` (None: plain integers,
    ``signed`` or not); ``per_block`` values per block (DotGeneral) or None."""

    fmt: object | None
    count: int
    width: int
    signed: bool = False
    per_block: int | None = None

    def values(self, word: int) -> list[int]:
        mask = (1 << self.width) - 1
        return [(word >> (i * self.width)) & mask for i in range(self.count)]

    def name(self, field: str, i: int) -> str:
        if self.count == 1:
            return field
        if self.per_block and self.per_block < self.count:
            return f"{field}[block {i // self.per_block}][{i % self.per_block}]"
        return f"{field}[{i}]"


def _code(fmt, count: int = 1, per_block: int | None = None) -> Layout:
    return Layout(fmt, count, fmt.width, per_block=per_block)


def _plain(width: int, count: int = 1, signed: bool = False, per_block: int | None = None) -> Layout:
    return Layout(None, count, width, signed, per_block)


def _block_layouts(prefix: str, fmt, blocks: int = 1, sub: str = "sub", elems: str = "elems") -> dict[str, Layout]:
    """The operand fields of ``blocks`` blocks of ``fmt``: ``<prefix>scale``, ``<prefix><sub>``,
    ``<prefix><elems>``, ``<prefix>tensor_scale`` (dot: a_sub, a_elems; quantize and pack: subscales, codes)."""
    per = None if blocks == 1 else fmt.block_size
    out = {f"{prefix}scale": _code(fmt.scale, blocks)}
    if fmt.subblocks:
        out[f"{prefix}{sub}"] = _plain(fmt.subscale_bits, blocks * fmt.subblocks,
                                       per_block=None if blocks == 1 else fmt.subblocks)
    out[f"{prefix}{elems}"] = _code(fmt.element, blocks * fmt.block_size, per_block=per)
    if fmt.tensor_scale is not None:
        out[f"{prefix}tensor_scale"] = _code(get_format(FP32))
    return out


def layouts(suite) -> dict[str, Layout]:
    """What every field of ``suite`` packs, by field name (``flags`` not included)."""
    fp32 = get_format(FP32)
    kind = suite.kind
    if kind == "decode":
        return {"code": _code(suite.fmt), "value": _code(fp32)}
    if kind == "encode":
        return {"x": _code(fp32), "code": _code(suite.fmt)}
    if kind in ("quantize", "pack"):
        fmt = suite.fmt
        out = _block_layouts("", fmt, sub="subscales", elems="codes")
        out["x"] = _code(fp32, fmt.block_size)
        out["scale_exp"] = _plain(16, signed=True)
        if kind == "pack":
            out["stream"] = _plain(8, suite.nbytes)
        return out
    n = getattr(suite, "n_blocks", 1)
    out = {**_block_layouts("a_", suite.fa, n), **_block_layouts("b_", suite.fb, n)}
    result = storage_format(suite.acc)  # fp32_e8m13 is stored as fp32
    out["result"] = _code(result)
    out["block_results"] = _code(result, n)
    out["c"] = _code(suite.c_format)  # the accumulator input, in the unit's C format (fp32, bf16 or fp16)
    if suite.fused:
        out["steps"] = _code(result, suite.step_count)  # every fused step's D, step 0 lowest
    for name in ("acc", "lsb", "anchor"):
        out[name] = _plain(next((f.bits for f in suite.outputs if f.name == name), 16), signed=True)
    return out


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
    """The given fields of one vector, each value decomposed (one line per packed value)."""
    shapes = layouts(suite)
    lines = [] if flags is None else [f"classes: {', '.join(class_names(flags)) or '(none)'}"]
    for f in fields:
        word = values[f.name]
        layout = shapes.get(f.name)
        lines.append(f"{f.name} = {f.to_hex(word)}")
        if layout is None:
            continue
        for i, code in enumerate(layout.values(word % (1 << f.bits))):
            lines.append(f"  {layout.name(f.name, i)}: {code:0{-(-layout.width // 4)}x} {value_text(code, layout)}")
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
