"""What the element roundings of a batch of quantized blocks decide on, as arrays (docs/numerics.md
sections 2 and 3.3): the fast path's half of the rounding record whose reference half is
:class:`mxsim.ref.block.BlockRoundings`.

Element (i, j) of a quantization rounds the magnitude ``value[i, j]`` divided by
``divisor[i, j]`` onto its element grid (with the suite's rounding mode, saturating); its input
resolution (the weight of the value's last bit) is
2^(max(floor(log2 value), last_bit_floor) - 23). Filled by :func:`mxsim.fast.block.quantize_blocks_traced`
from the fast quantizer's own intermediate arrays (never from the reference)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["RoundingInputs", "AS_NORMAL_LAST_BIT_FLOOR", "FP32_LAST_BIT_FLOOR", "last_bit_floor"]

FP32_LAST_BIT_FLOOR = -126  # fp32 values: the last bit of a subnormal weighs 2^(-126 - 23)
AS_NORMAL_LAST_BIT_FLOOR = -127  # subnormal_inputs='as_normal' reads m * 2^-149 as (2^23 + m) * 2^-150


def last_bit_floor(subnormal_inputs: str) -> int:
    """The ``last_bit_floor`` of fp32 inputs read under ``subnormal_inputs`` (docs/numerics.md section 2.3)."""
    return AS_NORMAL_LAST_BIT_FLOOR if subnormal_inputs == "as_normal" else FP32_LAST_BIT_FLOOR


class RoundingInputs(NamedTuple):
    """(n_blocks, block_size) arrays (``divisor`` may be (n_blocks, 1): one per block).

    ``rounds`` (bool): the element's value is finite and nonzero and its block is not a NaN block,
    so its code comes from a rounding (zeros, NaN and Inf elements and NaN blocks have none);
    ``negative`` (bool): the input's sign bit; ``value`` (float64, >= 0, exact): the magnitude the
    element's rounding reads (after ``subnormal_inputs`` and ``flush_subnormal_blocks``; NVFP4
    ``fp32_steps``: fp32(x * factor); ``fp32_reciprocal``: the fp32 quotient), 0 where it does not
    round; ``divisor`` (float64 > 0, exact): D, the element rounds value / D (2^(E - tau), the
    ``min_scale_divisor`` divisor at E = -127, NVFP4's s_t * scale, or 1); ``last_bit_floor``
    (int): see the module docstring."""

    rounds: np.ndarray
    negative: np.ndarray
    value: np.ndarray
    divisor: np.ndarray
    last_bit_floor: int
