"""Golden dot and dotgeneral suites with an accumulator input C and fused multiply-accumulate steps
(docs/numerics.md section 3.2, 4.1, 6.1): the canonical fused suites, hand-worked vectors for each corner
class of the new behaviour, custom block formats from ``--params`` through ``verify``, and
``golden stream`` / ``golden check`` with the ``c`` and ``steps`` fields.

Oracles (expected values never come from the code under test):

* ``fused_oracle`` of tests/fast/test_fused_steps_fast.py: section 4.1 written from scratch with Fractions
  (anchors, grid cuts, the bypass, specials, one output rounding), applied here to the vectors of
  every canonical fused suite read from its hex files;
* hand-worked vectors through the suite's ``compute``, their expected bits derived in the comments;
* planted mistakes for ``check`` (the expected report follows from the plant).
"""

from __future__ import annotations

import io
import json
import random
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from test_fused_steps_fast import fused_oracle

from mxsim.cli import main
from mxsim.formats import BlockFormat, get_format
from mxsim.golden import generate, suite_from_spec, verify
from mxsim.golden.compute import pipeline
from mxsim.golden.storage import stream as golden_stream
from mxsim.golden.device.check import check, report_lines
from mxsim.golden.coverage.catalogue import class_names
from mxsim.options.accumulate import Accumulator

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
# the canonical fused suites (mxsim/golden/canonical.py) and the preset each was made with
FUSED_SUITES = {
    "dot/mxfp8_e4m3-mxdotp_fp8-steps": "mxdotp_fp8",
    "dot/mxfp8_e4m3-mxdotp_fp8-output_rounding=rtz-steps": "mxdotp_fp8",
    "dot/mxfp8_e4m3-hopper_fp8_wgmma-unit_scales": "hopper_fp8_wgmma",
    "dotgeneral/mxfp8_e4m3xmxfp4_e2m1-blackwell_mxf8f6f4-n2-steps": "blackwell_mxf8f6f4",
    "dotgeneral/nvfp4-blackwell_mxf4nvf4-n4": "blackwell_mxf4nvf4",
    "dotgeneral/mxfp4_k16-blackwell_mxf4nvf4-n4": "blackwell_mxf4nvf4",
}
# FP4 with an E8M0 scale per 16 (Blackwell kind::mxf4nvf4's UE8M0 x 16), built here from its parts
MXFP4_K16 = BlockFormat("mxfp4_k16", get_format("fp4_e2m1"), 16, get_format("e8m0"))
MXDOTP = {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}
E4M3_ONE, E4M3_MAX = 0x38, 0x7E  # 1.0 and 448 = 1.75 * 2^8


def _lines(directory: Path, name: str) -> list[int]:
    return [int(x, 16) for x in (directory / f"{name}.hex").read_text().splitlines()]


def _split(word: int, width: int, count: int) -> list[int]:
    return [(word >> (i * width)) & ((1 << width) - 1) for i in range(count)]


def _format(param) -> BlockFormat:
    """A manifest's block format: a catalogue name, or the custom FP4 x 16 built above."""
    if isinstance(param, dict):
        assert {k: param[k] for k in ("name", "element", "block_size", "scale")} == {
            "name": "mxfp4_k16", "element": "fp4_e2m1", "block_size": 16, "scale": "e8m0"}
        return MXFP4_K16
    return get_format(param, kind="block")


# --- the canonical fused suites against the oracle ----------------------------------------------------
@pytest.mark.parametrize("name", sorted(FUSED_SUITES))
def test_canonical_fused_suite_matches_the_oracle(name):
    """Every vector's result (and, with ``steps``, every step's D) is the oracle's, for every
    directed vector and every third other one; the manifest records the preset and every field."""
    suite = GOLDEN / name
    manifest = json.loads((suite / "manifest.json").read_text())
    params = manifest["params"]
    assert params["preset"] == FUSED_SUITES[name]
    acc = Accumulator.from_kwargs(**params["accumulator"])
    preset = Accumulator.preset(FUSED_SUITES[name])
    assert acc.accumulate == "fused" and acc.anchor == preset.anchor and acc.frac_bits == preset.frac_bits
    fa, fb = _format(params["block_a"]), _format(params["block_b"])
    n = params.get("n_blocks", 1)
    width = 32  # every fused output is stored as fp32 (fp32_e8m13 included)
    steps = -(-n * fa.block_size // acc.effective_step(fa.block_size))
    columns = {f["name"]: _lines(suite, f["name"]) for f in manifest["fields"]}
    assert "c" in columns and "acc" not in columns and "block_results" not in columns
    assert ("steps" in columns) == bool(params.get("steps"))
    scale_bits = {side: next(f["bits"] for f in manifest["fields"] if f["name"] == f"{side}_scale") // n for side in "ab"}
    checked = 0
    for i in range(manifest["count"]):
        directed = "directed" in class_names(columns["flags"][i])
        if not directed and i % 3:
            continue
        codes_a = _split(columns["a_elems"][i], fa.element.width, n * fa.block_size)
        codes_b = _split(columns["b_elems"][i], fb.element.width, n * fb.block_size)
        scales_a = _split(columns["a_scale"][i], scale_bits["a"], n)
        scales_b = _split(columns["b_scale"][i], scale_bits["b"], n)
        words = fused_oracle(fa, fb, codes_a, scales_a, codes_b, scales_b, acc, columns["c"][i])
        assert len(words) == steps
        assert columns["result"][i] == words[-1], f"{name} line {i + 1}"
        if "steps" in columns:
            assert _split(columns["steps"][i], width, steps) == words, f"{name} line {i + 1}"
        checked += 1
    assert checked > manifest["count"] // 3


def _classes_of(name: str) -> set[str]:
    return {c for word in _lines(GOLDEN / name, "flags") for c in class_names(word)}


NEW_CLASSES = {"c_nan", "c_cancellation", "c_bypass", "c_zero_tiny", "overflow"}
UNREACHABLE = {
    # unit scales: |products| >= 2^-18 > a zero C's 2^-126, and |sum| < 2^23 cannot overflow
    "dot/mxfp8_e4m3-hopper_fp8_wgmma-unit_scales": {"c_zero_tiny", "overflow"},
    # UE4M3 scales (2^-9 .. 448) and no tensor scale: the same
    "dotgeneral/nvfp4-blackwell_mxf4nvf4-n4": {"c_zero_tiny", "overflow"},
}


@pytest.mark.parametrize("name", sorted(FUSED_SUITES))
def test_canonical_fused_suites_have_the_new_corner_classes(name):
    """Every new class a suite's unit can reach is in its flags; saturation (IEEE overflow toward
    zero) only where the output overflows that way (MXDOTP with rtz)."""
    classes = _classes_of(name)
    assert NEW_CLASSES - UNREACHABLE.get(name, set()) <= classes, sorted(classes)
    assert ("saturation" in classes) == name.endswith("mxdotp_fp8-output_rounding=rtz-steps")


def test_mxdotp_suites_bypass_vectors_return_c_unchanged():
    """The bypass rule checked directly on the vectors of both MXDOTP suites: where step 0's
    products are nonzero and finite, C is finite and C's LSB 2^(e_C - 23) lies more than 70 bits
    above the grid 2^(XA + XB - 34), step 0's D is C's bits (a rounding of C + products would move
    a directed rounding or change nothing, so rtz and rne both must show it as C)."""
    for name in ("dot/mxfp8_e4m3-mxdotp_fp8-steps", "dot/mxfp8_e4m3-mxdotp_fp8-output_rounding=rtz-steps"):
        suite = GOLDEN / name
        cols = {field: _lines(suite, field) for field in ("a_scale", "b_scale", "a_elems", "b_elems", "c", "steps")}
        seen = 0
        for i, c in enumerate(cols["c"]):
            sa, sb = cols["a_scale"][i], cols["b_scale"][i]
            field = (c >> 23) & 0xFF
            if 0xFF in (sa, sb) or field == 0xFF or c & 0x7FFFFFFF == 0:
                continue
            a = _split(cols["a_elems"][i], 8, 8)
            b = _split(cols["b_elems"][i], 8, 8)
            if any(x & 0x7F == 0x7F for x in a + b) or not any(x & 0x7F and y & 0x7F for x, y in zip(a, b)):
                continue  # a NaN element, or no nonzero product in step 0
            e_c = max(field - 127, -126)
            if (e_c - 23) - (sa - 127 + sb - 127 - 34) > 70:
                assert cols["steps"][i] & 0xFFFFFFFF == c, f"{name} line {i + 1}"
                seen += 1
        assert seen >= 10, f"{name}: {seen} bypass vectors"


# --- hand-worked vectors through the suite's compute ---------------------------------------------------
def _vector(a: dict[int, int], b: dict[int, int], a_scale: int, b_scale: int, c: int) -> dict:
    """An MXFP8 E4M3 block pair: element i of a and b as given (others +0), and C's bits."""
    elems = [{i: code for i, code in side.items()} for side in (a, b)]
    pack = [sum(side.get(i, 0) << (8 * i) for i in range(32)) for side in elems]
    return {"a_scale": a_scale, "a_elems": pack[0], "b_scale": b_scale, "b_elems": pack[1], "c": c}


# C = +-max fp32 = (2^24 - 1) * 2^104 and one product of C's sign 1 * 1 * 2^104 (scales 2^52 each):
# one ulp above max, C's LSB 104 - (104 - 34) = 34 bits above the grid (no bypass). The exact sum is
# +-2^128, beyond fp32 under every rounding (an overflow); IEEE overflow gives +-Inf, or +-max where
# the rounding goes toward zero for that sign: rtz both signs, rdn a positive, rup a negative.
OVERFLOW = {  # rounding -> (D for C = +max, D for C = -max)
    "rne": (0x7F800000, 0xFF800000), "rna": (0x7F800000, 0xFF800000), "rtz": (0x7F7FFFFF, 0xFF7FFFFF),
    "rup": (0x7F800000, 0xFF7FFFFF), "rdn": (0x7F7FFFFF, 0xFF800000),
}


@pytest.mark.parametrize("rounding", sorted(OVERFLOW))
def test_overflow_under_each_output_rounding(rounding):
    suite = suite_from_spec("dot", **{**MXDOTP, "accumulator": {"output_rounding": rounding}})
    for negative, expected in zip((0, 1), OVERFLOW[rounding]):
        row = _vector({0: E4M3_ONE | negative << 7}, {0: E4M3_ONE}, 127 + 52, 127 + 52, negative << 31 | 0x7F7FFFFF)
        out, classes = suite.compute(row)
        assert out["result"] == expected
        assert _split(out["steps"], 32, 4) == [expected] * 4  # steps 1..3 have no products: D = C
        assert "overflow" in classes
        assert ("saturation" in classes) == (expected & 0x7FFFFFFF == 0x7F7FFFFF)


@pytest.mark.parametrize("scale_sum, expected", [
    (-60, 0x3F800000),  # C's LSB 2^-23 is 71 bits above the grid 2^-94: bypass, D = C = 1.0
    (-59, 0x3F800001),  # 70 bits above 2^-93: no bypass; 1 + 2^-59 rounds up (rup) to 1 + 2^-23
])
def test_accumulator_dominates_at_the_bypass_threshold(scale_sum, expected):
    """C = 1.0 and one product 1 * 1 * 2^(XA+XB), under MXDOTP with round-up."""
    suite = suite_from_spec("dot", **{**MXDOTP, "accumulator": {"output_rounding": "rup"}})
    row = _vector({0: E4M3_ONE}, {0: E4M3_ONE}, 127 + scale_sum // 2, 127 + scale_sum - scale_sum // 2, 0x3F800000)
    out, classes = suite.compute(row)
    assert out["result"] == expected
    assert ("c_bypass" in classes) == (expected == 0x3F800000)


def test_catastrophic_cancellation_keeps_the_residual():
    """C = -200704 (0xC8440000) and products 448 * 448 = 200704 and 2^-9 * 2^-9 = 2^-18 (unit
    scales): the exact sum 2^-18 (0x36800000) survives one fused rounding; a product sum rounded
    to fp32 first (200704 + 2^-18 needs 36 bits) would give +0."""
    suite = suite_from_spec("dot", **MXDOTP)
    row = _vector({0: E4M3_MAX, 1: 0x01}, {0: E4M3_MAX, 1: 0x01}, 127, 127, 0xC8440000)
    out, classes = suite.compute(row)
    assert _split(out["steps"], 32, 4) == [0x36800000] * 4 and out["result"] == 0x36800000
    assert "c_cancellation" in classes
    exact = Fraction(-200704) + 448 * 448 + Fraction(1, 2**18)  # the same sum, computed here
    assert exact == Fraction(1, 2**18)


@pytest.mark.parametrize("spec, nan", [
    (MXDOTP, 0x7FC00000),  # MXDOTP: the canonical quiet NaN
    ({"block_a": "mxfp8_e4m3", "preset": "blackwell_mxf8f6f4"}, 0x7FFFFFFF),  # NVIDIA's tensor cores
])
@pytest.mark.parametrize("c", [0x7FC00000, 0xFFC00001, 0x7F800001])
def test_nan_c_gives_the_units_nan(spec, nan, c):
    suite = suite_from_spec("dot", **spec)
    out, classes = suite.compute(_vector({0: E4M3_ONE}, {0: E4M3_ONE}, 127, 127, c))
    assert out["result"] == nan and "c_nan" in classes


@pytest.mark.parametrize("scale_sum, c, expected", [
    (-187, 0x00000000, 0x00000000),  # zero C: LSB 2^-150, grid 2^-221: 71 bits, bypass: D = +0
    (-187, 0x80000000, 0x80000000),  # the bypass returns C's own bits: -0 stays -0
    (-186, 0x00000000, 0x00000001),  # 70 bits: no bypass; 2^-186 rounds up (rup) to 2^-149
])
def test_zero_c_with_tiny_scales(scale_sum, c, expected):
    """C = +-0 counts with exponent -127 under MXDOTP (its LSB 2^-150); one product 1 * 1 * 2^(XA+XB)."""
    suite = suite_from_spec("dot", **{**MXDOTP, "accumulator": {"output_rounding": "rup"}})
    xa = max(scale_sum + 127, -127)
    row = _vector({0: E4M3_ONE}, {0: E4M3_ONE}, xa + 127, scale_sum - xa + 127, c)
    out, classes = suite.compute(row)
    assert out["result"] == expected
    assert ("c_zero_tiny" in classes) == (expected == c)


def test_steps_need_a_fused_accumulator_and_flags_must_be_booleans():
    with pytest.raises(ValueError, match="steps=true needs a fused accumulator"):
        suite_from_spec("dot", block_a="mxfp8_e4m3", steps=True)
    with pytest.raises(ValueError, match="c_input=1 is not allowed; expected true or false"):
        suite_from_spec("dot", block_a="mxfp8_e4m3", c_input=1)


# --- any format from --params, through verify ------------------------------------------------------------
CUSTOM = {"name": "mxfp8_k16", "element": "fp8_e4m3", "block_size": 16, "scale": "e8m0"}


def test_custom_format_from_the_cli_generates_and_verifies(tmp_path, capsys):
    """A custom block format (E4M3, E8M0 per 16) with MXDOTP steps and round-down, from --params:
    its manifest records every parameter, verify rebuilds it and recomputes every vector, and the
    vectors match the oracle on that format built here."""
    params = {"block_a": CUSTOM, "preset": "mxdotp_fp8", "accumulator": {"output_rounding": "rdn"}, "steps": True}
    assert main(["golden", "generate", str(tmp_path), "--suite", "dot", "--params", json.dumps(params),
                 "--count", "300", "--no-progress"]) == 0
    suite = tmp_path / "dot" / "mxfp8_k16-mxdotp_fp8-output_rounding=rdn-steps"
    manifest = json.loads((suite / "manifest.json").read_text())
    assert manifest["params"]["block_a"] == {**CUSTOM, "subblock_size": None, "subscale_bits": 0, "tensor_scale": None}
    assert manifest["count"] == 300
    report = verify(tmp_path)
    assert report.ok and report.vectors == 300, report.problems
    capsys.readouterr()
    assert main(["golden", "verify", str(tmp_path)]) == 0
    fmt = BlockFormat("mxfp8_k16", get_format("fp8_e4m3"), 16, get_format("e8m0"))
    acc = Accumulator.preset("mxdotp_fp8", output_rounding="rdn")
    cols = {name: _lines(suite, name) for name in ("a_scale", "a_elems", "b_scale", "b_elems", "c", "steps", "result")}
    for i in range(0, 300, 7):
        words = fused_oracle(fmt, fmt, _split(cols["a_elems"][i], 8, 16), [cols["a_scale"][i]],
                             _split(cols["b_elems"][i], 8, 16), [cols["b_scale"][i]], acc, cols["c"][i])
        assert _split(cols["steps"][i], 32, 2) == words and cols["result"][i] == words[-1]
    # a wrong result is found by verify
    lines = (suite / "result.hex").read_text().splitlines()
    lines[4] = format(int(lines[4], 16) ^ 1, "08x")
    (suite / "result.hex").write_text("\n".join(lines) + "\n")
    problems = verify(tmp_path).problems
    assert any("result" in problem for problem in problems), problems


@pytest.mark.parametrize("bad, message", [
    ({**CUSTOM, "block_size": 0}, "block_size"),
    ({**CUSTOM, "scale": "e5m2"}, "scale"),
    ({**CUSTOM, "name": "mxfp8_e4m3"}, "catalogue format"),
    ({**CUSTOM, "colour": 1}, "unknown key 'colour'"),
])
def test_bad_custom_formats_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        suite_from_spec("dot", block_a=bad, preset="mxdotp_fp8")


# --- stream and check with the c and steps fields ----------------------------------------------------------
@pytest.mark.parametrize("spec", [
    ("dot", {"block_a": "mxfp4_e2m1", "steps": True, "accumulator": {
        "mode": "aligned", "frac_bits": 12, "accumulate": "fused", "step": 8, "anchor": "fixed", "bypass": 20,
        "output_rounding": "rna", "output_overflow": "ieee"}}),
    ("dotgeneral", {"block_a": "mxfp4_e2m1", "c_input": True, "n_blocks": 2}),
    ("dotgeneral", {"block_a": "nvfp4", "preset": "blackwell_mxf4nvf4", "n_blocks": 4, "steps": True}),
])
def test_catalogue_size_and_count_with_an_accumulator_input(spec, tmp_path):
    suite = suite_from_spec(spec[0], **spec[1])
    rows = list(suite.stimulus(random.Random(3), 1))
    assert suite.catalogue_size(1) == len(rows)
    assert all("c" in row for row, _ in rows)
    directory = generate(suite, tmp_path, count=suite.catalogue_size(1) + 40)
    c = _lines(directory, "c")
    assert len(c) == suite.catalogue_size(1) + 40 and len(set(c[-40:])) > 20  # random Cs beyond the catalogue
    assert verify(tmp_path, sample=20).ok


def test_stream_and_check_carry_c_and_steps(tmp_path, capsysbinary):
    spec = {**MXDOTP, "accumulator": {"output_rounding": "rup"}}
    suite = suite_from_spec("dot", **spec)
    directory = generate(suite, tmp_path / "gold", count=120)
    out = io.BytesIO()
    golden_stream.write_stream(suite, out, 0, 1, pipeline.plan(suite, 1, 120))
    lines = out.getvalue().decode().split("\n")
    assert lines[0].endswith("inputs=a_scale:8,a_elems:256,b_scale:8,b_elems:256,c:32 "
                             "outputs=result:32,steps:128,flags:64")
    files = [[x for x in (directory / f"{f.name}.hex").read_text().splitlines()] for f in suite.fields]
    assert lines[1:-1] == [" ".join(row) for row in zip(*files)]
    assert check(directory, io.BytesIO(out.getvalue())).ok
    # a device whose step 2 of vector 9 is one ulp off: found in steps only, with the step decomposed
    dut = tmp_path / "dut"
    dut.mkdir()
    for name in ("result", "steps"):
        shutil.copy(directory / f"{name}.hex", dut / f"{name}.hex")
    steps = (dut / "steps.hex").read_text().splitlines()
    steps[9] = format(int(steps[9], 16) ^ (1 << 64), "032x")
    (dut / "steps.hex").write_text("\n".join(steps) + "\n")
    report = check(directory, dut)
    assert not report.ok and report.mismatches["steps"].tolist() == [9] and len(report.mismatches.get("result", [])) == 0
    text = "\n".join(report_lines(report))
    assert "steps[2]: expected" in text and "\n  c = " in text and "    c: " in text
