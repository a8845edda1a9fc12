"""Strategies for element codes and for input values near an element format's decision points.

* :func:`element_codes`: codes of a format, drawn class by class (:data:`CODE_CLASSES`), so that
  zeros, subnormals, +-max, NaN and Inf come up as often as ordinary normals.
* :func:`boundary_values`: carrier values (fp32, fp64, bf16, fp16) at and a few carrier ulps
  around the format's decision points (:data:`BOUNDARY_KINDS`): every representable magnitude,
  every tie between neighbours, the subnormal boundary, underflow to zero, the overflow
  thresholds, +-Inf and NaN (with payloads).
* :func:`carrier_values`: any value of a carrier, from a uniformly drawn bit pattern.

Every decision point is an exact Fraction computed from the format's parameters by the
reference decoder; it is rounded to the carrier (nearest-even) only when the carrier cannot hold
it exactly, which no catalogue format needs in fp32 or fp64.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from typing import NamedTuple

from hypothesis import strategies as st

from ..formats import get_format
from ..ref import decode as ref_decode
from ..ref.decode import finite_magnitudes
from ._carriers import get_carrier

__all__ = [
    "BOUNDARY_KINDS",
    "CODE_CLASSES",
    "boundary_values",
    "carrier_values",
    "code_class",
    "decision_points",
    "element_codes",
]

MAX_ENUMERATED_BITS = 16

CODE_CLASSES = ("zero", "negative_zero", "subnormal", "normal", "max", "int_min", "nan", "inf")
"""Classes of element codes: +0, -0, subnormal, normal (below max), +-max finite, the two's-
complement most negative code (MXINT8 0x80 = -2, beyond -max), NaN, +-Inf."""

BOUNDARY_KINDS = ("zero", "grid", "tie", "subnormal", "underflow", "overflow", "inf", "nan")
"""Kinds of decision points: zero; a representable magnitude (grid); the midpoint of two
neighbouring magnitudes (tie); the subnormal/normal boundary (smallest normal, largest
subnormal, the midpoint between them, smallest subnormal); below the smallest nonzero magnitude
(underflow); around the largest magnitude (overflow: max, the nearest-rounding threshold
max + ulp/2, max + ulp where directed roundings overflow, 2 (max + ulp)); Inf; NaN."""


def _element(fmt):
    fmt = get_format(fmt)
    if fmt.kind == "block":
        raise ValueError(f"fmt={fmt.name!r} is a block format; pass its element (e.g. {fmt.element.name!r}) or scale")
    if fmt.width > MAX_ENUMERATED_BITS:
        raise ValueError(f"fmt={fmt.name!r} has {fmt.width}-bit codes; strategies enumerate formats of at most 16 bits")
    return fmt


def code_class(code: int, fmt) -> str:
    """The class (one of :data:`CODE_CLASSES`) of ``code`` in element or scale format ``fmt``."""
    fmt = _element(fmt)
    value = ref_decode(code, fmt)
    if value.is_nan:
        return "nan"
    if value.is_inf:
        return "inf"
    if value.is_zero:
        return "negative_zero" if value.sign else "zero"
    if value.magnitude > fmt.max_normal:
        return "int_min"
    if value.magnitude == fmt.max_normal:
        return "max"
    if fmt.kind == "float" and value.magnitude < fmt.min_normal:
        return "subnormal"
    return "normal"


@cache
def _codes_by_class(fmt) -> dict[str, tuple[int, ...]]:
    table: dict[str, list[int]] = {}
    for code in range(1 << fmt.width):
        table.setdefault(code_class(code, fmt), []).append(code)
    return {name: tuple(table[name]) for name in CODE_CLASSES if name in table}


def element_codes(fmt, *, classes=None) -> st.SearchStrategy[int]:
    """Codes (ints in [0, 2^width)) of element or scale format ``fmt``: first a class, uniformly
    among ``classes`` (default: every class the format has), then a code of that class.

    Shrinks toward +0 (or the first class asked for) and toward small codes.
    """
    fmt = _element(fmt)
    table = _codes_by_class(fmt)
    if classes is None:
        classes = tuple(table)
    classes = tuple(classes)
    for name in classes:
        if name not in CODE_CLASSES:
            raise ValueError(f"classes: {name!r} is not allowed; expected some of {', '.join(CODE_CLASSES)}")
        if name not in table:
            raise ValueError(f"classes: format {fmt.name!r} has no {name!r} codes; it has {', '.join(table)}")
    if not classes:
        raise ValueError(f"classes must name at least one of {', '.join(table)}")
    return st.sampled_from(classes).flatmap(lambda name: st.sampled_from(table[name]))


def _ulp_of_max(fmt) -> Fraction:
    if fmt.kind == "int":
        return Fraction(1, 1 << fmt.frac_bits)
    return Fraction(2) ** (fmt.emax - fmt.mantissa_bits)


@cache
def decision_points(fmt) -> tuple[tuple[str, Fraction | None], ...]:
    """The decision points of element or scale format ``fmt`` as (kind, exact magnitude) pairs
    (magnitude None for Inf and NaN), simplest first. Kinds are :data:`BOUNDARY_KINDS`; a kind
    the format cannot take as input is left out (zero for E8M0; NaN for formats without NaN)."""
    fmt = _element(fmt)
    grid = finite_magnitudes(fmt)
    positive = [m for m in grid if m > 0]
    smallest, largest = positive[0], fmt.max_normal
    points: list[tuple[str, Fraction | None]] = []
    if fmt.has_zero if fmt.kind == "float" else True:
        points.append(("zero", Fraction(0)))
    points += [("grid", m) for m in positive]
    points += [("tie", (lo + hi) / 2) for lo, hi in zip(grid, grid[1:])]
    if fmt.kind == "float" and fmt.subnormals and fmt.min_normal > smallest:
        largest_subnormal = fmt.min_normal - fmt.min_subnormal
        points += [
            ("subnormal", fmt.min_normal),
            ("subnormal", largest_subnormal),
            ("subnormal", (largest_subnormal + fmt.min_normal) / 2),
            ("subnormal", smallest),
        ]
    points += [("underflow", smallest * f) for f in (Fraction(1, 2), Fraction(1, 4), Fraction(3, 4))]
    beyond = largest + _ulp_of_max(fmt)
    points += [("overflow", m) for m in (largest, (largest + beyond) / 2, beyond, 2 * beyond)]
    points.append(("inf", None))
    if fmt.kind == "float" and fmt.has_nan:
        points.append(("nan", None))
    return tuple(points)


class BoundaryValue(NamedTuple):
    """A drawn value with where it came from: ``kind`` and exact ``point`` of the decision point,
    ``offset`` in carrier ulps (toward larger magnitude when positive)."""

    value: object
    kind: str
    point: Fraction | None
    offset: int


def _carrier_code(carrier, kind: str, point: Fraction | None, offset: int, negative: bool) -> int:
    if kind == "nan":  # offset picks a payload: 0 the quiet NaN, >0 quiet with payload, <0 signalling
        code = carrier.quiet_nan_code | offset if offset >= 0 else carrier.inf_code | -offset
    elif kind == "inf":
        code = carrier.inf_code
    elif kind == "zero":  # +-offset: the carrier's smallest subnormals
        code = abs(offset)
    else:
        code = min(max(carrier.code_of(point) + offset, 0), carrier.inf_code)
    return code | (carrier.sign_bit if negative else 0)


def labelled_boundary_values(fmt, dtype="float32", *, kinds=None, ulps: int = 2) -> st.SearchStrategy[BoundaryValue]:
    """:func:`boundary_values`, each value with its decision point (a :class:`BoundaryValue`)."""
    fmt = _element(fmt)
    carrier = get_carrier(dtype)
    if not isinstance(ulps, int) or not 0 <= ulps <= 1 << 20:
        raise ValueError(f"ulps={ulps!r} is not allowed; expected an integer in [0, 2^20]")
    by_kind: dict[str, list] = {}
    for point in decision_points(fmt):
        by_kind.setdefault(point[0], []).append(point)
    available = tuple(by_kind)
    kinds = available if kinds is None else tuple(kinds)
    for kind in kinds:
        if kind not in available:
            raise ValueError(
                f"kinds: {kind!r} is not allowed for {fmt.name!r}; expected some of {', '.join(available)}"
            )
    if not kinds:
        raise ValueError(f"kinds must name at least one of {', '.join(available)}")
    points = st.sampled_from(kinds).flatmap(lambda kind: st.sampled_from(by_kind[kind]))
    signs = st.booleans() if fmt.signed else st.just(False)

    def build(args) -> BoundaryValue:
        (kind, point), offset, negative = args
        return BoundaryValue(
            carrier.from_code(_carrier_code(carrier, kind, point, offset, negative)), kind, point, offset
        )

    return st.tuples(points, st.integers(-ulps, ulps), signs).map(build)


def boundary_values(fmt, dtype="float32", *, kinds=None, ulps: int = 2):
    """Values of carrier ``dtype`` at a decision point of ``fmt`` or up to ``ulps`` carrier ulps
    either side of it, with either sign (positive only for unsigned formats). A kind is drawn
    first (uniformly), then a point of that kind, so overflow and subnormal points come up as
    often as the many ties.

    ``kinds``: a subset of :data:`BOUNDARY_KINDS` (default: all the format takes). Values come
    back as ``np.float32`` (float32 and bfloat16, see :mod:`mxsim.strategies._carriers`),
    ``np.float64`` or ``np.float16``. NaN draws carry payloads (quiet and signalling) and signs;
    an offset k from zero gives the carrier subnormal with code |k|. Shrinks toward the
    simplest point (+0, then the smallest grid values), offset 0, positive sign.
    """
    return labelled_boundary_values(fmt, dtype, kinds=kinds, ulps=ulps).map(lambda drawn: drawn.value)


def carrier_values(dtype="float32", *, allow_nan: bool = True) -> st.SearchStrategy:
    """Any value of carrier ``dtype``, from a uniformly drawn bit pattern (NaN payloads included
    unless ``allow_nan`` is False)."""
    carrier = get_carrier(dtype)
    codes = st.integers(0, (1 << carrier.width) - 1)
    if not allow_nan:
        codes = codes.filter(lambda c: (c & ~carrier.sign_bit) <= carrier.inf_code)
    return codes.map(carrier.from_code)
