"""Block quantization throughput: mxsim beside torchao's to_mx / to_dtype (CPU), in one run.

Every operation is timed once per round, the rounds interleaving all operations (so that load
from other processes falls on all of them alike); each row gives the median and the best call in
M elements/s (10^6 per second) and each torchao pairing the ratios mxsim / torchao of both. Two
data sets of 2^log2n float32 values: ``normal`` (standard Gaussian) and ``wide`` (magnitudes
spanning 2^-140 .. 2^120, with zeros, subnormals, Infs and NaNs).

torchao is optional (pip install torch==2.13.0 torchao==0.18.0); it runs with
torch.set_num_threads(--threads) (default 2). Its calls vary by a factor of 3 to 4 from call to
call and run to run: a ``to_mx`` of 2^24 values takes about 50,000 minor page faults (getrusage)
when the allocator hands it fresh memory for its temporaries (about 140-170 M/s alone), and
runs at 500-1000 M/s when it reuses memory (or with THP_MEM_ALLOC_ENABLE=1, about 500 M/s);
its best call is such a call, so the best-call ratios swing with it. ``--baseline DIR`` also times the default-path
mxsim operations of another checkout (a directory holding its ``mxsim`` package, e.g. from
``git archive <commit> | tar -x -C DIR``), interleaved with this one.

    python benchmarks/bench_blocks.py [--log2n 24] [--repeat 11] [--threads 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import mxsim
from mxsim import tensor_pack

try:
    import torch
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
except ImportError:
    torch = None

# mxsim format -> torchao element dtype name
TORCH_ELEMENTS = {"mxfp8_e4m3": "float8_e4m3fn", "mxfp6_e3m2": "fp6_e3m2", "mxfp4_e2m1": "float4_e2m1fn_x2"}
# (mxsim row, torchao row, target ratio by median, target ratio by best call or None)
TARGETS = [
    ("mxfp8_e4m3 quantize [normal]", "torchao mxfp8_e4m3 to_mx [normal]", 1.2, 1.0),
    ("mxfp8_e4m3 quantize [wide]", "torchao mxfp8_e4m3 to_mx [wide]", 1.2, 1.0),
    ("mxfp4_e2m1 quantize+pack [normal]", "torchao mxfp4_e2m1 to_mx [normal]", 3.0, None),
    ("mxfp8_e4m3 dequantize [normal]", "torchao mxfp8_e4m3 to_dtype [normal]", 1.5, None),
    ("mxfp4_e2m1 dequantize [normal]", "torchao mxfp4_e2m1 to_dtype [normal]", 1.5, None),
]


def datasets(n: int) -> dict[str, np.ndarray]:
    """The two float32 inputs (fixed seed)."""
    rng = np.random.default_rng(0)
    normal = rng.standard_normal(n).astype(np.float32)
    exponent = rng.integers(-140, 121, n)
    wide = np.ldexp(rng.uniform(1.0, 2.0, n), exponent) * rng.choice([-1.0, 1.0], n)
    wide = wide.astype(np.float32)  # below 2^-126: fp32 subnormals (and zeros below 2^-149)
    special = rng.random(n)
    wide[special < 1e-4] = np.nan
    wide[(special >= 1e-4) & (special < 2e-4)] = np.inf
    wide[(special >= 2e-4) & (special < 3e-4)] = -np.inf
    wide[(special >= 3e-4) & (special < 5e-3)] = 0.0
    return {"normal": normal, "wide": wide}


def load_baseline(directory: str):
    """The ``mxsim`` package of another checkout, imported as ``mxsim_baseline`` (its imports
    are relative, so it runs beside this one)."""
    root = Path(directory) / "mxsim"
    spec = importlib.util.spec_from_file_location(
        "mxsim_baseline", root / "__init__.py", submodule_search_locations=[str(root)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["mxsim_baseline"] = module
    spec.loader.exec_module(module)
    return module, importlib.import_module("mxsim_baseline.tensor_pack")


def mxsim_operations(prefix: str, package, tensor_pack, data, full: bool) -> list:
    """(label, callable) of the default-path mxsim operations."""
    ops = []
    formats = list(TORCH_ELEMENTS) if full else ["mxfp8_e4m3", "mxfp4_e2m1"]
    for name in formats:
        for set_name, x in data.items():
            ops.append((f"{prefix}{name} quantize [{set_name}]", lambda x=x, name=name: package.quantize(x, name)))
        x = data["normal"]
        ops.append(
            (
                f"{prefix}{name} quantize+pack [normal]",
                lambda x=x, name=name: tensor_pack.pack(package.quantize(x, name)),
            )
        )
        tensor = package.quantize(x, name)
        ops.append((f"{prefix}{name} dequantize [normal]", tensor.dequantize))
        if full:
            payload = tensor_pack.pack(tensor)
            ops.append((f"{prefix}{name} pack [normal]", lambda t=tensor: tensor_pack.pack(t)))
            ops.append(
                (f"{prefix}{name} unpack [normal]", lambda p=payload, name=name, shape=x.shape: tensor_pack.unpack(p, name, shape))
            )
            ops.append(
                (
                    f"{prefix}{name} unpack+dequantize [normal]",
                    lambda p=payload, name=name, shape=x.shape: tensor_pack.dequantize_packed(p, name, shape),
                )
            )
    return ops


def torchao_operations(data, full: bool) -> list:
    ops = []
    formats = list(TORCH_ELEMENTS) if full else ["mxfp8_e4m3", "mxfp4_e2m1"]
    for name in formats:
        torch_name = TORCH_ELEMENTS[name]
        elem = getattr(torch, torch_name) if hasattr(torch, torch_name) else torch_name
        for set_name, x in data.items():
            hp = torch.from_numpy(x).reshape(-1, 32)
            ops.append((f"torchao {name} to_mx [{set_name}]", lambda hp=hp, elem=elem: to_mx(hp, elem, 32)))
        scale, lp = to_mx(torch.from_numpy(data["normal"]).reshape(-1, 32), elem, 32)
        ops.append(
            (
                f"torchao {name} to_dtype [normal]",
                lambda lp=lp, scale=scale, elem=elem: to_dtype(lp, scale, elem, 32, torch.float32),
            )
        )
    return ops


def run_interleaved(ops: list, repeat: int) -> dict[str, list[float]]:
    """Seconds of each call: one warm-up round, then ``repeat`` rounds over all operations."""
    for _, function in ops:
        function()
    times: dict[str, list[float]] = {label: [] for label, _ in ops}
    for _ in range(repeat):
        for label, function in ops:
            start = time.perf_counter()
            function()
            times[label].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads for torchao")
    parser.add_argument("--baseline", help="directory holding another checkout's mxsim package")
    parser.add_argument("--full", action="store_true", help="also MXFP6, pack, unpack, unpack+dequantize")
    args = parser.parse_args()
    n = 1 << args.log2n
    data = datasets(n)
    ops = [("numpy copy [normal]", data["normal"].copy)]
    ops += mxsim_operations("", mxsim, tensor_pack, data, args.full)
    if args.baseline:
        package, baseline_pack = load_baseline(args.baseline)
        ops += mxsim_operations("baseline ", package, baseline_pack, data, args.full)
    if torch is not None:
        torch.set_num_threads(args.threads)
        ops += torchao_operations(data, args.full)
    times = run_interleaved(ops, args.repeat)
    median = {label: n / statistics.median(t) for label, t in times.items()}
    best = {label: n / min(t) for label, t in times.items()}
    print(f"n = 2^{args.log2n} float32 per call; {args.repeat} interleaved rounds; M = 10^6 elements/s")
    if torch is not None:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"\n{'operation':48} {'median M/s':>11} {'best M/s':>9}")
    for label, _ in ops:
        print(f"{label:48} {median[label] / 1e6:11.1f} {best[label] / 1e6:9.1f}")
    if torch is not None:
        print(f"\n{'mxsim / torchao':48} {'median':>8} {'target':>7} {'best':>7} {'target':>7}")
        for ours, theirs, want_median, want_best in TARGETS:
            if ours not in median or theirs not in median:
                continue
            r_median, r_best = median[ours] / median[theirs], best[ours] / best[theirs]
            ok = r_median >= want_median and (want_best is None or r_best >= want_best)
            best_target = "-" if want_best is None else f"{want_best:.1f}x"
            print(
                f"{ours:48} {r_median:7.2f}x {want_median:6.1f}x {r_best:6.2f}x {best_target:>7}"
                f"  {'met' if ok else 'NOT met'}"
            )
    if args.baseline:
        print(f"\n{'this checkout / baseline':48} {'median':>8} {'best':>7}")
        for label, _ in ops:
            if f"baseline {label}" in median:
                other = f"baseline {label}"
                print(f"{label:48} {median[label] / median[other]:7.2f}x {best[label] / best[other]:6.2f}x")


if __name__ == "__main__":
    main()
