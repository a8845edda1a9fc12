"""MX block dot-product throughput: mxsim's bit-exact datapath beside np.einsum on float32.

Both operands hold 2^log2n elements (n / k blocks each). Baseline, measured in the same run:
``np.einsum('ij,ij->i')`` over the dequantized float32 blocks (a float dot, not bit-exact), and
the same einsum fed straight from the codes through a float32 lookup table. mxsim runs
``mxsim.dot`` (the whole DotGeneral: per-block registers, output rounding, fp32 across blocks)
in ``exact`` and ``aligned`` modes. Figures are medians of --repeat runs, in elements of one
operand per second, with the ratio to the einsum baseline.

    python benchmarks/bench_dot.py [--log2n 24] [--repeat 5] [--row 4096]
"""

from __future__ import annotations

import argparse

import numpy as np

import mxsim
from mxsim.fast.decode import value_table
from timing import median_rate

CASES = [
    ("mxfp8_e4m3", "exact", mxsim.Accumulator()),
    ("mxfp8_e4m3", "aligned F=25 W=36", mxsim.Accumulator.preset("blackwell_fp8_like")),
    ("mxfp4_e2m1", "exact", mxsim.Accumulator()),
    ("mxfp4_e2m1", "aligned F=13 W=24", mxsim.Accumulator.preset("hopper_fp8_like")),
    ("mxfp8_e5m2", "exact (70-bit sums)", mxsim.Accumulator()),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--row", type=int, default=4096, help="elements per DotGeneral row (K)")
    args = parser.parse_args()
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n // args.row, args.row)).astype(np.float32)
    y = rng.standard_normal((n // args.row, args.row)).astype(np.float32)
    print(f"n = 2^{args.log2n} elements per operand, rows of K = {args.row}; medians of {args.repeat} runs")
    print(f"{'operation':44} {'M elem/s':>10} {'vs einsum':>10}")
    baselines = {}
    for name in sorted({case[0] for case in CASES}):
        a, b = mxsim.quantize(x, name), mxsim.quantize(y, name)
        da = a.dequantize().reshape(-1, 32)
        db = b.dequantize().reshape(-1, 32)
        einsum = median_rate(lambda: np.einsum("ij,ij->i", da, db), n, args.repeat)
        table = value_table(a.fmt.element).astype(np.float32)
        ca, cb = a.codes.reshape(-1, 32), b.codes.reshape(-1, 32)
        from_codes = median_rate(lambda: np.einsum("ij,ij->i", table[ca], table[cb]), n, args.repeat)
        baselines[name] = einsum
        print(f"{'np.einsum float32 ' + name + ' (dequantized)':44} {einsum / 1e6:10.1f} {1.0:10.3f}")
        print(f"{'np.einsum from codes via table ' + name:44} {from_codes / 1e6:10.1f} {from_codes / einsum:10.3f}")
    for name, label, acc in CASES:
        a, b = mxsim.quantize(x, name), mxsim.quantize(y, name)
        repeat = 1 if "e5m2" in name else args.repeat
        rate = median_rate(lambda: mxsim.dot(a, b, acc), n, repeat)
        print(f"{'mxsim.dot ' + name + ' ' + label:44} {rate / 1e6:10.1f} {rate / baselines.get(name, np.nan):10.3f}")


if __name__ == "__main__":
    main()
