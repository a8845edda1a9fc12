"""What each encoder says an fp32 value's rounding decides on (docs/numerics.md sections 1 and 3.3), and
the decision classes golden reads from it (:class:`mxsim.golden.coverage.cast_roundings.CastRoundings`).

* records worked by hand (the value, the grid step 2^grid at its binade, the quotient chosen), from
  the reference (:func:`mxsim.ref.encode.encode_traced`) and the fast path
  (:func:`mxsim.fast.encode.encode_traced`), over a tie, a subnormal, saturation, a negative rtz,
  integers, a format without mantissa bits, FNUZ's unsigned zero and a format without subnormals;
* both paths' records and codes agree element by element on seeded random fp32 values over many
  formats and roundings;
* the classes from the record equal the per-value definition (the interval looked up on the
  format's own grid of codes), and a few classes worked by hand;
* an encode suite's chunk from the fast encoder's record (``fast_expected``) equals the reference's
  (``compute_many``), codes and flags words.
"""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from mxsim.fast.encode import encode_traced as fast_encode_traced
from mxsim.formats import get_format
from mxsim.golden.coverage.cast_roundings import CastRoundings
from mxsim.golden.coverage.catalogue import class_names, flag_bits
from mxsim.golden.coverage.rounding import decision_flags, fp32_resolution, grid_interval, magnitude_grid
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.ref.decode import decode
from mxsim.ref.encode import EncodeRounding, encode_traced

F32_03 = struct.unpack("<f", struct.pack("<f", 0.3))[0]  # fp32(0.3) = 5033165 / 2^24

# (format, x (an fp32 value), rounding, (negative, grid, quotient), code)
HAND = [
    ("fp8_e4m3", 1.0625, "rne", (False, -3, 8), 0x38),  # 8.5 steps of 2^-3: a tie, to even 8 (1.0)
    ("fp8_e4m3", 1.0625, "rna", (False, -3, 9), 0x39),  # the tie away: 9 (1.125)
    ("fp8_e4m3", 1.5 * 2.0**-9, "rne", (False, -9, 2), 0x02),  # subnormal step 2^(emin - m) = 2^-9: tie to 2
    ("fp8_e4m3", 500.0, "rne", (False, 5, 16), 0x7E),  # 15.625 steps of 32 -> 16 (512): saturates to 448
    ("fp8_e4m3", -F32_03, "rtz", (True, -5, 9), 0xA9),  # 9.6 steps of 2^-5 -> 9: -0.28125
    ("int8", 0.3, "rne", (False, -6, 19), 19),  # 2^-6 steps: 19.2 -> 19 (0.3 read as fp32(0.3))
    ("int3_sm", 0.75, "rne", (False, -1, 2), 0b010),  # steps of 1/2: 1.5 -> 2 (1.0)
    ("binary8p1", 3.0, "rne", (False, 1, 2), None),  # no mantissa bits: [2, 4), a tie to 2 * 2 = 4
    ("fp8_e4m3fnuz", -(2.0**-20), "rne", (True, -10, 0), 0x00),  # to zero: +0 (FNUZ has no -0)
    ("e8m0", 2.0**-130, "rne", (False, -127, 1), 0x00),  # no subnormals: [0, 2^-127) goes to 2^-127
]


@pytest.mark.parametrize("element,x,rounding,record,code", HAND)
def test_records_worked_by_hand(element, x, rounding, record, code):
    fmt = get_format(element)
    negative, grid, quotient = record
    x32 = struct.unpack("<f", struct.pack("<f", x))[0]
    n, d = abs(x32).as_integer_ratio()
    ref_code, ref_record = encode_traced(x32, fmt, rounding)
    assert ref_record == EncodeRounding(negative, n, d, grid, quotient)
    fast_codes, fast_record = fast_encode_traced(np.array([x32], dtype=np.float32), fmt, rounding)
    assert (bool(fast_record.rounds[0]), bool(fast_record.negative[0]), float(fast_record.value[0]),
            int(fast_record.grid[0]), int(fast_record.quotient[0])) == (True, negative, abs(x32), grid, quotient)
    assert int(fast_codes[0]) == ref_code
    if code is not None:
        assert ref_code == code
    else:  # binary8p1: the code holds 4
        assert decode(ref_code, fmt).magnitude == 4


def test_values_that_do_not_round_have_no_record():
    for x in (0.0, -0.0, float("inf"), float("-inf"), float("nan")):
        assert encode_traced(x, "fp8_e4m3")[1] is None
    codes, record = fast_encode_traced(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32), "fp8_e4m3")
    assert not record.rounds.any() and not record.value.any() and not record.grid.any()
    with pytest.raises(ValueError, match="stochastic"):
        encode_traced(1.0, "fp8_e4m3", "stochastic")
    with pytest.raises(ValueError, match="stochastic"):
        fast_encode_traced(np.ones(1, np.float32), "fp8_e4m3", "stochastic")
    with pytest.raises(ValueError, match="float32 or float64"):
        fast_encode_traced(np.ones(1, np.int32), "fp8_e4m3")


AGREE = [("fp8_e4m3", "rne", "saturate"), ("fp8_e4m3", "rup", "ieee"), ("fp8_e5m2", "rdn", "saturate"),
         ("fp8_e5m2", "rna", "ieee"), ("fp6_e3m2", "rtz", "saturate"), ("fp6_e2m3", "rne", "saturate"),
         ("fp4_e2m1", "rna", "saturate"), ("int8", "rne", "saturate"), ("int8_sm", "rdn", "ieee"),
         ("int3_sm", "rup", "saturate"), ("fp8_e4m3fnuz", "rne", "ieee"), ("fp8_e5m2fnuz", "rdn", "saturate"),
         ("binary8p1", "rne", "saturate"), ("binary8p3", "rtz", "ieee"), ("binary8p5", "rup", "saturate"),
         ("bf16", "rne", "saturate"), ("fp16", "rdn", "ieee"), ("ue4m3", "rne", "saturate"), ("e8m0", "rup", "saturate")]


def _words(fmt, rng: random.Random, n: int) -> np.ndarray:
    """fp32 words over the format's range and four binades either side, fp32 subnormals, Inf, and
    zero and NaN where the format has them; negative only for signed formats."""
    lo = max(-149, (fmt.emin if fmt.kind == "float" else -fmt.frac_bits) - fmt.mantissa_bits - 4
             if fmt.kind == "float" else -fmt.frac_bits - 4)
    hi = min(127, (fmt.emax if fmt.kind == "float" else 1) + 4)
    words = [0x7F800000, 1, 0x007FFFFF] + ([0x7FC00000] if fmt.has_nan else []) + ([0] if fmt.has_zero else [])
    for _ in range(n):
        exponent = rng.randint(lo, hi)
        word = rng.getrandbits(23) | (max(exponent + 127, 0) << 23) if exponent >= -126 else rng.randrange(1, 1 << 23)
        words.append(word)
    words = np.array(words, dtype=np.uint32)
    if fmt.signed:
        words |= np.array([rng.getrandbits(1) << 31 for _ in words], dtype=np.uint32)
    return words


@pytest.mark.parametrize("element,rounding,overflow", AGREE)
def test_both_paths_records_agree(element, rounding, overflow):
    fmt = get_format(element)
    words = _words(fmt, random.Random(f"cast:{element}:{rounding}"), 3000)
    x = words.view(np.float32)
    codes, fast = fast_encode_traced(x, fmt, rounding, overflow)
    reference = [encode_traced(float(v), fmt, rounding, overflow) for v in x.tolist()]
    assert codes.tolist() == [code for code, _ in reference]
    ref = CastRoundings.from_reference([record for _, record in reference])
    assert ref.rounds.tolist() == fast.rounds.tolist()
    assert ref.rounds.sum() > 2500
    assert ref.value.tolist() == fast.value.tolist()
    assert ref.negative[ref.rounds].tolist() == fast.negative[fast.rounds].tolist()
    # the fast path keeps no quotient for a value at or above 2^(emax + 2) (an overflow whatever the rounding)
    near = ref.rounds & (ref.value < 2.0 ** (fmt.emax + 2))
    assert ref.grid[near].tolist() == fast.grid[near].tolist()
    assert ref.quotient[near].tolist() == fast.quotient[near].tolist()
    flags = ref.flags(fmt)
    assert flags.tolist() == CastRoundings.from_fast(fast).flags(fmt).tolist()
    assert {name for word in set(flags.tolist()) for name in class_names(word)} >= {"below_half", "above_half"}


def _defined_flags(fmt, x: float, negative: bool, result: float) -> int:
    """The definition (docs/numerics.md section 3.3): x's interval on the format's own grid of codes
    of that sign (not the encoder's), fp32's last bit at x, the result's magnitude."""
    lo, hi, _ = grid_interval(x, 1.0, magnitude_grid(fmt, negative))
    min_normal = float(fmt.min_normal) if fmt.kind == "float" and fmt.subnormals else 0.0
    return int(decision_flags(x, lo, hi, fp32_resolution(x), result, negative, min_normal))


@pytest.mark.parametrize("element,rounding,overflow", AGREE[:15] + AGREE[17:])
def test_classes_from_the_record_are_the_definition(element, rounding, overflow):
    fmt = get_format(element)
    words = _words(fmt, random.Random(f"classes:{element}:{rounding}"), 2000)
    x = words.view(np.float32)
    codes, record = fast_encode_traced(x, fmt, rounding, overflow)
    flags = CastRoundings.from_fast(record).flags(fmt).tolist()
    for value, word, code, flag in zip(x.tolist(), words.tolist(), codes.tolist(), flags):
        y = decode(code, fmt)
        if value != value or abs(value) in (0.0, float("inf")) or abs(value) > float(fmt.max_normal):
            assert flag == 0
            continue
        assert flag == _defined_flags(fmt, abs(value), bool(word >> 31) and fmt.signed, float(y.magnitude)), value


def _classes(fmt, x: float, rounding: str = "rne") -> set:
    codes, record = fast_encode_traced(np.array([x], dtype=np.float32), fmt, rounding)
    reference = CastRoundings.from_reference([encode_traced(x, fmt, rounding)[1]]).flags(fmt)
    fast = CastRoundings.from_fast(record).flags(fmt)
    assert reference.tolist() == fast.tolist()
    return set(class_names(int(fast[0])))


def test_classes_worked_by_hand():
    e4m3 = get_format("fp8_e4m3")
    assert _classes(e4m3, 1.125) == {"exact"}
    assert _classes(e4m3, 1.0625) == {"tie", "truncate"}  # to even: 1.0
    assert _classes(e4m3, 1.0625, "rna") == {"tie", "increment"}
    # 1 + 3/4 of a step: guard and top sticky bit
    assert _classes(e4m3, 1.09375) == {"above_half", "near_tie_top", "near_tie_top_normal", "increment"}
    # [1.875, 2): 1.97 rounds up to 2, the next binade's first value
    assert _classes(e4m3, 1.97) == {"above_half", "increment", "carry"}
    assert _classes(e4m3, 500.0) == set()  # above 448: saturation, the caller's class
    assert _classes(e4m3, -(2.0**-12)) == {"below_half", "truncate", "zero_result_sign"}
    # the subnormal interval [2^-8, 3 * 2^-9) (band sub2): half a step plus fp32's last bit at x (2^-31)
    x = 2.0**-8 + 2.0**-10 + 2.0**-31
    assert _classes(e4m3, x) == {"above_half", "near_tie_bottom", "subnormal_near_tie", "near_tie_bottom_sub2",
                                 "increment"}
    assert _classes(e4m3, 2.0**-8 + 2.0**-10 - 2.0**-31, "rtz") == {"below_half", "near_tie_below",
                                                                    "subnormal_near_tie", "truncate"}
    # [2^-9, 2^-8) rounding up onto 2^-8, a power of two: a carry
    assert _classes(e4m3, 2.0**-9 + 2.0**-10 + 2.0**-32) == {"above_half", "near_tie_bottom", "subnormal_near_tie",
                                                             "near_tie_bottom_sub1", "increment", "carry"}


SUITES = [("fp8_e4m3", "rne", "saturate"), ("fp8_e5m2", "rup", "ieee"), ("fp4_e2m1", "rna", "saturate"),
          ("fp8_e4m3fnuz", "rdn", "saturate"), ("binary8p1", "rtz", "ieee"), ("int8", "rne", "saturate"),
          ("int3_sm", "rup", "saturate")]


@pytest.mark.parametrize("element,rounding,overflow", SUITES)
def test_fast_expected_is_compute_many(element, rounding, overflow):
    """The suite's chunk from the fast encoder's record (``fast_expected``) gives what the reference's
    (``compute_many``) gives: codes and flags words, over the catalogue and seeded random vectors."""
    suite = suite_from_spec("encode", element=element, rounding=rounding, overflow=overflow)
    rng = random.Random(f"fast:{element}")
    rows = [inputs for inputs, _ in suite.stimulus(rng, 1)] + [suite.random_inputs(rng, i) for i in range(2000)]
    expected = suite.compute_many(rows)
    outputs, flags = suite.fast_expected({"x": [row["x"] for row in rows]})
    assert outputs["code"] == [out["code"] for out, _ in expected]
    assert flags == [flag_bits(classes) for _, classes in expected]
    assert len({word for word in flags}) > 10
