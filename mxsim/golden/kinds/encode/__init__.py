"""The ``encode`` suite kind: fp32 inputs -> element codes, for one rounding and overflow mode.

:class:`EncodeSuite` is in :mod:`.description`; stimulus in :mod:`.stimulus`; expected values in
:mod:`.expected`; rounding-decision and code classes in :mod:`.classes`."""

from .description import EncodeSuite

__all__ = ["EncodeSuite"]
