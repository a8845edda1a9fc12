"""Interoperability: mxsim codes and tensors to and from other libraries' layouts.

* :func:`to_ml_dtypes` / :func:`from_ml_dtypes`: codes <-> ml_dtypes arrays (float8_e4m3fn,
  float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, float8_e8m0fnu; numpy int8 for
  MXINT8), one code per byte in the low bits; zero-copy views of uint8 codes.
* :func:`to_torch` / :func:`from_torch`: codes <-> torch tensors (float8_e4m3fn, float8_e5m2,
  float8_e8m0fnu, int8 as zero-copy views; FP6 as uint8, one code per byte; FP4 packed into
  float4_e2m1fn_x2, element 2j in the low nibble).
* :func:`to_torchao` / :func:`from_torchao`: :class:`mxsim.MXTensor` <-> torchao 0.18's
  ``MXTensor`` (qdata + float8_e8m0fnu scale; MXFP8, MXFP6 unpacked, MXFP4 packed low nibble first).
* :func:`to_gpt_oss` / :func:`from_gpt_oss`: :class:`mxsim.MXTensor` <-> gpt-oss's MXFP4
  ``.blocks`` (uint8 [..., G, 16]) and ``.scales`` (uint8 E8M0 [..., G]).

ml_dtypes, torch and torchao are optional: they are imported when a function needs them, and a
missing one raises ModuleNotFoundError naming the package, the function and the pip command.
"""

from .gpt_oss import from_gpt_oss, to_gpt_oss
from .ml_dtypes_arrays import from_ml_dtypes, to_ml_dtypes
from .torch_tensors import from_torch, to_torch
from .torchao_mx import from_torchao, to_torchao

__all__ = [
    "from_gpt_oss",
    "from_ml_dtypes",
    "from_torch",
    "from_torchao",
    "to_gpt_oss",
    "to_ml_dtypes",
    "to_torch",
    "to_torchao",
]
