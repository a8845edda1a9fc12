"""The float32 steps of mxsim.ref.fp32_steps (integer, dyadic forms) against independent sources:
fp32_round / fp32_rne / is_fp32 against NumPy's float32 conversion (a single rounding of a value
binary64 holds exactly) and against nearest-even rounding written out with Fractions here;
fp32_log2_floor / fp32_log2_ceil against torch's float32 log2; fp32_log2_element (and its ratio
form, which the quantizer calls) against microxcaling's element step run in torch float32. Each
comparison is also run once on a planted bug, which it must catch."""

from __future__ import annotations

import math
import os
import random
from fractions import Fraction

import numpy as np
import pytest

from mxsim.formats import get_format
from mxsim.ref.fp32_steps import (
    fp32_log2_ceil,
    fp32_log2_element,
    fp32_log2_element_ratio,
    fp32_log2_floor,
    fp32_log2_floor_ratio,
    fp32_rne,
    fp32_round,
    is_fp32,
    is_fp32_ratio,
)

FP32_MAX = Fraction((1 << 24) - 1) * 2**104


def _torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover - CI installs torch (the [test] extra)
        if os.environ.get("CI") == "true":
            pytest.fail(f"torch cannot be imported ({error}); CI installs it (the [test] extra)")
        pytest.skip(f"torch cannot be imported ({error})")
    return torch


def _rn32_definition(q: Fraction) -> Fraction:
    """Nearest-even float32 of q with Fractions: the spacing at |q|'s binade (2^-149 below 2^-126),
    the two neighbours, the nearer (the even one at a tie), saturating at the float32 maximum."""
    magnitude = abs(q)
    if not magnitude:
        return Fraction(0)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    while Fraction(2) ** e > magnitude:
        e -= 1
    while Fraction(2) ** (e + 1) <= magnitude:
        e += 1
    ulp = Fraction(2) ** (max(e, -126) - 23)
    steps = math.floor(magnitude / ulp)
    rest = magnitude / ulp - steps
    steps += rest > Fraction(1, 2) or (rest == Fraction(1, 2) and steps % 2 == 1)
    rounded = min(steps * ulp, FP32_MAX)
    return -rounded if q < 0 else rounded


def _random_ratios(rng: random.Random, n: int) -> list[Fraction]:
    """Signed ratios at every scale of float32 (subnormals, near the maximum, beyond it), dyadic
    ones with up to 40 bits, ties and near-ties of the float32 grid, and non-dyadic ones."""
    out = []
    for _ in range(n):
        kind = rng.randrange(5)
        exponent = rng.randrange(-170, 130)
        if kind == 0:  # a 24-bit float32 significand plus a tie or a step below or above it
            quarters = (rng.getrandbits(23) | 1 << 23) * 4 + rng.choice([-1, 1, 2, 3])
            q = Fraction(quarters, 4) * Fraction(2) ** (exponent - 23)
        elif kind == 1:
            q = Fraction(rng.getrandbits(40) + 1) * Fraction(2) ** (exponent - 40)
        elif kind == 2:  # subnormal range
            q = Fraction(rng.getrandbits(30) + 1, 1 << (149 + 7 + rng.randrange(0, 12)))
        elif kind == 3:
            q = Fraction(rng.getrandbits(30) + 1, rng.choice([3, 5, 7, 1000001])) * Fraction(2) ** exponent
        else:
            q = Fraction(rng.getrandbits(24) + 1) * Fraction(2) ** (exponent - 24)
        out.append(-q if rng.getrandbits(1) else q)
    return out + [Fraction(0), FP32_MAX, FP32_MAX + FP32_MAX / 2**25, -FP32_MAX * 2, Fraction(1, 2**150),
                  Fraction(3, 2**151)]


def _rn32_mismatches(rounding, values) -> int:
    return sum(rounding(q) != _rn32_definition(q) for q in values)


def test_fp32_rne_is_nearest_even_rounding_and_numpy_float32():
    values = _random_ratios(random.Random(20261126), 4000)
    assert _rn32_mismatches(fp32_rne, values) == 0
    # NumPy's float32 conversion of a value binary64 holds exactly (40 bits at most here): one rounding
    compared = 0
    for q in values:
        if q.denominator & (q.denominator - 1) == 0 and abs(q.numerator).bit_length() <= 53 and abs(q) < 2**1000:
            with np.errstate(over="ignore"):
                want = np.float32(float(q))
            if np.isfinite(want):
                assert fp32_rne(q) == Fraction(float(want)), q
                compared += 1
    assert compared > 1500
    # the integer form: (S, q) with S * 2^q the same value, and is_fp32 iff it rounds to itself
    for q in values:
        significand, grid = fp32_round(abs(q.numerator), q.denominator)
        assert significand * Fraction(2) ** grid == abs(fp32_rne(q))
        assert is_fp32(q) == is_fp32_ratio(abs(q.numerator), q.denominator) == (fp32_rne(q) == q)
    # a planted bug is caught
    assert _rn32_mismatches(_rn32_toward_zero, values) > 100


def _rn32_toward_zero(q: Fraction) -> Fraction:
    """A planted bug: a nearest-even result that lies beyond |q| moved 2^-149 back toward zero."""
    rounded = _rn32_definition(q)
    return rounded - math.copysign(1, q) * Fraction(2) ** -149 if abs(rounded) > abs(q) else rounded


def _float32_values(rng: random.Random, n: int) -> np.ndarray:
    """Positive float32 values, half of them within 3000 steps of a power of two 2^-126 .. 2^127
    (where log2 may round onto the integer: half of those within 40 steps below), the rest
    anywhere, subnormals included."""
    words = []
    for _ in range(n):
        if rng.getrandbits(1):
            field = rng.randrange(1, 255)  # the exponent field of 2^k, k = -126 .. 127 (and 2^-148 .. via steps)
            offset = rng.randrange(-3000, 3000) if rng.getrandbits(1) else rng.randrange(-40, 8)
            words.append(max(1, (field << 23) + offset))
        else:
            words.append(rng.randrange(1, 0x7F800000))
    return np.array(words, dtype=np.uint32).view(np.float32)


def test_fp32_log2_floor_and_ceil_are_torch_float32_log2():
    torch = _torch()
    xs = _float32_values(random.Random(5), 6000)
    log2 = torch.log2(torch.from_numpy(xs.copy())).numpy()
    floor_mismatches = ceil_mismatches = 0
    for x, y in zip(xs.tolist(), log2.tolist()):
        q = Fraction(x)
        floor_mismatches += fp32_log2_floor(q) != math.floor(y)
        floor_mismatches += fp32_log2_floor_ratio(q.numerator << 3, q.denominator << 3) != math.floor(y)  # unreduced
        ceil_mismatches += fp32_log2_ceil(q) != math.ceil(y)
    assert floor_mismatches == ceil_mismatches == 0
    # the values whose float32 log2 rounds onto the integer above are in the sample: a planted bug, the
    # exact floor(log2 x) in place of the float32 log2's, would differ there
    exact_floor = [_exact_floor_log2(Fraction(x)) for x in xs.tolist()]
    assert sum(f != math.floor(y) for f, y in zip(exact_floor, log2.tolist())) > 100
    with pytest.raises(ValueError, match="is not a float32 value"):
        fp32_log2_floor(Fraction(2**25 - 1, 2**24))  # 25 significant bits, just below 2
    with pytest.raises(ValueError, match="positive"):
        fp32_log2_floor(Fraction(0))


def _exact_floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e - (q < Fraction(2) ** e)


def _microxcaling_elements(torch, a: np.ndarray, element, rounding: str) -> list[Fraction]:
    """microxcaling's _quantize_elemwise_core on float32 values a (already divided by the block
    scale), in torch float32: private exponent floor(log2 |a|) clamped at emin (float elements),
    the mantissa scaled up, rounded ('nearest': floor(|A| + 0.5); 'even': that minus 1 where
    (|A| - 0.5) % 2 == 0; 'floor': floor(|A|)), scaled back, clamped at max normal."""
    t = torch.from_numpy(np.abs(a).astype(np.float32))
    if element.kind == "float":
        exponent = torch.floor(torch.log2(t + (t == 0).type(t.dtype)))
        exponent = exponent.clip(min=element.emin)
        step = torch.pow(2.0, exponent - element.mantissa_bits)
    else:
        step = torch.full_like(t, 2.0 ** -element.frac_bits)
    scaled = t / step
    if rounding == "rna":
        r = torch.floor(scaled + 0.5)
    elif rounding == "rne":
        r = torch.floor(scaled + 0.5) - ((scaled - 0.5) % 2 == 0).type(t.dtype)
    else:
        r = torch.floor(scaled)
    values = (r * step).numpy().astype(np.float64).tolist()
    return [min(Fraction(v), element.max_normal) for v in values]


def _element_inputs(rng: random.Random, element, n: int) -> np.ndarray:
    """float32 values a over the element's range and below it: on the element grid, halfway (ties),
    a float32 step off a tie, just under 1/2 of the lowest step (float32 double rounding of v + 1/2),
    random; zeros and negatives too."""
    values = []
    for _ in range(n):
        kind = rng.randrange(4)
        if element.kind == "float":
            binade = rng.randrange(element.emin - 3, element.emax + 2)
            step = 2.0 ** (max(binade, element.emin) - element.mantissa_bits)
        else:
            binade, step = rng.randrange(-8, 2), 2.0 ** -element.frac_bits
        if kind == 0:
            v = (rng.randrange(0, 1 << (element.mantissa_bits + 1 if element.kind == "float" else 8)) + 0.5) * step
            v = float(np.nextafter(np.float32(v), np.float32(rng.choice([0, np.inf])))) if rng.getrandbits(1) else v
        elif kind == 1:
            v = (0.5 - 2.0 ** -rng.randrange(20, 27)) * step
        else:
            v = float(np.float32(rng.random() * 2.0 ** binade))
        values.append(-v if rng.getrandbits(1) else v)
    return np.array(values + [0.0, -0.0], dtype=np.float32)


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp4_e2m1", "int8"])
def test_fp32_log2_element_is_microxcalings_float32_element_step(name):
    torch = _torch()
    element = get_format(name, kind="element")
    a = _element_inputs(random.Random(name), element, 3000)
    for rounding in ("rna", "rne", "rtz"):
        want = _microxcaling_elements(torch, a, element, rounding)
        got = [fp32_log2_element(Fraction(float(x)), element, rounding) for x in a.tolist()]
        assert got == want, rounding
        for x, w in zip(a.tolist(), want):  # the ratio form, unreduced
            q = Fraction(abs(float(x)))
            n, d = fp32_log2_element_ratio(q.numerator << 5, q.denominator << 5, element, rounding)
            assert Fraction(n, d) == w
    # planted bug: exact nearest-even of v (no float32 step for v + 1/2) differs at the double roundings
    exact = [min(_exact_rne(Fraction(abs(float(x))), element), element.max_normal) for x in a.tolist()]
    assert exact != _microxcaling_elements(torch, a, element, "rne")


def _exact_rne(magnitude: Fraction, element) -> Fraction:
    if element.kind == "float":
        e = fp32_log2_floor(magnitude) if magnitude else 0
        step = Fraction(2) ** (max(e, element.emin) - element.mantissa_bits)
    else:
        step = Fraction(1, 2**element.frac_bits)
    return round(magnitude / step) * step


def test_fp32_log2_element_refuses_other_roundings():
    with pytest.raises(ValueError, match="rounding='rup' is not allowed with element_arith='fp32_log2'"):
        fp32_log2_element(Fraction(1), get_format("fp8_e4m3", kind="element"), "rup")
