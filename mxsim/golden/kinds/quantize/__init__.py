"""The ``quantize`` suite kind: a block of fp32 inputs (NVFP4: and its tensor scale) -> the scale, its
exponent, sub-scales and element codes, under one set of QuantizeOptions (docs/numerics.md section 2).

:class:`QuantizeSuite` is in :mod:`.description`; stimulus in :mod:`.stimulus` (directed and random
blocks) and :mod:`.structured` (blocks aimed at every rounding case and at the clamped scale);
expected values in :mod:`.expected`; classes in :mod:`.classes` and :mod:`.decisions` (the rounding
decisions of the elements)."""

from .description import QuantizeSuite

__all__ = ["QuantizeSuite"]
