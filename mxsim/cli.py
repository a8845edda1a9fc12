"""The ``mxsim`` command line.

``mxsim info``                 a table of every format of the catalogue
``mxsim info FORMAT``          the parameters and derived properties of one format
``mxsim info FORMAT --codes``  every code of an element format with its exact value
``mxsim quantize IN.npy OUT --format F [options]``   quantize an array into an mxsim tensor file
``mxsim dequantize IN OUT.npy [--dtype float32]``     decode an mxsim tensor file to an array
``mxsim dot A B OUT.npy [--preset P] [accumulator flags] [--details OUT.npz]``   DotGeneral of two
                               tensor files along their block axes
``mxsim golden generate DIR [--suite KIND --params JSON] [--seed N] [--level L] [--shard I/N]``
                               golden test vectors (default: the canonical collection)
``mxsim golden verify DIR``    recompute every vector with the reference model (exit 1 on a mismatch)

Errors are one line on stderr and exit code 2; a verification that finds mismatches exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import io
import sys
from dataclasses import fields
from fractions import Fraction

import numpy as np

from . import __version__, ref
from .block_policy import OPTION_CHOICES
from .block_policy import QuantizeOptions
from .ref.sources import SOURCE_TYPES
from .fileformat import atomic_write, load, save
from .formats import ALIASES, FORMATS, format_names, get_format
from .formats.packing import DEFAULT_ELEMENT_STREAM, DEFAULT_SCALE_PLACEMENT, ELEMENT_STREAMS, SCALE_PLACEMENTS
from .accumulator import ACCUMULATOR_CHOICES, PRESETS, Accumulator
from .golden import generate as generate_suite
from .golden import generate_canonical, suite_from_spec
from .golden import verify as verify_suites
from .golden.suites import KINDS
from .tensor import quantize
from .tensor_dot import dot

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


def _load_array(path) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as error:  # numpy's messages for non-.npy or object files
        raise ValueError(f"{path}: cannot read as a .npy array ({error})") from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise ValueError(f"{path}: is an .npz archive; expected a single .npy array")
    return array


def _cmd_quantize(args) -> str:
    x = _load_array(args.input)
    options = _given_options(args, QuantizeOptions)
    rand_bits = None if args.rand_bits is None else _load_array(args.rand_bits)
    tensor = quantize(x, args.format, axis=args.axis, rand_bits=rand_bits, source=args.source, **options)
    save(tensor, args.output, element_stream=args.element_stream, scale_placement=args.scale_placement)
    return (
        f"{args.output}: {tensor.fmt.name}, shape {tensor.shape}, axis {tensor.axis}, {tensor.scales.size} blocks, "
        f"{args.element_stream}/{args.scale_placement}"
    )


def _cmd_dequantize(args) -> str:
    tensor = load(args.input)
    values = tensor.dequantize(args.dtype)
    _save_npy(args.output, values)
    return f"{args.output}: {values.dtype} array of shape {values.shape} from {tensor.fmt.name}"


def _save_npy(path, array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    atomic_write(path, buffer.getvalue())


def _cmd_dot(args) -> str:
    a, b = load(args.a), load(args.b)
    options = _given_options(args, Accumulator)
    acc = Accumulator.preset(args.preset, **options) if args.preset else Accumulator.from_kwargs(**options)
    result = dot(a, b, acc, details=True)
    if args.details:  # written first, and removed again if the results cannot be written
        register = result.accumulator
        if register.dtype == object:  # wider than int64: exact decimal strings
            register = register.astype(str)
        buffer = io.BytesIO()
        np.savez(buffer, bits=result.bits, block_bits=result.block_bits, accumulator=register,
                 lsb_exponent=result.lsb_exponent, anchor=result.anchor)
        atomic_write(args.details, buffer.getvalue())
    try:
        _save_npy(args.out_path, result.values)
    except OSError:
        if args.details:
            os.unlink(args.details)
        raise
    return f"{args.out_path}: {result.values.dtype} array of shape {result.values.shape} ({a.fmt.name} x {b.fmt.name}, {acc.mode})"


def _shard(text):
    if text is None:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard={text!r} is not allowed; expected I/N, e.g. 0/4") from None
    return index, count


def _progress(flag) -> bool:
    return sys.stderr.isatty() if flag is None else flag


def _cmd_golden_generate(args) -> str:
    shard, progress = _shard(args.shard), _progress(args.progress)
    if args.suite is None:
        if args.params != "{}":
            raise ValueError("--params needs --suite")
        directories = generate_canonical(args.out, args.seed, args.level, shard, progress, args.npz)
    else:
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as error:
            raise ValueError(f"--params is not valid JSON: {error}") from None
        if not isinstance(params, dict):
            raise ValueError("--params must be a JSON object")
        try:
            suite = suite_from_spec(args.suite, **params)
        except TypeError as error:
            raise ValueError(f"--params: {error}") from None
        directories = [generate_suite(suite, args.out, args.seed, args.level, shard, progress, args.npz)]
    vectors = sum(json.loads((d / "manifest.json").read_text())["count"] for d in directories)
    return f"{args.out}: {len(directories)} suite(s), {vectors} vectors"


class _VerifyFailed(Exception):
    pass


def _cmd_golden_verify(args) -> str:
    report = verify_suites(args.path, _progress(args.progress))
    lines = [f"{args.path}: {report.suites} suite(s), {report.vectors} vectors recomputed"]
    if not report.ok:
        lines += [f"MISMATCH {problem}" for problem in report.problems]
        raise _VerifyFailed("\n".join(lines))
    return lines[0] + ", all match"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit code 2, as argparse's own)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_option_flags(parser, options_class, choices: dict) -> None:
    """One flag per field of an options dataclass (QuantizeOptions, Accumulator); choices come
    from its module, defaults from the class itself (an unset flag is not passed on)."""
    for f in fields(options_class):
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{options_class.__name__}.{f.name} (default: {f.default})"
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif f.name in choices:
            parser.add_argument(flag, choices=choices[f.name], default=None, help=help_text)
        else:
            parser.add_argument(flag, type=_integer, default=None, metavar="N", help=help_text)


def _integer(text: str) -> int:
    """An integer option value: decimal, or 0x-prefixed hex (e.g. --nan-code 0x7D)."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r} (decimal, or hex with 0x)") from None


def _given_options(args, options_class) -> dict:
    return {f.name: getattr(args, f.name) for f in fields(options_class) if getattr(args, f.name) is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mxsim", description="Bit-accurate MX number format simulator.")
    parser.add_argument("--version", action="version", version=f"mxsim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="list formats, or describe one")
    info.add_argument("format", nargs="?", help="a format name (default: a table of all)")
    info.add_argument("--codes", action="store_true", help="list every code of the format with its exact value")
    info.set_defaults(run=_cmd_info)

    block_names = format_names("block") + [alias for alias, name in ALIASES.items() if FORMATS[name].kind == "block"]
    quant = commands.add_parser("quantize", help="quantize a .npy array into an mxsim tensor file")
    quant.add_argument("input", metavar="IN.npy", help="float16/bfloat16/float32/float64/float8 array, or bit "
                       "patterns with --source")
    quant.add_argument("output", metavar="OUT", help="mxsim tensor file to write (atomically)")
    quant.add_argument("--format", required=True, choices=block_names, metavar="FORMAT",
                       help=f"block format: {', '.join(block_names)}")
    quant.add_argument("--axis", type=int, default=-1, help="the axis blocks run along (default: -1)")
    quant.add_argument("--element-stream", choices=ELEMENT_STREAMS, default=DEFAULT_ELEMENT_STREAM,
                       help=f"bit order of the packed codes (default: {DEFAULT_ELEMENT_STREAM})")
    quant.add_argument("--scale-placement", choices=SCALE_PLACEMENTS, default=DEFAULT_SCALE_PLACEMENT,
                       help=f"where block scales go (default: {DEFAULT_SCALE_PLACEMENT})")
    quant.add_argument("--rand-bits", metavar="RAND.npy", help="integer random words of the input's shape "
                       "(for --rounding stochastic)")
    quant.add_argument("--source", choices=SOURCE_TYPES, default=None,
                       help="the type of an unsigned-integer input's bit patterns (uint32 fp32, uint16 fp16 or bf16, "
                       "uint8 fp8_e4m3 or fp8_e5m2, uint64 fp64); float inputs need none")
    _add_option_flags(quant, QuantizeOptions, OPTION_CHOICES)
    quant.set_defaults(run=_cmd_quantize)

    dequant = commands.add_parser("dequantize", help="decode an mxsim tensor file to a .npy array")
    dequant.add_argument("input", metavar="IN", help="mxsim tensor file")
    dequant.add_argument("output", metavar="OUT.npy", help=".npy file to write (atomically; no suffix is added)")
    dequant.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                         help="output dtype (default: float32)")
    dequant.set_defaults(run=_cmd_dequantize)

    dot = commands.add_parser("dot", help="DotGeneral of two mxsim tensor files along their block axes")
    dot.add_argument("a", metavar="A", help="mxsim tensor file")
    dot.add_argument("b", metavar="B", help="mxsim tensor file (same block-axis length and block size)")
    dot.add_argument("out_path", metavar="OUT.npy", help=".npy file of the results (float32; float16 for --output fp16)")
    dot.add_argument("--preset", choices=tuple(PRESETS), default=None,
                     help="start from a named accumulator (default: the contract's defaults); flags override fields")
    dot.add_argument("--details", metavar="OUT.npz",
                     help="also write the output bits and each block's bits, accumulator, lsb_exponent and anchor")
    _add_option_flags(dot, Accumulator, ACCUMULATOR_CHOICES)
    dot.set_defaults(run=_cmd_dot)

    golden = commands.add_parser("golden", help="generate or verify golden test vectors for RTL")
    actions = golden.add_subparsers(dest="golden_command", required=True)
    gen = actions.add_parser("generate", help="write golden suites (default: the canonical collection)")
    gen.add_argument("out", metavar="DIR", help="root directory (suites go to DIR/<kind>/<suite>/)")
    gen.add_argument("--suite", choices=tuple(KINDS), help="one suite of this kind instead of the canonical collection")
    gen.add_argument("--params", default="{}", metavar="JSON",
                     help='the suite\'s parameters as in its manifest, e.g. \'{"block_a": "mxfp8_e4m3", '
                          '"accumulator": {"mode": "aligned", "frac_bits": 8, "width": 14}}\'')
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0; the canonical suite uses 0)")
    gen.add_argument("--level", type=int, default=1, help="random vectors scale with the level, 1..10 (default 1)")
    gen.add_argument("--shard", metavar="I/N", help="write shard I of N (0-based) of every suite")
    gen.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="show a progress bar (default: when stderr is a terminal)")
    gen.add_argument("--npz", action="store_true", help="also write vectors.npz (one array per field) per suite")
    gen.set_defaults(run=_cmd_golden_generate)
    check = actions.add_parser("verify", help="recompute every vector of the suites under DIR with the reference model")
    check.add_argument("path", metavar="DIR", help="a suite directory or a root of suites")
    check.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    check.set_defaults(run=_cmd_golden_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        output = args.run(args)
    except _VerifyFailed as failure:  # a verification that ran and found problems: exit 1
        print(str(failure), file=sys.stderr)
        return 1
    except (ValueError, OverflowError, OSError) as error:
        print(f"mxsim: error: {error}".replace("\n", " "), file=sys.stderr)
        return 2
    try:
        print(output)
    except BrokenPipeError:  # e.g. `mxsim info | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as the Python docs advise
    return 0


if __name__ == "__main__":
    sys.exit(main())
