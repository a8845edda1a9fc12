"""``compute_batch`` of fused dot and dotgeneral suites (``accumulate="fused"``; docs/numerics.md
section 4.1): the output codes from the fast path (:func:`mxsim.fast.fused.dot_general_steps`,
every step's D kept); the classes from one :class:`..coverage.rounding_record.FusedStepRecord` of every
step, classed by the same classifier as the reference's steps, and the block pairs' element
classes (:func:`element_flags`) with NumPy.

Per step the record needs what the reference's :class:`~mxsim.ref.fused.FusedStep` holds; here
it is rebuilt exactly with int64 dyadic integers (value n * 2^x) from per-code tables of the
reference's terms (:func:`mxsim.ref.terms.element_term`, :func:`mxsim.ref.fused.scale_parts`):

* the step's C: step 0's is the input ``c``, step j's the fp32 word of step j-1's D;
* special: a NaN or Inf element or a NaN scale in the step, or a non-finite C;
* P, the exact sum of the step's terms (product terms, or block terms of ``term_size`` products),
  on the grid of the smallest term exponent; the cut sum on the step's grid 2^g (``anchor="fixed"``:
  XA + XB - F of the step's first block; ``"max"``: max(e_C, counting term exponents) - F), each
  term cut by ``shift_rounding``; whether they differ, whether P is 0; the bypass (or C as the
  anchor with bits cut);
* whether |C + P| <= 2^-8 |C|: decided from the top exponents where C and P are two or more
  binades apart or of one sign, exactly with Python integers for the rest (few rows);
* the exact total before the output rounding (none for a special, bypassed or passed step): the
  cut sums times 2^g, with C cut too (``"max"``) or joined exactly (``"fixed"``; Python integers
  where int64 cannot hold the join).

Rows the int64 arithmetic cannot take are recomputed by the reference (``compute``, vector by
vector): a term or sum that would pass 2^62 (e.g. a step over blocks whose scales are far apart,
or FP8 E5M2 block terms). So is every row of a batch with a vector the reference refuses (its
error is then the reference's).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ...fast.dot import Operand
from ...fast.output import FINITE, NAN, NEG_INF, POS_INF, float32_parts
from ...fast.encode import floor_log2_int64
from ...fast.fused import dot_general_steps
from ...fast.output import fp32_words
from ...formats import get_format
from ...ref.exact import Exact, dyadic
from ...ref.fused import scale_parts
from ...ref.output import storage_format
from ...ref.terms import element_term, frac_bits
from ..coverage.accumulator import C_FRACTION_BITS, cancels
from ..coverage.rounding_record import FusedStepRecord, OutputCodes, OutputRoundings
from .batch import add_operand_classes, bit, code_table, compute_each, dyadic_differ, pack_items

__all__ = ["compute_fused_batch", "element_flags", "exact_outputs", "models"]

_FP32_EMIN = -126  # e_C of a subnormal C
_LIMIT = 61  # |every intermediate| < 2^_LIMIT + a few terms: far from int64's 2^63


@dataclass(frozen=True)
class _ElementTable:
    """Every code of an element format as the reference's term: (-1)^negative * significand *
    2^(exponent - f); ``special``: NaN or Inf (significand 0)."""

    negative: np.ndarray
    significand: np.ndarray
    exponent: np.ndarray
    special: np.ndarray


@lru_cache(maxsize=None)
def _element_table(element) -> _ElementTable:
    terms = [element_term(code, element) for code in range(1 << element.width)]
    return _ElementTable(
        np.array([t.sign for t in terms], dtype=bool),
        np.array([t.significand for t in terms], dtype=np.int64),
        np.array([t.exponent for t in terms], dtype=np.int64),
        np.array([t.kind != "finite" for t in terms], dtype=bool),
    )


@dataclass(frozen=True)
class _ScaleTable:
    """Every code of a scale format as the fused adder sees it (:func:`mxsim.ref.fused.scale_parts`):
    value = significand * 2^(shift + exponent), significand an integer; ``nan``."""

    nan: np.ndarray
    significand: np.ndarray
    shift: np.ndarray
    exponent: np.ndarray


@lru_cache(maxsize=None)
def _scale_table(scale) -> _ScaleTable:
    parts = [scale_parts(code, scale) for code in range(1 << scale.width)]
    return _ScaleTable(
        np.array([p.nan for p in parts], dtype=bool),
        np.array([p.significand.numerator for p in parts], dtype=np.int64),
        np.array([1 - p.significand.denominator.bit_length() for p in parts], dtype=np.int64),
        np.array([p.exponent for p in parts], dtype=np.int64),
    )


def output_parts(codes: np.ndarray, acc):
    """Output codes (the accumulator's storage format) as (negative, significand, exponent,
    special) of :func:`mxsim.fast.output.float32_parts`: a finite value is exactly (-1)^negative *
    significand * 2^exponent (every output value is an fp32 value, :func:`mxsim.fast.output.fp32_words`)."""
    return float32_parts(fp32_words(np.asarray(codes), acc).astype(np.uint32).view(np.float32))


def exact_outputs(codes: np.ndarray, acc) -> list[Exact]:
    """Output codes as the reference decoder's values (:func:`mxsim.golden.values.decode` in the
    storage format: the sign bit the code's top bit, NaN and Inf with magnitude 0), all at once."""
    codes = np.asarray(codes).astype(np.int64)
    storage = storage_format(acc)
    _, significand, exponent, special = output_parts(codes, acc)
    kinds = {FINITE: "finite", NAN: "nan", POS_INF: "inf", NEG_INF: "inf"}
    out = []
    for code, m, e, kind in zip(codes.tolist(), significand.tolist(), exponent.tolist(), special.tolist()):
        sign = int(code & storage.sign_mask != 0)
        magnitude = dyadic(m, e) if kind == FINITE else Fraction(0)
        out.append(Exact.trusted(sign, magnitude, kinds[kind]))
    return out


def element_flags(fmt_a, fmt_b, scales_a, codes_a, scales_b, codes_b) -> np.ndarray:
    """The classes of :func:`..coverage.accumulator.element_classes` of block pairs as flag words,
    one per pair: ``scales_*`` (P,) scale codes, ``codes_*`` (P, k) element codes."""
    ta, tb = code_table(fmt_a.element), code_table(fmt_b.element)
    flags = np.zeros(len(codes_a), dtype=np.int64)

    def add(name: str, mask) -> None:
        flags[mask] |= bit(name)

    live = ta.nonzero[codes_a] & tb.nonzero[codes_b]
    negative = ta.negative[codes_a] ^ tb.negative[codes_b]
    add("nan", ta.nan[codes_a].any(axis=1) | tb.nan[codes_b].any(axis=1))
    add("inf", ta.inf[codes_a].any(axis=1) | tb.inf[codes_b].any(axis=1))
    add("inf_a", ta.inf[codes_a].any(axis=1))
    add("inf_b", tb.inf[codes_b].any(axis=1))
    add("all_zero", ta.zero[codes_a].all(axis=1) & tb.zero[codes_b].all(axis=1))
    add("mixed_signs", (live & negative).any(axis=1) & (live & ~negative).any(axis=1))
    add_operand_classes(add, ((fmt_a, scales_a, ta, codes_a), (fmt_b, scales_b, tb, codes_b)))
    add("subnormal_product", (live & (ta.subnormal[codes_a] | tb.subnormal[codes_b])).any(axis=1))
    return flags


def compute_fused_batch(suite, inputs: dict):
    """``compute`` of N vectors of a fused suite (a :class:`.dot_suite.DotSuite` with
    ``suite.fused``): (outputs, flags), see :mod:`mxsim.golden.kinds.batch` and the module docstring.
    A batch with a vector the fast path refuses goes vector by vector through ``compute``, and so
    does a configuration whose classes this module does not rebuild (:func:`models`)."""
    if not models(suite.acc) or not _models_formats(suite):
        return compute_each(suite, inputs)
    try:
        outputs, flags, refer = _fused_batch(suite, inputs)
    except ValueError:
        return compute_each(suite, inputs)
    rows = np.flatnonzero(refer)
    if len(rows):
        picked = {name: [int(column[r]) for r in rows] for name, column in inputs.items()}
        ref_outputs, ref_flags = compute_each(suite, picked)
        for j, r in enumerate(rows):
            for name, column in ref_outputs.items():
                outputs[name][r] = column[j]
            flags[r] = ref_flags[j]
    return outputs, flags


#: the outputs whose overflow this module decides from the exact total (an fp32_eXmY output with fewer
#: exponent bits than its fp32 storage saturates inside fp32's range: the reference decides it)
_OUTPUTS = ("fp32", "bf16", "fp16", "fp32_e8m13")


def models(acc) -> bool:
    """Whether the classes of this accumulator's steps are rebuilt here: ``shift_rounding``
    truncate or rne; an output of :data:`_OUTPUTS`; the product terms and C in one adder
    (``partial_sums`` 1, no late C join: ``sum_frac_bits`` unset) with zero elements not counting
    for the anchor (``zero_exponent`` unset) and read as they are (``convert_elements`` unset), no
    promotion (``promote_every`` unset: the chain's C is not the caller's); steps of a fixed length over
    the products in index order (``interleave_steps`` 1; the step divides the block size or is a
    multiple of it; see :func:`_models_formats`). Every other configuration goes to the reference (an
    option added later stays right until taught here)."""
    return (acc.shift_rounding in ("truncate", "rne") and acc.output in _OUTPUTS and acc.partial_sums == 1
            and acc.sum_frac_bits is None and acc.zero_exponent is None and acc.promote_every is None
            and acc.convert_elements is None and acc.interleave_steps == 1)


def _models_formats(suite) -> bool:
    """The format-dependent half of :func:`models`: integer elements read as ``q * 2^-f``
    (``int_elements="integer"`` with an integer element goes to the reference), and steps that do not
    restart inside a block (a step smaller than the block that does not divide it: steps of 11 in a
    block of 32 go to the reference)."""
    k, acc = suite.fa.block_size, suite.acc
    step = acc.effective_step(k)
    integer = acc.int_elements == "integer" and "int" in (suite.fa.element.kind, suite.fb.element.kind)
    return not integer and (step >= k or k % step == 0)


def c_fp32_words(words: np.ndarray, fmt) -> np.ndarray:
    """C words of the IEEE format ``fmt`` (fp32, bf16, fp16) as the fp32 words of the same values
    (int64), which the fused fast path takes: bf16 is fp32's top half; fp16 widens exactly (a NaN
    stays a NaN, which is all a NaN C decides)."""
    if fmt.width == 32:
        return words
    if fmt.name == "bf16":
        return words << 16
    return words.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32).astype(np.int64)


def _fused_batch(suite, inputs: dict):
    n, count = suite.vector_blocks, len(inputs["c"])
    fa, fb, acc = suite.fa, suite.fb, suite.acc
    sides = [suite._operand_arrays(inputs, side, fmt, n) for side, fmt in (("a", fa), ("b", fb))]
    c_words = c_fp32_words(np.array([int(w) for w in inputs["c"]], dtype=np.int64), suite.c_format)
    (scales_a, subs_a, codes_a), (scales_b, subs_b, codes_b) = sides
    op_a = Operand(fa, scales_a, subs_a, codes_a, None)
    op_b = Operand(fb, scales_b, subs_b, codes_b, None)
    result, steps = dot_general_steps(op_a, op_b, acc, (count,), (count,), n, c=c_words, keep_steps=True)
    steps = steps.astype(np.int64)
    storage = storage_format(acc)
    outputs = {"result": result.astype(np.int64).tolist()}
    if suite.steps:
        outputs["steps"] = pack_items(steps, storage.width)
    pairs = element_flags(fa, fb, scales_a, codes_a, scales_b, codes_b).reshape(count, n)
    flags = np.bitwise_or.reduce(pairs, axis=1) if n else np.zeros(count, dtype=np.int64)
    step_flags, refer = _StepClasses(suite, sides, c_words, steps).flags()
    return outputs, (flags | step_flags).tolist(), refer


class _StepClasses:
    """The fused steps' classes of N vectors (:mod:`..coverage.rounding_record`; see the module
    docstring), from the inputs and every step's D."""

    def __init__(self, suite, sides, c_words, steps):
        self.suite, self.acc, self.steps = suite, suite.acc, steps
        self.rows, self.n_steps = steps.shape
        self.storage = storage_format(suite.acc)
        k = suite.fa.block_size
        self.k, self.step = k, suite.acc.effective_step(k)
        self.size = suite.acc.effective_term_size(k) if suite.acc.step_terms == "block" else 1
        self.refer = np.zeros(self.rows, dtype=bool)
        previous = fp32_words(steps[:, :-1], suite.acc) if self.n_steps > 1 else np.zeros((self.rows, 0), np.int64)
        self.c = np.concatenate([c_words[:, None], previous], axis=1)  # (rows, steps): each step's C
        self._products(sides)

    def _padded(self, per_product: np.ndarray, fill) -> np.ndarray:
        """(rows, n*k) -> (rows, steps, step): a last partial step padded with ``fill``."""
        total = self.n_steps * self.step
        out = np.full((self.rows, total), fill, dtype=per_product.dtype)
        out[:, : per_product.shape[1]] = per_product
        return out.reshape(self.rows, self.n_steps, self.step)

    def _products(self, sides) -> None:
        """Per product (rows, steps, step): signed significand Ma*Mb*sigA*sigB, exponent of its
        value, anchor exponent, special; per step the fixed grid's scale exponent."""
        suite, rows = self.suite, self.rows
        parts = []
        for (scales, subs, codes), fmt in zip(sides, (suite.fa, suite.fb)):
            e, s = _element_table(fmt.element), _scale_table(fmt.scale)
            exponent = e.exponent[codes]
            if subs is not None:
                exponent = exponent - np.repeat(subs.astype(np.int64), fmt.subblock_size, axis=1)[:, : self.k]
            block = lambda table: np.repeat(table[scales][:, None], self.k, axis=1)  # noqa: E731
            parts.append((e.negative[codes], e.significand[codes], block(s.significand), exponent,
                          block(s.shift), block(s.exponent), e.special[codes] | block(s.nan)))
        (neg_a, m_a, g_a, e_a, sh_a, x_a, sp_a), (neg_b, m_b, g_b, e_b, sh_b, x_b, sp_b) = parts
        frac = frac_bits(suite.fa.element) + frac_bits(suite.fb.element)
        shape = (rows, -1)
        magnitude = (m_a * m_b * g_a * g_b).reshape(shape)
        # a product counts for the anchor and for "nonzero" iff Ma * Mb > 0 (whatever the scales)
        self.live = self._padded(((m_a != 0) & (m_b != 0)).reshape(shape), False)
        self.value_n = self._padded(np.where((neg_a ^ neg_b).reshape(shape), -magnitude, magnitude), 0)
        self.value_x = self._padded((e_a + e_b - frac + sh_a + sh_b + x_a + x_b).reshape(shape), 0)
        self.anchor_e = self._padded((e_a + e_b + x_a + x_b).reshape(shape), 0)
        self.scale_e = self._padded((x_a + x_b).reshape(shape), 0)
        self.special = self._padded((sp_a | sp_b).reshape(shape), False).any(axis=2)

    def _terms(self):
        """(n, x, anchor exponent, counts) of every term, (rows, steps, terms): product terms as
        they are; block terms summed exactly on their smallest exponent (rows out of int64
        referred)."""
        n, x, live = self.value_n, self.value_x, self.live
        if self.size == 1:
            return n, x, self.anchor_e, live
        shape = (self.rows, self.n_steps, self.step // self.size, self.size)
        n, x, live = n.reshape(shape), x.reshape(shape), live.reshape(shape)
        base = np.where(live, x, np.iinfo(np.int64).max).min(axis=3)
        base = np.where(live.any(axis=3), base, 0)
        shift = np.where(live, x - base[..., None], 0)
        self._refer_if((shift + _bits(n) > _LIMIT - 8).any(axis=(1, 2, 3)))
        total = (np.where(live, n, 0) << np.minimum(shift, _LIMIT)).sum(axis=3)
        anchor = self.scale_e.reshape(shape)[..., 0]
        return total, base, anchor, live.any(axis=3)

    def _refer_if(self, rows: np.ndarray) -> None:
        self.refer |= rows

    def flags(self):
        """(flag words (rows,), rows the reference must recompute (bool)): the steps' values as one
        :class:`..coverage.rounding_record.FusedStepRecord`, classed by its one classifier."""
        return self.record().flags(self.acc, self.rows), self.refer

    def record(self) -> FusedStepRecord:
        """Every step of every row as a :class:`..coverage.rounding_record.FusedStepRecord` row
        (rows the reference recomputes carry no total: their classes are the reference's)."""
        acc = self.acc
        negative, significand, lsb, _ = float32_parts(self.c.astype(np.uint32).view(np.float32))
        c = OutputCodes.of(self.c, _FP32)
        special = self.special | c.nan | c.inf
        field = (self.c >> 23) & 0xFF
        e_c = np.where(significand != 0, np.maximum(np.where(field > 0, field - 127, _FP32_EMIN),
                                                     acc.effective_c_min_exponent), acc.effective_c_zero_exponent)
        n, x, anchor_e, counts = self._terms()
        p_n, p_x = self._exact_sum(n, x)
        if acc.anchor == "max":
            anchor = np.maximum(np.where(counts, anchor_e, np.iinfo(np.int64).min).max(axis=2), e_c)
            grid = anchor - acc.frac_bits
            bypass = np.zeros_like(special)
        else:
            grid = self.scale_e[:, :, 0] - acc.frac_bits
            bypass = ~special & (acc.bypass is not None) & ((e_c - 23) - grid > (acc.bypass or 0))
        cut = self._cut_sum(n, x, grid)
        inexact = _dyadic_differ(cut, grid, p_n, p_x)
        c_lost = bypass | ((anchor == e_c) & inexact) if acc.anchor == "max" else bypass
        c_zero = significand == 0
        passed = np.zeros_like(special)
        if acc.zero_product_sum != "add":  # D = C when the cut sum is zero (ref.fused._step): no total
            passed = ~special & ~bypass & (cut == 0) & acc.zero_sum_passes_c((e_c - 23) - grid)
        c_n = np.where(negative, -significand, significand).astype(np.int64)
        if acc.anchor == "max":  # C is cut to the grid too: the total is (C cut + products cut) * 2^grid
            units = cut + self._cut_sum(c_n[..., None], lsb[..., None], grid)
            low = grid
        else:  # C joins exactly: its LSB 2^(e_C - 23) is the lowest bit where it is nonzero
            units = cut
            low = np.where(c_zero, grid, np.minimum(grid, e_c - C_FRACTION_BITS))
        has_total = ~special & ~bypass & ~passed & ~self.refer[:, None]
        top_c = lsb + _bits(significand) - 1  # |C| < 2^grid iff C's top bit lies below the grid
        steps = np.arange(self.n_steps)
        shape = (self.rows, self.n_steps)
        columns = {
            "vector": np.repeat(np.arange(self.rows, dtype=np.int64), self.n_steps),
            "first": np.broadcast_to(steps == 0, shape), "last": np.broadcast_to(steps == self.n_steps - 1, shape),
            "code": self.steps, "special": special, "nonzero": counts.any(axis=2), "products_zero": p_n == 0,
            "inexact": inexact, "bypass": bypass, "cut_zero": cut == 0, "c_lost": c_lost, "c_nan": c.nan,
            "c_inf": c.inf, "c_zero": c_zero,
            "c_cancels": self._cancels(negative, significand, lsb, p_n, p_x, ~special),
            "c_below": ~c_zero & (top_c < grid),
        }
        flat = {name: np.ascontiguousarray(column).reshape(-1) for name, column in columns.items()}
        totals = self._totals(has_total, units, grid, None if acc.anchor == "max" else (c_n, lsb), low)
        return FusedStepRecord(**flat, totals=totals)

    def _totals(self, has_total, units, grid, c, low) -> OutputRoundings:
        """Each step's exact total before the output rounding, flattened: ``units`` * 2^grid, plus
        C = c_n * 2^c_lsb where ``c`` is given (``anchor="fixed"``: C joins exactly), on the lower
        of the two grids; in int64 where it fits, else with Python integers (an object array)."""
        n, x = np.where(has_total, units, 0), grid
        if c is not None:
            c_n, c_lsb = c
            joined = has_total & (c_n != 0)
            common = np.where(joined, np.minimum(grid, c_lsb), grid)
            shift_n, shift_c = grid - common, c_lsb - common
            fits = ~joined | ((_bits(n) + shift_n < 61) & (_bits(c_n) + shift_c < 61))
            total = np.where(fits, (n << np.where(fits, shift_n, 0)) + np.where(joined & fits, c_n << np.where(
                joined & fits, shift_c, 0), 0), 0)
            if not fits.all():
                total = total.astype(object)
                for r, s in zip(*np.nonzero(~fits)):
                    total[r, s] = (int(n[r, s]) << int(shift_n[r, s])) + (int(c_n[r, s]) << int(shift_c[r, s]))
            n, x = total, common
        n, x, has_total, low = (np.asarray(a).reshape(-1) for a in (n, x, has_total, low))
        negative = n < 0
        magnitude = np.where(negative, -n, n)
        if magnitude.dtype == object and not any(int(m) >= 1 << 62 for m in magnitude.tolist()):
            magnitude = magnitude.astype(np.int64)
        return OutputRoundings(has_total, negative.astype(bool), magnitude, x.astype(np.int64), low.astype(np.int64),
                               self.steps.reshape(-1).astype(np.int64))

    def _exact_sum(self, n, x):
        """(P_n, P_x): the exact sum of the terms (n, x) of each step as P_n * 2^P_x."""
        live = n != 0
        base = np.where(live, x, np.iinfo(np.int64).max).min(axis=2)
        base = np.where(live.any(axis=2), base, 0)
        shift = np.where(live, x - base[..., None], 0)
        self._refer_if((shift + _bits(n) > _LIMIT - 8).any(axis=(1, 2)))
        return (np.where(live, n, 0) << np.minimum(shift, _LIMIT)).sum(axis=2), base

    def _cut_sum(self, n, x, grid):
        """Every term cut to its step's grid 2^grid by ``shift_rounding``, summed (units of the grid)."""
        shift = x - grid[..., None]
        up = (shift >= 0) & (n != 0)
        self._refer_if((up & (shift + _bits(n) > _LIMIT - 8)).any(axis=(1, 2)))
        magnitude = np.abs(n)
        down = np.minimum(np.maximum(-shift, 0), 62)
        kept = magnitude >> down
        if self.acc.shift_rounding != "truncate":  # rne
            rest = magnitude - (kept << down)
            half = np.where(down > 0, np.int64(1) << np.maximum(down - 1, 0), 0)
            kept = kept + ((down > 0) & ((rest > half) | ((rest == half) & (kept & 1 == 1))))
        q = np.where(up, magnitude << np.minimum(np.maximum(shift, 0), _LIMIT), kept)
        return np.where(n < 0, -q, q).sum(axis=2)

    def _cancels(self, negative, significand, lsb, p_n, p_x, finite):
        """:func:`..coverage.accumulator.cancels` of C = +-significand * 2^lsb and P = p_n * 2^p_x
        both nonzero: no where they have one sign or their top bits are two or more binades apart,
        exactly (Python integers) elsewhere."""
        top_c = lsb + _bits(significand) - 1
        top_p = p_x + _bits(p_n) - 1
        maybe = finite & (p_n != 0) & (significand != 0) & (negative != (p_n < 0)) & (np.abs(top_c - top_p) <= 1)
        out = np.zeros(maybe.shape, dtype=bool)
        for r, s in zip(*np.nonzero(maybe)):  # C and P on their common grid 2^low
            c_x, p_exp = int(lsb[r, s]), int(p_x[r, s])
            low = min(c_x, p_exp)
            c = int(significand[r, s]) << (c_x - low)
            c = -c if negative[r, s] else c
            p = int(p_n[r, s]) << (p_exp - low)
            out[r, s] = cancels(c, 1, p, 1)
        return out


def _bits(x: np.ndarray) -> np.ndarray:
    """Bits of |x| (int64 with |x| < 2^62), 0 for 0."""
    magnitude = np.abs(x)
    return np.where(magnitude > 0, floor_log2_int64(np.maximum(magnitude, 1)) + 1, 0)


def _dyadic_differ(a, a_exponent, b, b_exponent) -> np.ndarray:
    """a * 2^a_exponent != b * 2^b_exponent element-wise (int64 arrays of any shape)."""
    shape = a.shape
    return dyadic_differ(a.reshape(-1), a_exponent.reshape(-1), b.reshape(-1), b_exponent.reshape(-1)).reshape(shape)


_FP32 = get_format("fp32", kind="float")
