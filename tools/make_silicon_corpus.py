"""Make tests/data/h200_corpus.npz, the silicon test corpus, from the shared H200 measurements.

Usage: ``python tools/make_silicon_corpus.py [H200_NPZ] [OUT_NPZ]`` (defaults:
../shared/silicon/h200/h200.npz next to the repository, and tests/data/h200_corpus.npz).
Deterministic: the same input gives the same file (fixed seed, sorted selections, fixed zip
timestamps).

The shared file holds, per operand pair TAG (``e4m3_e4m3``, ``e4m3_e5m2``, ``e5m2_e4m3``,
``e5m2_e5m2``; A's format first), 256 rows of A and of B (FP8 codes, 128 columns), a C grid and
one 256 x 256 D grid per configuration (``k32_native``, ``k128_native``, ``k32_imp32``,
``k128_imp32``, ``k32_f16``, ``mma_k32``, ``mma_k32_f16``, ``scaled_k{32,128}_fast{0,1}``), and
long-K runs (``L_A``/``L_B``: 128 rows of 4,096 codes; ``scaled_k{256..4096}_fast{0,1}``). See
the shared README for how each was measured.

The corpus keeps, per TAG, a selection of vectors (i, j) shared by all configurations of that
TAG: every vector of each class below up to ``CLASS_CAP`` (``MISS_CAP`` for the classes where a
model misses the chip; a seeded sample beyond), plus a seeded
random sample of ``RANDOM`` vectors. Per vector it stores the row indices i and j (into the TAG's
A and B rows that the vectors use, stored once: ``TAG__a``, ``TAG__b``), C (fp32 word) and D of
every configuration (fp32 words, fp16 words for
``*_f16``); ``TAG__classes`` holds each vector's class bits (:data:`CLASSES`). Classes:

* C: NaN or Inf; |C| >= 2^64 ("max"); 0 < |C| < 2^-60 ("tiny"); +-0; C cancelling the products
  (|D| <= 2^-8 |C| for the native K = 32 run);
* D of some configuration NaN or Inf, zero, fp32 subnormal, or below fp16's normal range (fp16 D);
* where the configurations differ: promotion (imp32 vs native, fast0 vs fast1), the mma.sync path
  (mma vs wgmma, fp32 and fp16 D);
* where a model misses: ``hopper_fp8_wgmma_f16`` against ``k32_f16`` (fp16 D underflow), and the
  contract's mma.sync model (docs/numerics.md section 6.1: two chained F = 25 steps over k = 0, 1
  mod 4 and k = 2, 3 mod 4, then C in fp32 nearest-even) against ``mma_k32`` (the mixed pairs).

Long K (``long``): ``LONG_ROWS`` seeded rows of L_A and of L_B (all 4,096 columns), every pair of
them, and D of every ``scaled_k*`` run for those pairs.
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mxsim  # noqa: E402
from mxsim import Accumulator, MXTensor  # noqa: E402

TAGS = ("e4m3_e4m3", "e4m3_e5m2", "e5m2_e4m3", "e5m2_e5m2")
CONFIGS = ("k32_native", "k128_native", "k32_imp32", "k128_imp32", "k32_f16", "mma_k32", "mma_k32_f16",
           "scaled_k32_fast1", "scaled_k32_fast0", "scaled_k128_fast1", "scaled_k128_fast0")
LONG_K = (256, 512, 1024, 2048, 4096)
CLASSES = ("random", "c_nan_inf", "c_max", "c_tiny", "c_zero", "c_cancels", "d_nan_inf", "d_zero", "d_subnormal",
           "d_f16_underflow", "promotion_matters", "mma_matters", "mma_f16_matters", "wgmma_f16_miss",
           "mma_model_miss")
CLASS_CAP = 128
RANDOM = 320
LONG_ROWS = 12
PREFERRED_ROWS = 96
MISS_CAP = 512  # the classes where a model misses the chip (``*_miss``): all of them up to this many
SEED = 20261128
BLOCK = {"e4m3": "mxfp8_e4m3", "e5m2": "mxfp8_e5m2"}


def tensor(codes: np.ndarray, element: str) -> MXTensor:
    """Rows of FP8 codes as an MX tensor with unit scales (E8M0 127)."""
    rows, k = codes.shape
    return MXTensor.from_codes(np.full((rows, k // 32), 127, np.uint8), np.ascontiguousarray(codes), BLOCK[element])


def mma_model(a: np.ndarray, b: np.ndarray, fa: str, fb: str, c: np.ndarray) -> np.ndarray:
    """fp32 words of the contract's mma.sync.m16n8k32 model on sm_90 (all pairs of rows): the columns
    k = 0, 1 mod 4 first, then k = 2, 3 mod 4, two fused steps of 16 (F = 25, truncate, fp32 toward
    zero) from +0, and C added in fp32 nearest-even (promotion every 32)."""
    order = np.array([k for k in range(32) if k % 4 < 2] + [k for k in range(32) if k % 4 >= 2])
    acc = Accumulator(mode="aligned", frac_bits=25, accumulate="fused", step=16, output_rounding="rtz",
                      nan_bits=0x7FFFFFFF, promote_every=32)
    got = mxsim.dot(tensor(a[:, order], fa), tensor(b[:, order], fb), acc, outer=True, c=c)
    return got.view(np.uint32)


def words(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16 if x.dtype == np.float16 else np.uint32)


def tag_classes(data, tag: str) -> np.ndarray:
    """(256, 256) uint16 class bits of every vector of one TAG."""
    fa, fb = tag.split("_")
    a, b, c = data[f"A_{tag}"], data[f"B_{tag}"], data[f"C_{tag}"]
    d = {name: data[f"{name}_{tag}"] for name in CONFIGS if f"{name}_{tag}" in data}
    bits = np.zeros(c.shape, np.uint16)

    def add(name: str, mask) -> None:
        bits[mask] |= np.uint16(1 << CLASSES.index(name))

    with np.errstate(all="ignore"):
        add("c_nan_inf", ~np.isfinite(c))
        add("c_max", np.isfinite(c) & (np.abs(c) >= 2.0**64))
        add("c_tiny", (c != 0) & (np.abs(c) < 2.0**-60))
        add("c_zero", c == 0)
        native = d["k32_native"]
        add("c_cancels", np.isfinite(c) & (c != 0) & (np.abs(native) <= np.abs(c) * 2.0**-8))
        for name, x in d.items():
            add("d_nan_inf", ~np.isfinite(x))
            add("d_zero", x == 0)
            if x.dtype == np.float16:
                add("d_f16_underflow", np.isfinite(x) & (np.abs(x) < 2.0**-14))
            else:
                add("d_subnormal", np.isfinite(x) & (x != 0) & (np.abs(x) < 2.0**-126))
        differ = lambda x, y: words(x) != words(y)  # noqa: E731
        promotion = differ(d["k32_imp32"], native) | differ(d["k128_imp32"], d["k128_native"])
        for k in (32, 128):
            if f"scaled_k{k}_fast0" in d:
                promotion |= differ(d[f"scaled_k{k}_fast0"], d[f"scaled_k{k}_fast1"])
        add("promotion_matters", promotion)
        add("mma_matters", differ(d["mma_k32"], native))
        add("mma_f16_matters", differ(d["mma_k32_f16"], d["k32_f16"]))
        f16 = mxsim.dot(tensor(a[:, :32], fa), tensor(b[:, :32], fb), "hopper_fp8_wgmma_f16", outer=True,
                        c=c.astype(np.float16).astype(np.float32))  # C = fp16(C), RNE
        add("wgmma_f16_miss", differ(f16, d["k32_f16"]))
        add("mma_model_miss", mma_model(a[:, :32], b[:, :32], fa, fb, c) != words(d["mma_k32"]))
    return bits


def select(bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Flat indices of the chosen vectors, sorted: every member of a class of at most CLASS_CAP,
    CLASS_CAP of a larger class and RANDOM at random (marked with the ``random`` bit in ``bits``).
    The sampled ones are drawn among the vectors of ``PREFERRED_ROWS`` rows of A and of B (and the
    rows the small classes use) where that leaves enough, so that fewer operand rows are stored."""
    flat = bits.reshape(-1)
    small = [np.flatnonzero(flat & (1 << bit)) for bit in range(1, len(CLASSES))]
    caps = [MISS_CAP if CLASSES[bit].endswith("_miss") else CLASS_CAP for bit in range(1, len(CLASSES))]
    chosen = set(np.concatenate([m for m, cap in zip(small, caps) if len(m) <= cap] + [np.zeros(0, np.int64)]).tolist())
    rows_i = set(rng.choice(256, PREFERRED_ROWS, replace=False).tolist()) | {v // 256 for v in chosen}
    rows_j = set(rng.choice(256, PREFERRED_ROWS, replace=False).tolist()) | {v % 256 for v in chosen}
    preferred = np.isin(np.arange(bits.size) // 256, list(rows_i)) & np.isin(np.arange(bits.size) % 256, list(rows_j))
    sample = rng.choice(np.flatnonzero(preferred), RANDOM, replace=False)
    flat[sample] |= np.uint16(1)
    chosen.update(sample.tolist())
    for members, cap in zip(small, caps):
        if len(members) > cap:
            near = members[preferred[members]]
            members = near if len(near) >= cap else members
            chosen.update(rng.choice(members, cap, replace=False).tolist())
    return np.array(sorted(chosen), dtype=np.int64)


def build(data) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    out: dict[str, np.ndarray] = {"classes": np.array(CLASSES)}
    for tag in TAGS:
        bits = tag_classes(data, tag)
        index = select(bits, rng)
        i, j = np.divmod(index, 256)
        flags = bits.reshape(-1)[index]
        rows_a, i_stored = np.unique(i, return_inverse=True)  # only the rows the vectors use
        rows_b, j_stored = np.unique(j, return_inverse=True)
        out[f"{tag}__a"], out[f"{tag}__b"] = data[f"A_{tag}"][rows_a], data[f"B_{tag}"][rows_b]
        out[f"{tag}__i"], out[f"{tag}__j"] = i_stored.astype(np.uint8), j_stored.astype(np.uint8)
        out[f"{tag}__c"] = words(data[f"C_{tag}"][i, j])
        out[f"{tag}__classes"] = flags
        for name in CONFIGS:
            if f"{name}_{tag}" in data:
                out[f"{tag}__{name}"] = words(data[f"{name}_{tag}"][i, j])
    rows_a = np.sort(rng.choice(128, LONG_ROWS, replace=False))
    rows_b = np.sort(rng.choice(128, LONG_ROWS, replace=False))
    out["long__a"], out["long__b"] = data["L_A_e4m3_e4m3"][rows_a], data["L_B_e4m3_e4m3"][rows_b]
    i, j = np.meshgrid(np.arange(LONG_ROWS), np.arange(LONG_ROWS), indexing="ij")
    out["long__i"], out["long__j"] = i.reshape(-1).astype(np.uint8), j.reshape(-1).astype(np.uint8)
    for k in LONG_K:
        for fast in (1, 0):
            grid = data[f"scaled_k{k}_fast{fast}_e4m3_e4m3"][np.ix_(rows_a, rows_b)]
            out[f"long__scaled_k{k}_fast{fast}"] = words(grid).reshape(-1)
    return out


def save_deterministic(arrays: dict[str, np.ndarray], path: Path) -> None:
    """np.savez_compressed with fixed member timestamps (the same arrays give the same bytes),
    written to a temporary name and renamed, so a half-written file is never left at ``path``."""
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asanyarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(2026, 11, 28, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buffer.getvalue(), compresslevel=9)
    tmp.replace(path)


def main(argv: list[str]) -> int:
    shared = next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT / "shared")
    source = Path(argv[0]) if argv else shared / "silicon" / "h200" / "h200.npz"
    target = Path(argv[1]) if len(argv) > 1 else ROOT / "tests" / "data" / "h200_corpus.npz"
    with np.load(source) as data:
        arrays = build({name: data[name] for name in data.files})
    target.parent.mkdir(parents=True, exist_ok=True)
    save_deterministic(arrays, target)
    counts = {tag: len(arrays[f"{tag}__i"]) for tag in TAGS}
    print(f"{target}: {target.stat().st_size} bytes; vectors per pair {counts}, long K {len(arrays['long__i'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
