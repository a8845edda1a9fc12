"""mxsim: a bit-accurate reference simulator for Microscaling (MX) block number formats.

Public surface:

* formats: :func:`get_format`, :class:`FloatFormat`, :class:`IntFormat`, :class:`BlockFormat`;
* arrays (fast path): :func:`encode`, :func:`decode`;
* the integer-only reference model: :mod:`mxsim.ref` (``ref.encode``, ``ref.decode``).
"""

from . import ref
from .fast import decode, encode
from .formats import BlockFormat, FloatFormat, IntFormat, format_names, get_format
from .policy import OVERFLOW_MODES, ROUNDING_MODES

__version__ = "0.1.0"

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
    "ref",
    "__version__",
]
