"""Block quantization throughput: mxsim beside a NumPy copy and torchao's to_mx / to_dtype (CPU).

Prints the median elements/s of each operation on 2^log2n float32 Gaussian values, and its ratio
to a NumPy copy of the input measured in the same run (memory bandwidth). torchao is optional
(pip install torch==2.13.0 torchao==0.18.0); its CPU figures swing 2-4x between runs.

    python benchmarks/bench_blocks.py [--log2n 24] [--repeat 5]
"""

from __future__ import annotations

import argparse
import numpy as np

import mxsim
from mxsim.tensor_pack import dequantize_packed, pack, unpack
from timing import median_rate

try:
    import torch
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
except ImportError:
    torch = None

FORMATS = {"mxfp8_e4m3": "float8_e4m3fn", "mxfp6_e3m2": "fp6_e3m2", "mxfp4_e2m1": "float4_e2m1fn_x2"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = 1 << args.log2n
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    copy = median_rate(lambda: x.copy(), n, args.repeat)
    print(f"n = 2^{args.log2n} float32; medians of {args.repeat} runs; M = 10^6 elements/s")
    print(f"numpy copy (memory bandwidth): {copy / 1e6:.1f} M/s\n")
    rows = []
    for name, torch_name in FORMATS.items():
        tensor = mxsim.quantize(x, name)
        rows.append((f"{name} quantize", median_rate(lambda: mxsim.quantize(x, name), n, args.repeat)))
        rows.append((f"{name} dequantize", median_rate(lambda: tensor.dequantize(), n, args.repeat)))
        payload = pack(tensor)
        rows.append((f"{name} quantize+pack", median_rate(lambda: pack(mxsim.quantize(x, name)), n, args.repeat)))
        rows.append((f"{name} pack", median_rate(lambda: pack(tensor), n, args.repeat)))
        rows.append((f"{name} unpack", median_rate(lambda: unpack(payload, name, x.shape), n, args.repeat)))
        rows.append(
            (
                f"{name} unpack+dequantize",
                median_rate(lambda: dequantize_packed(payload, name, x.shape), n, args.repeat),
            )
        )
        if torch is not None:
            hp = torch.from_numpy(x).reshape(-1, 32)
            elem = getattr(torch, torch_name) if hasattr(torch, torch_name) else torch_name
            scale, data = to_mx(hp, elem, 32)
            rows.append((f"  torchao {name} to_mx", median_rate(lambda: to_mx(hp, elem, 32), n, args.repeat)))
            rows.append(
                (
                    f"  torchao {name} to_dtype",
                    median_rate(lambda: to_dtype(data, scale, elem, 32, torch.float32), n, args.repeat),
                )
            )
    print(f"{'operation':36} {'M/s':>9} {'/copy':>7}")
    for label, rate in rows:
        print(f"{label:36} {rate / 1e6:9.1f} {rate / copy:7.3f}")


if __name__ == "__main__":
    main()
