"""What every golden suite kind shares: the :class:`Suite` base, the memoized reference decoder, fp32
bit conversions, value-kind classes, and block-word packing (element i at bits [i*w, (i+1)*w)).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..formats import get_format
from ..ref.decode import decode as _decode
from ..ref.encode import encode
from ..ref.exact import Exact
from .fields import Field

__all__ = [
    "ORIGINS", "FP32", "Suite", "decode", "fp32_bits", "fp32_value", "kind_classes", "is_subnormal_code", "max_codes",
    "subnormal_codes",
    "pack_word", "unpack_word", "jsonable",
]

ORIGINS = ("exhaustive", "directed", "random")
FP32 = "fp32"
_FP32_FORMAT = get_format(FP32)


@lru_cache(maxsize=1 << 16)
def _decode_cached(code: int, fmt) -> Exact:
    return _decode(code, fmt)


def decode(code: int, fmt) -> Exact:
    """The reference decoder, memoized (golden suites decode the same few codes many times)."""
    return _decode_cached(code, get_format(fmt, kind="element"))


def fp32_bits(x: Exact) -> int:
    return encode(x, FP32, "rne", "ieee")


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
def max_codes(fmt) -> frozenset:
    """The codes of an element format whose value is finite with the largest magnitude
    (max_normal): the codes of the ``max`` class."""
    return frozenset(c for c in range(1 << fmt.width) if decode(c, fmt).is_finite and decode(c, fmt).magnitude == fmt.max_normal)


@lru_cache(maxsize=None)
def subnormal_codes(fmt) -> frozenset:
    """The subnormal codes of an element format (:func:`is_subnormal_code`)."""
    return frozenset(c for c in range(1 << fmt.width) if is_subnormal_code(c, fmt))


def is_subnormal_code(code: int, fmt) -> bool:
    return fmt.kind == "float" and fmt.subnormals and 0 < (code & ~fmt.sign_mask) < (1 << fmt.mantissa_bits)


class Suite:
    """Base: ``inputs`` and ``outputs`` fields (``flags`` last), ``params`` for the manifest,
    ``stimulus(rng, level)`` -> [(inputs, origin)], ``compute(inputs)`` -> (outputs, classes)."""

    kind = ""
    inputs: list[Field]
    outputs: list[Field]

    @property
    def fields(self) -> list[Field]:
        return self.inputs + self.outputs + [Field("flags", 32, description="corner classes (mxsim.golden.classes)")]

    def params(self) -> dict:
        raise NotImplementedError

    def describe(self) -> dict:
        return {}



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
