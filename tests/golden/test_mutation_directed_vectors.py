"""The directed vectors added for the bug classes the RTL mutation campaign found missing
(mxsim/golden/stimulus/mutation.py, the encode suite's negative NaN, the quantize suite's clamped
scales): each class is checked on the vectors themselves, with the element values from ml_dtypes
and the scales and sums in exact Fractions (not from mxsim's reference)."""

from __future__ import annotations

import random
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from mxsim.golden.stimulus import mutation as mutation_stimulus
from mxsim.golden.kinds.registry import suite_from_spec

E4M3 = ml_dtypes.float8_e4m3fn


def e4m3(code: int) -> Fraction | None:
    """The value of an E4M3 code (None for NaN), from ml_dtypes."""
    value = float(np.array([code], dtype=np.uint8).view(E4M3)[0])
    return None if value != value else Fraction(value)


def e8m0(code: int) -> Fraction | None:
    return None if code == 0xFF else Fraction(2) ** (code - 127)


def unpack(word: int, k: int = 32) -> list[int]:
    return [(word >> (8 * i)) & 0xFF for i in range(k)]


def exact_sum(row: dict) -> Fraction | None:
    """sum a_i * b_i * 2^(XA + XB) exactly, or None when a scale or an element is NaN."""
    xa, xb = e8m0(row["a_scale"]), e8m0(row["b_scale"])
    a = [e4m3(c) for c in unpack(row["a_elems"])]
    b = [e4m3(c) for c in unpack(row["b_elems"])]
    if xa is None or xb is None or None in a or None in b:
        return None
    return sum(x * y for x, y in zip(a, b)) * xa * xb


def fp32_value(bits: int) -> Fraction:
    return Fraction(float(np.array([bits], dtype=np.uint32).view(np.float32)[0]))


@pytest.fixture(scope="module")
def aligned_rows():
    suite = suite_from_spec("dot", block_a="mxfp8_e4m3", accumulator={
        "mode": "aligned", "frac_bits": 8, "width": 14, "shift_rounding": "truncate", "overflow": "saturate"})
    rows = [row for row, _ in mutation_stimulus.mutation_rows(suite)]
    assert len(rows) == mutation_stimulus.mutation_count(suite)
    return rows


def test_nan_scale_on_either_operand_with_finite_elements(aligned_rows):
    for side, other in (("a_scale", "b_scale"), ("b_scale", "a_scale")):
        rows = [r for r in aligned_rows if r[side] == 0xFF and r[other] != 0xFF]
        assert rows, side
        for r in rows:
            assert all(e4m3(c) is not None for c in unpack(r["a_elems"]) + unpack(r["b_elems"]))
            assert any(e4m3(c) for c in unpack(r["a_elems"]))


def test_results_at_the_overflow_boundary(aligned_rows):
    values = {exact_sum(r) for r in aligned_rows} - {None}
    for v in (Fraction(2) ** 128, Fraction(3, 2) * Fraction(2) ** 128, Fraction(3, 2) * Fraction(2) ** 127):
        assert v in values and -v in values, v


def test_output_ties_in_the_subnormal_band(aligned_rows):
    ulps = [exact_sum(r) / Fraction(2) ** -149 for r in aligned_rows if exact_sum(r) is not None]
    small = [u for u in ulps if 0 < abs(u) < 8]
    ties = [u for u in small if (abs(u) * 2).denominator == 1 and abs(u).denominator == 2]
    assert {int(abs(u)) % 2 for u in ties} == {0, 1}  # ties to an even and to an odd floor
    assert any(u < 0 for u in ties) and any(u > 0 for u in ties)
    assert any(abs(u).denominator > 2 for u in small)  # near-ties and other cases too


def test_runs_of_ones_one_longer_than_the_significand(aligned_rows):
    def ones_run(v: Fraction) -> int | None:
        """n when |v| = 2^(t+1) - 2^(t+1-n) for some t (n ones), else None."""
        v = abs(v)
        for n in range(2, 40):
            t = Fraction(2) ** (v.numerator.bit_length() - v.denominator.bit_length())
            for top in (t, 2 * t, t / 2):
                if v == 2 * top - 2 * top / 2 ** n:
                    return n
        return None

    runs = {ones_run(v) for v in (exact_sum(r) for r in aligned_rows) if v}
    assert {25, 26} <= runs


def test_fused_c_rows_carry_and_far_sticky():
    suite = suite_from_spec("dot", block_a="mxfp8_e4m3", preset="mxdotp_fp8", steps=True)
    rows = [row for row, _ in mutation_stimulus.mutation_rows(suite)]
    carries = sticky_ties = 0
    for r in rows:
        c, s = fp32_value(r["c"]), exact_sum(r)
        if s is None or not s:
            continue
        exponent = (r["c"] >> 23 & 0xFF) - 127
        all_ones = r["c"] & 0x7FFFFF == 0x7FFFFF and 0 < exponent + 127 < 255
        if all_ones and s == c / abs(c) * Fraction(2) ** (exponent - 24):
            carries += 1  # C is 24 ones, the product half its ulp, same sign: a tie out of all ones
        if abs(c) == Fraction(2) ** -149:
            t = Fraction(2) ** (abs(s).numerator.bit_length() - abs(s).denominator.bit_length())
            if abs(s) in (t + t / 2 ** 24, 2 * t + 2 * t / 2 ** 24):
                sticky_ties += 1  # an exact tie at fp32 precision, C far below the product grid
    assert carries >= 2 and sticky_ties >= 4


def test_encode_has_both_nan_signs():
    suite = suite_from_spec("encode", element="fp8_e4m3")
    xs = {row["x"] for row, kind in suite.stimulus(random.Random(0), 0) if kind == "directed"}
    assert 0x7FC00000 in xs and 0xFFC00000 in xs


@pytest.mark.parametrize("block", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp4_e2m1"])
def test_quantize_blocks_below_the_scale_clamp(block):
    """floor(log2 amax) - emax_elem is 1, 2 and 3 below -127 (E8M0's smallest scale exponent); the
    largest element magnitudes (448, 57344, 6) from ml_dtypes."""
    emax = {"mxfp8_e4m3": float(ml_dtypes.finfo(E4M3).max),
            "mxfp8_e5m2": float(ml_dtypes.finfo(ml_dtypes.float8_e5m2).max), "mxfp4_e2m1": 6.0}[block]
    emax_elem = int(np.floor(np.log2(emax)))
    suite = suite_from_spec("quantize", block=block)
    for values in suite._low_scale_blocks:
        words = np.array([float(v.magnitude) * (-1) ** v.sign for v in values], dtype=np.float32)
        assert all(Fraction(float(w)) == (-1) ** v.sign * v.magnitude for w, v in zip(words, values))  # fp32 exact
    lead = set()
    for values in suite._low_scale_blocks:
        amax = max(v.magnitude for v in values)
        e = 0
        while Fraction(2) ** (e + 1) <= amax:
            e += 1
        while Fraction(2) ** e > amax:
            e -= 1
        lead.add(e - emax_elem)
    assert lead == {-128, -129, -130}
