"""Block-quantization options of the numerics contract (docs/numerics.md sections 2, 2.1, 2.2, 2.3).

One frozen :class:`QuantizeOptions` carries every choice, is validated once, and is recorded
whole in tensors, files and manifests (``as_dict``). The reference model and the fast path both
read it; neither keeps defaults of its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from ..formats import FORMATS, get_format
from .encode import MAX_RAND_WIDTH, ROUNDING_MODES, check_int8_allow_neg2, refuse_inapplicable
from .spec import Flag, IntRange, option, option_named, options_from_kwargs, validate_fields

__all__ = [
    "QuantizeOptions",
    "SCALE_RULES",
    "SCALE_ENCODINGS",
    "INF_POLICIES",
    "MIN_SCALE_DIVISORS",
    "ocp_mx_format_names",
    "option_applies",
    "element_nan_codes",
    "FP32_STEP_ROUNDINGS",
    "SUBNORMAL_INPUTS",
]

SCALE_RULES = ("floor", "ceil", "even", "rceil", "tosa", "rceil_fp32", "floor_fp32", "ceil_fp32")
#: The element roundings of element_arith='fp32_log2' (microxcaling's 'nearest', 'even', 'floor'; contract 6.2).
FP32_STEP_ROUNDINGS = ("rna", "rne", "rtz")
INF_POLICIES = ("nan", "saturate", "max_scale", "exponent_field", "error")
_OCP_MX_INF_POLICIES = ("max_scale", "exponent_field")  # the profiles' values (torchao, gfloat)
SUBNORMAL_INPUTS = ("exact", "flush", "as_normal", "flush_plus")
MIN_SCALE_DIVISORS = ("scale", "min_normal", "one")
SCALE_ENCODINGS = ("e8m0", "int8_exponent")  # how an E8M0 scale byte stores E (section 2.3, 3.2)
# The design options of real quantizers (section 2.3) that only OCP MX formats take, with defaults.
_OCP_MX_OPTIONS = {"scale_encoding": "e8m0", "scale_min": -127, "specials": "block", "nan_code": None}


def _is_ocp_mx(fmt) -> bool:
    """E8M0 scale, no sub-blocks, float or two's-complement integer elements (MXFP8/6/4, MXINT8)."""
    shared_exponent = fmt.element.kind == "int" and fmt.element.encoding == "sign_magnitude"
    return fmt.scale.name == "e8m0" and not fmt.subblocks and not shared_exponent


def _is_e8m0_scaled(fmt) -> bool:
    """An E8M0 block scale: OCP MX, the shared-microexponent formats MX9/6/4 and MSFP (not NVFP4)."""
    return fmt.scale.name == "e8m0"


def _is_nvfp4(fmt) -> bool:
    """The NVFP4 family: a UE4M3 block scale (and an fp32 tensor scale)."""
    return fmt.scale.name == "ue4m3"


# Block options that apply to some formats only, with the test of whether they apply (the
# section 2.3 design options are checked with their own message below; int8_allow_neg2 in
# mxsim.options.encode, shared with element encoding).
_FORMAT_OPTIONS = {
    "scale_rule": _is_ocp_mx,
    "nvfp4_scale_min": _is_nvfp4,
    "nvfp4_arith": _is_nvfp4,
    "nvfp4_tensor_scale": _is_nvfp4,
    "min_scale_divisor": _is_ocp_mx,
    "zero_block_scale": _is_ocp_mx,
    "scale_overflow": _is_ocp_mx,
    "element_arith": _is_ocp_mx,
    "zero_sign": lambda fmt: _is_ocp_mx(fmt) or _is_nvfp4(fmt),  # NVFP4: compressed-tensors' +0
    "flush_subnormal_blocks": _is_ocp_mx,
    "scale_offset": _is_ocp_mx,
    "scale_round_bits": _is_ocp_mx,
    "nan_blocks": _is_e8m0_scaled,
    "scale_value_min": _is_ocp_mx,
    "scale_underflow": _is_ocp_mx,
}


def option_applies(name: str, fmt) -> bool:
    """Whether block option ``name`` applies to block format ``fmt`` (options without a format
    restriction apply everywhere; int8_allow_neg2 is checked in mxsim.options.encode)."""
    applies = _FORMAT_OPTIONS.get(name)
    return applies is None or applies(fmt)


def ocp_mx_format_names() -> list[str]:
    """Catalogue block formats of the OCP MX family (the ones the section 2.3 design options apply to)."""
    return [name for name, fmt in FORMATS.items() if fmt.kind == "block" and _is_ocp_mx(fmt)]


def element_nan_codes(element) -> list[int]:
    """The NaN codes of an element format with the sign bit clear (empty for formats without NaN):
    'fn' formats have one (all-ones magnitude), 'ieee' formats every nonzero mantissa under the
    all-ones exponent field. 'fnuz' and 'p3109' formats have a single NaN, the sign bit alone
    (0x80), which is the one code listed for them."""
    if not element.has_nan:
        return []
    if element.nan_at_negative_zero:
        return [element.nan_code()]
    field = ((1 << element.exponent_bits) - 1) << element.mantissa_bits
    mantissas = range(1, 1 << element.mantissa_bits)
    if element.specials == "fn":
        mantissas = [(1 << element.mantissa_bits) - 1]
    return [field | m for m in mantissas]


@dataclass(frozen=True)
class QuantizeOptions:
    """Every choice block quantization makes (defaults are the contract's); each field's
    definition (allowed values, meaning, contract section) is in its :func:`~mxsim.options.option`.

    Scale rules are computed exactly (see :mod:`mxsim.ref.scale`); shared-exponent formats (MX9/6/4,
    MSFP) and NVFP4 have their own rules and accept only the default. Element overflow after
    scaling always saturates; stochastic rounding takes ``rand_bits`` at quantize time.

    ``flush_subnormal_inputs`` is the old spelling of ``subnormal_inputs='flush'`` (True sets it;
    'flush' sets it True, so ``as_dict`` round-trips). The design options of real quantizers
    (section 2.3) apply to OCP MX formats only (:func:`ocp_mx_format_names`), except
    ``subnormal_inputs``, which every format takes. With ``scale_encoding='int8_exponent'`` there is
    no NaN scale, so a block that ``specials='block'`` would make a NaN block raises ValueError;
    ``specials='per_element'`` takes ``inf_policy='nan'`` only (Inf never counts for the scale
    there); ``nan_code`` must be a NaN code of the element format with the sign bit clear (a NaN
    element takes the input's sign); ``subnormal_inputs='as_normal'`` refuses float64 input.
    """

    scale_rule: str = option(
        "floor", SCALE_RULES,
        "how the block scale exponent is chosen (exact integers, never a float log2; `rceil_fp32` decides exactly "
        "what a float32 quotient and log2 give; `floor_fp32`: floor of the float32 log2 of amax, minus emax, as torch "
        "computes it: microxcaling, Brevitas; `ceil_fp32`: its ceiling, AMD Quark 'ceil')", "2, 6, 6.2",
    )
    rounding: str = option(
        "rne", ROUNDING_MODES, "element rounding after scaling (element overflow always saturates)", "2, 2.1, 2.2"
    )
    rand_width: int = option(32, IntRange(1, MAX_RAND_WIDTH), "bits of each stochastic-rounding random word", "1")
    inf_policy: str = option(
        "nan", INF_POLICIES,
        "`nan`: a block with ±Inf is a NaN block; `saturate`: Inf counts as the largest finite value of the "
        "input's own type (fp32, fp16 65504, bf16, float64) and saturates; `max_scale`: the block gets E = 127 and "
        "Inf saturates (gfloat, torchao RCEIL); `exponent_field`: Inf counts as 2^128, the fp32 all-ones exponent "
        "field, and saturates (torchao FLOOR); `error`: ValueError (Quark FP4/FP6 pass the Inf through to the "
        "output: no MX encoding; Quark MX6/MX9 too; contract 6.2)", "2, 6, 6.2",
    )
    flush_subnormal_inputs: bool = option(
        False, Flag(), "read inputs below 2^-126 in magnitude as zeros of their sign (= `subnormal_inputs='flush'`)",
        "2, 2.1",
    )
    partial_block: str = option(
        "pad", ("pad", "error"), "`pad` a partial last block with zeros (shape restored on dequantize), or `error`", "2"
    )
    int8_allow_neg2: bool = option(False, Flag(), "MXINT8 elements may take 0x80 (-2.0)", "1")
    min_scale_divisor: str = option(
        "scale", MIN_SCALE_DIVISORS,
        "what the elements of a block with scale E = -127 (E8M0 0x00) are divided by: `scale` 2^-127; "
        "`min_normal` 2^-126 (torchao FLOOR); `one` 1 (torchao RCEIL); the scale byte stays 0x00", "2, 6",
    )
    nvfp4_scale_min: str = option(
        "normal", ("normal", "subnormal"),
        "NVFP4 block-scale lower clamp: `normal` 2^-6 (torchao) or `subnormal` 2^-9", "2.2",
    )
    nvfp4_arith: str = option(
        "exact", ("exact", "fp32_steps", "fp32_reciprocal"),
        "`exact`; `fp32_steps`: every intermediate rounded to fp32 in torchao's order; `fp32_reciprocal`: "
        "compressed-tensors' order: the tensor scale is a divisor gs = fp32(fp32(1 / amax) * 448 * 6) (torch's "
        "scalar / tensor; 1 if it overflows), "
        "the block scale UE4M3(fp32(gs * fp32(amax_b / 6))) with no lower clamp and 0 replaced by 0.125, each element "
        "fp32(x / fp32(scale / gs)); NaN or Inf raise ValueError; float32 inputs only; such a tensor dequantizes as "
        "the library: fp32(element * fp32(scale / gs)), then converted to the output type", "2.2, 6.2",
    )
    nvfp4_tensor_scale: str = option(
        "amax", ("amax", "none"), "`amax`: s_t = fp32(amax / (6 × 448)); `none`: s_t = 1", "2.2"
    )
    scale_encoding: str = option(
        "e8m0", SCALE_ENCODINGS,
        "scale byte: `e8m0` E + 127 (0xFF = NaN); `int8_exponent` E as two's complement (0xFF = 2^-1, "
        "0x80 = 2^-128, no NaN)", "2.3, 3.2",
    )
    scale_min: int = option(
        -127, IntRange(-128, -120),
        "lower clamp of the scale exponent E (-128 only with `int8_exponent`; Quark MXINT8 -120: its integer step "
        "scale / 64 is clamped at 2^-126, contract 6.2)", "2.3, 6.2",
    )
    specials: str = option(
        "block", ("block", "per_element"),
        "`block`: NaN (and Inf under `inf_policy='nan'`) poisons the block; `per_element`: E from the finite "
        "elements, NaN -> `nan_code` with its sign, Inf -> ±max", "2.3",
    )
    nan_code: int | None = option(
        None, IntRange(0, 255, "the format's canonical NaN code"),
        "the NaN code the quantizer writes (sign bit clear; iDMA: 0x7D for E5M2)", "2.3",
    )
    subnormal_inputs: str = option(
        "exact", SUBNORMAL_INPUTS,
        "`exact`; `flush` (as `flush_subnormal_inputs`); `as_normal`: an fp32 with exponent field 0 reads as "
        "(1 + m/2^23) * 2^-127; `flush_plus`: every input below 2^-126 in magnitude, -0 included, reads as +0 "
        "(AMD Quark MX6/MX9: torch.where(|x| < 2^-126, 0.0, x), so -0 and negative subnormals give +0)", "2.3, 6.2",
    )

    zero_block_scale: str = option(
        "scale_min", ("scale_min", "min_normal"),
        "scale of a block without a nonzero finite magnitude: `scale_min` E = scale_min; `min_normal` the scale rule "
        "applied to an amax of 2^-126, clamped (microxcaling: E = -126 - emax, MXINT8 2^-126)", "6.2",
    )
    scale_overflow: str = option(
        "clamp", ("clamp", "nan"),
        "a scale rule's E above 127: `clamp` to 127, or `nan`: a NaN block (scale 0xFF; microxcaling)", "6.2",
    )
    element_arith: str = option(
        "exact", ("exact", "fp32_log2"),
        "`exact`, or `fp32_log2`: the element x / 2^E taken as a float32, its binade from float32 log2 (clamped at "
        "the element's emin), `rna`/`rne` as floor(|x| + 0.5) evaluated in float32 (double rounding; `rne` minus 1 at "
        "an exact .5 of an even integer), `rtz` as floor (microxcaling 'nearest', 'even', 'floor'); float32 inputs "
        "only", "6.2",
    )
    zero_sign: str = option(
        "keep", ("keep", "plus_input", "plus"),
        "`keep` the sign of zeros; `plus_input`: an element whose float32 quotient x / 2^E is zero (a -0 input, or "
        "|x / 2^E| <= 2^-150) encodes as +0; a negative value rounding to zero from a nonzero quotient keeps its -0 "
        "(microxcaling, compressed-tensors; NVFP4: the quotient of its `nvfp4_arith`); `plus`: every element whose "
        "rounded magnitude is zero encodes as +0 (Quark FP4/FP6)", "6.2",
    )
    flush_subnormal_blocks: bool = option(
        False, Flag(),
        "a block whose amax has a float32 log2 below -126 (amax itself an fp32 subnormal, except the few that log2 "
        "rounds up to -126) becomes zeros, its scale unchanged (microxcaling `flush_fp32_subnorms`)", "6.2",
    )

    nan_blocks: str = option(
        "nan", ("nan", "error"),
        "a block holding a NaN: `nan`, the NaN block of `specials`; `error`: ValueError (compressed-tensors gives such "
        "a block scale 2^-127, saturated elements and a NaN output where the NaN was; Quark MX6/MX9 pass the NaN "
        "through and quantize the rest as if it were 0: no MX encoding)", "6.2",
    )
    scale_round_bits: int | None = option(
        None, IntRange(0, 10, "the element's fraction bits"),
        "fraction bits at which scale_rule='even' rounds amax (compressed-tensors MXFP8: 1, FP4's, not E4M3's 3)",
        "6.2",
    )
    scale_offset: int = option(
        0, IntRange(-1, 0),
        "added to the scale rule's E before clamping (Brevitas MXINT8: -1, one binade below the OCP rule, so the block "
        "maximum saturates)", "6.2",
    )
    scale_underflow: str = option(
        "clamp", ("clamp", "fp32_pow"),
        "a scale rule's E below scale_min: `clamp` it; `fp32_pow` (Quark floor/ceil, which take the scale as the "
        "float32 2^E, unclamped): E below -149 underflows to 0 and, as an all-zero block (log2 0 = -Inf), gets the "
        "float32 eps 2^-23 (E = -23); E in [-149, -127) has no E8M0 code: ValueError, unless scale_min is above -127 "
        "(Quark MXINT8: its step clamp makes such a block the E = scale_min encoding)", "6.2",
    )
    scale_value_min: str = option(
        "none", ("none", "1e-10"),
        "a library's lower clamp of the scale value that is not a power of two: `1e-10` (Brevitas) clamps "
        "2^floor(log2 amax) at float32 1e-10, in [2^-34, 2^-33), so a block with amax = 0 or a float32 log2 of amax "
        "below -33 has no E8M0 scale there: quantize raises ValueError on it", "6.2",
    )

    def __post_init__(self) -> None:
        validate_fields(self)
        self._check_design_options()
        self._resolve_flush_alias()

    def _check_design_options(self) -> None:
        if self.scale_min == -128 and self.scale_encoding != "int8_exponent":
            raise ValueError(
                "scale_min=-128 is only allowed with scale_encoding='int8_exponent' (E8M0 has no code for 2^-128); "
                f"with scale_encoding={self.scale_encoding!r} expected scale_min=-127"
            )
        if self.min_scale_divisor != "scale" and self.scale_encoding != "e8m0":
            raise ValueError(
                f"min_scale_divisor={self.min_scale_divisor!r} is only allowed with scale_encoding='e8m0' (it changes "
                "the divisor of blocks at E8M0 code 0x00); with scale_encoding="
                f"{self.scale_encoding!r} expected min_scale_divisor='scale'"
            )
        if self.scale_round_bits is not None and self.scale_rule != "even":
            raise ValueError(
                f"scale_round_bits={self.scale_round_bits} is only allowed with scale_rule='even' (the bits it rounds "
                f"amax at); with scale_rule={self.scale_rule!r} expected scale_round_bits=None"
            )
        if self.element_arith == "fp32_log2" and self.rounding not in FP32_STEP_ROUNDINGS:
            raise ValueError(
                f"rounding={self.rounding!r} is not allowed with element_arith='fp32_log2'; expected one of: "
                f"{', '.join(FP32_STEP_ROUNDINGS)}"
            )
        if self.specials == "per_element" and self.inf_policy != "nan":
            raise ValueError(
                f"inf_policy={self.inf_policy!r} is not allowed with specials='per_element': Inf never counts for the "
                "scale there and encodes as +-max finite; inf_policy applies with specials='block' only "
                "(expected inf_policy='nan', the default)"
            )

    def _resolve_flush_alias(self) -> None:
        """flush_subnormal_inputs=True is the old spelling of subnormal_inputs='flush'; both fields
        are kept consistent so that ``as_dict`` round-trips."""
        if self.flush_subnormal_inputs and self.subnormal_inputs not in ("exact", "flush"):
            raise ValueError(
                f"flush_subnormal_inputs=True contradicts subnormal_inputs={self.subnormal_inputs!r} "
                "(flush_subnormal_inputs=True means subnormal_inputs='flush'); pass one of them"
            )
        if self.flush_subnormal_inputs:
            object.__setattr__(self, "subnormal_inputs", "flush")
        if self.subnormal_inputs == "flush":
            object.__setattr__(self, "flush_subnormal_inputs", True)

    @classmethod
    def from_kwargs(cls, **kwargs) -> "QuantizeOptions":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs)

    def check_format(self, fmt) -> None:
        """Reject an option that block format ``fmt`` does not have: a value other than the
        default of an option that does not apply to it (ValueError naming the option and the
        formats it applies to). ``scale_rule``: OCP MX formats (the shared-exponent formats and
        NVFP4 fix their rule); ``int8_allow_neg2``: MXINT8; ``nvfp4_*``: NVFP4; the section 2.3
        design options: OCP MX formats, ``nan_code`` those whose elements have NaN codes; the
        profile options ``min_scale_divisor`` and ``inf_policy`` 'max_scale' / 'exponent_field':
        OCP MX formats."""
        check_int8_allow_neg2(fmt, self.int8_allow_neg2)
        for name, applies in _FORMAT_OPTIONS.items():
            refuse_inapplicable(name, getattr(self, name), fmt, applies, option_named(QuantizeOptions, name).default)
        if not _is_ocp_mx(fmt):
            for name, default in _OCP_MX_OPTIONS.items():
                if getattr(self, name) != default:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is not allowed for {fmt.name!r}: it applies to OCP MX formats "
                        f"only (E8M0 scale, no sub-blocks, float or two's-complement elements: "
                        f"{', '.join(ocp_mx_format_names())}); expected {name}={default!r}"
                    )
        if self.inf_policy in _OCP_MX_INF_POLICIES and not _is_ocp_mx(fmt):
            raise ValueError(
                f"inf_policy={self.inf_policy!r} is not allowed for {fmt.name!r}: it applies to OCP MX formats only "
                f"({', '.join(ocp_mx_format_names())}); expected one of: nan, saturate"
                + (", error" if _is_e8m0_scaled(fmt) else "")
            )
        if self.inf_policy == "error" and not _is_e8m0_scaled(fmt):
            raise ValueError(
                f"inf_policy='error' is not allowed for {fmt.name!r}: it applies to E8M0-scaled formats only "
                "(OCP MX, MX9/6/4, MSFP); expected one of: nan, saturate"
            )
        if self.nan_code is not None:
            self._check_nan_code(fmt)

    def _check_nan_code(self, fmt) -> None:
        codes = element_nan_codes(fmt.element)
        if not codes:
            having = [name for name in ocp_mx_format_names() if element_nan_codes(get_format(name).element)]
            raise ValueError(
                f"nan_code=0x{self.nan_code:02X} is not allowed for {fmt.name!r}: its elements ({fmt.element.name}) "
                f"have no NaN code; nan_code applies to formats whose elements have NaN: {', '.join(having)}"
            )
        if self.nan_code not in codes:
            raise ValueError(
                f"nan_code=0x{self.nan_code:02X} is not a NaN code of {fmt.element.name} with the sign bit clear (a NaN "
                f"element takes the input's sign); expected None or one of: {', '.join(f'0x{c:02X}' for c in codes)}"
            )

    @property
    def fp32_arithmetic(self) -> bool:
        """Whether the options emulate a library's float32 arithmetic (contract 6.2: scale_rule
        'floor_fp32', element_arith 'fp32_log2', scale_value_min, nvfp4_arith 'fp32_reciprocal'), which
        takes float32 inputs only."""
        return (
            self.scale_rule in ("floor_fp32", "ceil_fp32") or self.element_arith == "fp32_log2" or self.scale_value_min != "none"
            or self.nvfp4_arith == "fp32_reciprocal"
        )

    @property
    def refuses_blocks(self) -> bool:
        """Whether quantize raises on some blocks because they have no MX encoding under these options
        (contract 6.2): ``nan_blocks='error'`` (blocks holding a NaN), ``inf_policy='error'`` (blocks holding
        an Inf), a ``scale_value_min`` (blocks with amax 0 or below 2^-33), or ``scale_underflow='fp32_pow'``
        with ``scale_min`` -127 or below (blocks whose E falls in [-149, -127))."""
        return (
            self.nan_blocks == "error"
            or self.inf_policy == "error"
            or self.scale_value_min != "none"
            or (self.scale_underflow == "fp32_pow" and self.scale_min <= -127)
        )

    @property
    def nvfp4_scale_lowest(self) -> Fraction:
        """The NVFP4 block-scale lower clamp: 2^-6 ('normal', E4M3's smallest normal, torchao)
        or 2^-9 ('subnormal', its smallest subnormal)."""
        return Fraction(1, 2**6) if self.nvfp4_scale_min == "normal" else Fraction(1, 2**9)

    def as_dict(self) -> dict:
        """Every option, by field name (for files and golden-vector manifests)."""
        return asdict(self)
