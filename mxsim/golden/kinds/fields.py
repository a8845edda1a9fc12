"""One field of a golden suite: a fixed-width hex column.

A value is written as ceil(bits / 4) lower-case hex digits, no prefix; a signed field holds its
value as two's complement in ``bits`` bits (zero-extended to the digit width), so a testbench
reads it with ``$readmemh`` into a ``bits``-wide register and declares it signed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...reading import shorten
from .word_column import WordColumn

__all__ = ["Field", "c_field"]

_HEX_DIGITS = "0123456789abcdefABCDEF"


@dataclass(frozen=True)
class Field:
    """``name`` (the file is ``<name>.hex``), width in ``bits``, ``signed``, and what it holds."""

    name: str
    bits: int
    signed: bool = False
    description: str = ""

    @property
    def hex_digits(self) -> int:
        return -(-self.bits // 4)

    @property
    def file(self) -> str:
        return f"{self.name}.hex"

    def to_hex(self, value: int) -> str:
        low, high = (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)
        if not low <= value <= high:
            raise ValueError(f"field {self.name!r}: {value} does not fit {self.bits} {'signed ' if self.signed else ''}bits")
        return format(value % (1 << self.bits), f"0{self.hex_digits}x")

    def to_hex_lines(self, values) -> str:
        """``to_hex`` of each value, one line each (every line ends in a newline)."""
        if not values:
            return ""
        if isinstance(values, WordColumn) and not self.signed:
            return self._word_hex_lines(values.raw)
        low, high = (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)
        if min(values) < low or max(values) > high:
            self.to_hex(next(v for v in values if not low <= v <= high))  # raises, naming the value
        if self.signed:
            modulus = 1 << self.bits
            values = [v % modulus for v in values]
        return (f"%0{self.hex_digits}x\n" * len(values)) % tuple(values)  # one formatting call: several times faster

    def _word_hex_lines(self, raw: np.ndarray) -> str:
        """:meth:`to_hex_lines` of unsigned words given as (N, nbytes) little-endian bytes: the
        bytes' hex, most significant first, the top digit dropped when ``bits`` takes an odd
        number of them. A word with a bit at or above ``bits`` raises, as :meth:`to_hex` does."""
        n, size = raw.shape
        needed = -(-self.bits // 8)
        top = raw[:, needed - 1] >> (self.bits - 8 * (needed - 1)) if size >= needed else np.zeros(n, np.uint8)
        too_wide = (top != 0) | (raw[:, needed:].any(axis=1) if size > needed else False)
        if np.any(too_wide):
            self.to_hex(int.from_bytes(raw[int(np.argmax(too_wide))].tobytes(), "little"))  # raises, naming it
        if size < needed:
            raw = np.pad(raw, ((0, 0), (0, needed - size)))
        digits = np.frombuffer(np.ascontiguousarray(raw[:, needed - 1 :: -1]).tobytes().hex().encode("ascii"),
                               dtype=np.uint8).reshape(n, 2 * needed)
        lines = np.empty((n, self.hex_digits + 1), dtype=np.uint8)
        lines[:, :-1] = digits[:, 2 * needed - self.hex_digits :]
        lines[:, -1] = ord("\n")
        return lines.tobytes().decode("ascii")

    def from_hex(self, text: str) -> int:
        shown = shorten(repr(text), 40)  # a line may be megabytes long: the error shows its start
        if text.strip(_HEX_DIGITS):  # int(text, 16) would also take "0x", "_", "+" and spaces
            raise ValueError(f"field {self.name!r}: {shown} is not hex (expected {self.hex_digits} digits 0-9, a-f)")
        if len(text) != self.hex_digits:
            raise ValueError(f"field {self.name!r}: {shown} is not {self.hex_digits} hex digits")
        value = int(text, 16)
        if value >> self.bits:
            raise ValueError(f"field {self.name!r}: {shown} has bits above bit {self.bits - 1}")
        if self.signed and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value

    def describe(self) -> dict:
        return {
            "name": self.name,
            "file": self.file,
            "bits": self.bits,
            "hex_digits": self.hex_digits,
            "signed": self.signed,
            "description": self.description,
        }


def c_field(fmt) -> Field:
    """A dot suite's accumulator input C, in the IEEE format ``fmt`` its unit loads
    (:attr:`~mxsim.options.accumulate.Accumulator.c_storage`: fp16 for an fp16-D instruction, bf16
    for a BF16 destination, else fp32), with that format's width."""
    return Field("c", fmt.width, description=f"{fmt.name} bits of the accumulator input C")
