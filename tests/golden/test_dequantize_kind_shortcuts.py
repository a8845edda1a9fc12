"""The shortcuts a dequantize suite takes for its classes (issue 22: the main job's CPU time) give
what their definitions give:

* each value's flags word of rounding-decision classes (``DequantizeSuite._decision_flag_words``
  of the reference dequantizer's records, :func:`mxsim.ref.dequant.dequantize_block_traced`: the
  output grid's step and the resolution as the dequantizer reports them) against the definition
  computed here in Fractions from the block's exact values and output words: r = (the element's last significand bit) * x / element,
  x compared with the output's largest normal (and smallest normal under ``dequant_ftz``), then
  :func:`mxsim.golden.coverage.rounding.decision_flags`; on the catalogue of suites of every
  output, E8M0 and int8 exponents, sub-scales (MX9), integer elements, NVFP4, ftz and saturate;
* the overflow / saturation / subnormal_output classes read from the output word
  (``DequantizeSuite._is_ieee_word``) against the same classes from the reference encoder's IEEE
  word (:func:`mxsim.ref.encode.encode`, overflow 'ieee'), on values around every output's
  overflow threshold, smallest normal and smallest subnormal, under every overflow and ftz option.

* a vector's classes (``DequantizeSuite._classes``: the element classes from the code sets, the
  value classes kept per output word where the word alone decides them) against the classes of
  every element value and word computed one by one, and ``compute_many`` of a whole catalogue
  against ``compute`` vector by vector, on the same suites.

Checked by hand that each test fails with the shortcut broken (reported with the change that
made it: a factor off by one bit; the output word taken as the IEEE word whatever the options).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mxsim.golden.compute import pipeline
from mxsim.golden.coverage.rounding import decision_flags, ieee_interval
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.ref.stored_block import QuantizedBlock, dequantize_block
from mxsim.ref.decode import decode
from mxsim.ref.dequant import dequantize_block_traced, is_subnormal_word, round_elements_traced, round_to_output
from mxsim.ref.encode import encode
from mxsim.ref.exact import Exact, floor_log2
from mxsim.golden.values import fp32_value, unpack_word

SUITES = [
    {"block": "mxfp8_e4m3", "output": "bfloat16"},
    {"block": "mxfp8_e5m2", "output": "float16", "scale_encoding": "int8_exponent"},
    {"block": "mxfp4_e2m1", "output": "float16", "options": {"dequant_ftz": True, "dequant_overflow": "saturate"}},
    {"block": "mxint8", "output": "bfloat16"},
    {"block": "mx9", "output": "float16"},
    {"block": "nvfp4", "output": "float16"},
    {"block": "mxfp6_e3m2", "output": "float32", "options": {"dequant_ftz": True}},
]


def _last_bit(element: Exact, fmt) -> Fraction:
    """The weight of the last significand bit of a nonzero element value (docs/numerics.md section
    3.3): 2^(e - m) with e its
    exponent (at least emin) for floats; the value of code 1 for integers."""
    if fmt.kind != "float":
        return decode(1, fmt).magnitude
    return Fraction(2) ** (max(floor_log2(element.magnitude), fmt.emin) - fmt.mantissa_bits)


def _defined_flags(suite, values: list[Exact], words: list[int], codes) -> list[int]:
    out, fmt = suite.out, suite.fmt.element
    rows, where = [], []
    for i, (x, word, code) in enumerate(zip(values, words, codes)):
        if not x.is_finite or x.magnitude == 0 or x.magnitude > out.max_normal:
            continue
        if suite.opts.dequant_ftz and x.magnitude < out.min_normal:
            continue
        element = decode(code, fmt)
        resolution = _last_bit(element, fmt) * x.magnitude / element.magnitude
        rows.append((float(x.magnitude), float(resolution), float(decode(word, out).magnitude), bool(x.sign)))
        where.append(i)
    flags = [0] * len(values)
    if rows:
        magnitude, resolution, result, negative = (np.array(column) for column in zip(*rows))
        lo, hi, _ = ieee_interval(magnitude, out.mantissa_bits, out.emin, float(out.max_normal))
        for i, f in zip(where, decision_flags(magnitude, lo, hi, resolution, result, negative, float(out.min_normal))):
            flags[i] = int(f)
    return flags


@pytest.mark.parametrize("params", SUITES, ids=lambda p: "-".join(str(v) for v in p.values()))
def test_decision_flags_follow_the_definition_on_the_catalogue(params):
    suite = suite_from_spec("dequantize", **params)
    fmt = suite.fmt
    plan = pipeline.plan(suite, 1)
    checked, set_flags = 0, 0
    for inputs, _ in pipeline.vectors(suite, 0, 1, plan):
        codes = tuple(unpack_word(inputs["codes"], fmt.element.width, fmt.block_size))
        subscales = tuple(unpack_word(inputs["subscales"], fmt.subscale_bits, fmt.subblocks)) if fmt.subblocks else ()
        tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        block = QuantizedBlock(inputs["scale"], subscales, codes)
        values = dequantize_block(block, fmt, tensor_scale, suite.scale_encoding)
        words = [round_to_output(x, suite.output, suite.opts) for x in values]
        expected = _defined_flags(suite, values, words, codes)
        traced_values, traced_words, records = dequantize_block_traced(block, fmt, suite.output, suite.opts,
                                                                        tensor_scale, suite.scale_encoding)
        assert (traced_values, traced_words) == (values, words)
        assert suite._decision_flag_words(records) == expected, inputs
        checked += 1
        set_flags += sum(1 for f in expected if f)
    assert checked == plan.catalogue and set_flags > 100  # the catalogue has rounding decisions to check


def _around(x: Fraction, step: Fraction) -> list[Fraction]:
    return [x + k * step for k in (-2, -1, 0, 1, 2) if x + k * step > 0]


@pytest.mark.parametrize("output", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("overflow", ["inf", "saturate"])
@pytest.mark.parametrize("ftz", [False, True])
def test_output_word_classes_are_the_ieee_words(output, overflow, ftz):
    suite = suite_from_spec("dequantize", block="mxfp8_e4m3", output=output,
                            options={"dequant_overflow": overflow, "dequant_ftz": ftz})
    out = suite.out
    ulp_top = Fraction(2) ** (out.emax - out.mantissa_bits)
    tiny = out.min_subnormal
    magnitudes = (_around(out.max_normal, ulp_top / 4) + _around(out.max_normal + ulp_top / 2, ulp_top / 8)
                  + [out.max_normal * 4] + _around(out.min_normal, tiny / 4)
                  + _around(out.min_normal - tiny / 2, tiny / 8) + _around(tiny, tiny / 4) + _around(tiny / 2, tiny / 8)
                  + [Fraction(1), Fraction(3, 2) + tiny])
    taken_from_word = 0
    for magnitude in magnitudes:
        for sign in (0, 1):
            x = Exact(sign, magnitude)
            word = round_to_output(x, output, suite.opts)
            ieee = encode(x, out, "rne", "ieee")
            expected = set()
            if decode(ieee, out).is_inf:
                expected = {"overflow"} | ({"saturation"} if overflow == "saturate" else set())
            elif is_subnormal_word(ieee, out):
                expected = {"subnormal_output"}
            assert suite._rounding_classes(x, word, out) == expected, (x, hex(word))
            taken_from_word += suite._is_ieee_word(word)
    assert 0 < taken_from_word < 2 * len(magnitudes) or not (ftz or overflow == "saturate")


@pytest.mark.parametrize("output", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("ftz", [False, True])
def test_decision_flags_at_the_bounds_follow_the_definition(output, ftz):
    """Values on and next to the output's largest normal and smallest normal (where the shortcut
    compares in integers), each taken as element 1.0 (E4M3 code 0x38) times some multiplier."""
    suite = suite_from_spec("dequantize", block="mxfp8_e4m3", output=output, options={"dequant_ftz": ftz})
    out = suite.out
    tiny = out.min_subnormal
    ulp_top = Fraction(2) ** (out.emax - out.mantissa_bits)
    magnitudes = [out.max_normal, out.max_normal - ulp_top, out.max_normal + ulp_top / 4, out.min_normal,
                  out.min_normal - tiny, out.min_normal - tiny / 2, out.min_normal + tiny / 2, tiny, tiny / 2]
    values = [Exact(sign, m) for m in magnitudes for sign in (0, 1)]
    words = [round_to_output(x, output, suite.opts) for x in values]
    codes = [0x38] * len(values)
    expected = _defined_flags(suite, values, words, codes)
    records = []
    for m in magnitudes:  # element 1.0 (+0x38, -0xB8) times the magnitude
        records += round_elements_traced([0x38, 0xB8], suite.fmt.element, m, output, suite.opts)[2]
    assert suite._decision_flag_words(records) == expected
    # max_normal is decided, a value beyond it not, one below min_normal only without ftz
    assert expected[0] and not expected[4] and bool(expected[8]) is not ftz


@pytest.mark.parametrize("params", SUITES, ids=lambda p: "-".join(str(v) for v in p.values()))
def test_vector_classes_follow_the_definition_on_the_catalogue(params):
    suite = suite_from_spec("dequantize", **params)
    fmt, out = suite.fmt, suite.out
    rows = [inputs for inputs, _ in pipeline.vectors(suite, 0, 1, pipeline.plan(suite, 1))]
    for inputs in rows:
        codes = tuple(unpack_word(inputs["codes"], fmt.element.width, fmt.block_size))
        subscales = tuple(unpack_word(inputs["subscales"], fmt.subscale_bits, fmt.subblocks)) if fmt.subblocks else ()
        tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        block = QuantizedBlock(inputs["scale"], subscales, codes)
        values = dequantize_block(block, fmt, tensor_scale, suite.scale_encoding)
        words = [round_to_output(x, suite.output, suite.opts) for x in values]
        elements = [decode(c, fmt.element) for c in codes]
        expected = {name for name, hit in (
            ("nan", any(x.is_nan for x in elements)), ("inf", any(x.is_inf for x in elements)),
            ("all_zero", all(x.is_zero for x in elements)),
            ("subnormal_input", any(0 < c & ~fmt.element.sign_mask < 1 << fmt.element.mantissa_bits
                                    for c in codes) if fmt.element.kind == "float" else False),
            ("int8_neg2", fmt.element.kind == "int" and fmt.element.encoding == "twos_complement"
             and fmt.element.sign_mask in codes)) if hit}
        expected |= suite._scale_classes(block.scale)
        for x, word in zip(values, words):
            expected |= suite._value_classes(x, word, out)
        assert suite._classes(block, values, words) == expected, inputs
    assert len(suite._word_classes) > 10  # the kept classes were used
    assert suite.compute_many(rows) == [suite.compute(row) for row in rows]


def test_all_zero_class_of_a_block_of_both_zeros():
    suite = suite_from_spec("dequantize", block="mxfp8_e4m3", output="float32")
    block = QuantizedBlock(127, (), tuple(0x80 * (i % 2) for i in range(32)))  # +0 and -0 codes
    values = dequantize_block(block, suite.fmt)
    words = [round_to_output(x, suite.output, suite.opts) for x in values]
    assert {"all_zero", "zero", "negative_zero"} <= suite._classes(block, values, words)
