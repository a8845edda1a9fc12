"""Structured stimulus of the dot suite kinds (contract section 3.3), drawn before anything random:

* **aimed roundings**: vectors whose output rounding (of the block Dot, or of the first fused step)
  lands on a chosen remainder: exact, below half, an exact tie, above half, the near-ties (guard
  and one sticky bit at the top sticky position, or at the datapath's lowest bit; guard clear and
  every sticky bit set), each in the output's normal range and in its subnormal range, both
  signs, and the near-ties in the output's three lowest subnormal binades (the per-band classes;
  the decision classes of :mod:`..coverage.output_rounding`). The value is a power of two
  2^t (one product or 2, 4, 8 equal ones, or C) plus the remainder bits, carried by C (fused
  steps, when C can hold them exactly) or by more power-of-two products; the block scales place t;
* **C distances** (fused steps): C (:func:`.stimulus.accumulator_values`) with a sparse or full
  significand (1, 1 + 2^-23, 1 + 2^-12, all ones) at every distance of :func:`c_distances` from the
  step's grid LSB, including below it (C's bits only
  below the kept window) and beyond the bypass;
* **zeros**: negative values below half the output's smallest subnormal (their result has
  magnitude zero: ``zero_result_sign``), products cancelling exactly, negative-zero products, a C
  cancelling the products, with C = +0 and -0;
* **Inf positions**: an element Inf at every element position of operand a, then of b (formats
  with Inf: E5M2), and Inf x 0 and Inf - Inf.

Every generator knows from the configuration alone which of its vectors it can build (a plan is
exact arithmetic on bit positions), so :func:`structured_count` and :func:`reachable_classes`
need no draws; a suite reaches each class of :func:`reachable_classes` at least
:data:`~..coverage.reach.MIN_CLASS_VECTORS` times by construction (generation checks it,
:func:`..coverage.reach.check_reachable_coverage`; tests/golden/test_dot_stimulus_and_classes.py checks the canonical
suites). Expected values still come only from the suite's ``compute``.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ...formats.element import negated_code
from ...ref.dot import product_lsb
from ...ref.encode import encode
from ...ref.exact import Exact, floor_log2
from ...ref.fused import integer_offset
from ...ref.output import output_format
from ...ref.terms import element_term
from ..coverage.reach import MIN_CLASS_VECTORS
from ..coverage.rounding import band_class
from ..values import decode, float_value, float_word, pack_word
from .patterns import accumulator_values

__all__ = ["MIN_CLASS_VECTORS", "PATTERNS", "c_distances", "reachable_classes", "structured_count", "structured_rows"]

VARIANTS = MIN_CLASS_VECTORS  # vectors per aimed (pattern, band): signs alternate, scales and positions vary
# pattern -> remainder bits below the ulp 2^u, as offsets from u ("low": the datapath's lowest bit)
# ("below": every bit from u-2 down to low: the near-tie below)
PATTERNS = {
    "exact": (),
    "below": (-2,),
    "tie": (-1,),
    "above": (-1, -2, -3),
    "near_top": (-1, -2),
    "near_bottom": (-1, "low"),
    "near_below": ("below",),
}
_PATTERN_CLASSES = {
    "exact": {"exact"},
    "below": {"below_half"},
    "tie": {"tie"},
    "above": {"above_half"},
    "near_top": {"above_half", "near_tie_top"},
    "near_bottom": {"above_half", "near_tie_bottom"},
    "near_below": {"below_half", "near_tie_below"},
}
_NEAR_TIES = ("near_top", "near_bottom", "near_below")
# where the aimed value 2^t lies: the normal range, the output's subnormal range just below its
# smallest normal (t = emin - 3 .. emin - 5), and its three lowest subnormal binades sub1 .. sub3
# (t = emin - m + j - 1: the per-band classes of mxsim.golden.coverage.rounding; near-ties only)
BANDS = ("normal", "subnormal", "sub1", "sub2", "sub3")
_LOW_BAND_PATTERNS = ("near_top", "near_bottom", "near_below")
_SCALE_SHIFTS = (0, 0, 5, 5, -5, -5, 9, 9)
# C's 23-bit fraction patterns, in turn over the C distances: a power of two, the last bit alone (C's
# only low bit at the bottom of its significand), a middle bit, all ones
_C_PATTERNS = (0, 1, 1 << 11, (1 << 23) - 1)  # X = XA + XB of the normal band's variants
ZERO_VECTORS = 16
UNDERFLOWS = MIN_CLASS_VECTORS  # of the zero vectors: negative values whose result has magnitude zero
FP32_ONE = 0x3F800000


# --- code tables -----------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _powers(fmt) -> dict[int, int]:
    """j -> the code of +2^j, for every positive power of two the format holds (elements or scales)."""
    out = {}
    for code in range(1 << fmt.width):
        v = decode(code, fmt)
        if v.is_finite and not v.sign and v.magnitude and v.magnitude == Fraction(2) ** floor_log2(v.magnitude):
            out.setdefault(floor_log2(v.magnitude), code)
    return out


@lru_cache(maxsize=None)
def _pair_for(element_a, element_b) -> dict[int, tuple[int, int]]:
    """s -> (code a, code b) of two positive powers of two whose product is 2^s."""
    pa, pb = _powers(element_a), _powers(element_b)
    out = {}
    for ja in sorted(pa):
        for jb in sorted(pb):
            out.setdefault(ja + jb, (pa[ja], pb[jb]))
    return out


def _product_shift(suite) -> int:
    """How many binades a fused product sits above its decoded value: f_a + f_b for integer
    elements read as plain codes (``int_elements="integer"``, MXDOTP's INT8: q, not q * 2^-6), else 0."""
    if not suite.fused:
        return 0
    return integer_offset(suite.fa.element, suite.acc) + integer_offset(suite.fb.element, suite.acc)


def _table(suite) -> dict[int, tuple[int, int]]:
    """s -> (code a, code b) of two positive powers of two whose product, as the datapath sees it
    (:func:`_product_shift`), is 2^s."""
    shift = _product_shift(suite)
    return {s + shift: pair for s, pair in _pair_for(suite.fa.element, suite.fb.element).items()}


def _late(acc) -> bool:
    """Whether C joins after the products (``sum_frac_bits`` set: CDNA3, contract 6.1)."""
    return acc.sum_frac_bits is not None


def _scale_pair(suite, x: int) -> tuple[int, int] | None:
    """Scale codes (a, b) of the powers of two 2^xa, 2^xb with xa + xb = x, or None."""
    if suite.unit_scales:
        return (encode(1, suite.fa.scale), encode(1, suite.fb.scale)) if x == 0 else None
    return _power_pair(suite.fa.scale, suite.fb.scale, x)


@lru_cache(maxsize=None)
def _power_pair(scale_a, scale_b, x: int) -> tuple[int, int] | None:
    """Codes (a, b) of the powers of two 2^xa of ``scale_a`` and 2^(x - xa) of ``scale_b``, xa the
    nearest to x / 2 (the lower of two equally near), or None."""
    pa, pb = _powers(scale_a), _powers(scale_b)
    for xa in sorted(pa, key=lambda v: (abs(2 * v - x), v)):
        if x - xa in pb:
            return pa[xa], pb[x - xa]
    return None


def _plans_land(suite) -> bool:
    """Whether the aimed vectors land in the classes they are built for: not where the products
    reach the steps in another order (``interleave_steps``), read other exponents
    (``convert_elements``), or C enters a promotion register instead of the first step
    (``promote_every``): there they are still made, as stimulus, but claim no class."""
    acc = suite.acc
    return not suite.fused or (acc.interleave_steps == 1 and acc.convert_elements is None
                               and acc.promote_every is None)


def _supported(suite) -> bool:
    fa, fb = suite.fa, suite.fb
    return not (fa.subblocks or fb.subblocks) and bool(_powers(fa.element)) and bool(_powers(fb.element))


def _step_products(suite) -> int:
    k = suite.fa.block_size
    return min(k, suite.acc.effective_step(k)) if suite.fused else k


# --- aimed roundings -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Plan:
    """One aimed vector: scale codes, positive product code pairs (the 2^t product first), C's
    magnitude (0: +0), the product offset inside step 0, and the classes it lands in."""

    scales: tuple[int, int]
    pairs: tuple[tuple[int, int], ...]
    c: Fraction
    offset: int
    sign: int
    classes: frozenset


def _c_holds(fmt, bits: list[int]) -> bool:
    """Whether sum(2^q for q in bits) is a value of the C format ``fmt`` (fp32: 24 significant
    bits, exponents -149 to 127; bf16 and fp16 likewise with their widths)."""
    hi, lo, m = max(bits), min(bits), fmt.mantissa_bits
    return lo >= fmt.emin - m and hi <= fmt.emax and (hi < fmt.emin or hi - lo <= m)


def _c_exact(suite, c: Fraction) -> bool:
    """Whether the suite's C format holds the magnitude ``c`` exactly."""
    return float_value(float_word(Exact(0, c), suite.c_format), suite.c_format).magnitude == c


def _plan(suite, pattern: str, band: str, variant: int) -> _Plan | None:
    """The plan of one aimed vector (module docstring), or None when the configuration cannot
    hold it (then the suite does not claim its classes from it). Routes, in order (fused steps
    have C): C carries the remainder (the 2^t product near 1, so that C's LSB can lie below the
    grid); products carry it (the 2^t value the largest product, or 2, 4 or 8 copies of it, so
    that the remainder bits stay at or above the grid); C carries 2^t and products the remainder
    (a subnormal 2^t whose guard bit lies below fp32's smallest subnormal)."""
    if suite.acc.mode == "fp32_sequential" or not _supported(suite):
        return None
    routes = [("c", 0)] + [("products", copies) for copies in range(4)] + [("c_top", 0)]
    for route, copies in routes if suite.fused else [("products", copies) for copies in range(4)]:
        plan = _plan_route(suite, route, copies, pattern, band, variant)
        if plan is not None:
            return plan
    return None


def _plan_route(suite, route: str, copies: int, pattern: str, band: str, variant: int) -> _Plan | None:
    acc, fa, fb = suite.acc, suite.fa, suite.fb
    out = output_format(acc)
    pa, pb = _powers(fa.element), _powers(fb.element)
    table = _table(suite)
    shift = _product_shift(suite)
    subnormal = band != "normal"
    low_band = int(band[3:]) if band.startswith("sub") and band != "subnormal" else None
    aim = out.emin - out.mantissa_bits + low_band - 1 if low_band else out.emin - 3 - variant % 3  # subnormal t
    if route == "c_top" and suite.unit_scales:  # scales of 1 (x = 0): t puts the guard bit on the largest product
        x = 0
        t = (aim + (0 if low_band else 1)) if subnormal else max(table) + out.mantissa_bits + 1 - variant % 3
        top, top_e = (), None
    elif route == "c_top":  # C = 2^t; x puts the guard bit on the largest product
        t = (aim + (0 if low_band else 1)) if subnormal else 3 * (variant % 3)
        top, top_e = (), None
        x = max(t, out.emin) - out.mantissa_bits - 1 - max(table)
    else:
        ja, jb = (min(pa, key=abs), min(pb, key=abs)) if route == "c" else (max(pa), max(pb))
        ja -= variant // 4
        if ja not in pa:
            return None
        top = ((pa[ja], pb[jb]),) * (1 << copies)
        top_e = element_term(pa[ja], fa.element).exponent + element_term(pb[jb], fb.element).exponent + shift
        if subnormal:
            x = aim - (ja + jb + shift) - copies
        else:
            x = 0 if suite.unit_scales else _SCALE_SHIFTS[variant]
        t = ja + jb + shift + x + copies
    if (t < out.emin) != subnormal or not -149 <= t <= 127 or t > out.emax:
        return None
    scales = _scale_pair(suite, x)
    if scales is None:
        return None
    u = max(t, out.emin) - out.mantissa_bits
    plan = _assemble(suite, route, pattern, u, t, x, top, top_e, table)
    if plan is None:
        return None
    pairs, c = plan
    free = _step_products(suite) - len(pairs)
    if free < 0:
        return None
    sign = variant & 1
    classes = set(_PATTERN_CLASSES[pattern])
    if t < out.emin and pattern in _NEAR_TIES:
        classes.add("subnormal_near_tie")
    band_index = t - (out.emin - out.mantissa_bits) + 1  # the subnormal binade [2^(j-1) s, 2^j s) of 2^t
    where = "normal" if t >= out.emin else f"sub{band_index}" if 1 <= band_index <= 3 else None
    if where and pattern in ("near_top", "near_bottom"):
        classes.add(band_class(pattern[5:], where))
    if pattern != "exact":
        classes.add("increment" if _increments(acc, pattern, sign, t < out.emin) else "truncate")
    return _Plan(scales, pairs, c, variant % (free + 1), sign, frozenset(classes))


def _assemble(suite, route, pattern, u, t, x, top, top_e, table):
    """(product pairs, C's magnitude) of an aimed value 2^t + remainder (pattern bits below the ulp
    2^u), or None when the datapath cannot hold it exactly on its grid."""
    acc = suite.acc
    if pattern == "exact":  # 2^t alone: the products carry it
        return (top, Fraction(0)) if route == "products" else None
    e_c = None  # a zero C
    if route == "c":
        e_c = max(u - 1 if pattern in ("tie", "above", "near_top", "near_bottom") else u - 2, -126)
    elif route == "c_top":
        e_c = max(t, -126)
    if not suite.fused:
        low = (product_lsb(suite.fa, suite.fb) if acc.mode == "exact" else top_e - acc.frac_bits) + x
    elif acc.anchor == "fixed":
        low = x - acc.frac_bits if e_c is None else min(x - acc.frac_bits, e_c - 23)
        if e_c is not None and acc.bypass is not None and (e_c - 23) - (x - acc.frac_bits) > acc.bypass:
            return None
    elif _late(acc):
        # C joins after the products (ref.fused._late_join): E = the largest product exponent (the
        # 2^t products, or the remainder's top bit on route c_top), E' = max(E, e_C); the adder's
        # lowest bit is 2^(E' - sum_frac_bits). The stimulus never pairs a zero element with a
        # nonzero one, so zero_exponent's reads (at most 2 * zero_exponent) never raise E.
        e_products = top_e + x if top else u - (2 if pattern in ("below", "near_below") else 1)
        joint = max(e_products, acc.effective_c_zero_exponent if e_c is None else e_c)
        low = joint - acc.sum_frac_bits
    else:
        top_term = [] if not top else [x if acc.step_terms == "block" else top_e + x]
        low = max(top_term + [acc.effective_c_zero_exponent if e_c is None else e_c]) - acc.frac_bits
    if low > u - 2 and pattern in _NEAR_TIES:
        return None  # no sticky bit below the guard
    bits = []
    for off in PATTERNS[pattern]:
        bits += [low] if off == "low" else list(range(u - 2, low - 1, -1)) if off == "below" else [u + off]
    if min(bits) < low:
        return None
    if suite.fused and _late(acc) and not _late_keeps(acc, route, bits, e_products, joint, e_c):
        return None
    if route == "c":
        if not _c_holds(suite.c_format, bits):
            return None
        return top, sum((Fraction(2) ** q for q in bits), Fraction(0))
    if route == "c_top" and not _c_holds(suite.c_format, [t]):
        return None
    if any(q - x not in table for q in bits):
        return None
    if acc.mode == "aligned" and not suite.fused and acc.width is not None and t + 2 - low > acc.width - 1:
        return None
    c = Fraction(2) ** t if route == "c_top" else Fraction(0)
    return top + tuple(table[q - x] for q in bits), c


def _late_keeps(acc, route: str, bits: list[int], e_products: int, joint: int, e_c: int | None) -> bool:
    """Whether a late C join (:func:`_late`) keeps every remainder bit: bits carried by products
    lie on each partial sum's grid and on 2^(E - F) (the cut of the partial sums); bits carried by C
    lie on C's grid 2^(E' - c_frac_bits), and C is not dropped (e_C >= E' - c_drop)."""
    if route == "c":
        dropped = acc.c_drop is not None and e_c < joint - acc.c_drop
        return not dropped and min(bits) >= joint - acc.c_frac_bits
    return min(bits) >= e_products - acc.frac_bits


def _increments(acc, pattern: str, sign: int, subnormal: bool) -> bool:
    """Whether the output rounding of an aimed value increases its magnitude: the kept significand
    is 1.0...0 (even), so a tie goes down under rne; ftz flushes a subnormal result to zero."""
    if subnormal and acc.ftz:
        return False
    mode = acc.output_rounding
    if mode == "rtz":
        return False
    if mode in ("rup", "rdn"):
        return sign == (0 if mode == "rup" else 1)
    above = pattern in ("above", "near_top", "near_bottom")  # below and near_below: below half
    return above or (mode == "rna" and pattern == "tie")


def _memo(suite, name: str, make):
    """A per-suite cached value (suites are mutable dataclasses: no lru_cache)."""
    cache = suite.__dict__.setdefault("_structured_cache", {})
    if name not in cache:
        cache[name] = make()
    return cache[name]


def _plans(suite) -> tuple[_Plan, ...]:
    return _memo(suite, "plans", lambda: _make_plans(suite))


def _make_plans(suite) -> tuple[_Plan, ...]:
    """Every feasible aimed plan of a suite: for each (pattern, band), its VARIANTS plans when all
    are feasible (else none)."""
    plans = []
    for band in BANDS:
        for pattern in PATTERNS if band in ("normal", "subnormal") else _LOW_BAND_PATTERNS:
            group = [_plan(suite, pattern, band, v) for v in range(VARIANTS)]
            if all(p is not None for p in group):
                plans += group
    return tuple(plans)


# --- C distances ---------------------------------------------------------------------------------------
def _grid_bits(acc) -> int:
    """The step grid's distance below the anchor: ``sum_frac_bits`` when C joins late (the sum is
    cut to 2^(E' - sum_frac_bits)), else ``frac_bits``."""
    return acc.sum_frac_bits if _late(acc) else acc.frac_bits


def c_distances(acc) -> list[int]:
    """Distances d of C's leading bit 2^(grid + d) from a fused step's grid LSB 2^grid: far and
    just below it (C's bits only below the kept window), around it, around F (C at the products)
    and C's 24 bits above, around the bypass threshold (anchor='fixed') and around C's drop
    threshold (a late C join). F: the bits of the grid below the anchor (:func:`_grid_bits`)."""
    f = _grid_bits(acc)
    out = [-60, -48, -40, -32, -25, -24, -23, -12, -2, -1, 0, 1, 2, f - 24, f - 23, f - 1, f, f + 1, f + 24]
    if acc.anchor == "fixed" and acc.bypass is not None:
        out += [acc.bypass + 22, acc.bypass + 23, acc.bypass + 24, acc.bypass + 25]
    if _late(acc) and acc.c_drop is not None:  # around C's drop threshold e_C = E' - c_drop
        out += [f - acc.c_drop - 1, f - acc.c_drop, f - acc.c_drop + 1]
    return list(dict.fromkeys(out))


def _distance_plans(suite) -> tuple[tuple[int, int, tuple], ...]:
    """(distance, C (Exact), (scales, top pair)) of every C-distance vector of a fused suite."""
    return _memo(suite, "distances", lambda: _make_distance_plans(suite))


def _make_distance_plans(suite) -> tuple[tuple[int, int, tuple], ...]:
    if not suite.fused or not _supported(suite):
        return ()
    acc = suite.acc
    pa, pb = _powers(suite.fa.element), _powers(suite.fb.element)
    ja, jb = max(pa) // 2, max(pb) // 2
    scales = _scale_pair(suite, 0)
    if scales is None:
        return ()
    top_e = element_term(pa[ja], suite.fa.element).exponent + element_term(pb[jb], suite.fb.element).exponent
    anchor_e = 0 if acc.step_terms == "block" else top_e + _product_shift(suite)
    grid = (0 if acc.anchor == "fixed" else anchor_e) - _grid_bits(acc)
    plans = []
    for i, d in enumerate(c_distances(acc)):
        # C's leading bit 2^(grid + d): its last bit d - 23 from the grid (stimulus.accumulator_values)
        values = accumulator_values(grid, [d - 23], [_C_PATTERNS[i % len(_C_PATTERNS)]])
        for magnitude in values:  # none outside fp32's normal range
            c = _in_c_format(suite, Exact((i >> 1) & 1, magnitude))
            if c is not None:
                plans.append((d, c, (scales, (pa[ja], pb[jb]))))
    return tuple(plans)


def _in_c_format(suite, c: Exact) -> Exact | None:
    """C cut toward zero to the suite's C format (fp32: C itself), or None when that moves its
    leading bit (C outside the format's normal range): the vector keeps its distance."""
    fmt = suite.c_format
    cut = float_value(float_word(c, fmt), fmt)
    return cut if cut.magnitude and floor_log2(cut.magnitude) == floor_log2(c.magnitude) else None


# --- counts and claims ------------------------------------------------------------------------------------
def _zero_rows_available(suite) -> bool:
    return _supported(suite) and _scale_pair(suite, 0) is not None


def _inf_sides(suite) -> list[str]:
    return [side for side, fmt in (("a", suite.fa), ("b", suite.fb)) if fmt.element.kind == "float"
            and any(decode(c, fmt.element).is_inf for c in range(1 << fmt.element.width))]


def structured_count(suite) -> int:
    """How many vectors :func:`structured_rows` yields (from the configuration alone)."""
    k = suite.fa.block_size
    count = len(_plans(suite)) + len(_distance_plans(suite))
    count += ZERO_VECTORS if _zero_rows_available(suite) else 0
    return count + sum(k + 2 for _ in _inf_sides(suite))


def reachable_classes(suite) -> frozenset[str]:
    """The classes the structured stimulus reaches at least MIN_CLASS_VECTORS times by
    construction: the aimed roundings' classes, c_below_window (C-distance vectors below the
    grid), zero_result_sign (negative underflows, except under rdn), inf_a / inf_b (Inf positions)."""
    counts = Counter()
    acc = suite.acc
    if _plans_land(suite):
        counts.update(name for plan in _plans(suite) for name in plan.classes)
        counts["c_below_window"] = sum(1 for d, _, _ in _distance_plans(suite) if d < 0)
        if _zero_rows_available(suite) and _underflow_plans(suite) and (acc.output_rounding != "rdn" or acc.ftz):
            counts["zero_result_sign"] = UNDERFLOWS
    for side in _inf_sides(suite):
        counts[f"inf_{side}"] = suite.fa.block_size
    return frozenset(name for name, n in counts.items() if n >= MIN_CLASS_VECTORS)


# --- rows ---------------------------------------------------------------------------------------------------
def _vector(suite, codes_a: list[int], codes_b: list[int], scales: tuple[int, int], c: Exact | None) -> dict:
    """One vector: block 0 holds the codes (padded with +0), the other blocks of a DotGeneral are
    zeros with the same scales; tensor scales 1; C (when the suite has one) ``c`` in the suite's C
    format (:func:`..values.float_word`: exact where it holds it), or +0."""
    blocks = []
    k = suite.fa.block_size
    for j in range(suite.vector_blocks):
        row = {}
        for side, fmt, codes, scale in (("a", suite.fa, codes_a, scales[0]), ("b", suite.fb, codes_b, scales[1])):
            block = codes[j * k : (j + 1) * k]
            block = block + [0] * (k - len(block))
            row[f"{side}_scale"] = scale
            row[f"{side}_elems"] = pack_word(block, fmt.element.width)
            if fmt.tensor_scale is not None and suite.tensor_scales:
                row[f"{side}_tensor_scale"] = FP32_ONE
        blocks.append(row)
    vector = suite._join(blocks)
    if suite.has_c:
        vector["c"] = 0 if c is None else float_word(c, suite.c_format)
    return vector


def _signed(code: int, element, sign: int) -> int:
    return negated_code(code, element) if sign and decode(code, element).magnitude else code


def _aimed(suite, plan: _Plan) -> dict:
    ea = suite.fa.element
    codes_a, codes_b = [0] * plan.offset, [0] * plan.offset
    for ca, cb in plan.pairs:
        codes_a.append(_signed(ca, ea, plan.sign))
        codes_b.append(cb)
    c = Exact(plan.sign, plan.c) if plan.c else None  # the C format holds it (_assemble)
    return _vector(suite, codes_a, codes_b, plan.scales, c)


def _underflow_plans(suite) -> tuple:
    """(scale codes, (code a, code b)) of the UNDERFLOWS vectors: one product of magnitude 2^q, q a
    quarter of the output's smallest subnormal (2^(emin - m - 2)), on the datapath's grid, made
    negative in the rows (its result has magnitude zero except under rdn); () when the
    configuration cannot hold it."""
    return _memo(suite, "underflows", lambda: _make_underflow_plans(suite))


def _make_underflow_plans(suite) -> tuple:
    acc = suite.acc
    if acc.mode == "fp32_sequential" or not _supported(suite):
        return ()
    out = output_format(acc)
    q = out.emin - out.mantissa_bits - 2
    table = _table(suite)
    plans = []
    for s in sorted(table, reverse=True)[:UNDERFLOWS]:
        x, (ca, cb) = q - s, table[s]
        scales = _scale_pair(suite, x)
        e = element_term(ca, suite.fa.element).exponent + element_term(cb, suite.fb.element).exponent
        e += _product_shift(suite)
        if not suite.fused:
            low = (product_lsb(suite.fa, suite.fb) if acc.mode == "exact" else e - acc.frac_bits) + x
        elif acc.anchor == "fixed":
            low = x - acc.frac_bits
            if acc.bypass is not None and (acc.effective_c_zero_exponent - 23) - low > acc.bypass:
                continue
        elif _late(acc):  # the product alone is exact on its partial sum's grid; S is cut to 2^(E' - sum_frac_bits)
            low = max(e + x, acc.effective_c_zero_exponent) - acc.sum_frac_bits
        else:
            low = max(x if acc.step_terms == "block" else e + x, acc.effective_c_zero_exponent) - acc.frac_bits
        if scales is not None and q >= low:
            plans.append((scales, (ca, cb)))
    return tuple(plans) if len(plans) == UNDERFLOWS else ()


def _zeros(suite, rng: random.Random, index: int) -> dict:
    """Zero results: UNDERFLOWS negative products that round to magnitude zero (or, where the
    configuration cannot hold them, products that cancel), then products that cancel (x, -x),
    negative-zero elements, and C cancelling the product (fused, where the C format holds it) or
    x, y, -x, -y; C = +0 for even indices, -0 for odd ones."""
    ea, eb = suite.fa.element, suite.fb.element
    pa, pb = _powers(ea), _powers(eb)
    scales = _scale_pair(suite, 0)
    c = Exact(index & 1, Fraction(0))
    top_a, top_b = pa[rng.choice(sorted(pa))], pb[rng.choice(sorted(pb))]
    underflows = _underflow_plans(suite)
    if index < UNDERFLOWS and underflows:
        tiny_scales, (ca, cb) = underflows[index]
        return _vector(suite, [0] * (index % 3) + [negated_code(ca, ea)], [0] * (index % 3) + [cb], tiny_scales, c)
    kind = (index - UNDERFLOWS) // 2 if index >= UNDERFLOWS else 0
    if kind == 1:  # zero elements with negative zeros (a -0 element where the format has one)
        neg_zero = ea.sign_mask if decode(ea.sign_mask, ea).is_zero else 0
        return _vector(suite, [neg_zero, 0, neg_zero], [top_b, top_b, 0], scales, c)
    value = decode(top_a, ea).magnitude * decode(top_b, eb).magnitude * Fraction(2) ** _product_shift(suite)
    if kind >= 2 and suite.fused and _c_exact(suite, value):  # C cancels the product exactly
        return _vector(suite, [top_a], [top_b], scales, Exact(1, value))
    if kind >= 2:  # x, y, -x, -y
        other = pa[rng.choice(sorted(pa))]
        return _vector(suite, [top_a, other, negated_code(top_a, ea), negated_code(other, ea)], [top_b] * 4, scales, c)
    return _vector(suite, [top_a, negated_code(top_a, ea)], [top_b, top_b], scales, c)  # x, -x


def _finite_nonzero(element) -> list[int]:
    return [c for c in range(1 << element.width) if decode(c, element).is_finite and decode(c, element).magnitude]


def _inf_rows(suite, rng: random.Random, side: str):
    """An Inf at every element position of operand ``side`` (alternating signs), then Inf x 0 and
    Inf - Inf; the other elements finite nonzero, unit-range scales."""
    k, n = suite.fa.block_size, suite.vector_blocks
    fmt = suite.fa if side == "a" else suite.fb
    inf = next(c for c in range(1 << fmt.element.width) if decode(c, fmt.element).is_inf)
    scales = _scale_pair(suite, 0) or (encode(1, suite.fa.scale), encode(1, suite.fb.scale))
    finite_a, finite_b = _finite_nonzero(suite.fa.element), _finite_nonzero(suite.fb.element)
    for i in range(k + 2):
        codes = {"a": [rng.choice(finite_a) for _ in range(n * k)], "b": [rng.choice(finite_b) for _ in range(n * k)]}
        position = (i % n) * k + i if i < k else rng.randrange(n * k)
        codes[side][position] = _signed(inf, fmt.element, i & 1)
        if i == k:  # Inf x 0
            other = "b" if side == "a" else "a"
            codes[other][position] = 0
        elif i == k + 1:  # +Inf and -Inf
            codes[side][(position + 1) % (n * k)] = _signed(inf, fmt.element, 1 - (i & 1))
        yield _vector(suite, codes["a"], codes["b"], scales, None)


def structured_rows(suite, rng: random.Random):
    """The structured vectors of a dot suite in order (aimed roundings, C distances, zeros, Inf
    positions), each as (inputs, "directed"); C included when the suite has one."""
    for plan in _plans(suite):
        yield _aimed(suite, plan), "directed"
    for _, c, (scales, (ca, cb)) in _distance_plans(suite):
        yield _vector(suite, [ca], [cb], scales, c), "directed"
    if _zero_rows_available(suite):
        for index in range(ZERO_VECTORS):
            yield _zeros(suite, rng, index), "directed"
    for side in _inf_sides(suite):
        yield from ((row, "directed") for row in _inf_rows(suite, rng, side))
