"""What a suite's catalogue must reach: at least :data:`MIN_CLASS_VECTORS` vectors in every class its
configuration can reach (contract section 3.3; :meth:`mxsim.golden.kinds.suite.Suite.reachable_classes`).
"""

from __future__ import annotations

from .catalogue import CLASSES

__all__ = ["MIN_CLASS_VECTORS", "StarvedClassError", "check_reachable_coverage"]

MIN_CLASS_VECTORS = 8
"""The fewest vectors a suite's catalogue must have in each class its configuration can reach
(:meth:`Suite.reachable_classes`): a generation of the whole catalogue with fewer fails
(:func:`check_reachable_coverage`). Eight, so a class is never met by one lucky vector."""


class StarvedClassError(ValueError):
    """A reachable class got fewer than :data:`MIN_CLASS_VECTORS` vectors (the message names each)."""


def check_reachable_coverage(suite, coverage: dict[str, int]) -> None:
    """Raise :class:`StarvedClassError` if a class of ``suite.reachable_classes()`` has fewer than
    :data:`MIN_CLASS_VECTORS` vectors in ``coverage`` (class -> vectors, the manifest's), or is not
    a class of the catalogue."""
    reachable = suite.reachable_classes()
    unknown = sorted(set(reachable) - set(CLASSES))
    if unknown:
        raise ValueError(f"{suite.kind}/{suite.name}: reachable_classes names {', '.join(unknown)}, not classes of "
                         "mxsim.golden.coverage.catalogue.CLASSES")
    starved = {name: coverage.get(name, 0) for name in sorted(reachable) if coverage.get(name, 0) < MIN_CLASS_VECTORS}
    if starved:
        counts = ", ".join(f"{name}: {n}" for name, n in starved.items())
        raise StarvedClassError(
            f"{suite.kind}/{suite.name}: the catalogue reaches too few vectors of class(es) its configuration can reach "
            f"({counts}); every reachable class needs at least {MIN_CLASS_VECTORS} (mxsim.golden.coverage.reach."
            "MIN_CLASS_VECTORS): add directed stimulus for them"
        )
