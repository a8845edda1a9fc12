"""`mxsim identify`: what it refuses and what it names (issue 32 items 5 and 6).

* A budget that is not a positive number of seconds, and codes, scales or sub-scales that are not
  integers of their field's width, are refused as `golden check --budget` and
  MXTensor.from_codes refuse them (a budget of 0 used to answer "no candidate reproduces any
  block"; codes given as floats, +0.7, were truncated and matched 100 %).
* A tensor a library made is reported with every configuration that reproduces all its blocks
  ("indistinguishable here: ..."), not one winner by fewest changes (the defaults used to be named
  alone for Brevitas MXFP8, compressed-tensors NVFP4 and microxcaling MXFP4 tensors), and an option
  set whose options equal a profile's is named by the profile. The libraries' own outputs are the
  expected values (tests/library_oracles.py; MXSIM_ORACLES=/tmp/mxsim-ci-oracles).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import library_oracles
import mxsim
from mxsim.cli import main
from mxsim.golden.device.identify import identify, identify_lines
from mxsim.options.profiles import PROFILES


def _missing(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI installs it (.ci/run)")
    pytest.skip(reason)


def _gaussian(seed: int, blocks: int, size: int) -> np.ndarray:
    """Plain Gaussian blocks (no zero block, no -0, no ties placed on purpose): the kind of tensor on
    which several configurations agree."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((blocks, size)) * np.ldexp(1.0, rng.integers(-8, 8, size=(blocks, 1)))).astype(
        np.float32)


def _defaults_tensor(tmp_path):
    source = _gaussian(1, 4, 32)
    t = mxsim.quantize(source, "mxfp8_e4m3")
    np.save(tmp_path / "x.npy", source)
    return source, t


# --------------------------------------------------------------------------------------------------
# item 5: refused inputs

@pytest.mark.parametrize("budget", [0, 0.0, -1, math.nan, True, "60"])
def test_identify_refuses_a_budget_that_is_no_positive_number(tmp_path, budget):
    source, t = _defaults_tensor(tmp_path)
    with pytest.raises(ValueError, match=r"budget=.* is not allowed; expected a positive number of seconds"):
        identify(source, t.scales, t.codes, "mxfp8_e4m3", budget=budget)


@pytest.mark.parametrize("budget", ["0", "-1", "nan"])
def test_identify_command_refuses_a_budget_that_is_no_positive_number(tmp_path, capsys, budget):
    source, t = _defaults_tensor(tmp_path)
    mxsim.save(t, tmp_path / "t.mxt")
    assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / "t.mxt"), f"--budget={budget}"]) == 2
    captured = capsys.readouterr()
    assert "--budget=" in captured.err and "expected a positive number of seconds" in captured.err
    assert "no candidate" not in captured.out


def test_identify_refuses_codes_given_as_floats(tmp_path, capsys):
    source, t = _defaults_tensor(tmp_path)
    codes = np.asarray(t.codes).astype(np.float64) + 0.7  # truncated back to the same codes by astype(int64)
    with pytest.raises(ValueError, match="codes must be an integer array, got dtype float64"):
        identify(source, t.scales, codes, "mxfp8_e4m3")
    np.save(tmp_path / "codes.npy", codes)
    np.save(tmp_path / "scales.npy", np.asarray(t.scales))
    assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / "codes.npy"), str(tmp_path / "scales.npy"),
                 "--format", "mxfp8_e4m3"]) == 2
    captured = capsys.readouterr()
    assert "codes must be an integer array, got dtype float64" in captured.err and "identified" not in captured.out


def test_identify_refuses_scales_and_codes_outside_their_width(tmp_path):
    source, t = _defaults_tensor(tmp_path)
    scales = np.asarray(t.scales).astype(np.int64)
    with pytest.raises(ValueError, match="scales must be an integer array, got dtype float32"):
        identify(source, scales.astype(np.float32), t.codes, "mxfp8_e4m3")
    wide = scales.copy()
    wide.flat[0] += 256  # the same byte modulo 256
    with pytest.raises(ValueError, match=r"scales hold values outside \[0, 255\]"):
        identify(source, wide, t.codes, "mxfp8_e4m3")
    codes = np.asarray(t.codes).astype(np.int64)
    codes.flat[0] = -1
    with pytest.raises(ValueError, match=r"codes hold values outside \[0, 15\]"):
        identify(source[:, :32], scales, codes, "mxfp4_e2m1")


def test_identify_refuses_subscales_outside_their_width():
    source = _gaussian(2, 3, 16)
    t = mxsim.quantize(source, "mx6")
    subscales = np.asarray(t.subscales).astype(np.int64)
    subscales.flat[0] = 2  # MX6 shift bits are 1 bit wide
    with pytest.raises(ValueError, match=r"subscales hold values outside \[0, 1\]"):
        identify(source, t.scales, t.codes, "mx6", subscales=subscales)


# --------------------------------------------------------------------------------------------------
# item 6: every configuration that reproduces the tensor

def _first_round(fmt: str) -> list[tuple[str | None, str]]:
    """(profile or None, label) of the configurations identify tries first: every block profile with
    the format, then the defaults."""
    named = [(name, f"profile {name}") for name, p in PROFILES.items() if p.kind == "block" and fmt in p.formats]
    return named + [(None, "defaults")]


def _reproducing(source, fmt, want_scales, want_codes, **extra) -> set[str]:
    """The labels of the first-round configurations whose quantize of ``source`` gives the library's
    scale bytes and codes on every block (the library's output is the expected value)."""
    labels = set()
    for profile, label in _first_round(fmt):
        try:
            t = mxsim.quantize(source, fmt, profile=profile)
        except ValueError:
            continue
        scales = np.asarray(t.scales).reshape(-1)
        if np.array_equal(scales, np.asarray(want_scales).reshape(-1)) and np.array_equal(
                np.asarray(t.codes).reshape(len(scales), -1), np.asarray(want_codes).reshape(len(scales), -1)):
            labels.add(label)
    return labels


def _assert_every_reproducing_configuration_named(report, source, fmt, scales, codes, library_profile: str):
    want = _reproducing(source, fmt, scales, codes)
    assert f"profile {library_profile}" in want and "defaults" in want  # the case of the issue
    best = [c.label.split(" (= ")[0] for c in report.best]
    assert set(best) == want and len(best) == len(want)
    assert all(c.explained == report.blocks for c in report.best)
    assert all(c.explained < report.blocks for c in report.results if c not in report.best)
    assert best.index(f"profile {library_profile}") < best.index("defaults")  # a profile is named first
    first = identify_lines(report)[0]
    assert first.startswith("identified: indistinguishable here: ") and f"profile {library_profile}" in first
    assert first.endswith(f"; each reproduces {report.blocks} of {report.blocks} blocks (100.0 %)")


@pytest.mark.parametrize("mode", ["nearest", "even"])
def test_identify_names_every_configuration_of_a_microxcaling_mxfp4_tensor(mode):
    module = library_oracles.neural_compressor_mx()
    if module is None:
        _missing("neural-compressor 3.10 is not installed (set MXSIM_ORACLES to its --target directory)")
    source = _gaussian(11, 48, 32)
    scales, codes, _ = library_oracles.microxcaling(module, source, "mxfp4_e2m1", mode)
    report = identify(source, scales, codes, "mxfp4_e2m1")
    _assert_every_reproducing_configuration_named(report, source, "mxfp4_e2m1", scales, codes, f"microxcaling_{mode}")


def test_identify_names_every_configuration_of_a_brevitas_mxfp8_tensor():
    module = library_oracles.brevitas_quantizer("mxfp8_e4m3")
    if module is None:
        _missing("brevitas 0.13.4 is not installed (set MXSIM_ORACLES to its --target directory)")
    source = _gaussian(12, 48, 32)
    scales, codes, _, mx = library_oracles.brevitas(module, source, "mxfp8_e4m3")
    assert mx.all()
    report = identify(source, scales, codes, "mxfp8_e4m3")
    _assert_every_reproducing_configuration_named(report, source, "mxfp8_e4m3", scales, codes, "brevitas_0_13")


def test_identify_names_every_configuration_of_a_compressed_tensors_nvfp4_tensor():
    ct = library_oracles.compressed_tensors()
    if ct is None:
        _missing("compressed-tensors 0.20.0 is not installed (set MXSIM_ORACLES to its --target directory)")
    source = _gaussian(13, 48, 16)
    _, scales, codes, _ = library_oracles.compressed_tensors_nvfp4(ct, source)
    report = identify(source, scales, codes, "nvfp4")
    _assert_every_reproducing_configuration_named(report, source, "nvfp4", scales, codes, "compressed_tensors_0_20")


def test_an_option_set_equal_to_a_profile_is_named_by_the_profile():
    """MXFP8 E4M3 under gfloat_0_5 is the defaults with inf_policy='max_scale' (int8_allow_neg2 is for
    MXINT8 only). A tensor no first candidate reproduces whole sends identify to single option changes;
    'defaults + inf_policy=max_scale' is then the profile, named once as the profile."""
    source = _gaussian(14, 8, 32)
    source[0, 0] = np.inf
    source[1, 0] = -np.inf
    t = mxsim.quantize(source, "mxfp8_e4m3", inf_policy="max_scale", rounding="rtz")
    report = identify(source, t.scales, t.codes, "mxfp8_e4m3")
    labels = [c.label for c in report.results]
    assert "profile gfloat_0_5" in labels
    assert "defaults + inf_policy='max_scale'" not in labels
    assert len(labels) == len(set(labels))
    gfloat = next(c for c in report.results if c.label == "profile gfloat_0_5")
    # the blocks without an Inf quantize as the defaults' nearest-even rounding gives them, which rtz may not
    assert gfloat.explained < report.blocks


def test_identify_command_refuses_a_negative_top(tmp_path, capsys):
    source, t = _defaults_tensor(tmp_path)
    mxsim.save(t, tmp_path / "t.mxt")
    assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / "t.mxt"), "--top", "-1"]) == 2
    assert "--top=-1 is not allowed; expected a non-negative integer" in capsys.readouterr().err
