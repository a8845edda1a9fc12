"""Block-quantization options of the numerics contract (conventions.md sections 2, 2.1, 2.2).

One frozen :class:`QuantizeOptions` carries every choice, is validated once, and is recorded
whole in tensors, files and manifests (``as_dict``). The reference model and the fast path both
read it; neither keeps defaults of its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from .encode import MAX_RAND_WIDTH, ROUNDING_MODES
from .spec import Flag, IntRange, option, options_from_kwargs, validate_fields

__all__ = ["QuantizeOptions", "SCALE_RULES", "INF_POLICIES", "MIN_SCALE_DIVISORS"]

SCALE_RULES = ("floor", "ceil", "even", "rceil", "tosa", "rceil_fp32")
INF_POLICIES = ("nan", "saturate", "max_scale", "exponent_field")
MIN_SCALE_DIVISORS = ("scale", "min_normal", "one")


@dataclass(frozen=True)
class QuantizeOptions:
    """Every choice block quantization makes (defaults are the contract's); each field's
    definition (allowed values, meaning, contract section) is in its :func:`~mxsim.options.option`.

    Scale rules are computed exactly (see :mod:`mxsim.ref.scale`); shared-exponent formats (MX9/6/4,
    MSFP) and NVFP4 have their own rules and accept only the default. Element overflow after
    scaling always saturates; stochastic rounding takes ``rand_bits`` at quantize time.
    """

    scale_rule: str = option(
        "floor", SCALE_RULES,
        "how the block scale exponent is chosen (exact integers, never a float log2; `rceil_fp32` decides exactly "
        "what a float32 quotient and log2 give)", "2, 6",
    )
    rounding: str = option(
        "rne", ROUNDING_MODES, "element rounding after scaling (element overflow always saturates)", "2, 2.1, 2.2"
    )
    rand_width: int = option(32, IntRange(1, MAX_RAND_WIDTH), "bits of each stochastic-rounding random word", "1")
    inf_policy: str = option(
        "nan", INF_POLICIES,
        "`nan`: a block with ±Inf is a NaN block; `saturate`: Inf counts as the largest fp32 (2^128 - 2^104) "
        "and saturates; `max_scale`: the block gets E = 127 and Inf saturates (gfloat, torchao RCEIL); "
        "`exponent_field`: Inf counts as 2^128, its all-ones exponent field, and saturates (torchao FLOOR)", "2, 6",
    )
    flush_subnormal_inputs: bool = option(
        False, Flag(), "read inputs below 2^-126 in magnitude as zeros of their sign", "2, 2.1"
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
        "exact", ("exact", "fp32_steps"),
        "`exact`, or `fp32_steps`: every intermediate rounded to fp32 in torchao's order", "2.2",
    )
    nvfp4_tensor_scale: str = option(
        "amax", ("amax", "none"), "`amax`: s_t = fp32(amax / (6 × 448)); `none`: s_t = 1", "2.2"
    )

    def __post_init__(self) -> None:
        validate_fields(self)

    @classmethod
    def from_kwargs(cls, **kwargs) -> "QuantizeOptions":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs)

    def check_format(self, fmt) -> None:
        """Reject options a block format family does not have."""
        shared_exponent = fmt.element.kind == "int" and fmt.element.encoding == "sign_magnitude"
        if (fmt.subblocks or fmt.scale.name != "e8m0" or shared_exponent) and self.scale_rule != "floor":
            raise ValueError(
                f"scale_rule={self.scale_rule!r} is not allowed for {fmt.name!r}: its scale rule is fixed "
                "(shared exponent floor(log2 amax), or the NVFP4 recipe); only 'floor' is accepted"
            )
        if fmt.subblocks or fmt.scale.name != "e8m0":
            for name, allowed in (("inf_policy", ("nan", "saturate")), ("min_scale_divisor", ("scale",))):
                if getattr(self, name) not in allowed:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is not allowed for {fmt.name!r}: it is defined for single-level "
                        f"E8M0-scaled formats only; expected one of: {', '.join(allowed)}"
                    )

    @property
    def nvfp4_scale_lowest(self) -> Fraction:
        """The NVFP4 block-scale lower clamp: 2^-6 ('normal', E4M3's smallest normal, torchao)
        or 2^-9 ('subnormal', its smallest subnormal)."""
        return Fraction(1, 2**6) if self.nvfp4_scale_min == "normal" else Fraction(1, 2**9)

    def as_dict(self) -> dict:
        return asdict(self)
