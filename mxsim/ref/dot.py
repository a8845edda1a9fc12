"""Reference dot-product datapath: Dot of two blocks and DotGeneral of two vectors of blocks
(docs/numerics.md section 4), with integers and Fractions only.

Every element decodes to a :class:`Term` (sign s, integer significand M, exponent E, fraction
bits f; value (-1)^s * M * 2^(E - f)); a product has significand Ma * Mb and exponent
e = Ea + Eb. The integer register of a block is reported with every result, as an RTL
engineer compares it against the design's internal signal:

* ``accumulator`` and ``lsb_exponent``: the block's sum before scales is
  accumulator * 2^lsb_exponent. ``exact`` mode keeps the sum on the fixed grid of the format
  pair (the smallest product LSB; the exact widths of formats-and-datapath.md 5.1); ``aligned``
  mode holds the W-bit register on the grid 2^(anchor - F); ``fp32_sequential`` holds the fp32 register as
  its signed 24-bit significand on its own ulp (0 and 0 if the register overflowed to Inf).
* ``anchor``: e_max, the largest Ea + Eb over products whose both elements are finite and
  nonzero, or 0 when there is none (the register is then 0).

Special values never enter the integer register (hardware handles them on a side path): a NaN
scale, a NaN element, Inf times zero, or Inf products of both signs make the block NaN; other Inf
products make it Inf of their sign. ``fp32_sequential`` instead feeds every product, specials
included, through its IEEE fp32 chain. NaN results are ``nan_bits``, by default the output
format's canonical quiet NaN (fp32 0x7FC00000). A block sum that is exactly zero is +0.

A DotGeneral takes an accumulator input C (``c``, an fp32 value). ``accumulate="separate"``
combines the block Dots above with C; ``accumulate="fused"`` runs the fused multiply-accumulate
steps of :mod:`mxsim.ref.fused` instead. The output rounding of both is
:func:`mxsim.ref.output.round_output`; element terms and products are :mod:`mxsim.ref.terms`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Sequence

from ..options import Accumulator
from ..formats import get_format
from .stored_block import QuantizedBlock, check_block
from .decode import decode
from .exact import Exact, Number, dyadic
from .fused import check_tensor_scales, fused_result, fused_steps
from .output import fp32_add, fp32_add_dyadic, fp32_bits, fp32_input, output_value, round_output
from .round import CUT_ROUNDING, round_shift
from .terms import Term, block_products, block_terms, element_term, frac_bits, min_exponent, special

__all__ = [
    "Term",
    "check_pair",
    "element_term",
    "block_terms",
    "block_products",
    "block_register",
    "product_lsb",
    "largest_grid_value",
    "register_limit",
    "register_may_overflow",
    "round_output",
    "fp32_add",
    "fp32_bits",
    "BlockDot",
    "GeneralDot",
    "dot",
    "dot_general",
]

TWO = Fraction(2)
FP32_ULP_SHIFT = 23  # fp32 significand bits below the leading one
FP32_MIN_EXPONENT = -126


def _element_lsb(fmt) -> int:
    """Exponent of the smallest element LSB of a block format: E_min - f - (largest tau)."""
    largest_tau = (1 << fmt.subscale_bits) - 1 if fmt.subblocks else 0
    return min_exponent(fmt.element) - frac_bits(fmt.element) - largest_tau


def product_lsb(fmt_a, fmt_b) -> int:
    """The fixed grid of ``exact`` mode: the exponent of the smallest product LSB of the pair."""
    return _element_lsb(get_format(fmt_a, kind="block")) + _element_lsb(get_format(fmt_b, kind="block"))


@lru_cache(maxsize=None)
def largest_grid_value(fmt) -> int:
    """The largest |element| of a block format in units of its smallest element LSB (the "max
    integer magnitude" of formats-and-datapath.md 5.1: 229376 for E4M3, 1.75 * 2^31 for E5M2)."""
    fmt = get_format(fmt, kind="block")
    lsb = _element_lsb(fmt)
    terms = (element_term(code, fmt.element) for code in range(1 << fmt.element.width))
    return max((t.significand << (t.exponent - t.frac_bits - lsb) for t in terms if t.kind == "finite"), default=0)


def register_limit(fmt_a, fmt_b, accumulator: Accumulator) -> int:
    """An upper bound on |register| of one block Dot, ignoring ``width``: ``exact``
    k * largest_a * largest_b (attained by the worst-case block: formats-and-datapath.md 5.1);
    ``aligned`` k * (floor(max Ma*Mb / 2^(fa+fb)) + 1) * 2^F + k (every q_i, rne included, is at
    most the first term over k); ``fp32_sequential`` the largest 24-bit significand."""
    fmt_a, fmt_b = get_format(fmt_a, kind="block"), get_format(fmt_b, kind="block")
    k = fmt_a.block_size
    if accumulator.mode == "exact":
        return k * largest_grid_value(fmt_a) * largest_grid_value(fmt_b)
    if accumulator.mode == "fp32_sequential":
        return (1 << (FP32_ULP_SHIFT + 1)) - 1
    largest = (_largest_significand(fmt_a.element) * _largest_significand(fmt_b.element)) >> (
        frac_bits(fmt_a.element) + frac_bits(fmt_b.element)
    )
    return k * ((largest + 1) << accumulator.frac_bits) + k


def register_may_overflow(fmt_a, fmt_b, accumulator: Accumulator) -> bool:
    """Whether an aligned W-bit register can leave [-2^(W-1), 2^(W-1) - 1] on some block pair (its
    ``overflow`` rule then acts): False when :func:`register_limit` lies below 2^(W-1), so that the
    register always equals the cut products' sum with no width (``BlockDot.unbounded``)."""
    bound = accumulator.register_bound
    return bound is not None and register_limit(fmt_a, fmt_b, accumulator) >= bound


@lru_cache(maxsize=None)
def _largest_significand(element) -> int:
    return max(element_term(code, element).significand for code in range(1 << element.width))


def _scale_factor(scale_code: int, fmt, tensor_scale) -> Exact:
    """The block's scale value times the tensor scale (NaN for a NaN scale code)."""
    scale = decode(scale_code, fmt.scale)  # scale formats are unsigned: sign 0
    if scale.is_nan or tensor_scale is None:
        return scale
    return Exact(0, scale.magnitude * Fraction(tensor_scale))


@dataclass(frozen=True)
class BlockDot:
    """One block's Dot: the output ``code`` and its ``value``; ``exact``, the block's value before
    the output rounding; and the register (``accumulator``, ``lsb_exponent``, ``anchor``; see the
    module docstring). ``unbounded`` (aligned mode only, else None): the same cut products summed
    with no width, on the same grid 2^lsb_exponent; it differs from ``accumulator`` exactly where
    the W-bit register's overflow rule changed the sum (docs/numerics.md section 3.3, acc_overflow)."""

    code: int
    value: Exact
    exact: Exact
    accumulator: int
    lsb_exponent: int
    anchor: int
    unbounded: int | None = None


@dataclass(frozen=True)
class GeneralDot:
    """A DotGeneral: the output ``code`` and ``value``; ``blocks``, the :class:`BlockDot` of every
    block (separate accumulation; empty for fused); ``steps``, the output code D of every fused
    step in order (empty for separate)."""

    code: int
    value: Exact
    blocks: tuple[BlockDot, ...]
    steps: tuple[int, ...] = ()


def _anchor(products) -> int:
    exponents = [e for _, magnitude, e, kind in products if kind == "finite" and magnitude]
    return max(exponents) if exponents else 0


def _exact_register(products, frac: int, lsb: int) -> int:
    total = 0
    for sign, magnitude, e, kind in products:
        if kind == "finite":
            shifted = magnitude << (e - frac - lsb)
            total += -shifted if sign else shifted
    return total


def _aligned_register(products, frac: int, anchor: int, accumulator: Accumulator) -> tuple[int, int]:
    """The W-bit register: each product placed on the grid 2^(anchor - F) by ``shift_rounding``,
    added in index order, with ``overflow`` applied after each addition; and the same cut products'
    sum with no width (equal to the register without a ``width``)."""
    lsb = anchor - accumulator.frac_bits
    rounding = CUT_ROUNDING[accumulator.shift_rounding]
    bound = accumulator.register_bound
    saturate = accumulator.overflow == "saturate"
    total, unbounded, base = 0, 0, lsb + frac
    for sign, magnitude, e, kind in products:
        if not magnitude or kind != "finite":
            continue
        # product = magnitude * 2^(e - frac) = magnitude * 2^(e - frac - lsb) LSBs (sign: 0 or 1,
        # read as the bool ``negative``)
        q = round_shift(magnitude, base - e, rounding, sign)
        q = -q if sign else q
        total += q
        unbounded += q
        if bound is not None and not -bound <= total < bound:  # outside [-2^(W-1), 2^(W-1) - 1]
            if saturate:
                total = bound - 1 if total > 0 else -bound
            else:
                total = (total + bound) % (2 * bound) - bound
    return total, unbounded


def _fp32_register(products, frac: int) -> tuple[Exact, int, int]:
    """The fp32 chain over every product in index order (IEEE, nearest-even per addition), and
    the register as (significand, lsb_exponent); (0, 0) if it is not finite. The chain runs on
    dyadic integers (:func:`~mxsim.ref.output.fp32_add_dyadic`) until a NaN or Inf product, or an
    overflow, makes it special; then on :class:`Exact` values (:func:`~mxsim.ref.output.fp32_add`)."""
    register, total = (0, 0, 0), None  # +0; total: the chain's Exact value once it is special
    for sign, magnitude, e, kind in products:
        if total is None and kind == "finite":
            register = fp32_add_dyadic(register, (sign, magnitude, e - frac))  # exact: each addition rounds once
            if register[1] is None:
                total = Exact.inf(register[0])
            continue
        if total is None:
            total = Exact.trusted(register[0], dyadic(register[1], register[2]))
        if kind == "nan":
            term = Exact.nan()
        elif kind == "inf":
            term = Exact.inf(sign)
        else:
            term = Exact.trusted(sign, dyadic(magnitude, e - frac))
        total = fp32_add(total, term)
    if total is not None:  # NaN or Inf: no finite term brings it back
        return total, 0, 0
    sign, n, e = register
    if not n:
        return Exact(0), 0, FP32_MIN_EXPONENT - FP32_ULP_SHIFT
    lsb = max(n.bit_length() - 1 + e, FP32_MIN_EXPONENT) - FP32_ULP_SHIFT
    significand = n << (e - lsb) if e >= lsb else n >> (lsb - e)  # exact: an fp32 value lies on its ulp grid
    return Exact.trusted(sign, dyadic(n, e)), -significand if sign else significand, lsb


def block_register(prods, fmt_a, fmt_b, accumulator: Accumulator) -> tuple[int, int, int]:
    """The register of a block Dot as :class:`BlockDot` reports it: (``accumulator``,
    ``lsb_exponent``, ``anchor``), from the block pair's products (``block_products`` of
    :mod:`mxsim.ref.terms`; block format objects) in one of the separate-accumulation modes."""
    return _register(prods, fmt_a, fmt_b, accumulator)[:3]


def _register(prods, fmt_a, fmt_b, accumulator: Accumulator) -> tuple[int, int, int, Exact | None, int | None]:
    """(register, lsb_exponent, anchor, the fp32 chain's value for fp32_sequential else None, the
    aligned register's sum with no width else None)."""
    frac = frac_bits(fmt_a.element) + frac_bits(fmt_b.element)
    anchor = _anchor(prods)
    if accumulator.mode == "exact":
        lsb = product_lsb(fmt_a, fmt_b)
        return _exact_register(prods, frac, lsb), lsb, anchor, None, None
    if accumulator.mode == "aligned":
        register, unbounded = _aligned_register(prods, frac, anchor, accumulator)
        return register, anchor - accumulator.frac_bits, anchor, None, unbounded
    chain, value, lsb = _fp32_register(prods, frac)
    return value, lsb, anchor, chain, None


def check_pair(fmt_a, fmt_b, length_a: int, length_b: int):
    """The two block formats of a Dot or DotGeneral, looked up; ValueError unless they share a block
    size and both operands hold the same number of blocks (``length_a``, ``length_b``)."""
    fmt_a, fmt_b = get_format(fmt_a, kind="block"), get_format(fmt_b, kind="block")
    if fmt_a.block_size != fmt_b.block_size:
        raise ValueError(
            f"formats {fmt_a.name!r} (block_size {fmt_a.block_size}) and {fmt_b.name!r} "
            f"(block_size {fmt_b.block_size}) do not share a block size"
        )
    if length_a != length_b:
        raise ValueError(f"operands have {length_a} and {length_b} blocks; they must have the same number")
    return fmt_a, fmt_b


def dot(
    a: QuantizedBlock,
    b: QuantizedBlock,
    fmt_a,
    fmt_b=None,
    accumulator: Accumulator = Accumulator(),
    *,
    tensor_scale_a: Fraction | None = None,
    tensor_scale_b: Fraction | None = None,
    c: Number | None = None,
) -> BlockDot | GeneralDot:
    """Dot of two blocks (OCP MX section 6.1) through the datapath ``accumulator`` describes.

    ``fmt_b`` defaults to ``fmt_a``; mixed pairs (E4M3 x E5M2, MX9 x MX6, ...) need a shared block
    size. ``tensor_scale_*``: NVFP4's fp32 tensor scales (default 1).

    Returns the :class:`BlockDot` (with its register) for ``accumulate="separate"`` without ``c``.
    With an accumulator input ``c`` (an fp32 value, see :func:`dot_general`) or with
    ``accumulate="fused"`` it is the one-block DotGeneral: the :class:`GeneralDot` of
    ``dot_general([a], [b], ...)``.
    """
    if c is not None or accumulator.accumulate == "fused":
        scales = {"tensor_scale_a": tensor_scale_a, "tensor_scale_b": tensor_scale_b}
        return dot_general([a], [b], fmt_a, fmt_b, accumulator, **scales, c=c)
    fmt_a, fmt_b = check_pair(fmt_a, fmt_a if fmt_b is None else fmt_b, 1, 1)
    a = check_block(a, fmt_a, tensor_scale_a, "block a")
    b = check_block(b, fmt_b, tensor_scale_b, "block b")
    prods = block_products(a.codes, a.subscales, fmt_a, b.codes, b.subscales, fmt_b)
    factor_a = _scale_factor(a.scale, fmt_a, tensor_scale_a)
    factor_b = _scale_factor(b.scale, fmt_b, tensor_scale_b)
    # (finite terms never change the special outcome: only the others are passed)
    non_finite = [(sign, kind) for sign, _, _, kind in prods if kind != "finite"]
    outcome = special(non_finite, factor_a.is_nan or factor_b.is_nan)
    register, lsb, anchor, chain, unbounded = _register(prods, fmt_a, fmt_b, accumulator)
    if chain is not None and not chain.is_finite:  # fp32_sequential: the IEEE chain decides the specials
        outcome = chain if not (factor_a.is_nan or factor_b.is_nan) else Exact.nan()
    if outcome is not None:
        exact = outcome
    else:
        # |register| * 2^lsb * scale_a * scale_b: the integers multiplied, one Fraction built
        scale_a, scale_b = factor_a.magnitude, factor_b.magnitude
        numerator = abs(register) * scale_a.numerator * scale_b.numerator
        denominator = scale_a.denominator * scale_b.denominator
        magnitude = Fraction(numerator << lsb, denominator) if lsb >= 0 else Fraction(numerator, denominator << -lsb)
        exact = Exact.trusted(int(register < 0 and magnitude != 0), magnitude)  # an exact zero (a zero scale) is +0
    code = round_output(exact, accumulator)
    return BlockDot(code, output_value(code, accumulator), exact, register, lsb, anchor, unbounded)


def dot_general(
    blocks_a: Sequence[QuantizedBlock],
    blocks_b: Sequence[QuantizedBlock],
    fmt_a,
    fmt_b=None,
    accumulator: Accumulator = Accumulator(),
    *,
    tensor_scale_a: Fraction | None = None,
    tensor_scale_b: Fraction | None = None,
    c: Number | None = None,
) -> GeneralDot:
    """DotGeneral (OCP MX section 6.2) of two vectors of n blocks, with an optional accumulator
    input ``c``: D = C + sum of the products, through ``accumulator`` (see :mod:`mxsim.options.accumulate`).

    ``c`` is an fp32 value: an :class:`~mxsim.ref.exact.Exact`, Fraction, int or float, read
    exactly (-0, subnormals, +-Inf and NaN included); a value fp32 cannot hold raises ValueError.
    An int is a value: pass ``fp32_bits(word)`` for an fp32 bit pattern.

    * ``accumulate="separate"``: the Dot of every block pair is rounded to the output format, then
      combined per ``across_blocks``: ``fp32`` adds the block values in order into an fp32 register
      (nearest-even per addition) that starts at C (with ``c=None``: at the first block's value,
      so a lone -0 block stays -0); ``exact`` sums C and the exact block values and rounds once.
      The sum is then rounded to the output. No blocks and no C give +0.
    * ``accumulate="fused"``: steps of the fused multiply-accumulate unit (:mod:`mxsim.ref.fused`)
      from C (+0 for ``c=None``); ``steps`` holds every step's output code and ``blocks`` is empty.
      With ``promote_every`` the chain restarts from +0 every N products and C enters the fp32
      register that adds the partial sums (:mod:`mxsim.ref.promote`), whose word is the result.
      No blocks give C rounded to the output. NVFP4 tensor scales other than None or 1 are refused.
    """
    fmt_a, fmt_b = check_pair(fmt_a, fmt_a if fmt_b is None else fmt_b, len(blocks_a), len(blocks_b))
    c = fp32_input(c)
    if accumulator.accumulate == "fused":
        return _fused_general(blocks_a, blocks_b, fmt_a, fmt_b, accumulator, tensor_scale_a, tensor_scale_b, c)
    scales = {"tensor_scale_a": tensor_scale_a, "tensor_scale_b": tensor_scale_b}
    blocks = tuple(dot(a, b, fmt_a, fmt_b, accumulator, **scales) for a, b in zip(blocks_a, blocks_b))
    if accumulator.across_blocks == "fp32":
        values = ([] if c is None else [c]) + [block.value for block in blocks]
        total = values[0] if values else Exact(0)
        for value in values[1:]:
            total = fp32_add(total, value)
    else:
        total = _exact_sum(([] if c is None else [c]) + [block.exact for block in blocks])
    code = round_output(total, accumulator)
    return GeneralDot(code, output_value(code, accumulator), blocks)


def _fused_general(blocks_a, blocks_b, fmt_a, fmt_b, accumulator, tensor_scale_a, tensor_scale_b, c) -> GeneralDot:
    check_tensor_scales(tensor_scale_a=tensor_scale_a, tensor_scale_b=tensor_scale_b)
    blocks_a = [check_block(a, fmt_a, tensor_scale_a, "block a") for a in blocks_a]
    blocks_b = [check_block(b, fmt_b, tensor_scale_b, "block b") for b in blocks_b]
    c = Exact(0) if c is None else c
    steps = fused_steps(blocks_a, blocks_b, fmt_a, fmt_b, accumulator, c)
    code = fused_result(steps, c, accumulator, fmt_a.block_size, len(blocks_a))
    return GeneralDot(code, output_value(code, accumulator), (), steps)


def _exact_sum(values: list[Exact]) -> Exact:
    if any(v.is_nan for v in values) or len({v.sign for v in values if v.is_inf}) == 2:
        return Exact.nan()
    infinite = [v for v in values if v.is_inf]
    if infinite:
        return infinite[0]
    total = sum((v.value for v in values), Fraction(0))
    return Exact(int(total < 0), abs(total))
