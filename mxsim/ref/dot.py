"""Reference dot-product datapath: Dot of two blocks and DotGeneral of two vectors of blocks
(conventions.md section 4), with integers and Fractions only.

Every element decodes to a :class:`Term` (sign s, integer significand M, exponent E, fraction
bits f; value (-1)^s * M * 2^(E - f)); a product has significand Ma * Mb and exponent
e = Ea + Eb. The integer register of a block is reported with every result, as an RTL
engineer compares it against the design's internal signal:

* ``accumulator`` and ``lsb_exponent``: the block's sum before scales is
  accumulator * 2^lsb_exponent. ``exact`` mode keeps the sum on the fixed grid of the format
  pair (the smallest product LSB; contract section 5.1 widths); ``aligned`` mode holds the
  W-bit register on the grid 2^(anchor - F); ``fp32_sequential`` holds the fp32 register as
  its signed 24-bit significand on its own ulp (0 and 0 if the register overflowed to Inf).
* ``anchor``: e_max, the largest Ea + Eb over products whose both elements are finite and
  nonzero, or 0 when there is none (the register is then 0).

Special values never enter the integer register (hardware handles them on a side path): a NaN
scale, a NaN element, Inf times zero, or Inf products of both signs make the block NaN; other Inf
products make it Inf of their sign. ``fp32_sequential`` instead feeds every product, specials
included, through its IEEE fp32 chain. NaN results are the output format's canonical quiet NaN
(fp32 0x7FC00000). A block sum that is exactly zero is +0.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Sequence

from ..accumulator import Accumulator
from ..formats import get_format
from .block import QuantizedBlock, check_block, to_fp32
from .decode import decode
from .encode import encode
from .exact import Exact, as_int, floor_log2
from .round import round_magnitude

__all__ = [
    "Term",
    "element_term",
    "block_terms",
    "product_lsb",
    "largest_grid_value",
    "register_limit",
    "round_output",
    "fp32_add",
    "BlockDot",
    "GeneralDot",
    "dot",
    "dot_general",
]

TWO = Fraction(2)
FP32_ULP_SHIFT = 23  # fp32 significand bits below the leading one
FP32_MIN_EXPONENT = -126


@dataclass(frozen=True)
class Term:
    """One element as the datapath sees it: value (-1)^sign * significand * 2^(exponent - frac_bits).

    ``kind`` is finite, inf or nan (significand 0 for the last two)."""

    sign: int
    significand: int
    exponent: int
    frac_bits: int
    kind: str = "finite"


def _frac_bits(element) -> int:
    return element.mantissa_bits if element.kind == "float" else element.frac_bits


def _min_exponent(element) -> int:
    """E of the smallest binade: emin for floats (subnormals share it), 0 for integers."""
    return element.emin if element.kind == "float" else 0


def element_term(code: int, element, tau: int = 0) -> Term:
    """The :class:`Term` of an element code, with the sub-block microexponent ``tau`` folded into
    the exponent (E = E_element - tau).

    Floats: f = mantissa bits, M includes the hidden bit, E is the unbiased exponent (subnormals
    use the smallest normal exponent). Integers: f = frac_bits, E = 0, M = |q| (MXINT8 0x80 has
    M = 128, value -2). Derived from the exact decoded value, so it follows the decoder's rules.
    """
    microexponent = as_int(tau)
    if microexponent is None:
        raise ValueError(f"tau={tau!r} is not allowed; expected an integer microexponent")
    return _element_term(code, get_format(element, kind="element"), microexponent)


@lru_cache(maxsize=1 << 16)
def _element_term(code: int, element, tau: int) -> Term:
    x = decode(code, element)
    if not x.is_finite:
        return Term(x.sign, 0, -tau, _frac_bits(element), x.kind)
    f = _frac_bits(element)
    exponent = _min_exponent(element)
    if element.kind == "float" and x.magnitude:
        exponent = max(floor_log2(x.magnitude), exponent)
    significand = x.magnitude / TWO ** (exponent - f)
    assert significand.denominator == 1, "an element value lies on its binade's grid"
    return Term(x.sign, significand.numerator, exponent - tau, f)


def block_terms(codes: Sequence[int], subscales: Sequence[int], fmt) -> list[Term]:
    """Terms of a block's elements; element i takes the microexponent of sub-block i // k2."""
    fmt = get_format(fmt, kind="block")
    return [
        element_term(code, fmt.element, subscales[i // fmt.subblock_size] if fmt.subblocks else 0)
        for i, code in enumerate(codes)
    ]


def _element_lsb(fmt) -> int:
    """Exponent of the smallest element LSB of a block format: E_min - f - (largest tau)."""
    largest_tau = (1 << fmt.subscale_bits) - 1 if fmt.subblocks else 0
    return _min_exponent(fmt.element) - _frac_bits(fmt.element) - largest_tau


def product_lsb(fmt_a, fmt_b) -> int:
    """The fixed grid of ``exact`` mode: the exponent of the smallest product LSB of the pair."""
    return _element_lsb(get_format(fmt_a, kind="block")) + _element_lsb(get_format(fmt_b, kind="block"))


@lru_cache(maxsize=None)
def largest_grid_value(fmt) -> int:
    """The largest |element| of a block format in units of its smallest element LSB (contract
    5.1's "max integer magnitude": 229376 for E4M3, 1.75 * 2^31 for E5M2)."""
    fmt = get_format(fmt, kind="block")
    lsb = _element_lsb(fmt)
    terms = (element_term(code, fmt.element) for code in range(1 << fmt.element.width))
    return max((t.significand << (t.exponent - t.frac_bits - lsb) for t in terms if t.kind == "finite"), default=0)


def register_limit(fmt_a, fmt_b, accumulator: Accumulator) -> int:
    """An upper bound on |register| of one block Dot, ignoring ``width``: ``exact``
    k * largest_a * largest_b (attained by the worst-case block: the section 5.1 widths);
    ``aligned`` k * (floor(max Ma*Mb / 2^(fa+fb)) + 1) * 2^F + k (every q_i, rne included, is at
    most the first term over k); ``fp32_sequential`` the largest 24-bit significand."""
    fmt_a, fmt_b = get_format(fmt_a, kind="block"), get_format(fmt_b, kind="block")
    k = fmt_a.block_size
    if accumulator.mode == "exact":
        return k * largest_grid_value(fmt_a) * largest_grid_value(fmt_b)
    if accumulator.mode == "fp32_sequential":
        return (1 << (FP32_ULP_SHIFT + 1)) - 1
    largest = (_largest_significand(fmt_a.element) * _largest_significand(fmt_b.element)) >> (
        _frac_bits(fmt_a.element) + _frac_bits(fmt_b.element)
    )
    return k * ((largest + 1) << accumulator.frac_bits) + k


@lru_cache(maxsize=None)
def _largest_significand(element) -> int:
    return max(element_term(code, element).significand for code in range(1 << element.width))


def _scale_factor(scale_code: int, fmt, tensor_scale) -> Exact:
    """The block's scale value times the tensor scale (NaN for a NaN scale code)."""
    scale = decode(scale_code, fmt.scale)
    if scale.is_nan:
        return scale
    return Exact(0, scale.magnitude * (Fraction(1) if tensor_scale is None else Fraction(tensor_scale)))


def _output_format(accumulator: Accumulator):
    return get_format(accumulator.output, kind="float")


def round_output(x: Exact, accumulator: Accumulator) -> int:
    """Round a result to the output format's code: ``output_rounding``; overflow (the rounding
    with unbounded exponent exceeds the largest finite value) gives +-Inf in every mode; ``ftz``
    turns a subnormal result into a zero of its sign; NaN gives the canonical quiet NaN."""
    out = _output_format(accumulator)
    if x.is_nan:
        return out.nan_code()
    if x.is_inf:
        return out.inf_code(bool(x.sign))
    try:
        code = encode(x, out, accumulator.output_rounding, "error")
    except OverflowError:
        return out.inf_code(bool(x.sign))
    if accumulator.ftz and code & ~out.sign_mask < 1 << out.mantissa_bits:
        return code & out.sign_mask
    return code


def fp32_add(x: Exact, y: Exact) -> Exact:
    """x + y rounded once to binary32, nearest-even, with IEEE 754 special cases (NaN, Inf, -0).

    ``y`` may be any exact value (a product, for an FMA chain); ``x`` is the fp32 register."""
    if x.is_nan or y.is_nan or (x.is_inf and y.is_inf and x.sign != y.sign):
        return Exact.nan()
    if x.is_inf or y.is_inf:
        return x if x.is_inf else y
    total = x.value + y.value
    if total == 0:  # exact zero: -0 only for (-0) + (-0)
        return Exact(int(x.sign and y.sign and x.is_zero and y.is_zero))
    return to_fp32(total)


@dataclass(frozen=True)
class BlockDot:
    """One block's Dot: the output ``code`` and its ``value``; ``exact``, the block's value before
    the output rounding; and the register (``accumulator``, ``lsb_exponent``, ``anchor``; see the
    module docstring)."""

    code: int
    value: Exact
    exact: Exact
    accumulator: int
    lsb_exponent: int
    anchor: int


@dataclass(frozen=True)
class GeneralDot:
    """A DotGeneral: the output ``code`` and ``value``, and the :class:`BlockDot` of every block."""

    code: int
    value: Exact
    blocks: tuple[BlockDot, ...]


def _products(terms_a: list[Term], terms_b: list[Term]):
    """(sign, Ma*Mb, e = Ea+Eb, kind) of every product; kind is finite, inf or nan."""
    products = []
    for ta, tb in zip(terms_a, terms_b):
        sign = ta.sign ^ tb.sign
        zero = (ta.kind == "finite" and ta.significand == 0) or (tb.kind == "finite" and tb.significand == 0)
        if "nan" in (ta.kind, tb.kind) or ("inf" in (ta.kind, tb.kind) and zero):
            kind = "nan"
        elif "inf" in (ta.kind, tb.kind):
            kind = "inf"
        else:
            kind = "finite"
        products.append((sign, ta.significand * tb.significand, ta.exponent + tb.exponent, kind))
    return products


def _special(products, factor_a: Exact, factor_b: Exact) -> Exact | None:
    """NaN or +-Inf if the block's result is special (see the module docstring), else None."""
    if factor_a.is_nan or factor_b.is_nan or any(kind == "nan" for *_, kind in products):
        return Exact.nan()
    inf_signs = {sign for sign, _, _, kind in products if kind == "inf"}
    if len(inf_signs) == 2:
        return Exact.nan()
    return Exact.inf(inf_signs.pop()) if inf_signs else None


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


def _aligned_register(products, frac: int, anchor: int, accumulator: Accumulator) -> int:
    """The W-bit register: each product placed on the grid 2^(anchor - F) by ``shift_rounding``,
    added in index order, with ``overflow`` applied after each addition."""
    lsb = anchor - accumulator.frac_bits
    rounding = "rtz" if accumulator.shift_rounding == "truncate" else "rne"
    bound = accumulator.register_bound
    total = 0
    for sign, magnitude, e, kind in products:
        if kind != "finite" or not magnitude:
            continue
        shift = e - frac - lsb  # product = magnitude * 2^(e - frac) = magnitude * 2^shift LSBs
        if shift >= 0:
            q = magnitude << shift
        else:
            q = round_magnitude(magnitude, 1 << -shift, rounding, bool(sign))
        total += -q if sign else q
        if bound is not None:
            if accumulator.overflow == "saturate":
                total = min(max(total, -bound), bound - 1)
            else:
                total = (total + bound) % (2 * bound) - bound
    return total


def _fp32_register(products, frac: int) -> tuple[Exact, int, int]:
    """The fp32 chain over every product in index order (IEEE, nearest-even per addition), and
    the register as (significand, lsb_exponent); (0, 0) if it is not finite."""
    total = Exact(0)
    for sign, magnitude, e, kind in products:
        if kind == "nan":
            term = Exact.nan()
        elif kind == "inf":
            term = Exact.inf(sign)
        else:
            term = Exact(sign, magnitude * TWO ** (e - frac))  # exact: each addition rounds once
        total = fp32_add(total, term)
    if not total.is_finite:
        return total, 0, 0
    if total.is_zero:
        return Exact(0), 0, FP32_MIN_EXPONENT - FP32_ULP_SHIFT
    lsb = max(floor_log2(total.magnitude), FP32_MIN_EXPONENT) - FP32_ULP_SHIFT
    significand = (total.magnitude / TWO**lsb).numerator
    return total, -significand if total.sign else significand, lsb


def _check_pair(fmt_a, fmt_b, length_a: int, length_b: int):
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
) -> BlockDot:
    """Dot of two blocks (OCP MX section 6.1) through the datapath ``accumulator`` describes.

    ``fmt_b`` defaults to ``fmt_a``; mixed pairs (E4M3 x E5M2, MX9 x MX6, ...) need a shared block
    size. ``tensor_scale_*``: NVFP4's fp32 tensor scales (default 1).
    """
    fmt_a, fmt_b = _check_pair(fmt_a, fmt_a if fmt_b is None else fmt_b, 1, 1)
    a = check_block(a, fmt_a, tensor_scale_a, "block a")
    b = check_block(b, fmt_b, tensor_scale_b, "block b")
    products = _products(block_terms(a.codes, a.subscales, fmt_a), block_terms(b.codes, b.subscales, fmt_b))
    frac = _frac_bits(fmt_a.element) + _frac_bits(fmt_b.element)
    factor_a = _scale_factor(a.scale, fmt_a, tensor_scale_a)
    factor_b = _scale_factor(b.scale, fmt_b, tensor_scale_b)
    special = _special(products, factor_a, factor_b)
    anchor = _anchor(products)
    if accumulator.mode == "exact":
        lsb = product_lsb(fmt_a, fmt_b)
        register = _exact_register(products, frac, lsb)
    elif accumulator.mode == "aligned":
        lsb = anchor - accumulator.frac_bits
        register = _aligned_register(products, frac, anchor, accumulator)
    else:
        chain, register, lsb = _fp32_register(products, frac)
        if not chain.is_finite:  # the IEEE chain decides the specials of this mode
            special = chain if not (factor_a.is_nan or factor_b.is_nan) else Exact.nan()
    if special is not None:
        exact = special
    else:
        value = register * TWO**lsb * factor_a.magnitude * factor_b.magnitude
        exact = Exact(int(value < 0), abs(value))
    code = round_output(exact, accumulator)
    return BlockDot(code, decode(code, _output_format(accumulator)), exact, register, lsb, anchor)


def dot_general(
    blocks_a: Sequence[QuantizedBlock],
    blocks_b: Sequence[QuantizedBlock],
    fmt_a,
    fmt_b=None,
    accumulator: Accumulator = Accumulator(),
    *,
    tensor_scale_a: Fraction | None = None,
    tensor_scale_b: Fraction | None = None,
) -> GeneralDot:
    """DotGeneral (OCP MX section 6.2): the sum of the Dots of the block pairs, combined across
    blocks per ``accumulator.across_blocks`` (see :mod:`mxsim.accumulator`). No blocks give +0."""
    fmt_a, fmt_b = _check_pair(fmt_a, fmt_a if fmt_b is None else fmt_b, len(blocks_a), len(blocks_b))
    scales = {"tensor_scale_a": tensor_scale_a, "tensor_scale_b": tensor_scale_b}
    blocks = tuple(dot(a, b, fmt_a, fmt_b, accumulator, **scales) for a, b in zip(blocks_a, blocks_b))
    if accumulator.across_blocks == "fp32":
        total = blocks[0].value if blocks else Exact(0)
        for block in blocks[1:]:
            total = fp32_add(total, block.value)
    else:
        total = _exact_sum([block.exact for block in blocks])
    code = round_output(total, accumulator)
    return GeneralDot(code, decode(code, _output_format(accumulator)), blocks)


def _exact_sum(values: list[Exact]) -> Exact:
    if any(v.is_nan for v in values) or len({v.sign for v in values if v.is_inf}) == 2:
        return Exact.nan()
    infinite = [v for v in values if v.is_inf]
    if infinite:
        return infinite[0]
    total = sum((v.value for v in values), Fraction(0))
    return Exact(int(total < 0), abs(total))
