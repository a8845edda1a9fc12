"""Reference dequantization to an output float type (conventions.md section 3.1), bit for bit.

A block's exact values (:func:`mxsim.ref.block.dequantize_block`) are each rounded once, nearest
even, to the output format by the reference encoder, then :class:`mxsim.DequantizeOptions`
decide overflow, subnormal results and NaN. Integers and Fractions only.

Output words: IEEE bit patterns of the output type (float32: 32 bits; float16 and bfloat16: 16;
float64: 64), sign in the top bit.
"""

from __future__ import annotations

from fractions import Fraction

from ..options.dequantize import OUTPUTS, DequantizeOptions, output_name
from ..formats import get_format
from .block import QuantizedBlock, dequantize_block
from .encode import encode
from .exact import Exact

__all__ = ["output_format", "round_to_output", "dequantize_block_bits"]


def output_format(output):
    """The mxsim float format of an output type (float32 -> fp32, float16 -> fp16, bfloat16 ->
    bf16, float64 -> fp64)."""
    return get_format(OUTPUTS[output_name(output)], kind="float")


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
    overflow = "saturate" if options.dequant_overflow == "saturate" else "ieee"
    word = encode(x, out_fmt, "rne", overflow)
    if options.dequant_ftz and is_subnormal_word(word, out_fmt):
        word &= out_fmt.sign_mask
    return word


def dequantize_block_bits(
    block: QuantizedBlock,
    fmt,
    output="float32",
    options: DequantizeOptions = DequantizeOptions(),
    tensor_scale: Fraction | None = None,
    scale_encoding: str = "e8m0",
) -> list[int]:
    """The output words of one block, element 0 first (see :func:`round_to_output`); a NaN scale
    gives the positive quiet NaN for every element (``scale_encoding`` 'int8_exponent' has no
    NaN scale)."""
    if not isinstance(options, DequantizeOptions):
        raise ValueError(f"options must be DequantizeOptions, got {type(options).__name__}")
    values = dequantize_block(block, fmt, tensor_scale, scale_encoding)
    return [round_to_output(x, output, options) for x in values]
