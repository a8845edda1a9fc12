"""Profiles: named bundles of options that reproduce one real design or library bit for bit
(docs/numerics.md section 6).

A :class:`Profile` names its source and version, the :class:`~mxsim.options.QuantizeOptions`
fields it sets, the :class:`~mxsim.options.DequantizeOptions` of each output type it produces,
the :class:`~mxsim.options.EncodeOptions` fields of element casts (cast profiles), the formats
the peer has, and the inputs on which the peer's output depends on more than the values (its
dtype, its CPU, its per-tensor state...), which a profile cannot reproduce and its test excludes.

The defaults of every option never change; a profile is always asked for by name:

* ``mxsim.quantize(x, fmt, profile="torchao_0_18_floor")`` (keyword options override the
  profile's), ``MXTensor.from_codes(..., profile=...)``; the tensor remembers the profile, and
  ``t.dequantize(dtype)`` uses the profile's DequantizeOptions for ``dtype`` unless ``options``
  or keyword options are given (keywords override fields of the profile's entry);
* ``mxsim.encode(x, fmt, profile="ml_dtypes_0_6")`` for cast profiles;
* ``mxsim quantize/dequantize --profile NAME`` and a ``profile`` key in the parameters of the
  golden ``quantize`` and ``dequantize`` suites.

Tensor files and golden manifests record the profile's name and every option it set
(:meth:`Profile.as_dict`). :data:`PROFILES` is the registry; :func:`get_profile` looks a name up
and lists the known ones when it is not there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..formats import get_format
from .dequantize import IDMA_DEQUANTIZE, DequantizeOptions, output_name, per_output
from .encode import EncodeOptions, allows_most_negative_code
from .quantize import QuantizeOptions, option_applies
from .spec import options_from_kwargs

__all__ = ["Profile", "PROFILES", "get_profile", "profile_names", "resolve_quantize", "resolve_encode"]


def _frozen(mapping: Mapping | None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Profile:
    """One real design or library as a bundle of mxsim options.

    * ``name``: the registry key (``library_major_minor`` or ``design_version``);
    * ``kind``: ``block`` (quantize / dequantize) or ``cast`` (element encode);
    * ``source``, ``version``: what it reproduces, and where that behaviour is read or measured;
    * ``description``: one paragraph, what differs from mxsim's defaults;
    * ``quantize``: the QuantizeOptions fields it sets (the others keep their defaults);
      ``per_format``: further fields for one format only, by format name (Brevitas' MXINT8 scale);
    * ``dequantize``: DequantizeOptions per output type (an output type not named gets the
      defaults); ``outputs``: the output types the peer produces;
    * ``encode``: EncodeOptions fields of element casts (cast profiles);
    * ``formats``: the mxsim formats the peer has;
    * ``inputs``: where the peer's output depends on more than its input values, which the
      profile does not (and its test does not) reproduce;
    * ``notes``: the remaining differences, each with its reason.
    """

    name: str
    kind: str
    source: str
    version: str
    description: str
    formats: tuple[str, ...]
    quantize: Mapping = field(default_factory=dict)
    per_format: Mapping = field(default_factory=dict)
    dequantize: Mapping = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    encode: Mapping = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("block", "cast"):
            raise ValueError(f"kind={self.kind!r} is not allowed; expected one of: block, cast")
        object.__setattr__(self, "quantize", _frozen(self.quantize))
        object.__setattr__(self, "per_format", _frozen({k: _frozen(v) for k, v in self.per_format.items()}))
        object.__setattr__(self, "encode", _frozen(self.encode))
        object.__setattr__(self, "dequantize", per_output(self.dequantize))
        options_from_kwargs(EncodeOptions, dict(self.encode), "encode ")  # names an unknown field

    def quantize_options(self, fmt=None, **overrides) -> QuantizeOptions:
        """The profile's QuantizeOptions, with ``overrides`` (QuantizeOptions fields) on top.

        With a block format ``fmt`` (a name or format): ValueError unless the peer has it, and a
        field the profile sets that does not apply to ``fmt`` is left at its default there
        (gfloat's ``int8_allow_neg2=True`` holds for MXINT8, the only format with a most
        negative code; compressed-tensors' OCP MX ``scale_rule`` not for its NVFP4); ``overrides``
        are checked against ``fmt`` as given."""
        self._check_kind("block", "quantize")
        fields = dict(self.quantize)
        if fmt is not None:
            fmt = self.block_format(fmt)
            if not allows_most_negative_code(fmt):
                fields.pop("int8_allow_neg2", None)
            for name in [name for name in fields if not option_applies(name, fmt)]:
                fields.pop(name)  # e.g. compressed-tensors' OCP MX scale_rule for its NVFP4
            fields.update(self.per_format.get(fmt.name, {}))
        return QuantizeOptions.from_kwargs(**{**fields, **overrides})

    def block_format(self, fmt):
        """The block format ``fmt`` (a name or format) if the peer has it; ValueError naming the
        formats it has otherwise. The one rule of which formats a block profile takes, for
        quantizing (:meth:`quantize_options`) and dequantizing (:meth:`dequantize_for`) alike."""
        fmt = get_format(fmt, kind="block")
        if fmt.name not in self.formats:
            raise ValueError(
                f"format {fmt.name!r} is not allowed with profile {self.name!r}; expected one of: "
                f"{', '.join(self.formats)}"
            )
        return fmt

    def dequantize_options(self, dtype) -> DequantizeOptions:
        """The DequantizeOptions of output type ``dtype`` (the defaults where the profile names none)."""
        return self.dequantize.get(output_name(dtype), DequantizeOptions())

    def dequantize_for(self, fmt, dtype) -> DequantizeOptions:
        """The DequantizeOptions the peer produces output type ``dtype`` from ``fmt`` with;
        ValueError for a cast profile, a format the peer lacks (:meth:`block_format`: iDMA has no
        MXFP8 E4M3, so its FP32 flush never applies to one) or an output it does not produce."""
        self._check_kind("block", "dequantize")
        self.block_format(fmt)
        output = output_name(dtype)
        if output not in self.outputs:
            raise ValueError(
                f"output={output!r} is not allowed with profile {self.name!r}; expected one of: {', '.join(self.outputs)}"
            )
        return self.dequantize_options(output)

    def encode_options(self, **overrides) -> dict:
        """The element-encode keyword options of a cast profile, with ``overrides`` on top."""
        self._check_kind("cast", "encode")
        return {**self.encode, **overrides}

    def _check_kind(self, kind: str, what: str) -> None:
        if self.kind != kind:
            others = ", ".join(name for name, p in PROFILES.items() if p.kind == kind)
            raise ValueError(f"profile {self.name!r} is a {self.kind} profile; {what} takes a {kind} profile: {others}")

    def as_dict(self) -> dict:
        """What a manifest records: the name, source, version and every option the profile sets."""
        out = {"name": self.name, "kind": self.kind, "source": self.source, "version": self.version}
        if self.kind == "block":
            out["quantize"] = dict(self.quantize)
            if self.per_format:
                out["per_format"] = {name: dict(fields) for name, fields in self.per_format.items()}
            out["dequantize"] = {name: opts.as_dict() for name, opts in self.dequantize.items()}
        else:
            out["encode"] = dict(self.encode)
        return out


_TORCHAO_FORMATS = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1")
_TORCHAO_INPUTS = (
    "float32 and bfloat16 arrays only (to_mx asserts it); a float64 array has no torchao counterpart",
    "eager mode on the CPU: compiled code (Triton, or cvt.rp.satfinite on sm_100 for RCEIL) computes the scale "
    "with other instructions",
    "element codes of a NaN block: FLOOR divides by +Inf (finite elements give ±0, a NaN element a NaN code), "
    "RCEIL multiplies by NaN, and FP4/FP6 NaN casts give code 1.5; every element decodes to NaN either way and "
    "the scale is 0xFF, so the test compares NaN blocks by scale and decoded value",
    "NaN bit patterns of to_dtype: torch's FP8 -> float32 cast keeps the NaN payload (E4M3 0x7F gives 0x7FF00000), "
    "its vectorized float -> bfloat16 cast writes 0xFFFF for every NaN, and in a NaN-scale block the CPU returns "
    "one of the two NaN operands; mxsim writes quiet NaNs, so the test compares NaN outputs as NaN",
)

_PROFILE_LIST = [
    Profile(
        name="torchao_0_18_floor",
        kind="block",
        source="torchao.prototype.mx_formats.mx_tensor.to_mx / to_dtype, ScaleCalculationMode.FLOOR",
        version="torchao 0.18.0 (torch 2.13 CPU, eager)",
        description=(
            "OCP floor rule from the float32 exponent field of the block maximum. An Inf reads as exponent field "
            "255, i.e. 2^128, so the scale is 2^(128 - emax) and the Inf saturates; a block whose scale clamps to "
            "0x00 (2^-127) is divided by 2^-126, because torchao clamps its float32 divisor to the smallest normal "
            "(its elements are half what the scale byte says). The last axis must hold whole blocks."
        ),
        formats=_TORCHAO_FORMATS,
        quantize={"inf_policy": "exponent_field", "min_scale_divisor": "min_normal", "partial_block": "error"},
        dequantize={"float32": DequantizeOptions(), "bfloat16": DequantizeOptions()},
        outputs=("float32", "bfloat16"),
        inputs=_TORCHAO_INPUTS,
    ),
    Profile(
        name="torchao_0_18_rceil",
        kind="block",
        source="torchao.prototype.mx_formats.mx_tensor.to_mx (_to_mx_rceil) / to_dtype, ScaleCalculationMode.RCEIL",
        version="torchao 0.18.0 (torch 2.13 CPU, eager)",
        description=(
            "NVIDIA's round-up rule as torchao's eager code computes it in float32: descale = amax / max_normal "
            "rounded to float32, E = ceil(float32 log2(descale)) (scale_rule 'rceil_fp32'), so a maximum a few "
            "float32 steps above max_normal x 2^E keeps E and saturates. An Inf gives scale 0xFE (2^127, as the "
            "Blackwell cvt.rp.satfinite instruction) and saturates; a block at scale 0x00 has reciprocal 1.0, so "
            "its elements are not scaled (and round to zero). The last axis must hold whole blocks."
        ),
        formats=_TORCHAO_FORMATS,
        quantize={
            "scale_rule": "rceil_fp32", "inf_policy": "max_scale", "min_scale_divisor": "one", "partial_block": "error",
        },
        dequantize={"float32": DequantizeOptions(), "bfloat16": DequantizeOptions()},
        outputs=("float32", "bfloat16"),
        inputs=_TORCHAO_INPUTS + (
            "the float32 log2 of torch's CPU kernel: measured correctly rounded at every quotient near a power of two "
            "(the only place it decides E) on the machine of the test; another CPU or build may differ there",
        ),
    ),
    Profile(
        name="gfloat_0_5",
        kind="block",
        source="gfloat.compute_scale_amax + gfloat.encode_block / decode_block with the format_info_mx* formats",
        version="gfloat 0.5.2",
        description=(
            "OCP floor rule computed exactly, round-to-nearest-even, saturating elements (sat=True). MXINT8 may "
            "produce 0x80 (-2.0). A block with Inf gets the scale clipped at 2^127 (0xFE) and the Inf saturates."
        ),
        formats=("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"),
        quantize={"inf_policy": "max_scale", "int8_allow_neg2": True},
        dequantize={"float64": DequantizeOptions()},
        outputs=("float64",),
        inputs=(
            "blocks held in float64: compute_scale_amax takes log2 in the array's own dtype, so a float32 array "
            "whose maximum lies just below a power of two gets the next scale (trap T10)",
            "NaN blocks of formats without NaN (FP6, FP4, INT8): encode_block raises; mxsim gives a NaN block",
        ),
    ),
    Profile(
        name="ml_dtypes_0_6",
        kind="cast",
        source="numpy astype to ml_dtypes.float8_e4m3fn, float8_e5m2, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn",
        version="ml_dtypes 0.6.0",
        description=(
            "IEEE-style casts: round-to-nearest-even; overflow and Inf give Inf where the format has Inf (E5M2), "
            "else NaN where it has NaN (E4M3), else saturate (FP6, FP4): overflow='ieee'."
        ),
        formats=("fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"),
        encode={"overflow": "ieee"},
        inputs=(
            "float32, float16 and bfloat16 inputs: ml_dtypes rounds a float64 to float32 first (double rounding)",
            "NaN into FP6/FP4: ml_dtypes gives -0, mxsim raises ValueError",
            "E8M0 casts are not part of the profile (ml_dtypes maps 0 and negatives to NaN and rounds values between "
            "2^-127 and 2^-126 up)",
        ),
    ),
    Profile(
        name="tosa_1_1",
        kind="block",
        source="Arm TOSA 1.1 CAST_TO_BLOCK_SCALED / CAST_FROM_BLOCK_SCALED (mxfp extension), as the TOSA reference "
        "model computes them",
        version="TOSA 1.1 (tosa-tools 2026.8.0 reference model)",
        description=(
            "The smallest power-of-two scale whose nearest-even element of amax / scale does not exceed max "
            "normal (scale_rule 'tosa'), so elements never saturate; NaN or Inf in a block gives a NaN scale; "
            "the last axis must hold whole blocks (ERROR_IF). Everything else as mxsim's defaults."
        ),
        formats=("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"),
        quantize={"scale_rule": "tosa", "partial_block": "error"},
        dequantize={"float32": DequantizeOptions(), "bfloat16": DequantizeOptions()},
        outputs=("float32", "bfloat16"),
        inputs=(
            "element codes of a NaN block (the reference model writes the code of exponent all ones, mantissa 0 for "
            "FP4/FP6); the scale is NaN and every element decodes to NaN either way",
            "float32 inputs (the operator reads fp32 or bf16; the test feeds float32)",
            "the sign of the NaN a NaN element gives in a NaN-scale block (the reference model's bfloat16 output keeps "
            "the element's sign; mxsim, as its float32 output, gives +qNaN)",
        ),
        notes=(
            "TOSA itself judges CAST_TO_BLOCK_SCALED by an error bound against an fp64 reference "
            "(tosa_reference_check_scale), not by bits: this profile is the reference model's bits",
        ),
    ),
    Profile(
        name="idma_v0_7",
        kind="block",
        source="pulp-platform iDMA v0.7.0 MX quantizer and dequantizer (RTL, measured in Verilator)",
        version="iDMA v0.7.0",
        description=(
            "FP32/FP16 -> MXFP8 E5M2, block 32: floor scale from the largest biased fp32 exponent field among the "
            "finite elements, round-to-nearest-even, saturating; the scale byte is the exponent as an int8 "
            "(clamped at -128, no NaN code); NaN elements encode as 0x7D with their sign and Inf as +-max, per "
            "element; an fp32 subnormal reads as a normal with exponent field 0. The dequantizer flushes, "
            "saturates and canonicalizes NaN on its FP32 output, and canonicalizes NaN on its FP16 output."
        ),
        formats=("mxfp8_e5m2",),
        quantize={
            "scale_encoding": "int8_exponent", "scale_min": -128, "specials": "per_element", "nan_code": 0x7D,
            "subnormal_inputs": "as_normal",
        },
        dequantize=IDMA_DEQUANTIZE,
        outputs=("float32", "float16"),
        inputs=("FP32 or FP16 inputs (the design's two source types)",),
    ),
]

_MICROXCALING_FORMATS = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8")
_MICROXCALING_ROUNDINGS = {"nearest": "rna", "even": "rne", "floor": "rtz"}
_MICROXCALING_QUANTIZE = {
    "scale_rule": "floor_fp32", "zero_block_scale": "min_normal", "scale_overflow": "nan",
    "element_arith": "fp32_log2", "zero_sign": "plus_input",
}
_MICROXCALING_INPUTS = (
    "float32 inputs only (the library computes in the tensor's dtype; the test feeds float32)",
    "the float32 log2 of torch's CPU kernel: measured correctly rounded within 3000 float32 steps below every power "
    "of two (where it decides a binade) on the machine of the test; another CPU or build may differ there",
)
_MICROXCALING_NOTES = (
    "MXINT8: a negative value rounding to zero gives -0 in the library's float output; MXINT8 has no -0 code, so "
    "mxsim's code is 0 (the same code) and its dequantized output +0: the one place the float outputs differ "
    "(an MXINT8 float output of -0 is not an MX encoding)",
)


def _microxcaling_profile(library: str, mode: str) -> Profile:
    """One rounding mode of microxcaling, or of its port in Intel Neural Compressor 3.10 (identical
    arithmetic: docs/numerics.md section 6.2)."""
    if library == "microxcaling":
        name, source = f"microxcaling_{mode}", "microsoft/microxcaling mx.mx_ops.quantize_mx_op (pure PyTorch path)"
        version = "microxcaling (PyPI has none; its port neural_compressor 3.10 mx_quant/utils.py is the oracle)"
    else:
        name = f"neural_compressor_3_10_{mode}"
        source = "neural_compressor.torch.algorithms.mx_quant.utils._quantize_mx (a port of microxcaling)"
        version = "neural-compressor 3.10 (torch 2.13 CPU)"
    return Profile(
        name=name,
        kind="block",
        source=source,
        version=version,
        description=(
            f"Rounding mode '{mode}' ({_MICROXCALING_ROUNDINGS[mode]}). E = floor(float32 log2 amax) - emax "
            "(scale_rule 'floor_fp32': an amax a few float32 steps below a power of two gets the next exponent), "
            "an all-zero block reads amax as 2^-126, E above 127 gives a NaN block; each element x / 2^E takes "
            "its binade from float32 log2 and rounds as floor(|x| + 0.5) in float32 (element_arith 'fp32_log2'); "
            "a -0 input gives +0. An Inf or NaN makes the block NaN. The option flush_subnormal_blocks=True is "
            "the library's flush_fp32_subnorms."
        ),
        formats=_MICROXCALING_FORMATS,
        quantize={**_MICROXCALING_QUANTIZE, "rounding": _MICROXCALING_ROUNDINGS[mode]},
        dequantize={"float32": DequantizeOptions()},
        outputs=("float32",),
        inputs=_MICROXCALING_INPUTS,
        notes=_MICROXCALING_NOTES,
    )


_PROFILE_LIST += [
    _microxcaling_profile(library, mode)
    for library in ("microxcaling", "neural_compressor")
    for mode in _MICROXCALING_ROUNDINGS
]

_PROFILE_LIST.append(
    Profile(
        name="brevitas_0_13",
        kind="block",
        source="brevitas.quant.mx_quant_ocp MXFloat8e4m3Act / MXInt8Act (and the same with E5M2, E3M2, E2M3, E2M1 "
        "elements) in a QuantIdentity, eval mode",
        version="brevitas 0.13.4 (torch 2.13 CPU)",
        description=(
            "E = floor(float32 log2 amax) - emax (scale_rule 'floor_fp32'); MXINT8 one binade lower (scale_offset "
            "-1), so the block maximum saturates and codes reach -128 (int8_allow_neg2); round-to-nearest-even, "
            "saturating. Brevitas clamps 2^floor(log2 amax) at 1e-10, so a block with amax = 0 or below 2^-33 gets "
            "a scale that is not a power of two: not an MX encoding, and quantize raises ValueError on it "
            "(scale_value_min '1e-10'). NaN or Inf in a block: the library's scale is NaN or +Inf and every output "
            "NaN, which is mxsim's NaN block (scale 0xFF)."
        ),
        formats=_MICROXCALING_FORMATS,
        quantize={"scale_rule": "floor_fp32", "scale_value_min": "1e-10"},
        per_format={"mxint8": {"scale_offset": -1, "int8_allow_neg2": True}},
        dequantize={"float32": DequantizeOptions()},
        outputs=("float32",),
        inputs=("float32 inputs only", _MICROXCALING_INPUTS[1]),
        notes=(
            _MICROXCALING_NOTES[0],
            "blocks with amax = 0 or below 2^-33: Brevitas' scale is 1e-10 / 2^emax (MXINT8: 1e-10 / 2^7), not a power "
            "of two; quantize raises ValueError on them (no MX encoding exists)",
        ),
    )
)

_PROFILE_LIST.append(
    Profile(
        name="compressed_tensors_0_20",
        kind="block",
        source="compressed_tensors.quantization presets MXFP4, MXFP6A16, MXFP8 (weights): calculate_qparams "
        "(generate_mx_scales), quantize, fake_quantize",
        version="compressed-tensors 0.20.0 (torch 2.13 CPU)",
        description=(
            "The scale rounds amax half-up at the element's fraction bits before taking its exponent (scale_rule "
            "'even'), with FP4's single bit for MXFP8 (scale_round_bits 1: a significand of 1.75 or more goes to "
            "the next binade, not 1.9375); an element whose float32 quotient is zero (a -0 input, or a value below "
            "2^-150 of the scale) gives +0 (zero_sign 'plus_input'); an Inf makes every output NaN (mxsim's NaN "
            "block); a NaN gives no MX encoding, and quantize raises ValueError (nan_blocks 'error'). Elements "
            "round to nearest-even, saturating. NVFP4: gs = fp32(fp32(1 / amax) * 2688) (1 when that overflows), "
            "block scale "
            "UE4M3(fp32(gs * fp32(amax_b / 6))), 0 replaced by 0.125, elements fp32(x / fp32(scale / gs))."
        ),
        formats=("mxfp4_e2m1", "mxfp6_e2m3", "mxfp8_e4m3", "nvfp4"),
        quantize={"scale_rule": "even", "zero_sign": "plus_input", "nan_blocks": "error"},
        per_format={
            "mxfp8_e4m3": {"scale_round_bits": 1},
            # NVFP4 (preset NVFP4): the reciprocal global scale (NaN and Inf are refused by fp32_reciprocal itself)
            "nvfp4": {"nvfp4_arith": "fp32_reciprocal"},
        },
        dequantize={"float32": DequantizeOptions()},
        outputs=("float32",),
        inputs=("float32 inputs (the test feeds float32 weights)",),
        notes=(
            "NVFP4 (nvfp4_arith 'fp32_reciprocal'): the tensor's tensor_scale is the library's global scale gs, a "
            "divisor; scale and element codes are reproduced, and dequantize gives the library's output "
            "fp32(code * fp32(scale / gs)) (float32, as fake_quantize and dequantize; bfloat16 rounded once more, as "
            "its checkpoint decompression); a tensor holding NaN or Inf is refused (the library gives NaN outputs "
            "there and gs 1 or 0 to the tensor)",
            "a block with an Inf: the library's scale is NaN or Inf (not E8M0) and every output NaN, which is what "
            "mxsim's NaN block (scale 0xFF) decodes to",
        ),
    )
)

#: Quark's MX6 and MX9 (quant_dtype 'mx6' / 'mx9': fake_quantize_mx6_mx9, the same in every scale_calculation_mode;
#: contract 2.1, 6.2): the exact rule of 2.1 on inputs read through torch.where(|x| < 2^-126, 0.0, x); NaN and Inf
#: pass through to the output (no MX encoding: quantize raises).
_QUARK_MICROEXPONENT = {
    name: {"subnormal_inputs": "flush_plus", "nan_blocks": "error", "inf_policy": "error"} for name in ("mx6", "mx9")
}
_QUARK_FORMATS = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8", "mx6", "mx9")
_QUARK_MICROEXPONENT_TEXT = (
    " MX6/MX9 (quant_dtype 'mx6'/'mx9', blocks of 16, the same in every mode): mxsim's rule of contract 2.1 (E from "
    "the block's largest fp32 exponent field, one microexponent bit per pair, elements rounded to nearest-even at "
    "m bits and clamped to 2^m - 1) on inputs below 2^-126 read as +0, -0 included (subnormal_inputs 'flush_plus'); "
    "a NaN or Inf passes through to Quark's output while the rest of the block is quantized as if it were 0: no MX "
    "encoding, quantize raises ValueError (nan_blocks and inf_policy 'error')."
)
_QUARK_INPUTS = (
    "float32 inputs (the test feeds float32); MX6/MX9 flush below the smallest normal of the input's dtype (2^-14 "
    "for float16 input), which the profile (2^-126, the fp32 view) reproduces for float32 and bfloat16 input only",
)
_QUARK_MICROEXPONENT_NOTE = (
    "MX6/MX9 blocks holding a NaN or an Inf: Quark outputs the NaN/Inf itself and quantizes the other elements as if "
    "it were 0, which no MX encoding holds (a NaN or Inf in an MX6/MX9 block makes every element NaN); quantize "
    "raises ValueError on them"
)

_PROFILE_LIST.append(
    Profile(
        name="quark_0_13",
        kind="block",
        source="quark.torch.kernel: torch.ops.quark.non_scaled_fake_quantize(x, 'mx', element, axis, 32, 'even') "
        "(fake_quantize_mx: even_round, the C++ fake_quantize_to_low_precision_fp / fp8 kernels, "
        "fake_quantize_int_per_group_affine); MX6/MX9: non_scaled_fake_quantize(x, 'mx6' or 'mx9', ..., axis, 16, "
        "mode) and non_scaled_real_quantize (fake_quantize_mx6_mx9, real_quantize_mx6_mx9)",
        version="amd-quark 0.13 (torch 2.13 CPU, its JIT-built C++ extension)",
        description=(
            "Quark's default MX mode 'even': amax rounded half-up at the element's fraction bits before taking its "
            "exponent (scale_rule 'even'; MXINT8 at 8 bits, not 6), an Inf counting as the largest scale "
            "(inf_policy 'max_scale'), an all-zero block read as amax 2^-126 (zero_block_scale 'min_normal'). "
            "MXINT8's integer step scale / 64 is clamped at 2^-126, which is the MX encoding with E >= -120 "
            "(scale_min -120). FP4 and FP6 elements go through a C++ kernel that returns +0 for every element "
            "rounding to zero (zero_sign 'plus') and passes an Inf through to the output (no MX encoding: "
            "inf_policy 'error' raises). Elements round to nearest-even, saturating; FP8 keeps -0."
            + _QUARK_MICROEXPONENT_TEXT
        ),
        formats=_QUARK_FORMATS,
        quantize={"scale_rule": "even", "inf_policy": "max_scale", "zero_block_scale": "min_normal"},
        per_format={
            "mxint8": {"scale_round_bits": 8, "scale_min": -120},
            **{name: {"zero_sign": "plus", "inf_policy": "error"}
               for name in ("mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1")},
            **_QUARK_MICROEXPONENT,
        },
        dequantize={"float32": DequantizeOptions()},
        outputs=("float32",),
        inputs=_QUARK_INPUTS,
        notes=(
            "MXINT8 blocks whose amax is below 2^-120: Quark's own scale is 2^E with E < -120, but its elements are "
            "integers of the step 2^-126; the scale byte that reproduces its codes and output is E = -120, which "
            "the profile gives",
            _QUARK_MICROEXPONENT_NOTE,
            "modes 'floor' and 'ceil' are quark_0_13_floor and quark_0_13_ceil",
        ),
    )
)


def _quark_profile(mode: str, rule: str) -> Profile:
    """Quark's MX modes 'floor' and 'ceil' (contract 6.2): the float32 log2 rule ``rule``, the float32 2^E."""
    return Profile(
        name=f"quark_0_13_{mode}",
        kind="block",
        source=f"quark.torch.kernel: torch.ops.quark.non_scaled_fake_quantize(x, 'mx', element, axis, 32, '{mode}'); "
        f"MX6/MX9: non_scaled_fake_quantize(x, 'mx6' or 'mx9', ..., axis, 16, '{mode}') (the mode is not read there)",
        version="amd-quark 0.13 (torch 2.13 CPU, its JIT-built C++ extension)",
        description=(
            f"Quark's MX mode '{mode}': E = {mode}(float32 log2 amax) - emax (scale_rule '{rule}'), the scale taken "
            "as the float32 2^E without a lower clamp (scale_underflow 'fp32_pow'): an all-zero block, or E below "
            "-149, gets float32 eps 2^-23 (E = -23), and a block with E in [-149, -128] (a scale E8M0 cannot hold) "
            "makes quantize raise. An Inf or NaN gives NaN outputs (mxsim's NaN block). FP4/FP6 elements rounding "
            "to zero give +0 (zero_sign 'plus'); MXINT8's step clamp at 2^-126 is E >= -120 (scale_min -120)."
            + _QUARK_MICROEXPONENT_TEXT
        ),
        formats=_QUARK_FORMATS,
        quantize={"scale_rule": rule, "scale_underflow": "fp32_pow"},
        per_format={
            "mxint8": {"scale_min": -120},
            **{name: {"zero_sign": "plus"} for name in ("mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1")},
            **_QUARK_MICROEXPONENT,
        },
        dequantize={"float32": DequantizeOptions()},
        outputs=("float32",),
        inputs=_QUARK_INPUTS,
        notes=(
            "blocks whose Quark scale is 2^-128 .. 2^-149 (amax an fp32 subnormal, or tiny with a large emax): no "
            "E8M0 encoding, quantize raises ValueError",
            _QUARK_MICROEXPONENT_NOTE,
        ),
    )


_PROFILE_LIST += [_quark_profile("floor", "floor_fp32"), _quark_profile("ceil", "ceil_fp32")]

#: Every profile by name.
PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in _PROFILE_LIST})


def profile_names() -> tuple[str, ...]:
    """The names of :data:`PROFILES`, in registry order."""
    return tuple(PROFILES)


def get_profile(name) -> Profile:
    """The profile called ``name`` (a :class:`Profile` is returned as it is); ValueError naming
    the known profiles otherwise."""
    if isinstance(name, Profile):
        return name
    if not isinstance(name, str) or name not in PROFILES:
        raise ValueError(f"profile={name!r} is not allowed; expected one of: {', '.join(PROFILES)}")
    return PROFILES[name]


def resolve_quantize(profile, options: dict, fmt=None) -> tuple[Profile | None, QuantizeOptions]:
    """(profile or None, QuantizeOptions) for ``profile`` (a name, a Profile or None) and keyword
    ``options`` that override the profile's fields; with ``fmt``, as
    :meth:`Profile.quantize_options` for that format (a format the peer lacks is refused)."""
    if profile is None:
        return None, QuantizeOptions.from_kwargs(**options)
    chosen = get_profile(profile)
    return chosen, chosen.quantize_options(fmt, **options)


def resolve_encode(profile, options, given: dict, fmt) -> EncodeOptions:
    """The EncodeOptions of one element-encode call, for both paths (docs/numerics.md section 1).

    ``options``: an :class:`EncodeOptions` holding every setting, or None; ``given``: the keyword
    options of the call (a value of None is not given); ``profile``: a cast profile (name or
    :class:`Profile`) or None. ``options`` stands alone (a keyword option or profile beside it is a
    ValueError naming them); otherwise the given keywords override the profile's fields, which
    override the defaults. A profile must cover the element format ``fmt``."""
    given = {name: value for name, value in given.items() if value is not None}
    if options is not None:
        if not isinstance(options, EncodeOptions):
            raise ValueError(f"options must be an EncodeOptions or None, not {type(options).__name__}")
        beside = sorted(given) + (["profile"] if profile is not None else [])
        if beside:
            raise ValueError(
                f"options=EncodeOptions(...) holds every encode setting; {', '.join(beside)} cannot be given beside it"
            )
        return options
    fields = {}
    if profile is not None:
        chosen = get_profile(profile)
        fields = chosen.encode_options()
        name = get_format(fmt, kind="element").name
        if name not in chosen.formats:
            raise ValueError(
                f"format {name!r} is not allowed with profile {chosen.name!r}; expected one of: {', '.join(chosen.formats)}"
            )
    return options_from_kwargs(EncodeOptions, {**fields, **given}, "encode ")
