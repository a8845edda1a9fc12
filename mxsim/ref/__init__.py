"""The integer-only reference model: the source of truth every fast path is checked against.

Scalars only, and no float arithmetic: values are :class:`Exact` (sign, Fraction magnitude, kind),
carried on the hot paths as integer ratios (sign, n, d) (:func:`mxsim.ref.exact.ratio`).
"""

from . import dot
from .block import nvfp4_tensor_scale, quantize_block
from .stored_block import QuantizedBlock, dequantize_block
from .dequant import dequantize_block_bits, round_to_output
from .decode import decode
from .encode import encode
from .exact import Exact, floor_log2, to_exact
from .round import round_magnitude
from .scale import scale_exponent

__all__ = [
    "encode",
    "decode",
    "Exact",
    "to_exact",
    "floor_log2",
    "round_magnitude",
    "scale_exponent",
    "quantize_block",
    "dequantize_block",
    "dequantize_block_bits",
    "round_to_output",
    "nvfp4_tensor_scale",
    "QuantizedBlock",
    "dot",
]
