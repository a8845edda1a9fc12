"""Element codec throughput: mxsim's fast path beside ml_dtypes casts and a NumPy copy.

For fp32 -> every element format (rne, saturate) and back, prints the median elements/s over
repeated runs, and the ratios to ml_dtypes' astype casts and to a plain copy (memory bandwidth),
all measured in the same run. The machine is noisy: read the medians and ratios, not one run.

    python benchmarks/bench_elements.py [--log2n 24] [--repeat 7]
"""

from __future__ import annotations

import argparse
import numpy as np

import mxsim
from timing import median_rate

try:
    import ml_dtypes
except ImportError:  # the benchmark still runs, without the library baseline
    ml_dtypes = None

FORMATS = {
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "fp6_e3m2": "float6_e3m2fn",
    "fp6_e2m3": "float6_e2m3fn",
    "fp4_e2m1": "float4_e2m1fn",
    "int8": None,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24, help="array size is 2^log2n elements")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per figure (median)")
    args = parser.parse_args()
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    # Gaussian data over several binades, as activations look: exercises normals and subnormals.
    x = rng.standard_normal(n).astype(np.float32)
    copy_rate = median_rate(lambda: x.copy(), n, args.repeat)
    print(f"n = 2^{args.log2n} float32 elements; medians of {args.repeat} runs; M = 10^6 elements/s")
    print(f"numpy copy (memory bandwidth): {copy_rate / 1e6:8.1f} M/s\n")
    header = (
        f"{'format':10} {'encode':>8} {'ml_dtypes':>9} {'ratio':>6} {'/copy':>6}   "
        f"{'decode':>8} {'ml_dtypes':>9} {'ratio':>6} {'/copy':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, ml_name in FORMATS.items():
        encode_rate = median_rate(lambda: mxsim.encode(x, name), n, args.repeat)
        codes = mxsim.encode(x, name)
        decode_rate = median_rate(lambda: mxsim.decode(codes, name), n, args.repeat)
        if ml_dtypes is not None and ml_name is not None:
            ml_type = getattr(ml_dtypes, ml_name)
            ml_encode = median_rate(lambda: x.astype(ml_type), n, args.repeat)
            narrow = x.astype(ml_type)
            ml_decode = median_rate(lambda: narrow.astype(np.float32), n, args.repeat)
            encode_ratio, decode_ratio = f"{encode_rate / ml_encode:6.2f}", f"{decode_rate / ml_decode:6.2f}"
            ml_encode_text, ml_decode_text = f"{ml_encode / 1e6:9.1f}", f"{ml_decode / 1e6:9.1f}"
        else:
            encode_ratio = decode_ratio = f"{'-':>6}"
            ml_encode_text = ml_decode_text = f"{'-':>9}"
        print(
            f"{name:10} {encode_rate / 1e6:8.1f} {ml_encode_text} {encode_ratio} {encode_rate / copy_rate:6.3f}   "
            f"{decode_rate / 1e6:8.1f} {ml_decode_text} {decode_ratio} {decode_rate / copy_rate:6.3f}"
        )


if __name__ == "__main__":
    main()
