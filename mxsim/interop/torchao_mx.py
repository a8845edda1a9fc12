"""mxsim.MXTensor <-> torchao's ``torchao.prototype.mx_formats.mx_tensor.MXTensor`` (torchao 0.18).

torchao's layout: ``qdata`` holds the elements with blocks along the last axis (float8_e4m3fn /
float8_e5m2 for MXFP8; uint8 with the code in the low 6 bits for MXFP6; uint8 packed pairs,
element 2j in the low nibble, for MXFP4, whose logical last axis is twice qdata's); ``scale`` is
float8_e8m0fnu of shape [..., K / block_size]; ``elem_dtype`` is a torch dtype, or the strings
'fp6_e3m2' / 'fp6_e2m3'. A 2-d torchao tensor may be transposed (``t.t()``: qdata and scale
transposed views, blocks along the logical first axis): that is mxsim's ``axis=0``.
"""

from __future__ import annotations

import numpy as np

from ..formats import BlockFormat, get_format
from ..tensor import MXTensor
from ._codes import pack_fp4, require_e8m0_scales, unpack_fp4
from ._optional import require
from .torch_tensors import tensor_bytes

__all__ = ["from_torchao", "to_torchao"]

ELEMENTS = ("fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1")
_MODULE = "torchao.prototype.mx_formats.mx_tensor"


def _elem_dtypes(torch) -> dict:
    """mxsim element name -> torchao elem_dtype."""
    return {
        "fp8_e4m3": torch.float8_e4m3fn,
        "fp8_e5m2": torch.float8_e5m2,
        "fp6_e3m2": "fp6_e3m2",
        "fp6_e2m3": "fp6_e2m3",
        "fp4_e2m1": torch.float4_e2m1fn_x2,
    }


def _element_of(fmt) -> str:
    """The element name of an MX format torchao can hold: an FP element of ELEMENTS, E8M0 scales,
    no sub-scales or tensor scale (any block size)."""
    element = next((n for n in ELEMENTS if get_format(n) == fmt.element), None)
    if element is None or fmt.scale != get_format("e8m0") or fmt.subblocks or fmt.tensor_scale is not None:
        raise ValueError(
            f"mx has format {fmt.name!r}; torchao holds E8M0-scaled blocks of {', '.join(ELEMENTS)} "
            "(mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1, or these with another block size)"
        )
    return element


def to_torchao(mx: MXTensor, orig_dtype=None):
    """An mxsim MXFP8/MXFP6/MXFP4 :class:`mxsim.MXTensor` as a torchao ``MXTensor``.

    ``qdata``: MXFP8 ``mx.codes`` viewed as float8_e4m3fn / float8_e5m2, MXFP6 ``mx.codes`` as
    uint8 (no copy: both share memory with ``mx``); MXFP4 packed to uint8, byte j = code 2j |
    code 2j+1 << 4 (a copy). ``scale``: ``mx.scales`` viewed as float8_e8m0fnu, shape
    [..., K / block_size] (no copy). ``orig_dtype`` (default torch.float32) is what torchao's
    ``dequantize()`` returns; ``kernel_preference`` EMULATED; scales not swizzled.

    Blocks must run along the last axis, or ``axis=0`` of a 2-d tensor (returned as torchao's
    transposed tensor, ``.t()`` of the row-major one); the block axis must be a whole number of
    blocks (torchao has no padding). ValueError otherwise, for other formats, and for a tensor with
    scale_encoding='int8_exponent' (torchao's scales are E8M0); TypeError if ``mx`` is not an
    MXTensor.
    """
    torch = require("torch", "to_torchao")
    mx_tensor = require(_MODULE, "to_torchao", "torchao")
    from torchao.quantization.quantize_.common.kernel_preference import KernelPreference

    if not isinstance(mx, MXTensor):
        raise TypeError(f"mx must be an mxsim.MXTensor, got {type(mx).__name__}")
    element = _element_of(mx.fmt)
    require_e8m0_scales(mx.scale_encoding, "torchao's MXTensor")
    ndim, k = len(mx.shape), mx.fmt.block_size
    if not (ndim and (mx.axis == ndim - 1 or (ndim == 2 and mx.axis == 0))):
        raise ValueError(
            f"mx has axis={mx.axis} of shape {mx.shape}; torchao needs blocks along the last axis (or axis 0 of a 2-d "
            "tensor, as a transposed torchao tensor)"
        )
    if mx.shape[mx.axis] % k:
        raise ValueError(f"mx has a partial block: axis length {mx.shape[mx.axis]} is not a multiple of {k}")
    codes = np.ascontiguousarray(mx.codes)
    if element == "fp4_e2m1":
        qdata = torch.from_numpy(pack_fp4(codes, "mx.codes"))
    else:
        qdata = torch.from_numpy(codes)
        if element.startswith("fp8"):
            qdata = qdata.view(_elem_dtypes(torch)[element])
    scale = torch.from_numpy(np.ascontiguousarray(mx.scales)).view(torch.float8_e8m0fnu)
    result = mx_tensor.MXTensor(
        qdata,
        scale,
        elem_dtype=_elem_dtypes(torch)[element],
        block_size=k,
        orig_dtype=torch.float32 if orig_dtype is None else orig_dtype,
        kernel_preference=KernelPreference.EMULATED,
        act_quant_kwargs=None,
        is_swizzled_scales=False,
    )
    return result.t() if mx.axis != ndim - 1 else result


def _unswizzle(scale: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """cuBLAS "blocked" scale layout (torchao ``to_blocked``) -> (rows, cols): the matrix padded to
    (128, 4) multiples is cut into 128 x 4 tiles, stored row-block-major, 512 bytes each; scale
    (r, c) of a tile sits at byte (r % 32) * 16 + (r // 32) * 4 + c."""
    row_tiles, col_tiles = -(-rows // 128), -(-cols // 4)
    expected = row_tiles * col_tiles * 512
    if scale.size != expected:
        raise ValueError(f"t.scale (swizzled) has {scale.size} bytes; expected {expected} for {rows} x {cols} scales")
    tiles = scale.reshape(row_tiles, col_tiles, 32, 4, 4)  # [tile row, tile col, r % 32, r // 32, c]
    return tiles.transpose(0, 3, 2, 1, 4).reshape(row_tiles * 128, col_tiles * 4)[:rows, :cols]


def from_torchao(t, **options) -> MXTensor:
    """A torchao ``MXTensor`` as an :class:`mxsim.MXTensor` (a copy: ``MXTensor.from_codes``
    checks and copies its inputs; tensors on another device are copied to the CPU).

    Element codes: qdata's bytes (MXFP4: unpacked, element 2j from the low nibble); scales:
    the E8M0 bytes of ``t.scale``. Format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3 or
    mxfp4_e2m1 for block size 32, else a custom :class:`mxsim.BlockFormat` with that block size.
    Blocks along the last axis (row-major qdata), or along axis 0 for a transposed 2-d tensor.
    Swizzled scales (``is_swizzled_scales``) are un-swizzled from the cuBLAS blocked layout (for
    row-major qdata). ``options``: :class:`mxsim.QuantizeOptions` fields to record (torchao does
    not record its scaling mode; scale_encoding must stay 'e8m0'). TypeError if ``t`` is not a
    torchao MXTensor; ValueError for another elem_dtype or layout.
    """
    torch = require("torch", "from_torchao")
    mx_tensor = require(_MODULE, "from_torchao", "torchao")
    if not isinstance(t, mx_tensor.MXTensor):
        raise TypeError(f"t must be a torchao {_MODULE}.MXTensor, got {type(t).__name__}")
    require_e8m0_scales(options.get("scale_encoding", "e8m0"), "torchao's MXTensor", "options")
    elements = {str(dtype): name for name, dtype in _elem_dtypes(torch).items()}
    if str(t.elem_dtype) not in elements:
        raise ValueError(f"t has elem_dtype {t.elem_dtype}; allowed: {', '.join(elements)}")
    if t.scale.dtype != torch.float8_e8m0fnu:
        raise ValueError(f"t.scale has dtype {t.scale.dtype}; expected torch.float8_e8m0fnu")
    element = elements[str(t.elem_dtype)]
    qdata, scale = t.qdata, t.scale
    transposed = not qdata.is_contiguous()
    if transposed:
        if qdata.ndim != 2 or not qdata.t().is_contiguous() or t.is_swizzled_scales:
            raise ValueError(
                f"t.qdata has shape {tuple(qdata.shape)} and strides {qdata.stride()}; supported: row-major qdata, "
                "or the transpose of a row-major 2-d qdata with unswizzled scales"
            )
        qdata, scale = qdata.t(), scale.t()
    codes = tensor_bytes(qdata)
    if element == "fp4_e2m1":
        codes = unpack_fp4(codes)
    scales = tensor_bytes(scale)
    k = t.block_size
    if t.is_swizzled_scales:
        rows = int(np.prod(codes.shape[:-1], dtype=np.int64))
        scales = _unswizzle(np.ascontiguousarray(scales).reshape(-1), rows, codes.shape[-1] // k)
        scales = scales.reshape(codes.shape[:-1] + (codes.shape[-1] // k,))
    if k == 32:
        fmt = get_format(f"mx{element}")
    else:
        fmt = BlockFormat(f"mx{element}_k{k}", get_format(element), block_size=k, scale=get_format("e8m0"))
    return MXTensor.from_codes(scales, codes, fmt, axis=0 if transposed else -1, **options)
