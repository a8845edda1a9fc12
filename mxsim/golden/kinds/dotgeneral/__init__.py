"""The ``dotgeneral`` suite kind: two vectors of blocks -> the DotGeneral result and every block's Dot.
Fused: the result and every step's D. A ``dot`` suite (:mod:`..dot`) with ``n_blocks`` blocks per
vector.

:class:`DotGeneralSuite` is in :mod:`.description`; stimulus in :mod:`.stimulus`; expected values in
:mod:`.expected`; classes of a chunk computed by the fast path in :mod:`.classes`."""

from .description import DotGeneralSuite

__all__ = ["DotGeneralSuite"]
