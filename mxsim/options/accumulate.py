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
  A result whose rounding (with unbounded exponent) exceeds the output's largest finite value
  follows ``output_overflow`` (default: +-Inf in every rounding mode, as the contract says).
* ``across_blocks``: ``fp32`` (each block result is rounded to the output format, then added in
  block order into an fp32 register, each addition nearest-even; the sum is converted to the
  output format) | ``exact`` (the exact block values are summed and rounded once).
* ``output_overflow`` (both accumulations): ``inf`` (any overflow gives +-Inf: the default, and
  what every earlier version did) | ``ieee`` (+-max finite where the rounding direction is toward
  zero for that sign: ``rtz``, ``rup`` of a negative, ``rdn`` of a positive; else +-Inf) |
  ``saturate`` (+-max finite).
* ``nan_bits``: the bit pattern of a NaN result; None = the output format's canonical quiet NaN
  (fp32 0x7FC00000). NVIDIA's tensor cores give 0x7FFFFFFF.

Fused multiply-accumulate steps (contract section 4.1; ``accumulate="fused"``, with
``mode="aligned"`` and ``frac_bits`` F):

* ``accumulate``: ``separate`` (the model above; a caller's accumulator input C is the first term
  of the fp32 sum) | ``fused``: D = C + sum of ``step`` products in one multi-term adder, rounded
  once to ``output``; each step's D is the next step's C.
* ``step``: products per step (None = the block size); it divides the block size or is a
  multiple of it. A last step may be partial.
* ``step_terms``: ``product`` (every product is a term, exponent Ea + Eb + XA + XB) | ``block``
  (each group of ``term_size`` consecutive products of one scale block is summed exactly and
  multiplied by the significands of its two scales: one term of exponent XA + XB).
* ``term_size``: products per term with ``step_terms="block"`` (None = the block size); it
  divides the block size and the step.
* ``anchor``: ``max`` (the largest term exponent, C's included; every term is cut to the grid
  2^(anchor - F) by ``shift_rounding``) | ``fixed`` (products on the grid 2^(XA + XB - F), C
  aligned exactly; needs a step inside one scale block).
* ``bypass`` (``fixed`` only): if C's LSB 2^(e_C - 23) lies more than ``bypass`` bits above the
  grid's LSB, D = C unchanged; None = never.
* ``c_zero_exponent``: the exponent e_C a zero C counts with (anchor and bypass); None = -126,
  the exponent fp32's encoding gives its zeros and subnormals (Blackwell); MXDOTP reads the raw
  exponent field: -127.
* ``output`` adds ``fp32_e8m13``: an fp32 word whose value is cut to 13 fraction bits (Hopper).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..formats import get_format
from .spec import Flag, IntRange, check_choice, option, options_from_kwargs, options_of, validate_fields

__all__ = ["Accumulator", "PRESETS", "OUTPUT_ROUNDING_MODES", "FP32_EMIN", "MAX_FRAC_BITS", "MAX_WIDTH"]

OUTPUT_ROUNDING_MODES = ("rne", "rna", "rtz", "rup", "rdn")
MAX_FRAC_BITS = 4096
MAX_WIDTH = 8192
FP32_EMIN = -126  # the exponent fp32's encoding gives its zeros and subnormals
MAX_STEP = 1 << 20


@dataclass(frozen=True)
class Accumulator:
    """A dot-product datapath configuration (see the module docstring for every field)."""

    mode: str = option(
        "exact", ("exact", "aligned", "fp32_sequential"),
        "`exact` unbounded integer sum; `aligned` fixed-point register; `fp32_sequential` fp32 FMA chain", "4",
    )
    frac_bits: int | None = option(
        None, IntRange(0, MAX_FRAC_BITS, "only without mode='aligned'"),
        "F: the register LSB weighs 2^(anchor - F) (`aligned` only, required there)", "4, 4.1",
    )
    width: int | None = option(
        None, IntRange(2, MAX_WIDTH, "unbounded"), "W: register bits, sign included (`aligned` only; `None` = unbounded)", "4"
    )
    shift_rounding: str = option(
        "truncate", ("truncate", "rne"), "product bits below the register LSB: `truncate` (toward zero) or `rne`", "4"
    )
    overflow: str = option(
        "saturate", ("saturate", "wrap"), "register overflow: `saturate` after each addition, or `wrap` modulo 2^W", "4"
    )
    output: str = option(
        "fp32", ("fp32", "bf16", "fp16", "fp32_e8m13"),
        "result format; `fp32_e8m13`: an fp32 word whose value is cut to 13 fraction bits", "4, 4.1",
    )
    output_rounding: str = option(
        "rne", OUTPUT_ROUNDING_MODES, "rounding of the block (and DotGeneral) result to the output format", "4"
    )
    ftz: bool = option(False, Flag(), "a result that rounds to a subnormal becomes a zero of its sign", "4")
    across_blocks: str = option(
        "fp32", ("fp32", "exact"),
        "`fp32`: each block rounded, then added in block order in fp32 (RNE); `exact`: exact sum, one rounding", "4",
    )
    output_overflow: str = option(
        "inf", ("inf", "ieee", "saturate"),
        "`inf`: ±Inf; `ieee`: ±max where the rounding is toward zero for the sign, else ±Inf; `saturate`: ±max", "4.1",
    )
    nan_bits: int | None = option(
        None, IntRange(0, (1 << 32) - 1, "the output's canonical quiet NaN"),
        "bit pattern of a NaN result (NVIDIA tensor cores: 0x7FFFFFFF)", "4.1",
    )
    accumulate: str = option(
        "separate", ("separate", "fused"),
        "`separate`: blocks rounded then added in fp32; `fused`: D = C + step products in one adder, D -> next C",
        "4.1",
    )
    step: int | None = option(
        None, IntRange(1, MAX_STEP, "the block size"), "products per fused step; divides or is a multiple of the block",
        "4.1",
    )
    step_terms: str = option(
        "product", ("product", "block"),
        "fused terms: every `product`, or each `block` group's exact sum times its scale significands", "4.1",
    )
    term_size: int | None = option(
        None, IntRange(1, MAX_STEP, "the block size"), "products per term with `step_terms='block'`", "4.1"
    )
    anchor: str = option(
        "max", ("max", "fixed"),
        "`max`: grid 2^(largest term exponent - F); `fixed`: products exact on 2^(XA+XB-F), C aligned exactly",
        "4.1",
    )
    bypass: int | None = option(
        None, IntRange(0, MAX_FRAC_BITS, "never"),
        "`fixed` only: D = C when C's LSB lies more than this many bits above the grid", "4.1",
    )
    c_zero_exponent: int | None = option(
        None, IntRange(-MAX_FRAC_BITS, MAX_FRAC_BITS, "-126, fp32's"),
        "the exponent a zero C counts with (anchor, bypass); MXDOTP reads field 0 as -127", "4.1",
    )

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.mode == "aligned":
            if self.frac_bits is None:
                raise ValueError(
                    f"frac_bits=None is not allowed; mode='aligned' needs an integer in [0, {MAX_FRAC_BITS}]"
                )
        else:
            for name in ("frac_bits", "width"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is only used with mode='aligned', not mode={self.mode!r}; leave it None"
                    )
        self._check_nan_bits()
        self._check_fused()

    def _check_nan_bits(self) -> None:
        if self.nan_bits is None:
            return
        out = get_format(self.output_storage, kind="float")
        bits = self.nan_bits
        if not (bits < 1 << out.width and bits & ~out.sign_mask > out.inf_code()):
            raise ValueError(
                f"nan_bits={bits!r} is not allowed; expected None or a {out.width}-bit NaN pattern of "
                f"{self.output_storage} (all exponent bits set, nonzero significand)"
            )

    def _check_fused(self) -> None:
        if self.accumulate == "separate":
            for name, default in _FUSED_ONLY.items():
                if getattr(self, name) != default:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is only used with accumulate='fused', not accumulate='separate'"
                    )
            return
        if self.mode != "aligned":
            raise ValueError(
                f"accumulate='fused' needs mode='aligned' (a fixed-point multi-term adder with frac_bits), "
                f"not mode={self.mode!r}"
            )
        if self.width is not None:
            raise ValueError(f"width={self.width!r} is not allowed with accumulate='fused': a step's terms add exactly; leave it None")
        if self.overflow != "saturate":
            raise ValueError(f"overflow={self.overflow!r} is not allowed with accumulate='fused': there is no W-bit register")
        if self.across_blocks != "fp32":
            raise ValueError(
                f"across_blocks={self.across_blocks!r} is not allowed with accumulate='fused': steps chain through C"
            )
        if self.term_size is not None and self.step_terms != "block":
            raise ValueError(f"term_size={self.term_size!r} is only used with step_terms='block'")
        if self.bypass is not None:
            if self.anchor != "fixed":
                raise ValueError(f"bypass={self.bypass!r} is only used with anchor='fixed', not anchor={self.anchor!r}")

    @classmethod
    def from_kwargs(cls, **kwargs) -> "Accumulator":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs, "accumulator ")

    @classmethod
    def preset(cls, name: str, **overrides) -> "Accumulator":
        """A named configuration from :data:`PRESETS`, with optional field overrides."""
        check_choice("preset", name, tuple(PRESETS))
        return replace(PRESETS[name], **overrides)

    def check_block_format(self, fmt_a, fmt_b) -> None:
        """Refuse fused settings that mean nothing for a pair of block formats (same block size):
        a ``step`` that neither divides nor is a multiple of the block size, a ``term_size`` that
        does not divide the block size and the step, ``anchor="fixed"`` with a step that spans
        scale blocks, product terms with scales that carry a significand (UE4M3)."""
        if self.accumulate != "fused":
            return
        k = fmt_a.block_size
        step = self.effective_step(k)
        if step % k and k % step:
            raise ValueError(f"step={step} is not allowed for block size {k}: it must divide {k} or be a multiple of it")
        if self.anchor == "fixed" and step > k:
            raise ValueError(
                f"step={step} is not allowed with anchor='fixed' and block size {k}: the fixed grid 2^(XA+XB-F) "
                "needs every step inside one scale block"
            )
        if self.step_terms == "block":
            size = self.effective_term_size(k)
            if k % size or step % size:
                raise ValueError(
                    f"term_size={size} is not allowed with block size {k} and step={step}: it must divide both"
                )
        else:
            for fmt in (fmt_a, fmt_b):
                if fmt.scale.kind == "float" and fmt.scale.mantissa_bits:
                    raise ValueError(
                        f"step_terms='product' is not allowed for {fmt.name!r}: its {fmt.scale.name} scales carry a "
                        "significand; use step_terms='block'"
                    )

    def as_separate(self) -> "Accumulator":
        """This configuration with separate accumulation: the fused-only fields at their defaults
        (what a fused unit's per-block Dots are reported with)."""
        return replace(self, accumulate="separate", **_FUSED_ONLY)

    def effective_step(self, block_size: int) -> int:
        """Products per fused step: ``step``, or the block size when it is None."""
        return block_size if self.step is None else self.step

    def effective_term_size(self, block_size: int) -> int:
        """Products per block term: ``term_size``, or the block size when it is None."""
        return block_size if self.term_size is None else self.term_size

    @property
    def effective_c_zero_exponent(self) -> int:
        """The exponent a zero C counts with: ``c_zero_exponent`` or fp32's -126."""
        return FP32_EMIN if self.c_zero_exponent is None else self.c_zero_exponent

    @property
    def output_storage(self) -> str:
        """The IEEE format results are stored in: ``output``, with fp32_e8m13 stored as fp32."""
        return "fp32" if self.output == "fp32_e8m13" else self.output

    @property
    def register_bound(self) -> int | None:
        """The largest magnitude the aligned register holds (2^(W-1)); None if unbounded."""
        return None if self.width is None else 1 << (self.width - 1)

    def as_dict(self) -> dict:
        return asdict(self)


_FUSED_ONLY = {o.name: o.default for o in options_of(Accumulator) if o.name in ("step", "step_terms", "term_size", "anchor", "bypass", "c_zero_exponent")}


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
    # Measured models of real units (conventions.md section 6.1), fused steps with C inside.
    # NVIDIA Hopper FP8 wgmma: 32 products per instruction, anchor at the largest exponent,
    # 13 fraction bits, truncation, the sum cut to fp32 with 13 fraction bits toward zero, NaN
    # 0x7FFFFFFF (MMA-Sim, validated on H100/H800, arXiv:2511.10909). Hopper has no block scales:
    # use block scales of 1 (E8M0 code 127).
    "hopper_fp8_wgmma": Accumulator(
        mode="aligned", frac_bits=13, accumulate="fused", step=32, output="fp32_e8m13", output_rounding="rtz",
        nan_bits=0x7FFFFFFF,
    ),
    # NVIDIA Blackwell tcgen05.mma kind::mxf8f6f4 (same source, validated on B200): 32 products of
    # E4M3/E5M2/E3M2/E2M3/E2M1 (mixed allowed) with E8M0 scales per 32, F = 25, truncation, fp32
    # toward zero, overflow to Inf, NaN 0x7FFFFFFF, a zero C with exponent -126.
    "blackwell_mxf8f6f4": Accumulator(
        mode="aligned", frac_bits=25, accumulate="fused", step=32, output_rounding="rtz", nan_bits=0x7FFFFFFF,
        c_zero_exponent=-126,
    ),
    # kind::mxf4nvf4: 64 E2M1 products per instruction; each group of 16 products times its two
    # scale significands (UE8M0 or UE4M3) is one term; F = 35; otherwise as mxf8f6f4.
    "blackwell_mxf4nvf4": Accumulator(
        mode="aligned", frac_bits=35, accumulate="fused", step=64, step_terms="block", term_size=16,
        output_rounding="rtz", nan_bits=0x7FFFFFFF, c_zero_exponent=-126,
    ),
    # MXDOTP (pulp cvfpu fpnew_mxdotp_multi, FP8; arXiv:2505.13159): 8 products per step sharing
    # one E8M0 scale per operand, exact on the fixed grid 2^(XA+XB-34), C aligned exactly, bypass
    # beyond 70 bits (a zero C reads exponent field 0: -127), one rounding to fp32 with the
    # instruction's rounding mode (override output_rounding: rne, rtz, rdn, rup, rna), IEEE overflow.
    "mxdotp_fp8": Accumulator(
        mode="aligned", frac_bits=34, accumulate="fused", step=8, anchor="fixed", bypass=70,
        c_zero_exponent=-127, output_overflow="ieee",
    ),
}
