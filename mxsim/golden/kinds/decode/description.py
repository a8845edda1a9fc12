"""What a ``decode`` suite is: one element format's fields, parameters, layouts and its stimulus,
every code once."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..fields import Field
from ..format_spec import element_format, format_param
from ..layout import code_layout, fp32_layout
from ..suite import Suite
from .expected import DecodeExpected


@dataclass
class DecodeSuite(DecodeExpected, Suite):
    """Every code of an element format -> the fp32 bits of its value (NaN: 0x7FC00000 with the
    code's sign). The catalogue is exhaustive: code 0 to 2^w - 1 in order (w the element width)."""

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
        """``code``: one element code; ``value``: its fp32 word (:mod:`..layout`)."""
        return {"code": code_layout(self.fmt), "value": fp32_layout()}

    def stimulus(self, rng: random.Random, level: int):
        for c in range(1 << self.fmt.width):
            yield {"code": c}, "exhaustive"

    def catalogue_size(self, level: int) -> int:
        return 1 << self.fmt.width

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        return {"code": rng.getrandbits(self.fmt.width)}
