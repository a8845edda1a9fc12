"""The ``encode`` suite kind: fp32 inputs -> element codes, for one rounding and overflow mode
(:class:`EncodeSuite`: :mod:`.description`; stimulus: :mod:`.stimulus`; expected values:
:mod:`.expected`; rounding-decision classes: :mod:`.classes`)."""

from .description import EncodeSuite

__all__ = ["EncodeSuite"]
