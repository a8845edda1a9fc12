"""Vectorized fused multiply-accumulate steps (``accumulate="fused"``; docs/numerics.md section 4.1,
as resolved by the fused-step specification): the model of :mod:`mxsim.ref.fused` on many
DotGeneral rows at once, bit-identical to it.

A row's K = n_blocks * k products are cut into steps of ``step`` products; each step computes
D = C + (its terms) in one exact multi-term adder and rounds once to the output; D is the next
step's C. Steps are sequential, so the step loop runs over steps and is vectorized over rows
(in chunks of rows, on up to two threads); everything that does not depend on C (term values,
anchor exponents of the terms, specials) is computed for all steps at once.

Terms (``step_terms``): every product (value (-1)^s * Ma*Mb * 2^(Ea + Eb - fa - fb + XA + XB),
anchor exponent e = Ea + Eb + XA + XB), or each group of ``term_size`` products of one scale block
(value: the group's exact product sum times both scale values; anchor exponent XA + XB). A term
counts for the anchor iff one of its products has two finite nonzero elements (``convert_elements``:
an element's anchor exponent is read in that format; ``interleave_steps``: each block's codes are
permuted into the order the steps take them, :meth:`Accumulator.product_order`). C counts with
e_C = max(floor(log2 |C|), ``c_min_exponent`` or -126), or ``c_zero_exponent`` for a zero C.

Routes, chosen per format pair and accumulator (the bounds are derived in :class:`FusedKernel`):

* ``anchor="max"`` in float64: every term value is exact in float64 (element values and scale
  values are short dyadic numbers); per step and row, A = max(term anchors, e_C), and each term
  times 2^(F - A) is an exact float64 that ``np.trunc`` (truncate) or ``np.rint`` (rne) cuts to
  the grid. |q_term| <= R * 2^F (R: the largest term / 2^anchor exponent: 4 for products) and
  |q_C| < 2^(F + 1), so the step sum S stays below 2^53 and is exact in any order whenever
  terms_per_step * R * 2^F + 2^(F + 1) < 2^53 (F <= 44 for 64 product terms).
* ``anchor="fixed"`` in int64 limbs: the terms cut to the grid 2^(XA + XB - F) do not depend
  on C, so their step sums P are computed for all steps at once, as two int64 limbs
  P = H * 2^40 + L (0 <= L < 2^40; up to 100 bits: the 70-bit sums of FP8 E5M2 at F = 34).
  Products are cut from their integer significands, Ma*Mb * 2^(Ea + Eb - fa - fb + F), which do
  not depend on the scales either (bits(Ma*Mb) + the largest shift + bits(step) <= 100); block
  terms from their exact float64 values (each cut term below 2^53, a step's sum below 2^60).
  Per step, V = C + P * 2^g is formed exactly on the grid 2^min(g, expC) (g = XA + XB - F, expC
  the exponent of C's LSB) by shifting one operand's limbs, then narrowed to 61 bits with a
  sticky bit (which keeps every rounding decision of a <= 24-bit output) and rounded. Lanes whose
  aligned sum would exceed 100 bits (C more than 76 bits above the grid and not bypassed, or far
  below a nonzero P) are detected per step and their rows recomputed by the reference.
* ``anchor="fixed"`` in float64, the usual case of the above (FP8/FP6/FP4 products that are not
  cut on the grid and whose step sums are exact in float64, an fp32 output without ftz, rne/rtz/
  rup/rdn; :meth:`FusedKernel._float_fixed_tables`): P * 2^g is an exact float64; C is added with
  one float addition whose exact error comes from TwoSum, the sum is rounded to odd at 53 bits
  with it, and one cast rounds to fp32. Lanes with a bypassed C, a result from 2^127 or specials
  take the integer step above.
* the reference (:func:`mxsim.ref.dot.dot_general`, row by row) for configurations outside these
  bounds (F beyond 44 with 64 product terms and ``anchor="max"``, block terms of FP8 E5M2, whose
  group sums exceed 53 bits, ...): correct, slow.

Specials (decided before the integer sum, as the hardware's side path): a NaN C, a NaN scale in
the step's blocks, a NaN product (NaN element, Inf x 0) or Inf terms of both signs (Inf products
and an Inf C) make the step NaN (``nan_bits``); other Inf products or an Inf C make it +-Inf. An
exactly zero step sum V gives +0, whatever the signs of C and the products, but where a zero
product sum passes C on (:meth:`Accumulator.zero_sum_passes_c`: D = C, -0 kept).

Modules, by seam: this one is the entry point (:func:`dot_general_steps`: rows, chunks, the rows
left to the reference); :mod:`mxsim.fast.fused_kernel` chooses the route and runs the step loop;
the routes are :mod:`mxsim.fast.fused_max`, :mod:`mxsim.fast.fused_fixed` (integer and float64
steps) and :mod:`mxsim.fast.fused_late`; :mod:`mxsim.fast.fused_tables` holds the code tables and
the step layout, :mod:`mxsim.fast.fused_wide` C, special outcomes and wide integers.
"""

from __future__ import annotations

import numpy as np

from ..options import Accumulator
from ..ref import dot as ref_dot
from ..ref.output import fp32_bits
from .chunks import map_chunks
from .dot import Operand, _check_operands, _rows_of
from .fused_kernel import FusedKernel
from .promote import group_blocks, promoted_steps
from .output import float32_parts, round_output

__all__ = ["check_fused_operands", "dot_general_steps"]

ROW_CHUNK = 8192  # rows per chunk at most: the step loop's operations run on arrays of this length
MIN_ROW_CHUNK = 1024  # rows per chunk at least (but for the last): a chunk costs a fixed few ms of Python besides


def check_fused_operands(a: Operand, b: Operand, acc: Accumulator):
    """The format pair of two operands for fused steps, or ValueError: the settings must suit the
    formats (:meth:`Accumulator.check_block_format`), and fused steps take no tensor scale (the
    hardware multiplies NVFP4's tensor scale in outside the MMA)."""
    fmt_a, fmt_b = _check_operands(a, b, paired=False)
    acc.check_block_format(fmt_a, fmt_b)
    for name, op in (("a", a), ("b", b)):
        if op.tensor_scale is not None and op.tensor_scale != 1:
            raise ValueError(
                f"operand {name} ({op.fmt.name}) has tensor scale {op.tensor_scale}: accumulate='fused' takes no "
                "tensor scale (quantize with nvfp4_tensor_scale='none', or use accumulate='separate')"
            )
    return fmt_a, fmt_b


# --- entry point --------------------------------------------------------------------------------
def dot_general_steps(a: Operand, b: Operand, acc: Accumulator, shape_a: tuple, shape_b: tuple, n_blocks: int,
                      c=None, keep_steps: bool = False):
    """Fused DotGeneral of rows of ``n_blocks`` block pairs, the rows broadcast NumPy style (as
    :func:`mxsim.fast.dot.dot_general_broadcast`: ``a`` holds prod(shape_a) rows of ``n_blocks``
    blocks, codes of shape (prod(shape_a) * n_blocks, k), row-major; ``b`` likewise; the result
    rows run over lead = np.broadcast_shapes(shape_a, shape_b)): on each row the same results as
    :func:`mxsim.ref.dot.dot_general` with ``accumulate="fused"``.

    ``c``: each result row's accumulator input C as fp32 words (shape (prod(lead),), integers
    below 2^32), or None for C = +0. Returns (output codes of shape lead, every step's output
    code of shape lead + (n_steps,) if ``keep_steps`` else None), uint32 for fp32 storage, uint16
    for bf16 and fp16; with no products the output is C rounded.

    Memory: no broadcast copy of an operand is made; beyond the results, the temporaries are
    bounded by ROW_CHUNK rows and CHUNK_PRODUCTS products per chunk, whatever the shapes.
    """
    fmt_a, fmt_b = check_fused_operands(a, b, acc)
    lead = np.broadcast_shapes(tuple(shape_a), tuple(shape_b))
    rows = int(np.prod(lead, dtype=np.int64))
    for name, op, shape in (("a", a, shape_a), ("b", b, shape_b)):
        if op.codes.shape[0] != int(np.prod(shape, dtype=np.int64)) * n_blocks:
            raise ValueError(f"operand {name}: {op.codes.shape[0]} blocks do not make rows {tuple(shape)} of {n_blocks} blocks")
    words = np.zeros(rows, dtype=np.int64) if c is None else np.asarray(c).astype(np.int64).reshape(rows)
    if acc.promote_every is not None and group_blocks(acc, fmt_a.block_size):  # promotion (mxsim.fast.promote)
        return promoted_steps(dot_general_steps, a, b, acc, tuple(shape_a), tuple(shape_b), n_blocks, words, keep_steps)
    take_a, take_b = _rows_of(a, shape_a, lead, n_blocks), _rows_of(b, shape_b, lead, n_blocks)
    kernel = FusedKernel(fmt_a, fmt_b, acc, n_blocks)
    n_steps = kernel.layout.n_steps
    dtype = np.uint32 if acc.output_storage == "fp32" else np.uint16
    codes = np.zeros(rows, dtype=dtype)
    steps = np.zeros((rows, n_steps), dtype=dtype) if keep_steps else None
    refer = np.full(rows, kernel.route == "reference" or acc.promote_every is not None)  # (groups inside blocks)
    if not n_steps:
        codes = _round_c(words, acc).astype(dtype)
    elif rows and not refer[0]:
        _run_chunks(kernel, take_a, take_b, rows, n_blocks, words, codes, steps, refer)
    if refer.any():
        _by_reference(np.flatnonzero(refer), take_a, take_b, fmt_a, fmt_b, acc, n_blocks, words, codes, steps)
    return codes.reshape(lead), (steps.reshape(lead + (n_steps,)) if keep_steps else None)


def _run_chunks(kernel: FusedKernel, take_a, take_b, rows: int, n: int, words, codes, steps, refer) -> None:
    """Run the kernel over chunks of rows (on up to two threads), filling ``codes``, ``steps``
    (if not None) and ``refer``; each chunk fetches its tiles of blocks from ``take_a`` and
    ``take_b`` (see :func:`mxsim.fast.dot._rows_of`)."""
    k = kernel.fmt_a.block_size

    def fetch(start, stop, j0, j1):
        arrays = []
        for take in (take_a, take_b):
            op = take(start, stop, j0, j1)
            arrays.append((op.codes.reshape(stop - start, j1 - j0, k), op.subscales, op.scales.reshape(stop - start, -1)))
        (ca, sub_a, sc_a), (cb, sub_b, sc_b) = arrays
        subs = [np.zeros((stop - start, j1 - j0, 0), np.uint8) if sub is None else sub.reshape(stop - start, j1 - j0, -1)
                for sub in (sub_a, sub_b)]
        return ca, cb, subs[0], subs[1], sc_a, sc_b

    def chunk(start, stop, c_words, out_codes, out_refer, *out_steps):
        last, kept, misfit = kernel.run(lambda j0, j1: fetch(start, stop, j0, j1), n, c_words, bool(out_steps))
        out_codes[...], out_refer[...] = last, misfit
        if out_steps:
            out_steps[0][...] = kept

    # at least four chunks when there are enough rows, so that both threads work; a few hundred rows (a golden
    # run aiming C) in one chunk, on the calling thread
    arrays = [words, codes, refer] + ([steps] if steps is not None else [])
    map_chunks(chunk, rows, *arrays, chunk=min(ROW_CHUNK, max(MIN_ROW_CHUNK, -(-rows // 4))))


def _round_c(words: np.ndarray, acc: Accumulator) -> np.ndarray:
    """C rounded to the output (the result of a DotGeneral without products)."""
    negative, significand, exponent, special = float32_parts(words.astype(np.uint32).view(np.float32))
    return round_output(negative, significand, exponent, special, acc)


def _by_reference(rows_index, take_a, take_b, fmt_a, fmt_b, acc: Accumulator, n: int, words, codes, steps) -> None:
    """Recompute some rows with the reference model, in place (exact Python integers)."""
    for r in rows_index:
        op_a, op_b = take_a(r, r + 1, 0, n), take_b(r, r + 1, 0, n)
        blocks_a, blocks_b = [op_a.block(j) for j in range(n)], [op_b.block(j) for j in range(n)]
        result = ref_dot.dot_general(blocks_a, blocks_b, fmt_a, fmt_b, acc, c=fp32_bits(int(words[r])))
        codes[r] = result.code
        if steps is not None:
            steps[r] = result.steps
