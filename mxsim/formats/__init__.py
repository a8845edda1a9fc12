"""The formats layer: parametric element, scale and block formats, and the named catalogue."""

from .block import BlockFormat
from .element import ElementFormat, FloatFormat, IntFormat
from .registry import ALIASES, FORMATS, format_names, get_format

__all__ = [
    "FloatFormat",
    "IntFormat",
    "ElementFormat",
    "BlockFormat",
    "FORMATS",
    "ALIASES",
    "format_names",
    "get_format",
]
