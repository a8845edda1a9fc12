"""Bit for bit with an NVIDIA H200: every configuration of the silicon corpus reproduced through
mxsim's public API (``mxsim.dot`` with a preset: the fast path on every vector, the reference
``mxsim.ref.dot.dot_general`` on a seeded subset), and docs/silicon.md's table checked against it.

The corpus (tests/data/h200_corpus.npz, made by tools/make_silicon_corpus.py from the shared
measurements) holds per operand pair TAG the FP8 rows of A and B, and per vector the row indices,
C and the chip's D of every configuration. Expected values are the chip's words: an independent
source. See docs/silicon.md for how each configuration was measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import mxsim
from mxsim import Accumulator, MXTensor
from mxsim.ref import dot as ref_dot
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.output import fp32_bits

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "h200_corpus.npz"
PAGE = ROOT / "docs" / "silicon.md"
TAGS = ("e4m3_e4m3", "e4m3_e5m2", "e5m2_e4m3", "e5m2_e5m2")
BLOCK = {"e4m3": "mxfp8_e4m3", "e5m2": "mxfp8_e5m2"}
REFERENCE_VECTORS = 24  # per configuration and pair: a seeded subset through the reference


@dataclass(frozen=True)
class Config:
    """A measured configuration: the instruction or library call, the preset (with overrides) that
    reproduces it, K, and its C: ``c`` the corpus's fp32 C, ``c_f16`` C rounded to fp16 (RNE, as
    the measurement did), ``zero`` +0."""

    instruction: str
    preset: str
    k: int
    c: str = "c"
    overrides: tuple = ()

    @property
    def label(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.overrides)
        return f"`{self.preset}`" + (f" with `{extra}`" if extra else "")

    def accumulator(self) -> Accumulator:
        return Accumulator.preset(self.preset, **dict(self.overrides))


TRITON = "Triton `tl.dot`"
SCALED = "`torch._scaled_mm` (cuBLASLt)"
# One line per configuration.
CONFIGS = {
    "k32_native": Config(f"{TRITON}, K = 32: one `wgmma.mma_async.m64n64k32.f32` with C", "hopper_fp8_wgmma", 32),
    "k128_native": Config(f"{TRITON}, K = 128: four chained wgmma k32, C into the first", "hopper_fp8_wgmma", 128),
    "k32_imp32": Config(f"{TRITON} `max_num_imprecise_acc=32`, K = 32", "hopper_fp8_wgmma", 32,
                        overrides=(("promote_every", 32),)),
    "k128_imp32": Config(f"{TRITON} `max_num_imprecise_acc=32`, K = 128", "hopper_fp8_wgmma", 128,
                         overrides=(("promote_every", 32),)),
    "scaled_k32_fast1": Config(f"{SCALED} `use_fast_accum=True`, K = 32", "hopper_fp8_wgmma", 32, "zero"),
    "scaled_k128_fast1": Config(f"{SCALED} `use_fast_accum=True`, K = 128", "hopper_fp8_wgmma", 128, "zero"),
    "scaled_k32_fast0": Config(f"{SCALED} `use_fast_accum=False`, K = 32", "hopper_fp8_cublas", 32, "zero"),
    "scaled_k128_fast0": Config(f"{SCALED} `use_fast_accum=False`, K = 128", "hopper_fp8_cublas", 128, "zero"),
    **{f"scaled_k{k}_fast1": Config(f"{SCALED} `use_fast_accum=True`, K = {k}", "hopper_fp8_wgmma", k, "zero")
       for k in (256, 512, 1024, 2048, 4096)},
    **{f"scaled_k{k}_fast0": Config(f"{SCALED} `use_fast_accum=False`, K = {k}", "hopper_fp8_cublas", k, "zero")
       for k in (256, 512, 1024, 2048, 4096)},
    "k32_f16": Config("Triton `tl.dot(..., out_dtype=tl.float16)`, K = 32: `wgmma ... .f16.e4m3.e4m3`, C = fp16(C)",
                      "hopper_fp8_wgmma_f16", 32, "c_f16"),
    "mma_k32": Config("`mma.sync.aligned.m16n8k32.row.col.f32` with C (CuPy/NVRTC)", "hopper_fp8_mma", 32),
    "mma_k32_f16": Config("`mma.sync ... .f16` with C = fp16(C)", "hopper_fp8_mma_f16", 32, "c_f16"),
}


@pytest.fixture(scope="module")
def corpus():
    with np.load(CORPUS) as data:
        return {name: data[name] for name in data.files}


def corpus_configs(corpus) -> dict[str, list[str]]:
    """Every configuration in the corpus and the groups (TAGs, or ``long``) that hold it."""
    found: dict[str, list[str]] = {}
    for key in corpus:
        group, _, name = key.partition("__")
        if group in TAGS + ("long",) and name not in ("a", "b", "i", "j", "c", "classes"):
            found.setdefault(name, []).append(group)
    return found


def vectors(corpus, group: str, name: str):
    """(a, b, c, words) of configuration ``name`` in one group: the vectors' operands as MX tensors
    of rows (unit scales), C as float32 (or None) and the chip's D words."""
    config = CONFIGS[name]
    fa, fb = ("e4m3", "e4m3") if group == "long" else group.split("_")
    rows_a = corpus[f"{group}__a"][corpus[f"{group}__i"], : config.k]
    rows_b = corpus[f"{group}__b"][corpus[f"{group}__j"], : config.k]
    scales = np.full((len(rows_a), config.k // 32), 127, np.uint8)
    a = MXTensor.from_codes(scales, np.ascontiguousarray(rows_a), BLOCK[fa])
    b = MXTensor.from_codes(scales, np.ascontiguousarray(rows_b), BLOCK[fb])
    c = None
    if config.c != "zero":
        c = corpus[f"{group}__c"].view(np.float32)
        if config.c == "c_f16":
            with np.errstate(over="ignore"):  # beyond fp16's range: Inf, as the kernel's conversion
                c = c.astype(np.float16).astype(np.float32)  # the kernel's C: fp16(C), nearest-even
    return a, b, c, corpus[f"{group}__{name}"]


def groups_of(corpus, name: str) -> list[str]:
    return corpus_configs(corpus).get(name, [])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fast_path_reproduces_every_vector(corpus, name):
    config = CONFIGS[name]
    groups = groups_of(corpus, name)
    assert groups, f"{name} is not in the corpus"
    for group in groups:
        a, b, c, chip = vectors(corpus, group, name)
        got = mxsim.dot(a, b, config.accumulator(), c=c, details=True).bits
        bad = np.flatnonzero(got.astype(chip.dtype) != chip)
        assert not len(bad), (f"{name} {group}: {len(bad)} of {len(chip)} differ, e.g. vector {bad[0]}: mxsim "
                              f"{int(got[bad[0]]):#x}, H200 {int(chip[bad[0]]):#x}")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_reference_reproduces_a_subset(corpus, name):
    config = CONFIGS[name]
    acc = config.accumulator()
    rng = np.random.default_rng(34)
    for group in groups_of(corpus, name):
        a, b, c, chip = vectors(corpus, group, name)
        picks = rng.choice(len(chip), min(len(chip), REFERENCE_VECTORS if config.k <= 128 else 3), replace=False)
        for v in sorted(picks.tolist()):
            blocks_a, blocks_b = ([QuantizedBlock(127, (), tuple(int(x) for x in t.codes[v, j:j + 32]))
                                   for j in range(0, config.k, 32)] for t in (a, b))
            c_ref = None if c is None else fp32_bits(int(c.view(np.uint32)[v]))
            got = ref_dot.dot_general(blocks_a, blocks_b, a.fmt, b.fmt, acc, c=c_ref).code
            assert got == int(chip[v]), f"{name} {group} vector {v}: reference {got:#x}, H200 {int(chip[v]):#x}"


def test_the_corpus_holds_every_class(corpus):
    """Every vector class the corpus is made to hold (tools/make_silicon_corpus.py) is present in
    some pair, and every configuration has at least a thousand vectors per pair (long K: 144)."""
    names = list(corpus["classes"])
    for bit, name in enumerate(names):
        count = sum(int(((corpus[f"{tag}__classes"] >> bit) & 1).sum()) for tag in TAGS)
        assert count > 0, name
    for name, groups in corpus_configs(corpus).items():
        for group in groups:
            assert len(corpus[f"{group}__{name}"]) >= (144 if group == "long" else 1000), (name, group)


# --- docs/silicon.md ---------------------------------------------------------------------------
def page_rows() -> dict[str, list[str]]:
    """The rows of the page's table: configuration -> [instruction, preset, pairs, vectors, agreement]."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 6:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def pairs_text(groups: list[str]) -> str:
    return ", ".join("E4M3 x E4M3 (long K)" if g == "long" else " x ".join(p.upper() for p in g.split("_"))
                     for g in groups)


def test_page_lists_every_configuration_as_the_test_measures_it(corpus):
    """Each configuration of the corpus has its row, and the rows of the configurations this file
    reproduces say what it checks: instruction, preset, pairs, vectors (all of them agree: the
    tests above), so the page cannot drift from the test. The others are marked open."""
    rows = page_rows()
    found = corpus_configs(corpus)
    assert set(rows) == set(found), set(rows) ^ set(found)
    for name, groups in found.items():
        count = sum(len(corpus[f"{g}__{name}"]) for g in groups)
        if name in CONFIGS:
            config = CONFIGS[name]
            assert rows[name] == [config.instruction, config.label, pairs_text(groups), f"{count:,}",
                                  f"{count:,} / {count:,} (100 %)"], name
        else:
            assert rows[name][3] == f"{count:,}" and rows[name][4].startswith("open"), name


def test_measure_script_is_importable_without_cuda():
    """tools/h200_measure.py (it needs a CUDA GPU with torch, Triton and CuPy) compiles and imports
    here; its entry point refuses to run without CUDA."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("h200_measure", ROOT / "tools" / "h200_measure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main) and "sass" not in module.ARRAYS
    for fmt in ("e4m3", "e5m2"):  # its operand generator reads FP8 codes as mxsim does
        want = mxsim.decode(np.arange(256, dtype=np.uint8), f"fp8_{fmt}").astype(np.float64)
        got = module.fp8_values(fmt)
        assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    if not module.cuda_available():
        with pytest.raises(SystemExit, match="CUDA"):
            module.main(["--out", "/nonexistent/never-written.npz"])


def test_page_mentions_the_script_and_ci():
    text = PAGE.read_text()
    assert "tools/h200_measure.py" in text and "tools/make_silicon_corpus.py" in text
    assert re.search(r"cannot run in CI", text)
