"""Block-quantization options of the numerics contract (conventions.md sections 2, 2.1, 2.2).

One frozen :class:`QuantizeOptions` carries every choice, is validated once, and is recorded
whole in tensors, files and manifests (``as_dict``). The reference model and the fast path both
read it; neither keeps defaults of its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from .policy import ROUNDING_MODES, check_choice, check_int8_allow_neg2, options_from_kwargs, refuse_inapplicable

__all__ = ["QuantizeOptions", "SCALE_RULES", "OPTION_CHOICES"]

SCALE_RULES = ("floor", "ceil", "even", "rceil", "tosa")
OPTION_CHOICES = {
    "scale_rule": SCALE_RULES,
    "rounding": ROUNDING_MODES,
    "inf_policy": ("nan", "saturate"),
    "partial_block": ("pad", "error"),
    "nvfp4_scale_min": ("normal", "subnormal"),
    "nvfp4_arith": ("exact", "fp32_steps"),
    "nvfp4_tensor_scale": ("amax", "none"),
}


@dataclass(frozen=True)
class QuantizeOptions:
    """Every choice block quantization makes (defaults are the contract's).

    * ``scale_rule``: floor (OCP 6.3) | ceil | even | rceil | tosa; see :mod:`mxsim.ref.scale`.
      Shared-exponent formats (MX9/6/4, MSFP) and NVFP4 have their own rules and accept only
      the default.
    * ``rounding``: element rounding (rne | rna | rtz | rup | rdn | stochastic); element overflow
      after scaling always saturates. Stochastic rounding takes ``rand_bits`` at quantize time.
    * ``rand_width``: bits of each stochastic-rounding random word (1..32).
    * ``inf_policy``: nan (a block with +-Inf is a NaN block) | saturate (Inf counts as the
      largest finite float32 for the scale, and saturates).
    * ``flush_subnormal_inputs``: read inputs below 2^-126 in magnitude as zero (sign kept).
    * ``partial_block``: pad (with zeros; the original shape is restored) | error.
    * ``int8_allow_neg2``: let MXINT8 elements take 0x80 (-2.0).
    * ``nvfp4_scale_min``: normal (2^-6, torchao) | subnormal (2^-9): block-scale lower clamp.
    * ``nvfp4_arith``: exact | fp32_steps (torchao's fp32 order of operations).
    * ``nvfp4_tensor_scale``: amax (s_t = amax / (6 * 448), rounded to fp32; (mxsim) kept within
      [2^-149, FP32_MAX], so a float64 tensor beyond fp32 saturates) | none (s_t = 1).

    ``scale_rule`` other than floor, ``int8_allow_neg2=True`` and the ``nvfp4_*`` options apply to
    some formats only; :meth:`check_format` refuses them elsewhere.
    """

    scale_rule: str = "floor"
    rounding: str = "rne"
    rand_width: int = 32
    inf_policy: str = "nan"
    flush_subnormal_inputs: bool = False
    partial_block: str = "pad"
    int8_allow_neg2: bool = False
    nvfp4_scale_min: str = "normal"
    nvfp4_arith: str = "exact"
    nvfp4_tensor_scale: str = "amax"

    def __post_init__(self) -> None:
        for name, allowed in OPTION_CHOICES.items():
            check_choice(name, getattr(self, name), allowed)
        for name in ("flush_subnormal_inputs", "int8_allow_neg2"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed; expected True or False")
        if not (isinstance(self.rand_width, int) and 1 <= self.rand_width <= 32):
            raise ValueError(f"rand_width={self.rand_width!r} is not allowed; expected an integer in [1, 32]")

    @classmethod
    def from_kwargs(cls, **kwargs) -> "QuantizeOptions":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs)

    def check_format(self, fmt) -> None:
        """Reject an option that block format ``fmt`` does not have: a value other than the
        default of an option that does not apply to it (ValueError naming the option and the
        formats it applies to). ``scale_rule``: single-level E8M0 formats with float or
        two's-complement elements (the shared-exponent formats and NVFP4 fix their rule);
        ``int8_allow_neg2``: MXINT8; ``nvfp4_*``: NVFP4. The other options apply everywhere."""
        check_int8_allow_neg2(fmt, self.int8_allow_neg2)
        defaults = QuantizeOptions()
        for option, applies in FORMAT_OPTIONS.items():
            refuse_inapplicable(option, getattr(self, option), fmt, applies, getattr(defaults, option))

    @property
    def nvfp4_scale_lowest(self) -> Fraction:
        """The NVFP4 block-scale lower clamp: 2^-6 ('normal', E4M3's smallest normal, torchao)
        or 2^-9 ('subnormal', its smallest subnormal)."""
        return Fraction(1, 2**6) if self.nvfp4_scale_min == "normal" else Fraction(1, 2**9)

    def as_dict(self) -> dict:
        return asdict(self)


def _has_scale_rule(fmt) -> bool:
    """Single-level E8M0 formats whose elements are floats or two's-complement integers (OCP MX);
    shared-exponent formats (sub-blocks, or sign-magnitude BFP elements) and NVFP4 fix theirs."""
    shared_exponent = fmt.element.kind == "int" and fmt.element.encoding == "sign_magnitude"
    return not fmt.subblocks and fmt.scale.name == "e8m0" and not shared_exponent


def _is_nvfp4(fmt) -> bool:
    """The NVFP4 family: a UE4M3 block scale (and an fp32 tensor scale)."""
    return fmt.scale.name == "ue4m3"


# The block options that apply to some formats only (int8_allow_neg2: mxsim.policy), with the
# test of whether they apply to a block format.
FORMAT_OPTIONS = {
    "scale_rule": _has_scale_rule,
    "nvfp4_scale_min": _is_nvfp4,
    "nvfp4_arith": _is_nvfp4,
    "nvfp4_tensor_scale": _is_nvfp4,
}
