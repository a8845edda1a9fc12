"""What a ``pack`` suite is: one block format and element-stream layout, its fields (scale,
sub-scales, codes -> the stream's bytes), parameters and layouts."""

from __future__ import annotations

from dataclasses import dataclass

from ..fields import Field
from ..format_spec import block_format, format_param
from ..layout import block_layouts, plain_layout
from ..suite import Suite, jsonable
from .expected import PackExpected
from .stimulus import PackStimulus


@dataclass
class PackSuite(PackStimulus, PackExpected, Suite):
    """One block (scale, sub-scales, codes) -> its byte-stream image ``[scale][sub-scales]
    [e0]...[e(k-1)]`` in one element-stream layout (contract 3.2; mxsim.ref.pack): byte j of the
    stream at bits [8j, 8j+8) of the ``stream`` field."""

    block: str
    element_stream: str = "lsb"
    kind = "pack"
    example_params = {"block": "mxfp4_e2m1"}

    def __post_init__(self):
        from ....packing import ELEMENT_STREAMS, packed_nbytes

        self.fmt = block_format(self.block, "block")
        if self.element_stream not in ELEMENT_STREAMS:
            raise ValueError(f"element_stream={self.element_stream!r} is not allowed; expected one of: {', '.join(ELEMENT_STREAMS)}")
        fmt = self.fmt
        self.name = f"{fmt.name}-{self.element_stream}"
        self.nbytes = packed_nbytes(fmt, 1, self.element_stream, "interleaved")
        self.inputs = [Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code")]
        if fmt.subblocks:
            self.inputs.append(Field("subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)"))
        self.inputs.append(Field("codes", fmt.block_size * fmt.element.width, description="codes, element i at bits [i*w, (i+1)*w)"))
        self.outputs = [Field("stream", 8 * self.nbytes, description=f"the block's {self.nbytes} bytes, byte j at bits [8j, 8j+8)")]

    def params(self) -> dict:
        return {"block": format_param(self.fmt), "element_stream": self.element_stream}

    def describe(self) -> dict:
        return {"block": jsonable(self.fmt.describe()), "scale_placement": "interleaved"}

    def field_layouts(self) -> dict:
        """The block's fields (``scale``, ``subscales``, ``codes``) and ``stream``: its bytes (:mod:`..layout`)."""
        out = block_layouts("", self.fmt, sub="subscales", elems="codes")
        out["stream"] = plain_layout(8, self.nbytes)
        return out
