"""Reference block quantization: one block of exact values to scale code(s) and element codes.

Families (conventions.md sections 2, 2.1, 2.2):

* E8M0-scaled blocks: OCP MX (MXFP8/6/4, MXINT8), block floating point (MSFP12/16) and, with
  sub-blocks, the shared-microexponent formats MX9/6/4. Element i of sub-block j holds
  x_i / 2^(E - tau_j), encoded with the element rounding and saturation; tau_j = 0 without
  sub-blocks.
* NVFP4: UE4M3 block scale and an fp32 tensor scale s_t.

Integers and Fractions only; the element codec is :func:`mxsim.ref.encode` (its integer core
:func:`mxsim.ref.encode.encode_ratio`: an element x / divisor is encoded from the integers
x.numerator * divisor.denominator and x.denominator * divisor.numerator, without building the
quotient as a Fraction).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from ..options import QuantizeOptions
from ..options.encode import overflow_code
from ..formats import get_format
from .decode import decode
from .encode import encode, encode_ratio
from .exact import Exact, Number, dyadic, floor_log2, to_exact
from .scale import E8M0_MAX, E8M0_MIN, scale_exponent

__all__ = [
    "QuantizedBlock",
    "quantize_block",
    "dequantize_block",
    "nvfp4_tensor_scale",
    "nan_block_element_code",
    "check_block",
    "check_tensor_scale",
    "to_fp32",
    "FP32_MAX",
    "FP32_MIN_NORMAL",
]

TWO = Fraction(2)
_FP32 = get_format("fp32")
FP32_MAX = (2 - TWO**-23) * TWO**127
FP32_MIN_NORMAL = TWO**-126
FP32_MIN_SUBNORMAL = TWO**-149
NVFP4_SCALE_NUMERATOR = 6 * 448  # largest E2M1 magnitude times largest E4M3 magnitude


@dataclass(frozen=True)
class QuantizedBlock:
    """Codes of one block: ``scale`` (E8M0 or UE4M3 code), ``subscales`` (one per sub-block, the
    microexponents tau_j; empty for single-level formats) and the element ``codes``."""

    scale: int
    subscales: tuple[int, ...]
    codes: tuple[int, ...]


def to_fp32(q: Fraction) -> Exact:
    """q rounded to float32, nearest-even, overflowing to +-Inf (exact integer arithmetic)."""
    q = Fraction(q)
    return decode(encode_ratio(abs(q.numerator), q.denominator, q < 0, _FP32, "rne", "ieee"), _FP32)


def nvfp4_tensor_scale(tensor_amax: Fraction, options: QuantizeOptions = QuantizeOptions()) -> Fraction:
    """NVFP4's fp32 tensor scale s_t = fp32(amax / (6 * 448)), or 1 for an all-zero tensor or
    ``nvfp4_tensor_scale='none'``. (mxsim) A tensor so small that s_t would round to 0 gets the
    smallest fp32 subnormal instead, so that the block scales stay finite."""
    if options.nvfp4_tensor_scale == "none" or tensor_amax == 0:
        return Fraction(1)
    return max(to_fp32(Fraction(tensor_amax) / NVFP4_SCALE_NUMERATOR).value, FP32_MIN_SUBNORMAL)


def _read_inputs(values: Sequence[Number], fmt, options: QuantizeOptions) -> list[Exact]:
    if len(values) != fmt.block_size:
        raise ValueError(f"a {fmt.name} block has {fmt.block_size} values, got {len(values)}")
    xs = [to_exact(v) for v in values]
    if options.flush_subnormal_inputs:
        xs = [Exact(x.sign) if x.is_finite and x.magnitude < FP32_MIN_NORMAL else x for x in xs]
    return xs


def _is_nan_block(xs: list[Exact], options: QuantizeOptions) -> bool:
    return any(x.is_nan or (x.is_inf and options.inf_policy == "nan") for x in xs)


def _amax(xs: list[Exact]) -> Fraction:
    """Largest magnitude; an Inf (under inf_policy='saturate') counts as the largest fp32. (The
    magnitudes are compared as n * d' > n' * d on their integers.)"""
    best, best_n, best_d = Fraction(0), 0, 1
    for x in xs:
        magnitude = FP32_MAX if x.kind == "inf" else x.magnitude
        n, d = magnitude.numerator, magnitude.denominator
        if n * best_d > best_n * d:
            best, best_n, best_d = magnitude, n, d
    return best


def _rand(rand_bits, i: int):
    return None if rand_bits is None else int(rand_bits[i])


def quantize_block(
    values: Sequence[Number],
    fmt,
    options: QuantizeOptions = QuantizeOptions(),
    *,
    tensor_scale: Fraction | None = None,
    rand_bits: Sequence[int] | None = None,
) -> QuantizedBlock:
    """Quantize exactly ``block_size`` values (ints, Fractions, floats or :class:`Exact`).

    ``tensor_scale``: NVFP4's s_t (see :func:`nvfp4_tensor_scale`; default 1). ``rand_bits``:
    one random word per element, for ``options.rounding == 'stochastic'``.
    NaN (or Inf, under inf_policy='nan') anywhere in the block gives a NaN block: scale 0xFF
    (NVFP4: 0x7F), sub-scales 0, element codes the element's NaN code where it has one, else 0.
    """
    fmt = get_format(fmt, kind="block")
    options.check_format(fmt)
    xs = _read_inputs(values, fmt, options)
    if (options.rounding == "stochastic") != (rand_bits is not None):
        raise ValueError("rand_bits is needed with rounding='stochastic', and only then")
    if fmt.scale.name == "ue4m3":
        return _quantize_nvfp4(xs, fmt, options, Fraction(1) if tensor_scale is None else Fraction(tensor_scale), rand_bits)
    return _quantize_e8m0(xs, fmt, options, rand_bits)


def nan_block_element_code(element) -> int:
    """The code every element of a NaN block gets: the element's NaN code, else 0."""
    return element.nan_code() if element.has_nan else 0


def _nan_block(fmt) -> QuantizedBlock:
    """Scale = the scale format's NaN code (E8M0 0xFF, UE4M3 0x7F), sub-scales 0."""
    code = nan_block_element_code(fmt.element)
    return QuantizedBlock(fmt.scale.nan_code(), (0,) * fmt.subblocks, (code,) * fmt.block_size)


def _encode_element(x: Exact, divisor: Fraction, fmt, options: QuantizeOptions, rand) -> int:
    """The element code of x / divisor (x finite or +-Inf; divisor > 0), rounded with the
    options' rounding and saturating: what ``encode(x / divisor, fmt.element, options.rounding,
    "saturate", ...)`` gives (an Inf saturates to the largest magnitude of its sign)."""
    negative = bool(x.sign)  # block element formats are signed
    if x.is_inf:
        return overflow_code(fmt.element, negative, "saturate", options.rounding, True, options.int8_allow_neg2)
    m = x.magnitude
    return encode_ratio(
        m.numerator * divisor.denominator,
        m.denominator * divisor.numerator,
        negative,
        fmt.element,
        options.rounding,
        "saturate",
        rand,
        options.rand_width,
        options.int8_allow_neg2,
    )


def _microexponents(xs: list[Exact], fmt, exponent: int) -> list[int]:
    """tau_j = clamp(E - e_j, 0, 2^d2 - 1), e_j = max(floor(log2 of the sub-block's largest
    magnitude), -127), e(0) = -127 (the fp32 exponent-field view of AMD Quark's kernels)."""
    size, cap = fmt.subblock_size, (1 << fmt.subscale_bits) - 1
    taus = []
    for j in range(fmt.subblocks):
        largest = _amax(xs[j * size : (j + 1) * size])
        e_j = max(floor_log2(largest), E8M0_MIN) if largest else E8M0_MIN
        taus.append(min(max(exponent - e_j, 0), cap))
    return taus


def _quantize_e8m0(xs, fmt, options, rand_bits) -> QuantizedBlock:
    if _is_nan_block(xs, options):
        return _nan_block(fmt)
    amax = _amax(xs)
    exponent = E8M0_MIN if amax == 0 else scale_exponent(amax, fmt.element, options.scale_rule)
    exponent = min(max(exponent, E8M0_MIN), E8M0_MAX)
    taus = _microexponents(xs, fmt, exponent) if fmt.subblocks else []
    divisors = {tau: dyadic(1, exponent - tau) for tau in set(taus) | {0}}  # 2^(E - tau), once per tau
    codes = []
    for i, x in enumerate(xs):
        tau = taus[i // fmt.subblock_size] if taus else 0
        codes.append(_encode_element(x, divisors[tau], fmt, options, _rand(rand_bits, i)))
    return QuantizedBlock(exponent - E8M0_MIN, tuple(taus), tuple(codes))


def _quantize_nvfp4(xs, fmt, options, tensor_scale: Fraction, rand_bits) -> QuantizedBlock:
    if _is_nan_block(xs, options):
        return _nan_block(fmt)
    lowest = options.nvfp4_scale_lowest
    amax = _amax(xs)
    fp32_steps = options.nvfp4_arith == "fp32_steps"
    if fp32_steps:  # IEEE fp32 steps: a quotient may overflow to Inf, which the clamp absorbs
        quotient = to_fp32(to_fp32(amax / 6).value / tensor_scale)
        wanted = fmt.scale.max_normal if quotient.is_inf else quotient.value
    else:
        wanted = amax / 6 / tensor_scale
    scale_code = encode(min(max(wanted, lowest), fmt.scale.max_normal), fmt.scale, "rne")
    scale = decode(scale_code, fmt.scale).value
    if fp32_steps:
        inverse = to_fp32(1 / tensor_scale)
        factor = inverse if inverse.is_inf else to_fp32(inverse.value / scale)
    divisor = tensor_scale * scale
    codes = []
    for i, x in enumerate(xs):
        rand = _rand(rand_bits, i)
        if fp32_steps and x.is_finite and not x.is_zero:
            # (mxsim) x * Inf is +-Inf (it saturates); a zero stays zero rather than 0 * Inf = NaN
            y = Exact.inf(x.sign) if factor.is_inf else to_fp32(x.magnitude * factor.value)
            codes.append(_encode_element(Exact(x.sign, y.magnitude, y.kind), Fraction(1), fmt, options, rand))
        else:
            codes.append(_encode_element(x, divisor, fmt, options, rand))
    return QuantizedBlock(scale_code, (), tuple(codes))


def check_block(block: QuantizedBlock, fmt, tensor_scale=None, name: str = "block") -> None:
    """Raise ValueError unless ``block`` has the format's number of codes and sub-scales, each
    sub-scale in [0, 2^subscale_bits), and ``tensor_scale`` (if given) suits the format: a
    positive finite binary value, for formats with a tensor scale only. Codes are checked where
    they are decoded."""
    if len(block.codes) != fmt.block_size or len(block.subscales) != fmt.subblocks:
        raise ValueError(
            f"{name} has {len(block.codes)} codes and {len(block.subscales)} sub-scales; "
            f"{fmt.name!r} has {fmt.block_size} and {fmt.subblocks}"
        )
    limit = 1 << fmt.subscale_bits
    for tau in block.subscales:
        if isinstance(tau, bool) or not isinstance(tau, int) or not 0 <= tau < limit:
            raise ValueError(f"{name} sub-scale {tau!r} is out of range for {fmt.name!r}: expected an integer in [0, {limit - 1}]")
    check_tensor_scale(fmt, tensor_scale)


def check_tensor_scale(fmt, tensor_scale) -> None:
    """Raise ValueError unless ``tensor_scale`` is None, or a positive finite binary value for a
    format that has a tensor scale."""
    if tensor_scale is None:
        return
    if fmt.tensor_scale is None:
        raise ValueError(f"format {fmt.name!r} has no tensor scale; pass tensor_scale=None")
    x = to_exact(tensor_scale)
    if not x.is_finite or x.sign or x.magnitude == 0 or x.magnitude.denominator & (x.magnitude.denominator - 1):
        raise ValueError(f"tensor_scale={tensor_scale!r} must be a positive finite binary floating-point value")


def dequantize_block(block: QuantizedBlock, fmt, tensor_scale: Fraction | None = None) -> list[Exact]:
    """Exact values of a block: element * 2^(E - tau_j) (E8M0 families) or element * scale * s_t
    (NVFP4). A NaN scale code makes every value NaN."""
    fmt = get_format(fmt, kind="block")
    check_block(block, fmt, tensor_scale)
    scale = decode(block.scale, fmt.scale)
    if scale.is_nan:
        return [Exact.nan() for _ in block.codes]
    factor = scale.value * (Fraction(1) if tensor_scale is None else Fraction(tensor_scale))
    values = []
    for i, code in enumerate(block.codes):
        tau = block.subscales[i // fmt.subblock_size] if fmt.subblocks else 0
        x = decode(code, fmt.element)
        values.append(x if not x.is_finite else Exact(x.sign, x.magnitude * factor / TWO**tau))
    return values
