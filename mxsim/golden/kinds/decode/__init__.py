"""The ``decode`` suite kind: every code of an element format -> the fp32 bits of its value.

:class:`DecodeSuite` is in :mod:`.description`; expected values and classes in :mod:`.expected`."""

from .description import DecodeSuite

__all__ = ["DecodeSuite"]
