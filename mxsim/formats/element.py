"""Parametric element formats: binary floating point and scaled integers.

Every number a format can hold is derived from its parameters; nothing is typed in.
Derived properties are :func:`functools.cached_property`: computed once per format object
(formats are frozen, so a value never goes stale); the reference model reads them in its loops.

Float bit layout, most significant bit first::

    [S] E...E M...M        S: sign (absent when ``signed=False``)
                           E: ``exponent_bits`` biased exponent field
                           M: ``mantissa_bits`` fraction field

* exponent field 0 with ``subnormals=True``: value = (-1)^S * 2^(1 - bias) * M / 2^m
  (zero and the subnormals);
* exponent field 0 with ``subnormals=False``: a normal binade, value = 2^(-bias) * (1 + M / 2^m);
  such a format has no zero (E8M0 is the example);
* otherwise value = (-1)^S * 2^(E - bias) * (1 + M / 2^m), except for the special codes below.

``specials`` names which codes are not finite:

* ``"ieee"``: the all-ones exponent field is reserved; mantissa 0 is Inf, any other mantissa is
  NaN (FP8 E5M2, fp16, bf16, fp32, fp64);
* ``"fn"``: only the all-ones magnitude (exponent and mantissa all ones) is NaN; there is no Inf
  (FP8 E4M3 "fn", UE4M3, E8M0);
* ``"none"``: every code is finite (FP6, FP4);
* ``"fnuz"``: the code with only the sign bit set (0x80 in 8 bits: the place of -0) is the one
  NaN; there is no -0 and no Inf, and every other code is finite (AMD CDNA3 / MI300 FP8,
  ml_dtypes ``float8_e4m3fnuz`` / ``float8_e5m2fnuz``, Graphcore);
* ``"p3109"``: as ``"fnuz"`` (one NaN in the place of -0, no -0), and the all-ones magnitude
  (0x7F / 0xFF in 8 bits) is +-Inf (IEEE P3109 binary8pP; gfloat's ``format_info_p3109``).

``fnuz`` and ``p3109`` formats are signed and have subnormals (their NaN takes the code of -0);
a negative value that rounds to zero encodes as +0 there (contract section 1).

Integer layout: ``bits`` bits holding an integer q, either two's complement or sign-magnitude
(sign in the top bit), with value q * 2^-frac_bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction
from functools import cached_property
from typing import Literal, Union

__all__ = ["FloatFormat", "IntFormat", "ElementFormat", "FLOAT_SPECIALS", "INT_ENCODINGS", "negated_code"]

FLOAT_SPECIALS = ("ieee", "fn", "none", "fnuz", "p3109")
# layouts whose one NaN is the code with only the sign bit set (the place of -0)
_NAN_AT_NEGATIVE_ZERO = ("fnuz", "p3109")
# layouts whose top magnitude code (all ones) is not finite
_TOP_MAGNITUDE_SPECIAL = ("fn", "p3109")
INT_ENCODINGS = ("twos_complement", "sign_magnitude")
MAX_CODE_BITS = 64


def _hash_once(self) -> int:
    """A format's hash, the dataclass's (of every field), computed once per object: formats are
    immutable and key every lookup table of the reference, which hashes them at each call."""
    try:
        return self.__dict__["_hash"]
    except KeyError:
        value = self.__dict__["_hash"] = hash(tuple(getattr(self, f.name) for f in fields(self)))
        return value


def _state_without_hash(self) -> dict:
    """A format's pickled state: its fields and cached properties, not its hash (string hashes
    differ between processes)."""
    state = dict(self.__dict__)
    state.pop("_hash", None)
    return state


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _require_int(owner: str, name: str, value, low: int, high: int) -> None:
    _require(
        isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
        f"{owner}: {name}={value!r} is not allowed; expected an integer in [{low}, {high}]",
    )


def _pow2(exponent: int) -> Fraction:
    return Fraction(2) ** exponent


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point element or scale format (see the module docstring for the layout).

    Derived properties (all exact, as :class:`fractions.Fraction` or int):
    ``width`` (bits per code), ``emin`` (exponent of the smallest normal), ``emax`` (exponent of
    the largest normal, also called emax_elem), ``max_normal``, ``min_normal``, ``min_subnormal``,
    ``max_code`` (the code of +max_normal).
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    signed: bool = True
    subnormals: bool = True
    specials: Literal["ieee", "fn", "none", "fnuz", "p3109"] = "ieee"
    kind: str = field(default="float", init=False, repr=False)

    __hash__ = _hash_once
    __getstate__ = _state_without_hash

    def __post_init__(self) -> None:
        owner = f"float format {self.name!r}"
        _require(isinstance(self.name, str) and self.name != "", "format name must be a non-empty string")
        _require_int(owner, "exponent_bits", self.exponent_bits, 1, 16)
        _require_int(owner, "mantissa_bits", self.mantissa_bits, 0, 56)
        _require_int(owner, "bias", self.bias, -(1 << 16), 1 << 16)
        _require(isinstance(self.signed, bool), f"{owner}: signed must be True or False")
        _require(isinstance(self.subnormals, bool), f"{owner}: subnormals must be True or False")
        _require(
            self.specials in FLOAT_SPECIALS,
            f"{owner}: specials={self.specials!r} is not allowed; expected one of {', '.join(FLOAT_SPECIALS)}",
        )
        _require(
            not (self.specials == "ieee" and self.mantissa_bits == 0),
            f"{owner}: specials='ieee' needs mantissa_bits >= 1 (NaN needs a nonzero mantissa)",
        )
        _require(
            self.specials not in _NAN_AT_NEGATIVE_ZERO or (self.signed and self.subnormals),
            f"{owner}: specials={self.specials!r} needs signed=True and subnormals=True (its NaN is the code of -0)",
        )
        _require(
            self.width <= MAX_CODE_BITS,
            f"{owner}: width {self.width} bits exceeds the {MAX_CODE_BITS}-bit limit",
        )
        _require(
            self._top_normal_field >= (0 if not self.subnormals else 1),
            f"{owner}: exponent_bits={self.exponent_bits} with specials={self.specials!r} leaves no normal binade",
        )

    # --- layout -------------------------------------------------------------------------------
    @cached_property
    def width(self) -> int:
        """Bits per code: sign (if signed) + exponent_bits + mantissa_bits."""
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @cached_property
    def sign_mask(self) -> int:
        """The sign bit of a code (0 for unsigned formats)."""
        return (1 << (self.exponent_bits + self.mantissa_bits)) if self.signed else 0

    @property
    def has_nan(self) -> bool:
        return self.specials != "none"

    @property
    def has_inf(self) -> bool:
        return self.specials in ("ieee", "p3109")

    @property
    def has_zero(self) -> bool:
        return self.subnormals

    @property
    def has_negative_zero(self) -> bool:
        return self.signed and self.subnormals and not self.nan_at_negative_zero

    @property
    def nan_at_negative_zero(self) -> bool:
        """Whether the code with only the sign bit set is the format's one NaN instead of -0
        ('fnuz', 'p3109')."""
        return self.specials in _NAN_AT_NEGATIVE_ZERO

    def zero_code(self, negative: bool = False) -> int:
        """The code of a zero of the given sign: -0 where the format has it, else +0 (a negative
        value that rounds to zero in an 'fnuz' or 'p3109' format, or in an unsigned format)."""
        return self.sign_mask if negative and self.has_negative_zero else 0

    @cached_property
    def _all_ones_field(self) -> int:
        return (1 << self.exponent_bits) - 1

    @cached_property
    def _top_normal_field(self) -> int:
        """The largest exponent field that holds finite normal values."""
        if self.specials == "ieee" or (self.specials in _TOP_MAGNITUDE_SPECIAL and self.mantissa_bits == 0):
            return self._all_ones_field - 1
        return self._all_ones_field

    # --- derived values -----------------------------------------------------------------------
    @cached_property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal binade (subnormals share it)."""
        return (1 if self.subnormals else 0) - self.bias

    @cached_property
    def emax(self) -> int:
        """Unbiased exponent of the largest normal binade: floor(log2(max_normal)) (emax_elem)."""
        return self._top_normal_field - self.bias

    @cached_property
    def max_code(self) -> int:
        """Code of +max_normal: the all-ones magnitude, less one where that is special (the NaN of
        'fn', the Inf of 'p3109'; with 0 mantissa bits the top exponent field is dropped instead)."""
        top = (self._top_normal_field << self.mantissa_bits) | ((1 << self.mantissa_bits) - 1)
        if self.specials in _TOP_MAGNITUDE_SPECIAL and self.mantissa_bits > 0:
            top -= 1
        return top

    @cached_property
    def max_significand(self) -> int:
        """The significand of max_normal as an integer with its leading bit, m + 1 bits:
        max_normal = max_significand * 2^(emax - m)."""
        m = self.mantissa_bits
        return (1 << m) | (self.max_code & ((1 << m) - 1))

    @cached_property
    def max_normal(self) -> Fraction:
        return _pow2(self.emax - self.mantissa_bits) * self.max_significand

    @cached_property
    def min_normal(self) -> Fraction:
        return _pow2(self.emin)

    @property
    def min_subnormal(self) -> Fraction | None:
        """Smallest positive value; None if the format has no subnormals."""
        if not self.subnormals or self.mantissa_bits == 0:
            return None
        return _pow2(self.emin - self.mantissa_bits)

    def nan_code(self, negative: bool = False) -> int:
        """The canonical NaN code: all-ones magnitude ('fn'), or exponent all ones with only the
        top mantissa bit set ('ieee', the quiet NaN); the sign bit follows ``negative`` where the
        format is signed. 'fnuz' and 'p3109' have one NaN, the sign bit alone (0x80), whatever
        ``negative`` says. Raises ValueError for formats without NaN."""
        _require(self.has_nan, f"format {self.name!r} has no NaN encoding")
        if self.nan_at_negative_zero:
            return self.sign_mask
        if self.specials == "fn":
            magnitude = (self._all_ones_field << self.mantissa_bits) | ((1 << self.mantissa_bits) - 1)
        else:
            magnitude = (self._all_ones_field << self.mantissa_bits) | (1 << (self.mantissa_bits - 1))
        return magnitude | (self.sign_mask if negative else 0)

    def inf_code(self, negative: bool = False) -> int:
        """The code of +-Inf: exponent all ones and mantissa 0 ('ieee'), or the all-ones
        magnitude ('p3109': 0x7F, 0xFF). Raises ValueError for formats without Inf."""
        _require(self.has_inf, f"format {self.name!r} has no Inf encoding")
        magnitude = self._all_ones_field << self.mantissa_bits
        if self.specials == "p3109":
            magnitude |= (1 << self.mantissa_bits) - 1
        return magnitude | (self.sign_mask if negative else 0)

    def describe(self) -> dict:
        """The parameters and derived properties, as plain values (for tables and manifests)."""
        return {
            "name": self.name,
            "kind": "float",
            "width": self.width,
            "exponent_bits": self.exponent_bits,
            "mantissa_bits": self.mantissa_bits,
            "bias": self.bias,
            "signed": self.signed,
            "subnormals": self.subnormals,
            "specials": self.specials,
            "emax_elem": self.emax,
            "emin": self.emin,
            "max_normal": self.max_normal,
            "min_normal": self.min_normal,
            "min_subnormal": self.min_subnormal,
            "has_inf": self.has_inf,
            "has_nan": self.has_nan,
            "has_negative_zero": self.has_negative_zero,
        }


@dataclass(frozen=True)
class IntFormat:
    """A scaled integer element: ``bits``-bit integer q, value q * 2^-frac_bits.

    ``encoding="twos_complement"``: q in [-2^(bits-1), 2^(bits-1) - 1]; no -0.
    ``encoding="sign_magnitude"``: top bit is the sign, the rest the magnitude; the code with
    sign set and magnitude 0 is -0. No Inf, no NaN in either encoding.
    """

    name: str
    bits: int
    frac_bits: int
    encoding: Literal["twos_complement", "sign_magnitude"] = "twos_complement"
    kind: str = field(default="int", init=False, repr=False)

    __hash__ = _hash_once
    __getstate__ = _state_without_hash

    def __post_init__(self) -> None:
        owner = f"int format {self.name!r}"
        _require(isinstance(self.name, str) and self.name != "", "format name must be a non-empty string")
        _require_int(owner, "bits", self.bits, 2, MAX_CODE_BITS)
        _require_int(owner, "frac_bits", self.frac_bits, -64, 64)
        _require(
            self.encoding in INT_ENCODINGS,
            f"{owner}: encoding={self.encoding!r} is not allowed; expected one of {', '.join(INT_ENCODINGS)}",
        )

    signed = True
    has_nan = False
    has_inf = False
    has_zero = True
    subnormals = False

    @cached_property
    def width(self) -> int:
        return self.bits

    @cached_property
    def sign_mask(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def has_negative_zero(self) -> bool:
        return self.encoding == "sign_magnitude"

    @cached_property
    def max_int(self) -> int:
        """Largest integer q (2^(bits-1) - 1 in both encodings)."""
        return (1 << (self.bits - 1)) - 1

    @property
    def min_int(self) -> int:
        """Smallest integer q: -2^(bits-1) (two's complement) or -(2^(bits-1) - 1)."""
        return -(1 << (self.bits - 1)) if self.encoding == "twos_complement" else -self.max_int

    @cached_property
    def max_code(self) -> int:
        return self.max_int

    @cached_property
    def max_normal(self) -> Fraction:
        """Largest value, max_int * 2^-frac_bits (named as for floats so block rules can share it)."""
        return Fraction(self.max_int) * _pow2(-self.frac_bits)

    @property
    def min_value(self) -> Fraction:
        return Fraction(self.min_int) * _pow2(-self.frac_bits)

    @cached_property
    def emax(self) -> int:
        """floor(log2(max_normal)): emax_elem of the OCP scale rule (0 for MXINT8)."""
        return self.max_int.bit_length() - 1 - self.frac_bits

    def describe(self) -> dict:
        return {
            "name": self.name,
            "kind": "int",
            "width": self.width,
            "bits": self.bits,
            "frac_bits": self.frac_bits,
            "encoding": self.encoding,
            "emax_elem": self.emax,
            "max_normal": self.max_normal,
            "min_value": self.min_value,
            "step": _pow2(-self.frac_bits),
            "has_inf": False,
            "has_nan": False,
            "has_negative_zero": self.has_negative_zero,
        }


ElementFormat = Union[FloatFormat, IntFormat]


def negated_code(code: int, fmt: ElementFormat) -> int:
    """The code of -value for a code of ``fmt``: the sign bit flipped (float and sign-magnitude
    formats; NaN and Inf keep their kind), or the two's-complement negation modulo 2^width, which
    maps the most negative code (MXINT8 0x80) to itself. In 'fnuz' and 'p3109' formats +0 and the
    NaN (the codes with magnitude 0) are their own negation."""
    if fmt.kind == "int" and fmt.encoding == "twos_complement":
        return -code % (1 << fmt.width)
    if fmt.kind == "float" and fmt.nan_at_negative_zero and not code & ~fmt.sign_mask:
        return code
    return code ^ fmt.sign_mask
