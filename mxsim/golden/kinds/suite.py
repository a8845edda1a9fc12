"""What every golden suite kind shares: the :class:`Suite` base, its origins and the profile of a
quantizing suite (values, codes and words: :mod:`..values`; coverage rules: :mod:`..coverage.reach`).
"""

from __future__ import annotations

import random
from fractions import Fraction

from ...options.profiles import get_profile, resolve_quantize
from ..coverage.catalogue import FLAGS_BITS
from .fields import Field

__all__ = ["ORIGINS", "Suite", "jsonable", "profile_options", "profile_of"]

ORIGINS = ("exhaustive", "directed", "random")


class Suite:
    """Base of every suite kind: ``inputs`` and ``outputs`` fields (``flags`` last), ``params``
    for the manifest, and

    * ``stimulus(rng, level)``: a generator of ``(inputs, origin)``, the catalogue in its fixed
      order (exhaustive enumerations, directed corners, then the level's random vectors), every
      draw from ``rng`` in turn; its length (:meth:`catalogue_size`) never depends on the draws;
    * ``random_inputs(rng, index)``: one random vector beyond the catalogue (``--count``), drawn
      from a generator seeded for that vector alone (:mod:`..compute.pipeline`);
    * ``compute(inputs)`` -> ``(outputs, classes)``: the expected values of one vector.

    A kind MAY also define ``compute_batch(inputs: dict[str, list[int]]) -> (outputs: dict[str,
    list[int]], flags: list[int])``: the outputs of many vectors at once (one list per field, in
    vector order) and each vector's flags word of computed classes (:func:`..coverage.catalogue.flag_bits`,
    without the origin bits). :func:`.pipeline.expected` calls it when present, else ``compute``
    per vector; both must give the same values."""

    kind = ""
    nested_options: dict = {}  # a dict-valued field -> the options dataclass whose fields it takes
    inputs: list[Field]
    outputs: list[Field]

    @property
    def fields(self) -> list[Field]:
        return self.inputs + self.outputs + [Field("flags", FLAGS_BITS, description="corner classes (mxsim.golden.coverage.catalogue)")]

    def params(self) -> dict:
        raise NotImplementedError

    def describe(self) -> dict:
        return {}

    def stimulus(self, rng: random.Random, level: int):
        raise NotImplementedError

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        raise NotImplementedError

    def catalogue_size(self, level: int) -> int:
        """How many vectors ``stimulus(rng, level)`` yields (kinds override this with arithmetic;
        the default runs the stimulus once)."""
        return sum(1 for _ in self.stimulus(random.Random("mxsim-golden:size"), level))

    def reachable_classes(self) -> frozenset[str]:
        """The corner classes (:mod:`..coverage.catalogue`) the suite's configuration can reach, each of which
        its catalogue must hit at least :data:`MIN_CLASS_VECTORS` times (checked when the whole
        catalogue is generated). Default: none required; kinds override it."""
        return frozenset()

    def profile_record(self) -> dict | None:
        """The profile the suite follows (name, source, version, every option it sets) for the
        manifest's ``profile`` key, or None (then the manifest has no such key)."""
        profile = getattr(self, "profile_def", None)
        return None if profile is None else profile.as_dict()


def profile_options(profile, fmt, options: dict):
    """(Profile or None, QuantizeOptions) of a suite: the profile's quantize options for ``fmt``
    with the suite's ``options`` on top; a format the profile does not cover is refused."""
    return resolve_quantize(profile, options, fmt)


def profile_of(name):
    """The Profile called ``name`` (None for None)."""
    return None if name is None else get_profile(name)



def jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Fraction) else v) for k, v in d.items()}
