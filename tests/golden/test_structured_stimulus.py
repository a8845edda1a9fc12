"""Structured stimulus (mxsim.golden.stimulus.patterns), the rounding-decision classes and the reachable-class
check (docs/numerics.md section 3.3; issue 20).

Expected values are hand-worked or computed in the test from the contract's definition with
Fractions (:func:`_definition`), never read from the code under test."""

from __future__ import annotations

import json
import struct
from fractions import Fraction
from pathlib import Path

import pytest

from mxsim.golden import generate
from mxsim.golden.canonical import canonical_suites
from mxsim.golden.coverage.catalogue import CLASSES, FLAGS_BITS, flag_bits
from mxsim.golden.coverage.reach import MIN_CLASS_VECTORS, StarvedClassError
from mxsim.golden.values import fp32_value
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.golden.stimulus.patterns import (
    CASES, accumulator_values, exponent_boundaries, fp32_step, grid_intervals, pattern_values, rounding_cases, significand_patterns,
)
from mxsim.formats import get_format
from mxsim.ref.exact import Exact

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
DECISIONS = {"exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
             "subnormal_near_tie", "increment", "truncate", "zero_result_sign"}
P = Fraction(2) ** -23  # fp32's last bit at magnitudes in [1, 2)


def _bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _definition(x: Fraction, lo: Fraction, hi: Fraction, r: Fraction, result: Fraction, negative: bool,
                subnormal: bool) -> set:
    """The decision classes of docs/numerics.md section 3.3 for magnitude x in [lo, hi), input resolution r,
    result magnitude ``result``: guard = bit of weight u/2, sticky bits from u/4 down to r."""
    u = hi - lo
    f = (x - lo) / u  # in [0, 1), a multiple of r / u
    out = set()
    out |= {"exact"} if f == 0 else set()
    out |= {"below_half"} if 0 < f < Fraction(1, 2) else set()
    out |= {"tie"} if f == Fraction(1, 2) else set()
    out |= {"above_half"} if f > Fraction(1, 2) else set()
    if 4 * r <= u:
        near = {"near_tie_top": f == Fraction(3, 4), "near_tie_bottom": f == Fraction(1, 2) + r / u,
                "near_tie_below": f == Fraction(1, 2) - r / u}
        out |= {name for name, hit in near.items() if hit}
    if subnormal and out & {"near_tie_top", "near_tie_bottom", "near_tie_below"}:
        out.add("subnormal_near_tie")
    out |= {"increment"} if result > x else {"truncate"} if result < x else set()
    if negative and result == 0:
        out.add("zero_result_sign")
    return out


# --- stimulus -----------------------------------------------------------------------------------
def test_significand_patterns_of_four_bits_hand_worked():
    # zero, all ones, single ones (top first), ones from the top, ones from the bottom, zeros from the
    # top, zeros from the bottom, alternating; each once, in that order
    assert significand_patterns(4) == (0b0000, 0b1111, 0b1000, 0b0100, 0b0010, 0b0001, 0b1100, 0b1110, 0b0011,
                                       0b0111, 0b1010, 0b0101)
    with pytest.raises(ValueError, match="bits=-1"):
        significand_patterns(-1)


def test_exponent_boundaries_cover_every_subnormal_band_of_e4m3():
    e4m3 = get_format("fp8_e4m3")  # emin -6, 3 mantissa bits, emax 8
    assert exponent_boundaries(e4m3) == (-11, -10, -9, -8, -7, -6, -5, 0, 7, 8, 9)
    assert pattern_values([0], 2, [0b01, 0b11]) == [Fraction(5, 4), Fraction(7, 4)]
    # C whose last bit is 2^-34 (MXDOTP's grid at unit scales) and 2 below it: 2^-11 and 2^-13 times
    # (1 + p / 2^23); 2^(-140 + 23) = 2^-117 is normal, 2^(200 + 23) is not fp32 and is left out
    assert accumulator_values(-34, [0, -2, 200], [0, 1]) == [Fraction(1, 2**11), (1 + Fraction(1, 2**23)) / 2**11,
                                                             Fraction(1, 2**13), (1 + Fraction(1, 2**23)) / 2**13]


def test_rounding_cases_of_an_e4m3_interval_hand_worked():
    """[1, 1.125) of E4M3 (u = 1/8) with fp32 inputs (last bit 2^-23): each case's value, and the
    contract's definition (Fractions) puts each value in its case."""
    got = rounding_cases(Fraction(1), Fraction(9, 8))
    mid = Fraction(17, 16)
    assert got == [("exact", 1), ("below_half", 1 + P), ("below_half", Fraction(33, 32)),
                   ("near_tie_below", mid - P), ("tie", mid), ("near_tie_bottom", mid + P),
                   ("near_tie_top", Fraction(35, 32)), ("above_half", Fraction(9, 8) - P)]
    for case, x in got:
        assert case in _definition(x, Fraction(1), Fraction(9, 8), fp32_step(x), Fraction(0), False, False)
    assert [c for c in CASES] == ["exact", "below_half", "near_tie_below", "tie", "near_tie_bottom", "near_tie_top",
                                  "above_half"]


def test_grid_intervals_name_every_band_of_e2m1():
    grid = (0, Fraction(1, 2), 1, Fraction(3, 2), 2, 3, 4, 6)
    bands = [band for _, _, band in grid_intervals(grid, Fraction(1))]
    assert bands[0] == "zero" and "subnormal_-1" in bands and {"normal_0", "normal_1", "normal_2"} <= set(bands)


# --- the classes, hand-worked (a value in the class, one just outside) --------------------------
E4M3_SUB = Fraction(1, 512)  # E4M3's smallest subnormal


@pytest.mark.parametrize(
    "x, rounding, inside, outside",
    [
        (Fraction(35, 32), "rne", "near_tie_top", None),  # 1 + 1/16 + 1/32: 3/4 of [1, 9/8)
        (Fraction(35, 32) + P, "rne", "above_half", "near_tie_top"),  # one more bit: not only the top sticky bit
        (Fraction(17, 16) + P, "rne", "near_tie_bottom", None),
        (Fraction(17, 16) + 2 * P, "rne", "above_half", "near_tie_bottom"),  # the bit above the bottom one
        (Fraction(17, 16) - P, "rne", "near_tie_below", None),
        (Fraction(17, 16) - 2 * P, "rne", "below_half", "near_tie_below"),
        (Fraction(17, 16), "rne", "tie", "above_half"),
        (7 * E4M3_SUB / 4, "rne", "subnormal_near_tie", None),  # 3/4 of [2^-9, 2^-8), a subnormal band
        (Fraction(35, 32), "rne", "near_tie_top", "subnormal_near_tie"),  # the same case in the normal range
        (-E4M3_SUB / 4, "rne", "zero_result_sign", None),  # rounds to -0
        (-3 * E4M3_SUB / 4, "rne", "increment", "zero_result_sign"),  # rounds to -2^-9
        (E4M3_SUB / 4, "rne", "truncate", "zero_result_sign"),  # +0: a positive value
        (-E4M3_SUB / 4, "rdn", "increment", "zero_result_sign"),  # toward -inf: -2^-9
        (Fraction(35, 32), "rtz", "truncate", "increment"),  # rne would increment; rtz never does
        (Fraction(35, 32), "rup", "increment", "truncate"),
        (-Fraction(35, 32), "rup", "truncate", "increment"),  # toward +inf: a negative value shrinks
        (Fraction(9, 8), "rne", "exact", "below_half"),
    ],
)
def test_encode_decision_classes_hand_worked(x, rounding, inside, outside):
    suite = suite_from_spec("encode", element="fp8_e4m3", rounding=rounding)
    _, classes = suite.compute({"x": _bits(float(x))})
    assert inside in classes
    if outside is not None:
        assert outside not in classes


def _e4m3_interval(m: Fraction) -> tuple[Fraction, Fraction, bool]:
    """[lo, hi) of E4M3 around m < 448, from its definition: spacing 2^(max(floor(log2 m), -6) - 3)."""
    e = max(m.numerator.bit_length() - m.denominator.bit_length() - (m < Fraction(2) ** (
        m.numerator.bit_length() - m.denominator.bit_length())), -6) if m else -6
    u = Fraction(2) ** (e - 3)
    lo = (m // u) * u
    return lo, lo + u, lo + u <= Fraction(1, 64)


def test_encode_classes_match_the_definition_on_every_rounding_case():
    """Every directed value of the E4M3 encode suite within range: its decision classes equal the
    contract's definition computed with Fractions (interval, fp32 resolution, the result decoded by
    ml_dtypes)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import numpy as np

    suite = suite_from_spec("encode", element="fp8_e4m3")
    checked = 0
    for bits in suite._directed_bits:
        x32 = np.array([bits], dtype=np.uint32).view(np.float32)[0]
        value = Fraction(float(x32)) if np.isfinite(x32) else None
        if value is None or value == 0 or abs(value) > 448:
            continue
        m = abs(value)
        lo, hi, subnormal = _e4m3_interval(m)
        result = abs(Fraction(float(x32.astype(ml_dtypes.float8_e4m3fn).astype(np.float64))))
        r = Fraction(2) ** (max(m.numerator.bit_length() - m.denominator.bit_length()
                                - (m < Fraction(2) ** (m.numerator.bit_length() - m.denominator.bit_length())),
                                -126) - 23)
        expected = _definition(m, lo, hi, r, result, value < 0, subnormal)
        if result > m and hi == result and hi.numerator & (hi.numerator - 1) == 0 and hi.denominator & (
                hi.denominator - 1) == 0:
            expected.add("carry")
        _, classes = suite.compute({"x": bits})
        assert classes & (DECISIONS | {"carry"}) == expected, (hex(bits), value)
        checked += 1
    assert checked > 1000


def _quantize(block, values, **params):
    suite = suite_from_spec("quantize", block=block, **params)
    k = suite.fmt.block_size
    word = int.from_bytes(struct.pack(f"<{k}f", *(values + [0.0] * (k - len(values)))), "little")
    inputs = {"x": word}
    if suite.fmt.tensor_scale is not None:  # the suite's own tensor scale of the block (fp32(amax / 2688))
        inputs = suite._inputs([Exact(int(v < 0), abs(Fraction(v))) for v in values + [0.0] * (k - len(values))])
    _, classes = suite.compute(inputs)
    _, flags = suite.compute_batch({name: [value] for name, value in inputs.items()})
    assert flags[0] == flag_bits(classes)  # the fast path's flags are the reference's
    return classes


@pytest.mark.parametrize(
    "block, values, params, inside, outside",
    [
        # E = floor(log2 448) - 8 = 0: the elements round as E4M3 values
        ("mxfp8_e4m3", [448.0, 35 / 32], {}, "near_tie_top", None),
        ("mxfp8_e4m3", [448.0, 35 / 32 + 2**-23], {}, "above_half", "near_tie_top"),
        ("mxfp8_e4m3", [448.0, -(2.0**-11)], {}, "zero_result_sign", None),  # -2^-11 rounds to -0
        ("mxfp8_e4m3", [448.0, 2.0**-11], {}, "truncate", "zero_result_sign"),
        ("mxfp8_e4m3", [448.0, -(2.0**-11)], {}, "negative_zero", None),  # the code -0
        ("mxfp8_e4m3", [-0.0], {}, "negative_zero", None),  # a -0 input
        ("mxfp8_e4m3", [0.0], {}, "all_zero", "negative_zero"),
        # the same block under a profile (iDMA: int8 exponent scale, as_normal subnormals) and another mode
        ("mxfp8_e5m2", [57344.0, 1 + 1 / 8 + 1 / 16], {"profile": "idma_v0_7"}, "near_tie_top", None),
        ("mxfp8_e4m3", [448.0, 35 / 32], {"options": {"rounding": "rtz"}}, "truncate", "increment"),
        # NVFP4: amax 2688 gives s_t = 1 and block scale 448, so D = 448 (not a power of two): 2.75 * 448
        # is 3/4 of E2M1's [2, 3)
        ("nvfp4", [2688.0, 2.75 * 448], {}, "near_tie_top", None),
        ("nvfp4", [2688.0, 2.75 * 448 + 2**-13], {}, "above_half", "near_tie_top"),  # 1232 has last bit 2^-13
        # MX9 (7 magnitude bits, E = floor(log2 1.5) = 0, pair 0 holds 1.5 so tau = 0: grid 2^-6):
        # 1 + 2^-7 + 2^-8 is 3/4 of [1, 1 + 2^-6)
        ("mx9", [1.5, 1 + 2**-7 + 2**-8], {}, "near_tie_top", None),
    ],
)
def test_quantize_decision_classes_hand_worked(block, values, params, inside, outside):
    classes = _quantize(block, values, **params)
    assert inside in classes
    if outside is not None:
        assert outside not in classes


def test_quantize_divisors_follow_the_reference_for_every_profile_and_mode():
    """The divisor D the classes use gives the reference's element code: encode(x / D) (exact,
    saturating, the suite's rounding) equals the block's code, on the suite's decision blocks; for
    element_arith='fp32_log2' profiles (microxcaling) x / D goes through that arithmetic's float32
    steps (contract 6.2), whose double rounding differs from exact rounding by design."""
    from mxsim.options.profiles import PROFILES
    from mxsim.ref.block import quantize_block
    from mxsim.ref.encode import encode
    from mxsim.ref.fp32_steps import fp32_log2_element, fp32_rne

    # a profile that refuses blocks (Brevitas' 1e-10 scale floor) has no canonical suite (canonical.py) either
    specs = [{"block": p.formats[0], "profile": p.name} for p in PROFILES.values()
             if p.kind == "block" and not p.quantize_options(p.formats[0]).refuses_blocks]
    specs += [{"block": b, "options": {"rounding": r}} for b in ("mxfp8_e4m3", "mx9", "nvfp4") for r in ("rne", "rdn")]
    checked = 0
    for spec in specs:
        suite = suite_from_spec("quantize", **spec)
        for values in suite._decision_blocks[::5]:
            divisors = suite._divisor_of(values)
            inputs = suite._inputs(values)
            ts = inputs.get("tensor_scale")
            block = quantize_block([float(v.magnitude) * (-1) ** v.sign for v in values], suite.fmt, suite.opts,
                                   tensor_scale=None if ts is None else fp32_value(ts).magnitude)
            for v, d, code in zip(values, divisors, block.codes):
                if v.magnitude >= Fraction(1, 1 << 126):  # zeros, and subnormal inputs (read per option), aside
                    if suite.opts.element_arith == "fp32_log2":
                        # contract 6.2 (microxcaling): x / D rounded to float32, then the float32 element step
                        q = fp32_rne(v.magnitude / d)
                        negative = v.sign == 1 and (q != 0 or suite.opts.zero_sign != "plus_input")
                        magnitude = fp32_log2_element(q, suite.fmt.element, suite.opts.rounding)
                        expected = encode(Exact(int(negative), magnitude), suite.fmt.element, "rne", "saturate")
                    else:
                        expected = encode(Exact(v.sign, v.magnitude / d), suite.fmt.element, suite.opts.rounding,
                                          "saturate", int8_allow_neg2=suite.opts.int8_allow_neg2)
                    assert expected == code, (spec, v, d)
                    checked += 1
    assert checked > 500


# --- the reachable-class check ------------------------------------------------------------------
def test_every_canonical_suite_reaches_every_reachable_class():
    """Every suite of golden/: each class its configuration can reach has at least
    MIN_CLASS_VECTORS vectors in the committed manifest's coverage (and the rounding kinds declare
    their decision classes: the check is not vacuous)."""
    declared = 0
    for suite in canonical_suites():
        manifest = json.loads((GOLDEN / suite.kind / suite.name / "manifest.json").read_text())
        reachable = suite.reachable_classes()
        short = {c: manifest["coverage"][c] for c in reachable if manifest["coverage"][c] < MIN_CLASS_VECTORS}
        assert not short, (suite.kind, suite.name, short)
        if suite.kind in ("encode", "quantize"):
            assert {"tie", "near_tie_top", "near_tie_bottom", "zero_result_sign"} & reachable, suite.name
            declared += 1
        assert set(manifest["coverage"]) == set(CLASSES)
    assert declared >= 30
    assert MIN_CLASS_VECTORS == 8 and FLAGS_BITS == 64


def test_generation_fails_on_a_starved_class(tmp_path):
    suite = suite_from_spec("decode", element="fp4_e2m1")  # 16 codes: no rounding at all
    suite.reachable_classes = lambda: frozenset({"tie", "max"})
    with pytest.raises(StarvedClassError, match=r"decode/fp4_e2m1: .*tie: 0.*at least 8 \(mxsim.golden.coverage.reach."
                                                r"MIN_CLASS_VECTORS\)"):
        generate(suite, tmp_path / "g")
    assert not (tmp_path / "g" / "decode" / "fp4_e2m1").exists()  # nothing of it left
    suite.reachable_classes = lambda: frozenset({"no_such_class"})
    with pytest.raises(ValueError, match="no_such_class, not classes"):
        generate(suite, tmp_path / "g")


def test_encode_stimulus_reaches_the_near_ties_of_every_subnormal_band_with_both_signs():
    """E4M3 has three subnormal binades (2^-9, 2^-8, 2^-7) and the zero band under 2^-9: the
    encode catalogue holds a value at 3/4 (top sticky bit) and one fp32 LSB above the midpoint
    (bottom sticky bit) of an interval of each, of either sign (the definition, with Fractions)."""
    suite = suite_from_spec("encode", element="fp8_e4m3")
    found = set()
    for bits in suite._directed_bits:
        value = fp32_value(bits)
        if not value.is_finite or not value.magnitude or value.magnitude >= Fraction(1, 64):
            continue
        m = value.magnitude
        lo, hi, _ = _e4m3_interval(m)
        band = "zero" if lo == 0 else lo.denominator.bit_length() - lo.numerator.bit_length()
        cases = _definition(m, lo, hi, Fraction(1, 1 << 149) if m < Fraction(1, 1 << 126) else fp32_step(m),
                            Fraction(0), False, True)
        found |= {(band, case, value.sign) for case in cases & {"near_tie_top", "near_tie_bottom", "near_tie_below"}}
    for band in ("zero", 9, 8, 7):
        for case in ("near_tie_top", "near_tie_bottom", "near_tie_below"):
            assert {(band, case, 0), (band, case, 1)} <= found, (band, case)


def test_quantize_stimulus_reaches_the_near_ties_of_every_subnormal_band_with_both_signs():
    """The MXFP8 E4M3 decision blocks whose maximum lies in [256, 512) have E = 8 - 8 = 0 (OCP floor
    rule, worked by hand), so each element rounds as an E4M3 value: every subnormal band and the zero
    band get both near-ties, of either sign."""
    suite = suite_from_spec("quantize", block="mxfp8_e4m3")
    found = set()
    for values in suite._decision_blocks:
        if not 256 <= values[0].magnitude < 512:
            continue
        for v in values[1:]:
            m = v.magnitude
            if not 0 < m < Fraction(1, 64):
                continue
            lo, hi, _ = _e4m3_interval(m)
            band = "zero" if lo == 0 else lo.denominator.bit_length() - lo.numerator.bit_length()
            cases = _definition(m, lo, hi, fp32_step(m), Fraction(0), False, True)
            found |= {(band, case, v.sign) for case in cases & {"near_tie_top", "near_tie_bottom", "near_tie_below"}}
    for band in ("zero", 9, 8, 7):
        for case in ("near_tie_top", "near_tie_bottom", "near_tie_below"):
            assert {(band, case, 0), (band, case, 1)} <= found, (band, case)


# --- near-ties per band (docs/numerics.md section 3.3 (1)): normal range, zero band, subnormal binades ---------
BAND_KINDS = ("near_tie_top", "near_tie_bottom")


def _band_classes(classes) -> set:
    return {c for c in classes if c.startswith(("near_tie_top_", "near_tie_bottom_"))}


@pytest.mark.parametrize(
    "x, expected",
    [
        # E4M3, s = 2^-9: the zero band [0, s), sub1 [s, 2s), sub2 [2s, 4s), sub3 [4s, 8s) (intervals of width s);
        # the bottom sticky bit is fp32's last bit at x: 2^(floor(log2 x) - 23)
        (3 * E4M3_SUB / 4, {"near_tie_top_zero_band"}),
        (E4M3_SUB / 2 + Fraction(2) ** -33, {"near_tie_bottom_zero_band"}),
        (7 * E4M3_SUB / 4, {"near_tie_top_sub1"}),
        (3 * E4M3_SUB / 2 + Fraction(2) ** -32, {"near_tie_bottom_sub1"}),
        (11 * E4M3_SUB / 4, {"near_tie_top_sub2"}),
        (5 * E4M3_SUB / 2 + Fraction(2) ** -31, {"near_tie_bottom_sub2"}),
        (19 * E4M3_SUB / 4, {"near_tie_top_sub3"}),
        (31 * E4M3_SUB / 4, {"near_tie_top_sub3"}),
        (9 * E4M3_SUB / 2 + Fraction(2) ** -30, {"near_tie_bottom_sub3"}),
        (Fraction(35, 32), {"near_tie_top_normal"}),
        (Fraction(17, 16) + P, {"near_tie_bottom_normal"}),
        (Fraction(1, 64) + Fraction(1, 512) * 3 / 4, {"near_tie_top_normal"}),  # 2^-6 (min normal) + 3/4 ulp
        (5 * E4M3_SUB / 2, set()),  # an exact tie: no near-tie class
        (11 * E4M3_SUB / 4 + Fraction(2) ** -31, set()),  # top and bottom sticky bits: above half only
    ],
)
def test_encode_band_classes_hand_worked(x, expected):
    suite = suite_from_spec("encode", element="fp8_e4m3")
    for sign in (1, -1):
        _, classes = suite.compute({"x": _bits(sign * float(x))})
        assert _band_classes(classes) == expected, (x, sign)


def test_encode_declares_a_band_only_where_it_has_min_class_vectors_inputs_and_holds_every_one():
    """E4M3 has 1, 1, 2 and 4 intervals in the zero band and sub1..sub3, so 2, 2, 4 and 8 distinct
    fp32 inputs (both signs) per near-tie kind: only sub3 (and the normal range) can meet
    MIN_CLASS_VECTORS, and the committed suite holds every input of every band."""
    suite = suite_from_spec("encode", element="fp8_e4m3")
    reachable = _band_classes(suite.reachable_classes())
    assert reachable == {f"{k}_{b}" for k in BAND_KINDS for b in ("normal", "sub3")}
    coverage = json.loads((GOLDEN / "encode" / suite.name / "manifest.json").read_text())["coverage"]
    for band, inputs in (("zero_band", 2), ("sub1", 2), ("sub2", 4), ("sub3", 8)):
        for kind in BAND_KINDS:
            assert coverage[f"{kind}_{band}"] >= inputs, (kind, band, coverage[f"{kind}_{band}"])


@pytest.mark.parametrize(
    "code, expected",
    [
        # MXFP8 E4M3 to bf16 at scale 2^-127 (byte 0x00): the element's last bit 2^-9 becomes 2^-136 = s/8, s =
        # 2^-133 bf16's smallest subnormal. Code 6 = 6 * 2^-9: 3s/4; 5: s/2 + s/8 (guard and the bottom bit);
        # 0x0E = 14 * 2^-9: 7s/4; 0x0D: 13s/8 = s + s/2 + s/8; 0x13 = 2^-5 * 1.375: 2.75 s in [2s, 3s), whose
        # last bit (2^-8 * 2^-127 = s/4) is the top sticky position: both near-ties at once
        (0x06, {"near_tie_top_zero_band"}),
        (0x05, {"near_tie_bottom_zero_band"}),
        (0x0E, {"near_tie_top_sub1"}),
        (0x0D, {"near_tie_bottom_sub1"}),
        (0x13, {"near_tie_top_sub2", "near_tie_bottom_sub2"}),
        (0x04, set()),  # s/2: a tie
        (0x38, set()),  # 1.0 * 2^-127: a normal bf16 value, exact
    ],
)
def test_dequantize_band_classes_hand_worked(code, expected):
    suite = suite_from_spec("dequantize", block="mxfp8_e4m3", output="bfloat16")
    for sign in (0, 0x80):
        _, classes = suite.compute({"scale": 0x00, "codes": code | sign})
        assert _band_classes(classes) == expected, (hex(code), sign)


def test_dequantize_declares_the_bands_a_4_bit_value_reaches():
    """E4M3 values have 4 significant bits; a near-tie in sub3 = [4s, 8s) needs the bits 4s .. s/4
    (5 bits), in the normal range bf16 holds every value exactly: the declared bands are the zero
    band, sub1 and sub2 (both kinds), and the committed suite meets each MIN_CLASS_VECTORS times."""
    suite = suite_from_spec("dequantize", block="mxfp8_e4m3", output="bfloat16")
    expected = {f"{k}_{b}" for k in BAND_KINDS for b in ("zero_band", "sub1", "sub2")}
    assert _band_classes(suite.reachable_classes()) == expected
    coverage = json.loads((GOLDEN / "dequantize" / suite.name / "manifest.json").read_text())["coverage"]
    assert all(coverage[name] >= MIN_CLASS_VECTORS for name in expected)
    assert suite_from_spec("dequantize", block="mxfp8_e4m3", output="float32").reachable_classes() == frozenset()
