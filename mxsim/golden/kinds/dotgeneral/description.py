"""What a ``dotgeneral`` suite is: a ``dot`` suite with ``n_blocks`` blocks per vector; fields, name, parameters.
Over :class:`..dot.DotSuite`: each operand field n blocks wide, C -> the result, every block's Dot
and the fused steps."""

from __future__ import annotations

from dataclasses import dataclass

from ....ref.output import storage_format
from ..dot import DotSuite
from ..fields import Field, c_field
from .classes import DotGeneralClasses
from .expected import DotGeneralExpected
from .stimulus import DotGeneralStimulus


@dataclass
class DotGeneralSuite(DotGeneralStimulus, DotGeneralExpected, DotGeneralClasses, DotSuite):
    """Two vectors of ``n_blocks`` blocks -> the DotGeneral ``result`` and each block's rounded
    Dot (``block_results``), for one accumulator configuration (``across_blocks`` included).
    Block j's fields sit at [j*width, (j+1)*width) of each operand field."""

    n_blocks: int = 4
    kind = "dotgeneral"
    example_params = {"block_a": "mxfp4_e2m1", "n_blocks": 2}

    def __post_init__(self):
        if not (isinstance(self.n_blocks, int) and 1 <= self.n_blocks <= 64):
            raise ValueError(f"n_blocks={self.n_blocks!r} is not allowed; expected an integer in [1, 64]")
        if self.exhaustive_pairs is not True:
            raise ValueError(f"exhaustive_pairs={self.exhaustive_pairs!r} is not allowed for dotgeneral; its catalogue "
                             "has no exhaustive code pairs: leave it true")
        self.vector_blocks = self.n_blocks
        super().__post_init__()
        n = self.n_blocks
        blocks = [f"n{n}"] if self.fused else [f"n{n}", self.acc.across_blocks]
        self.name = "-".join([self._pair()] + self._label() + blocks + self._suffixes())
        self.single = self.block_fields
        self.inputs = [
            f if f.name.endswith("tensor_scale") else Field(f.name, f.bits * n, f.signed, f"{n} blocks, block j at bits [j*{f.bits}, (j+1)*{f.bits}): {f.description}")
            for f in self.single
        ]
        if self.has_c:
            self.inputs.append(c_field(self.c_format))
        out = storage_format(self.acc)
        self.outputs = [Field("result", out.width, description=f"{out.name} bits of the DotGeneral")]
        if not self.fused:
            self.outputs.append(Field("block_results", out.width * n, description=(
                f"each block's Dot rounded to {out.name}, block j at bits [j*{out.width}, (j+1)*{out.width})")))
        self._add_steps_field()

    def params(self) -> dict:
        return {**super().params(), "n_blocks": self.n_blocks}
