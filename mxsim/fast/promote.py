"""Promotion into an fp32 register on arrays (docs/numerics.md section 4.1; ``promote_every``):
:mod:`mxsim.ref.promote` vectorized, bit-identical to it.

With ``promote_every`` = N a multiple of the block size k, every promotion group is N / k whole
block pairs, so a row of n blocks is, in memory, G = n // (N / k) rows of N / k blocks (plus a
shorter tail group): the chains of all groups run at once as rows of
:func:`mxsim.fast.fused.dot_general_steps` without promotion, from +0. An N that is not a multiple
of k (a group inside a block: steps of 8 promoted every 16) is left to the reference by the caller.

The fp32 register starts at C and adds the groups' partial D in order with float32 additions,
which NumPy performs as IEEE 754 binary32 round-to-nearest-even (subnormals kept, signed zeros,
overflow to +-Inf, NaN for NaN or Inf + -Inf); a NaN register is written as ``nan_bits``
(0x7FC00000 when None). Results are fp32 words (uint32). With an fp16 output the register is
fp16: C enters it rounded to fp16 (nearest-even) and the float16 additions round each sum once
(NumPy adds in float32 and rounds to float16: exact for two fp16 operands, since 24 >= 2 * 11 + 2
bits make that double rounding innocuous); the results are fp16 words (uint16, NaN ``nan_bits``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..options import Accumulator
from .dot import Operand
from .output import fp32_words

__all__ = ["chain_accumulator", "fold_register", "group_blocks", "promoted_steps", "split_groups"]

CANONICAL_NAN = 0x7FC00000
CANONICAL_NAN_16 = 0x7E00  # fp16's quiet NaN


def chain_accumulator(acc: Accumulator) -> Accumulator:
    """The fused chain of one promotion group: ``acc`` without promotion."""
    return replace(acc, promote_every=None)


def group_blocks(acc: Accumulator, block_size: int) -> int | None:
    """Blocks per promotion group, or None when ``promote_every`` is not a multiple of the block
    size (the group boundaries fall inside blocks: the reference's case)."""
    n = acc.promote_every
    return n // block_size if n % block_size == 0 else None


def split_groups(op: Operand, rows: int, n_blocks: int, first: int, last: int) -> Operand:
    """Blocks [first, last) of each of the ``rows`` rows of ``op`` (rows of ``n_blocks`` blocks),
    as an :class:`Operand` of rows of ``last - first`` blocks (a copy: the tail group of a row)."""
    def part(array):
        return np.ascontiguousarray(array.reshape(rows, n_blocks, *array.shape[1:])[:, first:last]).reshape(
            -1, *array.shape[1:])

    subscales = None if op.subscales is None else part(op.subscales)
    return Operand(op.fmt, part(op.scales), subscales, part(op.codes), op.tensor_scale)


def fold_register(c_words, partials: list[np.ndarray], nan_bits: int | None,
                  storage: str = "fp32") -> np.ndarray:
    """The register's words: C (fp32 words, any integer dtype, or None for +0) plus every array of
    ``partials`` (fp32 words of each group's partial D, in group order), one addition each in the
    register's ``storage`` (fp32, or fp16: C rounded to it first); NaN written as ``nan_bits``."""
    dtype, words_dtype = (np.float32, np.uint32) if storage == "fp32" else (np.float16, np.uint16)
    shape = partials[0].shape if partials else np.shape(c_words)
    with np.errstate(over="ignore", invalid="ignore"):
        register = np.zeros(shape, dtype) if c_words is None else (
            np.asarray(c_words).astype(np.uint32).reshape(shape).view(np.float32).astype(dtype))
        for words in partials:
            register += np.asarray(words).astype(np.uint32).view(np.float32).astype(dtype)
    out = register.view(words_dtype).copy()
    canonical = CANONICAL_NAN if storage == "fp32" else CANONICAL_NAN_16
    out[np.isnan(register)] = canonical if nan_bits is None else nan_bits
    return out


def promoted_steps(chain_steps, a: Operand, b: Operand, acc: Accumulator, shape_a: tuple, shape_b: tuple, n_blocks: int,
                   words, keep_steps: bool):
    """:func:`mxsim.fast.fused.dot_general_steps` (given as ``chain_steps``) with promotion in
    groups of whole blocks (see the module docstring): the chains of every group as rows of their
    own, from +0, then the register (fp32, or fp16 for an fp16 output) from C (``words``, fp32 words
    of every result row) over their last D. Returns (result words, every step's D or None), as ``chain_steps`` does."""
    lead = np.broadcast_shapes(shape_a, shape_b)
    per_group = group_blocks(acc, a.fmt.block_size)
    chain, full = chain_accumulator(acc), n_blocks // per_group
    tail = n_blocks - full * per_group
    rows_a, rows_b = int(np.prod(shape_a, dtype=np.int64)), int(np.prod(shape_b, dtype=np.int64))
    partials, steps = [], []
    if full:  # the whole groups: rows of per_group blocks (views of the operands when there is no tail)
        head_a = split_groups(a, rows_a, n_blocks, 0, full * per_group) if tail else a
        head_b = split_groups(b, rows_b, n_blocks, 0, full * per_group) if tail else b
        codes, kept = chain_steps(head_a, head_b, chain, shape_a + (full,), shape_b + (full,), per_group,
                                  keep_steps=keep_steps)
        partials += [fp32_words(codes[..., g], chain) for g in range(full)]
        if keep_steps:
            steps.append(kept.reshape(lead + (-1,)))
    if tail:
        tail_a = split_groups(a, rows_a, n_blocks, full * per_group, n_blocks)
        tail_b = split_groups(b, rows_b, n_blocks, full * per_group, n_blocks)
        codes, kept = chain_steps(tail_a, tail_b, chain, shape_a, shape_b, tail, keep_steps=keep_steps)
        partials.append(fp32_words(codes, chain))
        if keep_steps:
            steps.append(kept)
    result = fold_register(words.reshape(lead), partials, acc.nan_bits, acc.output_storage).reshape(lead)
    if not keep_steps:
        return result, None
    return result, np.concatenate(steps, axis=-1) if steps else np.zeros(lead + (0,), result.dtype)
