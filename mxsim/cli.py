"""The ``mxsim`` command line.

``mxsim info``                 a table of every format of the catalogue
``mxsim info FORMAT``          the parameters and derived properties of one format
``mxsim info FORMAT --codes``  every code of an element format with its exact value
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

from . import __version__, ref
from .formats import FORMATS, get_format

__all__ = ["main"]


def _show(value) -> str:
    """A Fraction as an exact integer or p/q, with its decimal approximation for powers of two."""
    if value is None:
        return "-"
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return str(value.numerator) if value < 2**64 else _power_of_two(value)
        if value.numerator == 1:
            return _power_of_two(value)
        return f"{value} ({float(value):.7g})"
    return str(value)


def _power_of_two(value: Fraction) -> str:
    n, d = value.numerator, value.denominator
    if n == 1 and d & (d - 1) == 0:
        return f"2^-{d.bit_length() - 1}"
    if d == 1 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return f"{float(value):.7g}"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _element_row(fmt) -> list[str]:
    if fmt.kind == "float":
        layout = f"{'S' if fmt.signed else ''}E{fmt.exponent_bits}M{fmt.mantissa_bits} bias {fmt.bias}"
        smallest = fmt.min_subnormal
        specials = {"ieee": "Inf+NaN", "fn": "NaN", "none": "-"}[fmt.specials]
    else:
        layout = f"int{fmt.bits} {fmt.encoding} * 2^-{fmt.frac_bits}"
        smallest = Fraction(1, 1 << fmt.frac_bits) if fmt.frac_bits >= 0 else None
        specials = "-"
    return [fmt.name, fmt.kind, str(fmt.width), layout, str(fmt.emax), _show(fmt.max_normal), _show(smallest), specials]


def _summary() -> str:
    elements = [f for f in FORMATS.values() if f.kind != "block"]
    blocks = [f for f in FORMATS.values() if f.kind == "block"]
    header = ["format", "kind", "bits", "layout", "emax_elem", "max", "smallest>0", "specials"]
    out = [_table([header] + [_element_row(f) for f in elements])]
    header = ["format", "element", "k", "scale", "sub-blocks", "tensor scale", "bits/block", "bits/elem"]
    rows = [
        [
            f.name,
            f.element.name,
            str(f.block_size),
            f.scale.name,
            "-" if not f.subblocks else f"{f.subblocks} x {f.subscale_bits} bit",
            f.tensor_scale.name if f.tensor_scale else "-",
            str(f.bits_per_block),
            str(f.bits_per_element) if f.bits_per_element.denominator > 1 else str(int(f.bits_per_element)),
        ]
        for f in blocks
    ]
    out.append(_table([header] + rows))
    return "\n\n".join(out)


def _details(fmt) -> str:
    lines = [f"{key:18} {_show(value)}" for key, value in fmt.describe().items()]
    return "\n".join(lines)


def _codes(fmt) -> str:
    if fmt.kind == "block":
        raise ValueError(f"--codes lists an element format's codes; {fmt.name!r} is a block format (try {fmt.element.name!r})")
    if fmt.width > 12:
        raise ValueError(f"--codes lists at most 2^12 codes; {fmt.name!r} has 2^{fmt.width}")
    digits = (fmt.width + 3) // 4
    rows = [["code", "bits", "value", "decimal"]]
    for code in range(1 << fmt.width):
        value = ref.decode(code, fmt)
        decimal = str(value) if not value.is_finite else f"{float(value.value):.9g}"
        if value.is_finite and value.is_zero and value.sign:
            decimal = "-0"
        rows.append([f"0x{code:0{digits}X}", format(code, f"0{fmt.width}b"), str(value), decimal])
    return _table(rows)


def _cmd_info(args) -> str:
    if args.format is None:
        if args.codes:
            raise ValueError("--codes needs a FORMAT")
        return _summary()
    fmt = get_format(args.format)
    return _codes(fmt) if args.codes else _details(fmt)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mxsim", description="Bit-accurate MX number format simulator.")
    parser.add_argument("--version", action="version", version=f"mxsim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="list formats, or describe one")
    info.add_argument("format", nargs="?", help="a format name (default: a table of all)")
    info.add_argument("--codes", action="store_true", help="list every code of the format with its exact value")
    info.set_defaults(run=_cmd_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        print(args.run(args))
    except ValueError as error:
        print(f"mxsim: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
