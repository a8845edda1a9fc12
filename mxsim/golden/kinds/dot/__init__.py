"""The ``dot`` suite kind: two blocks -> the datapath register, its LSB, the anchor and the result.
With an accumulator input (``c``) or fused multiply-accumulate steps (docs/numerics.md section 4.1)
-> the result and, if asked, every step's D (``steps``).

:class:`DotSuite` is in :mod:`.description` (its report hooks in :mod:`.reports`); stimulus in
:mod:`.stimulus` (one vector at a time) and :mod:`.random_run` (a run of random vectors drawn with
NumPy), the first fused step's D for aiming C in :mod:`.first_steps`; expected values from the
reference in :mod:`.expected` and from the fast path in :mod:`.fast_batch`; classes in :mod:`.classes`."""

from .classes import rounding_flags
from .description import DotSuite, register_bits
from .fast_batch import merged_block_dots

__all__ = ["DotSuite", "merged_block_dots", "register_bits", "rounding_flags"]
