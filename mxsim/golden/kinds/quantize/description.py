"""What a ``quantize`` suite is: its block format, QuantizeOptions and profile, fields, parameters and layouts.
Fields: k fp32 inputs (NVFP4: and the tensor scale) -> scale, scale exponent, sub-scales, codes; and
the fast path's outputs that ``check --explain`` tries."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ....fast.block import quantize_blocks
from ....options import QuantizeOptions
from ....ref.scale import byte_exponent
from ...values import pack_word
from ..fields import Field
from ..format_spec import block_format, format_param
from ..layout import block_layouts, fp32_layout, plain_layout
from ..suite import BlockProfileBundles, Suite, jsonable, profile_options
from .classes import QuantizeClasses
from .expected import QuantizeExpected
from .stimulus import QuantizeStimulus
from .structured import QuantizeStructuredStimulus


@dataclass
class QuantizeSuite(QuantizeStimulus, QuantizeStructuredStimulus, QuantizeExpected, QuantizeClasses,
                    BlockProfileBundles, Suite):
    """k fp32 inputs -> a block's scale (code and unbiased exponent), sub-scales and codes."""

    block: str
    options: dict = field(default_factory=dict)
    profile: str | None = None
    kind = "quantize"
    example_params = {"block": "mxfp4_e2m1"}
    nested_options = {"options": QuantizeOptions}  # the dict field -> the options class of its keys

    def __post_init__(self):
        self.fmt = block_format(self.block, "block")
        self.profile_def, self.opts = profile_options(self.profile, self.fmt, self.options)
        self.opts.check_format(self.fmt)
        if self.opts.rounding == "stochastic":
            raise ValueError("quantize suites take a deterministic rounding (not stochastic)")
        if self.opts.scale_encoding == "int8_exponent" and self.opts.specials == "block":
            raise ValueError(
                "quantize suites with scale_encoding='int8_exponent' need specials='per_element': the stimulus has NaN "
                "blocks, which an int8 exponent cannot mark"
            )
        self._refused_layouts = Counter()  # decision layouts whose maximum has no MX encoding (stimulus.refused)
        baseline = QuantizeOptions() if self.profile_def is None else self.profile_def.quantize_options(self.fmt)
        changed = {k: v for k, v in self.opts.as_dict().items() if v != getattr(baseline, k)}
        tag = [] if self.profile_def is None else [f"profile={self.profile_def.name}"]
        self.name = "-".join([self.fmt.name] + tag + [f"{k}={v}" for k, v in sorted(changed.items())])
        k, fmt = self.fmt.block_size, self.fmt
        self.inputs = [Field("x", 32 * k, description=f"{k} fp32 inputs, element i at bits [32i, 32i+32)")]
        if fmt.tensor_scale is not None:
            self.inputs.append(Field("tensor_scale", 32, description="fp32 bits of the tensor scale s_t"))
        self.outputs = [Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code")]
        if fmt.scale.name == "e8m0":
            self.outputs.append(Field("scale_exp", 16, True, self._scale_exp_description()))
        if fmt.subblocks:
            self.outputs.append(
                Field("subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)")
            )
        self.outputs.append(
            Field("codes", k * fmt.element.width, description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)")
        )

    def _scale_exp_description(self) -> str:
        if self.opts.scale_encoding == "e8m0":
            return "unbiased scale exponent (code - 127; -128 for NaN)"
        return "unbiased scale exponent (the code read as an int8; int8_exponent has no NaN scale)"

    def params(self) -> dict:
        out = {"block": format_param(self.fmt), "options": self.opts.as_dict()}
        if self.profile_def is not None:
            out["profile"] = self.profile_def.name
        return out

    def describe(self) -> dict:
        return {"block": jsonable(self.fmt.describe()), "element": jsonable(self.fmt.element.describe())}

    def field_layouts(self) -> dict:
        """The block's fields (``scale`` read under the options' scale encoding, ``subscales``,
        ``codes``, ``tensor_scale``), ``x``: k fp32 words, ``scale_exp``: a signed integer (:mod:`..layout`)."""
        fmt = self.fmt
        out = block_layouts("", fmt, sub="subscales", elems="codes", scale_encoding=self.opts.scale_encoding)
        out["x"] = fp32_layout(fmt.block_size)
        out["scale_exp"] = plain_layout(16, signed=True)
        return out

    def explain_outputs(self, inputs: dict) -> dict | None:
        """The outputs from the NumPy fast path alone (:func:`mxsim.fast.block.quantize_blocks`,
        bit-identical to the reference by its tests; no classes), for ``check --explain``'s many
        candidates: fp32 words -> float32 blocks; ``scale_exp`` as the suite writes it (-128 for
        an E8M0 NaN scale). None for a format with a tensor scale (NVFP4)."""
        fmt, k = self.fmt, self.fmt.block_size
        if fmt.tensor_scale is not None:
            return None
        words = np.array([[(w >> (32 * i)) & 0xFFFFFFFF for i in range(k)] for w in inputs["x"]], dtype=np.uint32)
        scales, subscales, codes = quantize_blocks(words.reshape(-1, k).view(np.float32), fmt, self.opts)
        out = {"scale": [int(s) for s in scales],
               "codes": [pack_word([int(c) for c in row], fmt.element.width) for row in codes]}
        if fmt.scale.name == "e8m0":
            nan = self.opts.scale_encoding == "e8m0"
            out["scale_exp"] = [-128 if nan and s == 0xFF else int(byte_exponent(int(s), self.opts.scale_encoding))
                                for s in scales]
        if fmt.subblocks:
            out["subscales"] = [pack_word([int(t) for t in row], fmt.subscale_bits) for row in subscales]
        return out
