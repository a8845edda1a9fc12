"""Shared power-of-two scale of a block: the scale rules, exactly (integers and Fractions only).

For a block with largest magnitude ``amax`` > 0 and element format with emax_elem, the unbiased
scale exponent E (scale = 2^E) before clamping is:

* ``floor`` (OCP MX 6.3): floor(log2 amax) - emax_elem;
* ``ceil``: ceil(log2 amax) - emax_elem;
* ``even`` (torchao EVEN): floor(log2(amax + 2^(e - f - 1))) - emax_elem, with e = floor(log2 amax)
  and f the element's significand fraction bits: amax rounded half-up to f fraction bits;
* ``rceil`` (NVIDIA): ceil(log2(amax / max_normal));
* ``tosa``: the smallest E for which amax / 2^E, rounded to nearest-even in the element format,
  does not exceed max_normal (floor, or floor + 1 where floor's element would saturate);
* ``floor_fp32`` (microxcaling, Brevitas; contract 6.2): floor(RN32(log2 amax)) - emax_elem, the
  float32 log2 of torch (see :func:`mxsim.ref.fp32_steps.fp32_log2_floor`): ``floor`` except where
  amax lies a few float32 steps below a power of two (amax 0x437FFFFE gives E = 8 - emax, not 7 -
  emax). amax must be a float32 value;
* ``ceil_fp32`` (AMD Quark 'ceil'; contract 6.2): ceil(RN32(log2 amax)) - emax_elem (see
  :func:`mxsim.ref.fp32_steps.fp32_log2_ceil`): ``ceil`` except where amax lies a few float32
  steps above a power of two (its log2 rounds down to the integer). amax must be a float32 value;
* ``rceil_fp32`` (torchao 0.18 RCEIL in eager mode): ceil(l), where d = amax / max_normal is
  rounded to float32 (nearest-even, subnormals kept) and l = log2(d) is rounded to the nearest
  float32. It is ``rceil`` except where d lies a few float32 steps above a power of two 2^e, so
  that log2(d) rounds down to the integer e (E = e, one less than rceil: the largest element
  saturates), and where d is an fp32 subnormal or rounds to a power of two. Decided exactly:
  RN(e + log2 m) = e, for d = m * 2^e with 1 < m < 2, iff log2 m < h, half the float32 spacing
  next to e on the side of e + log2 m; see :func:`fp32_log2_rounds_down`.

The E8M0 code is clamp(E, -127, 127) + 127.

Scale encodings (docs/numerics.md section 2.3, 3.2), the stored byte of the unbiased exponent E:

* ``e8m0``: byte = E + 127 for E in [-127, 127]; 0xFF is NaN;
* ``int8_exponent``: byte = E as an 8-bit two's complement for E in [-128, 127] (0x00 = 2^0,
  0x7F = 2^127, 0x80 = 2^-128, 0xFF = 2^-1); no NaN code.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import isqrt

from ..options.quantize import SCALE_ENCODINGS
from .decode import decode
from .encode import encode, round_to_grid
from .exact import Exact, floor_log2
from .fp32_steps import fp32_log2_ceil, fp32_log2_floor

__all__ = [
    "scale_exponent",
    "ceil_log2",
    "fraction_bits",
    "fp32_log2_rounds_down",
    "root2_threshold",
    "SCALE_ENCODINGS",
    "scale_byte",
    "byte_exponent",
    "given_scale_error",
]

E8M0_MIN, E8M0_MAX = -127, 127
_FP32_INF = 0x7F800000  # +Inf in float32
E8M0_NAN = 0xFF


def scale_byte(exponent, encoding: str):
    """The stored scale byte of the unbiased exponent E (an int, or an int64 NumPy array; the
    caller has clamped E to the encoding's range). See the module docstring."""
    if encoding == "e8m0":
        return exponent - E8M0_MIN
    if encoding == "int8_exponent":
        return exponent & 0xFF
    raise ValueError(f"scale_encoding={encoding!r} is not allowed; expected one of: {', '.join(SCALE_ENCODINGS)}")


def byte_exponent(byte, encoding: str):
    """The unbiased exponent E of a stored scale byte (an int, or an int64 NumPy array). The E8M0
    NaN byte 0xFF gives 128, outside every finite range; callers test it with ``byte == 0xFF``."""
    if encoding == "e8m0":
        return byte + E8M0_MIN
    if encoding == "int8_exponent":
        return ((byte + 128) & 0xFF) - 128
    raise ValueError(f"scale_encoding={encoding!r} is not allowed; expected one of: {', '.join(SCALE_ENCODINGS)}")


def given_scale_error(byte: int, encoding: str, scale_min: int, where: str = "scale") -> ValueError:
    """The error for a caller-supplied scale byte that is not a usable scale: not a byte, the
    E8M0 NaN code, or an exponent below ``scale_min``."""
    if encoding == "e8m0":
        allowed = "E8M0 codes 0x00..0xFE (2^-127..2^127; 0xFF is NaN)"
    else:
        low = scale_byte(scale_min, encoding)
        allowed = f"int8 exponent bytes for E in [{scale_min}, 127] (0x{low:02X}..0xFF, 0x00..0x7F)"
    shown = f"0x{byte:02X}" if isinstance(byte, int) and 0 <= byte <= 0xFF else repr(byte)
    return ValueError(
        f"{where} {shown} is not allowed under scale_encoding={encoding!r}, scale_min={scale_min}; "
        f"caller-supplied scales must be {allowed}"
    )


def ceil_log2(q: Fraction) -> int:
    e = floor_log2(q)
    return e if q == Fraction(2) ** e else e + 1


def fraction_bits(element) -> int:
    """Significand fraction bits of the element's largest values: m for floats, and for integers
    the bits below the leading bit of max_int (6 for MXINT8)."""
    return element.mantissa_bits if element.kind == "float" else element.max_int.bit_length() - 1


def scale_exponent(amax: Fraction, element, rule: str, round_bits: int | None = None) -> int:
    """The unclamped scale exponent E of a block with largest magnitude ``amax`` > 0. ``round_bits``:
    the fraction bits of rule 'even' (default: the element's, :func:`fraction_bits`)."""
    if rule == "floor":
        return floor_log2(amax) - element.emax
    if rule == "ceil":
        return ceil_log2(amax) - element.emax
    if rule == "even":
        e = floor_log2(amax)
        bits = fraction_bits(element) if round_bits is None else round_bits
        return floor_log2(amax + Fraction(2) ** (e - bits - 1)) - element.emax
    if rule == "rceil":
        return ceil_log2(amax / element.max_normal)
    if rule == "tosa":
        e = floor_log2(amax) - element.emax
        significand, grid = round_to_grid(amax / Fraction(2) ** e, element, ("rne", False, None, 32))
        return e + (significand * Fraction(2) ** grid > element.max_normal)
    if rule == "rceil_fp32":
        return _rceil_fp32(amax, element)
    if rule == "floor_fp32":
        return fp32_log2_floor(amax) - element.emax
    if rule == "ceil_fp32":
        return fp32_log2_ceil(amax) - element.emax
    raise ValueError(f"scale_rule={rule!r} is not allowed")


@lru_cache(maxsize=None)
def root2_threshold(j: int, bits: int = 23) -> int:
    """The smallest integer M with M / 2^bits >= 2^(2^-j), i.e. floor(2^bits * 2^(2^-j)) + 1 (the
    product is irrational for j >= 1, so never an integer). Integers only: j square roots of 2 in
    fixed point with 96 fraction bits, from below and from above; both bounds must agree."""
    if j < 1:
        raise ValueError(f"j={j} must be at least 1")
    k = 96
    low = high = 2 << k
    for _ in range(j):
        low = isqrt(low << k)
        high = isqrt(high << k) + 1
    floor_low, floor_high = (low << bits) >> k, (high << bits) >> k
    if floor_low != floor_high:  # pragma: no cover - 96 bits leave a margin of about 2^-70
        raise ArithmeticError(f"root2_threshold({j}) needs more precision")
    return floor_low + 1


def fp32_log2_rounds_down(e: int, significand: int) -> bool:
    """Whether the float32 nearest to log2(d) is the integer e, for d = significand * 2^(e - 23)
    with 2^23 < significand < 2^24 (log2(d) = e + log2 m, 0 < log2 m < 1).

    e + log2 m rounds to e iff log2 m is below half the float32 spacing next to e on its side:
    above a positive e, 2^(p - 24) with p = floor(log2 e); toward zero from a negative e,
    2^(p - 24), or 2^(p - 25) where |e| = 2^p starts its binade. For e = 0, log2 m itself is the
    value (never rounded to 0). log2 m >= 2^-j iff m >= 2^(2^-j): see :func:`root2_threshold`."""
    if e == 0:
        return False
    p = abs(e).bit_length() - 1
    j = 24 - p + (e < 0 and abs(e) == 1 << p)
    return significand < root2_threshold(j)


def _rceil_fp32(amax: Fraction, element) -> int:
    """rceil_fp32's E (see the module docstring). A quotient d beyond float32 (amax above about
    max_normal * 2^128: float64 input only) rounds to +Inf, whose log2 is +Inf: E is above every
    clamp, returned as E8M0_MAX + 1 (the block's scale is then 2^127, as for any E above 127)."""
    code = encode(Exact(0, amax / element.max_normal), "fp32", "rne", "ieee")
    if code == _FP32_INF:
        return E8M0_MAX + 1
    d = decode(code, "fp32").value
    if d == 0:  # log2(0) = -inf: the clamp gives E = -127
        return E8M0_MIN
    e = floor_log2(d)
    m = d / Fraction(2) ** e
    if m == 1:
        return e
    significand = int(m * 2**23)  # d has at most 24 significant bits: exact
    return e if fp32_log2_rounds_down(e, significand) else e + 1
