"""The accumulator presets as data: every real unit's settings with its source (docs/numerics.md section 6.1).

:data:`PRESET_FIELDS` maps each preset's name to the :class:`~mxsim.options.accumulate.Accumulator`
fields it sets, :data:`PRESET_ALIASES` other names for the same configuration, :data:`PRESET_SOURCES`
each name (aliases included) to the design or library it reproduces and where that is measured;
:func:`presets_text` is the CLI's ``--help`` listing. A preset is added here and nowhere else.

The presets are plain field values, so this module imports nothing from
:mod:`mxsim.options.accumulate`: that module reads this table and builds
:data:`mxsim.options.accumulate.PRESETS` (name -> a validated, frozen Accumulator; also
``mxsim.options.PRESETS``) right below the class, which its ``preset`` and ``resolve`` look names up
in. Data below, objects above: no import cycle, no registration by side effect, and a preset that
names a bad value fails when mxsim is imported.
"""

from __future__ import annotations

__all__ = ["PRESET_FIELDS", "PRESET_ALIASES", "PRESET_SOURCES", "presets_text"]

_OCP_FP8 = ("fp8_e4m3", "fp8_e5m2")
_FNUZ_FP8 = ("fp8_e4m3fnuz", "fp8_e5m2fnuz")
_NVIDIA_FP8 = {
    "mode": "aligned", "frac_bits": 13, "accumulate": "fused", "step": 32, "output": "fp32_e8m13",
    "output_rounding": "rtz", "nan_bits": 0x7FFFFFFF, "elements": _OCP_FP8,
}
# NVIDIA's fp16 D (contract 6.1): RNE, NaN 0x7FFF; measured on an H200 (wgmma and mma.sync): C is fp16 and reads
# with fp16's exponents (a subnormal C counts with -14), and a nonzero result that rounds to zero is +0. Ada's and
# RTX Blackwell's fp16 D are assumed to do the same (not measured).
_FP16_D = {"output": "fp16", "output_rounding": "rne", "nan_bits": 0x7FFF, "c_min_exponent": -14,
           "zero_sign": "plus"}
# Hopper's mma.sync FP8 (contract 6.1): FP8 -> fp16, two HMMA (F = 25, truncate, toward zero) over k = 0,1 and
# k = 2,3 mod 4 from +0, then C added in the D's format (promotion every 32 products)
_HOPPER_MMA = {
    "mode": "aligned", "frac_bits": 25, "accumulate": "fused", "step": 16, "output_rounding": "rtz",
    "nan_bits": 0x7FFFFFFF, "elements": _OCP_FP8, "convert_elements": "fp16", "interleave_steps": 2,
    "interleave_run": 2, "promote_every": 32,
}
_BLACKWELL = {
    "mode": "aligned", "frac_bits": 25, "accumulate": "fused", "step": 32, "output_rounding": "rtz",
    "nan_bits": 0x7FFFFFFF, "c_zero_exponent": -126,
}
_MXDOTP = {
    "mode": "aligned", "frac_bits": 34, "accumulate": "fused", "anchor": "fixed", "bypass": 70,
    "c_zero_exponent": -127, "output_overflow": "ieee", "zero_product_sum": "pass_c_outside_window",
    "mixed_elements": False,
}
_BF16_D = {"output": "bf16"}  # MXDOTP's BF16 destination: the instruction's rounding, NaN 0x7FC0 (bf16's quiet NaN)

# Every preset: (name, configuration, source). A preset fixes the unit's output type: a unit with two D
# types has one preset per type (suffix _f16 / _bf16), which sets the rounding and NaN pattern of that D
# (an `output` override alone would keep the other type's); aliases name the same configuration.
_PRESET_LIST: list[tuple[str, dict, str]] = [
    ("fp32_per_block", dict(),
     "the contract's defaults: exact block sums rounded to fp32, added in fp32 in block order (OCP MX v1.0 6.2 "
     "DotGeneral with sequential order; docs/numerics.md section 4)"),
    ("exact", dict(across_blocks="exact"), "the mathematical OCP Dot/DotGeneral (6.1/6.2), rounded once"),
    ("fp32_fma", dict(mode="fp32_sequential"),
     "a chain of fp32 FMAs over the exact products (TOSA 1.1 pseudocode), fp32 across blocks"),
    ("hopper_fp8_like", dict(mode="aligned", frac_bits=13, width=24),
     "approximation from published descriptions of Hopper FP8 (DeepSeek-V3 report 3.3; SageAttention2 'FP22'): "
     "aligned to the largest exponent, 13 fraction bits, truncated; not a measured model"),
    ("blackwell_fp8_like", dict(mode="aligned", frac_bits=25, width=36),
     "approximation of Blackwell f8f6f4 from DeepGEMM issue #176 (about 25 bits); not a measured model"),
    ("hopper_fp8_wgmma", dict(**_NVIDIA_FP8),
     "NVIDIA Hopper FP8 wgmma, fp32 D: one fused step of 32 E4M3/E5M2 products, F = 13, truncate, fp32_e8m13 toward "
     "zero, NaN 0x7FFFFFFF (MMA-Sim, validated on H100/H800, arXiv:2511.10909; contract 6.1); no block scales: use "
     "scales of 1"),
    ("hopper_fp8_wgmma_f16", dict(**{**_NVIDIA_FP8, **_FP16_D}),
     "NVIDIA Hopper FP8 wgmma with an fp16 D: as hopper_fp8_wgmma, the step sum rounded to fp16 nearest-even, NaN "
     "0x7FFF, overflow to Inf; C is fp16: a subnormal C counts with exponent -14, and a nonzero sum that rounds to "
     "zero is +0 (measured on an H200, 2026-11-28: every vector of the four E4M3/E5M2 pairs; contract 6.1)"),
    ("hopper_fp8_cublas", dict(**_NVIDIA_FP8, promote_every=128),
     "NVIDIA Hopper FP8 GEMM with promotion every 128 products: hopper_fp8_wgmma chains restarted from +0 every 128 "
     "products, each partial D added to an fp32 register (RNE, NaN 0x7FFFFFFF) that starts at C; cuBLASLt's default "
     "(torch._scaled_mm with use_fast_accum=False), measured on an H200 (2026-11-28, driver 580.159, CUDA 13, torch "
     "2.11: bit for bit at K = 32 to 4,096; contract 4.1, 6.1); Triton's max_num_imprecise_acc=N is promote_every=N "
     "on hopper_fp8_wgmma; use scales of 1"),
    ("hopper_fp8_mma", dict(**_HOPPER_MMA),
     "NVIDIA Hopper (sm_90) FP8 mma.sync.m16n8k32, fp32 D: not a native instruction; the SASS unpacks the E4M3/E5M2 "
     "operands to fp16 (F2FP.F16.E4M3/E5M2.UNPACK_B; a product's anchor reads the fp16 exponents), runs two "
     "HMMA.16816.F32 chained from +0 (the first over k = 0, 1 mod 4, the second over k = 2, 3 mod 4; Hopper's HMMA: "
     "F = 25, truncate, fp32 toward zero) and adds C with an FADD (fp32 nearest-even): promote_every=32. Measured on "
     "an H200 (2026-11-28, CUDA 13: every E4M3/E5M2 pair bit for bit; contract 6.1); use scales of 1"),
    ("hopper_fp8_mma_f16", dict(**{**_HOPPER_MMA, **_FP16_D}),
     "NVIDIA Hopper FP8 mma.sync.m16n8k32 with an fp16 D: as hopper_fp8_mma with two HMMA.16816.F16 (each D rounded "
     "to fp16 nearest-even, overflow to Inf, NaN 0x7FFF; a subnormal fp16 C reads exponent -14, a nonzero sum that "
     "rounds to zero is +0) and C added by an HADD (fp16 nearest-even). Measured on an H200 (every pair bit for bit; "
     "contract 6.1); use scales of 1"),
    ("ada_fp8_mma", dict(**{**_NVIDIA_FP8, "step": 16}),
     "NVIDIA Ada Lovelace FP8 mma.sync m16n8k32 (sm_89), fp32 D: two fused steps of 16 (split-k), F = 13, truncate, "
     "fp32_e8m13 toward zero, NaN 0x7FFFFFFF (contract 6.1); no block scales: use scales of 1"),
    ("ada_fp8_mma_f16", dict(**{**_NVIDIA_FP8, "step": 16, **_FP16_D}),
     "NVIDIA Ada Lovelace FP8 mma.sync with an fp16 D: two fused steps of 16, F = 13, fp16 nearest-even, NaN 0x7FFF, "
     "overflow to Inf (contract 6.1); below fp16's normal range assumed as Hopper's fp16 D (a subnormal C at -14, "
     "+0 for a sum rounding to zero; not measured)"),
    ("blackwell_mxf8f6f4", dict(**_BLACKWELL, elements=_OCP_FP8 + ("fp6_e3m2", "fp6_e2m3", "fp4_e2m1")),
     "NVIDIA Blackwell tcgen05.mma kind::mxf8f6f4 (MMA-Sim, validated on B200): 32 E4M3/E5M2/E3M2/E2M3/E2M1 products "
     "(mixed allowed) with E8M0 scales per 32, F = 25, truncate, fp32 toward zero, NaN 0x7FFFFFFF, zero C at -126"),
    ("blackwell_mxf4nvf4", dict(**{**_BLACKWELL, "frac_bits": 35, "step": 64}, step_terms="block",
                                       term_size=16, elements=("fp4_e2m1",)),
     "NVIDIA Blackwell kind::mxf4nvf4: 64 E2M1 products, each group of 16 times its two scale significands (UE8M0 "
     "per 32 or 16, or UE4M3 per 16) one term, F = 35, otherwise as blackwell_mxf8f6f4"),
    ("rtx_blackwell_f8f6f4", dict(**_BLACKWELL, elements=_OCP_FP8 + ("fp4_e2m1",)),
     "NVIDIA RTX Blackwell (sm_120a) mma.sync kind f8f6f4 without scales, fp32 D: one fused step of 32 "
     "E4M3/E5M2/E2M1 products, F = 25, truncate, fp32 toward zero, NaN 0x7FFFFFFF (contract 6.1); use scales of 1"),
    ("rtx_blackwell_f8f6f4_f16", dict(**{**_BLACKWELL, **_FP16_D}, elements=_OCP_FP8 + ("fp4_e2m1",)),
     "NVIDIA RTX Blackwell mma.sync kind f8f6f4 with an fp16 D: as rtx_blackwell_f8f6f4, fp16 nearest-even, NaN "
     "0x7FFF, overflow to Inf (contract 6.1); below fp16's normal range assumed as Hopper's fp16 D (a subnormal C at "
     "-14, +0 for a sum rounding to zero; not measured)"),
    ("mxdotp_fp8", dict(**_MXDOTP, step=8, elements=_OCP_FP8),
     "MXDOTP (pulp cvfpu fpnew_mxdotp_multi; arXiv:2505.13159), FP8, fp32 destination: 8 products per step sharing "
     "one E8M0 scale per operand, exact on the grid 2^(XA+XB-34), C aligned exactly, bypass beyond 70 bits (a zero C "
     "reads exponent field 0: -127), one rounding with the instruction's mode (override output_rounding: rne, rtz, "
     "rdn, rup, rna), IEEE overflow; a zero product sum passes C (-0 kept) only where C lies wholly below the grid "
     "(C's LSB more than 24 bits below it) or is bypassed, elsewhere C + 0 gives +0 for a zero C (contract 4.1, 6.1)"),
    ("mxdotp_fp8_bf16", dict(**_MXDOTP, step=8, elements=_OCP_FP8, **_BF16_D),
     "MXDOTP multi-format (cvfpu fpnew_mxdotp_multi_modules), FP8 with a BF16 destination: as mxdotp_fp8, one "
     "rounding to bf16, NaN 0x7FC0 (contract 6.1)"),
    ("mxdotp_fp6", dict(**_MXDOTP, step=11, elements=("fp6_e3m2", "fp6_e2m3")),
     "MXDOTP multi-format, FP6 (E3M2 or E2M3), fp32 destination: steps of 11 products (66 operand bits), each block "
     "of 32 as 11 + 11 + 10, otherwise as mxdotp_fp8 (contract 6.1)"),
    ("mxdotp_fp6_bf16", dict(**_MXDOTP, step=11, elements=("fp6_e3m2", "fp6_e2m3"), **_BF16_D),
     "MXDOTP multi-format, FP6 with a BF16 destination (contract 6.1)"),
    ("mxdotp_fp4", dict(**_MXDOTP, step=16, elements=("fp4_e2m1",)),
     "MXDOTP multi-format, FP4 (E2M1), fp32 destination: steps of 16 products, otherwise as mxdotp_fp8 (contract 6.1)"),
    ("mxdotp_fp4_bf16", dict(**_MXDOTP, step=16, elements=("fp4_e2m1",), **_BF16_D),
     "MXDOTP multi-format, FP4 with a BF16 destination (contract 6.1)"),
    ("mxdotp_int8", dict(**_MXDOTP, step=8, elements=("int8",), int_elements="integer"),
     "MXDOTP multi-format, INT8, fp32 destination: steps of 8 whose elements are plain integers (the product of two "
     "codes, times 2^(XA+XB), with no 2^-6 per element), otherwise as mxdotp_fp8 (contract 6.1)"),
    ("mxdotp_int8_bf16", dict(**_MXDOTP, step=8, elements=("int8",), int_elements="integer", **_BF16_D),
     "MXDOTP multi-format, INT8 with a BF16 destination (contract 6.1)"),
    ("cdna3_fp8_mfma", dict(
        mode="aligned", frac_bits=24, accumulate="fused", step=16, partial_sums=2, sum_rounding="floor",
        sum_frac_bits=31, c_frac_bits=24, c_drop=25, zero_exponent=-126, c_zero_exponent=-126, elements=_FNUZ_FP8),
     "AMD CDNA3 (MI300) v_mfma_f32_{16x16x32,32x32x16}_{fp8,bf8}_{fp8,bf8}: steps of 16 FNUZ E4M3/E5M2 products "
     "(any pair), even- and odd-indexed products summed apart (each cut toward zero to 2^(e_h - 24)), the halves "
     "cut to 2^(E - 24) with floor, C joins: E' = max(E, e_C), the sum cut to 2^(E' - 31) and C to 2^(E' - 24) with "
     "floor, C dropped below E' - 25, fp32 nearest-even (MMA-Sim amd_fused_dot_rd_add, validated on MI300; "
     "contract 6.1); a zero element reads exponent -126; no block scales: use scales of 1"),
]
#: Aliases: another name for the same configuration (the same Accumulator object in PRESETS).
PRESET_ALIASES: dict[str, str] = {
    # RTX Blackwell's mma.sync block_scale kinds behave exactly as Blackwell's (contract 6.1)
    "rtx_blackwell_mxf8f6f4": "blackwell_mxf8f6f4",
    "rtx_blackwell_mxf4nvf4": "blackwell_mxf4nvf4",
}
#: The Accumulator fields of every preset but the aliases (the defaults for the fields not named).
PRESET_FIELDS: dict[str, dict] = {name: fields for name, fields, _ in _PRESET_LIST}
#: The source of every preset, aliases included: the real design or library it reproduces, and where that
#: is measured.
PRESET_SOURCES: dict[str, str] = {name: source for name, _, source in _PRESET_LIST}
for _alias, _name in PRESET_ALIASES.items():
    PRESET_SOURCES[_alias] = (
        f"alias of {_name}: NVIDIA RTX Blackwell (sm_120a) mma.sync block_scale kind, which behaves exactly as "
        "Blackwell's (contract 6.1)"
    )


def presets_text() -> str:
    """One line per preset (aliases included), for ``--help``: the name and its source."""
    return "\n".join(f"{name}: {source}" for name, source in PRESET_SOURCES.items())
