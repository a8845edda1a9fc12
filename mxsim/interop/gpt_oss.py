"""mxsim.MXTensor <-> the gpt-oss checkpoint's MXFP4 ``*.blocks`` / ``*.scales`` pair (numpy only).

Layout (openai/gpt-oss ``gpt_oss/torch/weights.py``): ``blocks`` uint8 [..., G, 16], the 32 FP4
E2M1 codes of a block in 16 bytes, byte j = code 2j (low nibble) | code 2j+1 << 4 (high nibble);
``scales`` uint8 [..., G], E8M0 codes (value 2^(code - 127)); the weight has shape [..., G * 32],
blocks along its last (input) axis. gpt-oss's loader computes ``ldexp(lut[code], scale - 127)``
and so does **not** treat scale 0xFF as NaN (it gives the element times 2^128: 0, a finite
value, or +-Inf where bf16 overflows), where OCP MX and mxsim decode a 0xFF block as NaN.
"""

from __future__ import annotations

import numpy as np

from ..formats import get_format
from ..tensor import MXTensor
from ._codes import pack_fp4, require_e8m0_scales, unpack_fp4

__all__ = ["from_gpt_oss", "to_gpt_oss"]


def to_gpt_oss(mx: MXTensor) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, scales) of an mxfp4_e2m1 :class:`mxsim.MXTensor` of shape [..., G * 32] blocked
    along its last axis: ``blocks`` uint8 [..., G, 16] (a new array, packed low nibble first),
    ``scales`` uint8 [..., G] (``mx.scales`` itself, no copy). TypeError if ``mx`` is not an
    MXTensor; ValueError for another format, another block axis, a partial last block (gpt-oss
    has no padding), or scale_encoding='int8_exponent' (gpt-oss's scales are E8M0).
    """
    if not isinstance(mx, MXTensor):
        raise TypeError(f"mx must be an mxsim.MXTensor, got {type(mx).__name__}")
    if mx.fmt != get_format("mxfp4_e2m1"):
        raise ValueError(f"mx has format {mx.fmt.name!r}; gpt-oss stores only mxfp4_e2m1")
    require_e8m0_scales(mx.scale_encoding, "gpt-oss")
    ndim = len(mx.shape)
    if not ndim or mx.axis != ndim - 1 or mx.shape[-1] % 32:
        raise ValueError(
            f"mx has shape {mx.shape} and axis={mx.axis}; gpt-oss needs blocks along the last axis and a last axis "
            "that is a multiple of 32"
        )
    blocks = pack_fp4(mx.codes, "mx.codes").reshape(mx.scales.shape + (16,))
    return blocks, mx.scales


def from_gpt_oss(blocks, scales, **options) -> MXTensor:
    """An mxfp4_e2m1 :class:`mxsim.MXTensor` of shape [..., G * 32] (blocks along the last axis)
    from gpt-oss's ``blocks`` (uint8 [..., G, 16]) and ``scales`` (uint8 [..., G]); numpy arrays
    or anything ``np.asarray`` reads as uint8 (a CPU torch.uint8 tensor). The codes are unpacked
    (element 2j from the low nibble of byte j) into a new array. ``options``:
    :class:`mxsim.QuantizeOptions` fields to record (scale_encoding must stay 'e8m0'). ValueError
    for another dtype or mismatched shapes. A scale 0xFF decodes to NaN in mxsim (not in gpt-oss's loader).
    """
    require_e8m0_scales(options.get("scale_encoding", "e8m0"), "gpt-oss", "options")
    blocks, scales = np.asarray(blocks), np.asarray(scales)
    for name, array in (("blocks", blocks), ("scales", scales)):
        if array.dtype != np.uint8:
            raise ValueError(f"{name} has dtype {array.dtype}; expected uint8")
    if blocks.ndim < 2 or blocks.shape[-1] != 16 or scales.shape != blocks.shape[:-1]:
        raise ValueError(
            f"blocks has shape {blocks.shape} and scales {scales.shape}; expected blocks [..., G, 16] and scales "
            "[..., G] with the same leading axes"
        )
    codes = unpack_fp4(blocks).reshape(scales.shape[:-1] + (scales.shape[-1] * 32,))
    return MXTensor.from_codes(scales, codes, "mxfp4_e2m1", **options)
