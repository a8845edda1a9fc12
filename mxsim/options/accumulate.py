"""The dot-product accumulator configuration of the numerics contract (docs/numerics.md section 4).

One frozen :class:`Accumulator` carries every choice of the datapath model, is validated once,
and is read by both the reference model (:mod:`mxsim.ref.dot`) and the fast path
(:mod:`mxsim.fast.dot`); neither keeps defaults of its own.
The named presets are the table of :mod:`mxsim.options.presets` (plain field values and their
sources), built into :data:`PRESETS` below the class; the checks of the fused settings against a
pair of block formats live in :mod:`mxsim.options.accumulate_formats`.

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
* ``zero_product_sum``: a step whose product sum is exactly zero: ``add`` (C + 0, an exact zero
  D is +0) | ``pass_c`` (D = C, -0 kept) | ``pass_c_outside_window`` (``fixed`` only: D = C only
  where C's LSB lies more than 24 bits below the grid's LSB, else C + 0; MXDOTP; see
  :meth:`Accumulator.zero_sum_passes_c`).
* ``output`` adds ``fp32_e8m13``: an fp32 word whose value is cut to 13 fraction bits (Hopper).
* ``promote_every`` (N, products; None = no promotion): the fused chain restarts from +0 every N
  products, and each partial D (the last step's D of a group of N products) is added to an fp32
  register with IEEE 754 nearest-even (subnormals kept, -0 only for (-0) + (-0), overflow to
  +-Inf, NaN written as ``nan_bits``); the register starts at C (C enters it, not the first step)
  and is the result, an fp32 word (contract 4.1: how cuBLASLt and Triton keep FP8 accuracy on
  Hopper). N is a multiple of the step (of the block size where steps restart at every block),
  and the output must be stored as fp32, or be fp16: then the register is fp16 (C enters it rounded
  to fp16; each addition rounded to fp16 nearest-even: the HADD of Hopper's mma.sync with an fp16 D).
* ``convert_elements``: ``fp16`` (the unit converts the elements to fp16 before multiplying: a
  product's value is the same, but its anchor exponent is the sum of the elements' fp16 exponents,
  max(floor(log2 |x|), -14): an E4M3 subnormal reads its own exponent, not -6; Hopper's mma.sync).
* ``interleave_steps`` n and ``interleave_run`` r: every n consecutive steps share their n * step
  products, dealt to them in runs of r (run j to step j mod n; :meth:`Accumulator.product_order`);
  the group lies inside a scale block. Hopper's mma.sync FP8: n = 2, r = 2, steps of 16.
* ``c_min_exponent``: e_C = max(floor(log2 |C|), this) for a nonzero C (None: fp32's -126); an
  fp16 C reads with fp16's -14 (NVIDIA's fp16 D, measured on an H200).
* ``zero_sign``: ``keep`` (IEEE: a nonzero result that rounds or flushes to zero is a zero of its
  sign) | ``plus`` (+0: NVIDIA's fp16 D, measured on an H200).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

from ..formats import FloatFormat, get_format
from .spec import (
    Choice, Flag, IntRange, NameOrPattern, Names, check_choice, check_option_names, option, options_from_kwargs,
    options_of,
    validate_fields,
)
from .accumulate_formats import check_block_format
from .presets import PRESET_ALIASES, PRESET_FIELDS

__all__ = [
    "Accumulator", "PRESETS", "OUTPUT_ROUNDING_MODES", "FP32_EMIN", "MAX_FRAC_BITS", "MAX_WIDTH", "output_float_format",
]

OUTPUT_ROUNDING_MODES = ("rne", "rna", "rtz", "rup", "rdn")
MAX_FRAC_BITS = 4096
MAX_WIDTH = 8192
FP32_EMIN = -126  # the exponent fp32's encoding gives its zeros and subnormals
MAX_STEP = 1 << 20
MAX_PARTIAL_SUMS = 64
PROMOTE_TRIES = (32, 64, 128, 256)  # promote_every values check --explain tries (Triton's and cuBLASLt's)
C_WINDOW_BITS = 24  # pass_c_outside_window: C passes where its LSB lies more than this below the grid (MXDOTP)
SHIFT_ROUNDINGS = ("truncate", "rne", "floor")
# output="fp32_eXmY": the values of the IEEE-style float with X exponent bits (bias 2^(X-1) - 1) and Y
# fraction bits, subnormals included, stored as the fp32 words of those values (every one is an fp32 value)
_CUSTOM_OUTPUT = r"fp32_e([2-8])m([1-9]|1[0-9]|2[0-3])"


@lru_cache(maxsize=None)
@lru_cache(maxsize=64)
def output_float_format(name: str) -> FloatFormat:
    """The float format an ``output`` name rounds to: fp32, bf16, fp16 from the catalogue, or for
    ``fp32_eXmY`` the IEEE-style format with X exponent bits (bias 2^(X-1) - 1, emin 2 - 2^(X-1)),
    Y fraction bits, subnormals and IEEE specials (``fp32_e8m13`` is Hopper's: emin -126, smallest
    subnormal 2^-139). Its values are all fp32 values (X <= 8, Y <= 23). One object per name (kept:
    the reference reads it for every rounded step, and its decoders find their tables by identity)."""
    found = re.fullmatch(_CUSTOM_OUTPUT, name)
    if found is None:
        return get_format(name, kind="float")
    exponent_bits, mantissa_bits = int(found.group(1)), int(found.group(2))
    return FloatFormat(name, exponent_bits, mantissa_bits, (1 << (exponent_bits - 1)) - 1)


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
        "truncate", SHIFT_ROUNDINGS,
        "bits below the grid: `truncate` (toward zero), `rne`, or `floor` (toward -inf: an arithmetic right shift)",
        "4, 4.1",
    )
    overflow: str = option(
        "saturate", ("saturate", "wrap"), "register overflow: `saturate` after each addition, or `wrap` modulo 2^W", "4"
    )
    output: str = option(
        "fp32", NameOrPattern(
            ("fp32", "bf16", "fp16", "fp32_e8m13"), _CUSTOM_OUTPUT,
            "fp32_eXmY (X = 2..8 exponent bits, Y = 1..23 fraction bits: that float's values as fp32 words)",
        ),
        "result format; `fp32_eXmY`: an fp32 word holding a value of the float with X exponent and Y fraction bits "
        "(`fp32_e8m13`: Hopper's); without subnormals: add ftz=True", "4, 4.1",
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
    zero_product_sum: str = option(
        "add", ("add", "pass_c", "pass_c_outside_window"),
        "a step whose product sum is exactly zero: `add` (C + 0; an exact zero is +0), `pass_c` (D = C, -0 kept), or "
        "`pass_c_outside_window` (`anchor='fixed'`: D = C only where C lies wholly below the grid, its LSB more than "
        "24 bits below the grid's; elsewhere C + 0; MXDOTP)",
        "4.1, 6.1",
    )
    partial_sums: int = option(
        1, IntRange(1, MAX_PARTIAL_SUMS),
        "`anchor='max'`: products summed in this many interleaved partial sums (product i of a step into sum "
        "i mod n), each on its own anchor, then brought to the largest anchor with `sum_rounding` (CDNA3: 2)",
        "6.1",
    )
    sum_rounding: str = option(
        "truncate", SHIFT_ROUNDINGS,
        "how the partial sums, and the product sum and C when C joins late, are cut to their grids (CDNA3: floor)",
        "6.1",
    )
    sum_frac_bits: int | None = option(
        None, IntRange(0, MAX_FRAC_BITS, "C is a term of the adder"),
        "C joins after the products: E' = max(E, e_C), the product sum cut to 2^(E' - this) (CDNA3: 31)", "6.1",
    )
    c_frac_bits: int | None = option(
        None, IntRange(0, MAX_FRAC_BITS, "C is a term of the adder"),
        "C joining late is cut to the grid 2^(E' - this) (CDNA3: 24)", "6.1",
    )
    c_drop: int | None = option(
        None, IntRange(0, MAX_FRAC_BITS, "never"),
        "C joining late counts as zero when e_C < E' - this (CDNA3: 25)", "6.1",
    )
    zero_exponent: int | None = option(
        None, IntRange(-MAX_FRAC_BITS, MAX_FRAC_BITS, "a product with a zero element does not count for the anchor"),
        "`anchor='max'`: a zero element reads with this exponent and its products count for the anchor (CDNA3: -126)",
        "6.1",
    )
    promote_every: int | None = option(
        None, IntRange(1, MAX_STEP, "no promotion: the chain runs from C to the end", tries=PROMOTE_TRIES),
        "products per promotion: the fused chain restarts from +0 every N products and each partial D is added "
        "to a register (RNE; fp32, or fp16 for an fp16 output) that starts at C; the register is the result "
        "(cuBLASLt default: 128; Hopper mma.sync FP8: 32)", "4.1",
    )
    int_elements: str = option(
        "scaled", ("scaled", "integer"),
        "integer elements (MXINT8) in fused products: `scaled` q * 2^-6 (OCP), `integer` q itself (MXDOTP's INT8)",
        "6.1",
    )
    elements: tuple | None = option(
        None, Names("element format names", "any"),
        "the element formats the unit takes (the operands are refused otherwise)", "6.1", cli=False,
    )
    mixed_elements: bool = option(
        True, Flag(), "with `elements`: a and b may have different element formats", "6.1", cli=False,
    )
    convert_elements: str | None = option(
        None, Choice(("fp16",), "the elements as they are"),
        "fused products of elements converted to this format first (Hopper mma.sync FP8 -> fp16): the value is kept, "
        "the anchor exponent is the element's exponent there (an E4M3 subnormal reads floor(log2 |x|), not -6)", "6.1",
    )
    interleave_steps: int = option(
        1, IntRange(1, MAX_STEP),
        "fused: the products of this many consecutive steps are dealt to them in turn, in runs of `interleave_run` "
        "(Hopper mma.sync FP8: 2 steps of 16 take k = 0,1 mod 4 and k = 2,3 mod 4)", "6.1",
    )
    interleave_run: int = option(
        1, IntRange(1, MAX_STEP), "consecutive products dealt to one step at a time with `interleave_steps` > 1", "6.1",
    )
    c_min_exponent: int | None = option(
        None, IntRange(-MAX_FRAC_BITS, MAX_FRAC_BITS, "-126, fp32's"),
        "fused: the exponent e_C of a nonzero C is max(floor(log2 |C|), this): an fp16 C reads with fp16's -14 "
        "(NVIDIA fp16 D, measured on an H200)", "6.1",
    )
    zero_sign: str = option(
        "keep", ("keep", "plus"),
        "a nonzero result that rounds (or flushes) to zero: `keep` (IEEE: a zero of its sign) or `plus` (+0: "
        "NVIDIA's fp16 D, measured on an H200)", "6.1",
    )

    def __post_init__(self) -> None:
        if isinstance(self.elements, list):  # as a manifest's JSON gives it
            object.__setattr__(self, "elements", tuple(self.elements))
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
        out = output_float_format(self.output_storage)
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
        if self.promote_every is not None and self.output_storage not in ("fp32", "fp16"):
            raise ValueError(
                f"promote_every={self.promote_every!r} is not allowed with output={self.output!r}: the partial D are "
                "added to a register of the output's storage, fp32 (fp32 or fp32_eXmY) or fp16; leave it None"
            )
        if self.zero_product_sum == "pass_c_outside_window" and self.anchor != "fixed":
            raise ValueError(
                f"zero_product_sum='pass_c_outside_window' is only used with anchor='fixed' (C against the fixed grid "
                f"2^(XA+XB-F)), not anchor={self.anchor!r}; use 'add' or 'pass_c'"
            )
        self._check_late_join()
        if self.interleave_run > 1 and self.interleave_steps == 1:
            raise ValueError(f"interleave_run={self.interleave_run!r} is only used with interleave_steps > 1")
        if self.interleave_steps > 1:
            if self.step_terms != "product":
                raise ValueError(f"interleave_steps={self.interleave_steps!r} needs step_terms='product'")
            if self.step is not None and self.step % self.interleave_run:
                raise ValueError(
                    f"interleave_run={self.interleave_run!r} must divide step={self.step!r}: a step takes whole runs"
                )

    def _check_late_join(self) -> None:
        """The CDNA3 structure (contract 6.1): partial sums, C joining after the products."""
        late = self.sum_frac_bits is not None
        if (self.c_frac_bits is not None) != late:
            raise ValueError(
                f"sum_frac_bits={self.sum_frac_bits!r} and c_frac_bits={self.c_frac_bits!r}: give both (C joins after "
                "the products on its own grid) or neither (C is a term of the adder)"
            )
        if self.anchor != "max":
            for name in ("sum_frac_bits", "zero_exponent"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}={getattr(self, name)!r} is only used with anchor='max', not 'fixed'")
            if self.partial_sums != 1:
                raise ValueError(f"partial_sums={self.partial_sums!r} is only used with anchor='max', not 'fixed'")
        if self.c_drop is not None and not late:
            raise ValueError(
                f"c_drop={self.c_drop!r} is only used when C joins late (sum_frac_bits and c_frac_bits set)"
            )
        if self.partial_sums != 1:
            if not late:
                raise ValueError(
                    f"partial_sums={self.partial_sums!r} needs C to join after the products (sum_frac_bits and "
                    "c_frac_bits set), as in CDNA3"
                )
            if self.step_terms != "product":
                raise ValueError(f"partial_sums={self.partial_sums!r} needs step_terms='product'")
        if self.sum_rounding != "truncate" and self.partial_sums == 1 and not late:
            raise ValueError(
                f"sum_rounding={self.sum_rounding!r} is only used with partial_sums > 1 or when C joins late "
                "(sum_frac_bits set)"
            )

    @classmethod
    def from_kwargs(cls, **kwargs) -> "Accumulator":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs, "accumulator ")

    @classmethod
    def preset(cls, name: str, **overrides) -> "Accumulator":
        """A named configuration from :data:`PRESETS`, with optional field overrides."""
        check_choice("preset", name, tuple(PRESETS))
        return cls.resolve(PRESETS[name], **overrides)

    @classmethod
    def resolve(cls, spec: "Accumulator | str | None" = None, **overrides) -> "Accumulator":
        """The one way settings become an Accumulator (the API, the CLI and golden suites all call
        it): ``spec`` is None (the defaults), a preset name from :data:`PRESETS`, or an
        Accumulator; ``overrides`` are option fields laid over it. An unknown field is a
        ValueError naming it and listing the known ones, a bad value one naming the field and its
        allowed values (the dataclass checks every field it is built with)."""
        if isinstance(spec, str):
            check_choice("preset", spec, tuple(PRESETS))
            spec = PRESETS[spec]
        elif spec is not None and not isinstance(spec, cls):
            raise ValueError(
                f"accumulator must be an Accumulator, a preset name or None, not {type(spec).__name__} "
                f"(presets: {', '.join(PRESETS)})"
            )
        if spec is None:
            return cls.from_kwargs(**overrides)
        check_option_names(cls, overrides, "accumulator ")
        return replace(spec, **overrides) if overrides else spec

    def check_block_format(self, fmt_a, fmt_b) -> None:
        """Refuse fused settings that mean nothing for a pair of block formats (same block size):
        a ``step`` that neither divides nor is a multiple of the block size, a ``term_size`` that
        does not divide the block size and the step, ``anchor="fixed"`` with a step that spans
        scale blocks, product terms with scales that carry a significand (UE4M3)."""
        check_block_format(self, fmt_a, fmt_b)

    def product_order(self, block_size: int) -> tuple[int, ...] | None:
        """The products of a block in the order the steps take them (position -> index in the block),
        or None when that is index order: with ``interleave_steps`` n > 1 and ``interleave_run`` r,
        every n consecutive steps share their n * step products, run j (products j*r .. j*r + r - 1
        of the group) going to step j mod n (Hopper's mma.sync FP8: n = 2, r = 2, step 16: the first
        step takes k = 0, 1 mod 4, the second k = 2, 3 mod 4; contract 6.1)."""
        n, r = self.interleave_steps, self.interleave_run
        if n == 1:
            return None
        group = self.effective_step(block_size) * n
        order = []
        for start in range(0, block_size, group):
            for lane in range(n):
                for run in range(lane, group // r, n):
                    order += range(start + run * r, start + run * r + r)
        return tuple(order)

    def step_ranges(self, block_size: int, n_blocks: int) -> list[tuple[int, int]]:
        """The products [first, last) of every fused step of ``n_blocks`` blocks (contract 4.1):
        steps of ``step`` products in order; a step that does not divide the block size (and is
        smaller) restarts at every block, whose last step is partial (MXDOTP's FP6 steps of 11 in
        a block of 32: 11, 11, 10), since one instruction takes one scale per operand."""
        k, total = block_size, n_blocks * block_size
        step = self.effective_step(k)
        if step >= k or k % step == 0:
            return [(first, min(first + step, total)) for first in range(0, total, step)]
        return [(j * k + first, j * k + min(first + step, k)) for j in range(n_blocks) for first in range(0, k, step)]

    def step_count(self, block_size: int, n_blocks: int) -> int:
        """Fused steps of ``n_blocks`` blocks (partial steps count)."""
        step = self.effective_step(block_size)
        if step >= block_size or block_size % step == 0:
            return -(-n_blocks * block_size // step)
        return n_blocks * -(-block_size // step)

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

    def zero_sum_passes_c(self, c_shift):
        """Whether a step whose product sum is exactly zero gives D = C (its sign kept) rather than
        C + 0 (contract 4.1, 6.1), for C's LSB 2^(e_C - 23) lying ``c_shift`` bits above the grid's
        LSB (negative: below; e_C of a zero C is :attr:`effective_c_zero_exponent`): ``add`` never,
        ``pass_c`` always, ``pass_c_outside_window`` only where c_shift < -24 (C's 24 bits wholly
        below the grid: MXDOTP's ``result_is_accumulator``; above the window the bypass passes
        C). Either way a nonzero C gives D = C; the rule decides the sign of a zero D. ``c_shift``
        may be a NumPy array (the answer is then one, or a plain bool that broadcasts)."""
        if self.zero_product_sum == "add":
            return False
        if self.zero_product_sum == "pass_c":
            return True
        return c_shift < -C_WINDOW_BITS

    @property
    def effective_c_min_exponent(self) -> int:
        """The least exponent a nonzero C counts with: ``c_min_exponent`` or fp32's -126."""
        return FP32_EMIN if self.c_min_exponent is None else self.c_min_exponent

    @property
    def effective_c_zero_exponent(self) -> int:
        """The exponent a zero C counts with: ``c_zero_exponent`` or fp32's -126."""
        return FP32_EMIN if self.c_zero_exponent is None else self.c_zero_exponent

    @property
    def output_storage(self) -> str:
        """The IEEE format results are stored in: ``output``, with every ``fp32_eXmY`` stored as fp32."""
        return "fp32" if self.output.startswith("fp32_") else self.output

    @property
    def c_storage(self) -> str:
        """The IEEE format the accumulator input C is stored in (contract 4.1): a fused unit's C is
        the register its D feeds back, so the output's storage format (fp16 for an fp16-D
        instruction, bf16 for MXDOTP's BF16 destination, fp32 for fp32 and every ``fp32_eXmY``);
        separate accumulation starts its fp32 sum at C: fp32. The datapath reads C by its value
        (every bf16 and fp16 value is an fp32 value)."""
        return self.output_storage if self.accumulate == "fused" else "fp32"

    @property
    def register_bound(self) -> int | None:
        """The largest magnitude the aligned register holds (2^(W-1)); None if unbounded."""
        return None if self.width is None else 1 << (self.width - 1)

    def as_dict(self) -> dict:
        return asdict(self)


_FUSED_ONLY = {
    o.name: o.default for o in options_of(Accumulator) if o.name in (
        "step", "step_terms", "term_size", "anchor", "bypass", "c_zero_exponent", "zero_product_sum", "partial_sums",
        "sum_rounding", "sum_frac_bits", "c_frac_bits", "c_drop", "zero_exponent", "promote_every", "int_elements",
        "elements", "mixed_elements", "convert_elements", "interleave_steps", "interleave_run", "c_min_exponent",
        "zero_sign",
    )
}


#: Every named configuration (aliases included: the same Accumulator object), built from the table of
#: :mod:`mxsim.options.presets` (the definitions and their sources live there).
PRESETS: dict[str, Accumulator] = {name: Accumulator(**fields) for name, fields in PRESET_FIELDS.items()}
PRESETS.update({alias: PRESETS[name] for alias, name in PRESET_ALIASES.items()})
