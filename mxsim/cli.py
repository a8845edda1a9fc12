"""The ``mxsim`` command line.

``mxsim info``                 a table of every format of the catalogue
``mxsim info FORMAT``          the parameters and derived properties of one format
``mxsim info FORMAT --codes``  every code of an element format with its exact value
``mxsim info FILE``            describe a tensor file (format, shape, block axis, scales, layout, options,
                               checksum), after checking all of it
``mxsim quantize IN.npy OUT --format F [options]``   quantize an array into an mxsim tensor file
``mxsim dequantize IN OUT.npy [--dtype float32|float16|float64] [--dequant-overflow ...]``   decode an
                               mxsim tensor file to an array, under DequantizeOptions
``mxsim dot A B OUT.npy [--outer] [--preset P] [accumulator flags] [--c C.npy] [--details OUT.npz]``
                               DotGeneral of
                               two tensor files along their block axes (--outer: (M,K) x (N,K) -> (M,N))
``mxsim golden generate DIR [--suite KIND --params JSON] [--seed N] [--level L] [--count N] [--shard I/N]``
                               golden test vectors (default: the canonical collection) and DIR/index.json
``mxsim golden stream --suite KIND --params JSON [--count N | --forever] [--seed S] [--manifest FILE]``
                               the vectors of one suite as lines on stdout (TestFloat's testfloat_gen)
``mxsim golden merge OUT SHARD_DIR...``   merge the shards of suites (generate --shard I/N) into whole
                               suites, byte for byte what one generate writes
``mxsim golden verify DIR [--sample K] [--reference-only]``   recompute the vectors (all, as
                               generation does: the fast path, the reference model on the catalogue
                               and a seeded sample; or the directed ones and K sampled with the
                               reference model) and check the suites against DIR/index.json (exit 1
                               on any problem)
``mxsim golden check SUITE_DIR DUT_DIR|- [--errors N] [--fields F,...] [--explain [--budget S]]``
                               compare a device's results with a suite (exit 1 on any mismatch, 2
                               on a file error); --explain names the configuration that
                               reproduces the device

``generate``, ``verify`` and ``check`` take ``--scheduler ADDRESS`` (a running Dask cluster) or ``--workers N``
(a local one) to run a suite's pieces in parallel (the extra mxsim[dist]; docs/cluster.md); the output is the
same as in one process.

Errors are one line on stderr and exit code 2; a verification or check that finds mismatches exits
1; Ctrl-C during a golden command exits 130 with one line (no half-written suite).
"""

from __future__ import annotations

import argparse
import os
import io
import re
import sys
import textwrap
from fractions import Fraction

import numpy as np

from . import ref, signals
from ._version import __version__
from .options import DequantizeOptions, LayoutOptions, QuantizeOptions
from .options.profiles import PROFILES, get_profile
from .options.spec import Choice, Flag, NameOrPattern, options_of
from .writing import atomic_write, naming_file
from .printable import escape_controls
from .npy_input import load_array, typed_raw_items
from .reading import loads_json, shorten
from .ref.sources import SOURCE_TYPES
from .formats import ALIASES, FORMATS, format_names, get_format
from .options import PRESETS, Accumulator
from .options.presets import presets_text
from .golden import canonical as golden_canonical
from .golden import generate_suites, suite_from_spec
from .golden.compute.crosscheck import ReferenceDisagreement
from .golden import verify as verify_suites
from .golden import cluster as golden_cluster
from .golden.storage import merge as golden_merge
from .golden.storage import files as golden_files
from .golden.compute import limits
from .golden.compute import pipeline
from .golden.storage import stream as golden_stream
from .golden.storage.files import INDEX, GenerationInterrupted
from .golden.compute.limits import MAX_ENUMERATED_BITS
from .golden.kinds.params import keys_text, suite_keys
from .golden.kinds.registry import KINDS

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
    from .golden.storage.columns import NotRegularFile, open_regular

    try:
        open_regular(path).close()
    except NotRegularFile as error:
        raise ValueError(f"{path}: {error.strerror}; mxsim info describes a tensor file (.mxt)") from None


def _file_details(path) -> str:
    """``mxsim info FILE``: what a tensor file holds, every check of :func:`mxsim.fileformat.read` passed."""
    from .fileformat import read

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


def _cmd_quantize(args) -> str:
    from .fileformat import save
    from .tensor import quantize

    x, source = typed_raw_items(load_array(args.input), args.input, args.source)
    options = _given_options(args, QuantizeOptions)
    rand_bits = None if args.rand_bits is None else load_array(args.rand_bits)
    layout = LayoutOptions(**_given_options(args, LayoutOptions))
    tensor = quantize(
        x, args.format, axis=args.axis, rand_bits=rand_bits, source=source, profile=args.profile, **options
    )
    save(tensor, args.output, **layout.as_dict())
    return (
        f"{args.output}: {tensor.fmt.name}, shape {tensor.shape}, axis {tensor.axis}, {tensor.scales.size} blocks, "
        f"{layout.element_stream}/{layout.scale_placement}"
    )


def _cmd_dequantize(args) -> str:
    from .fileformat import load

    tensor = load(args.input)
    # the profile's formats and outputs are checked as quantize checks them (one rule: Profile.dequantize_for)
    options = None if args.profile is None else get_profile(args.profile).dequantize_for(tensor.fmt, args.dtype)
    values = tensor.dequantize(args.dtype, options, **_given_options(args, DequantizeOptions))
    _save_npy(args.output, values)
    return f"{args.output}: {values.dtype} array of shape {values.shape} from {tensor.fmt.name}"


def _cmd_identify(args) -> str:
    from .fileformat import load
    from .golden.device.identify import check_budget, identify, identify_lines

    check_budget(args.budget, "--budget")
    if args.top < 0:
        raise ValueError(f"--top={args.top} is not allowed; expected a non-negative integer")
    source = typed_raw_items(load_array(args.source), args.source)[0]
    if args.tensor.endswith(".npy"):
        if args.scales is None or args.format is None:
            raise ValueError("identify with codes as .npy needs SCALES.npy and --format (or give an mxsim tensor file)")
        codes, scales, fmt, axis = load_array(args.tensor), load_array(args.scales), args.format, args.axis
        extra = {}
    else:
        if args.scales is not None:
            raise ValueError("SCALES.npy goes with codes as .npy only; an mxsim tensor file holds its scales")
        tensor = load(args.tensor)
        codes, scales, fmt, axis = tensor.codes, tensor.scales, tensor.fmt, tensor.axis
        extra = {"subscales": tensor.subscales, "tensor_scale": tensor.tensor_scale}
    report = identify(source, scales, codes, fmt, axis, budget=args.budget, **extra)
    return "\n".join(identify_lines(report, args.top))


def _save_npy(path, array: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    atomic_write(path, buffer.getvalue())


def _cmd_dot(args) -> str:
    from .fileformat import load
    from .tensor_dot import dot

    a, b = load(args.a), load(args.b)
    options = _given_options(args, Accumulator)
    acc = Accumulator.resolve(args.preset, **options)
    c = None if args.c is None else load_array(args.c)
    result = dot(a, b, acc, outer=args.outer, c=c, details=bool(args.details))  # per-block registers only when asked
    values = result.values if args.details else result
    if args.details:  # written first, and removed again if the results cannot be written
        register = result.accumulator
        if register.dtype == object:  # wider than int64: exact decimal strings
            register = register.astype(str)
        buffer = io.BytesIO()
        np.savez(buffer, bits=result.bits, block_bits=result.block_bits, accumulator=register,
                 lsb_exponent=result.lsb_exponent, anchor=result.anchor, steps=result.steps)
        atomic_write(args.details, buffer.getvalue())
    try:
        _save_npy(args.out_path, values)
    except OSError:
        if args.details:
            os.unlink(args.details)
        raise
    how = f"preset {args.preset}" if args.preset else f"mode {acc.mode}"
    how += f", accumulate {acc.accumulate}" if acc.accumulate != "separate" else ""
    return f"{args.out_path}: {values.dtype} array of shape {values.shape} ({a.fmt.name} x {b.fmt.name}, {how})"


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
    if shard is not None and (args.scheduler or args.workers is not None):
        raise ValueError("--shard and --scheduler/--workers exclude each other: --shard writes one shard (for a job "
                         "array, then mxsim golden merge), a cluster writes whole suites")
    try:
        suites = _golden_suites(args)
    except KeyboardInterrupt:
        _interrupted("nothing was written")
    try:
        with _cluster(args) as cluster:
            if cluster is None:
                directories = generate_suites(suites, args.out, args.seed, args.level, shard, progress, args.npz,
                                              args.count, args.reference_only)
            else:
                directories = golden_cluster.generate_suites(cluster, suites, args.out, args.seed, args.level,
                                                             progress, args.npz, args.count, args.reference_only)
    except GenerationInterrupted as interrupt:
        _interrupted(str(interrupt))
    except KeyboardInterrupt:  # before the first suite was begun
        _interrupted(f"no suite was written (only {args.out}/{INDEX} may have been updated)")
    vectors = sum(golden_files._read_json(d / "manifest.json")["count"] for d in directories)
    return f"{escape_controls(str(args.out))}: {len(directories)} suite(s), {vectors} vectors"


def _golden_suites(args) -> list:
    """The suites ``golden generate`` was asked for: the canonical collection, or one --suite."""
    if args.suite is None:
        if args.params != "{}":
            raise ValueError("--params needs --suite")
        return golden_canonical.canonical_suites()
    try:
        params = loads_json(args.params)
    except RecursionError:
        raise ValueError("--params is not valid JSON: nested too deeply") from None
    except ValueError as error:  # not JSON, or a key given twice
        raise ValueError(f"--params is not valid JSON: {error}") from None
    if not isinstance(params, dict):
        raise ValueError("--params must be a JSON object")
    try:
        return [suite_from_spec(args.suite, **params)]
    except (TypeError, ValueError) as error:
        raise ValueError(f"--params: {error}") from None


def _interrupted(what: str):
    """Ctrl-C (or SIGTERM) in a golden command: one line on stderr and exit code 128 + the signal's
    number (130 for SIGINT, 143 for SIGTERM)."""
    print(f"mxsim: interrupted: {what}", file=sys.stderr)
    raise SystemExit(signals.exit_code())


def _cluster(args):
    """The Dask cluster of --scheduler or --workers (a context manager; None without them)."""
    return golden_cluster.open_cluster(args.scheduler, args.workers)  # imports Dask only if asked to


def _cmd_golden_merge(args) -> str:
    try:
        directories = golden_merge.merge(args.out, args.shards)
    except KeyboardInterrupt:
        _interrupted(f"merge stopped; the suite being merged was not written (a complete suite of that name already "
                     f"in {args.out} was kept as it was; {args.out}/{INDEX} marks the other suites not merged as "
                     "unfinished)")
    vectors = sum(golden_files._read_json(d / "manifest.json")["count"] for d in directories)
    return f"{escape_controls(str(args.out))}: {len(directories)} suite(s) merged, {vectors} vectors"


class _VerifyFailed(Exception):
    pass


def _cmd_golden_verify(args) -> str:
    try:
        with _cluster(args) as cluster:
            report = verify_suites(args.path, _progress(args.progress), args.sample, args.sample_seed, cluster,
                                   args.reference_only)
    except KeyboardInterrupt:
        _interrupted("verification stopped; nothing was changed")
    lines = [f"{escape_controls(str(args.path))}: {report.summary()}"]  # a name's newline forges no line
    if not report.ok:
        lines[0] += f", {len(report.problems)} problem(s):"
        lines += [f"MISMATCH {escape_controls(problem)}" for problem in report.problems]
        raise _VerifyFailed("\n".join(lines))
    return lines[0] + ", all match"


def _cmd_golden_stream(args) -> None:
    """Lines on stdout; the reader leaving early (``| head``) ends it quietly with exit 0."""
    if not 1 <= args.level <= 10:
        raise ValueError(f"--level={args.level} is not allowed; expected an integer in [1, 10]")
    suite = _golden_suites(args)[0]
    limits.check_enumerable(suite)
    plan = pipeline.plan(suite, args.level, args.count, args.forever)
    if args.manifest:
        atomic_write(args.manifest, golden_files.manifest_bytes(suite, args.seed, args.level, plan, count=plan.total,
                                                                 stream={"header": False}))
    try:
        with naming_file("<stdout>"):  # a full disk names where it was writing
            golden_stream.write_stream(suite, sys.stdout.buffer, args.seed, args.level, plan, not args.manifest)
    except BrokenPipeError:  # the reader left (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt:
        _interrupted("stream stopped")
    return None


def _cmd_golden_check(args):
    """Compare; the report on stdout; exit 1 on a mismatch and 2 on a file error (via _CheckFailed)."""
    from .golden.device import check as golden_check  # here: the other commands start without them
    from .golden.device import explain as golden_explain

    if args.errors < 0:
        raise ValueError(f"--errors={args.errors} is not allowed; expected a non-negative integer")
    fields = None if args.fields is None else [name for name in args.fields.split(",") if name]
    if args.budget is not None and not args.budget > 0:
        raise ValueError(f"--budget={args.budget} is not allowed; expected a positive number of seconds")
    if args.budget is not None and not args.explain:
        raise ValueError("--budget is for --explain")
    if args.dut == "-" and (args.scheduler or args.workers is not None):
        raise ValueError("a stream on stdin is read by one process: --scheduler and --workers need the device's "
                         "results as a directory")
    dut = args.dut
    if args.dut == "-":  # explain reads the stream again: keep it
        dut = _stdin_of_suite(args.suite_dir) if args.explain else sys.stdin.buffer
    try:
        with _cluster(args) as cluster:
            report = golden_check.check(args.suite_dir, io.BytesIO(dut) if isinstance(dut, bytes) else dut,
                                        args.errors, fields, cluster)
    except KeyboardInterrupt:
        _interrupted("check stopped")
    text = "\n".join(golden_check.report_lines(report))
    if args.explain and report.mismatching.size and not report.errors:
        try:
            found = golden_explain.explain(report, dut, 60.0 if args.budget is None else args.budget,
                                           progress=_progress(args.progress))
        except KeyboardInterrupt:
            _interrupted("explain stopped")
        text += "\n" + "\n".join(escape_controls(line) for line in golden_explain.explain_lines(found))
    elif args.explain and not report.errors:
        text += "\nexplain: no mismatching vector, nothing to explain"
    if report.errors:
        raise _CheckFailed(text, 2)
    if not report.ok:
        raise _CheckFailed(text, 1)
    return text


def _stdin_of_suite(suite_dir) -> bytes:
    """stdin, kept for --explain: at most what the suite's stream can take (its lines with flags and
    a MiB of comment lines); more is an error, read no further (``stream --forever`` never ends)."""
    from .golden.device import check as golden_check

    manifest, suite = golden_check.load_checked_suite(suite_dir)
    limit = manifest["count"] * sum(f.hex_digits + 1 for f in suite.fields) + (1 << 20)
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"stdin: more than the {limit} bytes a stream of {suite.kind}/{suite.name} "
                         f"({manifest['count']} vectors) can take; not read further")
    return data


class _CheckFailed(Exception):
    """A check that ran: its report, and the exit code (1 mismatches, 2 file errors)."""

    def __init__(self, text: str, code: int):
        super().__init__(text)
        self.text, self.code = text, code


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit code 2, as argparse's own)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_option_flags(parser, options_class) -> None:
    """One flag per option of an options dataclass (QuantizeOptions, Accumulator, ...), read from
    the option definitions of :mod:`mxsim.options` (an unset flag is not passed on)."""
    for definition in options_of(options_class):
        if not definition.cli:
            continue
        flag = "--" + definition.name.replace("_", "-")
        help_text = f"{definition.description} (default: {definition.default}; contract section {definition.section})"
        help_text = help_text.replace("%", "%%")
        if isinstance(definition.allowed, Flag):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif isinstance(definition.allowed, Choice):
            parser.add_argument(flag, choices=definition.allowed.values, default=None, help=help_text)
        elif isinstance(definition.allowed, NameOrPattern):  # checked by the options class, naming the allowed ones
            allowed = definition.allowed.text().replace("%", "%%")
            parser.add_argument(flag, default=None, metavar="NAME", help=f"{help_text}; {allowed}")
        else:
            parser.add_argument(flag, type=_integer, default=None, metavar="N", help=help_text)


def _integer(text: str) -> int:
    """An integer flag value, decimal or 0x-prefixed hex (NaN bit patterns read best in hex)."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r}") from None


def _in_flags(command, options_classes, extra=("rand_bits",)):
    """``command`` with its errors worded in the flags the user typed: an option's Python name
    (``frac_bits=None``, ``mode='aligned'``, ``rand_bits``) becomes its flag (``--frac-bits`` not
    given, ``--mode aligned``, ``--rand-bits``)."""
    names = sorted({d.name for cls in options_classes for d in options_of(cls)} | set(extra), key=len, reverse=True)
    # name=value for every option; a bare name only where it cannot be an English word (an underscore)
    assigned = "|".join(names)
    bare = "|".join(name for name in names if "_" in name)
    pattern = re.compile(rf"(?<![\w/.-])(?:({assigned})=('[^']*'|[^\s,;)]+)|({bare})\b)")

    def flag(match) -> str:
        name, value = "--" + (match.group(1) or match.group(3)).replace("_", "-"), match.group(2)
        if value is None:
            return name
        return f"{name} not given" if value == "None" else f"{name} {value.strip(chr(39))}"

    def run(args):
        try:
            return command(args)
        except (ValueError, OverflowError) as error:
            raise type(error)(pattern.sub(flag, str(error))) from None

    return run


def _given_options(args, options_class) -> dict:
    return {o.name: getattr(args, o.name) for o in options_of(options_class) if o.cli and getattr(args, o.name) is not None}


DOT_DESCRIPTION = """\
Dot products of A and B along their block axes (the --axis each was quantized along), through the
datapath model: the block axes must have the same length and the formats the same block size.

Shapes. The other axes of A and B, in their stored order (the original order with the block axis
removed), broadcast NumPy-style; K is the block axis:
  A (M, K)    and B (M, K) -> (M,)     row i of A with row i of B
  A (M, K)    and B (K,)   -> (M,)     every row of A with B
  A (M, 1, K) and B (N, K) -> (M, N)   every row of A with every row of B
  A (M, K)    and B (N, K) -> an error unless M == N or one is 1; with --outer: (M, N) = A @ B^T
--outer pairs every row of A with every row of B: the result has A's non-block axes followed by B's.
"""


def _format_name(text: str) -> str:
    """A --format value as the catalogue spells it (case-insensitive, as mxsim.get_format); an
    unknown name is passed on unchanged for argparse to refuse with the list of choices."""
    try:
        return get_format(text, kind="block").name
    except ValueError:
        return text


def _named_sets_text() -> str:
    """The names --params takes for 'preset' and 'profile', from the registries
    (:data:`mxsim.options.PRESETS`, :data:`mxsim.options.profiles.PROFILES`), with the kinds that take them."""
    def kinds_with(key: str) -> str:
        return ", ".join(kind for kind, cls in KINDS.items() if key in dict(suite_keys(cls)))

    lines = [f"preset ({kinds_with('preset')}): {', '.join(PRESETS)}",
             f"profile ({kinds_with('profile')}): "
             + ", ".join(name for name, profile in PROFILES.items() if profile.kind == "block")]
    return "names --params takes:\n" + "\n".join(
        textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="      ") for line in lines)


def _add_cluster_flags(parser) -> None:
    """--scheduler and --workers: run a golden command's pieces on Dask (the extra mxsim[dist])."""
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.1:8786; needs "
                             "pip install 'mxsim[dist]'); the workers must see the directories at the same paths")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="run on a local Dask cluster of N worker processes (needs pip install 'mxsim[dist]')")


def _presets_epilog() -> str:
    """The accumulator presets (the "preset" key of dot and dotgeneral suites, --preset of dot), one
    per line with its source: generated from mxsim.options.PRESETS."""
    lines = presets_text().replace("%", "%%").splitlines()
    return "accumulator presets (name: source):\n" + "\n".join(
        textwrap.fill(line, 110, initial_indent="  ", subsequent_indent="      ") for line in lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mxsim", description="Bit-accurate MX number format simulator.")
    parser.add_argument("--version", action="version", version=f"mxsim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="list formats, describe one, or describe a tensor file",
                               description="Without an argument: a table of every format. With a format name "
                               "(any case, or an alias): its parameters. With a tensor file: its format, shape, block "
                               "axis, scale encoding, layout, options and checksum status, after checking all of it.")
    info.add_argument("name", nargs="?", metavar="FORMAT|FILE",
                      help="a format name, or an mxsim tensor file (default: a table of all formats)")
    info.add_argument("--codes", action="store_true", help="list every code of the format with its exact value")
    info.set_defaults(run=_cmd_info)

    block_names = format_names("block") + [alias for alias, name in ALIASES.items() if FORMATS[name].kind == "block"]
    quant = commands.add_parser("quantize", help="quantize a .npy array into an mxsim tensor file")
    quant.add_argument("input", metavar="IN.npy", help="float16/bfloat16/float32/float64/float8 array (ml_dtypes "
                       "bfloat16 and float8_e5m2 as numpy.save writes them; float8_e4m3fn, which numpy.save records "
                       "as raw bytes, with --source fp8_e4m3), or bit patterns with --source")
    quant.add_argument("output", metavar="OUT", help="mxsim tensor file to write (atomically)")
    quant.add_argument("--format", required=True, type=_format_name, choices=block_names, metavar="FORMAT",
                       help=f"block format, in any case: {', '.join(block_names)}")
    quant.add_argument("--axis", type=int, default=-1, help="the axis blocks run along (default: -1)")
    quant.add_argument("--rand-bits", metavar="RAND.npy", help="integer random words of the input's shape "
                       "(for --rounding stochastic)")
    quant.add_argument("--source", choices=SOURCE_TYPES, default=None,
                       help="the type of an unsigned-integer input's bit patterns (uint32 fp32, uint16 fp16 or bf16, "
                       "uint8 fp8_e4m3 or fp8_e5m2, uint64 fp64), or of an ml_dtypes array's raw items as numpy.save "
                       "writes them; float inputs need none")
    block_profiles = tuple(name for name, p in PROFILES.items() if p.kind == "block")
    quant.add_argument("--profile", choices=block_profiles, default=None,
                       help="a profile: the options of a real design or library (option flags override them; the "
                       "file records it)")
    _add_option_flags(quant, LayoutOptions)
    _add_option_flags(quant, QuantizeOptions)
    quant.set_defaults(run=_in_flags(_cmd_quantize, (LayoutOptions, QuantizeOptions)))

    dequant = commands.add_parser("dequantize", help="decode an mxsim tensor file to a .npy array")
    dequant.add_argument("input", metavar="IN", help="mxsim tensor file")
    dequant.add_argument("output", metavar="OUT.npy", help=".npy file to write (atomically; no suffix is added)")
    dequant.add_argument("--dtype", choices=("float32", "float16", "float64"), default="float32",
                         help="output dtype (default: float32)")
    dequant.add_argument("--profile", choices=block_profiles, default=None,
                         help="dequantize with this profile's options for --dtype (default: the profile the file "
                         "records, if any; option flags override); the file's format and --dtype must be ones the "
                         "profile has, as quantize --profile requires")
    _add_option_flags(dequant, DequantizeOptions)
    dequant.set_defaults(run=_in_flags(_cmd_dequantize, (DequantizeOptions,)))

    ident = commands.add_parser(
        "identify", help="name the profile and options that reproduce a quantized tensor from its source",
        description="Quantize SOURCE under mxsim's defaults, every block profile of the format and (if none explains "
        "every block) every single option change, and name the configurations that reproduce the tensor's scale bytes "
        "and element codes (from a tensor file also its sub-scales and NVFP4 tensor scale), with the share of blocks "
        "each explains (the candidates of golden check --explain).",
    )
    ident.add_argument("source", metavar="SOURCE.npy", help="the values the tensor was quantized from")
    ident.add_argument("tensor", metavar="TENSOR", help="an mxsim tensor file, or the element codes as .npy (blocks "
                       "along the last axis)")
    ident.add_argument("scales", metavar="SCALES.npy", nargs="?", default=None,
                       help="the scale bytes as .npy, with codes as .npy (one per block)")
    ident.add_argument("--format", type=_format_name, choices=block_names, default=None, metavar="FORMAT",
                       help="the block format, with codes as .npy")
    ident.add_argument("--axis", type=int, default=-1, help="the source axis blocks run along, with codes as .npy "
                       "(default: -1)")
    ident.add_argument("--top", type=int, default=8, metavar="N", help="candidates shown (default 8)")
    ident.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                       help="stop trying candidates after this long (default 60)")
    ident.set_defaults(run=_cmd_identify)

    dot = commands.add_parser("dot", help="DotGeneral of two mxsim tensor files along their block axes",
                              description=DOT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog=_presets_epilog())
    dot.add_argument("a", metavar="A", help="mxsim tensor file")
    dot.add_argument("b", metavar="B", help="mxsim tensor file (same block-axis length and block size)")
    dot.add_argument("out_path", metavar="OUT.npy", help=".npy file of the results (float32; float16 for --output fp16)")
    dot.add_argument("--outer", action="store_true",
                     help="every row of A against every row of B: A's non-block axes followed by B's, "
                          "(M,K) x (N,K) -> (M,N) = A @ B^T (default: broadcast, see above)")
    dot.add_argument("--preset", choices=tuple(PRESETS), default=None, metavar="PRESET",
                     help="start from a named accumulator (default: the contract's defaults; the list below); flags "
                          "override fields; a preset of a real unit refuses element formats the unit does not take")
    dot.add_argument("--c", metavar="C.npy", default=None,
                     help="accumulator input C: a float32 .npy array that broadcasts to the result shape "
                          "(fused steps start from C, separate accumulation adds it first; default: none / +0)")
    dot.add_argument("--details", metavar="OUT.npz",
                     help="also write the output bits, each block's bits, accumulator, lsb_exponent and anchor, "
                          "and every fused step's output bits (steps)")
    _add_option_flags(dot, Accumulator)
    dot.set_defaults(run=_in_flags(_cmd_dot, (Accumulator,)))

    golden = commands.add_parser("golden", help="generate or verify golden test vectors for RTL")
    actions = golden.add_subparsers(dest="golden_command", required=True)
    gen = actions.add_parser(
        "generate", help="write golden suites (default: the canonical collection)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="--params keys per suite kind (an object key takes the fields of the class named):\n"
               + "\n".join(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="      ")
                           for line in keys_text(KINDS).splitlines())
               + "\n\n" + _named_sets_text()
               + f"\n\nElement formats of at most {MAX_ENUMERATED_BITS} bits (fp16, bf16 and narrower); "
                 "docs/golden-vectors.md has the details.\n\n" + _presets_epilog(),
    )
    gen.add_argument("out", metavar="DIR", help=f"root directory (suites go to DIR/<kind>/<suite>/, the list of them "
                                                f"to DIR/{INDEX})")
    gen.add_argument("--suite", choices=tuple(KINDS), help="one suite of this kind instead of the canonical collection")
    gen.add_argument("--params", default="{}", metavar="JSON",
                     help='the suite\'s parameters as in its manifest (keys below), e.g. \'{"block_a": "mxfp8_e4m3", '
                          '"accumulator": {"mode": "aligned", "frac_bits": 8, "width": 14}}\'')
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0; the canonical suite uses 0)")
    gen.add_argument("--level", type=int, default=1, help="random vectors scale with the level, 1..10 (default 1)")
    gen.add_argument("--shard", metavar="I/N", help="write shard I of N (0-based) of every suite")
    gen.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="show progress, suite by suite ('suite 12/54 ...'; default: when stderr is a terminal)")
    gen.add_argument("--npz", action="store_true", help="also write vectors.npz (one array per field) per suite")
    gen.add_argument("--reference-only", action="store_true",
                     help="compute every expected value with the reference model (default: the NumPy fast path where a "
                          "kind has one, the reference recomputing the catalogue and a seeded sample; the same bytes)")
    gen.add_argument("--count", type=int, default=None, metavar="N",
                     help="N vectors per suite: the catalogue first (only its first N if N is smaller), then seeded "
                          "random ones (default: the catalogue, as golden/ holds it)")
    _add_cluster_flags(gen)
    gen.set_defaults(run=_cmd_golden_generate)
    merge = actions.add_parser(
        "merge", help="merge the shards of suites (generate --shard I/N) into whole suites",
        description="Merge the shards written by 'mxsim golden generate ... --shard I/N' (e.g. one task of a job "
                    "array each) into whole suites under OUT, with their manifests and OUT/index.json: byte for byte "
                    "what one generate without --shard writes. The shards of each suite must come from one generation "
                    "(same seed, level, params, count and N, every I once), checked before anything is written, "
                    "and every file must match its shard's manifest (SHA-256, checked as it is copied): otherwise an "
                    "error says what differs, and no suite is left half-written. docs/cluster.md has the details.")
    merge.add_argument("out", metavar="OUT", help="root directory to write the suites to (may be the root the shards "
                                                  "are in)")
    merge.add_argument("shards", metavar="SHARD_DIR", nargs="+",
                       help="a shard directory (shard-I-of-N) or a directory above shards, searched recursively")
    merge.set_defaults(run=_cmd_golden_merge)
    stream = actions.add_parser("stream", help="write one suite's vectors to stdout, one vector per line")
    stream.add_argument("--suite", choices=tuple(KINDS), required=True, help="the suite kind")
    stream.add_argument("--params", default="{}", metavar="JSON", help="the suite's parameters (as for generate)")
    amount = stream.add_mutually_exclusive_group()
    amount.add_argument("--count", type=int, default=None, metavar="N",
                        help="N vectors (default: the catalogue); as generate --count")
    amount.add_argument("--forever", action="store_true", help="the catalogue, then random vectors without end")
    stream.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    stream.add_argument("--level", type=int, default=1, help="as for generate, 1..10 (default 1)")
    stream.add_argument("--manifest", metavar="FILE",
                        help="write the manifest (fields, widths, params) to FILE and no comment line to stdout")
    stream.set_defaults(run=_cmd_golden_stream)
    check = actions.add_parser("verify", help="recompute every vector of the suites under DIR (the reference model "
                               "recomputing every catalogue line and a seeded sample), "
                               f"and check them against the root's {INDEX} (exit 1 on any problem)")
    check.add_argument("path", metavar="DIR", help="a suite directory, a kind directory or a root of suites")
    check.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    check.add_argument("--sample", type=int, default=None, metavar="K",
                       help="recompute every directed vector and K sampled ones per suite (every file's hash and "
                            "format are still checked in full)")
    check.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the sample's seed (default 0)")
    check.add_argument("--reference-only", action="store_true",
                       help="recompute every vector with the reference model (default: as generation computes them, "
                            "the fast path where a kind has one, the reference model recomputing every catalogue "
                            "line and a seeded sample; the canonical suite is catalogue only)")
    _add_cluster_flags(check)
    check.set_defaults(run=_cmd_golden_verify)
    dut = actions.add_parser("check", help="compare a device's results with a suite (TestFloat's testfloat_ver)",
                             description="Compare a device's results with a suite, line by line; report the "
                                         "mismatches per field and per corner class, and the first ones with their "
                                         "inputs decomposed. Exit 0: all match; 1: a mismatch; 2: a usage or file "
                                         "error. docs/verification-flow.md has the details.")
    dut.add_argument("suite_dir", metavar="SUITE_DIR", help="one suite directory (with manifest.json)")
    dut.add_argument("dut", metavar="DUT_DIR", help="the device's <field>.hex per output field, or - for lines on "
                                                    "stdin in the stream format (inputs, outputs[, flags])")
    dut.add_argument("--errors", type=int, default=20, metavar="N",
                     help="show the first N mismatching vectors in full (default 20)")
    dut.add_argument("--fields", metavar="F,...",
                     help="compare only these output fields (default: every one but flags)")
    dut.add_argument("--explain", action="store_true",
                     help="on mismatches, search for the configuration that reproduces the device: every profile "
                     "or preset, every single option change of the suite's kind, and pairs of the best partial ones; "
                     "ranked by mismatching vectors reproduced without breaking matching ones")
    dut.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                     help="time limit of --explain (default 60); it reports what it did not try")
    dut.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="a progress bar of --explain on stderr (default: when stderr is a terminal)")
    _add_cluster_flags(dut)
    dut.set_defaults(run=_cmd_golden_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with signals.terminate_as_interrupt():
            output = args.run(args)
    except KeyboardInterrupt:
        if not signals.terminated():
            raise
        print("mxsim: terminated (SIGTERM); no partial output file left", file=sys.stderr)
        return signals.exit_code()
    except _VerifyFailed as failure:  # a verification that ran and found problems: exit 1
        print(_printable(str(failure)), file=sys.stderr)
        return 1
    except _CheckFailed as failure:  # a check that ran: its report on stdout
        return _print_quietly(failure.text) or failure.code
    except ReferenceDisagreement as disagreement:  # the fast path and the reference differ: exit 1
        print(f"mxsim: error: {disagreement}", file=sys.stderr)
        return 1
    except (ValueError, OverflowError, OSError, golden_cluster.MissingExtra, golden_cluster.ClusterError) as error:
        message = escape_controls(f"mxsim: error: {error}".replace("\n", " "))  # names echoed: ESC, CR escaped
        print(_printable(shorten(message, MAX_ERROR)), file=sys.stderr)
        return 2
    return 0 if output is None else _print_quietly(output)


MAX_ERROR = 2000  # characters of an error message: every echoed input is cut shorter where it is made


def _printable(text: str) -> str:
    """``text`` with what the terminal's encoding cannot show (a lone surrogate from a file's JSON,
    say) as backslash escapes, so printing it never raises UnicodeEncodeError."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return text.encode(encoding, "backslashreplace").decode(encoding, "replace")


def _print_quietly(text: str) -> int:
    """Print ``text`` on stdout: 0, or 2 after a one-line error if stdout cannot take it (a full disk)."""
    try:
        with naming_file("<stdout>"):
            print(_printable(text))
            sys.stdout.flush()
    except BrokenPipeError:  # e.g. `mxsim info | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as the Python docs advise
    except OSError as error:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more is flushed at exit
        print(f"mxsim: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
