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

import importlib
from typing import TYPE_CHECKING

from . import ref
from .formats import BlockFormat, FloatFormat, IntFormat, format_names, get_format
from .options import OVERFLOW_MODES, ROUNDING_MODES, SCALE_RULES, DequantizeOptions, QuantizeOptions
from .options import PROFILES, Accumulator, Profile

from ._version import __version__

if TYPE_CHECKING:  # the names below, as type checkers and the API docs read them
    from .fast import decode, encode
    from .fileformat import load, save
    from .tensor import MXTensor, quantize
    from .tensor_dot import DotResult, dot

# the array API's modules, imported on first use (a command-line run that makes golden vectors
# never loads the tensor and file modules: about 0.1 s of CPU per process)
_LAZY = {
    "encode": "fast",
    "decode": "fast",
    "MXTensor": "tensor",
    "quantize": "tensor",
    "load": "fileformat",
    "save": "fileformat",
    "DotResult": "tensor_dot",
    "dot": "tensor_dot",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mxsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

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
