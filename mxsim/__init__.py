"""mxsim: a bit-accurate reference simulator for Microscaling (MX) block number formats.

Public surface:

* formats: :func:`get_format`, :class:`FloatFormat`, :class:`IntFormat`, :class:`BlockFormat`;
* arrays (fast path): :func:`encode`, :func:`decode`, :func:`quantize` -> :class:`MXTensor`, and
  back with ``MXTensor.dequantize(dtype, options)`` under :class:`DequantizeOptions`;
* the dot-product datapath: :func:`dot` of two MXTensors, configured by :class:`Accumulator`;
* the integer-only reference model: :mod:`mxsim.ref` (``ref.encode``, ``ref.decode``);
* golden vectors for RTL testbenches: :mod:`mxsim.golden` (and ``mxsim golden generate``).

Imported on their own (``import mxsim.strategies``), so that ``import mxsim`` stays light:

* :mod:`mxsim.strategies`: hypothesis strategies and ready-made checks of your implementation;
* :mod:`mxsim.interop`: codes and tensors to and from ml_dtypes, torch, torchao and gpt-oss.
"""

from . import ref
from .fast import decode, encode
from .formats import BlockFormat, FloatFormat, IntFormat, format_names, get_format
from .options import OVERFLOW_MODES, ROUNDING_MODES, SCALE_RULES, DequantizeOptions, QuantizeOptions
from .tensor import MXTensor, quantize
from .fileformat import load, save
from .options import PROFILES, Accumulator, Profile
from .tensor_dot import DotResult, dot

from ._version import __version__

__all__ = [
    "encode",
    "decode",
    "get_format",
    "format_names",
    "FloatFormat",
    "IntFormat",
    "BlockFormat",
    "ROUNDING_MODES",
    "OVERFLOW_MODES",
    "quantize",
    "MXTensor",
    "load",
    "save",
    "dot",
    "DotResult",
    "Accumulator",
    "QuantizeOptions",
    "DequantizeOptions",
    "Profile",
    "PROFILES",
    "SCALE_RULES",
    "ref",
    "__version__",
]
