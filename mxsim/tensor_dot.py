"""``mxsim.dot``: DotGeneral of two :class:`~mxsim.tensor.MXTensor` along their block axes.

The datapath is the contract's model (conventions.md section 4) as configured by an
:class:`~mxsim.accumulator.Accumulator`; the work is done by :mod:`mxsim.fast.dot`, which is
bit-identical to the reference :mod:`mxsim.ref.dot`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .accumulator import Accumulator
from .fast.dot import Operand, dot_general_blocks, output_values
from . import ref
from .tensor import MXTensor

__all__ = ["dot", "DotResult"]


class DotResult(NamedTuple):
    """What :func:`dot` returns with ``details=True``. ``values``/``bits`` have the broadcast
    shape of the operands' non-block axes; the per-block arrays add a last axis of n_blocks.

    * ``values``: the results (float32 for fp32 and bf16 outputs, float16 for fp16);
    * ``bits``: the output format's codes (uint32 for fp32, uint16 for bf16/fp16);
    * ``block_bits``: each block's Dot rounded to the output format (its code);
    * ``accumulator``: each block's integer register (int64; Python ints in an object array when
      wider), with ``accumulator * 2^lsb_exponent`` = the block's sum before scales;
    * ``lsb_exponent`` and ``anchor`` (e_max, 0 for a block without a nonzero product): int64.
    """

    values: np.ndarray
    bits: np.ndarray
    block_bits: np.ndarray
    accumulator: np.ndarray
    lsb_exponent: np.ndarray
    anchor: np.ndarray


def _accumulator(accumulator) -> Accumulator:
    if accumulator is None:
        return Accumulator()
    if isinstance(accumulator, str):
        return Accumulator.preset(accumulator)
    if not isinstance(accumulator, Accumulator):
        raise ValueError(f"accumulator must be an Accumulator, a preset name or None, not {type(accumulator).__name__}")
    return accumulator


def _lead_shape(a: MXTensor, b: MXTensor) -> tuple:
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
        raise ValueError(f"the block axes have lengths {length_a} (a, axis {a.axis}) and {length_b} (b, axis {b.axis}); they must match")
    try:
        return np.broadcast_shapes(a.codes.shape[:-1], b.codes.shape[:-1])
    except ValueError:
        raise ValueError(
            f"the non-block axes of a {a.codes.shape[:-1]} and b {b.codes.shape[:-1]} do not broadcast"
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


def _operand(t: MXTensor, lead: tuple) -> Operand:
    n_blocks = t.scales.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    codes = np.broadcast_to(_zeroed_padding(t), lead + t.codes.shape[-1:]).reshape(rows * n_blocks, t.fmt.block_size)
    scales = np.broadcast_to(t.scales, lead + (n_blocks,)).reshape(-1)
    subscales = None
    if t.subscales is not None:
        subscales = np.broadcast_to(t.subscales, lead + t.subscales.shape[-2:]).reshape(-1, t.fmt.subblocks)
    return Operand(t.fmt, scales, subscales, codes, t.tensor_scale)


def dot(a: MXTensor, b: MXTensor, accumulator=None, *, details: bool = False):
    """DotGeneral of ``a`` and ``b`` along their block axes, through the datapath model.

    The block axes must have the same length and the formats the same block size (mixed element
    types are fine); the other axes broadcast against each other, NumPy style, in the order the
    tensors store them (the original order with the block axis removed): a (M, 1, K) and b (N, K)
    give (M, N). ``accumulator``: an :class:`~mxsim.accumulator.Accumulator`, a preset name
    (``Accumulator.preset``), or None for the contract's defaults.

    Returns the results (see :class:`DotResult` for dtypes), or a :class:`DotResult` with the
    per-block registers if ``details``. ValueError for a tensor with scale_encoding='int8_exponent'.
    """
    acc = _accumulator(accumulator)
    for name, t in (("a", a), ("b", b)):
        if isinstance(t, MXTensor) and t.options.scale_encoding != "e8m0":
            raise ValueError(
                f"{name} has scale_encoding={t.options.scale_encoding!r}; dot reads E8M0 scales (scale_encoding='e8m0')"
            )
    lead = _lead_shape(a, b)
    rows = int(np.prod(lead, dtype=np.int64))
    n_blocks = a.scales.shape[-1] if a.scales.ndim else 1
    bits, blocks = dot_general_blocks(_operand(a, lead), _operand(b, lead), acc, rows, details, n_blocks)
    values = output_values(bits, acc).reshape(lead)
    if not details:
        return values
    per_block = lead + (blocks.codes.shape[-1],)
    return DotResult(
        values,
        bits.reshape(lead),
        blocks.codes.reshape(per_block),
        blocks.accumulator.reshape(per_block),
        blocks.lsb_exponent.reshape(per_block),
        blocks.anchor.reshape(per_block),
    )
