"""``mxsim info``: the catalogue's formats as a table, one format's parameters or codes, or what a
tensor file holds.

Values are exact: integers and p/q fractions, powers of two as ``2^e``; a code's decimal column
shows -0 as ``-0`` and NaN/Inf by name.
"""

from __future__ import annotations

import os
from fractions import Fraction

from .. import ref
from ..formats import FORMATS, get_format
from ..printable import escape_controls


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
        smallest = fmt.min_normal if fmt.min_subnormal is None and fmt.has_zero else fmt.min_subnormal
        specials = {"ieee": "Inf+NaN", "fn": "NaN", "none": "-", "fnuz": "NaN (no -0)", "p3109": "Inf+NaN (no -0)"}
        specials = specials[fmt.specials]
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
        raise ValueError(f"--codes lists an element format's codes; {fmt.name!r} is a block format "
                         f"(try {fmt.element.name!r})")
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
    if args.name is None:
        if args.codes:
            raise ValueError("--codes needs a FORMAT")
        return _summary()
    try:
        fmt = get_format(args.name)
    except ValueError as error:
        if not os.path.exists(args.name):
            raise ValueError(f"{error}; nor is {args.name!r} a file") from None
        if args.codes:
            raise ValueError(f"--codes lists an element format's codes; {args.name} is a file") from None
        _refuse_non_regular(args.name)
        return _file_details(args.name)
    return _codes(fmt) if args.codes else _details(fmt)


def _refuse_non_regular(path) -> None:
    """ValueError for a FIFO, a device or a directory given to ``info`` (a FIFO without a writer
    blocked it for ever): opened without blocking, its type read before a byte is."""
    from ..golden.storage.columns import NotRegularFile, open_regular

    try:
        open_regular(path).close()
    except NotRegularFile as error:
        raise ValueError(f"{path}: {error.strerror}; mxsim info describes a tensor file (.mxt)") from None


def _file_details(path) -> str:
    """``mxsim info FILE``: what a tensor file holds, every check of :func:`mxsim.fileformat.read` passed."""
    from ..fileformat import read

    found = read(path)
    t, header = found.tensor, found.header
    fmt, layout = t.fmt, header["layout"]
    length = t.shape[t.axis] if t.shape else 1
    padded = " (the last one padded)" if length % fmt.block_size else ""
    checksum = (
        f"SHA-256 of header and payload verified (payload {found.checksum})"
        if found.checksum
        else "none: a version 1 file has no checksum"
    )
    rows = [
        ("file", f"{path}: mxsim tensor file version {found.version}, {found.size} bytes"),
        ("format", f"{fmt.name}: {fmt.element.name} elements, {fmt.block_size} per block, "
                   f"{fmt.bits_per_block} bits per block"),
        ("shape", str(t.shape)),
        ("block axis", f"{t.axis}, length {length}: {t.scales.size} blocks in all{padded}"),
        ("scale encoding", _scale_encoding(fmt)),
        ("tensor scale", _show(t.tensor_scale)),
        ("layout", f"element_stream={layout['element_stream']}, scale_placement={layout['scale_placement']}"),
        ("payload", f"{header['payload_bytes']} bytes"),
        ("options", ", ".join(f"{key}={value}" for key, value in t.options.as_dict().items())),
        ("profile", "-" if t.profile is None else f"{t.profile.name} ({t.profile.version}): sets "
                    + ", ".join(f"{key}={value}" for key, value in t.profile.quantize.items())),
        ("checksum", checksum),
        ("written by", f"mxsim {header['mxsim_version']}"),
    ]
    return "\n".join(f"{key:15} {escape_controls(str(value))}" for key, value in rows)  # the header's ESC, newlines


def _scale_encoding(fmt) -> str:
    """How a block format's scales are stored: the block scale, sub-scales, tensor scale."""
    parts = [f"one {fmt.scale.name} code ({fmt.scale.width} bits) per block"]
    if fmt.subblocks:
        parts.append(f"{fmt.subblocks} sub-scales of {fmt.subscale_bits} bit(s) per block, "
                     f"one per {fmt.subblock_size} elements")
    if fmt.tensor_scale is not None:
        parts.append(f"times one {fmt.tensor_scale.name} tensor scale")
    return "; ".join(parts)


def add_info_command(commands) -> None:
    """The ``info`` subcommand, added to the top-level parser's ``commands``."""
    info = commands.add_parser("info", help="list formats, describe one, or describe a tensor file",
                               description="Without an argument: a table of every format. With a format name "
                               "(any case, or an alias): its parameters. With a tensor file: its format, shape, block "
                               "axis, scale encoding, layout, options and checksum status, after checking all of it.")
    info.add_argument("name", nargs="?", metavar="FORMAT|FILE",
                      help="a format name, or an mxsim tensor file (default: a table of all formats)")
    info.add_argument("--codes", action="store_true", help="list every code of the format with its exact value")
    info.set_defaults(run=_cmd_info)
