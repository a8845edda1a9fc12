"""Promotion of fused partial sums into an fp32 register (docs/numerics.md section 4.1;
``promote_every``): how software on Hopper keeps FP8 accuracy over a long K (cuBLASLt's default,
Triton's ``max_num_imprecise_acc``; measured on an H200, docs/numerics.md section 6.1).

With ``promote_every`` = N the fused chain (:mod:`mxsim.ref.fused`) restarts from +0 at every
product index that is a multiple of N; the D of the last step of each group of N products (a last
group may be shorter) is a partial sum. An fp32 register starts at the caller's C and each partial,
in order, is added to it with IEEE 754 binary32 round-to-nearest-even (subnormals kept; an exact
zero sum is +0 but (-0) + (-0) = -0; overflow gives +-Inf; NaN if either is NaN or Inf meets -Inf).
The result is the register as an fp32 word; a NaN register is written as ``nan_bits`` (NVIDIA:
0x7FFFFFFF), or 0x7FC00000 when that is None. Integers and Fractions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..options.accumulate import Accumulator
from .exact import Exact
from .output import fp32_add, output_value, round_output

__all__ = ["group_starts", "promoted_code", "register_format", "result_code"]


def group_starts(step_ranges: Sequence[tuple[int, int]], accumulator: Accumulator) -> list[bool]:
    """For every step [first, last) of a DotGeneral, whether it starts a promotion group (its
    chain starts from +0): ``first`` a multiple of ``promote_every``. All False without promotion."""
    n = accumulator.promote_every
    return [n is not None and first % n == 0 for first, _ in step_ranges]


def promoted_code(step_codes: Sequence[int], starts: Sequence[bool], c: Exact, accumulator: Accumulator) -> int:
    """The fp32 word of the register: C plus the partial sums (the D code of the step before each
    group start, and the last step's), added in order with :func:`mxsim.ref.output.fp32_add`."""
    register = c
    for j, code in enumerate(step_codes):
        if j + 1 == len(step_codes) or starts[j + 1]:
            register = fp32_add(register, output_value(code, accumulator))
    return round_output(register, register_format(accumulator.nan_bits))


def result_code(step_codes: Sequence[int], starts: Sequence[bool], c: Exact, accumulator: Accumulator) -> int:
    """The code of a fused DotGeneral: the register (:func:`promoted_code`) with promotion, else the
    last step's D; with no steps, C rounded to the output (to fp32 with promotion)."""
    if accumulator.promote_every is not None:
        return promoted_code(step_codes, starts, c, accumulator)
    return step_codes[-1] if step_codes else round_output(c, accumulator)


@lru_cache(maxsize=None)
def register_format(nan_bits: int | None) -> Accumulator:
    """The fp32 register as an output: fp32, nearest-even, overflow to +-Inf, NaN written as
    ``nan_bits`` (a promoting accumulator's output is stored as fp32: a 32-bit NaN pattern)."""
    return Accumulator(nan_bits=nan_bits)
