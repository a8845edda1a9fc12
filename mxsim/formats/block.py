"""Block formats: k elements sharing a scale, optionally sub-blocks sharing a sub-scale.

One description covers every family:

* OCP MX (MXFP8/6/4, MXINT8): ``block_size=32``, E8M0 scale, no sub-blocks;
* shared microexponents (MX9/MX6/MX4, Rouhani et al. ISCA 2023): ``block_size=16``, E8M0 shared
  exponent, ``subblock_size=2`` with ``subscale_bits=1`` (one microexponent bit per pair), and
  sign-magnitude integer elements with ``frac_bits = m - 1``;
* block floating point (MSFP12/16): as above with no sub-blocks;
* NVFP4: ``block_size=16``, UE4M3 block scale, and an FP32 ``tensor_scale``.

Storage per block: scale width + (block_size / subblock_size) * subscale_bits
+ block_size * element width bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property

from .element import ElementFormat, FloatFormat, IntFormat, _require, _require_int, _hash_once, _state_without_hash

__all__ = ["BlockFormat", "SCALE_FORMATS"]

# The scale formats block quantization implements, by their parameters (exponent_bits,
# mantissa_bits, bias, signed, subnormals, specials): a copy under another name is the same format.
SCALE_FORMATS = {
    "e8m0": (8, 0, 127, False, False, "fn"),
    "ue4m3": (4, 3, 7, False, True, "fn"),
}
_FP32 = (8, 23, 127, True, True, "ieee")


def _parameters(fmt: FloatFormat) -> tuple:
    return (fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.signed, fmt.subnormals, fmt.specials)


@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled format.

    Fields: ``element`` (the element format), ``block_size`` (k, elements per scale), ``scale``
    (an unsigned float format: E8M0 or UE4M3), ``subblock_size`` and ``subscale_bits`` (k2 and d2
    of a two-level format; ``None`` and 0 for single-level), ``tensor_scale`` (a per-tensor float
    format such as fp32, or ``None``).
    """

    name: str
    element: ElementFormat
    block_size: int
    scale: FloatFormat
    subblock_size: int | None = None
    subscale_bits: int = 0
    tensor_scale: FloatFormat | None = None
    kind: str = field(default="block", init=False, repr=False)

    __hash__ = _hash_once
    __getstate__ = _state_without_hash

    def __post_init__(self) -> None:
        owner = f"block format {self.name!r}"
        _require(isinstance(self.name, str) and self.name != "", "format name must be a non-empty string")
        _require(
            isinstance(self.element, (FloatFormat, IntFormat)),
            f"{owner}: element must be a FloatFormat or IntFormat, got {type(self.element).__name__}",
        )
        _require(self.element.signed, f"{owner}: element format {self.element.name!r} must be signed")
        _require_int(owner, "block_size", self.block_size, 1, 1 << 20)
        _require(
            isinstance(self.scale, FloatFormat) and not self.scale.signed,
            f"{owner}: scale must be an unsigned FloatFormat (e.g. e8m0, ue4m3), got {self.scale!r}",
        )
        scale_name = {params: name for name, params in SCALE_FORMATS.items()}.get(_parameters(self.scale))
        _require(
            scale_name is not None,
            f"{owner}: scale {self.scale.name!r} is not supported; allowed: E8M0 (exponent_bits=8, mantissa_bits=0, "
            "bias=127, no subnormals, NaN 0xFF) or UE4M3 (exponent_bits=4, mantissa_bits=3, bias=7, NaN 0x7F)",
        )
        if self.scale.name != scale_name:  # the rules are chosen by the scale's name
            object.__setattr__(self, "scale", replace(self.scale, name=scale_name))
        if self.subblock_size is None:
            _require(
                self.subscale_bits == 0,
                f"{owner}: subscale_bits={self.subscale_bits!r} needs a subblock_size",
            )
        else:
            _require_int(owner, "subblock_size", self.subblock_size, 1, self.block_size)
            _require(
                self.block_size % self.subblock_size == 0,
                f"{owner}: subblock_size={self.subblock_size} must divide block_size={self.block_size}",
            )
            _require_int(owner, "subscale_bits", self.subscale_bits, 1, 8)
        _require(
            self.tensor_scale is None
            or (isinstance(self.tensor_scale, FloatFormat) and _parameters(self.tensor_scale) == _FP32 and self.scale.name == "ue4m3"),
            f"{owner}: tensor_scale must be None, or fp32 with a UE4M3 block scale (NVFP4); got {self.tensor_scale!r}",
        )

    @cached_property
    def subblocks(self) -> int:
        """Sub-blocks per block (0 for a single-level format)."""
        return 0 if self.subblock_size is None else self.block_size // self.subblock_size

    @property
    def scale_storage_bits(self) -> int:
        """Bits a stored scale occupies: its width rounded up to whole bytes (UE4M3's 7 bits are
        stored as a byte with the top bit 0, as PTX's ``ue4m3``)."""
        return -(-self.scale.width // 8) * 8

    @property
    def bits_per_block(self) -> int:
        """Stored scale bits + sub-scale bits + element bits of one block (no tensor scale)."""
        return self.scale_storage_bits + self.subblocks * self.subscale_bits + self.block_size * self.element.width

    @property
    def bits_per_element(self) -> Fraction:
        """Average storage per element, excluding any tensor-level scale."""
        return Fraction(self.bits_per_block, self.block_size)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "kind": "block",
            "element": self.element.name,
            "block_size": self.block_size,
            "scale": self.scale.name,
            "subblock_size": self.subblock_size,
            "subscale_bits": self.subscale_bits,
            "tensor_scale": None if self.tensor_scale is None else self.tensor_scale.name,
            "bits_per_block": self.bits_per_block,
            "bits_per_element": self.bits_per_element,
        }
