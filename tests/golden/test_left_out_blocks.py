"""Quantize suites under options that refuse blocks (issue 32 item 11; docs/numerics.md section 6.2).

The profiles brevitas_0_13, quark_0_13 (+_floor/_ceil) and compressed_tensors_0_20 have no MX
encoding for some of the catalogue's blocks; `golden generate --suite quantize` failed on them
("use another profile"). Now those blocks are left out (replaced by ordinary random blocks, so the
catalogue keeps its length) and the manifest counts them per option. The expected counts are
worked by hand from the catalogue's structure (mxsim.golden.kinds.quantize: the directed kinds
all_zero, nan, inf and tiny twice each; six low-scale blocks whose exponent falls 1, 2 and 3 below
scale_min with significands 1 and 1.5; decision layouts at the anchors 2^0 and 2^scale_min), and
the blocks left in are checked against the contract's refusal rule computed here."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mxsim.cli import main
from mxsim.golden import generate, suite_from_spec, verify


def _generate(tmp_path, block: str, profile: str):
    suite = suite_from_spec("quantize", block=block, profile=profile)
    directory = generate(suite, tmp_path)
    manifest = json.loads((directory / "manifest.json").read_text())
    report = verify(tmp_path)
    assert report.ok, report.problems
    x = [int(line, 16) for line in (directory / "x.hex").read_text().split()]
    k = suite.fmt.block_size
    words = np.array([[(v >> (32 * i)) & 0xFFFFFFFF for i in range(k)] for v in x], dtype=np.uint32)
    blocks = words.view(np.float32).astype(np.float64)
    assert manifest["count"] == suite.catalogue_size(1) == len(blocks)  # the catalogue kept its length
    return manifest, blocks


def _amax(blocks: np.ndarray) -> np.ndarray:
    return np.nanmax(np.abs(np.where(np.isinf(blocks), 0, blocks)), axis=1)


def test_brevitas_leaves_out_blocks_below_2_to_the_minus_33(tmp_path):
    """Brevitas (scale_value_min '1e-10') has no MX encoding for amax = 0 or below 2^-33: the two all_zero and
    the two tiny (< 2^-126) directed blocks and the six low-scale blocks (amax <= 1.5 * 2^(-127 - 1 + 8)) are
    left out: 10; the decision layout at anchor 2^-127 (amax about 2^-119) makes none: 1 layout."""
    manifest, blocks = _generate(tmp_path, "mxfp8_e4m3", "brevitas_0_13")
    assert manifest["left_out"]["blocks"] == {"scale_value_min='1e-10'": 10}
    assert manifest["left_out"]["decision_layouts"] == {"scale_value_min='1e-10'": 1}
    assert "left out" in manifest["left_out"]["rule"]
    amax = _amax(blocks)
    assert (amax >= 2.0**-33).all()  # no block Brevitas refuses is left in (none lies near the boundary)


@pytest.mark.parametrize("profile, count", [("quark_0_13_floor", 8), ("quark_0_13_ceil", 7)])
def test_quark_floor_and_ceil_leave_out_scales_below_2_to_the_minus_127(tmp_path, profile, count):
    """scale_underflow 'fp32_pow' (MXFP8 E4M3, emax 8): E = floor or ceil(log2 amax) - 8 in [-149, -127) has no
    E8M0 code. Floor: the two tiny blocks (amax < 2^-126: E <= -135) and all six low-scale blocks (E = -128, -129,
    -130): 8. Ceil: the low-scale block of amax 1.5 * 2^-120 gets E = -119 - 8 = -127, which E8M0 holds: 7."""
    manifest, blocks = _generate(tmp_path, "mxfp8_e4m3", profile)
    assert manifest["left_out"] == {"blocks": {"scale_underflow='fp32_pow'": count},
                                    "rule": manifest["left_out"]["rule"]}
    amax = _amax(blocks)
    log2 = np.floor(np.log2(amax[amax > 0])) if profile.endswith("floor") else np.ceil(np.log2(amax[amax > 0]))
    exponent = log2 - 8
    assert not ((exponent >= -149) & (exponent < -127)).any()


def test_quark_mx6_leaves_out_nan_and_inf_blocks(tmp_path):
    """Quark's MX6 (nan_blocks and inf_policy 'error'): the two nan and the two inf directed blocks."""
    manifest, blocks = _generate(tmp_path, "mx6", "quark_0_13")
    assert manifest["left_out"]["blocks"] == {"inf_policy='error'": 2, "nan_blocks='error'": 2}
    assert np.isfinite(blocks).all()


def test_compressed_tensors_leaves_out_nan_blocks(tmp_path):
    manifest, blocks = _generate(tmp_path, "mxfp4_e2m1", "compressed_tensors_0_20")
    assert manifest["left_out"]["blocks"] == {"nan_blocks='error'": 2}
    assert not np.isnan(blocks).any() and np.isinf(blocks).any()  # an Inf block is the NaN block it encodes


def test_a_suite_that_refuses_nothing_has_no_left_out_key(tmp_path):
    for params in ({"block": "mxfp8_e4m3"}, {"block": "mxfp8_e4m3", "profile": "quark_0_13"}):
        directory = generate(suite_from_spec("quantize", **params), tmp_path)
        assert "left_out" not in json.loads((directory / "manifest.json").read_text())


def test_generate_command_takes_a_profile_that_refuses_blocks(tmp_path, capsys):
    params = json.dumps({"block": "mxint8", "profile": "brevitas_0_13"})
    assert main(["golden", "generate", str(tmp_path), "--suite", "quantize", "--params", params]) == 0
    assert main(["golden", "verify", str(tmp_path)]) == 0
    assert "all match" in capsys.readouterr().out
    manifest = json.loads(next(tmp_path.rglob("manifest.json")).read_text())
    assert math.fsum(manifest["left_out"]["blocks"].values()) >= 4  # all_zero and tiny, twice each


def test_a_replacement_block_is_flagged_random(tmp_path):
    """The 10 blocks Brevitas leaves out of the MXFP8 E4M3 catalogue are replaced by random draws: the
    catalogue's random lines are its 100 level-1 draws plus those 10."""
    suite = suite_from_spec("quantize", block="mxfp8_e4m3", profile="brevitas_0_13")
    directory = generate(suite, tmp_path)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["coverage"]["random"] == 100 + 10
    plain = generate(suite_from_spec("quantize", block="mxfp8_e4m3"), tmp_path)
    assert json.loads((plain / "manifest.json").read_text())["coverage"]["random"] == 100
