"""The dot-product accumulator configuration of the numerics contract (conventions.md section 4).

One frozen :class:`Accumulator` carries every choice of the datapath model, is validated once,
and is read by both the reference model (:mod:`mxsim.ref.dot`) and the fast path
(:mod:`mxsim.fast.dot`); neither keeps defaults of its own.

Fields (defaults are the contract's):

* ``mode``: ``exact`` sums the exact products with unbounded integers; ``aligned`` is the
  fixed-point hardware model (anchor, shift, ``width``-bit two's-complement register);
  ``fp32_sequential`` adds the exact products in index order into an fp32 register, each
  addition rounded to nearest-even (a chain of fp32 FMAs, TOSA's pseudocode).
* ``frac_bits`` (F, ``aligned`` only, required there): the register's LSB weighs
  2^(e_max - F), where e_max is the largest product exponent Ea + Eb of the block.
* ``width`` (W, ``aligned`` only): total register bits, sign included; ``None`` = unbounded.
* ``shift_rounding``: ``truncate`` (magnitude toward zero) | ``rne``: how a product's bits below
  the register's LSB are dropped.
* ``overflow``: ``saturate`` (clamp to [-2^(W-1), 2^(W-1) - 1] after each addition) | ``wrap``
  (modulo 2^W).
* ``output``: ``fp32`` | ``bf16`` | ``fp16``; ``output_rounding``: rne | rna | rtz | rup | rdn;
  ``ftz``: a result that rounds to a subnormal of the output format becomes a zero of its sign.
  A result whose rounding (with unbounded exponent) exceeds the output's largest finite value is
  +-Inf in every rounding mode, as the contract says.
* ``across_blocks``: ``fp32`` (each block result is rounded to the output format, then added in
  block order into an fp32 register, each addition nearest-even; the sum is converted to the
  output format) | ``exact`` (the exact block values are summed and rounded once).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .policy import check_choice, options_from_kwargs

__all__ = ["Accumulator", "ACCUMULATOR_CHOICES", "PRESETS", "OUTPUT_ROUNDING_MODES"]

OUTPUT_ROUNDING_MODES = ("rne", "rna", "rtz", "rup", "rdn")
ACCUMULATOR_CHOICES = {
    "mode": ("exact", "aligned", "fp32_sequential"),
    "shift_rounding": ("truncate", "rne"),
    "overflow": ("saturate", "wrap"),
    "output": ("fp32", "bf16", "fp16"),
    "output_rounding": OUTPUT_ROUNDING_MODES,
    "across_blocks": ("fp32", "exact"),
}
MAX_FRAC_BITS = 4096
MAX_WIDTH = 8192


@dataclass(frozen=True)
class Accumulator:
    """A dot-product datapath configuration (see the module docstring for every field)."""

    mode: str = "exact"
    frac_bits: int | None = None
    width: int | None = None
    shift_rounding: str = "truncate"
    overflow: str = "saturate"
    output: str = "fp32"
    output_rounding: str = "rne"
    ftz: bool = False
    across_blocks: str = "fp32"

    def __post_init__(self) -> None:
        for name, allowed in ACCUMULATOR_CHOICES.items():
            check_choice(name, getattr(self, name), allowed)
        if not isinstance(self.ftz, bool):
            raise ValueError(f"ftz={self.ftz!r} is not allowed; expected True or False")
        if self.mode == "aligned":
            if not _is_int_in(self.frac_bits, 0, MAX_FRAC_BITS):
                raise ValueError(
                    f"frac_bits={self.frac_bits!r} is not allowed; mode='aligned' needs an integer in [0, {MAX_FRAC_BITS}]"
                )
            if self.width is not None and not _is_int_in(self.width, 2, MAX_WIDTH):
                raise ValueError(
                    f"width={self.width!r} is not allowed; expected an integer in [2, {MAX_WIDTH}] or None (unbounded)"
                )
        else:
            for name in ("frac_bits", "width"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is only used with mode='aligned', not mode={self.mode!r}; leave it None"
                    )

    @classmethod
    def from_kwargs(cls, **kwargs) -> "Accumulator":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs, "accumulator ")

    @classmethod
    def preset(cls, name: str, **overrides) -> "Accumulator":
        """A named configuration from :data:`PRESETS`, with optional field overrides."""
        check_choice("preset", name, tuple(PRESETS))
        return replace(PRESETS[name], **overrides)

    @property
    def register_bound(self) -> int | None:
        """The largest magnitude the aligned register holds (2^(W-1)); None if unbounded."""
        return None if self.width is None else 1 << (self.width - 1)

    def as_dict(self) -> dict:
        return asdict(self)


def _is_int_in(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


PRESETS: dict[str, Accumulator] = {
    # The contract's defaults: exact block sums, rounded to fp32 and added in fp32 in block order
    # (OCP MX v1.0 section 6.2 DotGeneral with sequential order; conventions.md section 4).
    "fp32_per_block": Accumulator(),
    # The mathematical OCP Dot/DotGeneral (section 6.1/6.2), rounded once at the end.
    "exact": Accumulator(across_blocks="exact"),
    # A chain of fp32 FMAs over the exact products (TOSA 1.1 pseudocode), fp32 across blocks.
    "fp32_fma": Accumulator(mode="fp32_sequential"),
    # Hopper FP8 tensor cores as publicly described: products aligned to the largest exponent,
    # about 13 fraction bits kept, the rest truncated (DeepSeek-V3 report section 3.3;
    # SageAttention2, "FP22"); promoted to fp32 across blocks. An approximation from published
    # descriptions, not a measured model of any chip.
    "hopper_fp8_like": Accumulator(mode="aligned", frac_bits=13, width=24),
    # Blackwell f8f6f4 MMA as reported by the DeepGEMM community (issue #176): about 25 bits.
    # Same caveat as above.
    "blackwell_fp8_like": Accumulator(mode="aligned", frac_bits=25, width=36),
}
