"""``mxsim golden check --explain`` on planted devices.

Each device is the same suite's vectors computed under a configuration the test chooses (one
option changed, a profile, two options), or the suite's own outputs with one bit flipped; the
test knows by construction which configuration the device follows, and explain must name it
first (or, for the flipped bit, name none). The suites are small (--count 48 to 96) so that the
whole file takes seconds.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from mxsim import cli
from mxsim.golden.device.check import check
from mxsim.golden.device.explain import explain, explain_lines
from mxsim.golden.storage.files import generate
from mxsim.golden.kinds.registry import suite_from_spec

AL = {"mode": "aligned", "frac_bits": 8, "width": 14}


def _suite(root: Path, kind: str, count: int, **params) -> Path:
    return generate(suite_from_spec(kind, **params), root, count=count)


def _columns(suite_dir: Path) -> tuple[dict, dict]:
    manifest = json.loads((suite_dir / "manifest.json").read_text())
    inputs = {name: [int(line, 16) for line in (suite_dir / f"{name}.hex").read_text().split()]
              for name in manifest["inputs"]}
    return manifest, inputs


def _plant(suite_dir: Path, dut: Path, **changes) -> Path:
    """A device that computes the suite's own inputs under the suite's params with ``changes``
    (each suite's reference ``compute``, the configuration being what the test varies)."""
    manifest, inputs = _columns(suite_dir)
    other = suite_from_spec(manifest["kind"], **{**manifest["params"], **changes})
    dut.mkdir(parents=True)
    names = list(inputs)
    rows = [other.compute(dict(zip(names, values)))[0] for values in zip(*inputs.values())]
    for f in other.outputs:
        (dut / f.file).write_text("".join(f.to_hex(row[f.name]) + "\n" for row in rows))
    return dut


def _explained(suite_dir: Path, dut, budget: float = 3600.0):  # never the limit here
    report = check(suite_dir, dut if isinstance(dut, Path) else io.BytesIO(dut), errors=0)
    assert report.mismatching.size and not report.errors
    found = explain(report, dut, budget=budget)
    text = "\n".join(explain_lines(found))
    print(text)  # what explain printed on this planted device (pytest -s shows it)
    return report, found, text


def test_a_flipped_bit_is_no_configuration(tmp_path):
    suite_dir = _suite(tmp_path / "s", "quantize", 64, block="mxfp8_e4m3")
    dut = tmp_path / "dut"
    dut.mkdir()
    for name in ("scale", "scale_exp", "codes"):
        shutil.copy(suite_dir / f"{name}.hex", dut / f"{name}.hex")
    lines = (dut / "codes.hex").read_text().split("\n")
    lines[40] = f"{int(lines[40], 16) ^ (1 << 100):0{len(lines[40])}x}"  # element 12's bit 4 of line 41
    (dut / "codes.hex").write_text("\n".join(lines))
    report, found, text = _explained(suite_dir, dut)
    assert report.mismatching.tolist() == [40]
    assert found.best is None and found.results  # tried, and nothing reproduces it
    assert "no configuration tried reproduces any of the 1 mismatching vector(s)" in text


def test_a_different_scale_rule_is_named_first(tmp_path):
    suite_dir = _suite(tmp_path / "s", "quantize", 96, block="mxfp8_e4m3")
    dut = _plant(suite_dir, tmp_path / "dut", options={"scale_rule": "ceil"})
    report, found, text = _explained(suite_dir, dut)
    best = found.best
    assert best.label == "scale_rule=ceil" and found.results[0] is best
    assert len(best.reproduced) == found.sampled_mismatching and best.broken == 0
    assert best.confirmed == (96, 0, [])
    assert "1. scale_rule=ceil reproduces all" in text and "the device matches it exactly" in text
    # other rules explain part of it, with the classes they leave
    rceil = next(r for r in found.results if r.label == "scale_rule=rceil")
    assert 0 < len(rceil.reproduced) < found.sampled_mismatching and sum(rceil.left.values())


def test_a_profile_is_named(tmp_path):
    suite_dir = _suite(tmp_path / "s", "quantize", 64, block="mxfp8_e5m2")
    dut = _plant(suite_dir, tmp_path / "dut", profile="idma_v0_7", options={})
    report, found, text = _explained(suite_dir, dut)
    assert found.best.label == "profile idma_v0_7" and found.best.confirmed == (64, 0, [])
    assert f"1. profile idma_v0_7 reproduces all {report.mismatching.size} mismatching" in text
    # the other profiles (all of them have MXFP8 E5M2) were tried and reproduce nothing
    others = [r for r in found.results if r.label.startswith("profile ") and r is not found.best]
    assert {r.label for r in others} == {"profile torchao_0_18_floor", "profile torchao_0_18_rceil",
                                         "profile gfloat_0_5", "profile tosa_1_1", "profile brevitas_0_13",
                                         "profile quark_0_13", "profile quark_0_13_floor", "profile quark_0_13_ceil",
                                         *(f"profile {library}_{mode}" for library in ("microxcaling",
                                                                                      "neural_compressor_3_10")
                                           for mode in ("nearest", "even", "floor"))}
    assert not any(len(r.reproduced) for r in others)


def test_two_changes_are_found_as_a_pair(tmp_path):
    suite_dir = _suite(tmp_path / "s", "quantize", 96, block="mxfp8_e4m3")
    dut = _plant(suite_dir, tmp_path / "dut", options={"rounding": "rtz", "inf_policy": "saturate"})
    report, found, text = _explained(suite_dir, dut)
    assert found.best.label == "rounding=rtz + inf_policy=saturate" and found.best.confirmed == (96, 0, [])
    alone = next(r for r in found.results if r.label == "rounding=rtz")
    assert alone.left["inf"] == found.sampled_mismatching - len(alone.reproduced)  # the rest are the Inf blocks
    assert found.pairs_tried >= 1


@pytest.mark.parametrize("accumulator, change, label", [
    ({"output": "bf16"}, {"output_rounding": "rtz"}, "output_rounding=rtz"),
    (AL, {"frac_bits": 9}, "frac_bits=9"),
])
def test_an_accumulator_change_of_a_dot_suite(tmp_path, accumulator, change, label):
    suite_dir = _suite(tmp_path / "s", "dot", 48, block_a="mxfp8_e4m3", accumulator=accumulator)
    dut = _plant(suite_dir, tmp_path / "dut", accumulator={**accumulator, **change})
    report, found, text = _explained(suite_dir, dut)
    assert found.best.label == label and found.results[0] is found.best
    assert found.best.confirmed == (48, 0, [])


def test_the_budget_stops_the_search_and_says_what_was_not_tried(tmp_path):
    suite_dir = _suite(tmp_path / "s", "quantize", 48, block="mxfp8_e4m3")
    dut = _plant(suite_dir, tmp_path / "dut", options={"scale_rule": "ceil"})
    report = check(suite_dir, dut, errors=0)
    found = explain(report, dut, budget=1e-9)
    text = "\n".join(explain_lines(found))
    assert found.budget_out and found.untried and not found.results
    assert "scale_rule=ceil" in found.untried
    assert f"budget spent: {len(found.untried)} configuration(s) not tried" in text
    assert "pairs of changes not tried either" in text


def test_cli_explain_from_a_directory_and_a_stream(tmp_path, capsys, monkeypatch):
    suite_dir = _suite(tmp_path / "s", "encode", 64, element="fp8_e4m3")
    dut = _plant(suite_dir, tmp_path / "dut", rounding="rtz")
    code = cli.main(["golden", "check", str(suite_dir), str(dut), "--errors", "0", "--explain", "--budget", "3600",
                     "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and "1. rounding=rtz reproduces all" in out
    # the same device as a stream on stdin (inputs and outputs per line), read twice by explain
    _, inputs = _columns(suite_dir)
    codes = (dut / "code.hex").read_text().split()
    stream = "".join(f"{x:08x} {c}\n" for x, c in zip(inputs["x"], codes)).encode()
    monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": io.BytesIO(stream)})())
    code = cli.main(["golden", "check", str(suite_dir), "-", "--errors", "0", "--explain", "--budget", "3600",
                     "--no-progress"])
    assert code == 1 and "1. rounding=rtz reproduces all" in capsys.readouterr().out


def test_cli_refuses_a_budget_without_explain(tmp_path, capsys):
    suite_dir = _suite(tmp_path / "s", "encode", 8, element="fp8_e4m3")
    assert cli.main(["golden", "check", str(suite_dir), str(tmp_path), "--budget", "5"]) == 2
    assert "--budget is for --explain" in capsys.readouterr().err


def test_a_cast_profile_of_an_encode_suite(tmp_path):
    suite_dir = generate(suite_from_spec("encode", element="fp8_e4m3"), tmp_path / "s")  # the catalogue
    dut = _plant(suite_dir, tmp_path / "dut", overflow="ieee")
    report, found, text = _explained(suite_dir, dut)
    # ml_dtypes' cast is overflow='ieee': the profile, tried first, is named; the single option
    # change makes the same suite and is not tried twice
    assert found.best.label == "profile ml_dtypes_0_6" and found.best.confirmed[1:] == (0, [])
    # saturate and ieee differ on the inputs beyond the largest finite value and on the infinities
    accounts = found.best.accounts
    assert found.duplicates == 1 and accounts["overflow"] + accounts["inf"] == len(found.best.reproduced)
