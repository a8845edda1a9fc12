"""``mxsim golden``: generate, merge, stream, verify and check golden test vectors (the commands of
:mod:`mxsim.golden`), locally or on a Dask cluster.

Exit codes: 0 done; 1 a verification or check that found mismatches, or the fast path disagreeing
with the reference; 2 a usage or file error; 130 (143) after Ctrl-C (SIGTERM), with no suite left
half-written. :mod:`mxsim.golden.device` (check, explain) is imported only by ``golden check``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import textwrap

from ..golden import canonical as golden_canonical
from ..golden import cluster as golden_cluster
from ..golden import generate_suites, suite_from_spec
from ..golden import verify as verify_suites
from ..golden.compute import limits, pipeline
from ..golden.compute.limits import MAX_ENUMERATED_BITS
from ..golden.kinds.params import keys_text, suite_keys
from ..golden.kinds.registry import KINDS
from ..golden.storage import files as golden_files
from ..golden.storage import merge as golden_merge
from ..golden.storage import stream as golden_stream
from ..golden.storage.files import INDEX, GenerationInterrupted
from ..options import PRESETS
from ..options.profiles import PROFILES
from ..printable import escape_controls
from ..reading import loads_json
from ..writing import atomic_write, naming_file
from .flags import presets_epilog
from .output import CheckFailed, VerifyFailed, interrupted, show_progress


def _shard(text):
    """--shard I/N as (I, N); not given: None (the two numbers are checked where the shard is cut)."""
    if text is None:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard={text!r} is not allowed; expected I/N, e.g. 0/4") from None
    return index, count


def _cmd_golden_generate(args) -> str:
    shard, progress = _shard(args.shard), show_progress(args.progress)
    if shard is not None and (args.scheduler or args.workers is not None):
        raise ValueError("--shard and --scheduler/--workers exclude each other: --shard writes one shard (for a job "
                         "array, then mxsim golden merge), a cluster writes whole suites")
    try:
        suites = _golden_suites(args)
    except KeyboardInterrupt:
        interrupted("nothing was written")
    try:
        with _cluster(args) as cluster:
            if cluster is None:
                directories = generate_suites(suites, args.out, args.seed, args.level, shard, progress, args.npz,
                                              args.count, args.reference_only)
            else:
                directories = golden_cluster.generate_suites(cluster, suites, args.out, args.seed, args.level,
                                                             progress, args.npz, args.count, args.reference_only)
    except GenerationInterrupted as interrupt:
        interrupted(str(interrupt))
    except KeyboardInterrupt:  # before the first suite was begun
        interrupted(f"no suite was written (only {args.out}/{INDEX} may have been updated)")
    vectors = sum(golden_files.read_json(d / "manifest.json")["count"] for d in directories)
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


def _cluster(args):
    """The Dask cluster of --scheduler or --workers (a context manager; None without them)."""
    return golden_cluster.open_cluster(args.scheduler, args.workers)  # imports Dask only if asked to


def _cmd_golden_merge(args) -> str:
    try:
        directories = golden_merge.merge(args.out, args.shards)
    except KeyboardInterrupt:
        interrupted(f"merge stopped; the suite being merged was not written (a complete suite of that name already "
                     f"in {args.out} was kept as it was; {args.out}/{INDEX} marks the other suites not merged as "
                     "unfinished)")
    vectors = sum(golden_files.read_json(d / "manifest.json")["count"] for d in directories)
    return f"{escape_controls(str(args.out))}: {len(directories)} suite(s) merged, {vectors} vectors"


def _cmd_golden_verify(args) -> str:
    try:
        with _cluster(args) as cluster:
            report = verify_suites(args.path, show_progress(args.progress), args.sample, args.sample_seed, cluster,
                                   args.reference_only)
    except KeyboardInterrupt:
        interrupted("verification stopped; nothing was changed")
    lines = [f"{escape_controls(str(args.path))}: {report.summary()}"]  # a name's newline forges no line
    if not report.ok:
        lines[0] += f", {len(report.problems)} problem(s):"
        lines += [f"MISMATCH {escape_controls(problem)}" for problem in report.problems]
        raise VerifyFailed("\n".join(lines))
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
        interrupted("stream stopped")
    return None


def _cmd_golden_check(args):
    """Compare; the report on stdout; exit 1 on a mismatch and 2 on a file error (via CheckFailed)."""
    from ..golden.device import check as golden_check  # here: the other commands start without them
    from ..golden.device import explain as golden_explain

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
        interrupted("check stopped")
    text = "\n".join(golden_check.report_lines(report))
    if args.explain and report.mismatching.size and not report.errors:
        try:
            found = golden_explain.explain(report, dut, 60.0 if args.budget is None else args.budget,
                                           progress=show_progress(args.progress))
        except KeyboardInterrupt:
            interrupted("explain stopped")
        text += "\n" + "\n".join(escape_controls(line) for line in golden_explain.explain_lines(found))
    elif args.explain and not report.errors:
        text += "\nexplain: no mismatching vector, nothing to explain"
    if report.errors:
        raise CheckFailed(text, 2)
    if not report.ok:
        raise CheckFailed(text, 1)
    return text


def _stdin_of_suite(suite_dir) -> bytes:
    """stdin, kept for --explain: at most what the suite's stream can take (its lines with flags and
    a MiB of comment lines); more is an error, read no further (``stream --forever`` never ends)."""
    from ..golden.device import check as golden_check

    manifest, suite = golden_check.load_checked_suite(suite_dir)
    limit = manifest["count"] * sum(f.hex_digits + 1 for f in suite.fields) + (1 << 20)
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"stdin: more than the {limit} bytes a stream of {suite.kind}/{suite.name} "
                         f"({manifest['count']} vectors) can take; not read further")
    return data


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


def add_golden_commands(commands) -> None:
    """The ``golden`` subcommand and its actions, added to ``commands``."""
    golden = commands.add_parser("golden", help="generate or verify golden test vectors for RTL")
    actions = golden.add_subparsers(dest="golden_command", required=True)
    _add_generate(actions)
    _add_merge(actions)
    _add_stream(actions)
    _add_verify(actions)
    _add_check(actions)


def _add_generate(actions) -> None:
    """``mxsim golden generate DIR``; its epilog lists the --params keys per kind and the presets."""
    gen = actions.add_parser(
        "generate", help="write golden suites (default: the canonical collection)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="--params keys per suite kind (an object key takes the fields of the class named):\n"
               + "\n".join(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="      ")
                           for line in keys_text(KINDS).splitlines())
               + "\n\n" + _named_sets_text()
               + f"\n\nElement formats of at most {MAX_ENUMERATED_BITS} bits (fp16, bf16 and narrower); "
                 "docs/golden-vectors.md has the details.\n\n" + presets_epilog(),
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


def _add_merge(actions) -> None:
    """``mxsim golden merge OUT SHARD_DIR...``."""
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


def _add_stream(actions) -> None:
    """``mxsim golden stream --suite KIND``."""
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


def _add_verify(actions) -> None:
    """``mxsim golden verify DIR``."""
    verify = actions.add_parser("verify", help="recompute every vector of the suites under DIR (the reference model "
                                "recomputing every catalogue line and a seeded sample), "
                                f"and check them against the root's {INDEX} (exit 1 on any problem)")
    verify.add_argument("path", metavar="DIR", help="a suite directory, a kind directory or a root of suites")
    verify.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    verify.add_argument("--sample", type=int, default=None, metavar="K",
                        help="recompute every directed vector and K sampled ones per suite (every file's hash and "
                             "format are still checked in full)")
    verify.add_argument("--sample-seed", type=int, default=0, metavar="S", help="the sample's seed (default 0)")
    verify.add_argument("--reference-only", action="store_true",
                        help="recompute every vector with the reference model (default: as generation computes them, "
                             "the fast path where a kind has one, the reference model recomputing every catalogue "
                             "line and a seeded sample; the canonical suite is catalogue only)")
    _add_cluster_flags(verify)
    verify.set_defaults(run=_cmd_golden_verify)


def _add_check(actions) -> None:
    """``mxsim golden check SUITE_DIR DUT_DIR|-``."""
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
