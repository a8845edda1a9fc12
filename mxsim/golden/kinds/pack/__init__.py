"""The ``pack`` suite kind: one block -> its byte-stream image in one element-stream layout
(:class:`PackSuite`: :mod:`.description`; stimulus: :mod:`.stimulus`; expected values and classes:
:mod:`.expected`)."""

from .description import PackSuite

__all__ = ["PackSuite"]
