"""The ``quantize`` suite kind: k fp32 inputs -> a block's scale, its exponent, sub-scales and element codes.
NVFP4 blocks also take their tensor scale; one set of QuantizeOptions per suite (docs/numerics.md
section 2).

:class:`QuantizeSuite` is in :mod:`.description`; stimulus in :mod:`.stimulus` (directed and random
blocks) and :mod:`.structured` (blocks aimed at every rounding case and at the clamped scale);
expected values in :mod:`.expected`; classes in :mod:`.classes` and, for the rounding decisions of the
elements, the record both paths fill (:mod:`...coverage.element_roundings`)."""

from .description import QuantizeSuite

__all__ = ["QuantizeSuite"]
