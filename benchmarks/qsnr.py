"""Quantization SNR of every block format on Gaussian data (and a heavy-tailed set).

QSNR = 10 log10(sum x^2 / sum (x - Q(x))^2), blocks along the last axis, default options
(floor scale rule, rne). Also FP8 E4M3 with one per-tensor scale (amax -> 448), the scalar FP8
baseline of the BDR paper (Rouhani et al., ISCA 2023), which reports MX9 about 3.6 dB above
MSFP16 and about 16 dB above FP8 on such data.

    python benchmarks/qsnr.py [--log2n 20] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

import mxsim


def qsnr(x: np.ndarray, q: np.ndarray) -> float:
    x64, q64 = x.astype(np.float64), q.astype(np.float64)
    return float(10 * np.log10(np.sum(x64**2) / np.sum((x64 - q64) ** 2)))


def per_tensor_fp8(x: np.ndarray) -> np.ndarray:
    scale = float(np.max(np.abs(x))) / 448.0
    return mxsim.decode(mxsim.encode(x.astype(np.float64) / scale, "fp8_e4m3"), "fp8_e4m3").astype(np.float64) * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = 1 << args.log2n
    data = {
        "gaussian": rng.standard_normal(n).astype(np.float32),
        "student-t(3)": rng.standard_t(3, n).astype(np.float32),
    }
    print(f"QSNR in dB, {n} values per distribution, seed {args.seed}")
    print(f"{'format':14} {'bits/elem':>9} " + " ".join(f"{name:>13}" for name in data))
    rows = [("fp8_e4m3/tensor", 8.0, {name: qsnr(x, per_tensor_fp8(x)) for name, x in data.items()})]
    for name in mxsim.format_names("block"):
        fmt = mxsim.get_format(name)
        scores = {label: qsnr(x, mxsim.quantize(x, name).dequantize(np.float64)) for label, x in data.items()}
        rows.append((name, float(fmt.bits_per_element), scores))
    for name, bits, scores in rows:
        print(f"{name:14} {bits:9.3f} " + " ".join(f"{scores[label]:13.2f}" for label in data))
    gaussian = {name: scores["gaussian"] for name, _, scores in rows}
    print(
        f"\nGaussian: MX9 - MSFP16 = {gaussian['mx9'] - gaussian['msfp16']:+.2f} dB (paper: about +3.6); "
        f"MX9 - FP8 E4M3 per tensor = {gaussian['mx9'] - gaussian['fp8_e4m3/tensor']:+.2f} dB (paper: about +16); "
        f"MX9 - MXFP8 E4M3 = {gaussian['mx9'] - gaussian['mxfp8_e4m3']:+.2f} dB"
    )
    ordered = gaussian["mx9"] > gaussian["msfp16"] > gaussian["fp8_e4m3/tensor"]
    print(f"ordering MX9 > MSFP16 > FP8 E4M3 reproduced: {ordered}")


if __name__ == "__main__":
    main()
