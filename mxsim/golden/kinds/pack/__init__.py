"""The ``pack`` suite kind: one block -> its byte-stream image in one element-stream layout.

:class:`PackSuite` is in :mod:`.description`; stimulus in :mod:`.stimulus`; expected values and
classes in :mod:`.expected`."""

from .description import PackSuite

__all__ = ["PackSuite"]
