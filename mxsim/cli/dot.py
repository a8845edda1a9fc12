"""``mxsim dot``: DotGeneral of two mxsim tensor files along their block axes, through an accumulator's datapath.

The accumulator is a preset, or the contract's defaults, with flags overriding fields.

The results are written as .npy (float32; float16 for --output fp16); --details adds an .npz of the
output bits and the per-block registers, written first and removed again if the results cannot be.
"""

from __future__ import annotations

import argparse
import io
import os

import numpy as np

from ..npy_input import load_array
from ..options import PRESETS, Accumulator
from ..writing import atomic_write
from .flags import add_option_flags, given_options, in_flags, presets_epilog
from .output import save_npy


def _cmd_dot(args) -> str:
    from ..fileformat import load
    from ..tensor_dot import dot

    a, b = load(args.a), load(args.b)
    options = given_options(args, Accumulator)
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
        save_npy(args.out_path, values)
    except OSError:
        if args.details:
            os.unlink(args.details)
        raise
    how = f"preset {args.preset}" if args.preset else f"mode {acc.mode}"
    how += f", accumulate {acc.accumulate}" if acc.accumulate != "separate" else ""
    return f"{args.out_path}: {values.dtype} array of shape {values.shape} ({a.fmt.name} x {b.fmt.name}, {how})"


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


def add_dot_command(commands) -> None:
    """The ``dot`` subcommand, added to ``commands``."""
    dot = commands.add_parser("dot", help="DotGeneral of two mxsim tensor files along their block axes",
                              description=DOT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog=presets_epilog())
    dot.add_argument("a", metavar="A", help="mxsim tensor file")
    dot.add_argument("b", metavar="B", help="mxsim tensor file (same block-axis length and block size)")
    dot.add_argument("out_path", metavar="OUT.npy",
                     help=".npy file of the results (float32; float16 for --output fp16)")
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
    add_option_flags(dot, Accumulator)
    dot.set_defaults(run=in_flags(_cmd_dot, (Accumulator,)))
