"""The formats layer: parametric element, scale and block formats, and the named catalogue."""

from .block import BlockFormat
from .element import ElementFormat, FloatFormat, IntFormat
from .registry import ALIASES, FORMATS, FP32_E8M13, format_names, get_format

__all__ = [
    "FloatFormat",
    "IntFormat",
    "ElementFormat",
    "BlockFormat",
    "FORMATS",
    "ALIASES",
    "FP32_E8M13",
    "format_names",
    "get_format",
]
