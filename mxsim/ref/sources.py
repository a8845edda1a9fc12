"""Input (source) types of block quantization and how their values are read (docs/numerics.md
sections 1, 2 and 2.3), with integers and Fractions only.

A source type is the binary type the values came from: ``fp32`` (the default), ``fp16``,
``bf16``, ``fp64``, or an FP8 code type ``fp8_e4m3`` / ``fp8_e5m2``; the aliases of the format
catalogue (float32, float16, bfloat16, float64, float8_e4m3fn, float8_e5m2) name them too. Every
value is read exactly (widened, never rounded). The type decides two things:

* under ``inf_policy='saturate'`` an Inf counts as the type's own largest finite value
  (:func:`inf_stand_in`): fp32 (2 - 2^-23) * 2^127, fp16 65504, bf16 (2 - 2^-7) * 2^127,
  fp64 (2 - 2^-52) * 2^1023, E4M3 448, E5M2 57344;
* ``subnormal_inputs`` (:func:`read_subnormal`) reads the fp32 view of each value: fp16, bf16 and
  FP8 values are widened to fp32 first (fp16 and FP8 values are never fp32 subnormals; bf16's
  subnormals are fp32's), and fp64 input is refused under 'as_normal' (its values have no fp32
  exponent field).
"""

from __future__ import annotations

from fractions import Fraction

from ..formats import get_format
from ..options.encode import SOURCE_TYPES

__all__ = ["SOURCE_TYPES", "source_name", "inf_stand_in", "read_subnormal", "check_source_options", "FP32_MIN_NORMAL"]

FP32_MIN_NORMAL = Fraction(1, 2**126)


def source_name(source) -> str:
    """The catalogue name of a source type (aliases accepted); ValueError naming the allowed ones."""
    try:
        name = get_format(source, kind="float").name if isinstance(source, str) else None
    except ValueError:
        name = None
    if name not in SOURCE_TYPES:
        raise ValueError(
            f"source={source!r} is not allowed; expected one of: {', '.join(SOURCE_TYPES)} (or the aliases "
            "float32, float16, bfloat16, float64, float8_e4m3fn, float8_e5m2)"
        )
    return name


def inf_stand_in(source: str) -> Fraction:
    """The magnitude an Inf counts as for the scale under inf_policy='saturate': the largest finite
    value of the source type."""
    return get_format(source_name(source)).max_normal


def scale_inf_stand_in(source: str, options) -> Fraction:
    """:func:`inf_stand_in` for the scale of a block with an Inf, under ``options``: options that
    reproduce float32 arithmetic (``options.fp32_arithmetic``: scale_rule='floor_fp32',
    element_arith='fp32_log2', ...) take float32 values only, and float64's largest finite value
    (about 1.8e308) is not one, so an Inf in fp64 input under inf_policy='saturate' or 'max_scale'
    is a ValueError there (both layers; an fp64 input without Inf is read as before)."""
    value = inf_stand_in(source)
    if options.fp32_arithmetic and value > _FP32_MAX:
        raise ValueError(
            f"an Inf of {source_name(source)} input counts as its largest finite value ({float(value):.6g}) under "
            f"inf_policy={options.inf_policy!r}, which float32 cannot hold; scale_rule='floor_fp32', "
            "element_arith='fp32_log2', scale_value_min and nvfp4_arith='fp32_reciprocal' reproduce float32 "
            "arithmetic (give float32 input, or inf_policy 'nan', 'exponent_field' or 'error')"
        )
    return value


_FP32_MAX = get_format("fp32").max_normal


def check_source_options(source: str, options) -> None:
    """Refuse option combinations a source type cannot take: subnormal_inputs='as_normal' reads
    fp32 exponent fields, which fp64 values do not have. An unknown source type is refused too."""
    name = source_name(source)
    if options.subnormal_inputs == "as_normal" and name == "fp64":
        raise ValueError(
            "subnormal_inputs='as_normal' reads fp32 exponent fields; float64 (fp64) input is not allowed with it "
            "(convert to float32, or use subnormal_inputs='exact' or 'flush')"
        )


def read_subnormal(x: tuple[int, int, int], mode: str) -> tuple[int, int, int]:
    """Read one input, a ratio (sign, n, d) (see :func:`mxsim.ref.exact.ratio`: the value
    (-1)^sign * n / d, d = 0 for Inf and NaN), under ``subnormal_inputs`` = ``mode``; NaN, Inf,
    zeros and magnitudes of at least 2^-126 pass unchanged (sign kept throughout).

    * ``exact``: unchanged;
    * ``flush``: a nonzero magnitude below 2^-126 reads as zero of the same sign;
    * ``as_normal``: a nonzero magnitude below 2^-126 must be an fp32 subnormal m * 2^-149 (else
      ValueError) and reads as (1 + m / 2^23) * 2^-127 = (2^23 + m) / 2^150;
    * ``flush_plus`` (contract 2.3, 6.2: AMD Quark MX6/MX9): every magnitude below 2^-126, zeros
      included, reads as +0 (so -0 and negative subnormals lose their sign).

    Integers only: n / d < 2^-126 is n * 2^126 < d.
    """
    sign, n, d = x
    if mode == "flush_plus" and d and n << 126 < d:
        return 0, 0, 1
    if mode == "exact" or not d or not n or n << 126 >= d:
        return x
    if mode == "flush":
        return sign, 0, 1
    steps, rest = divmod(n << 149, d)  # the magnitude in units of 2^-149
    if rest:
        shown = ("-" if sign else "") + str(Fraction(n, d))
        raise ValueError(
            f"subnormal_inputs='as_normal' reads fp32 bit patterns; {shown} is below 2^-126 but not an fp32 subnormal"
        )
    return sign, (1 << 23) + steps, 1 << 150
