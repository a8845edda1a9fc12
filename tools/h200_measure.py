"""Rerun the H200 FP8 measurements on any CUDA GPU and write them in the shared data's layout.

Usage: ``python tools/h200_measure.py --out h200.npz [--seed N]``. Then
``python tools/make_silicon_corpus.py h200.npz tests/data/h200_corpus.npz`` makes a corpus from it,
and ``pytest tests/silicon/test_h200_corpus.py`` compares mxsim with it (docs/silicon.md).

**This script cannot run in CI**: it needs a CUDA GPU (Hopper, sm_90, for the wgmma paths; the
``mma.sync`` kernel runs on sm_89 and later) with torch (``torch._scaled_mm``, ``float8`` dtypes),
Triton (``tl.dot`` on FP8 with ``max_num_imprecise_acc`` and ``out_dtype``) and CuPy (NVRTC, for the
``mma.sync`` kernel). CI only imports it (tests/silicon/test_h200_corpus.py): every GPU import is inside
the functions that use it, and :func:`main` refuses to start without CUDA.

What it writes (the layout of ../shared/silicon/h200/README.md; FP8 codes as uint8, D as the
output type; TAG in e4m3_e4m3, e4m3_e5m2, e5m2_e4m3, e5m2_e5m2, A's format first):

* ``A_TAG``, ``B_TAG`` (256, 128): random finite FP8 codes (a few zeros); vector (i, j) is row i of
  A with row j of B; the K = 32 runs read the first 32 columns;
* ``C_TAG`` (256, 256) float32: by (i + j) mod 8: +0, -0, a random normal value, -S1 (S1: the
  first 32 products' sum, computed exactly and rounded to fp32), -S1 (1 + 2^-d) and -S1 (1 - 2^-d)
  with d = 1 + (i mod 20), a tiny value (2^-130 .. 2^-100), and NaN/+-Inf/+-max in turn;
* ``k32_native_TAG``, ``k128_native_TAG``: Triton ``tl.dot(a, b, acc)``, fp32, K = 32 / 128;
* ``k32_imp32_TAG``, ``k128_imp32_TAG``: the same with ``max_num_imprecise_acc=32``;
* ``k32_f16_TAG`` float16: ``tl.dot(a, b, fp16(C), out_dtype=tl.float16)``, K = 32;
* ``mma_k32_TAG`` float32, ``mma_k32_f16_TAG`` float16: ``mma.sync.aligned.m16n8k32.row.col``
  with C (fp32, or fp16(C)), one instruction per 16 x 8 tile (CuPy RawKernel, inline PTX; a
  fragment-layout self-check with exact small values runs first);
* ``scaled_k{32,128}_fast{1,0}_TAG`` float32: ``torch._scaled_mm(a, b.T, scales 1, float32,
  use_fast_accum)``, C = 0 (not for E5M2 x E5M2, which cuBLASLt does not take);
* ``L_A_e4m3_e4m3``, ``L_B_e4m3_e4m3`` (128, 4096): E4M3 codes of magnitudes 2^-4 .. 16, and
  ``scaled_k{256,512,1024,2048,4096}_fast{1,0}_e4m3_e4m3`` (128, 128) over the first K columns.

NaN results are kept as the chip writes them (0x7FFFFFFF, 0x7FFF). The SASS of the mma.sync
kernels (``cuobjdump -sass``) is not produced here. The file is written to a temporary name and
renamed, so a half-written file is never left at ``--out``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

TAGS = ("e4m3_e4m3", "e4m3_e5m2", "e5m2_e4m3", "e5m2_e5m2")
LONG_K = (256, 512, 1024, 2048, 4096)
#: every array name written (TAG and K filled in)
ARRAYS = (
    ["A_{tag}", "B_{tag}", "C_{tag}", "k32_native_{tag}", "k128_native_{tag}", "k32_imp32_{tag}", "k128_imp32_{tag}",
     "k32_f16_{tag}", "mma_k32_{tag}", "mma_k32_f16_{tag}"]
    + [f"scaled_k{k}_fast{f}_{{tag}}" for k in (32, 128) for f in (1, 0)]
    + ["L_A_e4m3_e4m3", "L_B_e4m3_e4m3"] + [f"scaled_k{k}_fast{f}_e4m3_e4m3" for k in LONG_K for f in (1, 0)]
)
N = 256
K = 128


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


# --- operands (NumPy only) ---------------------------------------------------------------------
def fp8_values(fmt: str) -> np.ndarray:
    """The value of every FP8 code (NaN for NaN, +-Inf for E5M2's infinities), by the OCP definition."""
    mantissa, bias = (3, 7) if fmt == "e4m3" else (2, 15)
    values = np.empty(256)
    for code in range(256):
        top = (1 << (7 - mantissa)) - 1  # the largest exponent field
        sign, exponent, fraction = code >> 7, (code >> mantissa) & top, code & ((1 << mantissa) - 1)
        if fmt == "e4m3" and exponent == top and fraction == (1 << mantissa) - 1:
            value = math.nan
        elif fmt == "e5m2" and exponent == top:
            value = math.inf if fraction == 0 else math.nan
        elif exponent == 0:
            value = fraction * 2.0 ** (1 - bias - mantissa)
        else:
            value = (1 + fraction / (1 << mantissa)) * 2.0 ** (exponent - bias)
        values[code] = -value if sign else value
    return values


def random_codes(rng, fmt: str, shape, low: float, high: float, p_zero: float = 0.05) -> np.ndarray:
    """Finite codes with magnitudes in [low, high] (and +-0 with probability ``p_zero``)."""
    values = fp8_values(fmt)
    allowed = np.flatnonzero(np.isfinite(values) & (np.abs(values) >= low) & (np.abs(values) <= high))
    codes = rng.choice(allowed, size=shape).astype(np.uint8)
    return np.where(rng.random(shape) < p_zero, np.uint8(0), codes)


def c_grid(rng, a_values: np.ndarray, b_values: np.ndarray) -> np.ndarray:
    """C per vector (i, j), by (i + j) mod 8 (see the module docstring)."""
    c = np.zeros((N, N), np.float32)
    big = [math.nan, math.inf, -math.inf, float(np.finfo(np.float32).max), -float(np.finfo(np.float32).max)]
    for i in range(N):
        for j in range(N):
            kind = (i + j) % 8
            if kind == 1:
                c[i, j] = -0.0
            elif kind == 2:
                c[i, j] = rng.standard_normal() * 2.0 ** rng.integers(-8, 9)
            elif kind in (3, 4, 5):
                s1 = math.fsum((a_values[i, :32] * b_values[j, :32]).tolist())  # exact sum, rounded once
                d = 1 + i % 20
                c[i, j] = -s1 * {3: 1.0, 4: 1 + 2.0**-d, 5: 1 - 2.0**-d}[kind]
            elif kind == 6:
                c[i, j] = rng.choice([-1, 1]) * 2.0 ** rng.integers(-130, -99)
            elif kind == 7:
                c[i, j] = big[(i * N + j) // 8 % len(big)]
    return c


# --- the GPU runs (imports inside) -------------------------------------------------------------
def torch_fp8(codes: np.ndarray, fmt: str):
    import torch
    dtype = torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2
    return torch.from_numpy(np.ascontiguousarray(codes)).cuda().view(dtype)


def triton_dot(a, b, c, k: int, imprecise: int = 0, fp16: bool = False) -> np.ndarray:
    """Triton ``tl.dot`` of every pair of rows (a (256, k), b (256, k) FP8 tensors; c (256, 256)
    float32): D = C + A B^T in 64 x 64 tiles, one ``tl.dot`` over all of k."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a_ptr, b_ptr, c_ptr, d_ptr, KK: tl.constexpr, IMP: tl.constexpr, F16: tl.constexpr):
        rm = tl.program_id(0) * 64 + tl.arange(0, 64)
        rn = tl.program_id(1) * 64 + tl.arange(0, 64)
        rk = tl.arange(0, KK)
        x = tl.load(a_ptr + rm[:, None] * KK + rk[None, :])
        y = tl.load(b_ptr + rn[None, :] * KK + rk[:, None])
        acc = tl.load(c_ptr + rm[:, None] * 256 + rn[None, :])
        if F16:
            out = tl.dot(x, y, acc.to(tl.float16), out_dtype=tl.float16)
        elif IMP > 0:
            out = tl.dot(x, y, acc, max_num_imprecise_acc=IMP)
        else:
            out = tl.dot(x, y, acc)
        tl.store(d_ptr + rm[:, None] * 256 + rn[None, :], out)

    d = torch.empty((N, N), dtype=torch.float16 if fp16 else torch.float32, device="cuda")
    kernel[(N // 64, N // 64)](a, b, torch.from_numpy(c).cuda(), d, KK=k, IMP=imprecise, F16=fp16)
    torch.cuda.synchronize()
    return d.cpu().numpy()


def mma_source(fa: str, fb: str) -> str:
    """The mma.sync kernel for one operand pair: fp32 D (``f16 == 0``) or fp16 D."""
    return r"""
#include <cuda_fp16.h>
extern "C" __global__ void mma_k32(const unsigned char* a, const unsigned char* b, const float* c, void* d, int f16) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    int row0 = blockIdx.x * 16, col0 = blockIdx.y * 8;
    unsigned a0, a1, a2, a3, b0, b1;
    a0 = *(const unsigned*)(a + (row0 + g) * 32 + 4 * t);
    a1 = *(const unsigned*)(a + (row0 + g + 8) * 32 + 4 * t);
    a2 = *(const unsigned*)(a + (row0 + g) * 32 + 16 + 4 * t);
    a3 = *(const unsigned*)(a + (row0 + g + 8) * 32 + 16 + 4 * t);
    b0 = *(const unsigned*)(b + (col0 + g) * 32 + 4 * t);
    b1 = *(const unsigned*)(b + (col0 + g) * 32 + 16 + 4 * t);
    int r0 = row0 + g, r1 = row0 + g + 8, cc = col0 + 2 * t;
    if (!f16) {
        float d0 = c[r0 * 256 + cc], d1 = c[r0 * 256 + cc + 1], d2 = c[r1 * 256 + cc], d3 = c[r1 * 256 + cc + 1];
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.PA.PB.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        float* out = (float*)d;
        out[r0 * 256 + cc] = d0; out[r0 * 256 + cc + 1] = d1; out[r1 * 256 + cc] = d2; out[r1 * 256 + cc + 1] = d3;
    } else {
        __half2 c0 = __floats2half2_rn(c[r0 * 256 + cc], c[r0 * 256 + cc + 1]);
        __half2 c1 = __floats2half2_rn(c[r1 * 256 + cc], c[r1 * 256 + cc + 1]);
        unsigned d0 = *(unsigned*)&c0, d1 = *(unsigned*)&c1;
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.PA.PB.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
                     : "+r"(d0), "+r"(d1)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        unsigned short* out = (unsigned short*)d;
        out[r0 * 256 + cc] = d0 & 0xFFFF; out[r0 * 256 + cc + 1] = d0 >> 16;
        out[r1 * 256 + cc] = d1 & 0xFFFF; out[r1 * 256 + cc + 1] = d1 >> 16;
    }
}
""".replace("PA", fa).replace("PB", fb)


def mma_dot(a_codes: np.ndarray, b_codes: np.ndarray, fa: str, fb: str, c: np.ndarray, fp16: bool) -> np.ndarray:
    """``mma.sync.m16n8k32`` of every pair of rows (the first 32 columns), with C (fp16(C) for fp16)."""
    import cupy as cp

    kernel = cp.RawKernel(mma_source(fa, fb), "mma_k32", options=("--gpu-architecture=sm_90",))
    a = cp.asarray(np.ascontiguousarray(a_codes[:, :32]))
    b = cp.asarray(np.ascontiguousarray(b_codes[:, :32]))
    d = cp.zeros((N, N), dtype=cp.float16 if fp16 else cp.float32)
    kernel((N // 16, N // 8), (32,), (a, b, cp.asarray(c), d, np.int32(fp16)))
    return cp.asnumpy(d)


def check_mma_layout() -> None:
    """The fragment layout self-check: exact small values (one nonzero product per vector) must
    give A B^T exactly, else the loads do not follow the PTX fragment layout: SystemExit."""
    rng = np.random.default_rng(1)
    values = fp8_values("e4m3")
    one, two = int(np.flatnonzero(values == 1.0)[0]), int(np.flatnonzero(values == 2.0)[0])
    a = np.zeros((N, 32), np.uint8)
    b = np.zeros((N, 32), np.uint8)
    ka, kb = rng.integers(0, 32, N), rng.integers(0, 32, N)
    a[np.arange(N), ka], b[np.arange(N), kb] = one, two
    want = 2.0 * (ka[:, None] == kb[None, :])
    got = mma_dot(a, b, "e4m3", "e4m3", np.zeros((N, N), np.float32), False)
    if not np.array_equal(got, want):
        raise SystemExit("mma.sync fragment layout self-check failed: the kernel's loads do not match the PTX layout")


def scaled_mm(a, b, fast: bool) -> np.ndarray:
    """``torch._scaled_mm(a, b.T)`` with scales 1 and a float32 output."""
    import torch
    one = torch.ones((), dtype=torch.float32, device="cuda")
    d = torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast)
    torch.cuda.synchronize()
    return d.cpu().numpy()


def measure(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    check_mma_layout()
    for tag in TAGS:
        fa, fb = tag.split("_")
        a_codes = random_codes(rng, fa, (N, K), 2.0**-6, 16.0)
        b_codes = random_codes(rng, fb, (N, K), 2.0**-6, 16.0)
        c = c_grid(rng, fp8_values(fa)[a_codes], fp8_values(fb)[b_codes])
        out[f"A_{tag}"], out[f"B_{tag}"], out[f"C_{tag}"] = a_codes, b_codes, c
        for k in (32, 128):
            a, b = torch_fp8(a_codes[:, :k], fa), torch_fp8(b_codes[:, :k], fb)
            out[f"k{k}_native_{tag}"] = triton_dot(a, b, c, k)
            out[f"k{k}_imp32_{tag}"] = triton_dot(a, b, c, k, imprecise=32)
            if tag != "e5m2_e5m2":
                for fast in (1, 0):
                    out[f"scaled_k{k}_fast{fast}_{tag}"] = scaled_mm(a, b, bool(fast))
        a, b = torch_fp8(a_codes[:, :32], fa), torch_fp8(b_codes[:, :32], fb)
        out[f"k32_f16_{tag}"] = triton_dot(a, b, c, 32, fp16=True)
        out[f"mma_k32_{tag}"] = mma_dot(a_codes, b_codes, fa, fb, c, False)
        out[f"mma_k32_f16_{tag}"] = mma_dot(a_codes, b_codes, fa, fb, c, True)
    long_a = random_codes(rng, "e4m3", (128, 4096), 2.0**-4, 16.0, p_zero=0.0)
    long_b = random_codes(rng, "e4m3", (128, 4096), 2.0**-4, 16.0, p_zero=0.0)
    out["L_A_e4m3_e4m3"], out["L_B_e4m3_e4m3"] = long_a, long_b
    for k in LONG_K:
        a, b = torch_fp8(long_a[:, :k], "e4m3"), torch_fp8(long_b[:, :k], "e4m3")
        for fast in (1, 0):
            out[f"scaled_k{k}_fast{fast}_e4m3_e4m3"] = scaled_mm(a, b, bool(fast))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the .npz to write (the shared data's layout)")
    parser.add_argument("--seed", type=int, default=20261128)
    args = parser.parse_args(argv)
    if not cuda_available():
        raise SystemExit("h200_measure needs a CUDA GPU with torch, Triton and CuPy; none was found (this script "
                         "cannot run in CI)")
    arrays = measure(args.seed)
    tmp = args.out + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, args.out)
    print(f"{args.out}: {len(arrays)} arrays")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
