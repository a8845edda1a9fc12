"""What every golden suite kind shares: the :class:`Suite` base, the memoized reference decoder, fp32
bit conversions, value-kind classes, and block-word packing (element i at bits [i*w, (i+1)*w)).
"""

from __future__ import annotations

import random
from fractions import Fraction
from functools import lru_cache

from ..formats import get_format
from ..ref.decode import decode as _decode
from ..ref.encode import encode
from ..ref.exact import Exact
from ..options.profiles import get_profile, resolve_quantize
from .classes import CLASSES, FLAGS_BITS
from .fields import Field

__all__ = [
    "ORIGINS", "FP32", "Suite", "decode", "fp32_bits", "fp32_value", "kind_classes", "is_subnormal_code", "code_sets",
    "max_codes", "subnormal_codes",
    "pack_word", "unpack_word", "jsonable", "profile_options", "MIN_CLASS_VECTORS", "StarvedClassError",
    "check_reachable_coverage",
]

MIN_CLASS_VECTORS = 8
"""The fewest vectors a suite's catalogue must have in each class its configuration can reach
(:meth:`Suite.reachable_classes`): a generation of the whole catalogue with fewer fails
(:func:`check_reachable_coverage`). Eight, so a class is never met by one lucky vector."""


class StarvedClassError(ValueError):
    """A reachable class got fewer than :data:`MIN_CLASS_VECTORS` vectors (the message names each)."""

ORIGINS = ("exhaustive", "directed", "random")
FP32 = "fp32"
_FP32_FORMAT = get_format(FP32)


_TABLES: dict[int, tuple] = {}  # id(format) -> (the format, {code: its decoded value})
_TABLES_MAX = 256  # formats kept (emptied when full: custom formats come and go)
_VALUES_MAX = 1 << 16  # codes kept per format of more than 8 bits (filled as they are met)


def decode(code: int, fmt) -> Exact:
    """The reference decoder, memoized (golden suites decode the same few codes many times): per
    format (found by the object's identity: hashing a format costs more than decoding) a table of
    every code of a format of at most 8 bits, of the codes met so far of a wider one."""
    entry = _TABLES.get(id(fmt))
    if entry is not None and entry[0] is fmt and code.__class__ is int:
        value = entry[1].get(code)
        if value is not None:
            return value
    return _decode_new(code, fmt)


def _decode_new(code: int, fmt) -> Exact:
    element = get_format(fmt, kind="element")
    value = _decode(code, element)  # ValueError for a code out of range
    entry = _TABLES.get(id(fmt))
    if entry is None or entry[0] is not fmt:
        if len(_TABLES) >= _TABLES_MAX:
            _TABLES.clear()
        values = {} if element.width > 8 else {c: _decode(c, element) for c in range(1 << element.width)}
        entry = _TABLES[id(fmt)] = (fmt, values)
    if code.__class__ is int and len(entry[1]) < _VALUES_MAX:
        entry[1][code] = value
    return value


def fp32_bits(x: Exact) -> int:
    """The fp32 bits of ``x`` rounded to nearest even (IEEE overflow). A value fp32 holds exactly
    (what golden stimulus draws) is packed directly; any other goes through the reference encoder."""
    exact = _fp32_exact_bits(x) if x.kind == "finite" else None
    return encode(x, FP32, "rne", "ieee") if exact is None else exact


def _fp32_exact_bits(x: Exact) -> int | None:
    """sign | biased exponent (8) | fraction (23) of a finite value fp32 holds exactly, else None."""
    n, d = x.magnitude.numerator, x.magnitude.denominator
    if n == 0:
        return x.sign << 31
    if d & (d - 1):
        return None  # not a dyadic rational
    k = d.bit_length() - 1  # magnitude = n * 2^-k, n odd unless k == 0
    top = n.bit_length() - 1
    exponent = top - k
    if exponent > 127:
        return None
    if exponent >= -126:
        if top > 23 and n & ((1 << (top - 23)) - 1):
            return None  # more than 24 significant bits
        fraction = (n << 23 >> top) & 0x7FFFFF
        return x.sign << 31 | (exponent + 127) << 23 | fraction
    shift = 149 - k  # a subnormal: magnitude / 2^-149 must be an integer
    if shift < 0 and n & ((1 << -shift) - 1):
        return None
    return x.sign << 31 | (n << shift if shift >= 0 else n >> -shift)


def fp32_value(bits: int) -> Exact:
    """The exact value of fp32 bits (the reference decoder; not memoized: inputs rarely repeat)."""
    return _decode(bits, _FP32_FORMAT)


def kind_classes(x: Exact) -> set:
    """nan, inf, zero or negative_zero, as the value is."""
    if x.is_nan:
        return {"nan"}
    if x.is_inf:
        return {"inf"}
    if x.is_zero:
        return {"negative_zero" if x.sign else "zero"}
    return set()


@lru_cache(maxsize=None)
def code_sets(fmt) -> dict[str, frozenset]:
    """The codes of an element or scale format (at most 16 bits) by what they hold, from the
    reference decoder: ``nan``, ``inf``, ``zero`` (finite, magnitude 0), ``nonzero`` (finite,
    magnitude > 0), ``negative`` (the value's sign bit), ``max`` (finite with the largest
    magnitude, max_normal: the ``max`` class), ``subnormal`` (:func:`is_subnormal_code`), ``neg2``
    (the two's-complement code -2^(bits-1): the ``int8_neg2`` class)."""
    codes = range(1 << fmt.width)
    values = [decode(c, fmt) for c in codes]
    twos = fmt.kind == "int" and fmt.encoding == "twos_complement"
    tests = {
        "nan": lambda c, v: v.is_nan,
        "inf": lambda c, v: v.is_inf,
        "zero": lambda c, v: v.is_zero,
        "nonzero": lambda c, v: v.is_finite and not v.is_zero,
        "negative": lambda c, v: bool(v.sign),
        "max": lambda c, v: v.is_finite and v.magnitude == fmt.max_normal,
        "subnormal": lambda c, v: is_subnormal_code(c, fmt),
        "neg2": lambda c, v: twos and c == fmt.sign_mask,
    }
    return {name: frozenset(c for c, v in zip(codes, values) if test(c, v)) for name, test in tests.items()}


def max_codes(fmt) -> frozenset:
    """The codes of the ``max`` class (see :func:`code_sets`)."""
    return code_sets(fmt)["max"]


def subnormal_codes(fmt) -> frozenset:
    """The subnormal codes of a format (see :func:`code_sets`)."""
    return code_sets(fmt)["subnormal"]


def is_subnormal_code(code: int, fmt) -> bool:
    return fmt.kind == "float" and fmt.subnormals and 0 < (code & ~fmt.sign_mask) < (1 << fmt.mantissa_bits)


class Suite:
    """Base of every suite kind: ``inputs`` and ``outputs`` fields (``flags`` last), ``params``
    for the manifest, and

    * ``stimulus(rng, level)``: a generator of ``(inputs, origin)``, the catalogue in its fixed
      order (exhaustive enumerations, directed corners, then the level's random vectors), every
      draw from ``rng`` in turn; its length (:meth:`catalogue_size`) never depends on the draws;
    * ``random_inputs(rng, index)``: one random vector beyond the catalogue (``--count``), drawn
      from a generator seeded for that vector alone (:mod:`.pipeline`);
    * ``compute(inputs)`` -> ``(outputs, classes)``: the expected values of one vector.

    A kind MAY also define ``compute_batch(inputs: dict[str, list[int]]) -> (outputs: dict[str,
    list[int]], flags: list[int])``: the outputs of many vectors at once (one list per field, in
    vector order) and each vector's flags word of computed classes (:func:`.classes.flag_bits`,
    without the origin bits). :func:`.pipeline.expected` calls it when present, else ``compute``
    per vector; both must give the same values."""

    kind = ""
    nested_options: dict = {}  # a dict-valued field -> the options dataclass whose fields it takes
    inputs: list[Field]
    outputs: list[Field]

    @property
    def fields(self) -> list[Field]:
        return self.inputs + self.outputs + [Field("flags", FLAGS_BITS, description="corner classes (mxsim.golden.classes)")]

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
        """The corner classes (:mod:`.classes`) the suite's configuration can reach, each of which
        its catalogue must hit at least :data:`MIN_CLASS_VECTORS` times (checked when the whole
        catalogue is generated). Default: none required; kinds override it."""
        return frozenset()

    def profile_record(self) -> dict | None:
        """The profile the suite follows (name, source, version, every option it sets) for the
        manifest's ``profile`` key, or None (then the manifest has no such key)."""
        profile = getattr(self, "profile_def", None)
        return None if profile is None else profile.as_dict()


def check_reachable_coverage(suite: Suite, coverage: dict[str, int]) -> None:
    """Raise :class:`StarvedClassError` if a class of ``suite.reachable_classes()`` has fewer than
    :data:`MIN_CLASS_VECTORS` vectors in ``coverage`` (class -> vectors, the manifest's), or is not
    a class of the catalogue."""
    reachable = suite.reachable_classes()
    unknown = sorted(set(reachable) - set(CLASSES))
    if unknown:
        raise ValueError(f"{suite.kind}/{suite.name}: reachable_classes names {', '.join(unknown)}, not classes of "
                         "mxsim.golden.classes.CLASSES")
    starved = {name: coverage.get(name, 0) for name in sorted(reachable) if coverage.get(name, 0) < MIN_CLASS_VECTORS}
    if starved:
        counts = ", ".join(f"{name}: {n}" for name, n in starved.items())
        raise StarvedClassError(
            f"{suite.kind}/{suite.name}: the catalogue reaches too few vectors of class(es) its configuration can reach "
            f"({counts}); every reachable class needs at least {MIN_CLASS_VECTORS} (mxsim.golden.suite."
            "MIN_CLASS_VECTORS): add directed stimulus for them"
        )


def profile_options(profile, fmt, options: dict):
    """(Profile or None, QuantizeOptions) of a suite: the profile's quantize options for ``fmt``
    with the suite's ``options`` on top; a format the profile does not cover is refused."""
    return resolve_quantize(profile, options, fmt)


def profile_of(name):
    """The Profile called ``name`` (None for None)."""
    return None if name is None else get_profile(name)



def pack_word(values, width: int) -> int:
    """Item i of ``values`` (each below 2^width) at bits [i*width, (i+1)*width)."""
    if width == 8:  # bytes: one conversion (the same word for items below 256)
        return int.from_bytes(bytes(values), "little")
    word = 0
    for i, v in enumerate(values):
        word |= v << (i * width)
    return word


def unpack_word(word: int, width: int, count: int) -> list[int]:
    """The ``count`` items of ``width`` bits of a word (bits above them are ignored)."""
    if width == 8:
        return list((word & ((1 << (8 * count)) - 1)).to_bytes(count, "little"))
    mask = (1 << width) - 1
    return [(word >> (i * width)) & mask for i in range(count)]


def jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Fraction) else v) for k, v in d.items()}
