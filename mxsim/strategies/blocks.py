"""Strategies for whole blocks: input values for a quantizer, and encoded blocks for a datapath.

* :func:`block_values`: one block of carrier values (``block_size`` of them) of a chosen kind
  (:data:`VALUE_BLOCK_KINDS`), with a controllable dynamic range and amax binade.
* :func:`block_codes`: one encoded block (:class:`mxsim.ref.QuantizedBlock`: scale code,
  microexponents, element codes) of a chosen kind (:data:`CODE_BLOCK_KINDS`).

Values are assembled from carrier bit fields (sign, biased exponent, mantissa), so every
carrier subnormal, zero sign and NaN payload is reachable and nothing is rounded on the way.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from ..formats import get_format
from ..formats.element import negated_code
from ..ref import QuantizedBlock, floor_log2
from ..ref import decode as ref_decode
from ._carriers import get_carrier
from .elements import _codes_by_class, decision_points, element_codes

__all__ = ["CODE_BLOCK_KINDS", "VALUE_BLOCK_KINDS", "block_codes", "block_values"]

VALUE_BLOCK_KINDS = ("random", "all_zero", "single_outlier", "specials", "scale_boundary", "carrier_subnormal")
"""random: magnitudes within ``dynamic_range`` binades below the amax binade, some zeros;
all_zero: +-0 only; single_outlier: one value ``outlier_gap`` binades or more above all others;
specials: a random block with NaN or +-Inf at one to three places; scale_boundary: amax at or a
few carrier ulps around a point where the scale rule changes its answer (a power of two, the
element maximum or its rounding threshold times a power of two; for NVFP4 also 6 times a UE4M3
tie), the family drawn first (uniformly), then a point of it; carrier_subnormal: every value a
carrier subnormal or zero."""

CODE_BLOCK_KINDS = ("random", "all_zero", "single_outlier", "max", "cancellation", "specials")
"""random: finite codes of every class; all_zero: zero codes; single_outlier: one code of +-max
or a large normal, the rest at most max/16 in magnitude; max: every element +max, or every
element -max (the widest same-sign sum); cancellation: the second half negates the first, so the
exact sum is zero (sub-blocks share one microexponent); specials: NaN/Inf element codes where
the element has them, else a NaN scale."""

_ULPS = 2


def block_format(fmt, argument: str = "fmt"):
    """The block format ``fmt``; ValueError naming ``argument`` for anything else."""
    fmt = get_format(fmt)
    if fmt.kind != "block":
        raise ValueError(
            f"{argument}={fmt.name!r} is not a block format; expected one of the block formats (e.g. 'mxfp8_e4m3')"
        )
    return fmt


def _check_kinds(kinds, allowed: tuple[str, ...]) -> tuple[str, ...]:
    kinds = allowed if kinds is None else tuple(kinds)
    if not kinds or any(kind not in allowed for kind in kinds):
        raise ValueError(f"kinds={kinds!r} is not allowed; expected a non-empty subset of {', '.join(allowed)}")
    return kinds


def _check_range(name: str, pair, low: int, high: int) -> tuple[int, int]:
    ok = isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(v, int) for v in pair)
    if not ok or not low <= pair[0] <= pair[1] <= high:
        raise ValueError(
            f"{name}={pair!r} is not allowed; expected a pair of integers (lo, hi) with {low} <= lo <= hi <= {high}"
        )
    return pair


# --- values --------------------------------------------------------------------------------------
class _Fields:
    """Carrier codes from (unbiased exponent, mantissa field, sign); exponents below the normal
    range give subnormals (the significand shifted right, truncated), above it the largest binade."""

    def __init__(self, carrier):
        self.carrier = carrier
        self.min_exponent = 1 - carrier.bias
        self.max_exponent = carrier.max_biased_exponent - carrier.bias

    def code(self, exponent: int, mantissa: int, negative: bool) -> int:
        c = self.carrier
        biased = min(exponent + c.bias, c.max_biased_exponent)
        if biased >= 1:
            code = biased << c.mantissa_bits | mantissa
        else:
            significand = 1 << c.mantissa_bits | mantissa
            code = significand >> (1 - biased) if 1 - biased <= c.mantissa_bits + 1 else 0
        return code | (c.sign_bit if negative else 0)


def _elements(fields: _Fields, depth: tuple[int, int], n: int):
    """``n`` elements, each one integer (one draw, so blocks stay cheap to generate and shrink):
    bit 0 the sign, the next mantissa_bits the mantissa, the rest 0 for a zero or 1 + the number
    of binades below the amax binade (within ``depth``). Shrinks toward +0."""
    m = fields.carrier.mantissa_bits
    element = st.integers(0, ((depth[1] - depth[0] + 2) << (m + 1)) - 1)
    return st.tuples(*[element] * n)


def _assemble(fields: _Fields, top: int, low_depth: int, draws) -> list[int]:
    c = fields.carrier
    codes = []
    for word in draws:
        negative, mantissa, level = word & 1, (word >> 1) & ((1 << c.mantissa_bits) - 1), word >> (c.mantissa_bits + 1)
        sign = c.sign_bit if negative else 0
        codes.append(sign if level == 0 else fields.code(top - low_depth - (level - 1), mantissa, bool(negative)))
    return codes


def _scale_boundary_families(fmt) -> tuple[tuple[Fraction, ...], ...]:
    """amax values (before the power-of-two factor) where a scale rule changes its answer, by
    family: a power of two; the element maximum; its rounding threshold (max + ulp/2); for
    UE4M3-scaled formats (NVFP4) also the element maximum times each UE4M3 tie."""
    element = fmt.element
    overflow = [p for kind, p in decision_points(element) if kind == "overflow"]
    families = [(Fraction(1),), (overflow[0],), (overflow[1],)]
    if fmt.scale.name == "ue4m3":
        families.append(tuple(element.max_normal * p for kind, p in decision_points(fmt.scale) if kind == "tie"))
    return tuple(families)


def block_values(
    fmt,
    dtype="float32",
    *,
    kinds=None,
    dynamic_range: int = 20,
    amax_exponents: tuple[int, int] = (-20, 20),
    outlier_gap: tuple[int, int] = (8, 40),
) -> st.SearchStrategy[np.ndarray]:
    """One block of ``fmt.block_size`` values of carrier ``dtype`` (a 1-d array of its NumPy
    type; bfloat16 values as float32, see :mod:`mxsim.strategies._carriers`).

    ``kinds``: a subset of :data:`VALUE_BLOCK_KINDS` (default all), drawn uniformly.
    ``dynamic_range``: nonzero magnitudes lie in the amax binade or at most this many binades
    below it (random and specials blocks; the others below an outlier). ``amax_exponents``:
    the range of floor(log2 amax), clipped to the carrier's normal range. ``outlier_gap``: how
    many binades a single outlier stands above the rest.
    """
    fmt = block_format(fmt)
    carrier = get_carrier(dtype)
    kinds = _check_kinds(kinds, VALUE_BLOCK_KINDS)
    fields = _Fields(carrier)
    if not isinstance(dynamic_range, int) or not 0 <= dynamic_range <= 4096:
        raise ValueError(f"dynamic_range={dynamic_range!r} is not allowed; expected an integer in [0, 4096]")
    lo, hi = _check_range("amax_exponents", amax_exponents, -16384, 16384)
    lo, hi = max(lo, fields.min_exponent), min(hi, fields.max_exponent)
    if lo > hi:
        raise ValueError(f"amax_exponents={amax_exponents!r} lies outside the {carrier.name} normal range")
    gap = _check_range("outlier_gap", outlier_gap, 1, 4096)
    n = fmt.block_size
    tops = st.integers(lo, hi)
    # a family first, then a point of it: NVFP4's 126 UE4M3 ties do not crowd out the others
    boundaries = st.sampled_from(_scale_boundary_families(fmt)).flatmap(st.sampled_from)
    inf, nan = carrier.inf_code, carrier.quiet_nan_code
    subnormals = st.integers(0, (2 << carrier.mantissa_bits) - 1)  # bit 0 the sign

    @st.composite
    def one_block(draw) -> np.ndarray:
        kind = draw(st.sampled_from(kinds))
        if kind == "all_zero":
            codes = [carrier.sign_bit if s else 0 for s in draw(st.tuples(*[st.booleans()] * n))]
        elif kind == "carrier_subnormal":
            codes = [(w >> 1) | (carrier.sign_bit if w & 1 else 0) for w in draw(st.tuples(*[subnormals] * n))]
        elif kind == "single_outlier":
            top = draw(tops)
            below = draw(st.integers(*gap))
            rest = draw(_elements(fields, (below, below + dynamic_range), n))
            codes = _assemble(fields, top, below, rest)
            where = draw(st.integers(0, n - 1))
            mantissa = draw(st.integers(0, (1 << carrier.mantissa_bits) - 1))
            codes[where] = fields.code(top, mantissa, draw(st.booleans()))
        elif kind == "scale_boundary":
            point = draw(boundaries)
            binade = floor_log2(point)  # keep point * 2^power a normal of the carrier
            low, high = max(lo, fields.min_exponent - binade), min(hi, fields.max_exponent - binade - 1)
            power = draw(st.integers(min(low, high), high))
            amax = min(
                max(carrier.code_of(point * Fraction(2) ** power) + draw(st.integers(-_ULPS, _ULPS)), 1), inf - 1
            )
            top = (amax >> carrier.mantissa_bits) - carrier.bias
            rest = draw(_elements(fields, (1, 1 + dynamic_range), n))
            codes = _assemble(fields, top, 1, rest)
            codes[draw(st.integers(0, n - 1))] = amax | (carrier.sign_bit if draw(st.booleans()) else 0)
        else:  # random, specials
            top = draw(tops)
            rest = draw(_elements(fields, (0, dynamic_range), n))
            codes = _assemble(fields, top, 0, rest)
            mantissa = draw(st.integers(0, (1 << carrier.mantissa_bits) - 1))
            codes[draw(st.integers(0, n - 1))] = fields.code(top, mantissa, draw(st.booleans()))
            if kind == "specials":
                places = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True))
                for where in places:
                    special = draw(st.sampled_from((nan, inf, inf | carrier.sign_bit, nan | carrier.sign_bit)))
                    codes[where] = special
        return carrier.from_codes(codes)

    return one_block()


# --- codes ---------------------------------------------------------------------------------------
def _default_scales(fmt, specials: bool):
    scale = fmt.scale
    if scale.name == "e8m0":
        corners = [0x00, 0x01, 0xFE] + ([0xFF] if specials else [])
        return st.one_of(st.integers(127 - 16, 127 + 16), st.sampled_from(corners))
    nan = [scale.nan_code()] if specials and scale.has_nan else []
    return st.one_of(element_codes(scale, classes=("normal", "subnormal", "max")), st.sampled_from([0] + nan))


def _balanced_pool(table: dict, classes) -> tuple[int, ...]:
    """The codes of ``classes``, each class repeated to about the size of the largest, so that one
    uniform draw picks every class about equally often (one draw per element keeps blocks cheap)."""
    largest = max(len(table[c]) for c in classes)
    return tuple(code for c in classes for code in table[c] * -(-largest // len(table[c])))


def block_codes(fmt, *, kinds=None, scale_codes=None) -> st.SearchStrategy[QuantizedBlock]:
    """One encoded block of block format ``fmt``: a :class:`mxsim.ref.QuantizedBlock` with a
    scale code, ``fmt.subblocks`` microexponents and ``fmt.block_size`` element codes.

    ``kinds``: a subset of :data:`CODE_BLOCK_KINDS` (default all). ``scale_codes``: a strategy
    for the scale code (default: codes near 2^0 and the extremes 0x00, 0x01, 0xFE, plus the NaN
    code 0xFF in specials blocks; UE4M3 scales: any finite code, plus NaN in specials blocks).
    A specials block of a format whose element has no NaN or Inf always gets the NaN scale,
    whatever ``scale_codes`` says: it is the only special such a block can hold.
    Element codes of random blocks are drawn with every finite class (zero, -0, subnormal,
    normal, max) about equally likely.
    """
    fmt = block_format(fmt)
    kinds = _check_kinds(kinds, CODE_BLOCK_KINDS)
    element, n = fmt.element, fmt.block_size
    table = _codes_by_class(element)
    finite = _balanced_pool(table, [c for c in ("zero", "negative_zero", "subnormal", "normal", "max") if c in table])
    symmetric = tuple(c for c in finite if _code_is_symmetric(c, element))
    zeros = tuple(code for c in ("zero", "negative_zero") if c in table for code in table[c])
    specials = tuple(code for c in ("nan", "inf") if c in table for code in table[c])
    small = tuple(c for c in range(1 << element.width) if _is_small(c, element))
    large = tuple(c for c in table.get("max", ()) + table.get("normal", ()) if not _is_small(c, element))
    subscales = st.tuples(*[st.integers(0, (1 << fmt.subscale_bits) - 1)] * fmt.subblocks)
    scales = {False: scale_codes if scale_codes is not None else _default_scales(fmt, False)}
    # A specials block always holds a special: NaN/Inf elements where the element has them,
    # else the NaN scale (the only special such a block can carry).
    nan_scale = st.just(fmt.scale.nan_code())
    scales[True] = (scale_codes if scale_codes is not None else _default_scales(fmt, True)) if specials else nan_scale
    blocks = {
        "random": st.tuples(*[st.sampled_from(finite)] * n),
        "all_zero": st.tuples(*[st.sampled_from(zeros)] * n),
        "single_outlier": st.tuples(*[st.sampled_from(small)] * n),
        "specials": st.tuples(*[st.sampled_from(finite)] * n),
        "cancellation": st.tuples(*[st.sampled_from(symmetric)] * (n // 2)),
    }

    @st.composite
    def one_block(draw) -> QuantizedBlock:
        kind = draw(st.sampled_from(kinds))
        if kind == "max":
            codes = [draw(st.sampled_from(table["max"]))] * n
        else:
            codes = list(draw(blocks[kind]))
        if kind == "single_outlier":
            codes[draw(st.integers(0, n - 1))] = draw(st.sampled_from(large))
        elif kind == "cancellation":
            codes += [negated_code(c, element) for c in codes] + ([0] if n % 2 else [])
        elif kind == "specials" and specials:
            for where in draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True)):
                codes[where] = draw(st.sampled_from(specials))
        taus = draw(subscales)
        if kind == "cancellation":  # element i and its negation share one microexponent
            taus = (taus[0],) * len(taus) if taus else taus
        return QuantizedBlock(draw(scales[kind == "specials"]), tuple(taus), tuple(codes))

    return one_block()


def _is_small(code: int, element) -> bool:
    value = ref_decode(code, element)
    return value.is_finite and value.magnitude * 16 <= element.max_normal


def _code_is_symmetric(code: int, element) -> bool:
    """False for the two's-complement most negative code, which has no negation."""
    value = ref_decode(code, element)
    return value.is_finite and value.magnitude <= element.max_normal
