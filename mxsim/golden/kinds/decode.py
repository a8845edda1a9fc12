"""The ``decode`` suite kind: every code of an element format -> the fp32 bits of its value."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .fields import Field
from .layout import code_layout, fp32_layout
from .format_spec import element_format, format_param
from .suite import Suite
from ..values import decode, fp32_bits, fp32_value, is_subnormal_code
from ..coverage.catalogue import kind_classes


@dataclass
class DecodeSuite(Suite):
    """Every code of an element format -> the fp32 bits of its value (NaN: 0x7FC00000 with the
    code's sign)."""

    element: str
    kind = "decode"
    example_params = {"element": "fp4_e2m1"}

    def __post_init__(self):
        self.fmt = element_format(self.element, "element")
        self.name = self.fmt.name
        self.inputs = [Field("code", self.fmt.width, description=f"{self.fmt.name} code")]
        self.outputs = [Field("value", 32, description="fp32 bits of the exact value")]

    def params(self) -> dict:
        return {"element": format_param(self.fmt)}

    def describe(self) -> dict:
        return {"element": self.fmt.describe()}

    def field_layouts(self) -> dict:
        """``code``: one element code; ``value``: its fp32 word (:mod:`.layout`)."""
        return {"code": code_layout(self.fmt), "value": fp32_layout()}

    def stimulus(self, rng: random.Random, level: int):
        for c in range(1 << self.fmt.width):
            yield {"code": c}, "exhaustive"

    def catalogue_size(self, level: int) -> int:
        return 1 << self.fmt.width

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        return {"code": rng.getrandbits(self.fmt.width)}

    def compute(self, inputs: dict):
        code = inputs["code"]
        x = decode(code, self.fmt)
        value = fp32_bits(x)
        if x.is_finite and fp32_value(value).magnitude != x.magnitude:
            raise ValueError(f"{self.fmt.name} code {code:#x} is not exactly an fp32 value")
        classes = kind_classes(x)
        if x.is_finite and x.magnitude and x.magnitude == self.fmt.max_normal:
            classes.add("max")
        if is_subnormal_code(code, self.fmt):
            classes.add("subnormal_input")
        if self.fmt.kind == "int" and self.fmt.encoding == "twos_complement" and code == self.fmt.sign_mask:
            classes.add("int8_neg2")
        return {"value": value}, classes
