"""NVFP4's per-tensor parts of the fast quantizer (docs/numerics.md section 2.2): the tensor scales
s_t of many tensors at once, checked per block, and the block-by-block route through the reference
(stochastic rounding, inputs float32 does not hold)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..options import QuantizeOptions
from ..ref.block import NVFP4_SCALE_NUMERATOR, check_tensor_scale, nvfp4_tensor_scale, quantize_block

__all__ = ["nvfp4_by_reference", "nvfp4_tensor_scales", "tensor_scales"]


def tensor_scales(fmt, tensor_scale, n_blocks: int) -> np.ndarray | None:
    """NVFP4 tensor scales s_t as a (n_blocks,) float64 array (None stays None): a scalar is
    repeated for every block, an array must hold one value per block. Every value must be what
    the contract's s_t is (docs/numerics.md section 2.2): positive, finite and exact in fp32
    (2^-149 .. FP32_MAX, at most 24 significant bits); ValueError naming ``tensor_scale``
    otherwise (zero, negative, -0, NaN, Inf, or a shape other than (n_blocks,))."""
    if tensor_scale is None:
        return None
    if np.ndim(tensor_scale) == 0:
        return np.full(n_blocks, float(check_tensor_scale(fmt, tensor_scale)), dtype=np.float64)
    s_t = np.asarray(tensor_scale)
    if s_t.shape != (n_blocks,) or s_t.dtype.kind not in "iuf":
        raise ValueError(f"tensor_scale has shape {s_t.shape} and dtype {s_t.dtype}; expected one number per block, "
                         f"shape ({n_blocks},)")
    s_t = s_t.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        fp32_exact = s_t.astype(np.float32).astype(np.float64) == s_t
    bad = ~(np.isfinite(s_t) & (s_t > 0) & fp32_exact & (s_t >= 2.0**-149))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"tensor_scale[{i}]={float(s_t[i])!r} is not allowed; expected finite positive values exactly "
                         "representable in fp32 (2^-149 <= tensor_scale <= (2 - 2^-23) * 2^127, at most 24 "
                         "significant bits)")
    return s_t


def nvfp4_tensor_scales(amax: np.ndarray, options: QuantizeOptions) -> np.ndarray:
    """:func:`mxsim.ref.block.nvfp4_tensor_scale` of many tensors at once: (N,) float32 s_t for
    (N,) float32 tensor maxima ``amax`` (finite, >= 0): fp32(amax / 2688), at least fp32's
    smallest subnormal; 1 for amax = 0 or ``nvfp4_tensor_scale='none'``
    (docs/numerics.md section 2.2). ``nvfp4_arith='fp32_reciprocal'`` (its global scale) goes
    tensor by tensor through the reference.

    Exact although rounded twice (binary64, then fp32): amax = a * 2^e (a a 24-bit integer) and
    2688 = 21 * 2^7, so the quotient is (a / 21) * 2^(e - 7), whose binary expansion either ends
    (then binary64 holds it exactly) or repeats with period 6 and runs of at most 5 equal bits; a
    second rounding can differ from one rounding only where the first lands on a midpoint of the
    second's grid, which needs some 28 equal bits below fp32's last kept bit."""
    amax = np.asarray(amax, dtype=np.float32)
    if options.nvfp4_arith == "fp32_reciprocal":
        values = [nvfp4_tensor_scale(Fraction(float(a)), options) for a in amax.tolist()]
        return np.array([float(v) for v in values], dtype=np.float32)
    if options.nvfp4_tensor_scale == "none":
        return np.ones(amax.shape, dtype=np.float32)
    if not (np.isfinite(amax) & (amax >= 0)).all():
        raise ValueError("amax holds a value that is not finite and >= 0; expected tensor maxima")
    quotient = (amax.astype(np.float64) / NVFP4_SCALE_NUMERATOR).astype(np.float32)
    smallest = np.float32(2.0**-149)
    return np.where(amax == 0, np.float32(1), np.maximum(quotient, smallest)).astype(np.float32)


def nvfp4_by_reference(blocks, fmt, options, tensor_scale: np.ndarray | None, rand_bits, source: str):
    """Block by block through the reference; ``tensor_scale``: None or one s_t per block."""
    rand = None if rand_bits is None else np.broadcast_to(rand_bits, blocks.shape)
    results = [
        quantize_block(
            [float(v) for v in block],
            fmt,
            options,
            tensor_scale=None if tensor_scale is None else Fraction(float(tensor_scale[i])),
            rand_bits=None if rand is None else rand[i],
            source=source,
        )
        for i, block in enumerate(blocks)
    ]
    scales = np.array([r.scale for r in results], dtype=np.uint8)
    codes = np.array([r.codes for r in results], dtype=np.uint8).reshape(blocks.shape)
    return scales, None, codes
