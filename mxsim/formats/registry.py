"""The catalogue of named formats, and :func:`get_format` to look one up.

Every entry is built from parameters only (see :mod:`mxsim.formats.element` and
:mod:`mxsim.formats.block`); derived numbers such as max normal are computed, never typed in.
"""

from __future__ import annotations

from .block import BlockFormat
from .element import FloatFormat, IntFormat

__all__ = ["get_format", "format_names", "FORMATS", "ALIASES", "FP32_E8M13"]

# --- element, scale and interchange formats -------------------------------------------------------
fp8_e4m3 = FloatFormat("fp8_e4m3", 4, 3, 7, specials="fn")
fp8_e5m2 = FloatFormat("fp8_e5m2", 5, 2, 15, specials="ieee")
fp6_e3m2 = FloatFormat("fp6_e3m2", 3, 2, 3, specials="none")
fp6_e2m3 = FloatFormat("fp6_e2m3", 2, 3, 1, specials="none")
fp4_e2m1 = FloatFormat("fp4_e2m1", 2, 1, 1, specials="none")
int8 = IntFormat("int8", bits=8, frac_bits=6, encoding="twos_complement")
# FP8 "FNUZ" (AMD CDNA3 / MI300 fp8 and bf8, ml_dtypes float8_e4m3fnuz / float8_e5m2fnuz): 0x80 is
# the one NaN, no -0, no Inf; the bias is one more than OCP's (contract section 1).
fp8_e4m3fnuz = FloatFormat("fp8_e4m3fnuz", 4, 3, 8, specials="fnuz")
fp8_e5m2fnuz = FloatFormat("fp8_e5m2fnuz", 5, 2, 16, specials="fnuz")
e8m0 = FloatFormat("e8m0", 8, 0, 127, signed=False, subnormals=False, specials="fn")
ue4m3 = FloatFormat("ue4m3", 4, 3, 7, signed=False, specials="fn")
bf16 = FloatFormat("bf16", 8, 7, 127)
fp16 = FloatFormat("fp16", 5, 10, 15)
fp32 = FloatFormat("fp32", 8, 23, 127)
fp64 = FloatFormat("fp64", 11, 52, 1023)

# The accumulator output ``fp32_e8m13`` (contract section 4.1; NVIDIA Hopper's FP8 tensor cores):
# results rounded to 8 exponent bits (bias 127, emin -126, smallest subnormal 2^-139) and 13
# fraction bits with IEEE specials, stored as the fp32 word whose low 10 bits are 0. Not in the
# catalogue (nothing is quantized to it); mxsim.ref.output rounds dot results to it.
FP32_E8M13 = FloatFormat("fp32_e8m13", 8, 13, 127)

# Sign-magnitude elements of the shared-exponent formats: 1 + m bits, magnitude read as the
# fixed-point number M / 2^(m-1), so the largest element lies just below 2 (emax_elem = 0).
int8_sm = IntFormat("int8_sm", bits=8, frac_bits=6, encoding="sign_magnitude")
int5_sm = IntFormat("int5_sm", bits=5, frac_bits=3, encoding="sign_magnitude")
int4_sm = IntFormat("int4_sm", bits=4, frac_bits=2, encoding="sign_magnitude")
int3_sm = IntFormat("int3_sm", bits=3, frac_bits=1, encoding="sign_magnitude")


def _p3109_binary8(precision: int) -> FloatFormat:
    """IEEE P3109 binary8pP (interim report; gfloat's ``format_info_p3109(8, P)``, signed,
    extended): P significand bits (P - 1 stored), 8 - P exponent bits, bias 2^(8 - P - 1);
    0x80 NaN, 0x7F / 0xFF +-Inf, no -0, subnormals (with P = 1 the exponent field 0 is zero
    alone: there is no mantissa to hold a subnormal)."""
    return FloatFormat(f"binary8p{precision}", 8 - precision, precision - 1, 2 ** (8 - precision - 1), specials="p3109")


_P3109 = [_p3109_binary8(precision) for precision in range(1, 8)]
_ELEMENTS = [fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3, fp4_e2m1, int8, int8_sm, int5_sm, int4_sm, int3_sm,
             fp8_e4m3fnuz, fp8_e5m2fnuz, *_P3109]
_SCALES = [e8m0, ue4m3]
_INTERCHANGE = [bf16, fp16, fp32, fp64]


def _mx(name: str, element) -> BlockFormat:
    return BlockFormat(name, element, block_size=32, scale=e8m0)


def _microexponent(name: str, element) -> BlockFormat:
    return BlockFormat(name, element, block_size=16, scale=e8m0, subblock_size=2, subscale_bits=1)


_BLOCKS = [
    _mx("mxfp8_e4m3", fp8_e4m3),
    _mx("mxfp8_e5m2", fp8_e5m2),
    _mx("mxfp6_e3m2", fp6_e3m2),
    _mx("mxfp6_e2m3", fp6_e2m3),
    _mx("mxfp4_e2m1", fp4_e2m1),
    _mx("mxint8", int8),
    _microexponent("mx9", int8_sm),
    _microexponent("mx6", int5_sm),
    _microexponent("mx4", int3_sm),
    BlockFormat("msfp16", int8_sm, block_size=16, scale=e8m0),
    BlockFormat("msfp12", int4_sm, block_size=16, scale=e8m0),
    BlockFormat("nvfp4", fp4_e2m1, block_size=16, scale=ue4m3, tensor_scale=fp32),
]

FORMATS = {f.name: f for f in _ELEMENTS + _SCALES + _INTERCHANGE + _BLOCKS}

# Other spellings in use: ml_dtypes / PyTorch names and short family names.
ALIASES = {
    "mxfp4": "mxfp4_e2m1",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "float8_e4m3fnuz": "fp8_e4m3fnuz",
    "float8_e5m2fnuz": "fp8_e5m2fnuz",
    "float6_e3m2fn": "fp6_e3m2",
    "float6_e2m3fn": "fp6_e2m3",
    "float4_e2m1fn": "fp4_e2m1",
    "float8_e8m0fnu": "e8m0",
    "bfloat16": "bf16",
    "float16": "fp16",
    "float32": "fp32",
    "float64": "fp64",
}


def format_names(kind: str | None = None) -> list[str]:
    """Names of the catalogue's formats, optionally only one kind ('float', 'int', 'block')."""
    return [name for name, fmt in FORMATS.items() if kind is None or fmt.kind == kind]


def get_format(name_or_format, kind: str | None = None):
    """Look a format up by name (or alias), or pass a format object through.

    ``kind`` restricts the answer: ``"element"`` (float or int), ``"float"``, ``"int"`` or
    ``"block"``. Raises ValueError naming the allowed names for an unknown or wrong-kind name.
    """
    cls = name_or_format.__class__
    if cls is str:  # names already looked up: one dict read (the hot path)
        fmt = _LOOKED_UP.get((name_or_format, kind))
        if fmt is not None:
            return fmt
    elif cls in _FORMAT_CLASSES and name_or_format.kind in _PASSED_THROUGH.get(kind, ()):
        return name_or_format  # a format object of an allowed kind (the other hot path)
    if isinstance(name_or_format, _FORMAT_CLASSES):
        fmt = name_or_format
    elif isinstance(name_or_format, str):
        key = name_or_format.strip().lower()
        key = ALIASES.get(key, key)
        if key not in FORMATS:
            raise ValueError(
                f"unknown format {name_or_format!r}; known formats: {', '.join(FORMATS)}"
                f"; aliases: {', '.join(ALIASES)}"
            )
        fmt = FORMATS[key]
    else:
        raise ValueError(
            f"format must be a name or a FloatFormat/IntFormat/BlockFormat, got {type(name_or_format).__name__}"
        )
    wanted = _KINDS.get(kind, (kind,))
    if fmt.kind not in wanted:
        allowed = [n for n, f in FORMATS.items() if f.kind in wanted]
        raise ValueError(f"format {fmt.name!r} is a {fmt.kind} format; expected one of: {', '.join(allowed)}")
    if name_or_format.__class__ is str:
        _LOOKED_UP[name_or_format, kind] = fmt
    return fmt


_KINDS = {"element": ("float", "int"), None: ("float", "int", "block")}
_FORMAT_CLASSES = (FloatFormat, IntFormat, BlockFormat)
# kind asked for -> the format kinds get_format passes a format object of through at once
_PASSED_THROUGH = {k: _KINDS.get(k, (k,)) for k in ("element", None, "float", "int", "block")}
# (name as given, kind) -> format, for names that passed get_format's checks (the catalogue is fixed)
_LOOKED_UP: dict = {}
