"""The corner classes of fused dot steps (docs/numerics.md section 4.1) for many vectors at once, from one record.

Every fused step of every vector of a chunk is one row of :class:`FusedStepRecord`: its output code
D, what the adder decided (special, bypass), the comparisons the classes rest on (the exact product
sum P against zero and against the cut sum on the step's grid, C against zero, against P for
``c_cancellation`` and below the grid) and the exact total before the output rounding as an
:class:`.rounding_record.OutputRoundings` row. :meth:`FusedStepRecord.from_details` fills it from
the reference's :class:`~mxsim.ref.fused.FusedStep` objects (integers: the comparisons are exact);
:meth:`FusedStepRecord.flags` classes every row with arrays and ORs each vector's rows into its
flags word. The classes (per step unless said):

* ``c_nan``, ``inf``: the first step's C is NaN, Inf;
* a special step (NaN or Inf decided outside the adder): ``nan`` or ``inf`` by D, nothing else;
* ``inf``: D is Inf; ``subnormal_output``: D is subnormal;
* ``cancellation``: a step with a counting product whose P is exactly 0;
* ``c_cancellation``: |C + P| <= 2^-8 |C| (:func:`.accumulator.cancels`), C and P nonzero;
* ``shift_inexact``: the cut sum differs from P;
* ``c_bypass`` / ``c_zero_tiny``: C lost (the bypass; or with ``anchor="max"`` C set the anchor and
  bits were cut) for a nonzero C whose step was bypassed or whose cut sum is 0 / for a zero C;
* ``c_below_window``: a nonzero C below the step's grid, |C| < 2^grid;
* ``overflow``: the exact total overflows the output (:meth:`.rounding_record.OutputRoundings.overflows`),
  and ``saturation`` too where D is nevertheless finite;
* the output rounding's decision classes (:meth:`.rounding_record.OutputRoundings.flags`: none for
  an overflow, a zero total or a non-finite D); a bypassed or special step, or one whose D is C
  passed on, has no total and so none of these;
* ``zero`` / ``negative_zero``: the last step's D is +0 / -0.

With ``promote_every`` (docs/numerics.md section 4.1) the chain's classes are taken with the
caller's C and result word in place of the chain's C and last D (:func:`.accumulator.register_classes`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...options.accumulate import output_float_format
from ...ref.exact import floor_log2_ratio
from ...ref.fused import dyadic_equal
from ...ref.output import storage_format
from .accumulator import c_classes, cancels, register_classes, step_low
from .catalogue import flag_bits
from .rounding_record import OutputCodes, OutputRoundings

__all__ = ["FusedStepRecord", "fused_flag_words"]

_ZERO_BITS = flag_bits(["zero", "negative_zero"])


@dataclass(frozen=True)
class FusedStepRecord:
    """S fused steps of V vectors (arrays of length S; see the module docstring): ``vector`` (int64,
    the vector a step belongs to, ascending), ``first`` and ``last`` (its first, last step), ``code``
    (D in the accumulator's storage format), ``special``, ``nonzero`` (a product with two nonzero
    elements), ``products_zero`` (P = 0), ``inexact`` (the cut sum differs from P), ``bypass``,
    ``cut_zero`` (the cut sum is 0), ``c_lost`` (bypassed, or ``anchor="max"`` set by C and
    inexact), ``c_nan``, ``c_inf``, ``c_zero`` (C is +-0), ``c_cancels`` (C and P nonzero and
    |C + P| <= 2^-8 |C|), ``c_below`` (C finite, nonzero and below 2^grid) and ``totals``: each
    step's exact total before the output rounding (``finite`` False where there is none)."""

    vector: np.ndarray
    first: np.ndarray
    last: np.ndarray
    code: np.ndarray
    special: np.ndarray
    nonzero: np.ndarray
    products_zero: np.ndarray
    inexact: np.ndarray
    bypass: np.ndarray
    cut_zero: np.ndarray
    c_lost: np.ndarray
    c_nan: np.ndarray
    c_inf: np.ndarray
    c_zero: np.ndarray
    c_cancels: np.ndarray
    c_below: np.ndarray
    totals: OutputRoundings

    @classmethod
    def from_details(cls, vectors) -> "FusedStepRecord":
        """From the reference: ``vectors`` holds each vector's tuple of
        :class:`~mxsim.ref.fused.FusedStep` (Python integers throughout; comparisons exact)."""
        rows, totals = [], []
        add_row, add_total = rows.append, totals.append
        for v, details in enumerate(vectors):
            last = len(details) - 1
            for i, step in enumerate(details):
                add_row((v, i == 0, i == last, step.code, *_step_row(step)))
                total = step.total
                if total is None:
                    add_total((False, False, 0, 0, None, step.code))
                else:
                    n, x = total
                    add_total((True, n < 0, -n if n < 0 else n, x, step_low(step), step.code))
        columns = list(zip(*rows)) if rows else [()] * len(_COLUMNS)
        arrays = {name: np.array(column, dtype=np.int64 if name in ("vector", "code") else bool)
                  for name, column in zip(_COLUMNS, columns)}
        return cls(**arrays, totals=OutputRoundings.from_rows(totals))

    def flags(self, accumulator, count: int) -> np.ndarray:
        """The flags word of each of the ``count`` vectors (int64): its steps' classes ORed."""
        d = OutputCodes.of(self.code, storage_format(accumulator))
        live = ~self.special
        steps = np.zeros(len(self.code), dtype=np.int64)

        def add(name: str, mask) -> None:
            steps[mask] |= flag_bits([name])

        add("c_nan", self.first & self.c_nan)
        add("inf", self.first & self.c_inf)
        add("nan", self.special & d.nan)
        add("inf", (self.special & ~d.nan) | d.inf)
        add("subnormal_output", live & d.subnormal)
        nonzero = live & self.nonzero
        add("c_cancellation", nonzero & self.c_cancels)
        add("cancellation", nonzero & self.products_zero)
        add("shift_inexact", live & self.inexact)
        add("c_bypass", nonzero & self.c_lost & ~self.c_zero & (self.bypass | self.cut_zero))
        add("c_zero_tiny", nonzero & self.c_lost & self.c_zero)
        add("c_below_window", nonzero & self.c_below)
        overflows = live & self.totals.overflows(accumulator)
        add("overflow", overflows)
        add("saturation", overflows & d.finite)
        add("zero", self.last & d.zero & ~d.negative)
        add("negative_zero", self.last & d.zero & d.negative)
        steps[live] |= self.totals.flags(accumulator)[live]
        words = np.zeros(count, dtype=np.int64)
        np.bitwise_or.at(words, self.vector, steps)
        return words


_STEP_COLUMNS = ("special", "nonzero", "products_zero", "inexact", "bypass", "cut_zero", "c_lost", "c_nan", "c_inf",
                 "c_zero", "c_cancels", "c_below")


_COLUMNS = ("vector", "first", "last", "code") + _STEP_COLUMNS


def _step_row(step) -> tuple[bool, ...]:
    """The :data:`_STEP_COLUMNS` of one reference step (exact integer comparisons)."""
    c = step.c
    c_nan, c_inf = c.kind == "nan", c.kind == "inf"
    magnitude = c.magnitude if c.kind == "finite" else 0
    c_zero = not magnitude
    if step.special:
        return True, False, False, False, False, False, False, c_nan, c_inf, c_zero, False, False
    n, x = step.products
    inexact = not dyadic_equal(step.cut_products, step.products)
    c_cancels = c_below = False
    if magnitude:
        c_num, c_den = magnitude.numerator, magnitude.denominator
        if n and (n < 0) != bool(c.sign):  # of one sign |C + P| > |C|: no cancellation
            c_cancels = cancels(-c_num if c.sign else c_num, c_den, *((n << x, 1) if x >= 0 else (n, 1 << -x)))
        c_below = step.grid is not None and floor_log2_ratio(c_num, c_den) < step.grid
    c_lost = step.bypass or (step.anchor == step.c_exponent and inexact)
    return (False, step.nonzero, not n, inexact, step.bypass, not step.cut_products[0], c_lost, c_nan, c_inf,
            c_zero, c_cancels, c_below)


def fused_flag_words(vectors, accumulator) -> list[int]:
    """The fused classes of many vectors (see the module docstring) as flags words: ``vectors``
    holds (every step's :class:`~mxsim.ref.fused.FusedStep`, the caller's C, the result word) per
    vector. With ``promote_every`` the chain's zero classes give way to the caller's C and the
    register's result classes (the register: fp32, or fp16 for an fp16 D)."""
    vectors = list(vectors)
    promoted = accumulator.promote_every is not None
    chain = replace(accumulator, promote_every=None) if promoted else accumulator
    record = FusedStepRecord.from_details(details for details, _, _ in vectors)
    words = record.flags(chain, len(vectors)).tolist()
    if not promoted:
        return words
    storage = output_float_format(accumulator.output_storage)
    out = []
    for word, (_, c, result) in zip(words, vectors):
        if result is not None:
            word = (word & ~_ZERO_BITS) | flag_bits(c_classes(c, None) | register_classes(result, storage))
        out.append(word)
    return out
