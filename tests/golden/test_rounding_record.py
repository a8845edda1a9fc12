"""The record of many output roundings (``mxsim.golden.coverage.rounding_record.OutputRoundings``)
and its classes computed for all of them at once (issue 33 item 3): hand-worked roundings
(docs/numerics.md section 3.3: the decision classes of an output rounding), the rows it must
leave unclassed, and agreement with the one-by-one classes of ``block_rounding_classes`` on
seeded random values, both routes of the record (binary64 arrays; Python integers for wide
significands, extreme exponents and values near the output's top) included."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from mxsim.golden.coverage.accumulator import block_rounding_classes
from mxsim.golden.coverage.catalogue import class_names
from mxsim.golden.coverage.output_rounding import NO_LOW
from mxsim.golden.coverage import rounding_record
from mxsim.golden.coverage.rounding_record import OutputRoundings
from mxsim.options import Accumulator
from mxsim.ref.exact import Exact
from mxsim.ref.output import output_format, round_output

FP32 = Accumulator()  # exact accumulation, fp32 output, rne
FP16 = Accumulator(output="fp16")


def _classes(rows, accumulator) -> list[set]:
    return [set(class_names(int(word))) for word in OutputRoundings.from_rows(rows).flags(accumulator)]


# (finite, negative, n, x, low, code): value (-1)^negative * n * 2^x rounded to code
HAND_WORKED = [
    # 1 + 2^-24 to fp32 (ulp 2^-23 at 1): an exact tie, rne keeps 1.0; no sticky bit below the guard (r = 2^-24)
    ((True, False, (1 << 24) + 1, -24, -24, 0x3F800000), FP32, {"tie", "truncate"}),
    ((True, True, (1 << 24) + 1, -24, -24, 0xBF800000), FP32, {"tie", "truncate"}),
    # 1 + 2^-24 + 2^-30, lowest bit 2^-30: guard and the bottom sticky bit set -> near_tie_bottom, rounds up
    ((True, False, (1 << 30) + (1 << 6) + 1, -30, -30, 0x3F800001), FP32,
     {"above_half", "near_tie_bottom", "near_tie_bottom_normal", "increment"}),
    # the tie 1 + 2^-24 with the lowest bit 2^-90, 67 bits below the ulp: guard set, sticky bits all clear
    # (u + 2r and u - 2r are not binary64 values: no near-tie may be read from rounded sums)
    ((True, False, (1 << 24) + 1, -24, -90, 0x3F800000), FP32, {"tie", "truncate"}),
    # the same value with no fixed lowest bit: r below its lowest set bit, so no near-tie
    ((True, False, (1 << 30) + (1 << 6) + 1, -30, None, 0x3F800001), FP32, {"above_half", "increment"}),
    # 1 + 2^-70 (a 71-bit significand): below half, truncated
    ((True, False, (1 << 70) + 1, -70, -70, 0x3F800000), FP32, {"below_half", "truncate"}),
    # fp32 max + 2^102 (above the largest finite, rounds down to it: no overflow); ulp 2^104, lowest bit
    # 2^102: guard clear and the one sticky bit (2^102) set -> near_tie_below
    ((True, False, (1 << 26) - 3, 102, 102, 0x7F7FFFFF), FP32, {"below_half", "truncate", "near_tie_below"}),
    # fp32 max + 2^103: a tie onto 2^128, rne rounds up: an overflow (Inf code) has no class
    ((True, False, (1 << 25) - 1, 103, 103, 0x7F800000), FP32, set()),
    # fp16: 1.5 * 2^-24 (its smallest subnormal 2^-24) with lowest bit 2^-27: a tie in band sub1, rne rounds
    # up to 2^-23 (code 2), a power of two: carry
    ((True, False, 3, -25, -27, 0x0002), FP16, {"tie", "increment", "carry"}),
    # not a rounding: a non-finite value, a zero, a NaN output
    ((False, False, 0, 0, None, 0x7F800000), FP32, set()),
    ((True, True, 0, 0, None, 0x80000000), FP32, set()),
    ((True, False, 3, -2, None, 0x7FC00000), FP32, set()),
]


@pytest.mark.parametrize("row, accumulator, expected", HAND_WORKED)
def test_hand_worked_roundings(row, accumulator, expected):
    assert _classes([row], accumulator) == [expected]


def test_a_chunk_is_classed_row_by_row_as_alone():
    rows = [row for row, accumulator, _ in HAND_WORKED if accumulator is FP32]
    expected = [e for _, accumulator, e in HAND_WORKED if accumulator is FP32]
    assert _classes(rows, FP32) == expected


def test_fp32_sequential_rounds_at_every_addition_so_has_no_classes():
    row = (True, False, (1 << 24) + 1, -24, -24, 0x3F800000)
    assert _classes([row], Accumulator(mode="fp32_sequential")) == [set()]


def test_an_empty_record_has_no_flags():
    assert OutputRoundings.from_rows([]).flags(FP32).tolist() == []


def _classes_match_one_by_one(rows, accumulator) -> list[set]:
    """The record's classes of ``rows``, each asserted equal to the one-by-one classes with Python
    integers (block_rounding_classes, the definition)."""
    got = _classes(rows, accumulator)
    for row, classes in zip(rows, got):
        _, negative, n, x, low, code = row
        exact = Exact(int(negative), Fraction(n) * Fraction(2) ** x)
        assert classes == block_rounding_classes(exact, code, low, accumulator), row
    return got


def _random_rows(rng: random.Random, accumulator, count: int):
    """Dyadic values of 1 .. 80 significant bits at exponents that reach the output's subnormals,
    its top (overflows included) and beyond binary64's range; lowest bits fixed or not; each
    rounded to its code by the reference's output rounding."""
    rows = []
    for _ in range(count):
        bits = rng.choice([1, 3, 8, 24, 30, 52, 53, 54, 80])
        n = rng.getrandbits(bits) | 1 << (bits - 1)
        n = n & ~((1 << rng.randint(0, bits - 1)) - 1) if rng.random() < 0.3 else n  # low zero bits
        top = rng.choice([rng.randint(-160, 140), rng.randint(-30, 30), rng.randint(125, 129), rng.randint(1001, 1100),
                          -rng.randint(1001, 1100)])
        x = top - (n.bit_length() - 1)
        negative = rng.random() < 0.5
        low = None if rng.random() < 0.3 else x - rng.choice([rng.randint(0, 4), rng.randint(40, 90)])
        value = Exact(int(negative), Fraction(n) * Fraction(2) ** x)
        rows.append((True, negative, n, x, low, round_output(value, accumulator)))
    return rows


@pytest.mark.parametrize("accumulator", [FP32, FP16, Accumulator(output="bf16", output_rounding="rtz"),
                                         Accumulator(output_rounding="rup"), Accumulator(output="fp16", ftz=True)],
                         ids=["fp32", "fp16", "bf16-rtz", "fp32-rup", "fp16-ftz"])
def test_the_record_gives_the_one_by_one_classes(accumulator):
    rng = random.Random(f"test_rounding_record:{accumulator}")
    got = _classes_match_one_by_one(_random_rows(rng, accumulator, 1500), accumulator)
    assert sum(map(bool, got)) > 400  # many rows are roundings with classes (fp16 overflows most)


def test_wide_significands_travel_as_python_integers():
    record = OutputRoundings.from_rows([(True, False, 1 << 70, -70, None, 0x3F800000)])
    assert record.magnitude.dtype == object and record.low.tolist() == [NO_LOW]
    assert _classes([(True, False, 1 << 70, -70, None, 0x3F800000)], FP32) == [{"exact"}]


# (negative, n, x, accumulator, overflows): fp32's largest finite value is (2^24 - 1) * 2^104 and the
# next binade starts at 2^128 (docs/numerics.md sections 3.3 and 4: an overflow is a rounding with
# unbounded exponent past the largest finite value), worked by hand
HAND_WORKED_OVERFLOWS = [
    (False, (1 << 24) - 1, 104, FP32, False),  # the largest finite value itself
    (True, (1 << 24) - 1, 104, FP32, False),
    (False, (1 << 25) - 1, 103, FP32, True),  # max + half an ulp: the tie goes to the even 2^128 under rne
    (True, (1 << 25) - 1, 103, FP32, True),
    (False, (1 << 25) - 1, 103, Accumulator(output_rounding="rtz"), False),  # toward zero: max
    (True, (1 << 25) - 1, 103, Accumulator(output_rounding="rup"), False),  # a negative rounds up toward zero
    (False, (1 << 26) - 3, 102, FP32, False),  # max + a quarter ulp: below half, rounds down to max
    (False, 1, 128, Accumulator(output_rounding="rtz"), True),  # 2^128: past max whatever the rounding
    (False, (1 << 70) - 1, 58, FP32, True),  # 71 bits (Python integers): just below 2^128, rounds up
    (False, ((1 << 24) - 1) << 46, 58, FP32, False),  # max with 46 zero bits below (Python integers)
    (False, 1, 127, FP32, False),  # 2^127: inside the top binade
    # 2^128 - 2^68: just below 2^128 (binary64 would round n up to 2^60): toward zero max, nearest-even 2^128
    (False, (1 << 60) - 1, 68, Accumulator(output_rounding="rtz"), False),
    (False, (1 << 60) - 1, 68, FP32, True),
    (True, (1 << 40) + 1, 90, Accumulator(output_rounding="rtz"), True),  # above 2^130: past max whatever the rounding
    (False, (1 << 16) - 1, 0, FP16, True),  # fp16: 65535 rounds to 65536 > 65504
    (False, 65519, 0, FP16, False),  # fp16: below the halfway 65520, rounds to 65504
]


@pytest.mark.parametrize("negative, n, x, accumulator, expected", HAND_WORKED_OVERFLOWS)
def test_hand_worked_overflows(negative, n, x, accumulator, expected):
    row = (True, negative, n, x, None, 0)
    assert OutputRoundings.from_rows([row]).overflows(accumulator).tolist() == [expected]
    many = OutputRoundings.from_rows([(True, False, 3, -2, None, 0), row, (True, True, 1 << 70, -70, None, 0)])
    assert many.overflows(accumulator).tolist() == [False, expected, False]  # row by row, in a chunk


def test_zero_and_non_finite_values_do_not_overflow():
    rows = [(False, False, 0, 0, None, 0x7F800000), (True, True, 0, 200, None, 0x80000000),
            (False, True, (1 << 24) - 1, 200, None, 0xFF800000)]
    assert OutputRoundings.from_rows(rows).overflows(FP32).tolist() == [False, False, False]
    assert OutputRoundings.from_rows([]).overflows(FP32).tolist() == []


def _near_decision_rows(rng: random.Random, accumulator, count: int):
    """Values whose part below the ulp lies at or one lowest bit beside each point the rule reads
    (0, u/2 - r, u/2, u/2 + r, 3u/4, u - r; r = 2^low), with the lowest bit 2 .. 90 bits below the
    ulp (significands of up to about 115 bits), in normal binades and the output's subnormals, each
    rounded to its code by the reference's output rounding."""
    out = accumulator_output(accumulator)
    rows = []
    for _ in range(count):
        top = rng.choice([rng.randint(-20, 20), rng.randint(out.emin - out.mantissa_bits, out.emin), out.emax - 1])
        ulp = max(top, out.emin) - out.mantissa_bits
        low = ulp - rng.choice([2, 3, 4, 17, 18, 19, 40, 90])
        u, r = 1 << (ulp - low), 1
        if top >= out.emin:  # lo / u: the binade's leading bit and random bits below it
            lo = (1 << (top - ulp)) + rng.getrandbits(max(0, top - ulp))
        else:
            lo = rng.getrandbits(out.mantissa_bits)
        points = [0, u // 2 - r, u // 2, u // 2 + r, 3 * u // 4, u - r, rng.randrange(u)]
        t = rng.choice(points) + rng.choice([-1, 0, 0, 1])
        t = min(max(t, 0), u - 1)
        n = lo * u + t
        if not n:
            continue
        negative = rng.random() < 0.5
        value = Exact(int(negative), Fraction(n) * Fraction(2) ** low)
        rows.append((True, negative, n, low, None if rng.random() < 0.2 else low, round_output(value, accumulator)))
    return rows


def accumulator_output(accumulator):
    return output_format(accumulator)


@pytest.mark.parametrize("accumulator", [FP32, FP16, Accumulator(output="bf16", output_rounding="rtz"),
                                         Accumulator(output_rounding="rup"), Accumulator(output="fp16", ftz=True),
                                         Accumulator(output_rounding="rdn")],
                         ids=["fp32", "fp16", "bf16-rtz", "fp32-rup", "fp16-ftz", "fp32-rdn"])
def test_wide_values_near_every_decision_point_get_the_one_by_one_classes(accumulator, monkeypatch):
    """Wide significands (the fused steps' C far above their products) are classed through a
    binary64 stand-in (rounding_record._stand_in); the one-by-one classes with Python integers
    (block_rounding_classes) are the definition they must match, near-ties at every lowest bit."""
    stood_in = []
    original = rounding_record._stand_in

    def counted(*args):
        found = original(*args)
        stood_in.append(found is not None)
        return found

    monkeypatch.setattr(rounding_record, "_stand_in", counted)
    rng = random.Random(f"test_rounding_record:near:{accumulator}")
    got = _classes_match_one_by_one(_near_decision_rows(rng, accumulator, 3000), accumulator)
    seen = set().union(*got)
    assert {"near_tie_top", "near_tie_bottom", "near_tie_below", "tie", "exact"} <= seen, seen
    assert sum(stood_in) > 300  # wide significands, or lowest bits far below the ulp
