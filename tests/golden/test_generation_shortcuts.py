"""The shortcuts golden generation and verification take for speed (issue 22) give what their
definitions give:

* :func:`mxsim.golden.coverage.output_rounding.output_rounding_classes` (Python integers on a common
  grid) against the decision classes of contract 3.3 computed here with Fractions, on seeded
  random dyadic values and results around them, for every output float and band;
* ``_overflows`` (decided from the exponent below 2^emax) against the reference encoder with
  overflow "error", on values around each output's top binade, in every rounding mode;
* the C-aiming D of a fused suite's first step (:meth:`DotSuite.first_step_codes`, the fast path
  on the whole catalogue; :meth:`DotSuite.reference_codes` with ``first_steps=1``) against
  :func:`mxsim.ref.dot.dot_general`'s first step, for every fused preset and a few custom ones;
* the golden decoder's per-format tables against the reference decoder, code by code;
* the quantize and encode kinds' classes of a whole chunk (``compute_many``) against ``compute`` vector by vector.

The byte identity of whole suites (the canonical golden/ regenerated, fused suites computed both
ways) is tests/golden/test_canonical_suite.py's and tests/golden/test_fused_suites_fast.py's.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest

from mxsim.formats import get_format
from mxsim.golden.coverage.accumulator import _overflows
from mxsim.golden.coverage.output_rounding import output_rounding_classes
from mxsim.golden.values import decode
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.options import Accumulator
from mxsim.ref import dot as ref_dot
from mxsim.ref.decode import decode as ref_decode
from mxsim.ref.encode import encode
from mxsim.ref.exact import Exact
from mxsim.ref.output import output_format

from test_fused_suites_fast import CUSTOM, PRESETS

OUTPUTS = ("fp32", "bf16", "fp16", "fp32_e8m13", "fp32_e5m10")
MODES = ("rne", "rtz", "rna", "rup", "rdn")


def _classes_by_definition(x: Fraction, negative: bool, low: int | None, out, result: Fraction) -> set[str]:
    """Contract 3.3's decision classes of rounding x > 0 to ``out`` (m fraction bits, smallest normal
    exponent emin) giving ``result``: lo, hi the grid points around x at the ulp
    2^(max(floor(log2 x), emin) - m), r = 2^low the bottom sticky position (None: below x's lowest
    bit, half of it)."""
    e = 0
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    while Fraction(2) ** e > x:
        e -= 1
    ulp = Fraction(2) ** (max(e, out.emin) - out.mantissa_bits)
    lo = (x // ulp) * ulp
    hi = lo + ulp
    if low is None:
        low = e
        while (x / Fraction(2) ** low).denominator != 1:
            low -= 1
        low -= 1
    r = Fraction(2) ** low
    t, u = x - lo, ulp
    sticky = 4 * r <= u
    names = set()
    if t == 0:
        names.add("exact")
    elif 2 * t < u:
        names.add("below_half")
    elif 2 * t == u:
        names.add("tie")
    else:
        names.add("above_half")
    near = {"near_tie_top": sticky and 4 * t == 3 * u, "near_tie_bottom": sticky and 2 * t == u + 2 * r,
            "near_tie_below": sticky and 2 * t == u - 2 * r}
    names |= {name for name, hit in near.items() if hit}
    min_normal = Fraction(2) ** out.emin
    if any(near.values()) and hi <= min_normal:
        names.add("subnormal_near_tie")
    # the per-band near-ties (contract 3.3 (1), the catalogue's bands): the normal range, the zero band
    # [0, s) under the smallest subnormal s = the ulp there, the subnormal binades [s, 2s), [2s, 4s), [4s, 8s)
    if hi > min_normal:
        band = "normal"
    elif lo == 0:
        band = "zero_band"
    else:
        band = next((f"sub{j}" for j in (1, 2, 3) if 2 ** (j - 1) * ulp <= lo < 2 ** j * ulp), None)
    for kind in ("top", "bottom"):
        if near[f"near_tie_{kind}"] and band is not None:
            names.add(f"near_tie_{kind}_{band}")
    if result > x:
        names.add("increment")
        if result == hi and (hi.numerator & (hi.numerator - 1)) == 0 and hi.denominator & (hi.denominator - 1) == 0:
            names.add("carry")
    if result < x:
        names.add("truncate")
    if negative and result == 0:
        names.add("zero_result_sign")
    return names


@pytest.mark.parametrize("output", OUTPUTS)
def test_integer_rounding_classes_follow_the_definitions(output):
    out = output_format(Accumulator(output=output))
    rng = random.Random(f"shortcuts:{output}")
    hits = set()
    for _ in range(3000):
        bits = rng.randint(1, 40)
        m = rng.getrandbits(bits) | 1 << (bits - 1)
        pattern = rng.randrange(4)
        if pattern == 1:  # a tie below the ulp, or a near-tie's sticky bit
            m = (m >> 3 << 3) | 4
        elif pattern == 2:
            m = (m >> 3 << 3) | 5
        e = rng.randint(out.emin - out.mantissa_bits - 8, out.emax) - bits + 1
        x = Fraction(m) * Fraction(2) ** e
        low = rng.choice([None, e, e - rng.randint(1, 6), e + rng.randint(1, 3)])
        grid = Fraction(2) ** (max(m.bit_length() - 1 + e, out.emin) - out.mantissa_bits)
        lo = (x // grid) * grid
        result = rng.choice([lo, lo + grid, Fraction(0)])
        negative = rng.random() < 0.5
        expected = _classes_by_definition(x, negative, low, out, result)
        assert output_rounding_classes(x, negative, low, out, result) == expected, (x, negative, low, result)
        hits |= expected
    assert {"exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
            "subnormal_near_tie", "increment", "truncate", "carry", "zero_result_sign"} <= hits


def test_non_dyadic_values_are_classified_too():
    out = output_format(Accumulator())
    x = Fraction(1, 3)
    lo = Fraction(11184810, 1 << 25)  # 1/3 cut to fp32 (24 bits at 2^-2)
    expected = _classes_by_definition(x, False, -60, out, lo + Fraction(1, 1 << 25))
    assert output_rounding_classes(x, False, -60, out, lo + Fraction(1, 1 << 25)) == expected
    assert "above_half" in expected and "increment" in expected


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("mode", MODES)
def test_overflow_shortcut_is_the_encoders_verdict(output, mode):
    acc = Accumulator(output=output, output_rounding=mode)
    out = output_format(acc)
    top = Fraction(2) ** out.emax
    ulp = Fraction(2) ** (out.emax - out.mantissa_bits)
    largest = out.max_normal
    values = [top - ulp / 4, top - Fraction(1, 1 << 200) * top, top, top + ulp / 2, largest, largest + ulp / 4,
              largest + ulp / 2, largest + ulp, 2 * top, Fraction(1), Fraction(1, 1 << 140), top / 2]
    seen = set()
    for value in values:
        for sign in (1, -1):
            try:
                encode(Exact(int(sign < 0), value), out, mode, "error")
                expected = False
            except OverflowError:
                expected = True
            assert _overflows(sign * value, acc) == expected, (value, sign)
            seen.add(expected)
    assert seen == {True, False}


_FUSED = [(kind, params) for kind, params in PRESETS.values()] + [(k, p) for k, p in CUSTOM if "preset" in p]


@pytest.mark.parametrize("spec", _FUSED, ids=lambda spec: suite_from_spec(*spec[:1], **spec[1]).name)
def test_first_step_for_aiming_c_is_the_references(spec):
    suite = suite_from_spec(spec[0], **spec[1])
    rng = random.Random(f"shortcuts:{suite.name}")
    rows = [suite._random_vector(rng) for _ in range(40)] + [suite.fresh_row(rng) for _ in range(10)]
    expected, steps = [], []
    for row in rows:
        blocks_a, blocks_b, _, _ = suite._vector_blocks(row)
        general = ref_dot.dot_general(blocks_a, blocks_b, suite.fa, suite.fb, suite.acc, c=Exact(0))
        expected.append(general.steps[0])
        steps.append(general.steps)
    assert suite.first_step_codes(rows) == expected
    assert [suite.reference_codes(row, Exact(0), first_steps=1)[0] for row in rows] == expected
    assert [suite.reference_codes(row, Exact(0)) for row in rows] == steps


def test_separate_accumulation_aims_c_with_the_reference():
    suite = suite_from_spec("dot", block_a="mxfp8_e4m3", c_input=True,
                            accumulator={"mode": "aligned", "frac_bits": 13, "width": 24})
    assert suite.first_step_codes([suite.fresh_row(random.Random(0))]) is None


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp4_e2m1", "int8", "e8m0", "ue4m3",
                                  "fp8_e4m3fnuz", "bf16", "fp32"])
def test_decode_tables_are_the_reference_decoder(name):
    fmt = get_format(name)
    codes = range(1 << fmt.width) if fmt.width <= 8 else random.Random(name).sample(range(1 << fmt.width), 3000)
    for code in list(codes) * 2:  # the second time from the table
        assert decode(code, fmt) == ref_decode(code, fmt)
        assert decode(code, name) == ref_decode(code, fmt)
    assert decode(np.uint8(3), fmt) == ref_decode(3, fmt)
    for bad in (-1, 1 << fmt.width):
        with pytest.raises(ValueError, match="out of range"):
            decode(bad, fmt)


@pytest.mark.parametrize("params", [
    {"block": "mxfp8_e4m3", "output": "bfloat16"},
    {"block": "mxfp8_e4m3", "output": "float32"},
    {"block": "mxint8", "output": "bfloat16"},
    {"block": "mxfp4_e2m1", "output": "float16", "options": {"dequant_ftz": True}},
    {"block": "mxfp8_e5m2", "output": "float16", "scale_encoding": "int8_exponent"},
    {"block": "mxfp8_e4m3", "output": "float16", "options": {"dequant_ftz": True}},
])
def test_dequantize_rounding_map_skips_only_exponents_without_a_decision(params):
    """The per-band map of a dequantize suite skips the scale exponents where every element times
    2^X is a normal of the output's precision (or overflows), and takes the classes of the first
    exponent where every value is below a quarter of the smallest subnormal for all those below it;
    computed at every exponent instead, the map is the same."""
    from mxsim.golden.kinds.dequantize import EXPONENT_RANGE
    suite = suite_from_spec("dequantize", **params)
    low, high = EXPONENT_RANGE[suite.scale_encoding]
    every = {x: hits for x in range(low, high + 1) if (hits := suite._rounding_hits(x))}
    assert suite._rounding_map == every


def _canonical_suites_computing_many():
    from mxsim.golden.canonical import canonical_suites

    return [s for s in canonical_suites() if hasattr(s, "compute_many")]


@pytest.mark.parametrize("suite", _canonical_suites_computing_many(), ids=lambda s: f"{s.kind}/{s.name}")
def test_classes_of_many_vectors_are_each_vectors(suite):
    """The reference's classes computed for a whole chunk at once (``compute_many``: the decision classes on
    NumPy arrays) are, vector by vector, ``compute``'s (one vector: the same steps on floats), for every
    canonical suite of a kind that has it (quantize: NVFP4, MX9/MX6/MX4 sub-blocks, MXINT8, every rounding
    and profile; encode: every element format, rounding and overflow), on its first 600 catalogue vectors."""
    from mxsim.golden.compute import pipeline

    rows = [inputs for inputs, _ in itertools.islice(pipeline.vectors(suite, 0, 1, pipeline.plan(suite, 1)), 600)]
    assert suite.compute_many(rows) == [suite.compute(row) for row in rows]
