"""``mxsim.dot``: DotGeneral of two :class:`~mxsim.tensor.MXTensor` along their block axes.

The datapath is the contract's model (docs/numerics.md section 4) as configured by an
:class:`~mxsim.options.accumulate.Accumulator`; the work is done by :mod:`mxsim.fast.dot`, which is
bit-identical to the reference :mod:`mxsim.ref.dot`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .options import Accumulator
from .fast.dot import Operand, dot_general_broadcast
from .fast.fused import dot_general_steps
from .fast.output import output_values
from . import ref
from .reading import check_allocation
from .tensor import MXTensor

_RESULT_BYTES = 16  # at least: its output bits (uint64) and its value (float64), before any block is computed

__all__ = ["dot", "DotResult"]


class DotResult(NamedTuple):
    """What :func:`dot` returns with ``details=True``. ``values``/``bits`` have the broadcast
    shape of the operands' non-block axes; the per-block arrays add a last axis of n_blocks.

    * ``values``: the results (float32 for fp32 and bf16 outputs, float16 for fp16);
    * ``bits``: the output format's codes (uint32 for fp32, uint16 for bf16/fp16);
    * ``block_bits``: each block's Dot rounded to the output format (its code);
    * ``accumulator``: each block's integer register (int64; Python ints in an object array when
      wider), with ``accumulator * 2^lsb_exponent`` = the block's sum before scales;
    * ``lsb_exponent`` and ``anchor`` (e_max, 0 for a block without a nonzero product): int64;
    * ``steps``: every fused step's output code, shape lead + (n_steps,) (the output's code dtype;
      n_steps = 0 for separate accumulation); the last one is ``bits``, except with ``promote_every``
      (docs/numerics.md section 4.1), where the steps are the chains' D (each promotion group's first
      step from +0) and ``bits`` is the fp32 register that adds their partial sums to C.

    With ``accumulate="fused"`` the per-block arrays are the block Dots of the same accumulator
    with separate accumulation (its fused-only fields at their defaults): each block rounded to the
    output on its own, what the fused datapath never forms; they are computed only for details.
    """

    values: np.ndarray
    bits: np.ndarray
    block_bits: np.ndarray
    accumulator: np.ndarray
    lsb_exponent: np.ndarray
    anchor: np.ndarray
    steps: np.ndarray


def _check_operands(a, b) -> None:
    """Two MXTensors of one block size whose block axes have the same length."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, MXTensor):
            raise ValueError(f"{name} must be an MXTensor (see mxsim.quantize), not {type(t).__name__}")
    if a.fmt.block_size != b.fmt.block_size:
        raise ValueError(
            f"formats {a.fmt.name!r} (block_size {a.fmt.block_size}) and {b.fmt.name!r} "
            f"(block_size {b.fmt.block_size}) do not share a block size"
        )
    length_a = a.shape[a.axis] if a.shape else 1
    length_b = b.shape[b.axis] if b.shape else 1
    if length_a != length_b:
        raise ValueError(
            f"the block axes have lengths {length_a} (a, axis {a.axis}) and {length_b} (b, axis {b.axis}); "
            "they must match"
        )


def _with_unit_axes(t: MXTensor, before: int, after: int) -> MXTensor:
    """``t`` with ``before`` axes of length 1 ahead of its non-block axes and ``after`` behind
    them, the block axis last: the same codes, viewed for an outer product."""
    lead = t.codes.shape[:-1]
    length = t.shape[t.axis] if t.shape else 1

    def view(array, tail):
        return array.reshape((1,) * before + lead + (1,) * after + tail)

    subscales = None if t.subscales is None else view(t.subscales, t.subscales.shape[-2:])
    shape = (1,) * before + lead + (1,) * after + (length,)
    codes, scales = view(t.codes, t.codes.shape[-1:]), view(t.scales, t.scales.shape[-1:])
    return MXTensor(t.fmt, scales, codes, shape, len(shape) - 1, t.options, subscales, t.tensor_scale)


def _outer(a: MXTensor, b: MXTensor) -> tuple[MXTensor, MXTensor]:
    """a and b viewed so that their non-block axes broadcast to a's followed by b's."""
    before, after = a.codes.ndim - 1, b.codes.ndim - 1
    return _with_unit_axes(a, 0, after), _with_unit_axes(b, before, 0)


def _lead_shape(a: MXTensor, b: MXTensor) -> tuple:
    """The broadcast shape of the operands' non-block axes."""
    try:
        return np.broadcast_shapes(a.codes.shape[:-1], b.codes.shape[:-1])
    except ValueError:
        raise ValueError(
            f"the non-block axes of a {a.codes.shape[:-1]} and b {b.codes.shape[:-1]} do not broadcast; "
            "to pair every row of a with every row of b, use outer=True (mxsim dot --outer)"
        ) from None


def _zeroed_padding(t: MXTensor) -> np.ndarray:
    """The codes with the padding of a partial last block set to +0, whatever it held (codes
    wrapped with from_codes may carry anything there; dequantize ignores it, and so must dot)."""
    length = t.shape[t.axis] if t.shape else 1
    if t.codes.shape[-1] == length or not t.codes[..., length:].any():
        return t.codes
    if not ref.decode(0, t.fmt.element).is_zero:
        raise ValueError(f"format {t.fmt.name!r} has no zero code to pad a partial block with")
    codes = t.codes.copy()
    codes[..., length:] = 0
    return codes


def _operand(t: MXTensor) -> Operand:
    """The blocks of ``t``, not broadcast: prod(t.codes.shape[:-1]) rows of n_blocks blocks."""
    k = t.fmt.block_size
    subscales = None if t.subscales is None else t.subscales.reshape(-1, t.fmt.subblocks)
    return Operand(t.fmt, t.scales.reshape(-1), subscales, _zeroed_padding(t).reshape(-1, k), t.tensor_scale)


def _c_words(c, lead: tuple) -> np.ndarray | None:
    """The accumulator input as one fp32 word per result (uint32, shape (rows,)), or None."""
    if c is None:
        return None
    array = np.asarray(c)
    if array.dtype.kind != "f" or array.dtype.itemsize != 4:
        raise ValueError(f"c must be a float32 array (the accumulator input C), not dtype {array.dtype}")
    try:
        if np.broadcast_shapes(array.shape, lead) != lead:
            raise ValueError
    except ValueError:
        raise ValueError(f"c of shape {array.shape} does not broadcast to the result shape {lead}") from None
    native = array.astype(np.float32)  # any byte order -> native, bits unchanged
    return np.broadcast_to(native, lead).reshape(-1).view(np.uint32)


def dot(a: MXTensor, b: MXTensor, accumulator=None, *, outer: bool = False, c=None, details: bool = False):
    """DotGeneral of ``a`` and ``b`` along their block axes, through the datapath model.

    The block axes must have the same length and the formats the same block size (mixed element
    types are fine); the other axes broadcast against each other, NumPy style, in the order the
    tensors store them (the original order with the block axis removed): a (M, 1, K) and b (N, K)
    give (M, N); a (M, K) and b (M, K) give (M,), row by row. ``outer=True`` pairs every row of
    ``a`` with every row of ``b`` instead: the result has a's non-block axes followed by b's, so
    a (M, K) and b (N, K) give (M, N), the matrix product a @ b^T. ``accumulator``: an
    :class:`~mxsim.options.accumulate.Accumulator`, a preset name (``Accumulator.preset``), or None for
    the contract's defaults.

    ``c``: the accumulator input C, a float32 array (any byte order; NaN, Inf, -0 and subnormals
    are values like any other) that broadcasts to the result shape, or None. Fused steps start
    from C (None: +0); separate accumulation starts its fp32 sum at C, or adds C to the exact sum
    (None: no C term, the results of earlier versions). Fused steps refuse NVFP4 operands with a
    tensor scale.

    Returns the results (see :class:`DotResult` for dtypes), or a :class:`DotResult` with the
    per-block registers and the fused steps if ``details``. ValueError for a tensor with
    scale_encoding='int8_exponent'.

    Memory: the operands are never broadcast into copies. Beyond the inputs and the results
    (O(M * N) for an (M, N) result, plus O(M * N * n_blocks) for the details), the temporaries are
    bounded by :data:`mxsim.fast.dot.DOT_CHUNK` elements of each operand (70 to 130 MB), whatever
    M, N and K are.
    """
    acc = Accumulator.resolve(accumulator)
    for name, t in (("a", a), ("b", b)):
        if isinstance(t, MXTensor) and t.options.scale_encoding != "e8m0":
            raise ValueError(
                f"{name} has scale_encoding={t.options.scale_encoding!r}; dot reads E8M0 scales (scale_encoding='e8m0')"
            )
    _check_operands(a, b)
    if not isinstance(outer, bool):
        raise ValueError(f"outer={outer!r} is not allowed; expected True or False")
    if outer:
        a, b = _outer(a, b)
    lead = _lead_shape(a, b)
    check_allocation(_RESULT_BYTES * math.prod(lead), f"dot{' --outer' if outer else ''}: the result of shape "
                                                      f"{tuple(map(int, lead))} ({_RESULT_BYTES} bytes a result)")
    c_words = _c_words(c, lead)
    n_blocks = a.scales.shape[-1] if a.scales.ndim else 1
    fused = acc.accumulate == "fused"
    shape_a, shape_b = a.codes.shape[:-1], b.codes.shape[:-1]
    if fused:
        bits, steps = dot_general_steps(_operand(a), _operand(b), acc, shape_a, shape_b, n_blocks, c_words, details)
    if not fused or details:  # the blocks of a fused dot are reported as the separate model's
        separate_bits, blocks = dot_general_broadcast(
            _operand(a), _operand(b), shape_a, shape_b, n_blocks, acc.as_separate() if fused else acc, details,
            None if fused else c_words,
        )
        if not fused:
            bits, steps = separate_bits, np.zeros(lead + (0,), dtype=separate_bits.dtype)
    values = output_values(bits, acc).reshape(lead)
    if not details:
        return values
    return DotResult(values, bits, blocks.codes, blocks.accumulator, blocks.lsb_exponent, blocks.anchor, steps)
