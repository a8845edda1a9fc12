"""Integer ratios (sign, n, d), the reference's hot-path reading of exact values
(mxsim.ref.exact.ratio / float_ratio) and subnormal_inputs on them (mxsim.ref.sources.read_subnormal).
Expected values: hand-worked, or Python's own exact Fraction of a float."""

import math
import random
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from mxsim.ref.exact import Exact, float_ratio, ratio
from mxsim.ref.sources import read_subnormal

NAN = float("nan")


@pytest.mark.parametrize(
    "x, expected",
    [
        (0.75, (0, 3, 4)),
        (-3.0, (1, 3, 1)),
        (0.0, (0, 0, 1)),
        (-0.0, (1, 0, 1)),
        (5e-324, (0, 1, 2**1074)),  # the smallest binary64 subnormal
        (float("inf"), (0, 1, 0)),
        (float("-inf"), (1, 1, 0)),
        (NAN, (0, 0, 0)),
        (math.copysign(NAN, -1.0), (1, 0, 0)),  # a NaN keeps its sign bit
    ],
)
def test_float_ratio_hand_worked(x, expected):
    assert float_ratio(x) == expected == ratio(x)


def test_float_ratio_is_the_exact_value_of_every_finite_bit_pattern():
    rng = random.Random(15)
    for _ in range(5000):
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        sign, n, d = float_ratio(x)
        assert sign == (math.copysign(1.0, x) < 0)
        if math.isfinite(x):
            assert d > 0 and n >= 0 and Fraction(n, d) == abs(Fraction(x))
        else:
            assert d == 0 and n == int(math.isinf(x))


@pytest.mark.parametrize(
    "x, expected",
    [
        (Fraction(-1, 3), (1, 1, 3)),
        (7, (0, 7, 1)),
        (Exact(1, Fraction(5, 8)), (1, 5, 8)),
        (Exact.nan(1), (1, 0, 0)),
        (Exact.inf(0), (0, 1, 0)),
        (np.float32(-0.1), (1, 13421773, 2**27)),  # float32 0.1 is 13421773 * 2^-27
        (ml_dtypes.bfloat16(-0.0), (1, 0, 1)),
        (np.int16(-2), (1, 2, 1)),
    ],
)
def test_ratio_of_other_number_types(x, expected):
    assert ratio(x) == expected


def test_ratio_refuses_what_to_exact_refuses():
    with pytest.raises(ValueError, match="bool"):
        ratio(True)


def _value(r):
    sign, n, d = r
    return (-1) ** sign * Fraction(n, d)


@pytest.mark.parametrize("mode", ["exact", "flush", "as_normal"])
def test_read_subnormal_leaves_normals_zeros_and_specials(mode):
    for r in [(0, 1, 2**126), (1, 3, 2), (1, 0, 1), (0, 1, 0), (1, 0, 0)]:
        assert read_subnormal(r, mode) == r


def test_read_subnormal_below_the_smallest_normal():
    tiny = (1, 5, 2**149)  # -5 * 2^-149, an fp32 subnormal (mantissa field 5)
    assert read_subnormal(tiny, "exact") == tiny
    assert read_subnormal(tiny, "flush") == (1, 0, 1)  # -0
    sign, n, d = read_subnormal(tiny, "as_normal")
    # exponent field 0 read as 2^-127
    assert sign == 1 and Fraction(n, d) == (1 + Fraction(5, 2**23)) * Fraction(1, 2**127)
    largest = read_subnormal((0, 2**23 - 1, 2**149), "as_normal")  # the largest mantissa field
    assert _value(largest) == (2 - Fraction(1, 2**23)) / 2**127
    with pytest.raises(ValueError, match="not an fp32 subnormal"):
        read_subnormal((0, 1, 3 * 2**140), "as_normal")  # below 2^-126 but off the 2^-149 grid
