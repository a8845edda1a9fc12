"""Fused multiply-accumulate steps (docs/numerics.md section 4.1; ``accumulate="fused"``): how real MX
matrix and dot units accumulate. Integers and Fractions only.

The K = n * k products of a DotGeneral (product p is element p % k of block pair p // k) are cut
into steps of ``step`` products (a last step may be partial: as if padded with zero products).
Each step computes D = C + (its products) in one multi-term adder and rounds once to ``output``;
C of the first step is the caller's accumulator input (+0 by default), and each D, decoded, is
the next step's C. The result is the last D. With ``promote_every`` (docs/numerics.md section 4.1)
the chain restarts from +0 at every promotion group and the caller's C enters the fp32 register
of :mod:`mxsim.ref.promote` instead, which gives the result.

Terms of a step (F = ``frac_bits``; X = a scale's unbiased exponent, sig its significand, so a
scale is sig * 2^X: E8M0 sig = 1, X = code - 127; UE4M3 X = max(floor(log2 scale), -6)):

* ``step_terms="product"``: every product, value (-1)^(sa^sb) * Ma*Mb * 2^(Ea+Eb-fa-fb) * 2^(XA+XB),
  exponent Ea + Eb + XA + XB (Ea, Eb with the microexponent folded in); it counts for the anchor
  iff both elements are nonzero. With ``convert_elements`` (fp16: Hopper's mma.sync) a nonzero
  element reads its exponent in that format, max(floor(log2 |x|), emin), for the anchor (the value
  is unchanged); with ``interleave_steps`` each block's products are taken in the order of
  :meth:`Accumulator.product_order` before they are cut into steps.
* ``step_terms="block"``: every group of ``term_size`` consecutive products of one scale block,
  value (exact sum of the group's products) * sigA * sigB * 2^(XA+XB), exponent XA + XB; it counts
  iff one of its products does.
* C: exponent e_C = max(floor(log2 |C|), ``c_min_exponent``) (None: -126; an fp16 C: -14), or
  ``effective_c_zero_exponent`` for a zero C; it always counts.

``anchor="max"``: A = the largest exponent of the counting terms; every term (C included) is cut
to the grid 2^(A - F) by ``shift_rounding`` (truncate: magnitude toward zero; rne) and the cut
terms are summed exactly. ``anchor="fixed"``: the products are cut to the grid 2^(XA + XB - F) of
the step's block and summed exactly, then C is added exactly (not cut); if ``bypass`` is set and
C's LSB 2^(e_C - 23) lies more than ``bypass`` bits above the grid's LSB, D = C unchanged.

A step whose (cut) product sum is exactly zero gives D = C, its sign kept, where
:meth:`Accumulator.zero_sum_passes_c` says so (``zero_product_sum="pass_c"``; with
``"pass_c_outside_window"`` only where C lies wholly below the grid: MXDOTP, contract 6.1);
otherwise it adds C + 0, which is C for a nonzero C and +0 for a zero C.

An exactly-zero step sum is +0. Specials (decided first, outside the adder): NaN if C is NaN, a
scale of the step's blocks is NaN, a product is NaN (a NaN element, Inf x 0), or Inf terms
(products and C) have both signs; else +-Inf if a product or C is Inf. See
:func:`mxsim.ref.output.round_output` for the output rounding, overflow, ``ftz`` and NaN bits.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, fields
from fractions import Fraction
from functools import lru_cache
from itertools import chain
from operator import itemgetter

from ..options.accumulate import Accumulator, output_float_format
from .stored_block import QuantizedBlock
from .decode import decode, read_back
from .exact import Exact, floor_log2, to_exact
from .output import finite_rounder, round_output
from .promote import group_starts, result_code
from .round import CUT_ROUNDING, round_magnitude
from .terms import block_products, block_terms, frac_bits, special

__all__ = ["FusedStep", "ScaleParts", "check_tensor_scales", "dyadic_equal", "dyadic_sum", "fused_result",
           "fused_step_details", "fused_steps", "scale_parts"]

TWO = Fraction(2)
PLUS_ZERO = Exact(0)
FP32_FRACTION_BITS = 23  # C's LSB weighs 2^(e_C - 23)


@dataclass(frozen=True)
class ScaleParts:
    """A block scale as the fused adder sees it: value = significand * 2^exponent, or NaN."""

    nan: bool
    significand: Fraction
    exponent: int


@lru_cache(maxsize=4096)
def scale_parts(code: int, scale_format) -> ScaleParts:
    """Split a scale code: exponent X = max(floor(log2 value), emin) (emin of the scale format:
    E8M0 -127, UE4M3 -6; a zero scale has X = emin), significand = value / 2^X (E8M0: 1; UE4M3:
    in [1, 2), or below 1 for its subnormals). A NaN code gives ``nan=True``."""
    x = decode(code, scale_format)
    if x.is_nan:
        return ScaleParts(True, Fraction(0), 0)
    exponent = max(floor_log2(x.magnitude), scale_format.emin) if x.magnitude else scale_format.emin
    return ScaleParts(False, x.magnitude / TWO**exponent, exponent)


def check_tensor_scales(**tensor_scales) -> None:
    """Fused accumulation takes no NVFP4 tensor scale (the adder's terms carry the block scales
    only): refuse any other than None or 1, naming the argument."""
    for name, value in tensor_scales.items():
        if value is not None and to_exact(value) != Exact(0, Fraction(1)):
            raise ValueError(
                f"{name}={value!r} is not allowed with accumulate='fused': the fused adder has no tensor scale; "
                "pass None (quantize with nvfp4_tensor_scale='none'), or use accumulate='separate'"
            )


def fused_steps(
    blocks_a: Sequence[QuantizedBlock],
    blocks_b: Sequence[QuantizedBlock],
    fmt_a,
    fmt_b,
    accumulator: Accumulator,
    c: Exact,
) -> tuple[int, ...]:
    """The output code of every step (see the module docstring), for block formats of the same
    block size k whose blocks the caller has checked; ``c`` is the first step's C (an fp32 value).
    No blocks give no steps."""
    return tuple(step.code for step in fused_step_details(blocks_a, blocks_b, fmt_a, fmt_b, accumulator, c))


def fused_result(step_codes: Sequence[int], c: Exact, accumulator: Accumulator, block_size: int, n_blocks: int) -> int:
    """The output code of a fused DotGeneral of ``n_blocks`` blocks from its steps' codes and the
    caller's C: the last D, or with ``promote_every`` the fp32 register that adds each promotion
    group's last D to C (:func:`mxsim.ref.promote.result_code`; docs/numerics.md section 4.1)."""
    if accumulator.promote_every is None:  # the last D (no group starts to find)
        return result_code(step_codes, (), c, accumulator)
    starts = group_starts(accumulator.step_ranges(block_size, n_blocks), accumulator)
    return result_code(step_codes, starts, c, accumulator)


@dataclass(frozen=True)
class FusedStep:
    """One fused step as the adder saw it (for corner classes and debugging; the code is all a
    result needs). ``code``: D. ``c``: the step's C. ``special``: decided by the special values
    (NaN, Inf) outside the adder; the fields below are then 0, False or None. ``nonzero``: some
    finite product has two nonzero elements. ``products``: the exact sum of the step's product (or
    block) terms, scales included, before any cut. ``cut_products``: their value after the cut to
    the grid. ``c_exponent``: e_C. ``anchor``: ``anchor="max"``'s anchor (None for fixed).
    ``grid``: the exponent of the grid's LSB. ``bypass``: D = C by the bypass rule. ``total``: the
    exact value rounded to the output (None with ``special`` or ``bypass``). The three sums are
    exact dyadic values given as integer pairs (n, x), the value n * 2^x (n signed; not reduced:
    compare them with :func:`dyadic_equal`); the adder's sums are dyadic, so no Fraction is made."""

    code: int
    c: Exact
    special: bool = False
    nonzero: bool = False
    products: tuple[int, int] = (0, 0)
    cut_products: tuple[int, int] = (0, 0)
    c_exponent: int = 0
    anchor: int | None = None
    grid: int | None = None
    bypass: bool = False
    total: tuple[int, int] | None = None


_STEP_DEFAULTS = {f.name: f.default for f in fields(FusedStep) if f.default is not MISSING}


def _fused_step(code: int, c: Exact, **given) -> FusedStep:
    """``FusedStep(code, c, **given)``, the fields not given at their defaults (:func:`_step_of`)."""
    return _step_of({**_STEP_DEFAULTS, "code": code, "c": c, **given})


def _step_of(fields: dict) -> FusedStep:
    """The FusedStep of a dict holding every one of its fields, built without the frozen
    dataclass's per-field ``__setattr__`` (about 3x cheaper; a step is built for every fused step
    of every vector, and the adder's path fills the dict as it decides): the fields go straight
    into the instance dict, where the dataclass keeps them."""
    step = object.__new__(FusedStep)
    step.__dict__.update(fields)
    return step


def fused_step_details(
    blocks_a: Sequence[QuantizedBlock],
    blocks_b: Sequence[QuantizedBlock],
    fmt_a,
    fmt_b,
    accumulator: Accumulator,
    c: Exact,
    first_steps: int | None = None,
) -> tuple[FusedStep, ...]:
    """Every step of :func:`fused_steps` as a :class:`FusedStep`; ``first_steps``: only the first
    that many (a step depends on the steps before it alone)."""
    plan = _step_plan(accumulator, fmt_a, fmt_b, len(blocks_a))
    k, offset, order = plan.k, plan.offset, plan.order
    prods, anchors = [], []
    for a, b in zip(blocks_a, blocks_b):
        block = block_products(a.codes, a.subscales, fmt_a, b.codes, b.subscales, fmt_b)
        block = [(s, m, e + offset, kind) for s, m, e, kind in block] if offset else block
        read = None
        if plan.reads_exponents:
            read = _read_exponents(a, b, fmt_a, fmt_b, accumulator, offset)
        if order is not None:  # interleave_steps: the products in the order the steps take them
            block = [block[i] for i in order]
            read = None if read is None else [read[i] for i in order]
        prods += block
        anchors += read or []
    ops = _operands(
        prods,
        [scale_parts(a.scale, fmt_a.scale) for a in blocks_a],
        [scale_parts(b.scale, fmt_b.scale) for b in blocks_b],
        k,
        plan.frac,
        anchors or None,
        accumulator.step_terms != "block",
    )
    details = []
    storage = plan.storage
    for (first, last), restart in plan.steps[:first_steps]:
        if restart:  # promotion (docs/numerics.md section 4.1): the chain restarts from +0; C is the register's
            c = PLUS_ZERO
        elif details:  # the last step's D as this step's C (a last D is never read back)
            c = read_back(details[-1].code, storage)
        details.append(_step(ops, first, last, c, accumulator, plan))
    return tuple(details)


@dataclass(frozen=True)
class _StepPlan:
    """What an accumulator does with a pair of block formats and a count of blocks, the same for
    every DotGeneral of that shape (derived once, :func:`_step_plan`): the block size ``k``, the
    exponent ``offset`` of integer elements, the products' ``order`` within a block (None: index
    order), ``frac`` = fa + fb, whether the unit reads elements' exponents its own way
    (``reads_exponents``: ``zero_exponent``, ``convert_elements``), the ``storage`` format D is
    read back in, every step as ((first, last), whether it restarts a promotion group), and the
    exponents e_C of a nonzero C counts with at least (``c_min``) and of a zero C (``c_zero``)."""

    k: int
    offset: int
    order: tuple[int, ...] | None
    frac: int
    reads_exponents: bool
    storage: object
    steps: tuple[tuple[tuple[int, int], bool], ...]
    c_min: int
    c_zero: int


def _step_plan(accumulator: Accumulator, fmt_a, fmt_b, n_blocks: int) -> _StepPlan:
    """The :class:`_StepPlan` of a shape, checked (:meth:`Accumulator.check_block_format`) the first
    time it is asked for. Plans are found by the identity of the accumulator and formats (hashing an
    Accumulator's fields costs more than a fused step): the entry holds those objects, so their ids
    stay theirs."""
    key = (id(accumulator), id(fmt_a), id(fmt_b), n_blocks)
    held = _PLANS.get(key)
    if held is not None:
        return held[1]
    accumulator.check_block_format(fmt_a, fmt_b)
    k = fmt_a.block_size
    ranges = accumulator.step_ranges(k, n_blocks)
    plan = _StepPlan(
        k=k,
        offset=integer_offset(fmt_a.element, accumulator) + integer_offset(fmt_b.element, accumulator),
        order=accumulator.product_order(k),
        frac=frac_bits(fmt_a.element) + frac_bits(fmt_b.element),
        reads_exponents=accumulator.zero_exponent is not None or accumulator.convert_elements is not None,
        storage=output_float_format(accumulator.output_storage),
        steps=tuple(zip(ranges, group_starts(ranges, accumulator))),
        c_min=accumulator.effective_c_min_exponent,
        c_zero=accumulator.effective_c_zero_exponent,
    )
    if len(_PLANS) >= _PLANS_HELD:
        _PLANS.clear()
    _PLANS[key] = ((accumulator, fmt_a, fmt_b), plan)
    return plan


_PLANS_HELD = 256  # shapes whose plans are kept (then it starts again)
# (id(accumulator), id(fmt_a), id(fmt_b), n_blocks) -> ((accumulator, fmt_a, fmt_b), their plan)
_PLANS: dict = {}


def integer_offset(element, accumulator: Accumulator) -> int:
    """What an element's exponent is raised by in fused products: f for an integer element read as
    its plain code (``int_elements="integer"``: value q = M * 2^(E + f - f), MXDOTP's INT8), else 0."""
    return frac_bits(element) if element.kind == "int" and accumulator.int_elements == "integer" else 0


def _read_exponents(a, b, fmt_a, fmt_b, acc: Accumulator, offset: int) -> list[int | None]:
    """The anchor exponent of every product of a block pair, Ea + Eb (+ ``offset``), as the unit
    reads its elements, or None where the product does not count: with ``zero_exponent`` a zero
    element reads with that exponent (CDNA3: -126) and every product counts; with
    ``convert_elements`` a nonzero element reads its exponent in that format, max(floor(log2 |x|),
    emin) (fp16: an E4M3 subnormal its own exponent, an E5M2 subnormal -14; Hopper's mma.sync),
    and a product with a zero element does not count."""
    target = None if acc.convert_elements is None else output_float_format(acc.convert_elements)

    def reads(term, element):
        if not term.significand:
            return acc.zero_exponent
        if target is None:
            return term.exponent
        return max(term.significand.bit_length() - 1 + term.exponent - frac_bits(element), target.emin)

    terms_a = block_terms(a.codes, a.subscales, fmt_a)
    terms_b = block_terms(b.codes, b.subscales, fmt_b)
    out = []
    for ta, tb in zip(terms_a, terms_b):
        ea, eb = reads(ta, fmt_a.element), reads(tb, fmt_b.element)
        out.append(None if ea is None or eb is None else ea + eb + offset)
    return out


@dataclass(frozen=True)
class _Operands:
    """The products of a DotGeneral in order, each block pair's scales, the block size ``k``,
    ``frac`` = fa + fb (a product's value is (-1)^sign * magnitude * 2^(exponent - frac)) and, with
    ``zero_exponent`` set, every product's anchor exponent (``anchors``; else None). Derived once
    (:func:`_operands`): ``specials``, the indices of the products that are not finite (NaN or
    Inf), ascending; ``block_scales``, :func:`_block_scale` of every block pair; ``nan_scales``,
    whether a block pair has a NaN scale; for product terms (``step_terms="product"``; else None,
    :func:`_product_terms`): ``units``, every product's signed exact value with its scales in units
    of its block's ``bases`` (2^base: the smallest exponent of the block's products), and ``reads``,
    the exponent every product counts with for the anchor, or None."""

    products: list[tuple[int, int, int, str]]
    scales_a: list[ScaleParts]
    scales_b: list[ScaleParts]
    k: int
    frac: int
    anchors: list[int] | None
    specials: list[int]
    block_scales: list[tuple[int, int, int]]
    nan_scales: list[bool]
    units: list[int] | None
    bases: list[int] | None
    reads: list[int | None] | None


def _operands(products, scales_a, scales_b, k: int, frac: int, anchors, product_terms: bool) -> _Operands:
    """:class:`_Operands` with its derived lists."""
    kinds = list(map(itemgetter(3), products))
    specials = [] if kinds.count("finite") == len(kinds) else [i for i, kind in enumerate(kinds) if kind != "finite"]
    block_scales = [_block_scale(sa, sb, frac) for sa, sb in zip(scales_a, scales_b)]
    nan_scales = [sa.nan or sb.nan for sa, sb in zip(scales_a, scales_b)]
    units, bases, reads = _product_terms(products, block_scales, k, anchors) if product_terms else (None, None, None)
    return _Operands(products, scales_a, scales_b, k, frac, anchors, specials, block_scales, nan_scales, units, bases,
                     reads)


def _product_terms(products, block_scales, k: int, anchors) -> tuple[list[int], list[int], list[int | None]]:
    """Every product as a term, once per DotGeneral (a step sums a slice): (units, bases, reads).
    A product of element exponent e (value (-1)^s * m * 2^(e - frac)) is, with its block pair's
    scales, (-1)^s * m * sigA * sigB * 2^(e + x) (x of :func:`_block_scale`): ``units`` holds it
    in units of 2^base of its block, base = (the block's smallest e) + x, in ``bases``. ``reads``:
    the exponent it counts with for the anchor, Ea + Eb + XA + XB, or None where it does not count
    (a zero element); with ``anchors`` (the unit's own reading: ``zero_exponent``,
    ``convert_elements``) XA + XB + that reading, None where the reading is None. A product that
    is not finite gets entries too, never read (its step is decided by the special values)."""
    units, bases, reads = [], [], []
    for block, (scale, scale_exponent, shift) in enumerate(block_scales):
        chunk = products[block * k : (block + 1) * k]
        low = min(map(itemgetter(2), chunk))
        units += [((-m if s else m) * scale) << (e - low) for s, m, e, _ in chunk]
        bases.append(low + shift)
        if anchors is None:
            reads += [e + scale_exponent if m else None for _, m, e, _ in chunk]
        else:
            reads += [None if r is None else scale_exponent + r for r in anchors[block * k : (block + 1) * k]]
    return units, bases, reads


def _product_sum(ops: _Operands, first: int, last: int) -> tuple[int, int]:
    """The exact sum of the product terms [first, last) as (units, base), the value units * 2^base
    (base: the smallest base of the blocks the products lie in)."""
    k, b0, b1 = ops.k, first // ops.k, (last - 1) // ops.k
    if b0 == b1:
        return sum(ops.units[first:last]), ops.bases[b0]
    base = min(ops.bases[b0 : b1 + 1])
    total = 0
    for block in range(b0, b1 + 1):
        total += sum(ops.units[max(first, block * k) : min(last, (block + 1) * k)]) << (ops.bases[block] - base)
    return total, base


def _product_values(ops: _Operands, first: int, last: int) -> list[tuple[int, int]]:
    """Every product term of [first, last) as its exact value (n, x) = n * 2^x (for the cut to a
    grid above some of them and for the late C join)."""
    values = []
    for block in range(first // ops.k, (last - 1) // ops.k + 1):
        scale, _, shift = ops.block_scales[block]
        products = ops.products[max(first, block * ops.k) : min(last, (block + 1) * ops.k)]
        values += [((-m if s else m) * scale, e + shift) for s, m, e, _ in products]
    return values


def _step(ops: _Operands, first: int, last: int, c: Exact, acc: Accumulator, plan: _StepPlan) -> FusedStep:
    """The step over products [first, last) with accumulator input ``c``. Terms and cuts are exact
    dyadic integers (n, x) = n * 2^x (:func:`_product_terms`, :func:`_block_terms`,
    :func:`_cut_sum`), and so are the step's sums; the exact total is rounded from its integers
    (:func:`_round_sum`)."""
    nan_scale = True in ops.nan_scales[first // ops.k : (last - 1) // ops.k + 1]  # a NaN scale of the step's blocks
    # a product that is not finite in [first, last)
    specials = ops.specials and bisect_left(ops.specials, first) < bisect_left(ops.specials, last)
    if nan_scale or c.kind != "finite" or specials:
        kinds = chain(((sign, kind) for sign, _, _, kind in ops.products[first:last]), [(c.sign, c.kind)])
        outcome = special(kinds, nan_scale)  # (finite terms and a finite C have no special outcome)
        if outcome is not None:
            return _fused_step(round_output(outcome, acc), c, special=True)
    if ops.units is None:
        values, reads = _block_terms(ops, first, last, acc)
        base = min([x for _, x in values], default=0)  # the products' exact sum: units of 2^base
        units = sum([n << (x - base) for n, x in values])
    else:
        values, reads = None, ops.reads[first:last]
        units, base = _product_sum(ops, first, last)
    c_value = _signed_dyadic(c)
    e_c = _c_exponent(c_value, plan)
    products = (units, base)
    step = {"code": 0, "c": c, "special": False, "nonzero": reads.count(None) < len(reads), "products": products,
            "cut_products": (0, 0), "c_exponent": e_c, "anchor": None, "grid": None, "bypass": False, "total": None}
    if acc.sum_frac_bits is not None:
        values = values or _product_values(ops, first, last)
        step["anchor"], step["grid"], joined, cut, total = _late_join(values, reads, c_value, e_c, acc)
        if acc.zero_product_sum == "pass_c" and not joined[0]:
            step["code"] = round_output(c, acc)
            return _step_of(step)
    elif acc.anchor == "max":
        anchor = max([e_c] + [r for r in reads if r is not None])
        step["anchor"] = anchor
        step["grid"] = grid = anchor - acc.frac_bits
        if base >= grid:  # no term below the grid: the cut is exact
            cut_units, cut = units << (base - grid), products
        else:
            cut_units = _cut_sum(values or _product_values(ops, first, last), grid, acc.shift_rounding)
            cut = (cut_units, grid)
        if acc.zero_product_sum == "pass_c" and not cut_units:  # D = C, its sign included
            step["code"] = round_output(c, acc)
            return _step_of(step)
        total = (_cut_sum([c_value], grid, acc.shift_rounding) + cut_units, grid)
    else:
        step["grid"] = grid = ops.block_scales[first // ops.k][1] - acc.frac_bits  # XA + XB - F
        if base >= grid:  # no term below the grid: the cut is exact
            cut = products
        else:
            cut = (_cut_sum(values or _product_values(ops, first, last), grid, acc.shift_rounding), grid)
        if acc.bypass is not None and (e_c - FP32_FRACTION_BITS) - grid > acc.bypass:
            # D = C unchanged (C itself for an fp32 output, -0 included)
            step.update(code=round_output(c, acc), cut_products=cut, bypass=True)
            return _step_of(step)
        if not cut[0] and acc.zero_sum_passes_c((e_c - FP32_FRACTION_BITS) - grid):  # D = C, its sign included
            step["code"] = round_output(c, acc)
            return _step_of(step)
        total = dyadic_sum(c_value, cut)
    step.update(code=_round_sum(total, acc), cut_products=cut, total=total)
    return _step_of(step)


def _block_terms(ops: _Operands, first: int, last: int, acc: Accumulator) -> tuple[list[tuple[int, int]], list]:
    """The terms of the finite products [first, last) with ``step_terms="block"``: every group of
    ``term_size`` products of one scale block as one term, its exact sum with the scales (n, x) =
    n * 2^x, and the exponent it counts with for the anchor, XA + XB, or None where none of its
    products does (every one has a zero element)."""
    size = acc.effective_term_size(ops.k)
    values, reads = [], []
    for start in range(first, last, size):
        scale, scale_exponent, shift = ops.block_scales[start // ops.k]
        group = ops.products[start : min(start + size, last)]
        base = min([e for _, _, e, _ in group])  # the group's sum on the grid 2^(base - frac)
        total = sum([(-m if s else m) << (e - base) for s, m, e, _ in group if m])  # a zero product adds 0
        values.append((total * scale, base + shift))
        reads.append(scale_exponent if any([m for _, m, _, _ in group]) else None)
    return values, reads


def _late_join(values, reads, c_value: tuple[int, int], e_c: int, acc: Accumulator
               ) -> tuple[int, int, tuple, tuple, tuple]:
    """The step sum when C joins after the products (``sum_frac_bits`` set; AMD CDNA3, contract 6.1).

    1. The terms are dealt into ``partial_sums`` interleaved sums (term i of the step into sum
       i mod n); in each, with e_h its largest counting exponent, every term is cut to the grid
       2^(e_h - F) by ``shift_rounding`` and the cut terms are added exactly (a sum without a
       counting term is 0 and has no exponent).
    2. E = the largest e_h; each partial sum is cut to the grid 2^(E - F) by ``sum_rounding``, and
       the cut sums are added exactly: the product sum S.
    3. E' = max(E, e_C) (e_C alone when no term counts); S is cut to the grid 2^(E' - sum_frac_bits)
       and C to 2^(E' - c_frac_bits), both by ``sum_rounding``; C counts as zero when
       e_C < E' - c_drop.
    Returns (E', the exponent of the sum's grid, S, S after its cut, the exact total), the last
    three as dyadic pairs (n, x). The terms are dyadic values (n, x) with their anchor exponents
    (None: not counting) as :func:`_step` takes them; every cut is in integers."""
    n, f = acc.partial_sums, acc.frac_bits
    sums = []  # (units, grid exponent, e_h) of every partial sum with a counting term
    for h in range(n):
        exponents = [r for r in reads[h::n] if r is not None]
        if exponents:
            e_h = max(exponents)
            sums.append((_cut_sum(values[h::n], e_h - f, acc.shift_rounding), e_h - f, e_h))
    if sums:
        e = max(e_h for _, _, e_h in sums)
        units, base = _cut_sum([(v, x) for v, x, _ in sums], e - f, acc.sum_rounding), e - f
        joint = max(e, e_c)
    else:
        units, base, joint = 0, 0, e_c
    grid = joint - acc.sum_frac_bits
    cut_units = _cut_sum([(units, base)], grid, acc.sum_rounding)
    dropped = acc.c_drop is not None and e_c < joint - acc.c_drop
    c_grid = joint - acc.c_frac_bits
    c_units = 0 if dropped else _cut_sum([c_value], c_grid, acc.sum_rounding)
    return joint, grid, (units, base), (cut_units, grid), dyadic_sum((cut_units, grid), (c_units, c_grid))


def _block_scale(sa: ScaleParts, sb: ScaleParts, frac: int) -> tuple[int, int, int]:
    """(sigA * sigB as an integer n, XA + XB, x) of a block pair's scales: a product of element
    exponent e (value m * 2^(e - frac)) is m * n * 2^(e + x) with its scales."""
    (na, xa), (nb, xb) = _dyadic(sa.significand), _dyadic(sb.significand)
    scale_exponent = sa.exponent + sb.exponent
    return na * nb, scale_exponent, xa + xb + scale_exponent - frac


def _round_sum(total: tuple[int, int], acc: Accumulator) -> int:
    """The output code of a step's exact sum n * 2^x (an exactly-zero sum is +0)."""
    n, x = total
    magnitude = -n if n < 0 else n
    if x >= 0:
        return finite_rounder(acc)(n < 0, magnitude << x, 1)
    return finite_rounder(acc)(n < 0, magnitude, 1 << -x)


def dyadic_sum(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The exact sum of two dyadic values (n, x) = n * 2^x, on the finer of their grids."""
    (na, xa), (nb, xb) = a, b
    return ((na << (xa - xb)) + nb, xb) if xa >= xb else (na + (nb << (xb - xa)), xa)


def dyadic_equal(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two dyadic values (n, x) = n * 2^x are equal (their pairs need not be reduced)."""
    (na, xa), (nb, xb) = a, b
    return (na << (xa - xb)) == nb if xa >= xb else na == (nb << (xb - xa))


def _dyadic(q: Fraction) -> tuple[int, int]:
    """(n, x) with q = n * 2^x exactly, for a Fraction whose denominator is a power of two (every
    element, scale and fp32 value is one)."""
    return q.numerator, 1 - q.denominator.bit_length()


def _signed_dyadic(c: Exact) -> tuple[int, int]:
    """(n, x) with C = n * 2^x exactly (n signed; -0 is (0, 0)), for a finite C (an fp32, bf16 or
    fp16 value: its denominator is a power of two)."""
    magnitude = c.magnitude
    n = magnitude.numerator
    return -n if c.sign else n, 1 - magnitude.denominator.bit_length()


def _c_exponent(c_value: tuple[int, int], plan: _StepPlan) -> int:
    """e_C of a finite C given as its exact value (n, x) = n * 2^x (:func:`_signed_dyadic`):
    max(floor(log2 |C|), ``c_min_exponent``) (None: fp32's -126; an fp16 C: fp16's -14), or
    ``effective_c_zero_exponent`` for +-0."""
    n, x = c_value
    if not n:
        return plan.c_zero
    return max(abs(n).bit_length() - 1 + x, plan.c_min)


def _cut_sum(values: list[tuple[int, int]], grid: int, cut: str) -> int:
    """The exact integer sum of the dyadic values (n, x) = n * 2^x cut to the grid 2^grid, in
    units of 2^grid: each is sign * |n| * 2^(x - grid) rounded by ``cut`` (truncate: toward zero;
    rne: nearest, ties to even; floor: toward minus infinity, as an arithmetic right shift of the
    two's-complement value)."""
    rounding = CUT_ROUNDING[cut]
    total = 0
    for n, x in values:
        shift = x - grid
        if shift >= 0 or not n:
            total += n << max(shift, 0)
            continue
        q = round_magnitude(abs(n), 1 << -shift, rounding, n < 0)
        total += -q if n < 0 else q
    return total
