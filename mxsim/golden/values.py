"""Values and words every layer of the golden package shares: the memoized reference decoder, fp32
bit conversions, the codes of a format by what they hold, and block-word packing (element i at bits
[i*w, (i+1)*w)).
"""

from __future__ import annotations

import struct
from functools import lru_cache

from ..formats import get_format
from ..ref.decode import decode as _decode
from ..ref.encode import encode
from ..ref.exact import Exact

__all__ = [
    "FP32", "FP32_INF_BITS", "decode", "float_value", "float_word", "fp32_bits", "fp32_value", "fp32_float",
    "code_sets", "max_codes",
    "subnormal_codes", "is_subnormal_code", "pack_word", "unpack_word",
]

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


def float_word(x: Exact, fmt) -> int:
    """The bits of ``x`` in the IEEE float format ``fmt`` (fp32, bf16 or fp16: a dot suite's C):
    fp32 as :func:`fp32_bits`; a 16-bit format exactly when it holds ``x``, else cut toward zero
    (a normal value keeps its binade), a magnitude beyond the largest finite one giving +-max;
    +-Inf its Inf code, NaN the canonical quiet NaN with ``x``'s sign."""
    if fmt.width == 32:
        return fp32_bits(x)
    if x.is_inf:
        return x.sign << (fmt.width - 1) | fmt.inf_code()
    return encode(x, fmt, "rtz", "saturate")


def float_value(bits: int, fmt) -> Exact:
    """The exact value of ``bits`` of the IEEE float format ``fmt`` (fp32: :func:`fp32_value`)."""
    return fp32_value(bits) if fmt.width == 32 else decode(bits, fmt)


def fp32_value(bits: int) -> Exact:
    """The exact value of fp32 bits (the reference decoder; not memoized: inputs rarely repeat)."""
    return _decode(bits, _FP32_FORMAT)


def fp32_float(bits: int) -> float:
    """fp32 bits as a Python float: the same value exactly (binary64 holds every fp32 value; -0.0,
    +-inf, and a NaN with the bits' sign bit), which the reference reads exactly
    (:func:`mxsim.ref.exact.float_ratio`). ValueError for anything but an integer in [0, 2^32)."""
    if bits.__class__ is not int or not 0 <= bits <= 0xFFFFFFFF:
        fp32_value(bits)  # the reference decoder's error for a bad word (an in-range NumPy integer passes)
        bits = int(bits)
    return _FP32_FROM_WORD(_WORD_OF_INT(bits))[0]


FP32_INF_BITS = 0x7F800000  # the magnitude bits of fp32 Inf: above them NaN, below finite values
_WORD_OF_INT = struct.Struct("<I").pack
_FP32_FROM_WORD = struct.Struct("<f").unpack


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
