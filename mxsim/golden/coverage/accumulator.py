"""Corner classes of dot suites with an accumulator input C or fused steps (docs/numerics.md section
4.1), computed from each vector's content; the fused steps' classes, many vectors at once, are
:mod:`.rounding_record`'s; the catalogue is :mod:`mxsim.golden.coverage.catalogue`."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache, reduce
from operator import or_

import numpy as np

from ...ref import dot as ref_dot
from ...ref.encode import encode
from ...ref.exact import Exact, floor_log2_ratio
from ...options.accumulate import output_float_format
from ...ref.output import output_format, storage_format
from ..values import code_sets, decode, is_subnormal_code
from .output_rounding import NO_LOW, output_rounding_classes

__all__ = [
    "CANCELLATION_BITS", "c_classes", "cancels", "dyadic_overflows", "element_classes", "block_low", "block_lows",
    "block_rounding_classes", "register_classes", "step_low",
]

CANCELLATION_BITS = 8  # c_cancellation: |C + products| <= 2^-8 |C|


def element_classes(a, b, fmt_a, fmt_b, products=None) -> set:
    """The classes of one block pair's inputs: NaN/Inf elements, an all-zero pair, products of both
    signs, scale codes at the edges or NaN, largest elements, MXINT8 -2, subnormal products.
    ``products``: the pair's :func:`mxsim.ref.dot.block_products` if the caller has them (else
    computed here). Element classes come from the per-code sets of :func:`..values.code_sets`
    (as one bit word per code, :func:`_code_bits`: the classes of a block are the OR of its codes'
    words; "every code zero" is no word with `_NOT_ZERO`)."""
    classes = set()
    bits_a, bits_b = _code_bits(fmt_a.element), _code_bits(fmt_b.element)
    if products is None:
        products = ref_dot.block_products(a.codes, a.subscales, fmt_a, b.codes, b.subscales, fmt_b)
    word_a = reduce(or_, map(bits_a.__getitem__, a.codes), 0)
    word_b = reduce(or_, map(bits_b.__getitem__, b.codes), 0)
    word = word_a | word_b
    if word & _NAN:
        classes.add("nan")
    if word & _INF:
        classes.add("inf")
        if word_a & _INF:
            classes.add("inf_a")  # element Inf per operand (contract 3.3 (5))
        if word_b & _INF:
            classes.add("inf_b")
    if not word & _NOT_ZERO:
        classes.add("all_zero")
    if word & _MAX:
        classes.add("max")
    if word & _NEG2:
        classes.add("int8_neg2")
    for fmt, block in ((fmt_a, a), (fmt_b, b)):
        if block.scale in code_sets(fmt.scale)["nan"]:
            classes.add("scale_nan")
        elif fmt.scale.name == "e8m0" and block.scale in (0, 0xFE):
            classes.add("scale_min" if block.scale == 0 else "scale_max")
    # the products of two finite nonzero elements (kind finite, Ma * Mb > 0): their signs, and
    # whether one has a subnormal element
    if len({sign for sign, magnitude, _, kind in products if magnitude and kind == "finite"}) == 2:
        classes.add("mixed_signs")
    if word & _SUBNORMAL and any(
            (bits_a[ca] | bits_b[cb]) & _SUBNORMAL
            for ca, cb, (_, magnitude, _, kind) in zip(a.codes, b.codes, products) if magnitude and kind == "finite"):
        classes.add("subnormal_product")
    return classes


_NAN, _INF, _NOT_ZERO, _MAX, _NEG2, _SUBNORMAL = (1 << i for i in range(6))


@lru_cache(maxsize=64)
def _code_bits(element) -> tuple[int, ...]:
    """For every code of an element format, its word of :func:`..values.code_sets` bits: ``_NAN``,
    ``_INF``, ``_MAX``, ``_NEG2``, ``_SUBNORMAL`` for the sets it is in, ``_NOT_ZERO`` unless it
    is in ``zero``."""
    sets = code_sets(element)
    named = {"nan": _NAN, "inf": _INF, "max": _MAX, "neg2": _NEG2, "subnormal": _SUBNORMAL}
    return tuple(sum(bit for name, bit in named.items() if code in sets[name])
                 | (0 if code in sets["zero"] else _NOT_ZERO) for code in range(1 << element.width))


def cancels(c_num: int, c_den: int, p_num: int, p_den: int) -> bool:
    """The ``c_cancellation`` test |C + P| * 2^CANCELLATION_BITS <= |C| of C = c_num / c_den and
    P = p_num / p_den (signed numerators, positive denominators, not necessarily reduced): both
    sides multiplied by c_den * p_den, integers only."""
    return abs(c_num * p_den + p_num * c_den) << CANCELLATION_BITS <= abs(c_num) * p_den


def _cancels(c: Exact, p_num: int, p_den: int) -> bool:
    """C nonzero and finite, the products P = p_num / p_den (signed numerator, positive
    denominator) nonzero, and :func:`cancels`."""
    if not (c.is_finite and c.magnitude and p_num):
        return False
    cn = c.magnitude.numerator
    return cancels(-cn if c.sign else cn, c.magnitude.denominator, p_num, p_den)


def c_classes(c: Exact, exact: Exact | None) -> set:
    """Classes of the input C against the exact value it is added to (``exact``: the products'
    sum, None if it is not finite): c_nan, inf, c_cancellation."""
    classes = set()
    if c.is_nan:
        classes.add("c_nan")
    if c.is_inf:
        classes.add("inf")
    if exact is not None and exact.is_finite and _cancels(c, exact.value.numerator, exact.value.denominator):
        classes.add("c_cancellation")
    return classes


def _overflows(total: Fraction, accumulator) -> bool:
    """Whether rounding ``total`` to the output with unbounded exponent passes its largest value.
    Below 2^emax no rounding can (it gives at most 2^emax <= the largest value): decided from
    the exponent alone; the encoder decides the rest."""
    out = output_format(accumulator)
    if total == 0 or floor_log2_ratio(abs(total.numerator), total.denominator) < out.emax:
        return False
    try:
        encode(Exact(int(total < 0), abs(total)), output_format(accumulator), accumulator.output_rounding, "error")
    except OverflowError:
        return True
    return False


def dyadic_overflows(n: int, x: int, accumulator) -> bool:
    """:func:`_overflows` of the value n * 2^x (integers)."""
    if n == 0 or abs(n).bit_length() - 1 + x < output_format(accumulator).emax:
        return False
    return _overflows(Fraction(n << x) if x >= 0 else Fraction(n, 1 << -x), accumulator)


C_FRACTION_BITS = 23  # C is fp32: its LSB weighs 2^(e_C - 23)


def step_low(step) -> int | None:
    """The exponent of the lowest bit position a fused step's adder holds (the ``low`` of
    :mod:`.output_rounding`): anchor='max' cuts every term, C included, to the grid
    2^grid; anchor='fixed' keeps the products on 2^grid and C exactly, so its LSB 2^(e_C - 23)
    counts when C is nonzero. None for a step decided outside the adder (special, bypass)."""
    if step.special or step.bypass or step.grid is None:
        return None
    if step.anchor is None and step.c.magnitude:
        return min(step.grid, step.c_exponent - C_FRACTION_BITS)
    return step.grid


def block_low(lsb_exponent: int, scale_a: int, scale_b: int, fmt_a, fmt_b, tensor_scales: bool) -> int | None:
    """The exponent of the lowest bit of a separate block Dot's value (the ``low`` of
    :mod:`.output_rounding`): the register's LSB 2^lsb_exponent times the scales
    2^(XA + XB) when both scales are E8M0 (non-NaN) and no tensor scale multiplies in; None
    otherwise (a scale with a significand puts no bit at a fixed position)."""
    if tensor_scales or fmt_a.scale.name != "e8m0" or fmt_b.scale.name != "e8m0" or 0xFF in (scale_a, scale_b):
        return None
    return lsb_exponent + scale_a + scale_b - 254


def block_lows(lsb_exponent, scale_a, scale_b, fmt_a, fmt_b, tensor_scales: bool):
    """:func:`block_low` of many block Dots (int64 arrays of one shape): :data:`.output_rounding.NO_LOW`
    where it is None."""
    lsb_exponent = np.asarray(lsb_exponent, dtype=np.int64)
    if tensor_scales or fmt_a.scale.name != "e8m0" or fmt_b.scale.name != "e8m0":
        return np.full(lsb_exponent.shape, NO_LOW, dtype=np.int64)
    scale_a, scale_b = np.asarray(scale_a, dtype=np.int64), np.asarray(scale_b, dtype=np.int64)
    return np.where((scale_a == 0xFF) | (scale_b == 0xFF), NO_LOW, lsb_exponent + scale_a + scale_b - 254)


def block_rounding_classes(exact: Exact, code: int, low: int | None, accumulator) -> set:
    """The rounding classes of a separate block Dot's output rounding: its exact value ``exact``
    (before rounding; a finite nonzero one has classes) rounded to ``code``. ``fp32_sequential``
    rounds at every addition, not once: none. An overflow has none."""
    if accumulator.mode == "fp32_sequential" or not exact.is_finite or not exact.magnitude:
        return set()
    result = decode(code, storage_format(accumulator))
    if not result.is_finite or _overflows(exact.value, accumulator):
        return set()
    return output_rounding_classes(exact.magnitude, bool(exact.sign), low, output_format(accumulator), result.magnitude)


_FP32_STORAGE = output_float_format("fp32")


def register_classes(word: int, storage=_FP32_STORAGE) -> set:
    """The result classes of a promoting unit's register word (``storage``: fp32, or fp16 for an
    fp16 D): nan, inf, zero, negative_zero, subnormal_output."""
    x = decode(word, storage)
    if x.is_nan or x.is_inf:
        return {"nan" if x.is_nan else "inf"}
    if x.is_zero:
        return {"negative_zero" if x.sign else "zero"}
    return {"subnormal_output"} if is_subnormal_code(word, storage) else set()
