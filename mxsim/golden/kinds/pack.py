"""The ``pack`` suite kind: one block -> its byte-stream image in one element-stream layout."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .fields import Field
from .layout import block_layouts, plain_layout
from ..stimulus.patterns import significand_patterns
from .format_spec import block_format, format_param
from .suite import Suite, jsonable
from ..values import decode, pack_word, unpack_word


@dataclass
class PackSuite(Suite):
    """One block (scale, sub-scales, codes) -> its byte-stream image ``[scale][sub-scales]
    [e0]...[e(k-1)]`` in one element-stream layout (contract 3.2; mxsim.ref.pack): byte j of the
    stream at bits [8j, 8j+8) of the ``stream`` field."""

    block: str
    element_stream: str = "lsb"
    kind = "pack"
    example_params = {"block": "mxfp4_e2m1"}

    def __post_init__(self):
        from ...packing import ELEMENT_STREAMS, packed_nbytes

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
        """The block's fields (``scale``, ``subscales``, ``codes``) and ``stream``: its bytes (:mod:`.layout`)."""
        out = block_layouts("", self.fmt, sub="subscales", elems="codes")
        out["stream"] = plain_layout(8, self.nbytes)
        return out

    def _patterns(self) -> list[list[int]]:
        """Element codes: zeros, all ones, counting, a walking 1 bit, then TestFloat's patterns of
        the element width (:func:`.stimulus.significand_patterns`) dealt across the block, each
        element a different pattern (rotated by one per block), so every bit of every element
        position is seen set alone and beside its neighbours' (docs/numerics.md section 3.3)."""
        k, w = self.fmt.block_size, self.fmt.element.width
        fixed = [[0] * k, [(1 << w) - 1] * k, [i % (1 << w) for i in range(k)], [1 << (i % w) for i in range(k)]]
        patterns = significand_patterns(w)
        return fixed + [[patterns[(i + r) % len(patterns)] for i in range(k)] for r in range(len(patterns))]

    def stimulus(self, rng: random.Random, level: int):
        fmt = self.fmt
        for codes in self._patterns():
            yield self._inputs(codes, 0, 0), "directed"
            ones = (1 << fmt.scale.width) - 1, (1 << (fmt.subblocks * fmt.subscale_bits)) - 1
            yield self._inputs(codes, *ones), "directed"
        for i in range(100 * level):
            yield self.random_inputs(rng, i), "random"

    def catalogue_size(self, level: int) -> int:
        return 2 * len(self._patterns()) + 100 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        fmt = self.fmt
        codes = [rng.getrandbits(fmt.element.width) for _ in range(fmt.block_size)]
        return self._inputs(codes, rng.getrandbits(fmt.scale.width), rng.getrandbits(fmt.subblocks * fmt.subscale_bits))

    def _inputs(self, codes, scale, subscales) -> dict:
        inputs = {"scale": scale, "codes": pack_word(codes, self.fmt.element.width)}
        if self.fmt.subblocks:
            inputs["subscales"] = subscales
        return inputs

    def compute(self, inputs: dict):
        import numpy as np

        from ...ref.pack import pack_blocks

        fmt = self.fmt
        codes = np.array([unpack_word(inputs["codes"], fmt.element.width, fmt.block_size)], dtype=np.int64)
        subs = None
        if fmt.subblocks:
            subs = np.array([unpack_word(inputs["subscales"], fmt.subscale_bits, fmt.subblocks)], dtype=np.int64)
        data = pack_blocks(fmt, np.array([inputs["scale"]]), subs, codes, self.element_stream, "interleaved")
        classes = set()
        if decode(inputs["scale"], fmt.scale).is_nan:
            classes.add("scale_nan")
        if all(c == 0 for c in codes[0]):
            classes.add("all_zero")
        return {"stream": int.from_bytes(data, "little")}, classes
