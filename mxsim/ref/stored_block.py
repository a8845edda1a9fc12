"""A stored block (scale byte, sub-scales, element codes): its record, its checks and its exact values.

:class:`QuantizedBlock` is what :func:`mxsim.ref.block.quantize_block` gives and every dequantizer
and dot product reads; :func:`check_block` and :func:`check_tensor_scale` refuse what does not suit
a format (docs/numerics.md sections 2 and 2.2); :func:`dequantize_block` gives a block's exact
values. :func:`to_fp32` is the exact float32 rounding (nearest-even) that the quantizer's NVFP4
steps and the tensor-scale check use. Integers and Fractions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..formats import get_format
from .decode import decode
from .encode import encode, encode_ratio
from .exact import Exact, as_int, to_exact
from .scale_code import decode_scale

__all__ = [
    "QuantizedBlock",
    "to_fp32",
    "fp32_of_ratio",
    "check_block",
    "check_tensor_scale",
    "dequantize_block",
    "block_multipliers",
    "FP32_MAX",
    "FP32_MIN_NORMAL",
    "FP32_MIN_SUBNORMAL",
]

TWO = Fraction(2)
_FP32 = get_format("fp32")
FP32_MAX = (2 - TWO**-23) * TWO**127
FP32_MIN_NORMAL = TWO**-126
FP32_MIN_SUBNORMAL = TWO**-149


@dataclass(frozen=True)
class QuantizedBlock:
    """Codes of one block: ``scale`` (the stored scale byte: E8M0 or UE4M3 code, or the int8
    exponent byte under scale_encoding='int8_exponent'), ``subscales`` (one per sub-block, the
    microexponents tau_j; empty for single-level formats) and the element ``codes``."""

    scale: int
    subscales: tuple[int, ...]
    codes: tuple[int, ...]


def to_fp32(q, overflow: str = "ieee") -> Exact:
    """q (a number or :class:`Exact`) rounded to float32, nearest-even (exact integer arithmetic).
    Overflow gives +-Inf (``overflow='ieee'``, IEEE arithmetic) or +-FP32_MAX (``'saturate'``);
    +-Inf stays +-Inf under 'ieee' (IEEE: Inf / finite = Inf)."""
    if q.__class__ is Fraction or q.__class__ is int:  # the common case: the integer core directly
        return fp32_of_ratio(q.numerator, q.denominator, overflow)
    return decode(encode(to_exact(q), _FP32, "rne", overflow), _FP32)


def fp32_of_ratio(numerator: int, denominator: int, overflow: str = "ieee") -> Exact:
    """:func:`to_fp32` of numerator / denominator (integers, denominator > 0, not necessarily
    reduced; a zero numerator gives +0)."""
    return decode(encode_ratio(abs(numerator), denominator, numerator < 0, _FP32, "rne", overflow), _FP32)



def check_block(block: QuantizedBlock, fmt, tensor_scale=None, name: str = "block") -> QuantizedBlock:
    """``block`` with every code and sub-scale as a Python int (NumPy integers are read as theirs,
    so that no fixed-width arithmetic follows). Raise ValueError unless it has the format's number
    of codes and sub-scales, each sub-scale in [0, 2^subscale_bits), and ``tensor_scale`` (if
    given) suits the format (see :func:`check_tensor_scale`). Codes are checked where they are
    decoded."""
    if len(block.codes) != fmt.block_size or len(block.subscales) != fmt.subblocks:
        raise ValueError(
            f"{name} has {len(block.codes)} codes and {len(block.subscales)} sub-scales; "
            f"{fmt.name!r} has {fmt.block_size} and {fmt.subblocks}"
        )
    limit = 1 << fmt.subscale_bits
    for tau in block.subscales:
        if as_int(tau) is None or not 0 <= tau < limit:
            raise ValueError(f"{name} sub-scale {tau!r} is out of range for {fmt.name!r}: expected an integer in [0, {limit - 1}]")
    check_tensor_scale(fmt, tensor_scale)
    if block.scale.__class__ is int and {*map(type, block.codes), *map(type, block.subscales)} <= {int}:
        return block  # plain Python ints already (the common case)
    subscales = tuple(as_int(t) for t in block.subscales)
    return QuantizedBlock(_plain(block.scale), subscales, tuple(map(_plain, block.codes)))


def _plain(code):
    """A NumPy integer code as a Python int; anything else unchanged (the decoder judges it)."""
    value = as_int(code)
    return code if value is None else value


def check_tensor_scale(fmt, tensor_scale) -> Fraction | None:
    """``tensor_scale`` as an exact Fraction (None stays None); ValueError unless it suits ``fmt``.

    A tensor scale is allowed for formats that have one (NVFP4) and must be what the contract's
    s_t is (docs/numerics.md section 2.2): a positive value exactly representable in fp32, subnormals
    included (2^-149 <= s_t <= FP32_MAX, at most 24 significant bits; mxsim itself gives tiny
    tensors a subnormal s_t). Zero, negative values, -0, NaN, +-Inf and values fp32 cannot hold
    exactly (1/3, 1e-45, 2^-150, 1e39) are refused. Any exact number type is read (int, float,
    Fraction, NumPy scalars)."""
    if tensor_scale is None:
        return None
    if fmt.tensor_scale is None:
        raise ValueError(f"format {fmt.name!r} has no tensor scale; pass tensor_scale=None")
    try:
        x = to_exact(tensor_scale)
    except ValueError:
        x = Exact.nan()  # not a number at all: refused below with the same message
    fp32 = to_fp32(x, "saturate") if x.is_finite else x
    if not x.is_finite or x.sign or x.magnitude == 0 or fp32.magnitude != x.magnitude:
        raise ValueError(
            f"tensor_scale={tensor_scale!r} is not allowed; expected a finite positive value exactly representable "
            "in fp32 (2^-149 <= tensor_scale <= (2 - 2^-23) * 2^127, at most 24 significant bits)"
        )
    return x.magnitude


def dequantize_block(
    block: QuantizedBlock, fmt, tensor_scale: Fraction | None = None, scale_encoding: str = "e8m0"
) -> list[Exact]:
    """Exact values of a block: element * 2^(E - tau_j) (E8M0 families) or element * scale * s_t
    (NVFP4). The scale's value comes from :func:`mxsim.ref.scale_code.decode_scale` (``scale_encoding``
    e8m0 or int8_exponent). A NaN scale code makes every value NaN (positive: the scale has no
    sign); NaN and Inf elements keep their sign, and zeros theirs."""
    fmt = get_format(fmt, kind="block")
    block = check_block(block, fmt, tensor_scale)
    multipliers = block_multipliers(block, fmt, tensor_scale, scale_encoding)
    if multipliers is None:
        return [Exact.nan() for _ in block.codes]
    element, size = fmt.element, fmt.subblock_size if fmt.subblocks else fmt.block_size
    values = []
    for j, multiplier in enumerate(multipliers):  # sub-block j (the whole block without sub-blocks)
        scaled = {}  # code -> its value in this sub-block (a code often recurs)
        for code in block.codes[j * size : (j + 1) * size]:
            x = decode(code, element)  # (checks the code: a Python int from here on)
            value = scaled.get(code)
            if value is None:
                value = scaled[code] = x if x.kind != "finite" else Exact.trusted(x.sign, x.magnitude * multiplier)
            values.append(value)
    return values


def block_multipliers(block: QuantizedBlock, fmt, tensor_scale: Fraction | None, scale_encoding: str) -> list[Fraction] | None:
    """The factor each sub-block's elements are multiplied by (one for a block without
    sub-blocks): the scale's value, times NVFP4's s_t, over 2^tau_j; None for a NaN scale. For a
    ``block`` and ``fmt`` :func:`check_block` has accepted."""
    scale = decode_scale(block.scale, fmt.scale, scale_encoding)
    if scale.is_nan:
        return None
    factor = scale.value * (Fraction(1) if tensor_scale is None else Fraction(tensor_scale))
    return [factor / (1 << tau) for tau in block.subscales] if fmt.subblocks else [factor]
