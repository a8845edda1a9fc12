"""Element and scale codes as torch tensors, and back (zero-copy where the byte layout allows)."""

from __future__ import annotations

import numpy as np

from ..fast.decode import check_codes
from ._codes import DTYPE_NAMES, as_codes, dtype_format, pack_fp4, unpack_fp4
from ._optional import require

__all__ = ["from_torch", "to_torch"]


def tensor_bytes(tensor) -> np.ndarray:
    """The bytes of a torch tensor of one-byte elements as a uint8 numpy array of the same shape:
    a view of a CPU tensor (no copy; detached), a copy of a tensor on another device."""
    import torch

    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    return tensor.view(torch.uint8).numpy()


def to_torch(codes, fmt):
    """Codes of ``fmt`` as a CPU torch tensor of the matching dtype.

    * fp8_e4m3, ue4m3 -> ``torch.float8_e4m3fn``; fp8_e5m2 -> ``float8_e5m2``; e8m0 ->
      ``float8_e8m0fnu``; fp8_e4m3fnuz, fp8_e5m2fnuz -> ``float8_e4m3fnuz``, ``float8_e5m2fnuz``;
      int8 (MXINT8) -> ``torch.int8`` (q; value q/64): same shape, a view of
      ``codes`` when it is a uint8 array (no copy; ``data_ptr()`` is the numpy buffer). A
      read-only array gives torch's not-writable warning; negative strides are copied first.
    * fp6_e3m2, fp6_e2m3 -> ``torch.uint8`` (torch has no FP6 dtype), code in the low 6 bits of
      each byte, as torchao stores FP6: same shape, no copy.
    * fp4_e2m1 -> ``torch.float4_e2m1fn_x2`` packed along the last axis, which halves: byte j =
      code 2j | code 2j+1 << 4 (PyTorch's Float4_e2m1fn_x2.h: element 2j in the low nibble); a
      copy; an odd last axis is a ValueError. torch 2.13 cannot cast this dtype to float; view
      it as uint8 to read the nibbles.

    Move the result with ``.to(device)`` (a copy). ValueError for a format without a torch
    carrier, a non-integer dtype, or codes with bits above the format's width.
    """
    torch = require("torch", "to_torch")
    fmt = dtype_format(fmt)
    codes = as_codes(codes, fmt)
    if fmt.name == "fp4_e2m1":
        return torch.from_numpy(pack_fp4(codes)).view(torch.float4_e2m1fn_x2)
    if any(stride < 0 for stride in codes.strides):
        codes = codes.copy()
    return torch.from_numpy(codes).view(getattr(torch, DTYPE_NAMES[fmt.name][1]))


def from_torch(tensor, fmt=None) -> tuple[np.ndarray, str]:
    """(uint8 numpy codes, mxsim format name) of a torch tensor; the inverse of :func:`to_torch`.

    The format is the dtype's own (float8_e4m3fn -> 'fp8_e4m3', float8_e5m2, float8_e8m0fnu ->
    'e8m0', float4_e2m1fn_x2 -> 'fp4_e2m1', int8), or ``fmt``: for a dtype that carries it
    (``'ue4m3'`` for float8_e4m3fn), or any carried format for a ``torch.uint8`` tensor of raw
    code bytes (FP6 as torchao stores it; ``'fp4_e2m1'`` reads packed pairs, as torchao's MXFP4
    qdata). One-byte codes: a zero-copy view of a CPU tensor's memory, same shape. FP4: unpacked
    (a new array), element 2j from the low nibble of byte j, so the last axis doubles. Tensors on
    another device are copied to the CPU first. TypeError for a non-tensor; ValueError for another
    dtype, a format the dtype does not carry, or codes with bits above the format's width.
    """
    torch = require("torch", "from_torch")
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    own = {getattr(torch, dtype): name for name, (_, dtype) in reversed(DTYPE_NAMES.items()) if dtype != "uint8"}
    allowed = ", ".join(dict.fromkeys(str(getattr(torch, dtype)) for _, dtype in DTYPE_NAMES.values()))
    if tensor.dtype not in own and tensor.dtype != torch.uint8:
        raise ValueError(f"tensor has dtype {tensor.dtype}; allowed dtypes: {allowed}")
    if fmt is None and tensor.dtype == torch.uint8:
        raise ValueError(f"a torch.uint8 tensor needs fmt= (raw code bytes); allowed formats: {', '.join(DTYPE_NAMES)}")
    found = dtype_format(fmt if fmt is not None else own[tensor.dtype])
    if tensor.dtype != torch.uint8 and getattr(torch, DTYPE_NAMES[found.name][1]) != tensor.dtype:
        carried = [name for name, (_, dtype) in DTYPE_NAMES.items() if getattr(torch, dtype) == tensor.dtype]
        raise ValueError(f"fmt={found.name!r} is not carried by dtype {tensor.dtype}; allowed: {', '.join(carried)}")
    codes = tensor_bytes(tensor)
    if found.name == "fp4_e2m1":
        if codes.ndim == 0:
            raise ValueError("tensor is 0-d; packed FP4 needs a last axis of byte pairs")
        return unpack_fp4(codes), found.name
    check_codes("tensor", codes, found.width)
    return codes, found.name
