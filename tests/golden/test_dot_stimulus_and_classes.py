"""Structured stimulus and corner classes of the dot suite kinds (contract 3.3; issue 20):

* every canonical dot / dotgeneral suite reaches each class it declares reachable at least
  MIN_CLASS_VECTORS times (the committed manifests' coverage), and the declarations are what the
  configurations allow (every MXDOTP rounding mode, E5M2 Inf per operand);
* hand-worked vectors: each new class computed right, with a vector in it and one just outside it.
  Expected memberships come from the contract's definitions computed here with Fractions on values
  written by hand (element codes checked against ml_dtypes), never from the code under test.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mxsim.golden import CANONICAL_SUITES, suite_from_spec
from mxsim.golden.stimulus.dot import structured_count, structured_rows
from mxsim.golden.coverage.reach import MIN_CLASS_VECTORS

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
DOT_SUITES = [(kind, params) for kind, params in CANONICAL_SUITES if kind in ("dot", "dotgeneral")]
ROUNDING = {"exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below"}
SUBNORMAL = {"subnormal_near_tie"}


def _id(spec) -> str:
    return suite_from_spec(spec[0], **spec[1]).name


@pytest.mark.parametrize("spec", DOT_SUITES, ids=_id)
def test_canonical_dot_suite_reaches_every_reachable_class(spec):
    suite = suite_from_spec(spec[0], **spec[1])
    manifest = json.loads((GOLDEN / suite.kind / suite.name / "manifest.json").read_text())
    coverage = manifest["coverage"]
    short = {name: coverage.get(name, 0) for name in suite.reachable_classes()
             if coverage.get(name, 0) < MIN_CLASS_VECTORS}
    assert not short, f"{suite.name}: reachable classes under {MIN_CLASS_VECTORS} vectors: {short}"


def _reach(kind="dot", **params) -> frozenset:
    return suite_from_spec(kind, **params).reachable_classes()


@pytest.mark.parametrize("mode", ["rne", "rtz", "rdn", "rup", "rna"])
def test_every_mxdotp_mode_is_canonical_and_reaches_the_rounding_classes(mode):
    specs = [p for k, p in DOT_SUITES if p.get("preset") == "mxdotp_fp8" and p["block_a"] == "mxfp8_e4m3"
             and p.get("accumulator", {}).get("output_rounding", "rne") == mode]
    assert len(specs) == 1, f"MXDOTP {mode}: {len(specs)} canonical suites"
    reach = _reach(**specs[0])
    assert ROUNDING | SUBNORMAL | {"truncate", "c_below_window"} <= reach
    # rtz never increases a magnitude; every other mode does for some sign or remainder
    assert ("increment" in reach) == (mode != "rtz")
    # a negative value rounds to magnitude zero in every mode but rdn
    assert ("zero_result_sign" in reach) == (mode != "rdn")


def test_declarations_follow_the_configuration():
    e5m2 = _reach(block_a="mxfp8_e5m2", preset="mxdotp_fp8", steps=True)
    assert {"inf_a", "inf_b"} <= e5m2
    assert not {"inf_a", "inf_b"} & _reach(block_a="mxfp8_e4m3", preset="mxdotp_fp8", steps=True)  # E4M3 has no Inf
    mixed = _reach(block_a="mxfp8_e4m3", block_b="mxfp8_e5m2")
    assert "inf_b" in mixed and "inf_a" not in mixed
    # a separate datapath has no C: no c_below_window; FP4 sums are exact in fp32's normal range and upper
    # subnormal binades (a few significant bits): they round only in its three lowest binades, where they are aimed
    assert "c_below_window" not in _reach(block_a="mxfp8_e4m3")
    fp4 = _reach(block_a="mxfp4_e2m1")
    assert "exact" in fp4 and not {"tie", "near_tie_top_normal", "near_tie_bottom_normal"} & fp4
    assert {f"near_tie_{k}_sub{j}" for k in ("top", "bottom") for j in (1, 2, 3)} <= fp4
    # Hopper has no scales: its fp32_e8m13 output never reaches the subnormal range
    hopper = _reach(block_a="mxfp8_e4m3", preset="hopper_fp8_wgmma", unit_scales=True)
    assert ROUNDING <= hopper and not SUBNORMAL & hopper


@pytest.mark.parametrize("params", [
    {"block_a": "mxfp8_e5m2", "preset": "mxdotp_fp8", "steps": True, "exhaustive_pairs": False},
    {"block_a": "mxfp8_e4m3", "n_blocks": 4},
])
def test_structured_rows_are_counted_and_lead_the_catalogue(params):
    kind = "dotgeneral" if "n_blocks" in params else "dot"
    suite = suite_from_spec(kind, **params)
    rows = list(structured_rows(suite, random.Random(1)))
    assert len(rows) == structured_count(suite) > 0
    assert sum(1 for _ in suite.stimulus(random.Random(1), 1)) == suite.catalogue_size(1)


# --- hand-worked vectors -------------------------------------------------------------------------------
# E4M3 codes by value, checked against ml_dtypes below; E5M2 +Inf is 0x7C
E4M3 = {0: 0x00, 1: 0x38, 256: 0x78, 64: 0x68, 32: 0x60, Fraction(1, 16): 0x18, Fraction(1, 256): 0x02,
        Fraction(1, 512): 0x01}


def test_hand_worked_codes_are_what_ml_dtypes_says():
    for value, code in E4M3.items():
        assert Fraction(float(np.array([code], np.uint8).view(ml_dtypes.float8_e4m3fn)[0])) == value
    assert np.isinf(np.array([0x7C], np.uint8).view(ml_dtypes.float8_e5m2)[0])


def _fp32(value: Fraction, negative: bool = False) -> int:
    bits = int(np.array([float(value)], np.float32).view(np.uint32)[0])
    assert Fraction(float(np.array([bits], np.uint32).view(np.float32)[0])) == value, value
    return bits | (negative << 31)


def _word(codes, width=8, k=32) -> int:
    codes = list(codes) + [0] * (k - len(codes))
    return sum(c << (i * width) for i, c in enumerate(codes))


def _code(v) -> int:
    """An E4M3 code: a value of the E4M3 table, or a hex string."""
    return int(v, 16) if isinstance(v, str) else E4M3[v]


def _classes(suite, a, b, scale_a=127, scale_b=127, c=None) -> set:
    inputs = {"a_scale": scale_a, "b_scale": scale_b, "a_elems": _word([_code(v) for v in a]),
              "b_elems": _word([_code(v) for v in b])}
    if suite.has_c:
        inputs["c"] = c if c is not None else 0
    return suite.compute(inputs)[1]


def _ulp_remainder(total: Fraction, mantissa_bits: int = 23, emin: int = -126) -> Fraction:
    """The contract's rounding remainder r / ulp of an exact value, by definition."""
    t = 0
    while Fraction(2) ** (t + 1) <= total:
        t += 1
    while Fraction(2) ** t > total:
        t -= 1
    ulp = Fraction(2) ** (max(t, emin) - mantissa_bits)
    return (total % ulp) / ulp


MXDOTP = {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}
TWO = Fraction(2)


@pytest.mark.parametrize("c, inside, outside", [
    # products 1 * 1 on the grid 2^-34; C adds the remainder below fp32's ulp 2^-23 of 1.0
    (TWO**-24, "tie", "near_tie_top"),
    (TWO**-25, "below_half", "tie"),
    (TWO**-24 + TWO**-25, "near_tie_top", "near_tie_bottom"),
    (TWO**-24 + TWO**-26, "above_half", "near_tie_top"),  # one sticky bit, but not at the top
    (TWO**-24 + TWO**-47, "near_tie_bottom", "near_tie_top"),  # C's LSB (e_C - 23 = -47) is the lowest bit
    (TWO**-24 + TWO**-46, "above_half", "near_tie_bottom"),
    (TWO**-40, "c_below_window", "c_bypass"),  # |C| < 2^grid = 2^-34
    (TWO**-34, "below_half", "c_below_window"),  # C at the grid LSB: not below it
])
def test_fused_rounding_classes_hand_worked(c, inside, outside):
    remainder = _ulp_remainder(1 + c)
    expected = {"tie": Fraction(1, 2), "near_tie_top": Fraction(3, 4), "near_tie_bottom": Fraction(1, 2) + TWO**-24}
    if inside in expected:
        assert remainder == expected[inside]
    suite = suite_from_spec("dot", **MXDOTP)
    classes = _classes(suite, [1], [1], c=_fp32(c))
    assert inside in classes and outside not in classes, classes


def test_fused_subnormal_ties_hand_worked():
    """Scales 2^-127 and 2^-6 (X = -133): 64 * 1 -> 2^-127, 2^-8 * 2^-9 -> 2^-150, 2^-9 * 2^-9 -> 2^-151;
    fp32's subnormal ulp is 2^-149."""
    suite = suite_from_spec("dot", **MXDOTP)
    x = TWO**-133
    third = Fraction(1, 512)
    tie = (64 + Fraction(1, 256) * third) * x
    near = tie + third * third * x
    assert tie < TWO**-126 and _ulp_remainder(tie) == Fraction(1, 2) and _ulp_remainder(near) == Fraction(3, 4)
    got = _classes(suite, [64, Fraction(1, 256)], [1, third], 0, 121)
    assert "tie" in got and "subnormal_near_tie" not in got  # a tie is no near-tie
    got = _classes(suite, [64, Fraction(1, 256), third], [1, third, third], 0, 121)
    assert {"near_tie_top", "subnormal_near_tie"} <= got and "tie" not in got
    # the same near-tie in the normal range (1 + 2^-24 + 2^-25) is no subnormal one
    got = _classes(suite, [1], [1], c=_fp32(TWO**-24 + TWO**-25))
    assert "near_tie_top" in got and "subnormal_near_tie" not in got


@pytest.mark.parametrize("mode, negative, increments", [
    ("rne", False, True), ("rtz", False, False), ("rup", False, True), ("rup", True, False),
    ("rdn", True, True), ("rna", False, True),
])
def test_per_mode_classes_hand_worked(mode, negative, increments):
    """1 + 2^-24 + 2^-25 (above half): the rounding goes up in magnitude unless the mode truncates
    it for that sign."""
    suite = suite_from_spec("dot", **{**MXDOTP, "accumulator": {"output_rounding": mode}})
    a = ["b8"] if negative else [1]  # E4M3 0xB8 = -1
    got = _classes(suite, a, [1], c=_fp32(TWO**-24 + TWO**-25, negative))
    assert ("increment" in got) == increments and ("truncate" in got) == (not increments)


def test_zero_result_sign_hand_worked():
    """-2^-9 * 2^-9 * 2^-140 = -2^-158 lies below half of fp32's smallest subnormal 2^-149: rne gives
    -0 (magnitude zero: in the class); the same positive value gives +0 (not negative: outside); rdn
    gives -2^-149 (not zero: outside). Scales 2^-127 and 2^-13; MXDOTP's grid 2^-174 holds it."""
    ninth = Fraction(1, 512)
    assert ninth * ninth * TWO**-140 == TWO**-158 < TWO**-150
    for mode, code, inside in (("rne", "81", True), ("rne", "01", False), ("rdn", "81", False), ("rup", "81", True)):
        suite = suite_from_spec("dot", **{**MXDOTP, "accumulator": {"output_rounding": mode}})
        got = _classes(suite, [code], [ninth], 0, 114)
        assert ("zero_result_sign" in got) == inside, (mode, code, got)
    separate = suite_from_spec("dot", block_a="mxfp8_e4m3")  # -2^-272 with both scales 2^-127
    assert "zero_result_sign" in _classes(separate, ["81"], [ninth], 0, 0)
    assert "zero_result_sign" not in _classes(separate, ["01"], [ninth], 0, 0)
    assert "zero_result_sign" not in _classes(separate, [1, "b8"], [1, 1])  # an exact zero: no rounding


def test_separate_rounding_classes_hand_worked():
    """256 * 256 = 2^16 (fp32 ulp 2^-7) plus 2^-4 * 2^-4 = 2^-8 (half) and 2^-9 * 2^-9 = 2^-18 (the
    exact register's LSB, E4M3 x E4M3)."""
    suite = suite_from_spec("dot", block_a="mxfp8_e4m3")
    sixteenth, ninth = Fraction(1, 16), Fraction(1, 512)
    assert _ulp_remainder(2**16 + sixteenth**2) == Fraction(1, 2)
    assert _ulp_remainder(2**16 + sixteenth**2 + ninth**2) == Fraction(1, 2) + TWO**-11  # 2^-18 / 2^-7
    got = _classes(suite, [256, sixteenth], [256, sixteenth])
    assert "tie" in got and "near_tie_bottom" not in got
    got = _classes(suite, [256, sixteenth, ninth], [256, sixteenth, ninth])
    assert "near_tie_bottom" in got and "tie" not in got
    got = _classes(suite, [256, sixteenth, Fraction(1, 256)], [256, sixteenth, ninth])  # 2^-17: not the lowest bit
    assert "above_half" in got and "near_tie_bottom" not in got


def test_inf_per_operand_hand_worked():
    suite = suite_from_spec("dot", block_a="mxfp8_e5m2")
    inputs = {"a_scale": 127, "b_scale": 127, "a_elems": _word([0x3C, 0x7C]), "b_elems": _word([0x3C, 0x3C])}
    got = suite.compute(inputs)[1]
    assert "inf_a" in got and "inf_b" not in got
    got = suite.compute({**inputs, "a_elems": inputs["b_elems"], "b_elems": inputs["a_elems"]})[1]
    assert "inf_b" in got and "inf_a" not in got


@pytest.mark.parametrize(
    "magnitude, low, expected",
    [
        # fp32 output, s = 2^-149: a fused or exact sum's near-ties in the zero band and the lowest binades
        (Fraction(3, 4) * Fraction(2) ** -149, -160, {"near_tie_top_zero_band"}),
        (Fraction(2) ** -150 + Fraction(2) ** -160, -160, {"near_tie_bottom_zero_band"}),
        (Fraction(7, 4) * Fraction(2) ** -149, -160, {"near_tie_top_sub1"}),
        (Fraction(3, 2) * Fraction(2) ** -149 + Fraction(2) ** -160, -160, {"near_tie_bottom_sub1"}),
        (Fraction(11, 4) * Fraction(2) ** -149, -160, {"near_tie_top_sub2"}),
        (Fraction(23, 4) * Fraction(2) ** -149, -160, {"near_tie_top_sub3"}),
        (Fraction(2) ** -130 * Fraction(7, 4), -160, set()),  # 2^-130: a higher subnormal binade, no class of its own
        (1 + Fraction(2) ** -24 + Fraction(2) ** -25, -60, {"near_tie_top_normal"}),
        (1 + Fraction(2) ** -24 + Fraction(2) ** -60, -60, {"near_tie_bottom_normal"}),
    ],
)
def test_band_classes_of_the_output_rounding_hand_worked(magnitude, low, expected):
    from mxsim.formats import get_format
    from mxsim.golden.coverage.output_rounding import output_rounding_classes

    out = get_format("fp32", kind="float")
    classes = output_rounding_classes(magnitude, False, low, out, magnitude)  # the result does not matter here
    assert {c for c in classes if c.startswith(("near_tie_top_", "near_tie_bottom_"))} == expected


def test_aimed_bands_are_declared_where_the_datapath_holds_them():
    """The exact MXFP8 E4M3 dot aims at both near-ties in the normal range and in fp32's three lowest
    subnormal binades; MXDOTP's fixed grid (2^(X - 34)) has no product bit at its lowest position and
    C cannot hold bits below 2^-149, so its bottom near-ties exist only in the normal range there."""
    exact = _reach(block_a="mxfp8_e4m3")
    assert {f"near_tie_{k}_{b}" for k in ("top", "bottom") for b in ("normal", "sub1", "sub2", "sub3")} <= exact
    fused = _reach(block_a="mxfp8_e4m3", preset="mxdotp_fp8", steps=True)
    assert {"near_tie_top_sub1", "near_tie_top_sub2", "near_tie_top_sub3", "near_tie_bottom_normal"} <= fused
    assert not {"near_tie_bottom_sub1", "near_tie_bottom_sub2", "near_tie_bottom_sub3"} & fused
