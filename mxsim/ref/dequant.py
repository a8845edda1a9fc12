"""Reference dequantization to an output float type (docs/numerics.md section 3.1), bit for bit.

A block's exact values (:func:`mxsim.ref.stored_block.dequantize_block`) are each rounded once, nearest
even, to the output format by the reference encoder, then :class:`mxsim.DequantizeOptions`
decide overflow, subnormal results and NaN. Integers and Fractions only.

Output words: IEEE bit patterns of the output type (float32: 32 bits; float16 and bfloat16: 16;
float64: 64), sign in the top bit.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from ..options.dequantize import OUTPUTS, DequantizeOptions, output_name
from ..formats import get_format
from .stored_block import QuantizedBlock, block_multipliers, check_block, dequantize_block, to_fp32
from .decode import decode
from .encode import EncodeRounding, ratio_encoder
from .exact import Exact, floor_log2
from .scale_code import decode_scale

__all__ = ["output_format", "round_to_output", "dequantize_block_bits", "fp32_reciprocal_values", "OutputRounding",
           "round_elements_traced", "dequantize_block_traced", "element_last_bit"]


def output_format(output):
    """The mxsim float format of an output type (float32 -> fp32, float16 -> fp16, bfloat16 ->
    bf16, float64 -> fp64)."""
    if output.__class__ is str:  # a name looked up before: one dict read (the hot path)
        fmt = _OUTPUT_FORMATS.get(output)
        if fmt is not None:
            return fmt
    fmt = get_format(OUTPUTS[output_name(output)], kind="float")
    if output.__class__ is str:
        if len(_OUTPUT_FORMATS) >= 64:
            _OUTPUT_FORMATS.clear()
        _OUTPUT_FORMATS[output] = fmt
    return fmt


_OUTPUT_FORMATS: dict = {}  # output names (strings only: accepted ones) -> their formats, at most 64 kept


def is_subnormal_word(word: int, out_fmt) -> bool:
    """A nonzero word whose exponent field is 0."""
    magnitude = word & ~out_fmt.sign_mask
    return 0 < magnitude < (1 << out_fmt.mantissa_bits)


def round_to_output(x: Exact, output, options: DequantizeOptions = DequantizeOptions()) -> int:
    """The output word of one exact value.

    * NaN: the output's quiet NaN (top mantissa bit set), with x's sign under
      ``dequant_nan='keep_sign'``, positive under ``'canonical'``;
    * +-Inf: +-Inf, whatever ``dequant_overflow`` says (it is not an overflow);
    * finite: rounded once to nearest, ties to even; a result beyond the largest finite magnitude
      is +-Inf (``dequant_overflow='inf'``) or +-largest finite (``'saturate'``); a subnormal
      result becomes a zero of x's sign under ``dequant_ftz``; -0 stays -0.
    """
    out_fmt = output_format(output)
    if x.is_nan:
        return out_fmt.nan_code(bool(x.sign) and options.dequant_nan == "keep_sign")
    if x.is_inf:
        return out_fmt.inf_code(bool(x.sign))
    return _round_finite(x, out_fmt, options, None)


def _round_finite(x: Exact, out_fmt, options: DequantizeOptions, trace) -> int:
    """:func:`round_to_output` of a finite x; ``trace``: None, or a list that gets the
    :class:`mxsim.ref.encode.EncodeRounding` of a nonzero x."""
    overflow = "saturate" if options.dequant_overflow == "saturate" else "ieee"
    magnitude = x.magnitude  # (the encoder's integer core: every float output is signed, "rne" is plain)
    word = ratio_encoder(out_fmt)(magnitude.numerator, magnitude.denominator, x.sign == 1, out_fmt, "rne", overflow,
                                  None, 32, False, trace)
    if options.dequant_ftz and is_subnormal_word(word, out_fmt):
        word &= out_fmt.sign_mask
    return word


class OutputRounding(NamedTuple):
    """What the output rounding of one finite nonzero dequantized value decides on (docs/numerics.md
    sections 3.1 and 3.3): ``rounding``, the encoder's :class:`mxsim.ref.encode.EncodeRounding` of the
    exact value x onto the output grid (before ``dequant_overflow`` and ``dequant_ftz``), and x's
    resolution, the weight of its last bit, 2^``last_bit_exponent`` * ``multiplier``: the element's
    last significand bit (:func:`element_last_bit`, a power of two) times the (sub-)block's
    multiplier (> 0, the object the block's elements share)."""

    rounding: EncodeRounding
    last_bit_exponent: int
    multiplier: Fraction


def round_elements_traced(codes, element_fmt, multiplier: Fraction, output,
                          options: DequantizeOptions = DequantizeOptions()) -> tuple[list[Exact], list[int], list]:
    """(the exact values of the element codes times ``multiplier`` (> 0), their output words, each
    one's :class:`OutputRounding`, None where the value is zero or not finite), as
    :func:`mxsim.ref.stored_block.dequantize_block` and :func:`dequantize_block_bits` give them for
    one (sub-)block of that multiplier."""
    out_fmt = output_format(output)
    values, words, records = [], [], []
    done: dict = {}  # code -> its (value, word, record) under this multiplier (a code often recurs)
    for code in codes:
        known = done.get(code)
        if known is None:
            element, last_bit_exponent = _element_of_code(code, element_fmt)
            if not element.is_finite:
                known = (element, round_to_output(element, output, options), None)
            else:
                x = Exact.trusted(element.sign, element.magnitude * multiplier)
                trace: list = []
                word = _round_finite(x, out_fmt, options, trace)
                known = (x, word, OutputRounding(trace[0], last_bit_exponent, multiplier) if trace else None)
            done[code] = known
        values.append(known[0])
        words.append(known[1])
        records.append(known[2])
    return values, words, records


@lru_cache(maxsize=4096)
def _element_of_code(code: int, element_fmt) -> tuple[Exact, int | None]:
    """(the value of an element code, the exponent of its :func:`element_last_bit` where it is
    finite and nonzero, else None)."""
    element = decode(code, element_fmt)
    if not element.is_finite or not element.magnitude:
        return element, None
    return element, floor_log2(element_last_bit(element, element_fmt))


def element_last_bit(element: Exact, element_fmt) -> Fraction:
    """The weight of the last significand bit of a nonzero element value: 2^(max(floor(log2 |e|),
    emin) - mantissa_bits) for floats, 2^-frac_bits (code 1's value) for integers."""
    if element_fmt.kind != "float":
        return Fraction(1, 1 << element_fmt.frac_bits)
    return Fraction(2) ** (max(floor_log2(element.magnitude), element_fmt.emin) - element_fmt.mantissa_bits)


def dequantize_block_traced(block: QuantizedBlock, fmt, output="float32", options: DequantizeOptions = DequantizeOptions(),
                            tensor_scale: Fraction | None = None, scale_encoding: str = "e8m0"
                            ) -> tuple[list[Exact], list[int], list]:
    """(:func:`mxsim.ref.stored_block.dequantize_block` of the block, :func:`dequantize_block_bits` of
    it under nvfp4_arith 'exact', each element's :class:`OutputRounding`: None where its value is
    zero or not finite, and for every element of a NaN-scale block)."""
    if not isinstance(options, DequantizeOptions):
        raise ValueError(f"options must be DequantizeOptions, got {type(options).__name__}")
    fmt = get_format(fmt, kind="block")
    block = check_block(block, fmt, tensor_scale)
    multipliers = block_multipliers(block, fmt, tensor_scale, scale_encoding)
    if multipliers is None:
        values = [Exact.nan() for _ in block.codes]
        return values, [round_to_output(x, output, options) for x in values], [None] * len(block.codes)
    size = fmt.subblock_size if fmt.subblocks else fmt.block_size
    values, words, records = [], [], []
    for j, multiplier in enumerate(multipliers):
        v, w, r = round_elements_traced(block.codes[j * size:(j + 1) * size], fmt.element, multiplier, output, options)
        values += v
        words += w
        records += r
    return values, words, records


def fp32_reciprocal_values(block: QuantizedBlock, fmt, global_scale: Fraction) -> list[Exact]:
    """compressed-tensors' NVFP4 output (contract 6.2, a tensor made under ``nvfp4_arith='fp32_reciprocal'``,
    whose tensor scale is the divisor gs): step = fp32(scale / gs), then fp32(element * step), each rounded
    to float32 nearest-even, overflowing to +-Inf (the library's ``scale / global_scale`` and ``x_q * scale`` in
    torch float32). -0 elements give -0; a NaN scale code gives NaN for the whole block. A step beyond float32
    (scale / gs above the float32 maximum: gs below about 2^-118, which the library's own gs never is) is +Inf:
    nonzero elements give +-Inf and zeros 0 * Inf = NaN, with the element's sign."""
    fmt = get_format(fmt, kind="block")
    block = check_block(block, fmt, global_scale)
    scale = decode_scale(block.scale, fmt.scale)
    if scale.is_nan:
        return [Exact.nan() for _ in block.codes]
    step = to_fp32(scale.value / Fraction(global_scale))  # positive (scale >= 2^-9, gs <= fp32 max), or +Inf
    values = []
    for x in (decode(code, fmt.element) for code in block.codes):
        if step.is_inf:
            values.append(Exact.inf(x.sign) if x.magnitude else Exact.nan(x.sign))
        else:
            values.append(to_fp32(Exact(x.sign, x.magnitude * step.value)))
    return values


def dequantize_block_bits(
    block: QuantizedBlock,
    fmt,
    output="float32",
    options: DequantizeOptions = DequantizeOptions(),
    tensor_scale: Fraction | None = None,
    scale_encoding: str = "e8m0",
    nvfp4_arith: str = "exact",
) -> list[int]:
    """The output words of one block, element 0 first (see :func:`round_to_output`); a NaN scale
    gives the positive quiet NaN for every element (``scale_encoding`` 'int8_exponent' has no
    NaN scale).

    ``nvfp4_arith``: the quantize option the (NVFP4) block was made under. 'fp32_reciprocal'
    (compressed-tensors, contract 6.2): ``tensor_scale`` is the divisor gs, each value is the
    library's float32 result (:func:`fp32_reciprocal_values`), then converted to the output type
    (float32: as it is; float64: exactly; float16 / bfloat16: rounded once more, nearest-even, as
    the library's ``.to(dtype)``); a float32 overflow is an overflow of the output (+-Inf, or
    +-largest finite under ``dequant_overflow='saturate'``). Otherwise the exact value, rounded once."""
    if not isinstance(options, DequantizeOptions):
        raise ValueError(f"options must be DequantizeOptions, got {type(options).__name__}")
    if nvfp4_arith != "fp32_reciprocal":
        values = dequantize_block(block, fmt, tensor_scale, scale_encoding)
        return [round_to_output(x, output, options) for x in values]
    if tensor_scale is None:
        raise ValueError("nvfp4_arith='fp32_reciprocal' dequantizes against the global scale gs; tensor_scale is None")
    out_fmt = output_format(output)
    words = []
    for x in fp32_reciprocal_values(block, fmt, tensor_scale):
        if x.is_inf:  # E2M1 has no Inf: a float32 overflow of element * step (or of the step)
            sign = out_fmt.sign_mask if x.sign else 0
            words.append(sign | (out_fmt.max_code if options.dequant_overflow == "saturate" else out_fmt.inf_code()))
        else:
            words.append(round_to_output(x, output, options))
    return words
