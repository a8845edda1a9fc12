"""Directed dot vectors for the bug classes the RTL mutation campaign (``rtl/mutate.py``) found the
structured stimulus (:mod:`.dot`) missing: each function builds the general class, not one
vector, from the configuration alone (no random draws, so the rest of a suite is unchanged).

* :func:`_nan_scale_rows`: a NaN scale on either operand with every element finite (and C = 1.0).
* :func:`_overflow_rows`: results in the binades just below and just above the output's largest
  finite binade (2^emax and 2^(emax+1), significands 1 and 1.5, both signs): the overflow test at
  its exact boundary (docs/numerics.md section 4, the output rounding; IEEE overflow gives +-Inf).
* :func:`_subnormal_tie_rows`: one product 1.f (every significand of the element's [1, 2) binade,
  times 1) scaled to 1.f, 2.f and 4.f times the output's smallest subnormal: exact, below-half, tie
  and above-half cases of the output rounding in the subnormal band (ties of both parities).
* :func:`_carry_rows`: p + 1 and p + 2 products 2^top, 2^(top-1), ... (p the output's significand
  bits): a run of ones one bit longer than the significand, a tie whose rounding carries out of
  all ones into the next binade, and the same with a sticky bit.
* :func:`_c_rows` (suites with an accumulator input C, in its C format of m fraction bits: fp32 23):
  C all ones (2 - 2^-m) * 2^e plus a product of half its ulp (a tie carrying out of m + 1 ones),
  and products forming an exact tie (2^t + 2^(t-24)) with C = +- the C format's smallest
  subnormal (fp32: 2^-149), far below the sum's grid: only its sticky bit decides the rounding.

Units: exponents are powers of two of values; X = XA + XB is the exponent of the two scales.
"""

from __future__ import annotations

from fractions import Fraction

from ...ref.exact import Exact
from ...ref.output import output_format
from ..values import decode
from .dot import (
    _finite_nonzero, _memo, _pair_for, _powers, _scale_pair, _signed, _supported, _vector,
)

__all__ = ["mutation_rows", "mutation_count"]

_NAN_SCALE_ROWS = 2  # per operand


def _nan_scale_rows(suite) -> list[dict]:
    if suite.unit_scales:
        return []
    rows = []
    finite_a, finite_b = _finite_nonzero(suite.fa.element), _finite_nonzero(suite.fb.element)
    one = _scale_pair(suite, 0)
    if one is None:
        return []
    k = suite.fa.block_size * suite.vector_blocks
    for side, fmt in (("a", suite.fa), ("b", suite.fb)):
        nan = next((c for c in range(1 << fmt.scale.width) if decode(c, fmt.scale).is_nan), None)
        if nan is None:
            continue
        for j in range(_NAN_SCALE_ROWS):
            codes_a = [finite_a[(7 * i + j) % len(finite_a)] for i in range(k)]
            codes_b = [finite_b[(5 * i + 3 * j) % len(finite_b)] for i in range(k)]
            scales = (nan, one[1]) if side == "a" else (one[0], nan)
            rows.append(_vector(suite, codes_a, codes_b, scales, Exact(0, Fraction(1))))
    return rows


def _overflow_rows(suite) -> list[dict]:
    out = output_format(suite.acc)
    table = _pair_for(suite.fa.element, suite.fb.element)
    pairs = [s for s in sorted(table, reverse=True) if s - 1 in table]
    if not pairs:
        return []
    s = pairs[0]
    rows = []
    for target in (out.emax, out.emax + 1):
        scales = _scale_pair(suite, target - s)
        if scales is None:
            continue
        for shape in ((s,), (s, s - 1)):
            for sign in (0, 1):
                codes_a = [_signed(table[t][0], suite.fa.element, sign) for t in shape]
                codes_b = [table[t][1] for t in shape]
                rows.append(_vector(suite, codes_a, codes_b, scales, None))
    return rows


def _binade_codes(element) -> list[int]:
    """The positive codes of the element's values in [1, 2) (at most 8, evenly spread: INT8 has 64)."""
    codes = [c for c in _finite_nonzero(element) if not decode(c, element).sign
             and 1 <= decode(c, element).magnitude < 2]
    return codes[:: -(-len(codes) // 8)] if codes else []


def _subnormal_tie_rows(suite) -> list[dict]:
    out = output_format(suite.acc)
    if not out.subnormals:
        return []
    one_b = _powers(suite.fb.element).get(0)
    if one_b is None:
        return []
    lowest = out.emin - out.mantissa_bits  # exponent of the smallest subnormal
    rows = []
    for i, ca in enumerate(_binade_codes(suite.fa.element)):
        for shift in (0, 1, 2):
            scales = _scale_pair(suite, lowest + shift)
            if scales is not None:
                rows.append(_vector(suite, [_signed(ca, suite.fa.element, (i + shift) & 1)], [one_b], scales, None))
    return rows


def _carry_rows(suite) -> list[dict]:
    out = output_format(suite.acc)
    p = out.mantissa_bits + 1
    table = _pair_for(suite.fa.element, suite.fb.element)
    k = suite.fa.block_size
    rows = []
    for ones in (p + 1, p + 2):
        if ones > k:
            continue
        top = next((t for t in sorted(table, reverse=True) if all(t - j in table for j in range(ones))), None)
        if top is None:
            continue
        scales = _scale_pair(suite, 0)
        if scales is None:
            continue
        for sign in (0, 1):
            exps = [top - j for j in range(ones)]
            rows.append(_vector(suite, [_signed(table[t][0], suite.fa.element, sign) for t in exps],
                                [table[t][1] for t in exps], scales, None))
    return rows


def _c_rows(suite) -> list[dict]:
    if not suite.has_c:
        return []
    table = _pair_for(suite.fa.element, suite.fb.element)
    scales = _scale_pair(suite, 0)
    if scales is None:
        return []
    rows = []
    fmt = suite.c_format
    m = fmt.mantissa_bits
    # C all ones plus half its ulp: s = e - m - 1, C = (2 - 2^-m) * 2^e, for the three largest products
    for s in sorted(table, reverse=True)[:3]:
        e = s + m + 1
        if fmt.emin <= e <= fmt.emax:
            for sign in (0, 1):
                c = Exact(sign, (2 - Fraction(1, 1 << m)) * Fraction(2) ** e)
                rows.append(_vector(suite, [_signed(table[s][0], suite.fa.element, sign)], [table[s][1]], scales, c))
    # an exact tie of the products (2^t + 2^(t-24)) and C = +- the smallest subnormal far below: its sticky bit decides
    tie = next((t for t in sorted(table, reverse=True) if t - 24 in table), None)
    if tie is not None:
        for sign in (0, 1):
            for c_sign in (0, 1):
                codes_a = [_signed(table[t][0], suite.fa.element, sign) for t in (tie, tie - 24)]
                rows.append(_vector(suite, codes_a, [table[t][1] for t in (tie, tie - 24)], scales,
                                    Exact(c_sign, Fraction(2) ** (fmt.emin - m))))
    return rows


def _rows(suite) -> tuple[dict, ...]:
    """The vectors of every function above, made once per suite (they draw nothing)."""
    return _memo(suite, "mutation_rows", lambda: _make_rows(suite))


def _make_rows(suite) -> tuple[dict, ...]:
    if not _supported(suite):
        return ()
    return tuple(_nan_scale_rows(suite) + _overflow_rows(suite) + _subnormal_tie_rows(suite) + _carry_rows(suite)
                 + _c_rows(suite))


def mutation_rows(suite):
    """The vectors of every function above, each as (inputs, "directed"): a fresh dict each time."""
    for row in _rows(suite):
        yield dict(row), "directed"


def mutation_count(suite) -> int:
    """How many vectors :func:`mutation_rows` yields."""
    return len(_rows(suite))
