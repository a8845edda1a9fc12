"""Corner classes of dot suites with an accumulator input C or fused steps (contract section 4.1),
computed from each vector's content and the reference model's view of every step
(:func:`mxsim.ref.fused.fused_step_details`); the catalogue is :mod:`mxsim.golden.classes`."""

from __future__ import annotations

from fractions import Fraction

from ..ref import dot as ref_dot
from ..ref.encode import encode
from ..ref.exact import Exact
from ..ref.output import output_format, storage_format
from .suite import code_sets, decode, is_subnormal_code

__all__ = ["CANCELLATION_BITS", "c_classes", "element_classes", "fused_classes"]

CANCELLATION_BITS = 8  # c_cancellation: |C + products| <= 2^-8 |C|


def element_classes(a, b, fmt_a, fmt_b, products=None) -> set:
    """The classes of one block pair's inputs: NaN/Inf elements, an all-zero pair, products of both
    signs, scale codes at the edges or NaN, largest elements, MXINT8 -2, subnormal products.
    ``products``: the pair's :func:`mxsim.ref.dot.block_products` if the caller has them (else
    computed here). Element classes come from the per-code sets of :func:`.suite.code_sets`."""
    classes = set()
    sets_a, sets_b = code_sets(fmt_a.element), code_sets(fmt_b.element)
    if products is None:
        products = ref_dot.block_products(a.codes, a.subscales, fmt_a, b.codes, b.subscales, fmt_b)
    # (code a, code b, sign) of the products of two finite nonzero elements: kind finite, Ma * Mb > 0
    live = [(ca, cb, sign) for ca, cb, (sign, magnitude, _, kind) in zip(a.codes, b.codes, products)
            if kind == "finite" and magnitude]
    for name in ("nan", "inf"):
        if not (sets_a[name].isdisjoint(a.codes) and sets_b[name].isdisjoint(b.codes)):
            classes.add(name)
    if sets_a["zero"].issuperset(a.codes) and sets_b["zero"].issuperset(b.codes):
        classes.add("all_zero")
    if len({sign for _, _, sign in live}) == 2:
        classes.add("mixed_signs")
    for fmt, block, sets in ((fmt_a, a, sets_a), (fmt_b, b, sets_b)):
        if block.scale in code_sets(fmt.scale)["nan"]:
            classes.add("scale_nan")
        elif fmt.scale.name == "e8m0" and block.scale in (0, 0xFE):
            classes.add("scale_min" if block.scale == 0 else "scale_max")
        if not sets["max"].isdisjoint(block.codes):
            classes.add("max")
        if not sets["neg2"].isdisjoint(block.codes):
            classes.add("int8_neg2")
    codes_a, codes_b, _ = zip(*live) if live else ((), (), ())
    if not (sets_a["subnormal"].isdisjoint(codes_a) and sets_b["subnormal"].isdisjoint(codes_b)):
        classes.add("subnormal_product")
    return classes


def _cancels(c: Exact, products: Fraction) -> bool:
    """C nonzero and finite, products nonzero, and |C + products| <= 2^-CANCELLATION_BITS |C|."""
    if not (c.is_finite and c.magnitude and products):
        return False
    return abs(c.value + products) * 2**CANCELLATION_BITS <= c.magnitude


def c_classes(c: Exact, exact: Exact | None) -> set:
    """Classes of the input C against the exact value it is added to (``exact``: the products'
    sum, None if it is not finite): c_nan, inf, c_cancellation."""
    classes = set()
    if c.is_nan:
        classes.add("c_nan")
    if c.is_inf:
        classes.add("inf")
    if exact is not None and exact.is_finite and _cancels(c, exact.value):
        classes.add("c_cancellation")
    return classes


def _overflows(total: Fraction, accumulator) -> bool:
    """Whether rounding ``total`` to the output with unbounded exponent passes its largest value."""
    try:
        encode(Exact(int(total < 0), abs(total)), output_format(accumulator), accumulator.output_rounding, "error")
    except OverflowError:
        return True
    return False


def fused_classes(details, accumulator) -> set:
    """Classes of the fused steps of one vector (every step's :class:`~mxsim.ref.fused.FusedStep`):
    C's classes, NaN/Inf/zero/subnormal results, overflow and saturation, cancellation, and the
    bits the grid cut (shift_inexact)."""
    classes = c_classes(details[0].c, None) if details else set()
    storage = storage_format(accumulator)
    for step in details:
        d = decode(step.code, storage)
        if step.special:
            classes.add("nan" if d.is_nan else "inf")
            continue
        if d.is_inf:
            classes.add("inf")
        c = step.c
        if step.nonzero and _cancels(c, step.products):
            classes.add("c_cancellation")
        if step.nonzero and step.products == 0:
            classes.add("cancellation")
        if step.cut_products != step.products:
            classes.add("shift_inexact")
        c_lost = step.bypass or (step.anchor == step.c_exponent and step.cut_products != step.products)
        if step.nonzero and c_lost:
            if c.magnitude and (step.bypass or step.cut_products == 0):
                classes.add("c_bypass")
            elif not c.magnitude:
                classes.add("c_zero_tiny")
        if step.total is not None and _overflows(step.total, accumulator):
            classes.add("overflow")
            if d.is_finite:
                classes.add("saturation")
        if d.is_finite and is_subnormal_code(step.code, storage):
            classes.add("subnormal_output")
    if details:
        last = decode(details[-1].code, storage)
        if last.is_zero:
            classes.add("negative_zero" if last.sign else "zero")
    return classes
