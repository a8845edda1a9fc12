"""Stimulus for the accumulator input C of dot suites (``c``; contract 4.1): a C for every vector,
weighted toward the corner classes of :mod:`..coverage.accumulator`, and directed vectors that
steer the blocks and C together into them:

* ``cancel``: C = -(the first step's D with C = +0), sometimes one ulp off: C and the products
  cancel, the residual shows whether the adder was fused (a product sum rounded first loses it);
* ``negated step``: step 1's products are step 0's negated (same scales), so step 1 cancels
  against C = step 0's D;
* ``dominant``: C's exponent at and just above the bypass threshold (``anchor='fixed'``: C's LSB
  ``bypass`` bits above the grid 2^(XA+XB-F)) or F above the products (``anchor='max'``);
* ``zero tiny``: C = +-0 (or a subnormal) with scales at and around the zero-C bypass threshold
  (fixed; with ``zero_product_sum="pass_c_outside_window"`` every other one at and just above the
  window's lower edge, where a zero C stops being passed on) or products below C's zero exponent
  (max);
* ``overflow``: C = +-max fp32 with products of its sign, large enough to overflow round-to-nearest;
* ``nan``/``inf``: NaN C (quiet, signalling, either sign) and +-Inf C.

Every C is drawn in the suite's C format (``suite.c_format``: fp32, or the fp16 / bf16 of a unit
whose C is its 16-bit D; contract 4.1), so a device can load it: the same draws as fp32 with that
format's widths, range, NaN and Inf codes.

Expected values still come only from the suite's ``compute`` (the reference model); the first
step's D with C = +0 is asked here only to aim C (``near``, ``cancel``, ``dominant``): of the
catalogue's vectors, and of each run of 256 random vectors beyond it (:func:`add_c_each`), all at
once from the fast path where the suite is fused (:meth:`..kinds.dot.DotSuite.first_step_values`,
bit for bit the reference's), else from the reference vector by vector."""

from __future__ import annotations

import random

from ...formats.element import negated_code
from ...ref.exact import Exact, floor_log2
from ...ref.fused import scale_parts
from ...options.accumulate import C_WINDOW_BITS
from ...ref.output import storage_format
from ..values import decode, float_word, pack_word, unpack_word

__all__ = ["C_KINDS", "add_c", "add_c_aimed", "add_c_each", "directed_count", "with_c"]

# kind -> weight of the C of every other vector
C_KINDS = {"near": 5, "cancel": 3, "dominant": 2, "zero": 2, "nan": 1, "inf": 1, "max": 1, "subnormal": 1, "bits": 1}
DIRECTED = 8  # directed vectors per category
_KIND_DRAW = [kind for kind, weight in C_KINDS.items() for _ in range(weight)]


def with_c(suite, rows, rng: random.Random):
    """``rows`` (the blocks of every vector, ``(inputs, origin)``) each with a C, then the directed
    C vectors (:func:`directed_count` of them). The blocks are all drawn before the first C (a
    catalogue's few thousand rows are held in memory), so the C draws follow the block draws."""
    rows = list(rows)
    for row, (_, origin) in zip(add_c_each(suite, [row for row, _ in rows], rng), rows):
        yield row, origin
    for make in _DIRECTED_MAKERS:
        for index in range(DIRECTED):
            row = make(suite, rng, index)
            if row is not None:
                yield row, "directed"


def add_c_each(suite, rows: list[dict], rng: random.Random) -> list[dict]:
    """Every vector of ``rows`` with a C (:func:`add_c`, drawn in turn from ``rng``), aimed at the
    first steps' D of all of them from one :meth:`~..kinds.dot.DotSuite.first_step_values` call
    (where it gives None, e.g. separate accumulation: from the reference, vector by vector)."""
    return add_c_aimed(suite, rows, rng, suite.first_step_values(rows))


def add_c_aimed(suite, rows: list[dict], rng: random.Random, firsts: list[Exact] | None) -> list[dict]:
    """:func:`add_c_each` with the first steps' D given (``firsts``, one per row; None: the
    reference's, vector by vector)."""
    if firsts is None:
        return [add_c(suite, row, rng) for row in rows]
    return [add_c(suite, row, rng, first) for row, first in zip(rows, firsts)]


def add_c(suite, row: dict, rng: random.Random, first_d: Exact | None = None) -> dict:
    """``row`` with a C of a kind drawn by the weights of :data:`C_KINDS`; ``first_d``: the
    first step's D with C = +0 (:func:`_first_d`) if known already."""
    return {**row, "c": _c(suite, row, rng, rng.choice(_KIND_DRAW), first_d)}


def directed_count(suite) -> int:
    """How many directed C vectors :func:`with_c` appends (a step pair that does not fit in one
    vector has no negated-step vectors)."""
    return sum(DIRECTED for make in _DIRECTED_MAKERS if make is not _negated_step or _has_step_pair(suite))


# --- C values (bits of the suite's C format: fp32, bf16 or fp16) ---------------------------------------
def _sign_bit(fmt, sign: int) -> int:
    return sign << (fmt.width - 1)


def _max_bits(fmt) -> int:
    """The magnitude bits of the format's largest finite value (fp32: 0x7F7FFFFF)."""
    return fmt.inf_code() - 1


def _nans(fmt) -> tuple[int, ...]:
    """NaN C words: quiet of either sign, signalling with the smallest payload, all ones, quiet with
    payload 1 (fp32: 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FC00001)."""
    inf, quiet = fmt.inf_code(), 1 << (fmt.mantissa_bits - 1)
    return (inf | quiet, _sign_bit(fmt, 1) | inf | quiet, inf | 1, (1 << fmt.width) - 1, inf | quiet | 1)


def _float(fmt, sign: int, exponent: int, rng: random.Random) -> int:
    """Random bits of the C format, of the given sign with value in [2^exponent, 2^(exponent+1))
    (clamped to the format's range; below its smallest normal a random subnormal)."""
    m = fmt.mantissa_bits
    exponent = min(exponent, fmt.emax)
    if exponent < fmt.emin:
        return _sign_bit(fmt, sign) | rng.randint(1, (1 << m) - 1)
    return _sign_bit(fmt, sign) | (exponent + fmt.bias) << m | rng.getrandbits(m)


def _first_d(suite, row, known: Exact | None = None) -> Exact:
    """The first step's D (the result, for separate accumulation) with C = +0: ``known``, or
    computed by the reference if None."""
    if known is not None:
        return known
    return decode(suite.reference_codes(row, Exact(0), first_steps=1)[0], storage_format(suite.acc))


def _c(suite, row, rng: random.Random, kind: str, first_d: Exact | None = None) -> int:
    """C bits of a ``kind`` of :data:`C_KINDS`, in the suite's C format."""
    fmt = suite.c_format
    sign = rng.getrandbits(1)
    if kind in ("near", "cancel"):
        d = _first_d(suite, row, first_d)
        if d.is_finite and d.magnitude:
            if kind == "cancel":  # -D: exact (D is an output value, which the C format holds)
                bits = float_word(Exact(1 - d.sign, d.magnitude), fmt)
                return bits + rng.choice([0, 0, 1, -1]) if 0 < bits & ~fmt.sign_mask < _max_bits(fmt) else bits
            return _float(fmt, sign, floor_log2(d.magnitude) + rng.randint(-24, 24), rng)
        return _float(fmt, sign, rng.randint(-20, 20), rng)
    if kind == "dominant":
        return _float(fmt, sign, _dominant_exponent(suite, row, rng, first_d), rng)
    if kind == "zero":
        return _sign_bit(fmt, sign)
    if kind == "nan":
        return rng.choice(_nans(fmt))
    if kind == "inf":
        return _sign_bit(fmt, sign) | fmt.inf_code()
    if kind == "max":
        return _sign_bit(fmt, sign) | (_max_bits(fmt) - rng.choice([0, 0, 1, 2]))
    if kind == "subnormal":
        return _float(fmt, sign, fmt.emin - 1, rng)
    return rng.getrandbits(fmt.width)


def _scale_sum(suite, parts, block: int = 0) -> int:
    """XA + XB of a block pair (scale exponents as the fused adder sees them; 0 for NaN scales)."""
    xa = scale_parts(parts["a"]["scale"][block], suite.fa.scale)
    xb = scale_parts(parts["b"]["scale"][block], suite.fb.scale)
    return xa.exponent + xb.exponent


def _dominant_exponent(suite, row, rng: random.Random, first_d: Exact | None = None) -> int:
    """An exponent for C at or just above where it swallows the first step's products."""
    acc = suite.acc
    if acc.accumulate == "fused" and acc.anchor == "fixed" and acc.bypass is not None:
        grid = _scale_sum(suite, _parts(suite, row)) - acc.frac_bits
        return grid + acc.bypass + 23 + rng.choice([0, 1, 1, 2, rng.randint(3, 30)])
    d = _first_d(suite, row, first_d)
    top = floor_log2(d.magnitude) if d.is_finite and d.magnitude else 0
    return top + (acc.frac_bits or 24) + rng.randint(-2, 12)


# --- the blocks of a vector as lists ------------------------------------------------------------------
def _parts(suite, row) -> dict:
    """side -> {"scale": [n], "sub": [n] or None, "codes": [n*k]} of a vector's fields."""
    n, parts = suite.vector_blocks, {}
    widths = {f.name: f.bits for f in suite.block_fields}
    for side, fmt in (("a", suite.fa), ("b", suite.fb)):
        parts[side] = {
            "scale": unpack_word(row[f"{side}_scale"], widths[f"{side}_scale"], n),
            "sub": unpack_word(row[f"{side}_sub"], widths[f"{side}_sub"], n) if fmt.subblocks else None,
            "codes": unpack_word(row[f"{side}_elems"], fmt.element.width, n * fmt.block_size),
        }
    return parts


def _row(suite, row, parts) -> dict:
    widths = {f.name: f.bits for f in suite.block_fields}
    row = dict(row)
    for side, fmt in (("a", suite.fa), ("b", suite.fb)):
        row[f"{side}_scale"] = pack_word(parts[side]["scale"], widths[f"{side}_scale"])
        if parts[side]["sub"] is not None:
            row[f"{side}_sub"] = pack_word(parts[side]["sub"], widths[f"{side}_sub"])
        row[f"{side}_elems"] = pack_word(parts[side]["codes"], fmt.element.width)
    return row


def _set_scale_sum(suite, parts, total: int) -> bool:
    """Give every block pair E8M0 scales with XA + XB = ``total``; False if the formats cannot."""
    if suite.unit_scales or suite.fa.scale.name != "e8m0" or suite.fb.scale.name != "e8m0":
        return False
    xa = total // 2
    codes = (xa + 127, total - xa + 127)
    if not all(0 <= code <= 0xFE for code in codes):
        return False
    for side, code in zip("ab", codes):
        parts[side]["scale"] = [code] * suite.vector_blocks
    return True


# --- directed vectors ----------------------------------------------------------------------------------
def _cancel(suite, rng: random.Random, index: int) -> dict:
    row = suite.fresh_row(rng)
    return {**row, "c": _c(suite, row, rng, "cancel")}


def _has_step_pair(suite) -> bool:
    """Whether a vector holds two steps (two blocks, for separate accumulation)."""
    k = suite.fa.block_size
    step = suite.acc.effective_step(k) if suite.fused else k
    return suite.vector_blocks * k >= 2 * step


def _negated_step(suite, rng: random.Random, index: int) -> dict | None:
    """Step 1 = step 0 negated on the a side, with step 0's scales; C near the products."""
    if not _has_step_pair(suite):
        return None
    k = suite.fa.block_size
    step = suite.acc.effective_step(k) if suite.fused else k
    row = suite.fresh_row(rng)
    parts = _parts(suite, row)
    a, b = parts["a"], parts["b"]
    a["codes"][step : 2 * step] = [negated_code(code, suite.fa.element) for code in a["codes"][:step]]
    b["codes"][step : 2 * step] = b["codes"][:step]
    for side in (a, b):
        for j in range(step // k, 2 * step // k + (2 * step % k > 0)):
            side["scale"][j] = side["scale"][0]
            if side["sub"] is not None:
                side["sub"][j] = side["sub"][0]
    row = _row(suite, row, parts)
    return {**row, "c": rng.choice([0, _sign_bit(suite.c_format, 1), _c(suite, row, rng, "near")])}


def _dominant(suite, rng: random.Random, index: int) -> dict:
    row = suite.fresh_row(rng)
    return {**row, "c": _c(suite, row, rng, "dominant")}


def _zero_tiny(suite, rng: random.Random, index: int) -> dict:
    acc = suite.acc
    row = suite.fresh_row(rng)
    parts = _parts(suite, row)
    if acc.accumulate == "fused" and acc.anchor == "fixed" and acc.bypass is not None:
        threshold = acc.effective_c_zero_exponent - 23 + acc.frac_bits - acc.bypass  # bypass below this XA+XB
        total = threshold + [0, -1, 1, 0, -2, -1, -3, -rng.randint(4, 40)][index % 8]
        if acc.zero_product_sum == "pass_c_outside_window" and index % 2:
            # the window's lower edge: a zero C passes at XA+XB = edge + 1 and above, adds at edge and below
            # (with zero products: a's elements +0, so the step's product sum is zero)
            edge = acc.effective_c_zero_exponent - 23 + acc.frac_bits + C_WINDOW_BITS
            total = edge + (index // 2) % 2
            parts["a"]["codes"] = [0] * len(parts["a"]["codes"])
    else:
        total = acc.effective_c_zero_exponent - rng.randint(10, 40)
    _set_scale_sum(suite, parts, total)
    row = _row(suite, row, parts)
    negative_zero = _sign_bit(suite.c_format, 1)
    return {**row, "c": rng.choice([0, negative_zero, 0, negative_zero, 0, negative_zero,
                                    _c(suite, row, rng, "subnormal")])}


def _overflow(suite, rng: random.Random, index: int) -> dict:
    """C = +-max of the C format and products of C's sign near its top ulp 2^(emax - m) times
    2^(-4..4) (fp32: 2^104)."""
    row = suite.fresh_row(rng)
    parts = _parts(suite, row)
    sign = rng.getrandbits(1)
    for side, fmt in (("a", suite.fa), ("b", suite.fb)):
        codes = parts[side]["codes"]
        for i, code in enumerate(codes):
            value = decode(code, fmt.element)
            if value.is_finite and value.sign != (sign if side == "a" else 0):
                codes[i] = negated_code(code, fmt.element)
    fmt = suite.c_format
    _set_scale_sum(suite, parts, fmt.emax - fmt.mantissa_bits - 4 + rng.randint(0, 8))
    row = _row(suite, row, parts)
    return {**row, "c": _sign_bit(fmt, sign) | (_max_bits(fmt) - rng.choice([0, 0, 1]))}


def _specials(suite, rng: random.Random, index: int) -> dict:
    row = suite.fresh_row(rng)
    return {**row, "c": _c(suite, row, rng, rng.choice(["nan", "nan", "inf"]))}


# the directed C vectors in order, DIRECTED of each (zero tiny twice: both signs and a subnormal C
# across every scale sum of its list)
_DIRECTED_MAKERS = (_cancel, _negated_step, _dominant, _zero_tiny, _zero_tiny, _overflow, _specials)
