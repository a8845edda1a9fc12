"""What an ``encode`` suite is: one element format, rounding and overflow mode, its fields (fp32
``x`` -> ``code``), parameters, layouts and the cast profiles ``check --explain`` tries."""

from __future__ import annotations

from dataclasses import dataclass

from ....options import EncodeOptions
from ....options.profiles import PROFILES
from ....ref.encode import encode
from ..fields import Field
from ..format_spec import element_format, format_param
from ..layout import code_layout, fp32_layout
from ..suite import Suite
from .classes import EncodeClasses
from .expected import EncodeExpected
from .stimulus import EncodeStimulus


@dataclass
class EncodeSuite(EncodeStimulus, EncodeExpected, EncodeClasses, Suite):
    """fp32 inputs -> element codes for one rounding and overflow mode."""

    element: str
    rounding: str = "rne"
    overflow: str = "saturate"
    kind = "encode"
    example_params = {"element": "fp4_e2m1"}
    explain_options = EncodeOptions  # rounding, overflow: top-level params

    def __post_init__(self):
        self.fmt = element_format(self.element, "element")
        if self.rounding == "stochastic" or self.overflow == "error":
            raise ValueError(
                f"rounding={self.rounding!r}, overflow={self.overflow!r}: encode suites take rounding "
                "rne|rna|rtz|rup|rdn and overflow saturate|ieee"
            )
        encode(0 if self.fmt.kind == "int" or self.fmt.subnormals else 1, self.fmt, self.rounding, self.overflow)
        self.name = f"{self.fmt.name}-{self.rounding}-{self.overflow}"
        self.inputs = [Field("x", 32, description="fp32 bits of the input")]
        self.outputs = [Field("code", self.fmt.width, description=f"{self.fmt.name} code")]

    def params(self) -> dict:
        return {"element": format_param(self.fmt), "rounding": self.rounding, "overflow": self.overflow}

    def describe(self) -> dict:
        return {"element": self.fmt.describe()}

    def field_layouts(self) -> dict:
        """``x``: the fp32 input word; ``code``: one element code (:mod:`..layout`)."""
        return {"x": fp32_layout(), "code": code_layout(self.fmt)}

    def explain_bundles(self, params: dict) -> list[tuple[str, str]]:
        """Every cast profile (:data:`mxsim.options.profiles.PROFILES`), for ``check --explain``."""
        return [("profile", name) for name, p in PROFILES.items() if p.kind == "cast"]

    def with_bundle(self, params: dict, key: str, name: str) -> dict:
        """``params`` with the cast profile's rounding and overflow."""
        if key != "profile":
            return super().with_bundle(params, key, name)
        return {**params, **{k: v for k, v in PROFILES[name].encode_options().items() if k in params}}
