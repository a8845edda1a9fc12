"""The output roundings of many dots as one record, and their decision classes for all of them at once.

A separate block Dot (and a fused step) ends in one rounding: an exact value
(-1)^negative * n * 2^x (integers) rounded to the accumulator's output format, giving an output
code; the datapath's lowest bit 2^low fixes the bottom sticky position (docs/numerics.md
sections 3.3, 4 and 4.1; :mod:`.output_rounding`). :class:`OutputRoundings` holds those values for
a whole chunk, whichever path computed them: the fast path's arrays
(:meth:`OutputRoundings.from_block_dots`) or the reference's integers, vector by vector
(:meth:`OutputRoundings.from_rows`). :meth:`OutputRoundings.flags` classes them all with the one
decision rule (:func:`.rounding.decision_flags`): in binary64 arrays where every quantity is exact
there (a significand below 2^53, exponents far from binary64's range, the lowest bit within 50 bits
of the ulp, a value below 2^emax of the output so that no rounding overflows), else one by one with
Python integers (:func:`.output_rounding.dyadic_rounding_flags` after the overflow test
:func:`.accumulator.dyadic_overflows`), the same classes either way.

No classes for: a value that is not finite or is zero, an output code that is NaN or Inf, a value
whose rounding overflows the output, and ``fp32_sequential`` accumulation (it rounds at every
addition, not once).

Fused steps (docs/numerics.md section 4.1): every fused step of every vector of a chunk is one row
of :class:`FusedStepRecord`: its output code D, what the adder decided (special, bypass), the comparisons the classes rest on (the exact product
sum P against zero and against the cut sum on the step's grid, C against zero, against P for
``c_cancellation`` and below the grid) and the exact total before the output rounding as an
:class:`OutputRoundings` row. :meth:`FusedStepRecord.from_details` fills it from
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
* ``overflow``: the exact total overflows the output (:meth:`OutputRoundings.overflows`),
  and ``saturation`` too where D is nevertheless finite;
* the output rounding's decision classes (:meth:`OutputRoundings.flags`: none for
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
from ...ref.output import output_format, storage_format
from ..values import decode
from .accumulator import c_classes, cancels, dyadic_overflows, register_classes, step_low
from .catalogue import flag_bits
from .output_rounding import NO_LOW, dyadic_rounding_flags
from .rounding import decision_flags

__all__ = ["NO_LOW", "FusedStepRecord", "OutputCodes", "OutputRoundings", "fused_flag_words"]

_SAFE_EXPONENT = 1000  # |exponents| below this keep every binary64 quantity of the rule normal and exact
_EXACT_BITS = 53  # significands binary64 holds exactly
_SPAN = 50  # bits between the ulp and the lowest bit that binary64 sums hold exactly (with margin)


@dataclass(frozen=True)
class OutputRoundings:
    """P roundings (arrays of length P): ``finite`` (the exact value is finite), ``negative``,
    ``magnitude`` n >= 0 (int64, or Python ints in an object array) and ``exponent`` x (int64) of
    the exact value n * 2^x, ``low`` (int64 exponent of the datapath's lowest bit, :data:`NO_LOW`
    for none) and ``code`` (int64, the output code in the accumulator's storage format)."""

    finite: np.ndarray
    negative: np.ndarray
    magnitude: np.ndarray
    exponent: np.ndarray
    low: np.ndarray
    code: np.ndarray

    @classmethod
    def from_rows(cls, rows) -> "OutputRoundings":
        """From (finite, negative, n, x, low or None, code) tuples (the reference's integers)."""
        rows = list(rows)
        columns = list(zip(*rows)) if rows else [()] * 6
        magnitudes = columns[2]
        wide = any(m >= 1 << 62 for m in magnitudes)
        return cls(
            np.array(columns[0], dtype=bool),
            np.array(columns[1], dtype=bool),
            np.array(magnitudes, dtype=object if wide else np.int64),
            np.array(columns[3], dtype=np.int64),
            np.array([NO_LOW if low is None else low for low in columns[4]], dtype=np.int64),
            np.array(columns[5], dtype=np.int64),
        )

    @classmethod
    def from_block_dots(cls, r, low: np.ndarray, finite_code: int) -> "OutputRoundings":
        """From the fast path's :class:`mxsim.fast.dot.BlockDots` ``r`` (flattened), the lowest-bit
        exponents ``low`` and the ``special`` value that marks a finite exact value."""
        significand = r.significand
        negative = significand < 0
        magnitude = np.where(negative, -significand, significand)
        return cls(r.special == finite_code, negative, magnitude, r.exponent.astype(np.int64),
                   np.asarray(low, dtype=np.int64), r.codes.astype(np.int64))

    def overflows(self, accumulator) -> np.ndarray:
        """Whether rounding each exact value to the output with unbounded exponent passes the
        output's largest finite value (:func:`.accumulator.dyadic_overflows`, docs/numerics.md
        sections 3.3 and 4), as a bool array; False for a value that is not finite or is zero. Below
        2^emax of the output no rounding can overflow, and from 2^(emax + 1) on every rounding does
        (the output's finite values lie below it): decided from the top bit's exponent (from binary64:
        exact below 2^53, else possibly one too high, so only a bound); the rest one by one with Python
        integers."""
        out = output_format(accumulator)
        result = np.zeros(len(self.code), dtype=bool)
        if not len(result):
            return result
        if self.magnitude.dtype == object:
            bits = np.array([int(m).bit_length() for m in self.magnitude.tolist()], dtype=np.int64)
            exact = np.ones(len(bits), dtype=bool)
        else:
            bits = np.frexp(self.magnitude.astype(np.float64))[1].astype(np.int64)  # bits of n, or one more
            exact = self.magnitude < 1 << _EXACT_BITS
        top = bits - 1 + self.exponent
        maybe = self.finite & (bits > 0) & (top >= out.emax)
        result[maybe & exact & (top > out.emax)] = True
        for i in np.flatnonzero(maybe & ~(exact & (top > out.emax))).tolist():
            n = int(self.magnitude[i])
            result[i] = dyadic_overflows(-n if self.negative[i] else n, int(self.exponent[i]), accumulator)
        return result

    def flags(self, accumulator) -> np.ndarray:
        """The decision classes of every rounding as an int64 flags word (see the module docstring)."""
        count = len(self.code)
        flags = np.zeros(count, dtype=np.int64)
        if accumulator.mode == "fp32_sequential" or not count:
            return flags
        out, storage = output_format(accumulator), storage_format(accumulator)
        result, result_finite = _magnitudes(self.code, storage)
        nonzero = self.magnitude != 0
        candidate = self.finite & nonzero & result_finite
        in_binary64 = candidate & _fits_binary64(self.magnitude, self.exponent, self.low, out)
        rows = np.flatnonzero(in_binary64)
        if rows.size:
            flags[rows] = _binary64_flags(self.magnitude[rows].astype(np.int64), self.exponent[rows],
                                          self.negative[rows], self.low[rows], result[rows], out)
        others = np.flatnonzero(candidate & ~in_binary64)
        if not others.size:
            return flags
        stand_ins = [_stand_in(int(n), x, None if low == NO_LOW else low, out) for n, x, low in
                     zip(self.magnitude[others].tolist(), self.exponent[others].tolist(), self.low[others].tolist())]
        taken = np.array([s is not None for s in stand_ins], dtype=bool)
        rows = others[taken]
        if rows.size:
            n, x, low = (np.array(column, dtype=np.int64) for column in zip(*(s for s in stand_ins if s is not None)))
            flags[rows] = _binary64_flags(n, x, self.negative[rows], low, result[rows], out)
        for i in others[~taken].tolist():
            flags[i] = _integer_flags(int(self.magnitude[i]), int(self.exponent[i]), bool(self.negative[i]),
                                      int(self.low[i]), int(self.code[i]), accumulator)
        return flags


_STAND_IN_BITS = 16  # how far below the ulp a stand-in's lowest bit may lie (at most; see _stand_in)


def _stand_in(n: int, x: int, low: int | None, out) -> tuple[int, int, int] | None:
    """(n', x', low'): a rounding that binary64 holds exactly (n' below 2^(m + 20), the lowest bit
    2^low' at most 18 bits below the ulp; m the output's fraction bits) with the same decision
    classes as n * 2^x (integers, n > 0) with lowest bit 2^low (None: no fixed lowest bit, as
    :func:`.output_rounding.dyadic_rounding_flags` reads it: half the value's lowest set bit); None
    where the value may overflow the output (its top bit at 2^emax or above: the caller decides
    that with integers) or its exponent is beyond binary64's safe range.

    The rule (:func:`.rounding.decision_flags`) reads a value x only through lo = x rounded down to
    the ulp u, hi = lo + u (with the result and the output's smallest normal, both multiples of u
    or of a larger power of two), and where t = x - lo lies among the points 0, u/2 - r, u/2,
    u/2 + r, 3u/4 (r = 2^low; the near-tie points only when 4r <= u): at one of them or strictly
    between two neighbours. The stand-in keeps lo and u, takes r' = 2^(ulp - 2 - D) with
    D = min(ulp - 2 - low, 16) (r' = r when D is not capped; r' < u/4 whenever r < u/4, and r' = r
    = u/4 when D = 0) or, without near-ties (4r > u), r' = u/2, and puts t' at the same point or at
    the midpoint of the same gap between them: every comparison of the rule comes out the same."""
    top = n.bit_length() - 1 + x
    if top >= out.emax or abs(x) >= _SAFE_EXPONENT:
        return None
    ulp = max(top, out.emin) - out.mantissa_bits
    if low is None:
        low = x + (n & -n).bit_length() - 2
    grid = min(x, low, ulp - 2)  # every point and t are integers in units of 2^grid
    whole, t = divmod(n << (x - grid), 1 << (ulp - grid))  # lo = whole * u
    half = 1 << (ulp - 1 - grid)
    if low > ulp - 2:  # no near-tie: the stand-in's units are u/8, r' = u/2
        d, low_out = 0, ulp - 1
        t_out = 0 if not t else 2 if t < half else 4 if t == half else 6
    else:  # units of u / 2^(D+3): u/2 = 2^(D+2), r' = 2, 3u/4 = 3 * 2^(D+1)
        d = min(ulp - 2 - low, _STAND_IN_BITS)
        low_out = ulp - 2 - d
        r, three_quarters = 1 << (low - grid), 3 << (ulp - 2 - grid)
        h = 1 << (d + 2)
        if not t:
            t_out = 0
        elif t < half - r:
            t_out = (1 << (d + 1)) - 1
        elif t == half - r:
            t_out = h - 2
        elif t < half:
            t_out = h - 1
        elif t == half:
            t_out = h
        elif t < half + r:
            t_out = h + 1
        elif t == half + r:
            t_out = h + 2
        elif t < three_quarters:
            t_out = (5 << d) + 1
        elif t == three_quarters:
            t_out = 3 << (d + 1)
        else:
            t_out = 7 << d
    return (whole << (d + 3)) + t_out, ulp - 3 - d, low_out


def _fits_binary64(magnitude: np.ndarray, exponent: np.ndarray, low: np.ndarray, out) -> np.ndarray:
    """Rows whose rule is exact in binary64: n < 2^53; |x| and |low| below 2^1000's exponent;
    n * 2^x below 2^emax of the output (no overflow to decide); and the lowest bit within
    :data:`_SPAN` bits of the ulp either way, so that u + 2r and u - 2r are binary64 values (every
    other quantity of the rule is: t = x - lo holds x's bits below the ulp, the rest are x, the
    result, powers of two and their small multiples)."""
    if magnitude.dtype == object:
        small = np.array([m < 1 << _EXACT_BITS for m in magnitude.tolist()], dtype=bool)
        n = np.where(small, magnitude, 0).astype(np.int64)
    else:
        small = magnitude < 1 << _EXACT_BITS
        n = np.where(small, magnitude, 0)
    top = np.frexp(n.astype(np.float64))[1] - 1 + exponent  # floor(log2(n * 2^x)) for n > 0
    ulp = np.maximum(top, out.emin) - out.mantissa_bits
    low = _decisive_low(n, exponent, low, out)
    return (small & (np.abs(exponent) < _SAFE_EXPONENT) & (np.abs(low) < _SAFE_EXPONENT) & (top < out.emax)
            & (np.abs(ulp - low) <= _SPAN))


def _decisive_low(n: np.ndarray, x: np.ndarray, low: np.ndarray, out) -> np.ndarray:
    """The lowest-bit exponent the rule is evaluated with for n * 2^x (int64 n > 0 below 2^53): for
    :data:`NO_LOW` half x's lowest set bit; a fixed ``low`` below both x's lowest set bit and the ulp
    is raised to min(x's lowest set bit - 1, ulp exponent - 2), which gives the same classes. The
    resolution r = 2^low enters the rule (:func:`.rounding.decision_flags`) only through 4r <= u,
    true for both, and t = u/2 +- r, false for both: t (x's bits below the ulp) has no set bit below
    x's lowest one, while u/2 +- r has its lowest set bit at ``low``. So a lowest bit far below x
    (a fused step's C far below its products) stays within binary64's reach."""
    lowest = x + _lowest_set_bit(n)
    ulp = np.maximum(np.frexp(n.astype(np.float64))[1] - 1 + x, out.emin) - out.mantissa_bits
    return np.where(low == NO_LOW, lowest - 1, np.maximum(low, np.minimum(lowest - 1, ulp - 2)))


def _lowest_set_bit(n: np.ndarray) -> np.ndarray:
    """The exponent of the lowest set bit of int64 n > 0 (0 for n = 0)."""
    return np.frexp((n & -n).astype(np.float64))[1] - 1


def _binary64_flags(n, x, negative, low, result, out) -> np.ndarray:
    """:func:`.output_rounding.dyadic_rounding_flags` of many roundings in binary64 (every quantity
    exact: see :func:`_fits_binary64`)."""
    value = np.ldexp(n.astype(np.float64), x.astype(np.int32))
    floor_log2 = np.frexp(value)[1] - 1
    ulp = np.ldexp(1.0, np.maximum(floor_log2, out.emin) - out.mantissa_bits)
    lo = np.floor(value / ulp) * ulp
    resolution = np.ldexp(1.0, _decisive_low(n, x, low, out).astype(np.int32))
    return decision_flags(value, lo, lo + ulp, resolution, result, negative, np.ldexp(1.0, out.emin))


def _integer_flags(n: int, x: int, negative: bool, low: int, code: int, accumulator) -> int:
    """One rounding with Python integers (a wide significand, an extreme exponent, a value near the
    output's top: :func:`.accumulator.dyadic_overflows` decides the overflow)."""
    if dyadic_overflows(-n if negative else n, x, accumulator):
        return 0
    result = decode(code, storage_format(accumulator))
    return dyadic_rounding_flags(n, x, negative, None if low == NO_LOW else low, output_format(accumulator),
                                 result.magnitude)


@dataclass(frozen=True)
class OutputCodes:
    """What output codes of an IEEE-style storage format (fp32, bf16, fp16: every accumulator's
    storage, :func:`mxsim.ref.output.storage_format`) hold, from their bit fields (bool arrays):
    ``nan`` (exponent field all ones, fraction nonzero), ``inf`` (all ones, fraction 0), ``zero``
    (magnitude bits 0, either sign), ``negative`` (the sign bit) and ``subnormal`` (field 0,
    fraction nonzero)."""

    nan: np.ndarray
    inf: np.ndarray
    zero: np.ndarray
    negative: np.ndarray
    subnormal: np.ndarray

    @classmethod
    def of(cls, codes: np.ndarray, fmt) -> "OutputCodes":
        codes = np.asarray(codes).astype(np.int64)
        magnitude = codes & ~fmt.sign_mask
        inf_code = fmt.inf_code()
        return cls(magnitude > inf_code, magnitude == inf_code, magnitude == 0, (codes & fmt.sign_mask) != 0,
                   (magnitude > 0) & (magnitude < (1 << fmt.mantissa_bits)))

    @property
    def finite(self) -> np.ndarray:
        return ~(self.nan | self.inf)


def _magnitudes(codes: np.ndarray, fmt) -> tuple[np.ndarray, np.ndarray]:
    """(binary64 magnitudes, finite mask) of IEEE-style output codes (fp32, bf16, fp16; subnormals
    kept): exact, read from the bit fields. A format without subnormals is decoded code by code."""
    codes = codes.astype(np.int64)
    if not (fmt.kind == "float" and fmt.subnormals):
        values = [decode(int(c), fmt) for c in codes.tolist()]
        return (np.array([float(v.magnitude) if v.is_finite else 0.0 for v in values]),
                np.array([v.is_finite for v in values], dtype=bool))
    magnitude = codes & ~fmt.sign_mask
    field, fraction = magnitude >> fmt.mantissa_bits, magnitude & ((1 << fmt.mantissa_bits) - 1)
    normal = np.ldexp((fraction | (1 << fmt.mantissa_bits)).astype(np.float64),
                      (field - fmt.bias - fmt.mantissa_bits).astype(np.int32))
    subnormal = np.ldexp(fraction.astype(np.float64), fmt.emin - fmt.mantissa_bits)
    finite = magnitude < fmt.inf_code()
    return np.where(field == 0, subnormal, np.where(finite, normal, 0.0)), finite


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
        steps, owners, firsts, lasts = [], [], [], []
        for v, details in enumerate(vectors):
            n = len(details)
            if n:
                steps += details
                owners += [v] * n
                firsts += [True] + [False] * (n - 1)
                lasts += [False] * (n - 1) + [True]
        rows = list(map(_step_row, steps))
        columns = list(zip(*rows)) if rows else [()] * len(_STEP_COLUMNS)
        arrays = {name: np.array(column, dtype=bool) for name, column in zip(_STEP_COLUMNS, columns)}
        return cls(vector=np.array(owners, dtype=np.int64), first=np.array(firsts, dtype=bool),
                   last=np.array(lasts, dtype=bool), code=np.array([step.code for step in steps], dtype=np.int64),
                   **arrays, totals=OutputRoundings.from_rows(map(_total_row, steps)))

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


def _total_row(step) -> tuple:
    """The :meth:`OutputRoundings.from_rows` row of one reference step: its exact total, or no
    rounding (not finite) for a step without one (special, bypassed, C passed on)."""
    total = step.total
    if total is None:
        return False, False, 0, 0, None, step.code
    n, x = total
    return True, n < 0, -n if n < 0 else n, x, step_low(step), step.code


def _step_row(step) -> tuple[bool, ...]:
    """The :data:`_STEP_COLUMNS` of one reference step (exact integer comparisons)."""
    c = step.c
    c_nan, c_inf = c.kind == "nan", c.kind == "inf"
    magnitude = c.magnitude if c.kind == "finite" else 0
    c_zero = not magnitude
    if step.special:
        return True, False, False, False, False, False, False, c_nan, c_inf, c_zero, False, False
    products, cut = step.products, step.cut_products
    n, x = products
    inexact = cut is not products and not dyadic_equal(cut, products)  # (no cut: the reference passes P itself)
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
