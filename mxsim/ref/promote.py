"""Promotion of fused partial sums into an fp32 register (docs/numerics.md section 4.1;
``promote_every``): how software on Hopper keeps FP8 accuracy over a long K (cuBLASLt's default,
Triton's ``max_num_imprecise_acc``; measured on an H200, docs/numerics.md section 6.1), and how
Hopper runs ``mma.sync`` FP8 (two HMMA from +0, then C added by an FADD, or an HADD for an fp16 D).

With ``promote_every`` = N the fused chain (:mod:`mxsim.ref.fused`) restarts from +0 at every
product index that is a multiple of N; the D of the last step of each group of N products (a last
group may be shorter) is a partial sum. An fp32 register starts at the caller's C and each partial,
in order, is added to it with IEEE 754 binary32 round-to-nearest-even (subnormals kept; an exact
zero sum is +0 but (-0) + (-0) = -0; overflow gives +-Inf; NaN if either is NaN or Inf meets -Inf).
The result is the register as an fp32 word; a NaN register is written as ``nan_bits`` (NVIDIA:
0x7FFFFFFF), or 0x7FC00000 when that is None. With an fp16 output the register is fp16 (an HADD:
C enters it rounded to fp16 nearest-even, exact for the fp16 C such a unit takes, and every
addition is rounded to fp16 nearest-even, overflow to +-Inf; NaN 0x7FFF from ``nan_bits``).
Integers and Fractions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..options.accumulate import Accumulator
from .exact import Exact
from .output import fp32_add, output_value, round_finite_output, round_output

__all__ = ["group_starts", "promoted_code", "register_format", "result_code"]


def group_starts(step_ranges: Sequence[tuple[int, int]], accumulator: Accumulator) -> list[bool]:
    """For every step [first, last) of a DotGeneral, whether it starts a promotion group (its
    chain starts from +0): ``first`` a multiple of ``promote_every``. All False without promotion."""
    n = accumulator.promote_every
    return [n is not None and first % n == 0 for first, _ in step_ranges]


def promoted_code(step_codes: Sequence[int], starts: Sequence[bool], c: Exact, accumulator: Accumulator) -> int:
    """The fp32 word of the register: C plus the partial sums (the D code of the step before each
    group start, and the last step's), added in order with :func:`mxsim.ref.output.fp32_add`."""
    register_acc = register_format(accumulator.nan_bits, accumulator.output_storage)
    add = fp32_add if accumulator.output_storage == "fp32" else _adder(register_acc)
    register = c if accumulator.output_storage == "fp32" else output_value(round_output(c, register_acc), register_acc)
    for j, code in enumerate(step_codes):
        if j + 1 == len(step_codes) or starts[j + 1]:
            register = add(register, output_value(code, accumulator))
    return round_output(register, register_acc)


def _adder(register_acc: Accumulator):
    """x + y rounded once to the register's format (nearest-even, overflow to +-Inf), with IEEE 754
    special cases: NaN for a NaN or Inf + -Inf, an Inf kept, an exact zero +0 but (-0) + (-0) = -0."""
    def add(x: Exact, y: Exact) -> Exact:
        if x.is_nan or y.is_nan or (x.is_inf and y.is_inf and x.sign != y.sign):
            return Exact.nan()
        if x.is_inf or y.is_inf:
            return x if x.is_inf else y
        total = x.value + y.value
        if total == 0:
            return Exact(int(x.sign and y.sign))
        code = round_finite_output(total < 0, abs(total.numerator), total.denominator, register_acc)
        return output_value(code, register_acc)
    return add


def result_code(step_codes: Sequence[int], starts: Sequence[bool], c: Exact, accumulator: Accumulator) -> int:
    """The code of a fused DotGeneral: the register (:func:`promoted_code`) with promotion, else the
    last step's D; with no steps, C rounded to the output (to fp32 with promotion)."""
    if accumulator.promote_every is not None:
        return promoted_code(step_codes, starts, c, accumulator)
    return step_codes[-1] if step_codes else round_output(c, accumulator)


@lru_cache(maxsize=None)
def register_format(nan_bits: int | None, storage: str = "fp32") -> Accumulator:
    """The register as an output: ``storage`` (fp32, or fp16 for an fp16 D), nearest-even, overflow
    to +-Inf, NaN written as ``nan_bits`` (a pattern of the storage's width)."""
    return Accumulator(output=storage, nan_bits=nan_bits)
