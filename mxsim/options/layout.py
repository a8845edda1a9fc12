"""Bit-layout options of packed block data (docs/numerics.md section 3): how element codes are cut
into a byte stream and where block scales go. The layouts are defined in :mod:`mxsim.ref.pack`;
the arithmetic both packers share is :mod:`mxsim.packing`."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .spec import option, validate_fields

__all__ = ["LayoutOptions", "ELEMENT_STREAMS", "SCALE_PLACEMENTS", "DEFAULT_ELEMENT_STREAM",
           "DEFAULT_SCALE_PLACEMENT", "check_layout"]

ELEMENT_STREAMS = ("lsb", "msb", "bytes")
SCALE_PLACEMENTS = ("separate", "interleaved")
DEFAULT_ELEMENT_STREAM = "lsb"
DEFAULT_SCALE_PLACEMENT = "separate"


@dataclass(frozen=True)
class LayoutOptions:
    """The layout of a packed payload (keyword arguments of the packers and the file writer)."""

    element_stream: str = option(
        DEFAULT_ELEMENT_STREAM, ELEMENT_STREAMS,
        "`lsb`: element 0 in the low bits of byte 0 (FP4: low nibble); `msb`: big-endian bit stream; "
        "`bytes`: one code per byte", "3",
    )
    scale_placement: str = option(
        DEFAULT_SCALE_PLACEMENT, SCALE_PLACEMENTS,
        "`separate`: a scale section, then the element section; `interleaved`: each block's scale before its "
        "elements", "3",
    )

    def __post_init__(self) -> None:
        validate_fields(self)

    def as_dict(self) -> dict:
        return asdict(self)


def check_layout(element_stream, scale_placement) -> None:
    """Raise ValueError naming the field and the allowed values for an unknown layout name."""
    LayoutOptions(element_stream, scale_placement)
