"""The expected byte stream and corner classes of one ``pack`` vector, from the reference packer
(:func:`mxsim.ref.pack.pack_blocks`)."""

from __future__ import annotations

from ...values import decode, unpack_word


class PackExpected:
    """``compute`` of a pack suite (needs ``self.fmt`` and ``self.element_stream``)."""

    def compute(self, inputs: dict):
        """(``{"stream": the block's bytes, byte j at bits [8j, 8j+8)}``, classes): ``scale_nan``
        where the scale code is NaN, ``all_zero`` where every element code is 0."""
        import numpy as np

        from ....ref.pack import pack_blocks

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
