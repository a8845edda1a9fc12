"""Reference block quantization: one block of exact values to scale code(s) and element codes.

Families (docs/numerics.md sections 2, 2.1, 2.2):

* E8M0-scaled blocks: OCP MX (MXFP8/6/4, MXINT8), block floating point (MSFP12/16) and, with
  sub-blocks, the shared-microexponent formats MX9/6/4. Element i of sub-block j holds
  x_i / 2^(E - tau_j), encoded with the element rounding and saturation; tau_j = 0 without
  sub-blocks.
* NVFP4: UE4M3 block scale and an fp32 tensor scale s_t.

The design options of real quantizers (scale_encoding, scale_min, specials, nan_code,
subnormal_inputs; contract 2.3) and the source type of the values (:mod:`mxsim.ref.sources`) are
read here; the scale byte encodings live in :mod:`mxsim.ref.scale`; the stored block's record, its
checks and its exact values (dequantization) in :mod:`mxsim.ref.stored_block` (re-exported here).

Integers and Fractions only; the element codec is :func:`mxsim.ref.encode` (its integer core
:func:`mxsim.ref.encode.encode_ratio`: an element x / divisor is encoded from the integers
x.numerator * divisor.denominator and x.denominator * divisor.numerator, without building the
quotient as a Fraction). The inputs are carried as ratios (sign, n, d) of integers
(:func:`mxsim.ref.exact.ratio`; d = 0 for Inf, n = 1, and NaN, n = 0): a float input is read
through ``float.as_integer_ratio`` and no Fraction is built per element on the E8M0 path.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from typing import Iterable, Sequence

from ..options import QuantizeOptions
from ..options.encode import overflow_code
from ..formats import get_format
from .decode import decode
from .encode import encode, ratio_encoder
from .exact import Exact, Number, float_ratio, floor_log2_ratio, ratio
from .fp32_steps import fp32_log2_element_ratio, fp32_log2_floor_ratio, fp32_round, is_fp32_ratio
from .scale import E8M0_MAX, E8M0_MIN, E8M0_NAN, byte_exponent, given_scale_error, scale_byte, scale_exponent
from .refusals import NoMXEncoding, inf_block_error, nan_block_error, reciprocal_special_error, scale_underflow_error
from .sources import check_source_options, read_subnormal, scale_inf_stand_in
from .stored_block import (
    FP32_MAX,
    FP32_MIN_NORMAL,
    FP32_MIN_SUBNORMAL,
    QuantizedBlock,
    check_block,
    check_tensor_scale,
    dequantize_block,
    fp32_of_ratio,
    to_fp32,
)

__all__ = [
    "QuantizedBlock",
    "BlockRoundings",
    "quantize_block",
    "quantize_block_roundings",
    "dequantize_block",
    "nvfp4_tensor_scale",
    "element_divisor",
    "nan_block_element_code",
    "nan_element_code",
    "nan_block_scale",
    "given_scale_exponent",
    "given_scales_format_error",
    "check_block",
    "check_tensor_scale",
    "check_scale_value_min",
    "NoMXEncoding",
    "nan_block_error",
    "reciprocal_special_error",
    "inf_block_error",
    "scale_underflow_error",
    "FP32_POW_MIN",
    "QUARK_EPS_EXPONENT",
    "as_normal_fp32_error",
    "to_fp32",
    "fp32_of_ratio",
    "FP32_MAX",
    "FP32_MIN_NORMAL",
]

NVFP4_SCALE_NUMERATOR = 6 * 448  # largest E2M1 magnitude times largest E4M3 magnitude


def nvfp4_tensor_scale(tensor_amax: Fraction, options: QuantizeOptions = QuantizeOptions()) -> Fraction:
    """NVFP4's fp32 tensor scale s_t = fp32(amax / (6 * 448)), or 1 for an all-zero tensor or
    ``nvfp4_tensor_scale='none'``. (mxsim) A tensor so small that s_t would round to 0 gets the
    smallest fp32 subnormal instead, so that the block scales stay finite, and one so large that
    s_t would overflow fp32 (float64 input, or an Inf counting as the float64 maximum under
    inf_policy='saturate') gets the largest fp32."""
    if options.nvfp4_arith == "fp32_reciprocal":
        return nvfp4_global_scale(tensor_amax, options)
    if options.nvfp4_tensor_scale == "none" or tensor_amax == 0:
        return Fraction(1)
    s_t = to_fp32(Fraction(tensor_amax) / NVFP4_SCALE_NUMERATOR)
    return FP32_MAX if s_t.is_inf else max(s_t.value, FP32_MIN_SUBNORMAL)


def nvfp4_global_scale(tensor_amax: Fraction, options: QuantizeOptions) -> Fraction:
    """compressed-tensors' NVFP4 global scale (contract 6.2, ``nvfp4_arith='fp32_reciprocal'``), a
    divisor: gs = fp32(fp32(1 / max(amax, 2^-126)) * 448 * 6) (the library writes 448 * 6 / amax, which torch
    evaluates as a reciprocal times the scalar, two roundings); a product that overflows fp32 (amax
    below about 2^-116.6, e.g. an all-subnormal or all-zero tensor) gives gs = 1 (the library's
    nan_to_num). ``nvfp4_tensor_scale='none'`` gives 1."""
    if options.nvfp4_tensor_scale == "none":
        return Fraction(1)
    reciprocal = to_fp32(1 / max(Fraction(tensor_amax), FP32_MIN_NORMAL)).value
    gs = to_fp32(reciprocal * NVFP4_SCALE_NUMERATOR)
    return Fraction(1) if gs.is_inf else gs.value


Ratio = tuple  # (sign, n, d): (-1)^sign * n / d, d = 0 for Inf (n = 1) and NaN (n = 0)


def _read_inputs(values: Sequence[Number], fmt, options: QuantizeOptions) -> list[Ratio]:
    if len(values) != fmt.block_size:
        raise ValueError(f"a {fmt.name} block has {fmt.block_size} values, got {len(values)}")
    mode = options.subnormal_inputs
    xs = [float_ratio(v) if v.__class__ is float else ratio(v) for v in values]  # (ratio's own float case, inline)
    if options.inf_policy == "error" and any(n and not d for _, n, d in xs):
        raise inf_block_error()
    if options.fp32_arithmetic:
        for i, (_, n, d) in enumerate(xs):
            if d and not is_fp32_ratio(n, d):
                raise ValueError(
                    f"value {i} of the block ({values[i]!r}) is not a float32 value; scale_rule='floor_fp32', "
                    "element_arith='fp32_log2', scale_value_min and nvfp4_arith='fp32_reciprocal' "
                    "reproduce float32 arithmetic and take float32 "
                    "inputs only"
                )
        if mode == "as_normal" and any(n and n << 126 < d for _, n, d in xs):
            raise as_normal_fp32_error()
    return xs if mode == "exact" else [read_subnormal(x, mode) for x in xs]  # ('exact' leaves every value unchanged)


def as_normal_fp32_error(where: str = "a block") -> ValueError:
    """subnormal_inputs='as_normal' reads an fp32 subnormal as a value float32 cannot hold, which the
    float32 arithmetic of contract 6.2 cannot take."""
    return ValueError(
        f"{where} holds an fp32 subnormal, which subnormal_inputs='as_normal' reads as a value float32 cannot hold; "
        "scale_rule='floor_fp32', element_arith='fp32_log2' and scale_value_min take float32 values only (use "
        "subnormal_inputs='exact' or 'flush' with them)"
    )


def _is_nan_block(xs: list[Ratio], options: QuantizeOptions) -> bool:
    """specials='block': NaN, or Inf under inf_policy='nan', anywhere makes the block NaN."""
    if options.specials != "block":
        return False
    inf_is_nan = options.inf_policy == "nan"
    return any(not d and (not n or inf_is_nan) for _, n, d in xs)


def _amax(xs: list[Ratio], options: QuantizeOptions, source: str) -> tuple[int, int]:
    """Largest magnitude the scale is chosen from, as integers (n, d): finite elements, and an Inf
    under specials='block' as the source type's largest finite value (inf_policy='saturate' or
    'max_scale') or as 2^128, the value of fp32's all-ones exponent field
    (inf_policy='exponent_field'); NaN blocks never get here. Under specials='per_element' NaN and
    Inf do not count. (0, 1) if none."""
    if options.specials != "block":
        stand_in = (0, 1)
    elif options.inf_policy == "exponent_field":
        stand_in = (1 << 128, 1)
    else:
        stand_in = None  # the source's largest finite value, looked up at the first Inf
    best_n, best_d = 0, 1  # magnitudes compared as n * d' > n' * d on their integers
    for _, n, d in xs:
        if not d:  # Inf (n = 1) counts as its stand-in, NaN (n = 0) not at all
            if not n:
                continue
            if stand_in is None:
                value = scale_inf_stand_in(source, options)
                stand_in = (value.numerator, value.denominator)
            n, d = stand_in
        if n * best_d > best_n * d:
            best_n, best_d = n, d
    return best_n, best_d


def element_divisor(exponent: int, options: QuantizeOptions) -> tuple[int, int]:
    """What the elements of a single-level block are divided by, as integers (n, d): 2^E, except
    at E = -127 (E8M0 0x00) under ``min_scale_divisor``: 2^-126 ('min_normal', torchao FLOOR) or
    1 ('one', torchao RCEIL)."""
    if exponent == E8M0_MIN and options.min_scale_divisor != "scale":
        return (1, 1 << 126) if options.min_scale_divisor == "min_normal" else (1, 1)
    return _power_of_two(exponent)


def _power_of_two(exponent: int) -> tuple[int, int]:
    """2^exponent as integers (n, d)."""
    return (1 << exponent, 1) if exponent >= 0 else (1, 1 << -exponent)


def quantize_block(
    values: Sequence[Number],
    fmt,
    options: QuantizeOptions = QuantizeOptions(),
    *,
    tensor_scale: Fraction | None = None,
    rand_bits: Sequence[int] | None = None,
    source: str = "fp32",
    scale: int | None = None,
) -> QuantizedBlock:
    """Quantize exactly ``block_size`` values (ints, Fractions, floats or :class:`Exact`).

    ``tensor_scale``: NVFP4's s_t (see :func:`nvfp4_tensor_scale`; default 1). ``rand_bits``:
    one random word per element, for ``options.rounding == 'stochastic'``. ``source``: the type
    the values came from (see :mod:`mxsim.ref.sources`; fp32 by default): under
    inf_policy='saturate' an Inf counts as its largest finite value. ``scale``: a caller-supplied
    scale byte (E8M0-scaled formats only; an E8M0 code, or an int8 exponent byte under
    scale_encoding='int8_exponent', not below scale_min): the elements are quantized against it
    (saturating) instead of a computed one.

    specials='block' (default): NaN (or Inf, under inf_policy='nan') anywhere in the block gives a
    NaN block: scale 0xFF (NVFP4: 0x7F; ValueError under scale_encoding='int8_exponent', which has
    no NaN code), sub-scales 0, element codes the element's NaN code (``options.nan_code``) where
    it has one, else 0. specials='per_element': see :class:`mxsim.QuantizeOptions`.
    """
    return _quantize(values, fmt, options, tensor_scale, rand_bits, source, scale, None)


@dataclass(frozen=True)
class BlockRoundings:
    """What the element roundings of one quantized block decide on (docs/numerics.md sections 2 and
    3.3), as the quantizer computed it: element i rounds the ratio ``values[i]`` = (sign, n, d)
    divided by ``divisors[i]`` = (n, d) > 0 onto its element grid (with the options' rounding,
    saturating); an element with n = 0 (a zero) or d = 0 (NaN, Inf) does not round. The values are
    the inputs as read (``subnormal_inputs``, ``flush_subnormal_blocks``), or NVFP4's fp32(x * factor)
    divided by 1: ``fp32_steps``' fp32 factor fp32(fp32(1 / s_t) / scale), ``fp32_reciprocal``'s 1 /
    fp32(scale / gs) (``factor``, an :class:`Exact` (Inf: every element saturates); None for the
    other quantizers); under ``element_arith='fp32_log2'`` x / 2^E goes through that arithmetic's
    float32 steps. ``last_bit_floor``: an input value v's last bit weighs
    2^(max(floor(log2 v), last_bit_floor) - 23) (-127 for fp32 subnormals read ``as_normal``, else
    -126)."""

    values: tuple
    divisors: tuple
    last_bit_floor: int
    factor: Exact | None = None


def quantize_block_roundings(
    values: Sequence[Number],
    fmt,
    options: QuantizeOptions = QuantizeOptions(),
    *,
    tensor_scale: Fraction | None = None,
    source: str = "fp32",
) -> tuple[QuantizedBlock, BlockRoundings | None]:
    """:func:`quantize_block` (deterministic rounding) and its :class:`BlockRoundings` (None for a NaN
    block, whose elements do not round)."""
    trace = []
    block = _quantize(values, fmt, options, tensor_scale, None, source, None, trace)
    return block, (trace[0] if trace else None)


def _quantize(values, fmt, options, tensor_scale, rand_bits, source, scale, trace: list | None) -> QuantizedBlock:
    """:func:`quantize_block`; ``trace``: a list that gets the block's :class:`BlockRoundings` (none for a NaN
    block)."""
    fmt = get_format(fmt, kind="block")
    _check_format_options(options, fmt)
    check_source_options(source, options)
    tensor_scale = check_tensor_scale(fmt, tensor_scale)
    xs = _read_inputs(values, fmt, options)
    if (options.rounding == "stochastic") != (rand_bits is not None):
        raise ValueError("rand_bits is needed with rounding='stochastic', and only then")
    if fmt.scale.name == "ue4m3":
        if scale is not None:
            raise given_scales_format_error(fmt)
        s_t = Fraction(1) if tensor_scale is None else tensor_scale
        return _quantize_nvfp4(xs, fmt, options, s_t, rand_bits, source, trace)
    exponent = None if scale is None else given_scale_exponent(scale, options)
    return _quantize_e8m0(xs, fmt, options, rand_bits, source, exponent, trace)


def _last_bit_floor(options: QuantizeOptions) -> int:
    """:attr:`BlockRoundings.last_bit_floor` of fp32 inputs read under the options."""
    return -127 if options.subnormal_inputs == "as_normal" else -126


def _check_format_options(options: QuantizeOptions, fmt) -> None:
    """``options.check_format(fmt)``, skipped for the pair that passed it last (found by identity:
    a frozen QuantizeOptions and a frozen format object, both held here so that their ids stay
    theirs; the blocks of one tensor or suite share one pair)."""
    if _LAST_CHECKED[0] is options and _LAST_CHECKED[1] is fmt:
        return
    options.check_format(fmt)
    _LAST_CHECKED[:] = (options, fmt)


_LAST_CHECKED: list = [None, None]  # the (options, block format) pair that passed check_format last


def given_scales_format_error(fmt) -> ValueError:
    """Caller-supplied scales are E8M0 (or int8 exponent) bytes: NVFP4's UE4M3 scales are refused."""
    return ValueError(f"caller-supplied scales apply to E8M0-scaled formats; {fmt.name!r} has a {fmt.scale.name} scale")


def given_scale_exponent(byte: int, options: QuantizeOptions) -> int:
    """The exponent E of a caller-supplied scale byte; ValueError for a non-byte, the E8M0 NaN
    code, or E below ``options.scale_min``."""
    encoding = options.scale_encoding
    if isinstance(byte, bool) or not isinstance(byte, int) or not 0 <= byte <= 0xFF:
        raise given_scale_error(byte, encoding, options.scale_min)
    exponent = byte_exponent(byte, encoding)
    if (encoding == "e8m0" and byte == E8M0_NAN) or exponent < options.scale_min:
        raise given_scale_error(byte, encoding, options.scale_min)
    return exponent


def nan_element_code(element, options: QuantizeOptions, negative: bool = False) -> int:
    """The NaN code the quantizer writes: ``options.nan_code`` (or the element's canonical NaN
    code) with the sign bit of ``negative``; ValueError for element formats without NaN."""
    if not element.has_nan:
        raise ValueError(f"NaN input cannot be encoded: format {element.name!r} has no NaN")
    code = element.nan_code() if options.nan_code is None else options.nan_code
    return code | (element.sign_mask if negative else 0)


def nan_block_element_code(element, options: QuantizeOptions = QuantizeOptions()) -> int:
    """The code every element of a NaN block gets: the element's NaN code (``options.nan_code``
    if set), else 0."""
    return nan_element_code(element, options) if element.has_nan else 0


def nan_block_scale(fmt, options: QuantizeOptions) -> int:
    """The scale code of a NaN block: the scale format's NaN code (E8M0 0xFF, UE4M3 0x7F).
    ValueError under scale_encoding='int8_exponent', which has no NaN code."""
    if options.scale_encoding != "e8m0":
        raise ValueError(
            f"a NaN block (a NaN, or an Inf under inf_policy={options.inf_policy!r}, with specials='block') has no "
            f"scale under scale_encoding={options.scale_encoding!r} (no NaN code); use specials='per_element'"
        )
    return fmt.scale.nan_code()


def _nan_block(fmt, options: QuantizeOptions) -> QuantizedBlock:
    """Scale = the scale format's NaN code, sub-scales 0, elements the NaN-block element code."""
    code = nan_block_element_code(fmt.element, options)
    return QuantizedBlock(nan_block_scale(fmt, options), (0,) * fmt.subblocks, (code,) * fmt.block_size)


def _element_codes(
    xs: Sequence[Ratio], divisors: Iterable[tuple[int, int]], element, options: QuantizeOptions, rand_bits
) -> tuple[int, ...]:
    """The code of every x_i / divisor_i (each divisor a ratio over integers (n, d) > 0), encoded
    with the element rounding, saturating: what ``encode(x_i / divisor_i, element,
    options.rounding, "saturate", rand_bits=rand_bits[i], ...)`` gives. An Inf saturates to +-max
    and a NaN (specials='per_element' only) gives the NaN element code with its sign. The finite
    values go straight to the encoder's integer core (:func:`mxsim.ref.encode.ratio_encoder`)."""
    encoder = ratio_encoder(element)
    rounding, width, neg2 = options.rounding, options.rand_width, options.int8_allow_neg2
    plus_zero = options.zero_sign == "plus_input"
    codes = []
    for i, ((sign, n, d), (divisor_n, divisor_d)) in enumerate(zip(xs, divisors)):
        # block element formats are signed; zero_sign='plus_input': +0 unless |x / divisor| > 2^-150, i.e. unless
        # the float32 quotient is nonzero
        negative = sign == 1 and (not plus_zero or (n * divisor_d << 150) > d * divisor_n)
        rand = None if rand_bits is None else int(rand_bits[i])
        if d:
            code = encoder(n * divisor_d, d * divisor_n, negative, element, rounding, "saturate", rand, width, neg2)
        elif n:  # Inf
            code = overflow_code(element, negative, "saturate", rounding, True, neg2)
        else:  # NaN
            code = nan_element_code(element, options, negative)
        codes.append(code)
    return _plus_zeros(codes, element, options)


def _plus_zeros(codes: list[int], element, options: QuantizeOptions) -> tuple[int, ...]:
    """zero_sign='plus' (contract 6.2, Quark FP4/FP6): every -0 code of a float element becomes +0."""
    if options.zero_sign == "plus" and element.kind == "float":
        return tuple(0 if code == element.sign_mask else code for code in codes)
    return tuple(codes)


def _fp32_step_codes(xs: Sequence[Ratio], exponent: int, element, options: QuantizeOptions) -> tuple[int, ...]:
    """element_arith='fp32_log2' (contract 6.2, microxcaling): each element x / 2^E rounded to a
    float32 value a, then :func:`mxsim.ref.fp32_steps.fp32_log2_element`, encoded exactly (the
    result lies on the element grid). Under zero_sign='plus_input' an a of zero (a -0 input, or
    an x / 2^E that underflows float32) gives +0. Inf saturates; NaN never gets here (NaN blocks)."""
    divisor_n, divisor_d = _power_of_two(exponent)
    plus_zero = options.zero_sign == "plus_input"
    encoder = ratio_encoder(element)
    codes = []
    for sign, n, d in xs:
        if not d:  # Inf (specials='block' with inf_policy other than 'nan')
            codes.append(overflow_code(element, sign == 1, "saturate", options.rounding, True, False))
            continue
        significand, q = fp32_round(n * divisor_d, d * divisor_n)  # a = S * 2^q: zero where x / 2^E underflows
        negative = sign == 1 and (significand != 0 or not plus_zero)
        a_n, a_d = (significand << q, 1) if q >= 0 else (significand, 1 << -q)
        m_n, m_d = fp32_log2_element_ratio(a_n, a_d, element, options.rounding)
        codes.append(encoder(m_n, m_d, negative, element, "rne", "saturate", None, 32, False))
    return _plus_zeros(codes, element, options)


def _microexponents(xs: list[Ratio], fmt, exponent: int, options: QuantizeOptions, source: str) -> list[int]:
    """tau_j = clamp(E - e_j, 0, 2^d2 - 1), e_j = max(floor(log2 of the sub-block's largest
    magnitude), -127), e(0) = -127 (the fp32 exponent-field view of AMD Quark's kernels)."""
    size, cap = fmt.subblock_size, (1 << fmt.subscale_bits) - 1
    taus = []
    for j in range(fmt.subblocks):
        n, d = _amax(xs[j * size : (j + 1) * size], options, source)
        e_j = max(floor_log2_ratio(n, d), E8M0_MIN) if n else E8M0_MIN
        taus.append(min(max(exponent - e_j, 0), cap))
    return taus


def _block_exponent(xs: list[Ratio], fmt, options: QuantizeOptions, source: str) -> int | None:
    """The scale rule's E, clamped to [scale_min, 127]; for a block with no nonzero finite
    magnitude scale_min, or under zero_block_scale='min_normal' the rule's E of an amax of
    2^-126; 127 for a block with Inf under inf_policy='max_scale'. None (a NaN block) for an E
    above 127 under scale_overflow='nan'."""
    if options.inf_policy == "max_scale" and any(not d and n for _, n, d in xs):
        return E8M0_MAX
    n, d = _amax(xs, options, source)
    if options.scale_value_min != "none":
        check_scale_value_min(Fraction(n, d), options)
    fp32_pow = options.scale_underflow == "fp32_pow"
    if n == 0 and (fp32_pow or options.zero_block_scale == "scale_min"):
        return QUARK_EPS_EXPONENT if fp32_pow else options.scale_min
    amax = Fraction(n, d) if n else FP32_MIN_NORMAL
    wanted = scale_exponent(amax, fmt.element, options.scale_rule, options.scale_round_bits) + options.scale_offset
    if wanted > E8M0_MAX and options.scale_overflow == "nan":
        return None
    if fp32_pow and wanted < FP32_POW_MIN:
        return QUARK_EPS_EXPONENT
    if fp32_pow and wanted < options.scale_min <= E8M0_MIN:  # (a scale_min above -127 clamps it: Quark MXINT8)
        raise scale_underflow_error(wanted)
    return min(max(wanted, options.scale_min), E8M0_MAX)


#: scale_underflow='fp32_pow' (Quark floor/ceil): the float32 2^E is 0 below E = -149 and is then, like the scale of
#: an all-zero block, replaced by float32 eps 2^-23.
FP32_POW_MIN = -149
QUARK_EPS_EXPONENT = -23


#: scale_value_min='1e-10' (Brevitas): the float32 log2 floor of amax below which its scale is 1e-10, not 2^E.
BREVITAS_LOG2_MIN = -33


def check_scale_value_min(amax: Fraction, options: QuantizeOptions, where: str = "a block") -> None:
    """scale_value_min='1e-10' (contract 6.2, Brevitas): ValueError for a block whose library scale
    is not a power of two: amax = 0, or a float32 log2 of amax below -33 (Brevitas clamps
    2^floor(log2 amax) at float32 1e-10, which lies in [2^-34, 2^-33))."""
    if amax == 0 or fp32_log2_floor_ratio(amax.numerator, amax.denominator) < BREVITAS_LOG2_MIN:
        raise NoMXEncoding(
            f"{where} with largest magnitude {float(amax)!r} has no MX encoding under scale_value_min="
            f"{options.scale_value_min!r}: the library (Brevitas) clamps its scale at 1e-10, which is not a power of "
            f"two, for every block whose amax is 0 or below 2^-33 (float32 log2); use another profile or options "
            f"for such blocks",
            f"scale_value_min={options.scale_value_min!r}",
        )


def _flush_subnormal_block(xs: list[Ratio], options: QuantizeOptions, source: str) -> list[Ratio]:
    """flush_subnormal_blocks (microxcaling flush_fp32_subnorms): every value of a block whose
    amax has a float32 log2 below -126 becomes a zero of its sign."""
    n, d = _amax(xs, options, source)
    if n and fp32_log2_floor_ratio(n, d) < -126:
        return [(sign, 0, 1) for sign, _, _ in xs]
    return xs


def _quantize_e8m0(xs, fmt, options, rand_bits, source: str, exponent: int | None, trace=None) -> QuantizedBlock:
    if options.nan_blocks == "error" and any(not d and not n for _, n, d in xs):
        raise nan_block_error()
    if _is_nan_block(xs, options):
        return _nan_block(fmt, options)
    if exponent is None:
        exponent = _block_exponent(xs, fmt, options, source)
        if exponent is None:
            return _nan_block(fmt, options)
    if options.flush_subnormal_blocks:
        xs = _flush_subnormal_block(xs, options, source)
    if options.element_arith == "fp32_log2":
        codes = _fp32_step_codes(xs, exponent, fmt.element, options)
        if trace is not None:
            trace.append(BlockRoundings(tuple(xs), (_power_of_two(exponent),) * len(xs), _last_bit_floor(options)))
        return QuantizedBlock(scale_byte(exponent, options.scale_encoding), (), codes)
    if fmt.subblocks:  # 2^(E - tau_j) for the elements of sub-block j
        taus = _microexponents(xs, fmt, exponent, options, source)
        divisors = [_power_of_two(exponent - tau) for tau in taus for _ in range(fmt.subblock_size)]
    else:  # 2^E, or min_scale_divisor's divisor at E = -127, for every element
        taus = []
        divisors = repeat(element_divisor(exponent, options))
    if trace is not None:
        divisors = tuple(divisors) if fmt.subblocks else (element_divisor(exponent, options),) * len(xs)
        trace.append(BlockRoundings(tuple(xs), divisors, _last_bit_floor(options)))
    codes = _element_codes(xs, divisors, fmt.element, options, rand_bits)
    return QuantizedBlock(scale_byte(exponent, options.scale_encoding), tuple(taus), codes)


def _quantize_nvfp4(xs, fmt, options, tensor_scale: Fraction, rand_bits, source: str, trace=None) -> QuantizedBlock:
    if _is_nan_block(xs, options):
        return _nan_block(fmt, options)
    if options.nvfp4_arith == "fp32_reciprocal":
        return _quantize_nvfp4_reciprocal(xs, fmt, options, tensor_scale, rand_bits, trace)
    lowest = options.nvfp4_scale_lowest
    amax = Fraction(*_amax(xs, options, source))
    fp32_steps = options.nvfp4_arith == "fp32_steps"
    if fp32_steps:  # IEEE fp32 steps: a quotient may overflow to Inf, which the clamp absorbs
        step = to_fp32(amax / 6)  # Inf for an amax beyond fp32 (float64 input)
        quotient = step if step.is_inf else to_fp32(step.value / tensor_scale)
        wanted = fmt.scale.max_normal if quotient.is_inf else quotient.value
    else:
        wanted = amax / 6 / tensor_scale
    scale_code = encode(min(max(wanted, lowest), fmt.scale.max_normal), fmt.scale, "rne")
    scale = decode(scale_code, fmt.scale).value
    if fp32_steps:
        inverse = to_fp32(1 / tensor_scale)
        factor = inverse if inverse.is_inf else to_fp32(inverse.value / scale)
    product = tensor_scale * scale
    divisor = (product.numerator, product.denominator)
    if fp32_steps:  # each finite nonzero x becomes fp32(x * factor), divided by 1
        xs, divisors = zip(*(_fp32_scaled(x, factor, divisor) for x in xs))
    else:
        divisors = (divisor,) * len(xs)
    if trace is not None:
        trace.append(BlockRoundings(tuple(xs), tuple(divisors), -126 if fp32_steps else _last_bit_floor(options),
                                    factor if fp32_steps else None))
    return QuantizedBlock(scale_code, (), _element_codes(xs, divisors, fmt.element, options, rand_bits))


def _quantize_nvfp4_reciprocal(xs, fmt, options, global_scale: Fraction, rand_bits, trace=None) -> QuantizedBlock:
    """compressed-tensors 0.20 NVFP4 (contract 6.2), every step rounded to fp32 (IEEE, nearest-even):
    scale = UE4M3(min(fp32(gs * fp32(amax / 6)), 448)) (no lower clamp; E4M3 subnormals kept), a
    zero scale becomes 0.125 (code 0x20); each element is fp32(x / fp32(scale / gs)), then rounded
    (saturating). NaN or Inf anywhere: ValueError (the library gives NaN outputs and gs 1 or 0)."""
    if any(not d for _, _, d in xs):
        raise reciprocal_special_error()
    amax = max((Fraction(n, d) for _, n, d in xs), default=Fraction(0))
    product = to_fp32(global_scale * to_fp32(amax / 6).value)
    wanted = fmt.scale.max_normal if product.is_inf else min(product.value, fmt.scale.max_normal)
    scale_code = encode(wanted, fmt.scale, "rne")
    scale = decode(scale_code, fmt.scale).value
    if scale == 0:
        scale_code = encode(Fraction(1, 8), fmt.scale, "rne")
        scale = Fraction(1, 8)
    step = to_fp32(scale / global_scale).value  # a positive normal fp32: scale >= 2^-9, gs <= 2^128
    quotients = []
    for sign, n, d in xs:  # an fp32 quotient that overflows is +-Inf, which saturates
        q = to_fp32(Fraction(n, d) / step)
        quotients.append((sign, 1, 0) if q.is_inf else (sign, q.magnitude.numerator, q.magnitude.denominator))
    if trace is not None:  # each element rounds its fp32 quotient, divided by 1
        trace.append(BlockRoundings(tuple(quotients), ((1, 1),) * len(quotients), -126, Exact(0, 1 / step)))
    return QuantizedBlock(scale_code, (), _element_codes(quotients, repeat((1, 1)), fmt.element, options, rand_bits))


def _fp32_scaled(x: Ratio, factor: Exact, divisor: tuple[int, int]) -> tuple[Ratio, tuple[int, int]]:
    """NVFP4 fp32_steps: (fp32(x * factor), 1) for a finite nonzero x, else (x, divisor). (mxsim)
    x * Inf is +-Inf (it saturates); a zero stays zero rather than 0 * Inf = NaN."""
    sign, n, d = x
    if not (d and n):
        return x, divisor
    scaled = factor if factor.is_inf else to_fp32(Fraction(n, d) * factor.value)
    if scaled.is_inf:
        return (sign, 1, 0), (1, 1)
    return (sign, scaled.magnitude.numerator, scaled.magnitude.denominator), (1, 1)
