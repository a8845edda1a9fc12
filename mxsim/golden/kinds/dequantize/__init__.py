"""The ``dequantize`` suite kind: one block's scale (sub-scales, NVFP4 tensor scale) and codes ->
the output words of one float type, under one set of DequantizeOptions (:class:`DequantizeSuite`:
:mod:`.description`; stimulus: :mod:`.stimulus`; expected values: :mod:`.expected`; classes:
:mod:`.classes`, :mod:`.reach`; scale exponents: :mod:`.exponents`)."""

from .description import SUITE_OUTPUTS, DequantizeSuite
from .exponents import EXPONENT_RANGE, scale_code_of_exponent

__all__ = ["DequantizeSuite", "EXPONENT_RANGE", "SUITE_OUTPUTS", "scale_code_of_exponent"]
