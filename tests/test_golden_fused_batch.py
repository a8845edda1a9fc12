"""Fused dot/dotgeneral suites computed by the fast path (mxsim.golden.fused_batch) give the bytes
the reference model gives: the canonical fused suites regenerated both ways, and random vectors
beyond the catalogue of every fused preset (and some custom fused configurations) computed by
``compute_batch`` and by the reference's ``compute`` (an independent code path: Python integers
and Fractions, vector by vector).

CI compares MXSIM_FUSED_VECTORS (default 1,000) random vectors per preset; the campaign of the
issue (20,000 vectors per preset, about 5 CPU minutes in all) is

    MXSIM_FUSED_VECTORS=20000 python -m pytest -q tests/test_golden_fused_batch.py -k preset
"""

from __future__ import annotations

import filecmp
import json
import os
from pathlib import Path

import pytest

from mxsim.golden import fused_batch, pipeline
from mxsim.golden.canonical import CANONICAL_SUITES
from mxsim.golden.classes import ORIGIN_MASK, class_names
from mxsim.golden.crosscheck import reference_expected
from mxsim.golden.files import generate_suites
from mxsim.golden.suites import suite_from_spec

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
VECTORS = int(os.environ.get("MXSIM_FUSED_VECTORS", "1000"))

FUSED_CANONICAL = [(kind, params) for kind, params in CANONICAL_SUITES if params.get("preset")]

PRESETS = {
    "hopper_fp8_wgmma": ("dot", {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma", "unit_scales": True}),
    "blackwell_mxf8f6f4": ("dotgeneral", {"block_a": "mxfp8_e4m3", "block_b": "mxfp4_e2m1",
                                          "preset": "blackwell_mxf8f6f4", "n_blocks": 2, "steps": True}),
    "blackwell_mxf4nvf4": ("dotgeneral", {"block_a": "nvfp4", "preset": "blackwell_mxf4nvf4", "n_blocks": 4}),
    "mxdotp_fp8": ("dot", {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}),
}

CUSTOM = [
    ("dot", {"block_a": "mxfp8_e4m3", "steps": True, "accumulator": {
        "accumulate": "fused", "mode": "aligned", "frac_bits": 20, "step": 16, "shift_rounding": "rne",
        "output": "bf16"}}),
    ("dot", {"block_a": "mx9", "steps": True, "accumulator": {
        "accumulate": "fused", "mode": "aligned", "frac_bits": 12, "step": 8, "ftz": True}}),
    ("dotgeneral", {"block_a": "mxfp6_e3m2", "block_b": "mxfp8_e5m2", "preset": "hopper_fp8_wgmma", "n_blocks": 3,
                    "steps": True}),
    ("dot", {"block_a": "mxfp8_e5m2", "preset": "mxdotp_fp8", "accumulator": {"output": "fp16"}, "steps": True}),
    ("dotgeneral", {"block_a": "mxfp8_e5m2", "preset": "blackwell_mxf4nvf4", "n_blocks": 2}),  # rows referred
]


def _beyond_catalogue(suite, n: int) -> dict:
    """The inputs of the first ``n`` random vectors after the catalogue (seed 0, level 1)."""
    plan = pipeline.plan(suite, 1, suite.catalogue_size(1) + n)
    rows = [row for row, _ in pipeline.vectors(suite, 0, 1, plan, plan.catalogue)]
    return {f.name: [row[f.name] for row in rows] for f in suite.inputs}


def _assert_same(suite, inputs: dict) -> None:
    fast_outputs, fast_flags = suite.compute_batch(inputs)
    ref_outputs, ref_flags = reference_expected(suite, inputs)
    for i, flags in enumerate(ref_flags):
        vector = {name: hex(column[i]) for name, column in inputs.items()}
        for name, column in ref_outputs.items():
            assert int(fast_outputs[name][i]) == column[i], (suite.name, i, name, vector)
        assert int(fast_flags[i]) == flags, (suite.name, i, class_names(fast_flags[i]), class_names(flags), vector)


@pytest.mark.parametrize("kind, params", FUSED_CANONICAL, ids=[p.get("preset") for _, p in FUSED_CANONICAL])
def test_canonical_fused_suite_is_the_reference_output(kind, params):
    """Every vector of the committed canonical fused suite: compute_batch on its inputs gives the
    outputs and flags of its .hex files, which the reference model computed (every vector, before
    the fast path took these suites; every regeneration since recomputes the whole catalogue with
    the reference, and tests/test_golden.py regenerates golden/ byte for byte)."""
    suite = suite_from_spec(kind, **params)
    directory = GOLDEN / suite.kind / suite.name

    def column(field) -> list[int]:
        return [field.from_hex(line) for line in (directory / field.file).read_text().split()]

    inputs = {f.name: column(f) for f in suite.inputs}
    outputs, flags = suite.compute_batch(inputs)
    for f in suite.outputs:
        assert [int(v) for v in outputs[f.name]] == column(f), f.name
    assert [int(v) for v in flags] == [v & ~ORIGIN_MASK for v in column(suite.fields[-1])]


def test_generation_names_the_fast_path_and_writes_the_reference_bytes(tmp_path):
    """A fused suite beyond its catalogue, generated with the fast path and with --reference-only:
    every file the same bytes; the manifests differ in reference_check only."""
    suite = suite_from_spec("dotgeneral", block_a={"name": "mxfp4_k16", "element": "fp4_e2m1", "block_size": 16,
                                                   "scale": "e8m0"}, preset="blackwell_mxf4nvf4", n_blocks=4)
    count = suite.catalogue_size(1) + 400
    fast, = generate_suites([suite], tmp_path / "fast", 0, 1, None, False, False, count)
    reference, = generate_suites([suite], tmp_path / "reference", 0, 1, None, False, False, count, reference_only=True)
    files = sorted(p.name for p in fast.iterdir())
    assert files == sorted(p.name for p in reference.iterdir())
    for name in files:
        if name != "manifest.json":
            assert filecmp.cmp(fast / name, reference / name, shallow=False), name
    manifests = [json.loads((d / "manifest.json").read_text()) for d in (fast, reference)]
    assert manifests[0]["reference_check"]["expected_values"].startswith("fast path")
    assert manifests[1]["reference_check"]["expected_values"] == "reference model (every vector)"
    for manifest in manifests:
        del manifest["reference_check"]
    assert manifests[0] == manifests[1]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_random_vectors_match_the_reference(preset):
    kind, params = PRESETS[preset]
    suite = suite_from_spec(kind, **params)
    _assert_same(suite, _beyond_catalogue(suite, VECTORS))


@pytest.mark.parametrize("kind, params", CUSTOM, ids=range(len(CUSTOM)))
def test_custom_fused_configurations_match_the_reference(kind, params):
    suite = suite_from_spec(kind, **params)
    n = min(VECTORS, 400)
    rows = [row for row, _ in pipeline.vectors(suite, 0, 1, pipeline.plan(suite, 1))][:n]
    _assert_same(suite, {f.name: [row[f.name] for row in rows] for f in suite.inputs})


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_fast_path_takes_nearly_every_random_vector(preset, monkeypatch):
    """At most 8 % of a preset's random vectors are referred to the reference (compute_each; those
    with a D in the output's top binade, where overflow and saturation need the exact total: C
    near the fp32 maximum is one of the C kinds): the suites really run on the fast path."""
    kind, params = PRESETS[preset]
    suite = suite_from_spec(kind, **params)
    inputs = _beyond_catalogue(suite, 300)
    referred = []
    original = fused_batch.compute_each

    def counting(suite, inputs):
        referred.append(len(inputs["c"]))
        return original(suite, inputs)

    monkeypatch.setattr(fused_batch, "compute_each", counting)
    suite.compute_batch(inputs)
    assert 0 < len(inputs["c"]) and sum(referred) <= 24, referred
