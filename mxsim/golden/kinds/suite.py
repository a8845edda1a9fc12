"""What every golden suite kind shares: the :class:`Suite` base, its origins and the profile of a
quantizing suite (values, codes and words: :mod:`..values`; coverage rules: :mod:`..coverage.reach`).
"""

from __future__ import annotations

import random
from fractions import Fraction

from ...options.profiles import PROFILES, get_profile, resolve_quantize
from ..coverage.catalogue import FLAGS_BITS
from .fields import Field

__all__ = ["ORIGINS", "Suite", "BlockProfileBundles", "jsonable", "profile_options", "profile_of"]

ORIGINS = ("exhaustive", "directed", "random")


class Suite:
    """Base of every suite kind: ``inputs`` and ``outputs`` fields (``flags`` last), ``params``
    for the manifest, and the methods below. A kind lives in its own folder,
    ``mxsim/golden/kinds/<kind>/``: ``description.py`` holds the subclass (fields, params, layouts,
    explain hooks, ``example_params``), which inherits its stimulus, expected values and classes
    from mixins in ``stimulus.py``, ``expected.py`` and ``classes.py``; the folder's
    ``__init__.py`` exports the class and one entry in :data:`.registry.KINDS` registers it
    (nothing else names the kind). Every kind defines

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
    per vector; both must give the same values.

    What the reports ask of a kind (the generic machinery never switches on the kind's name):

    * ``example_params``: small params of the kind; every registered kind must have them
      (tests/golden/test_kind_matrix.py runs every path on them);
    * ``field_layouts()``: what every field packs (:class:`.layout.Layout` by field name), for
      ``golden check``'s decomposition of a vector; every kind must define it;
    * ``explain_bundles(params)`` and ``with_bundle(params, key, name)``: the named bundles
      (profiles, presets) ``check --explain`` tries, and the params under one; default: none;
    * ``explain_options``: the options class whose fields the kind takes as top-level params
      (``check --explain`` varies those the params hold), or None;
    * ``explain_outputs(inputs)``: the outputs of many vectors by a faster route than
      ``compute_batch`` (no classes), or None to use the usual one."""

    kind = ""
    nested_options: dict = {}  # a dict-valued field -> the options dataclass whose fields it takes
    explain_options: type | None = None  # the options class of top-level params check --explain varies
    example_params: dict | None = None  # small params of the kind (the kind matrix test runs every path on them)
    inputs: list[Field]
    outputs: list[Field]

    @property
    def fields(self) -> list[Field]:
        return self.inputs + self.outputs + [Field("flags", FLAGS_BITS, description="corner classes (mxsim.golden.coverage.catalogue)")]

    def params(self) -> dict:
        raise NotImplementedError

    def field_layouts(self) -> dict:
        """What every field packs, by field name (``flags`` not included): :class:`.layout.Layout`."""
        raise NotImplementedError(f"suite kind {self.kind!r} does not say what its fields pack (field_layouts)")

    def explain_bundles(self, params: dict) -> list[tuple[str, str]]:
        """(key, name) of every named bundle ``check --explain`` tries on a suite of manifest
        ``params``, in trial order (key ``profile`` or ``preset``); none by default."""
        return []

    def with_bundle(self, params: dict, key: str, name: str) -> dict:
        """The manifest ``params`` under the bundle ``key`` ``name`` (one of :meth:`explain_bundles`)."""
        raise ValueError(f"suite kind {self.kind!r} takes no {key} bundle")

    def explain_outputs(self, inputs: dict[str, list[int]]) -> dict[str, list[int]] | None:
        """The outputs of many vectors (one list per input field) by a route faster than
        ``compute_batch``, or None (the default) where the kind has none."""
        return None

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


class BlockProfileBundles:
    """The explain bundles of a kind with a ``profile`` param and a nested options dict (quantize,
    dequantize): every block profile (:data:`mxsim.options.profiles.PROFILES`) but the suite's own,
    each with only the nested options that differ from what the suite's own profile or the
    defaults give kept on top."""

    def explain_bundles(self, params: dict) -> list[tuple[str, str]]:
        return [("profile", name) for name, p in PROFILES.items() if p.kind == "block" and name != params.get("profile")]

    def with_bundle(self, params: dict, key: str, name: str) -> dict:
        if key != "profile":
            raise ValueError(f"suite kind {self.kind!r} takes no {key} bundle")
        out = dict(params)
        for target in self.nested_options:
            base = type(self)(**{**params, target: {}}).params().get(target, {})
            out[target] = {k: v for k, v in params.get(target, {}).items() if base.get(k) != v}
        return {**out, "profile": name}


def profile_options(profile, fmt, options: dict):
    """(Profile or None, QuantizeOptions) of a suite: the profile's quantize options for ``fmt``
    with the suite's ``options`` on top; a format the profile does not cover is refused."""
    return resolve_quantize(profile, options, fmt)


def profile_of(name):
    """The Profile called ``name`` (None for None)."""
    return None if name is None else get_profile(name)



def jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Fraction) else v) for k, v in d.items()}
