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

The package, one module per command group: :mod:`.parser` builds the argument parser from the
groups' :mod:`.info`, :mod:`.tensors`, :mod:`.dot` and :mod:`.golden` (flags from the option
definitions: :mod:`.flags`); :mod:`.output` holds the exit codes, printing and output files;
:mod:`.garbage` the collector's settings while a command runs.
"""

from __future__ import annotations

import sys

from .. import signals
from ..golden import cluster as golden_cluster
from ..golden.compute.crosscheck import ReferenceDisagreement
from ..printable import escape_controls
from ..reading import shorten
from .garbage import batch_collection
from .output import MAX_ERROR, CheckFailed, VerifyFailed, print_quietly, printable
from .parser import build_parser

__all__ = ["main", "build_parser"]


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: ``sys.argv[1:]``) and return its exit code (module docstring)."""
    args = build_parser().parse_args(argv)
    try:
        with signals.terminate_as_interrupt(), batch_collection():
            output = args.run(args)
    except KeyboardInterrupt:
        if not signals.terminated():
            raise
        print("mxsim: terminated (SIGTERM); no partial output file left", file=sys.stderr)
        return signals.exit_code()
    except VerifyFailed as failure:  # a verification that ran and found problems: exit 1
        print(printable(str(failure)), file=sys.stderr)
        return 1
    except CheckFailed as failure:  # a check that ran: its report on stdout
        return print_quietly(failure.text) or failure.code
    except ReferenceDisagreement as disagreement:  # the fast path and the reference differ: exit 1
        print(f"mxsim: error: {disagreement}", file=sys.stderr)
        return 1
    except (ValueError, OverflowError, OSError, golden_cluster.MissingExtra, golden_cluster.ClusterError) as error:
        message = escape_controls(f"mxsim: error: {error}".replace("\n", " "))  # names echoed: ESC, CR escaped
        print(printable(shorten(message, MAX_ERROR)), file=sys.stderr)
        return 2
    return 0 if output is None else print_quietly(output)
