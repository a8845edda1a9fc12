"""The reference's block Dots as the record the fast path fills, so that one classifier reads both.

:class:`mxsim.fast.dot.BlockDots` holds, per block Dot, the output code, the register (value,
LSB exponent, anchor) and the exact value before the output rounding (``special``, or
``significand`` * 2^``exponent``). Here the same arrays are filled from the reference's own
:class:`mxsim.ref.dot.BlockDot` integers (nothing is taken from the fast path), and the registers
of the ``acc_overflow`` / ``shift_inexact`` classes (docs/numerics.md section 3.3) from
the reference's Dot and :func:`mxsim.ref.dot.block_register` (:func:`pair_registers`); :meth:`.classes.DotClasses._batch_flags` classes a whole
chunk from it, whichever path filled it.
"""

from __future__ import annotations

import numpy as np

from ....fast.dot import BlockDots
from ....fast.output import FINITE, NAN, NEG_INF, POS_INF
from ....ref import dot as ref_dot

__all__ = ["Registers", "integer_array", "pair_registers", "reference_block_dots", "stacked_registers"]

_INT64_SAFE = 1 << 62  # |values| below this are held as int64, larger ones as Python ints (object arrays)


def integer_array(values) -> np.ndarray:
    """Python ints as an int64 array, or an object array where one is 2^62 or more in magnitude."""
    values = list(values)
    wide = any(v >= _INT64_SAFE or v <= -_INT64_SAFE for v in values)
    return np.array(values, dtype=object) if wide else np.array(values, dtype=np.int64)


def reference_block_dots(dots) -> BlockDots:
    """The :class:`BlockDots` (1-D arrays) of the reference's block Dots ``dots``. The exact value
    is written n * 2^x with n the signed numerator of the reduced fraction (0 for zero) and
    ``special`` FINITE, +Inf, -Inf or NaN as the fast path marks it. ValueError for a finite value
    that is not dyadic (none is: every scale is a power of two or an fp32 value)."""
    columns = [[] for _ in range(7)]
    for r in dots:
        exact = r.exact
        if exact.is_nan:
            special, significand, exponent = NAN, 0, 0
        elif exact.is_inf:
            special, significand, exponent = (NEG_INF if exact.sign else POS_INF), 0, 0
        else:
            denominator = exact.magnitude.denominator
            if denominator & (denominator - 1):
                raise ValueError(f"a block Dot's exact value {exact.magnitude} is not dyadic; expected n * 2^x")
            numerator = exact.magnitude.numerator
            special, significand, exponent = FINITE, -numerator if exact.sign else numerator, 1 - denominator.bit_length()
        for column, value in zip(columns, (r.code, r.accumulator, r.lsb_exponent, r.anchor, special, significand, exponent)):
            column.append(value)
    codes, accumulator, lsb, anchor, special, significand, exponent = columns
    return BlockDots(np.array(codes, dtype=np.int64), integer_array(accumulator), np.array(lsb, dtype=np.int64),
                     np.array(anchor, dtype=np.int64), np.array(special, dtype=np.int8), integer_array(significand),
                     np.array(exponent, dtype=np.int64))


Registers = tuple  # ((accumulator, lsb_exponent) of the unbounded register, (accumulator, lsb_exponent) of the exact one)


def pair_registers(a, b, r, fmt_a, fmt_b, exact_acc) -> tuple[int, int, int, int]:
    """(unbounded register, its LSB exponent, exact register, its LSB exponent) of one block pair
    and its aligned Dot ``r``: the unbounded one is the reference's own (``r.unbounded``, on
    ``r.lsb_exponent``), the exact one :func:`mxsim.ref.dot.block_register` with ``exact_acc``. A
    pair without a product of two finite nonzero elements gets zeros: no class reads them."""
    prods = ref_dot.block_products(a.codes, a.subscales, fmt_a, b.codes, b.subscales, fmt_b)
    if not any(kind == "finite" and magnitude for _, magnitude, _, kind in prods):
        return 0, 0, 0, 0
    exact, exact_lsb, _ = ref_dot.block_register(prods, fmt_a, fmt_b, exact_acc)
    return r.unbounded, r.lsb_exponent, exact, exact_lsb


def stacked_registers(columns) -> Registers:
    """:data:`Registers` from the four columns of :func:`pair_registers` rows."""
    unbounded, unbounded_lsb, exact, exact_lsb = columns
    return ((integer_array(unbounded), np.array(unbounded_lsb, dtype=np.int64)),
            (integer_array(exact), np.array(exact_lsb, dtype=np.int64)))
