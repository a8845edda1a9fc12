"""The encode kind's shortcuts (issue 22: the main job's CPU time) give what their definitions give:
the input classes read from the fp32 bit fields and the output classes kept per code
(``EncodeSuite._reference_vector``), and the input read as a Python float (``values.fp32_float``),
against the classes and code computed here from the exact value of the bits (the reference decoder,
Fraction comparisons), on fp32 words of every kind (NaN of both signs, Inf, zeros, subnormals,
values around the format's largest magnitude) for float, fnuz, P3109 and integer elements and every
rounding and overflow mode; the sample meets every class (so a wrong shortcut for one is caught)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from mxsim.golden.coverage.catalogue import class_names
from mxsim.golden.coverage.rounding import decision_flags, fp32_resolution, grid_interval, magnitude_grid
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.golden.values import fp32_bits, fp32_float, fp32_value, is_subnormal_code
from mxsim.ref.decode import decode
from mxsim.ref.encode import encode
from mxsim.ref.exact import Exact

SUITES = [("fp8_e4m3", "rne", "saturate"), ("fp8_e5m2", "rup", "ieee"), ("fp4_e2m1", "rdn", "saturate"),
          ("fp6_e3m2", "rtz", "saturate"), ("fp8_e5m2fnuz", "rna", "ieee"), ("binary8p3", "rne", "ieee"),
          ("int8", "rne", "saturate"), ("int8", "rdn", "ieee"), ("int3_sm", "rne", "saturate"),
          ("int5_sm", "rna", "ieee"), ("binary8p1", "rup", "saturate"), ("fp8_e4m3fnuz", "rdn", "saturate"),
          ("fp8_e4m3", "rtz", "ieee")]


def _words(rng: random.Random, fmt, n: int) -> list[int]:
    top = fmt.max_normal
    words = [0, 1 << 31, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 1, 0x807FFFFF, 0x00800000,
             0x80800000]  # zeros, Infs, NaNs, the largest subnormal and the smallest normal
    at_top = fp32_bits(Exact(0, top))  # the largest magnitude itself and its fp32 neighbours (overflow's edge)
    words += [sign | w for w in (at_top - 1, at_top, at_top + 1) for sign in (0, 1 << 31)]
    for _ in range(n):
        kind = rng.randrange(4)
        sign = rng.getrandbits(1) << 31
        if kind == 0:  # around the largest magnitude
            x = top * Fraction(rng.randrange(1 << 12, 3 << 12), 1 << 12)
            words.append(sign | fp32_bits(Exact(0, x)))
        elif kind == 1:
            words.append(sign | rng.randrange(1, 1 << 23))
        else:
            words.append(sign | rng.randrange(100, 140) << 23 | rng.getrandbits(23))
    if not getattr(fmt, "has_nan", False):  # NaN is a block-level matter there (the suite draws none)
        words = [w for w in words if w & 0x7FFFFFFF <= 0x7F800000]
    return words


def decision_classes_on_grid(fmt, x: float, y: float, negative: bool) -> int:
    """The decision flags word of the fp32 magnitude x (within the format's range) rounded to the
    code of magnitude y, by the definition (docs/numerics.md section 3.3): x's interval looked up on
    the format's own grid of that sign (every finite magnitude a code holds, zero included), not
    taken from the encoder; the input's resolution is fp32's last bit at x."""
    lo, hi, _ = grid_interval(x, 1.0, magnitude_grid(fmt, negative))
    min_normal = float(fmt.min_normal) if fmt.kind == "float" and fmt.subnormals else 0.0
    return int(decision_flags(x, lo, hi, fp32_resolution(x), y, negative, min_normal))


def _defined(suite, bits: int):
    """The code and classes from the exact value (as the kind defines them, contract 3.3)."""
    fmt = suite.fmt
    x = fp32_value(bits)
    code = encode(x, fmt, suite.rounding, suite.overflow)
    if x.is_nan:
        classes = {"nan"}
    elif x.is_inf:
        classes = {"inf"}
    elif x.is_zero:
        classes = {"negative_zero" if x.sign else "zero"}
    else:
        classes = set()
        y = decode(code, fmt)
        if x.magnitude < Fraction(1, 1 << 126):
            classes.add("subnormal_input")
        if x.magnitude > fmt.max_normal:
            classes.add("overflow")
        if y.is_finite and y.magnitude == fmt.max_normal:
            classes.add("max")
            if x.magnitude > fmt.max_normal:
                classes.add("saturation")
        if is_subnormal_code(code, fmt):
            classes.add("subnormal_output")
        if y.is_zero:
            classes.add("negative_zero" if y.sign else "zero")
        if x.magnitude <= fmt.max_normal:
            classes |= set(class_names(decision_classes_on_grid(fmt, float(x.magnitude), float(y.magnitude), bool(x.sign))))
    if fmt.kind == "int" and fmt.encoding == "twos_complement" and code == fmt.sign_mask:
        classes.add("int8_neg2")
    return {"code": code}, classes


@pytest.mark.parametrize("element,rounding,overflow", SUITES)
def test_encode_classes_from_bits_are_the_definitions(element, rounding, overflow):
    suite = suite_from_spec("encode", element=element, rounding=rounding, overflow=overflow)
    words = _words(random.Random(element + rounding), suite.fmt, 3000)
    rows = [{"x": w} for w in words]
    expected = [_defined(suite, w) for w in words]
    assert [suite.compute(row) for row in rows] == expected
    assert suite.compute_many(rows) == expected
    met = set().union(*(classes for _, classes in expected))
    wanted = {"inf", "zero", "negative_zero", "subnormal_input", "overflow", "max"}
    if getattr(suite.fmt, "has_nan", False):
        wanted.add("nan")
    if suite.fmt.kind == "float" and suite.fmt.subnormals and suite.fmt.mantissa_bits:  # binary8p1: none
        wanted.add("subnormal_output")
    if overflow == "saturate":
        wanted.add("saturation")
    assert wanted <= met, wanted - met


def test_fp32_float_is_the_exact_value_of_the_bits():
    rng = random.Random(3)
    for bits in [0, 1 << 31, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 1, 0x7F7FFFFF] + [
            rng.getrandbits(32) for _ in range(5000)]:
        x, exact = fp32_float(bits), fp32_value(bits)
        assert math.copysign(1.0, x) < 0 if exact.sign else math.copysign(1.0, x) > 0
        if exact.is_nan:
            assert x != x
        elif exact.is_inf:
            assert math.isinf(x)
        else:
            assert Fraction(abs(x)) == exact.magnitude
    for bad in (-1, 1 << 32, True, 1.0):
        with pytest.raises(ValueError):
            fp32_float(bad)
