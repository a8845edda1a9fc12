"""The classes of ``dot`` and ``dotgeneral`` vectors (docs/numerics.md section 3.3), classed a chunk at
once from the reference's block Dots as the fast path's record (issue 33 item 3), against their
definition written here vector by vector: from each vector's blocks, the reference's
:class:`~mxsim.ref.dot.BlockDot` values (exact Fractions) and the one-by-one rounding classes of
``block_rounding_classes``, with none of the record's arrays. Every vector of each suite's catalogue
(structured, directed and random vectors of separate accumulation in every mode; NVFP4 with tensor
scales; a mixed pair; an accumulator input C)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from mxsim.golden.coverage.accumulator import block_low, block_rounding_classes, c_classes, element_classes
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.golden.values import code_sets, float_value, is_subnormal_code
from mxsim.options import Accumulator
from mxsim.ref import dot as ref_dot
from mxsim.ref.exact import Exact
from mxsim.ref.output import storage_format

ALIGNED = {"mode": "aligned", "frac_bits": 8, "width": 14}
DOT_SUITES = [
    {"block_a": "mxfp8_e4m3", "accumulator": ALIGNED},
    {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "aligned", "frac_bits": 13, "width": 24}},
    {"block_a": "mxfp8_e5m2", "block_b": "mxfp4_e2m1", "accumulator": {"mode": "exact", "output": "bf16"}},
    {"block_a": "mxfp6_e2m3", "accumulator": {"mode": "fp32_sequential"}},
    {"block_a": "nvfp4", "accumulator": {"mode": "exact", "output": "fp16"}},
    {"block_a": "mxint8", "accumulator": {**ALIGNED, "overflow": "saturate", "shift_rounding": "rne"}},
    {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "exact"}, "c_input": True},
]
DOTGENERAL_SUITES = [
    {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "exact", "across_blocks": "fp32"}, "n_blocks": 3},
    {"block_a": "nvfp4", "accumulator": {"mode": "exact"}, "n_blocks": 2},
    {"block_a": "mxfp4_e2m1", "accumulator": {"mode": "exact"}, "c_input": True, "n_blocks": 2},
]


def _unbounded_and_exact(acc: Accumulator):
    return (Accumulator(mode="aligned", frac_bits=acc.frac_bits, shift_rounding=acc.shift_rounding), Accumulator())


def block_dot_classes(suite, a, b, r, tensor_scales: bool) -> set:
    """The classes of one separate block Dot ``r`` of blocks ``a`` and ``b``, by their definitions."""
    fa, fb, acc = suite.fa, suite.fb, suite.acc
    prods = ref_dot.block_products(a.codes, a.subscales, fa, b.codes, b.subscales, fb)
    classes = element_classes(a, b, fa, fb, prods)
    finite_products = any(kind == "finite" and magnitude for _, magnitude, _, kind in prods)
    value, exact = r.value, r.exact
    if value.is_nan:
        classes.add("nan")
    if value.is_inf:
        classes.add("inf")
        if exact.is_finite:
            classes.add("overflow")
    if value.is_zero:
        classes.add("negative_zero" if value.sign else "zero")
        if finite_products and exact.is_zero:
            classes.add("cancellation")
    if value.is_finite and is_subnormal_code(r.code, storage_format(acc)):
        classes.add("subnormal_output")
    if acc.mode == "aligned" and finite_products:
        unbounded_acc, exact_acc = _unbounded_and_exact(acc)
        unbounded, unbounded_lsb, _ = ref_dot.block_register(prods, fa, fb, unbounded_acc)
        if unbounded != r.accumulator:
            classes.add("acc_overflow")
        exact_register, exact_lsb, _ = ref_dot.block_register(prods, fa, fb, exact_acc)
        if Fraction(unbounded) * Fraction(2) ** unbounded_lsb != Fraction(exact_register) * Fraction(2) ** exact_lsb:
            classes.add("shift_inexact")
    low = block_low(r.lsb_exponent, a.scale, b.scale, fa, fb, tensor_scales)
    return classes | block_rounding_classes(exact, r.code, low, acc)


def dot_classes(suite, inputs: dict) -> set:
    (a, b), (ta, tb) = suite._blocks(inputs)
    r = ref_dot.dot(a, b, suite.fa, suite.fb, suite.acc, tensor_scale_a=ta, tensor_scale_b=tb)
    classes = block_dot_classes(suite, a, b, r, ta is not None or tb is not None)
    if suite.has_c:
        classes |= c_classes(float_value(inputs["c"], suite.c_format), r.exact)
    return classes


def dotgeneral_classes(suite, inputs: dict) -> set:
    blocks_a, blocks_b, ta, tb = suite._vector_blocks(inputs)
    c = float_value(inputs["c"], suite.c_format) if suite.has_c else None
    g = ref_dot.dot_general(blocks_a, blocks_b, suite.fa, suite.fb, suite.acc, tensor_scale_a=ta,
                            tensor_scale_b=tb, c=c)
    classes = set()
    if g.value.is_nan:
        classes.add("nan")
    elif g.value.is_inf:
        classes.add("inf")
        if all(block.value.is_finite for block in g.blocks):
            classes.add("overflow")
    elif g.value.is_zero:
        classes.add("negative_zero" if g.value.sign else "zero")
        if any(not block.value.is_zero for block in g.blocks):
            classes.add("cancellation")
    elif is_subnormal_code(g.code, storage_format(suite.acc)):
        classes.add("subnormal_output")
    if len({block.value.sign for block in g.blocks if block.value.is_finite and not block.value.is_zero}) == 2:
        classes.add("mixed_signs")
    tensor_scales = ta is not None or tb is not None
    for a, b, r in zip(blocks_a, blocks_b, g.blocks):
        if r.exact.is_finite and r.exact.magnitude:
            low = block_low(r.lsb_exponent, a.scale, b.scale, suite.fa, suite.fb, tensor_scales)
            classes |= block_rounding_classes(r.exact, r.code, low, suite.acc)
    for side, fmt, blocks in (("a", suite.fa, blocks_a), ("b", suite.fb, blocks_b)):
        if any(not code_sets(fmt.element)["inf"].isdisjoint(block.codes) for block in blocks):
            classes.add(f"inf_{side}")
    if c is not None:
        finite = all(block.exact.is_finite for block in g.blocks)
        exact = sum((block.exact.value for block in g.blocks), Fraction(0)) if finite else None
        classes |= c_classes(c, None if exact is None else Exact(int(exact < 0), abs(exact)))
    return classes


def _catalogue(suite) -> list[dict]:
    return [row for row, _ in suite.stimulus(random.Random(7), 1)]


@pytest.mark.parametrize("params", DOT_SUITES, ids=lambda p: suite_from_spec("dot", **p).name)
def test_dot_classes_are_their_definition(params):
    suite = suite_from_spec("dot", **params)
    rows = _catalogue(suite)
    computed = suite.compute_many(rows)
    wrong = [(i, classes ^ dot_classes(suite, row)) for i, (row, (_, classes)) in enumerate(zip(rows, computed))
             if classes != dot_classes(suite, row)]
    assert not wrong, f"{len(wrong)} of {len(rows)} vectors differ, first (index, classes differing): {wrong[:3]}"


@pytest.mark.parametrize("params", DOTGENERAL_SUITES, ids=lambda p: suite_from_spec("dotgeneral", **p).name)
def test_dotgeneral_classes_are_their_definition(params):
    suite = suite_from_spec("dotgeneral", **params)
    rows = _catalogue(suite)
    computed = suite.compute_many(rows)
    wrong = [(i, classes ^ dotgeneral_classes(suite, row))
             for i, (row, (_, classes)) in enumerate(zip(rows, computed)) if classes != dotgeneral_classes(suite, row)]
    assert not wrong, f"{len(wrong)} of {len(rows)} vectors differ, first (index, classes differing): {wrong[:3]}"


def test_a_chunk_is_classed_as_each_vector_alone():
    """Classing vectors together gives each the classes it has alone (the chunk's arrays do not mix)."""
    suite = suite_from_spec("dot", **DOT_SUITES[0])
    rows = _catalogue(suite)[::37]
    together = suite.compute_many(rows)
    assert together == [suite.compute_many([row])[0] for row in rows]


def test_the_reference_record_of_block_dots_hand_worked():
    """The reference's block Dots as the fast path's record: a finite value n * 2^x with n the signed
    numerator of the reduced fraction, a zero as 0, NaN and -Inf as the fast path marks them; a value
    that is not dyadic refused."""
    from types import SimpleNamespace

    from mxsim.fast.output import FINITE, NAN, NEG_INF
    from mxsim.golden.kinds.dot.reference_record import reference_block_dots

    def dot_of(exact, code):
        return SimpleNamespace(exact=exact, code=code, accumulator=5, lsb_exponent=-3, anchor=2)

    record = reference_block_dots([dot_of(Exact(1, Fraction(3, 8)), 0xBEC00000), dot_of(Exact(0), 0),
                                   dot_of(Exact.nan(), 0x7FC00000), dot_of(Exact.inf(1), 0xFF800000)])
    assert record.special.tolist() == [FINITE, FINITE, NAN, NEG_INF]
    assert record.significand.tolist() == [-3, 0, 0, 0] and record.exponent.tolist() == [-3, 0, 0, 0]
    assert record.codes.tolist() == [0xBEC00000, 0, 0x7FC00000, 0xFF800000]
    with pytest.raises(ValueError, match="is not dyadic"):
        reference_block_dots([dot_of(Exact(0, Fraction(1, 3)), 0x3EAAAAAB)])
