"""The ``dequantize`` suite kind: one block's scale (sub-scales, NVFP4 tensor scale) and codes ->
the output words of one float type, under one set of DequantizeOptions (docs/numerics.md section 3.1).

:class:`DequantizeSuite` is in :mod:`.description`; stimulus in :mod:`.stimulus`; expected values in
:mod:`.expected`; classes in :mod:`.classes` (per vector) and :mod:`.reach` (where the rounding
decisions lie, what a suite must reach); scale exponents in :mod:`.exponents`."""

from .description import SUITE_OUTPUTS, DequantizeSuite
from .exponents import EXPONENT_RANGE, scale_code_of_exponent

__all__ = ["DequantizeSuite", "EXPONENT_RANGE", "SUITE_OUTPUTS", "scale_code_of_exponent"]
