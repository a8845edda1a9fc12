"""What a ``dequantize`` suite is: one block format, output type, DequantizeOptions, scale encoding
and profile, its fields (scale, sub-scales, NVFP4 tensor scale, codes -> output words), parameters and
layouts (docs/numerics.md section 3.1)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ....options import QuantizeOptions
from ....options.dequantize import OUTPUTS, DequantizeOptions, output_name
from ....ref.dequant import output_format
from ....ref.scale_code import check_scale_encoding
from ..fields import Field
from ..format_spec import block_format, format_param
from ..layout import block_layouts, code_layout
from ..suite import BlockProfileBundles, Suite, jsonable, profile_of
from .classes import DequantizeClasses
from .expected import DequantizeExpected
from .reach import DequantizeReach
from .stimulus import DequantizeStimulus

__all__ = ["DequantizeSuite", "SUITE_OUTPUTS"]

SUITE_OUTPUTS = ("float32", "float16", "bfloat16")


@dataclass
class DequantizeSuite(DequantizeStimulus, DequantizeExpected, DequantizeClasses, DequantizeReach, BlockProfileBundles, Suite):
    """One block (``scale``, ``subscales``, NVFP4 ``tensor_scale``, ``codes``) -> ``values``: the
    output word of element i at bits [i*W, (i+1)*W), W = 32 (float32) or 16 (float16, bfloat16).

    ``output``: float32 | float16 | bfloat16 (or fp32 / fp16 / bf16); ``options``: the fields of
    :class:`mxsim.DequantizeOptions`; ``scale_encoding``: e8m0 | int8_exponent (how the scale byte
    reads, mxsim.ref.scale_code). ``profile``: a profile name (:mod:`mxsim.options.profiles`):
    its DequantizeOptions for ``output`` with ``options`` on top, and its ``scale_encoding`` where
    it sets one (and this one is left at e8m0). Expected words:
    :func:`mxsim.ref.dequant.round_to_output` of :func:`mxsim.ref.stored_block.dequantize_block`."""

    block: str
    output: str = "float32"
    options: dict = field(default_factory=dict)
    scale_encoding: str = "e8m0"
    profile: str | None = None
    kind = "dequantize"
    example_params = {"block": "mxfp4_e2m1"}
    nested_options = {"options": DequantizeOptions}  # the dict field -> the options class of its keys
    explain_options = QuantizeOptions  # scale_encoding, a top-level param

    def __post_init__(self):
        self.fmt = block_format(self.block, "block")
        self.output = output_name(self.output)
        if self.output not in SUITE_OUTPUTS:
            raise ValueError(f"output={self.output!r} is not allowed; expected one of: {', '.join(SUITE_OUTPUTS)}")
        self.profile_def = profile_of(self.profile)
        baseline = DequantizeOptions()
        if self.profile_def is not None:
            baseline = self.profile_def.dequantize_for(self.fmt, self.output)  # kind, format and output checks
            if self.scale_encoding == "e8m0":
                self.scale_encoding = self.profile_def.quantize.get("scale_encoding", "e8m0")
        DequantizeOptions.from_kwargs(**self.options)  # names an unknown field
        self.opts = DequantizeOptions(**{**baseline.as_dict(), **self.options})
        check_scale_encoding(self.scale_encoding, self.fmt.scale)
        self.out = output_format(self.output)
        changed = {k: v for k, v in self.opts.as_dict().items() if v != getattr(baseline, k)}
        if self.scale_encoding != self._profile_scale_encoding():
            changed["scale_encoding"] = self.scale_encoding
        tag = [] if self.profile_def is None else [f"profile={self.profile_def.name}"]
        self.name = "-".join([self.fmt.name, OUTPUTS[self.output]] + tag + [f"{k}={v}" for k, v in sorted(changed.items())])
        fmt, k, w = self.fmt, self.fmt.block_size, self.out.width
        self.inputs = [
            Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code ({self.scale_encoding})")
        ]
        if fmt.subblocks:
            self.inputs.append(
                Field(
                    "subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)"
                )
            )
        if fmt.tensor_scale is not None:
            self.inputs.append(Field("tensor_scale", 32, description="fp32 bits of the tensor scale s_t"))
        self.inputs.append(
            Field(
                "codes",
                k * fmt.element.width,
                description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)",
            )
        )
        self.outputs = [
            Field("values", k * w, description=f"{self.output} words, element i at bits [i*{w}, (i+1)*{w})")
        ]

    def _profile_scale_encoding(self) -> str:
        return "e8m0" if self.profile_def is None else self.profile_def.quantize.get("scale_encoding", "e8m0")

    def params(self) -> dict:
        out = {
            "block": format_param(self.fmt),
            "output": self.output,
            "options": self.opts.as_dict(),
            "scale_encoding": self.scale_encoding,
        }
        if self.profile_def is not None:
            out["profile"] = self.profile_def.name
        return out

    def describe(self) -> dict:
        return {
            "block": jsonable(self.fmt.describe()),
            "element": jsonable(self.fmt.element.describe()),
            "output": jsonable(self.out.describe()),
        }

    def field_layouts(self) -> dict:
        """The block's fields (``scale`` read under the suite's scale encoding, ``subscales``,
        ``tensor_scale``, ``codes``) and ``values``: k words of the output type (:mod:`.layout`)."""
        out = block_layouts("", self.fmt, sub="subscales", elems="codes", scale_encoding=self.scale_encoding)
        out["values"] = code_layout(self.out, self.fmt.block_size)
        return out
