"""Block-quantization options of the numerics contract (conventions.md sections 2, 2.1, 2.2, 2.3).

One frozen :class:`QuantizeOptions` carries every choice, is validated once, and is recorded
whole in tensors, files and manifests (``as_dict``). The reference model and the fast path both
read it; neither keeps defaults of its own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from .policy import ROUNDING_MODES, check_choice, options_from_kwargs

__all__ = ["QuantizeOptions", "SCALE_RULES", "OPTION_CHOICES", "SCALE_MINS", "ocp_mx_format_names", "element_nan_codes"]

SCALE_RULES = ("floor", "ceil", "even", "rceil", "tosa")
SCALE_MINS = (-127, -128)
# The design options of real quantizers (section 2.3) that only OCP MX formats take, with defaults.
_OCP_MX_OPTIONS = {"scale_encoding": "e8m0", "scale_min": -127, "specials": "block", "nan_code": None}
OPTION_CHOICES = {
    "scale_rule": SCALE_RULES,
    "rounding": ROUNDING_MODES,
    "inf_policy": ("nan", "saturate"),
    "partial_block": ("pad", "error"),
    "nvfp4_scale_min": ("normal", "subnormal"),
    "nvfp4_arith": ("exact", "fp32_steps"),
    "nvfp4_tensor_scale": ("amax", "none"),
    "scale_encoding": ("e8m0", "int8_exponent"),
    "specials": ("block", "per_element"),
    "subnormal_inputs": ("exact", "flush", "as_normal"),
}


def _is_ocp_mx(fmt) -> bool:
    """E8M0 scale, no sub-blocks, float or two's-complement integer elements (MXFP8/6/4, MXINT8)."""
    shared_exponent = fmt.element.kind == "int" and fmt.element.encoding == "sign_magnitude"
    return fmt.scale.name == "e8m0" and not fmt.subblocks and not shared_exponent


def ocp_mx_format_names() -> list[str]:
    """Catalogue block formats of the OCP MX family (the ones the section 2.3 design options apply to)."""
    from .formats import FORMATS

    return [name for name, fmt in FORMATS.items() if fmt.kind == "block" and _is_ocp_mx(fmt)]


def element_nan_codes(element) -> list[int]:
    """The NaN codes of an element format with the sign bit clear (empty for formats without NaN):
    'fn' formats have one (all-ones magnitude), 'ieee' formats every nonzero mantissa under the
    all-ones exponent field."""
    if not element.has_nan:
        return []
    field = ((1 << element.exponent_bits) - 1) << element.mantissa_bits
    mantissas = range(1, 1 << element.mantissa_bits)
    if element.specials == "fn":
        mantissas = [(1 << element.mantissa_bits) - 1]
    return [field | m for m in mantissas]


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
      largest finite value of the input's own type for the scale: fp32 max for fp32 input, 65504
      for fp16, the bf16 max for bf16, the float64 max for float64; and saturates). Applies with
      specials='block' only.
    * ``flush_subnormal_inputs``: the old spelling of ``subnormal_inputs='flush'`` (kept as an
      alias: True sets subnormal_inputs='flush'; subnormal_inputs='flush' sets it True).
    * ``partial_block``: pad (with zeros; the original shape is restored) | error.
    * ``int8_allow_neg2``: let MXINT8 elements take 0x80 (-2.0).
    * ``nvfp4_scale_min``: normal (2^-6, torchao) | subnormal (2^-9): block-scale lower clamp.
    * ``nvfp4_arith``: exact | fp32_steps (torchao's fp32 order of operations).
    * ``nvfp4_tensor_scale``: amax (s_t = amax / (6 * 448), rounded to fp32) | none (s_t = 1).

    Design options of real quantizers (section 2.3; OCP MX formats only, see
    :func:`ocp_mx_format_names`, except ``subnormal_inputs``, which every format takes):

    * ``scale_encoding``: e8m0 (byte = E + 127, 0xFF = NaN) | int8_exponent (byte = E as an 8-bit
      two's complement: 0x00 = 2^0, 0x7F = 2^127, 0xFF = 2^-1, 0x80 = 2^-128; no NaN code, so a
      block that specials='block' would make a NaN block raises ValueError).
    * ``scale_min``: -127 | -128 (int8_exponent only): the lower clamp of the unbiased exponent E,
      also the E of an all-zero block; elements are quantized against the clamped scale.
    * ``specials``: block (NaN, and Inf under inf_policy='nan', makes the whole block NaN) |
      per_element (E from the finite elements only, a block with none getting E = scale_min; a NaN
      element encodes as ``nan_code`` with the input's sign bit, ValueError for element formats
      without NaN; an Inf element as +-max finite).
    * ``nan_code``: None (the element's canonical NaN code: E4M3 0x7F, E5M2 0x7E) or another NaN
      code of the element format with the sign bit clear (E5M2: 0x7D, 0x7E, 0x7F); used wherever
      the quantizer writes a NaN element (NaN blocks and per-element NaNs).
    * ``subnormal_inputs``: exact (read exactly) | flush (nonzero magnitudes below 2^-126 read as
      zero, sign kept) | as_normal (a nonzero input whose fp32 exponent field is 0 reads as
      (1 + m / 2^23) * 2^-127, m its 23-bit mantissa field; zeros stay zero; fp16 and fp8 inputs
      are widened to fp32 first, so never affected; float64 input is refused).
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
    scale_encoding: str = "e8m0"
    scale_min: int = -127
    specials: str = "block"
    nan_code: int | None = None
    subnormal_inputs: str = "exact"

    def __post_init__(self) -> None:
        for name, allowed in OPTION_CHOICES.items():
            check_choice(name, getattr(self, name), allowed)
        for name in ("flush_subnormal_inputs", "int8_allow_neg2"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed; expected True or False")
        if not (isinstance(self.rand_width, int) and 1 <= self.rand_width <= 32):
            raise ValueError(f"rand_width={self.rand_width!r} is not allowed; expected an integer in [1, 32]")
        self._check_design_options()
        self._resolve_flush_alias()

    def _check_design_options(self) -> None:
        if isinstance(self.scale_min, bool) or self.scale_min not in SCALE_MINS:
            raise ValueError(f"scale_min={self.scale_min!r} is not allowed; expected one of: -127, -128")
        if self.scale_min == -128 and self.scale_encoding != "int8_exponent":
            raise ValueError(
                "scale_min=-128 is only allowed with scale_encoding='int8_exponent' (E8M0 has no code for 2^-128); "
                f"with scale_encoding={self.scale_encoding!r} expected scale_min=-127"
            )
        if self.nan_code is not None and (isinstance(self.nan_code, bool) or not isinstance(self.nan_code, int)):
            raise ValueError(
                f"nan_code={self.nan_code!r} is not allowed; expected None (the canonical NaN code) or an integer code"
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
        if self.flush_subnormal_inputs and self.subnormal_inputs == "as_normal":
            raise ValueError(
                "flush_subnormal_inputs=True contradicts subnormal_inputs='as_normal' (flush_subnormal_inputs=True "
                "means subnormal_inputs='flush'); pass one of them"
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
        """Reject options a block format family does not have."""
        shared_exponent = fmt.element.kind == "int" and fmt.element.encoding == "sign_magnitude"
        if (fmt.subblocks or fmt.scale.name != "e8m0" or shared_exponent) and self.scale_rule != "floor":
            raise ValueError(
                f"scale_rule={self.scale_rule!r} is not allowed for {fmt.name!r}: its scale rule is fixed "
                "(shared exponent floor(log2 amax), or the NVFP4 recipe); only 'floor' is accepted"
            )
        if not _is_ocp_mx(fmt):
            for name, default in _OCP_MX_OPTIONS.items():
                if getattr(self, name) != default:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is not allowed for {fmt.name!r}: it applies to OCP MX formats "
                        f"only (E8M0 scale, no sub-blocks, float or two's-complement elements: "
                        f"{', '.join(ocp_mx_format_names())}); expected {name}={default!r}"
                    )
        if self.nan_code is not None:
            self._check_nan_code(fmt)

    def _check_nan_code(self, fmt) -> None:
        codes = element_nan_codes(fmt.element)
        if not codes:
            having = [name for name in ocp_mx_format_names() if element_nan_codes(_block(name).element)]
            raise ValueError(
                f"nan_code={_hex(self.nan_code)} is not allowed for {fmt.name!r}: its elements ({fmt.element.name}) have "
                f"no NaN code; nan_code applies to formats whose elements have NaN: {', '.join(having)}"
            )
        if self.nan_code not in codes:
            raise ValueError(
                f"nan_code={_hex(self.nan_code)} is not a NaN code of {fmt.element.name} with the sign bit clear (a NaN "
                f"element takes the input's sign); expected None or one of: {', '.join(f'0x{c:02X}' for c in codes)}"
            )

    @property
    def nvfp4_scale_lowest(self) -> Fraction:
        """The NVFP4 block-scale lower clamp: 2^-6 ('normal', E4M3's smallest normal, torchao)
        or 2^-9 ('subnormal', its smallest subnormal)."""
        return Fraction(1, 2**6) if self.nvfp4_scale_min == "normal" else Fraction(1, 2**9)

    def as_dict(self) -> dict:
        """Every option, by field name (for files and golden-vector manifests)."""
        return asdict(self)


def _hex(code: int) -> str:
    return f"0x{code:02X}" if code >= 0 else str(code)


def _block(name: str):
    from .formats import get_format

    return get_format(name, kind="block")
