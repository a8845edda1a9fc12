"""Fast expected values, trusted (mxsim.golden.compute.crosscheck): generation takes the fast path's values
only after the reference model agrees on the catalogue and a seeded sample; a planted fast-path
mistake stops it; the manifest records what the reference checked; generation with the fast path
and with the reference alone write the same bytes for every suite kind; verify recomputes with the
reference, never the fast path."""

from __future__ import annotations

import json
import random

import pytest

from forged_suites import rewrite_suite
from mxsim.golden.compute import crosscheck
from mxsim.golden.compute import pipeline
from mxsim.golden.compute.crosscheck import CrossCheck, ReferenceDisagreement, sample_size
from mxsim.golden.storage.files import generate
from mxsim.golden.kinds.suite import Suite
from mxsim.golden.kinds.registry import KINDS, suite_from_spec
from mxsim.golden.storage.verify import verify

SMALL = {  # one small suite of every kind
    "decode": {"element": "fp6_e3m2"},
    "encode": {"element": "fp4_e2m1", "rounding": "rna"},
    "quantize": {"block": "mxfp8_e4m3", "options": {"scale_rule": "ceil"}},
    "pack": {"block": "mx9"},
    "dot": {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "aligned", "frac_bits": 13, "width": 24,
                                                     "shift_rounding": "truncate", "overflow": "saturate"}},
    "dotgeneral": {"block_a": "nvfp4", "n_blocks": 2},
    "dequantize": {"block": "mxfp8_e5m2", "output": "bfloat16"},
}
FAST_KINDS = [kind for kind in KINDS if crosscheck.fast_path(suite_from_spec(kind, **SMALL[kind])) is not None]


def test_every_kind_has_a_small_suite_here():
    assert sorted(SMALL) == sorted(KINDS)
    assert sorted(FAST_KINDS) == ["dot", "dotgeneral", "quantize"]


def _files(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.suffix == ".hex"}


def _manifest(directory) -> dict:
    return json.loads((directory / "manifest.json").read_text())


@pytest.mark.parametrize("kind", list(KINDS))
def test_fast_and_reference_generation_write_the_same_bytes(kind, tmp_path):
    suite = suite_from_spec(kind, **SMALL[kind])
    # the catalogue and random vectors beyond it, for the kinds that draw them
    count = suite.catalogue_size(1) + (300 if type(suite).random_inputs is not Suite.random_inputs else 0)
    fast = generate(suite, tmp_path / "fast", seed=5, count=count)
    reference = generate(suite, tmp_path / "reference", seed=5, count=count, reference_only=True)
    assert _files(fast) == _files(reference) and len(_files(fast)) == len(suite.fields)
    checks = _manifest(fast)["reference_check"], _manifest(reference)["reference_check"]
    assert checks[1]["expected_values"] == "reference model (every vector)"
    assert checks[1]["reference_checked"] == count
    # below C + 10,000 vectors the reference recomputes every one of them on the fast route too
    assert checks[0]["reference_checked"] == count and checks[0]["vectors"] == count


def _planted(monkeypatch, kind: str, lines: set[int], field: str):
    """The kind's compute_batch, with bit 0 of ``field`` flipped on the given lines (0-based, counted
    over the calls in order, as generation makes them)."""
    cls = KINDS[kind]
    honest = cls.compute_batch
    seen = {"n": 0}

    def lying(self, inputs):
        outputs, flags = honest(self, inputs)
        n = len(flags)
        for line in lines:
            if seen["n"] <= line < seen["n"] + n:
                column = flags if field == "flags" else outputs[field]
                column[line - seen["n"]] ^= 1
        seen["n"] += n
        return outputs, flags

    monkeypatch.setattr(cls, "compute_batch", lying)


@pytest.mark.parametrize("kind, field", [("dot", "result"), ("dotgeneral", "flags"), ("quantize", "codes")])
def test_a_planted_fast_path_mistake_in_the_catalogue_stops_generation(kind, field, tmp_path, monkeypatch):
    suite = suite_from_spec(kind, **SMALL[kind])
    _planted(monkeypatch, kind, {suite.catalogue_size(1) // 2}, field)
    with pytest.raises(ReferenceDisagreement, match=rf"line {suite.catalogue_size(1) // 2 + 1}: field '{field}'"):
        generate(suite, tmp_path, seed=1)
    assert not list(tmp_path.rglob("manifest.json")) and not list(tmp_path.rglob("*.hex"))


def _beyond(monkeypatch, suite, count: int):
    """SAMPLE_MIN lowered to 7 so that a sample is a small part of ``count`` vectors; the sampled
    and the unsampled lines beyond the catalogue."""
    monkeypatch.setattr(crosscheck, "SAMPLE_MIN", 7)
    plan = pipeline.plan(suite, 1, count)
    sampled = set(CrossCheck(suite, 3, plan).positions(0, count)) - set(range(plan.catalogue))
    return plan, sorted(sampled), sorted(set(range(plan.catalogue, count)) - sampled)


@pytest.mark.parametrize("kind", FAST_KINDS)
def test_a_planted_mistake_on_a_sampled_line_stops_generation(kind, tmp_path, monkeypatch):
    suite = suite_from_spec(kind, **SMALL[kind])
    count = suite.catalogue_size(1) + 700
    plan, sampled, unsampled = _beyond(monkeypatch, suite, count)
    assert len(sampled) == max(7, -(-count // 100)) and len(sampled) + len(unsampled) == 700
    line = random.Random(kind).choice(sampled)
    _planted(monkeypatch, kind, {line}, "flags")
    with pytest.raises(ReferenceDisagreement, match=rf"line {line + 1}: field 'flags'"):
        generate(suite, tmp_path, seed=3, count=count)
    assert not list(tmp_path.rglob("*.hex"))


def test_the_manifest_records_what_the_reference_checked(tmp_path, monkeypatch):
    suite = suite_from_spec("quantize", **SMALL["quantize"])
    count = suite.catalogue_size(1) + 2000
    plan, sampled, unsampled = _beyond(monkeypatch, suite, count)
    assert len(sampled) == -(-count // 100)  # 1 % of the suite beats SAMPLE_MIN = 7 here
    # a mistake on a line the sample leaves out goes through: the sample is what it says, no more
    _planted(monkeypatch, "quantize", {unsampled[0]}, "flags")
    check = _manifest(generate(suite, tmp_path / "a", seed=3, count=count))["reference_check"]
    assert check["vectors"] == count
    assert check["catalogue_checked"] == plan.catalogue and check["sample_checked"] == len(sampled)
    assert check["reference_checked"] == plan.catalogue + len(sampled) and check["sample_size"] == len(sampled)
    assert check["sample_seed"] == f"mxsim-golden:3:quantize:{suite.name}:reference-sample"
    assert "max(7, ceil(N * 1 / 100))" in check["sample_rule"]


def test_shards_and_chunks_check_the_same_lines(tmp_path, monkeypatch):
    suite = suite_from_spec("dot", **SMALL["dot"])
    count = suite.catalogue_size(1) + 900
    plan, sampled, _ = _beyond(monkeypatch, suite, count)
    monkeypatch.setattr(pipeline, "CHUNK", 97)
    checked = [_manifest(generate(suite, tmp_path, seed=3, count=count, shard=(i, 3)))["reference_check"]
               for i in range(3)]
    assert sum(c["vectors"] for c in checked) == count
    assert sum(c["sample_checked"] for c in checked) == len(sampled)
    assert sum(c["catalogue_checked"] for c in checked) == plan.catalogue


@pytest.mark.parametrize("total, catalogue, size", [
    (500, 600, 0), (10_000, 200, 9_800), (10_300, 200, 10_000), (1_000_000, 3_000, 10_000),
    (2_000_001, 3_000, 20_001), (10**9, 3_000, 10**7),
])
def test_sample_size_is_10000_or_1_percent_capped_at_the_suite(total, catalogue, size):
    assert sample_size(total, catalogue) == size


def test_an_endless_stream_checks_three_lines_per_run(monkeypatch):
    suite = suite_from_spec("quantize", **SMALL["quantize"])
    plan = pipeline.plan(suite, 1, forever=True)
    check = CrossCheck(suite, 0, plan)
    c = plan.catalogue
    lines = check.positions(0, c + 256 * 4)
    assert lines[:c] == list(range(c)) and len(lines) == c + 12
    assert [x + 100 for x in check.positions(100, c + 256 * 4 - 100)] == lines[100:]  # any start: the same lines


def test_verify_reference_only_recomputes_every_vector_with_the_reference(tmp_path, monkeypatch):
    suite = suite_from_spec("dot", **SMALL["dot"])
    generate(suite, tmp_path, seed=2, count=suite.catalogue_size(1) + 50)

    def refuse(self, inputs):
        raise AssertionError("verify called the fast path")

    monkeypatch.setattr(KINDS["dot"], "compute_batch", refuse)
    report = verify(tmp_path, reference_only=True)
    assert report.ok, report.problems
    assert report.vectors == report.reference == suite.catalogue_size(1) + 50


def _beyond_the_sample(suite, seed: int, total: int) -> int:
    """A line (0-based) beyond the catalogue that the reference does not recompute."""
    check = CrossCheck(suite, seed, pipeline.plan(suite, 1, total))
    chosen = set(check.positions(0, total))
    return next(line for line in range(suite.catalogue_size(1), total) if line not in chosen)


def test_verify_checks_lines_beyond_the_sample_with_the_fast_path(tmp_path, monkeypatch):
    """Issue 22: verify computes as generation does. A suite of C + 10,050 lines: the reference
    recomputes the catalogue and 10,000 sampled lines, the fast path every line; an output edited
    on a line the reference does not recompute is still caught (by the fast path), and a fast path
    that lies on a catalogue line is reported against the reference."""
    suite = suite_from_spec("quantize", **SMALL["quantize"])
    c = suite.catalogue_size(1)
    total = c + 10_050
    generate(suite, tmp_path, seed=4, count=total)
    report = verify(tmp_path)
    assert report.ok, report.problems
    assert report.vectors == total and report.reference == c + 10_000
    assert "(" + str(c + 10_000) + " by the reference model" in report.summary()

    line = _beyond_the_sample(suite, 4, total)
    directory = tmp_path / "quantize" / suite.name
    path = directory / "scale.hex"
    lines = path.read_bytes().split(b"\n")
    lines[line] = b"%02x" % (int(lines[line], 16) ^ 1)
    path.write_bytes(b"\n".join(lines))
    rewrite_suite(directory, tmp_path)  # the hashes and index made to match: only the vectors tell
    problems = verify(tmp_path).problems
    assert len(problems) == 1 and f"scale.hex: line {line + 1}: field 'scale': mxsim gives" in problems[0], problems
    assert f"line {line + 1}" in verify(tmp_path, reference_only=True).problems[0]
    assert verify(tmp_path, sample=10).ok  # the sample's lines: the edited one is not among them

    path.write_bytes(b"\n".join(lines[:line] + [b"%02x" % (int(lines[line], 16) ^ 1)] + lines[line + 1:]))
    rewrite_suite(directory, tmp_path)
    _planted(monkeypatch, "quantize", {c // 2}, "scale")
    problems = verify(tmp_path).problems
    assert len(problems) == 1 and f"line {c // 2 + 1}: field 'scale': the fast path gives" in problems[0], problems


def test_the_cli_reports_a_disagreement_and_exits_1(tmp_path, monkeypatch, capsys):
    from mxsim.cli import main

    suite = suite_from_spec("quantize", **SMALL["quantize"])
    _planted(monkeypatch, "quantize", {3}, "scale")
    params = json.dumps(SMALL["quantize"])
    assert main(["golden", "generate", str(tmp_path), "--suite", "quantize", "--params", params]) == 1
    assert f"quantize/{suite.name}: line 4: field 'scale': the fast path gives" in capsys.readouterr().err
    assert main(["golden", "generate", str(tmp_path), "--suite", "quantize", "--params", params, "--reference-only"]) == 0


def test_a_huge_suite_samples_per_run_like_a_stream():
    """A sample of more than SAMPLE_LIST_MAX lines (N = 2 * 10^8: 2,000,000) is drawn 3 lines per
    run of 256 (no list of millions of lines), the same lines as an endless stream's."""
    suite = suite_from_spec("dot", **SMALL["dot"])
    huge = CrossCheck(suite, 0, pipeline.plan(suite, 1, 2 * 10**8))
    endless = CrossCheck(suite, 0, pipeline.plan(suite, 1, forever=True))
    c = huge.catalogue
    start = c + 256 * 10**5
    assert huge.positions(start, 1024) == endless.positions(start, 1024) and len(huge.positions(start, 1024)) == 12
    assert huge.describe()["sample_size"] is None


@pytest.mark.parametrize("kind, params, fast", [
    ("dotgeneral", {"block_a": "mxfp8_e4m3", "n_blocks": 2,
                    "accumulator": {"mode": "aligned", "frac_bits": 25, "accumulate": "fused", "step": 16}}, True),
    ("dotgeneral", {"block_a": "mxfp8_e4m3", "n_blocks": 2, "c_input": True}, False),
    ("dot", {"block_a": "mxint8", "accumulator": {"output": "fp16", "output_overflow": "saturate"}}, False),
    ("dot", {"block_a": "mxint8", "accumulator": {"output": "fp16"}}, True),
])
def test_the_manifest_names_the_path_that_computed_the_values(kind, params, fast, tmp_path):
    suite = suite_from_spec(kind, **params)
    check = _manifest(generate(suite, tmp_path, count=40))["reference_check"]
    assert check["expected_values"] == ("fast path (compute_batch), checked by the reference model" if fast
                                        else "reference model (every vector)")
    assert check["reference_checked"] == 40


@pytest.mark.parametrize("kind, params", [
    ("dot", SMALL["dot"]), ("dot", {"block_a": "mx6", "block_b": "mx9"}), ("dot", {"block_a": "nvfp4"}),
    ("quantize", SMALL["quantize"]), ("quantize", {"block": "nvfp4"}), ("quantize", {"block": "mx4"}),
    # C inputs (fused and separate), unit scales, no tensor scales, n blocks
    ("dot", {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma", "unit_scales": True}),
    ("dot", {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}),
    ("dot", {"block_a": "mxfp8_e4m3", "c_input": True,
             "accumulator": {"mode": "aligned", "frac_bits": 13, "width": 24}}),
    ("dotgeneral", {"block_a": "nvfp4", "preset": "blackwell_mxf4nvf4", "n_blocks": 4}),
    ("dotgeneral", {"block_a": "mxfp8_e4m3", "block_b": "mxfp4_e2m1", "preset": "blackwell_mxf8f6f4", "n_blocks": 2}),
    ("dotgeneral", {"block_a": "nvfp4", "n_blocks": 2}),
])
def test_runs_drawn_at_once_follow_random_inputs_mix(kind, params):
    """random_run (NumPy) and random_inputs (Python's random) draw from the same mix: every corner
    class turns up about as often in 1,536 vectors of each (within 4 percentage points)."""
    from mxsim.golden.coverage.catalogue import CLASSES

    suite = suite_from_spec(kind, **params)
    n, names = 1536, [f.name for f in suite.inputs]
    rng = random.Random(11)
    python_rows = [suite.random_inputs(rng, i) for i in range(n)]
    numpy_rows = [row for r in range(n // 256) for row in suite.random_run(pipeline.run_generator(11, suite, r), 256 * r, 256)]
    assert len(numpy_rows) == n and all(sorted(row) == sorted(names) for row in numpy_rows)
    share = {}
    for label, rows in (("python", python_rows), ("numpy", numpy_rows)):
        _, flags = suite.compute_batch({name: [row[name] for row in rows] for name in names})
        share[label] = {c: sum(f >> bit & 1 for f in flags) / n for bit, c in enumerate(CLASSES)}
    far = {c: (share["python"][c], share["numpy"][c]) for c in CLASSES if abs(share["python"][c] - share["numpy"][c]) > 0.04}
    assert not far, far
