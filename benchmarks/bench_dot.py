"""MX block dot-product throughput: mxsim's bit-exact datapath beside float32 NumPy.

Vector part: both operands hold 2^log2n elements (n / k blocks each). Baseline, measured in the
same run: ``np.einsum('ij,ij->i')`` over the dequantized float32 blocks (a float dot, not
bit-exact), and the same einsum fed straight from the codes through a float32 lookup table.
mxsim runs ``mxsim.dot`` (the whole DotGeneral: per-block registers, output rounding, fp32 across
blocks) in ``exact`` and ``aligned`` modes. Figures are in elements of one operand per second.

GEMM part: A (M, K) times B (N, K) into (M, N), M = N = --gemm-mn, K = --gemm-k: a float32
matmul of the dequantized operands (the baseline), today's ``aligned`` presets (F=13 W=24,
F=25 W=36) and the fused-step presets of real units (Hopper wgmma, Blackwell mxf8f6f4 and MXDOTP
on MXFP8 E4M3; Blackwell mxf4nvf4 on MXFP4, with aligned on MXFP4 beside it). Figures are in
products (M * N * K) per second, with how many times faster the matmul is ("matmul / x") and the
rate relative to aligned F=13 W=24 on the same format ("x / aligned").

Figures are medians of --repeat runs.

    python benchmarks/bench_dot.py [--log2n 24] [--repeat 5] [--row 4096] [--gemm-mn 128] [--gemm-k 1024]
"""

from __future__ import annotations

import argparse
import time

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


# a custom MX block of FNUZ E4M3 elements (CDNA3 has no block scales: its tensors carry scales of 1 and
# quantize's scales do no harm to the timing)
FNUZ_E4M3 = {"name": "mx_fp8_e4m3fnuz", "element": "fp8_e4m3fnuz"}

GEMM_CASES = [
    ("mxfp8_e4m3", "aligned F=13 W=24", "hopper_fp8_like"),
    ("mxfp8_e4m3", "aligned F=25 W=36", "blackwell_fp8_like"),
    ("mxfp8_e4m3", "fused hopper_fp8_wgmma", "hopper_fp8_wgmma"),
    ("mxfp8_e4m3", "fused blackwell_mxf8f6f4", "blackwell_mxf8f6f4"),
    ("mxfp8_e4m3", "fused mxdotp_fp8", "mxdotp_fp8"),
    ("mxfp4_e2m1", "aligned F=13 W=24", "hopper_fp8_like"),
    ("mxfp4_e2m1", "fused blackwell_mxf4nvf4", "blackwell_mxf4nvf4"),
    # the other units of docs/numerics.md section 6.1
    ("mxfp8_e4m3", "fused hopper_fp8_wgmma_f16", "hopper_fp8_wgmma_f16"),
    ("mxfp8_e4m3", "fused ada_fp8_mma", "ada_fp8_mma"),
    ("mxfp8_e4m3", "fused ada_fp8_mma_f16", "ada_fp8_mma_f16"),
    ("mxfp8_e4m3", "fused rtx_blackwell_f8f6f4", "rtx_blackwell_f8f6f4"),
    ("mxfp8_e4m3", "fused rtx_blackwell_f8f6f4_f16", "rtx_blackwell_f8f6f4_f16"),
    ("mxfp8_e4m3", "fused mxdotp_fp8_bf16", "mxdotp_fp8_bf16"),
    ("mxfp6_e3m2", "fused mxdotp_fp6", "mxdotp_fp6"),
    ("mxfp6_e3m2", "fused mxdotp_fp6_bf16", "mxdotp_fp6_bf16"),
    ("mxfp4_e2m1", "fused mxdotp_fp4", "mxdotp_fp4"),
    ("mxfp4_e2m1", "fused mxdotp_fp4_bf16", "mxdotp_fp4_bf16"),
    ("mxint8", "fused mxdotp_int8", "mxdotp_int8"),
    ("mxint8", "fused mxdotp_int8_bf16", "mxdotp_int8_bf16"),
    ("fnuz_e4m3", "fused cdna3_fp8_mfma", "cdna3_fp8_mfma"),
]


def gemm(args) -> None:
    m = n = args.gemm_mn
    k = args.gemm_k
    products = m * n * k
    clock = time.process_time if args.cpu_time else time.perf_counter
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, 1, k)).astype(np.float32)
    y = rng.standard_normal((n, k)).astype(np.float32)
    print(f"\nGEMM M = N = {m}, K = {k} ({products / 1e6:.1f} M products); medians of {args.repeat} runs")
    print(f"{'operation':48} {'M prod/s':>10} {'matmul / x':>11} {'x / aligned':>12} {'x / bw_mxf8f6f4':>16}")
    aligned = {}
    baseline = None
    cases = [case for case in GEMM_CASES if args.cases is None or case[2] in args.cases.split(",")]
    for name, label, preset in cases:
        fmt = _block_format(name)
        if fmt is None:
            print(f"{'mxsim.dot ' + name + ' ' + label:48} skipped: the FNUZ formats are not in this build")
            continue
        a, b = mxsim.quantize(x, fmt), mxsim.quantize(y, fmt)
        if baseline is None:
            da, db = a.dequantize()[:, 0, :], b.dequantize()
            baseline = median_rate(lambda da=da, db=db: da @ db.T, products, args.repeat, clock)
            print(f"{'float32 matmul (dequantized ' + name + ')':48} {baseline / 1e6:10.1f} {1.0:11.1f}")
        acc = mxsim.Accumulator.preset(preset)
        rate = median_rate(lambda a=a, b=b, acc=acc: mxsim.dot(a, b, acc), products, args.repeat, clock)
        aligned.setdefault(name, rate)
        if preset == "blackwell_mxf8f6f4":
            aligned["blackwell_mxf8f6f4"] = rate
        versus = rate / aligned["blackwell_mxf8f6f4"] if "blackwell_mxf8f6f4" in aligned else float("nan")
        ratios = f"{baseline / rate:11.1f} {rate / aligned[name]:12.3f} {versus:16.3f}"
        print(f"{'mxsim.dot ' + name + ' ' + label:48} {rate / 1e6:10.1f} {ratios}")


def _block_format(name: str):
    """A catalogue block format, or the FNUZ E4M3 MX block (None where this build lacks FNUZ)."""
    if name != "fnuz_e4m3":
        return mxsim.get_format(name)
    try:
        element = mxsim.get_format(FNUZ_E4M3["element"])
    except ValueError:
        return None
    return mxsim.formats.BlockFormat(FNUZ_E4M3["name"], element, 32, mxsim.get_format("e8m0"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--row", type=int, default=4096, help="elements per DotGeneral row (K)")
    parser.add_argument("--gemm-mn", type=int, default=128, help="M = N of the GEMM part")
    parser.add_argument("--gemm-k", type=int, default=1024, help="K of the GEMM part")
    parser.add_argument("--part", choices=("all", "vector", "gemm"), default="all")
    parser.add_argument("--cpu-time", action="store_true", help="GEMM part: time in CPU seconds (default: wall)")
    parser.add_argument("--cases", default=None, help="GEMM part: only these presets (comma-separated; the "
                        "x / bw_mxf8f6f4 column needs blackwell_mxf8f6f4 among them, first)")
    args = parser.parse_args()
    if args.part != "gemm":
        vector(args)
    if args.part != "vector":
        gemm(args)


def vector(args) -> None:
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
