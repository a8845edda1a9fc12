"""Elements and products as the dot-product datapath sees them (docs/numerics.md section 4), and the
rule for special values; shared by the per-block Dot (:mod:`mxsim.ref.dot`) and the fused steps
(:mod:`mxsim.ref.fused`). Integers and Fractions only.

Every element decodes to a :class:`Term` (sign s, integer significand M, exponent E, fraction
bits f; value (-1)^s * M * 2^(E - f)). A product of two terms is the tuple
(sign, magnitude, exponent, kind) = (sa ^ sb, Ma * Mb, Ea + Eb, kind) with value
(-1)^sign * magnitude * 2^(exponent - fa - fb); kind is finite, inf or nan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ..formats import get_format
from .decode import TABLE_BITS, _check_code, decode
from .exact import Exact, as_int, floor_log2

__all__ = [
    "Term", "element_term", "term_table", "block_terms", "frac_bits", "min_exponent", "products", "pair_products",
    "block_products", "special",
]

TWO = Fraction(2)


@dataclass(frozen=True)
class Term:
    """One element as the datapath sees it: value (-1)^sign * significand * 2^(exponent - frac_bits).

    ``kind`` is finite, inf or nan (significand 0 for the last two)."""

    sign: int
    significand: int
    exponent: int
    frac_bits: int
    kind: str = "finite"


def frac_bits(element) -> int:
    """f of an element format: mantissa bits (floats) or frac_bits (integers)."""
    return element.mantissa_bits if element.kind == "float" else element.frac_bits


def min_exponent(element) -> int:
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
    element = get_format(element, kind="element")
    return _term_lookup(element, microexponent)(_check_code(code, element))


@lru_cache(maxsize=None)
def term_table(element, tau: int = 0) -> tuple[Term, ...]:
    """The :class:`Term` of every code 0 .. 2^width - 1 of an element format of at most
    :data:`~mxsim.ref.decode.TABLE_BITS` bits, with microexponent ``tau`` (computed once per
    format and tau by :func:`element_term`'s rule)."""
    if element.width > TABLE_BITS:
        raise ValueError(f"format {element.name!r} has {element.width}-bit codes; term tables hold formats of at most {TABLE_BITS}")
    return tuple(_element_term(code, element, tau) for code in range(1 << element.width))


def _term_lookup(element, tau: int):
    """code -> Term for one element format and tau: a table lookup for narrow formats."""
    if element.width <= TABLE_BITS:
        return term_table(element, tau).__getitem__
    return lambda code: _element_term(code, element, tau)


@lru_cache(maxsize=1 << 16)
def _element_term(code: int, element, tau: int) -> Term:
    x = decode(code, element)
    if not x.is_finite:
        return Term(x.sign, 0, -tau, frac_bits(element), x.kind)
    f = frac_bits(element)
    exponent = min_exponent(element)
    if element.kind == "float" and x.magnitude:
        exponent = max(floor_log2(x.magnitude), exponent)
    significand = x.magnitude / TWO ** (exponent - f)
    assert significand.denominator == 1, "an element value lies on its binade's grid"
    return Term(x.sign, significand.numerator, exponent - tau, f)


def block_terms(codes: Sequence[int], subscales: Sequence[int], fmt) -> list[Term]:
    """Terms of a block's elements; element i takes the microexponent of sub-block i // k2."""
    fmt = get_format(fmt, kind="block")
    element = fmt.element
    if not fmt.subblocks:
        lookup = _term_lookup(element, 0)
        return [lookup(_check_code(code, element)) for code in codes]
    lookups = [_term_lookup(element, tau) for tau in subscales]
    size = fmt.subblock_size
    return [lookups[i // size](_check_code(code, element)) for i, code in enumerate(codes)]


def products(terms_a: list[Term], terms_b: list[Term]) -> list[tuple[int, int, int, str]]:
    """(sign, Ma*Mb, e = Ea+Eb, kind) of every product; kind is nan (a NaN element, or Inf times a
    zero), inf (an Inf element times a nonzero one) or finite."""
    result = []
    for ta, tb in zip(terms_a, terms_b):
        kind_a, kind_b = ta.kind, tb.kind
        if kind_a == kind_b == "finite":
            kind = "finite"
        elif "nan" in (kind_a, kind_b) or (kind_a == "finite" and not ta.significand) or (kind_b == "finite" and not tb.significand):
            kind = "nan"  # a NaN element, or an Inf one times a zero
        else:
            kind = "inf"  # Inf times Inf, or Inf times a finite nonzero element
        result.append((ta.sign ^ tb.sign, ta.significand * tb.significand, ta.exponent + tb.exponent, kind))
    return result


@lru_cache(maxsize=8)
def pair_products(element_a, element_b) -> tuple[tuple[int, int, int, str], ...]:
    """:func:`products` of every pair of codes (microexponents 0) of two element formats of at most
    TABLE_BITS bits, indexed by ``(code_a << width_b) | code_b``: the same rule, applied once per
    pair (65,536 pairs of 8-bit formats, about 6 MB; the last eight pairs of formats are kept:
    every pair of the canonical golden suites)."""
    terms_a, terms_b = term_table(element_a), term_table(element_b)
    return tuple(products([ta for ta in terms_a for _ in terms_b], [tb for _ in terms_a for tb in terms_b]))


def _checked_codes(codes: Sequence[int], element) -> Sequence[int]:
    """``codes``, each checked to be an int in [0, 2^width) (one pass for the common case; the
    per-code check, with its error, otherwise)."""
    if {*map(type, codes)} <= {int} and (not codes or (min(codes) >= 0 and max(codes) < 1 << element.width)):
        return codes
    return [_check_code(code, element) for code in codes]


def block_products(codes_a, subscales_a, fmt_a, codes_b, subscales_b, fmt_b) -> tuple[tuple[int, int, int, str], ...]:
    """``products(block_terms(codes_a, subscales_a, fmt_a), block_terms(codes_b, subscales_b, fmt_b))``
    of two blocks of formats ``fmt_a``, ``fmt_b`` (block format objects), as a tuple: for narrow
    elements, looked up in :func:`pair_products`, then each exponent lowered by the two elements'
    microexponents (E = E_element - tau, as :func:`element_term` folds it). The products of the
    last :data:`_RECENT_HELD` calls whose codes and subscales were tuples are kept for a call with
    the same objects (a Dot or DotGeneral and its corner classes read a block pair's products
    several times)."""
    arguments = (codes_a, subscales_a, fmt_a, codes_b, subscales_b, fmt_b)
    kept = codes_a.__class__ is subscales_a.__class__ is codes_b.__class__ is subscales_b.__class__ is tuple
    if kept:
        key = tuple(map(id, arguments))
        found = _RECENT_PRODUCTS.get(key)
        if found is not None:
            return found[1]
    ea, eb = fmt_a.element, fmt_b.element
    if ea.width > TABLE_BITS or eb.width > TABLE_BITS:
        result = products(block_terms(codes_a, subscales_a, fmt_a), block_terms(codes_b, subscales_b, fmt_b))
    else:
        table, width_b = pair_products(ea, eb), eb.width
        codes_a, codes_b = _checked_codes(codes_a, ea), _checked_codes(codes_b, eb)
        result = [table[(ca << width_b) | cb] for ca, cb in zip(codes_a, codes_b)]
        for fmt, subscales in ((fmt_a, subscales_a), (fmt_b, subscales_b)):
            if fmt.subblocks and any(subscales):
                size = fmt.subblock_size
                result = [(s, m, e - subscales[i // size], kind) for i, (s, m, e, kind) in enumerate(result)]
    result = tuple(result)
    if kept:
        if len(_RECENT_PRODUCTS) >= _RECENT_HELD:
            _RECENT_PRODUCTS.clear()
        _RECENT_PRODUCTS[key] = (arguments, result)
    return result


# block_products calls kept (then it starts again): a DotGeneral's block pairs, read again by its classes
_RECENT_HELD = 16
# the ids of (codes_a, subscales_a, fmt_a, codes_b, subscales_b, fmt_b) -> (those objects, their products), for
# calls whose codes and subscales were tuples: the entry holds the objects, so their ids stay theirs, and an
# immutable tuple the checks accepted once is accepted again (an equal tuple of other objects, say a bool
# code for 1, is not taken for it)
_RECENT_PRODUCTS: dict = {}


def special(signs_and_kinds: Iterable[tuple[int, str]], nan_scale: bool) -> Exact | None:
    """The special outcome of a sum of terms given as (sign, kind) pairs, decided on the hardware's
    side path: NaN if a scale is NaN, a term is NaN, or there are Inf terms of both signs; else
    +-Inf if a term is Inf (its sign); else None (the sum is finite)."""
    inf_signs = set()
    for sign, kind in signs_and_kinds:
        if kind == "nan":
            return Exact.nan()
        if kind == "inf":
            inf_signs.add(sign)
    if nan_scale or len(inf_signs) == 2:
        return Exact.nan()
    return Exact.inf(inf_signs.pop()) if inf_signs else None
