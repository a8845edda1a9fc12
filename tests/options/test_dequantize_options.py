"""Dequantization to float32 / float16 / bfloat16 under DequantizeOptions (docs/numerics.md section 3.1),
checked against independent values: NumPy / ml_dtypes casts of the exact float64 value (float64
holds every MX value; NumPy's float64 -> float32 and -> float16 casts round once, nearest-even),
hand-worked words for overflow, saturation, flushing, NaN and the iDMA facts of section 6.1, and
the reference model (mxsim.ref.dequant) against the fast path (mxsim.fast.dequant) word for word.

Codes used below: E4M3 1.0 = 0x38, 1.75 = 0x3E, 448 = 0x7E, NaN = 0x7F / 0xFF, -0 = 0x80.
E5M2 1.0 = 0x3C, 57344 = 0x7B (max), 2^-16 = 0x01 (smallest subnormal), 0.75 * 2^-14 = 0x03,
Inf = 0x7C, NaN = 0x7D..0x7F / 0xFD..0xFF. E2M1 1.5 = 0x3. UE4M3 1.0 = 0x38. E8M0 2^E = E + 127,
NaN = 0xFF; int8_exponent 2^E = E mod 256 (0x7F = 2^127, 0x80 = 2^-128, 0xFF = 2^-1).
Words: fp32 max 0x7F7FFFFF, Inf 0x7F800000, qNaN 0x7FC00000; fp16 max 0x7BFF (65504), Inf
0x7C00, qNaN 0x7E00; bf16 max 0x7F7F, Inf 0x7F80, qNaN 0x7FC0.
"""

from __future__ import annotations

import json
import zlib
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxsim
from mxsim import DequantizeOptions
from mxsim.options.dequantize import IDMA_DEQUANTIZE, OUTPUTS, options_for, output_name, per_output
from mxsim.fast.dequant import WORD_DTYPES, dequantize_blocks_bits
from mxsim.ref.stored_block import QuantizedBlock, dequantize_block
from mxsim.ref.dequant import dequantize_block_bits
from mxsim.ref.scale_code import decode_scale, scale_code_exponent
from mxsim.tensor_pack import dequantize_packed, pack

BLOCK_FORMATS = mxsim.format_names("block")
E8M0_FORMATS = [n for n in BLOCK_FORMATS if mxsim.get_format(n).scale.name == "e8m0"]
HALF_OUTPUTS = ("float32", "float16", "bfloat16")
OPTION_SETS = [
    DequantizeOptions(),
    DequantizeOptions(dequant_overflow="saturate"),
    DequantizeOptions(dequant_ftz=True, dequant_nan="canonical"),
    DequantizeOptions(dequant_overflow="saturate", dequant_ftz=True, dequant_nan="canonical"),
]
CAST = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


# ------------------------------------------------------------------------------------------------
# Helpers: one block through both layers


def one_block(fmt, codes, scale, subscales=(), tensor_scale=None):
    fmt = mxsim.get_format(fmt)
    codes = list(codes) + [0] * (fmt.block_size - len(codes))
    subscales = tuple(subscales) or (0,) * fmt.subblocks
    return QuantizedBlock(scale, subscales, tuple(codes))


def ref_words(fmt, block, output, options=DequantizeOptions(), tensor_scale=None, encoding="e8m0"):
    return dequantize_block_bits(block, fmt, output, options, tensor_scale, encoding)


def fast_words(fmt, blocks, output, options=DequantizeOptions(), tensor_scale=None, encoding="e8m0"):
    fmt = mxsim.get_format(fmt)
    scales = np.array([b.scale for b in blocks], dtype=np.uint8)
    codes = np.array([b.codes for b in blocks], dtype=np.uint8 if fmt.element.width <= 8 else np.uint16)
    subscales = np.array([b.subscales for b in blocks], dtype=np.uint8) if fmt.subblocks else None
    return dequantize_blocks_bits(scales, subscales, codes, fmt, output, options, tensor_scale, encoding)


def both(fmt, codes, scale, output, options=DequantizeOptions(), tensor_scale=None, encoding="e8m0", subscales=()):
    """The words of one block from the reference and the fast path, which must agree."""
    block = one_block(fmt, codes, scale, subscales)
    expected = ref_words(fmt, block, output, options, tensor_scale, encoding)
    got = fast_words(fmt, [block], output, options, tensor_scale, encoding)[0].tolist()
    assert got == expected
    return expected[: len(codes)]


# ------------------------------------------------------------------------------------------------
# DequantizeOptions and the per-output choice


def test_defaults_and_as_dict():
    assert DequantizeOptions().as_dict() == {
        "dequant_overflow": "inf",
        "dequant_ftz": False,
        "dequant_nan": "keep_sign",
    }
    assert DequantizeOptions().is_default and not DequantizeOptions(dequant_ftz=True).is_default


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("dequant_overflow", "clamp", "inf, saturate"),
        ("dequant_nan", "quiet", "keep_sign, canonical"),
        ("dequant_ftz", 1, "True or False"),
    ],
)
def test_validation_names_field_and_allowed_values(field, value, allowed):
    with pytest.raises(ValueError, match=f"{field}={value!r} is not allowed.*{allowed}"):
        DequantizeOptions(**{field: value})


def test_unknown_option_is_named():
    with pytest.raises(ValueError, match="unknown dequantize option.*dequant_flush.*known options: dequant_overflow"):
        DequantizeOptions.from_kwargs(dequant_flush=True)


@pytest.mark.parametrize(
    "spelling, name",
    [
        ("fp32", "float32"),
        ("Float16", "float16"),
        ("half", "float16"),
        ("bf16", "bfloat16"),
        (np.float32, "float32"),
        (np.dtype(np.float16), "float16"),
        (ml_dtypes.bfloat16, "bfloat16"),
        ("float64", "float64"),
    ],
)
def test_output_names(spelling, name):
    assert output_name(spelling) == name


@pytest.mark.parametrize("bad", ["int8", np.int32, "fp8_e4m3", 3, None])
def test_bad_output_is_named(bad):
    """None too: NumPy reads dtype None as float64, which would silently replace the default float32."""
    with pytest.raises(
        ValueError, match="dtype=.* is not allowed; expected one of: float32, float16, bfloat16, float64"
    ):
        output_name(bad)


def test_options_per_output_type():
    profile = {"fp32": DequantizeOptions(dequant_ftz=True), np.float16: {"dequant_nan": "canonical"}}
    assert options_for("float32", profile) == DequantizeOptions(dequant_ftz=True)
    assert options_for("float16", profile) == DequantizeOptions(dequant_nan="canonical")
    assert options_for("bfloat16", profile) == DequantizeOptions()  # not named: the defaults
    assert options_for("float32", profile, dequant_ftz=False).is_default  # keywords override the entry
    assert options_for("float16", DequantizeOptions(dequant_overflow="saturate")).dequant_overflow == "saturate"
    with pytest.raises(ValueError, match="given twice"):
        per_output({"fp32": DequantizeOptions(), "float32": DequantizeOptions()})
    with pytest.raises(ValueError, match="'dequant_ftz' is a DequantizeOptions field, not an output type"):
        options_for("float32", {"dequant_ftz": True})
    with pytest.raises(ValueError, match="options must be DequantizeOptions or a mapping"):
        options_for("float32", "saturate")
    with pytest.raises(ValueError, match="unknown dequantize option"):
        options_for("float32", None, dequant_overflw="saturate")


def test_idma_profile_is_the_contract_fact():
    # docs/numerics.md section 6.1: FP32 output with dequant_ftz, dequant_overflow='saturate' and
    # dequant_nan='canonical'; FP16 output with the defaults except dequant_nan='canonical'
    assert IDMA_DEQUANTIZE["float32"].as_dict() == {
        "dequant_overflow": "saturate",
        "dequant_ftz": True,
        "dequant_nan": "canonical",
    }
    assert IDMA_DEQUANTIZE["float16"].as_dict() == {
        "dequant_overflow": "inf",
        "dequant_ftz": False,
        "dequant_nan": "canonical",
    }


# ------------------------------------------------------------------------------------------------
# Scale bytes: one function, two encodings


def test_scale_encodings():
    # e8m0: byte = E + 127, 0xFF NaN; int8_exponent: byte = E in two's complement, no NaN
    assert [scale_code_exponent(c) for c in (0x00, 0x7F, 0xFE, 0xFF)] == [-127, 0, 127, None]
    assert [scale_code_exponent(c, "int8_exponent") for c in (0x00, 0x7F, 0x80, 0xFF)] == [0, 127, -128, -1]
    assert decode_scale(0x80, "e8m0", "int8_exponent").magnitude == Fraction(1, 2**128)
    assert decode_scale(0x38, "ue4m3").magnitude == 1
    with pytest.raises(ValueError, match="scale_encoding='int8_exponent' is not allowed for a 'ue4m3' scale"):
        decode_scale(0x38, "ue4m3", "int8_exponent")
    with pytest.raises(ValueError, match="scale_encoding='e4m3' is not allowed; expected one of: e8m0, int8_exponent"):
        scale_code_exponent(0, "e4m3")


# ------------------------------------------------------------------------------------------------
# Rounding: the exact value rounded once, against NumPy / ml_dtypes casts


def random_tensor(name, rng, n_blocks=48):
    """An MXTensor of random codes (every code, NaN and Inf included) and scales biased toward
    the edges of fp16 / bf16 / fp32 (E8M0 exponents around -140..-100, -30..30, 100..127)."""
    fmt = mxsim.get_format(name)
    k = fmt.block_size
    codes = rng.integers(0, 1 << fmt.element.width, n_blocks * k)
    if fmt.scale.name == "e8m0":
        exponents = rng.choice(np.r_[-127:-100, -30:30, 100:128], n_blocks)
        scales = np.where(rng.random(n_blocks) < 0.05, 0xFF, exponents + 127)
    else:
        scales = rng.integers(0, 0x80, n_blocks)
    subscales = rng.integers(0, 2, (n_blocks, fmt.subblocks)) if fmt.subblocks else None
    tensor_scale = Fraction(2) ** int(rng.integers(-20, 20)) if fmt.tensor_scale is not None else None
    return mxsim.MXTensor.from_codes(scales, codes, name, subscales=subscales, tensor_scale=tensor_scale)


def as_float64(x) -> float:
    """An Exact as a float64 (exact: float64 holds every MX value), -0, Inf and NaN included."""
    if x.is_nan:
        return float("nan")
    magnitude = float("inf") if x.is_inf else float(x.magnitude)
    return -magnitude if x.sign else magnitude


def exact_values(t) -> np.ndarray:
    """float64 values from the reference model's Fractions (no fast path involved)."""
    fmt, k = t.fmt, t.fmt.block_size
    out = []
    for i, scale in enumerate(t.scales.reshape(-1).tolist()):
        subs = tuple(t.subscales.reshape(-1, fmt.subblocks)[i].tolist()) if fmt.subblocks else ()
        block = QuantizedBlock(scale, subs, tuple(t.codes.reshape(-1, k)[i].tolist()))
        out += [as_float64(x) for x in dequantize_block(block, fmt, t.tensor_scale)]
    return np.array(out)


def seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


@pytest.mark.parametrize("output", HALF_OUTPUTS)
@pytest.mark.parametrize("name", BLOCK_FORMATS)
def test_default_rounding_matches_numpy_and_ml_dtypes_casts(name, output):
    t = random_tensor(name, np.random.default_rng(seed(name, output)))
    exact = exact_values(t)
    finite = np.isfinite(exact)
    # every value in float32's range is exact in float32 (NVFP4's tensor scale is a power of two)
    # and the others overflow bfloat16 too, so even ml_dtypes' float64 -> bfloat16 cast, which
    # goes through float32, rounds only once
    in_range = finite & (np.abs(exact) <= np.finfo(np.float32).max)
    assert np.array_equal(exact[in_range].astype(np.float32).astype(np.float64), exact[in_range])
    with np.errstate(over="ignore"):
        expected = exact.astype(CAST[output])
    got = t.dequantize(output)
    assert got.dtype == np.dtype(CAST[output])
    number = ~np.isnan(exact)  # finite values, overflows and Inf elements: the same words
    assert np.array_equal(got[number].view(WORD_DTYPES[output]), expected[number].view(WORD_DTYPES[output]))
    assert np.isnan(got[~number].astype(np.float64)).all()


def test_bfloat16_rounds_once_from_the_exact_value():
    # NVFP4 1.5 (E2M1 0x3) * 1.0 (UE4M3 0x38) * s_t with s_t = N * 2^-23, N = 11578027:
    # value = 3N * 2^-24 = (132 * 2^18 + 2^17 + 1) * 2^-24 = 132 * 2^-6 + 2^-7 + 2^-24: just above
    # the bf16 midpoint between 132 * 2^-6 and 133 * 2^-6, so nearest is 133 * 2^-6 = 2.078125 =
    # 0x4005. (Rounded to float32 first, it would land on the midpoint and go to even, 0x4004.)
    s_t = Fraction(11578027, 2**23)
    assert both("nvfp4", [0x3], 0x38, "bfloat16", tensor_scale=s_t) == [0x4005]
    assert both("nvfp4", [0x3], 0x38, "float32", tensor_scale=s_t) == [0x40048000]  # fp32: onto the midpoint
    # a true tie: 1.0 * 1.0 * (1 + 2^-8) lies midway between 1 (0x3F80) and 1 + 2^-7: even, 0x3F80;
    # (1 + 3 * 2^-8) lies midway between 1 + 2^-7 and 1 + 2^-6: even, 0x3F82
    assert both("nvfp4", [0x2], 0x38, "bfloat16", tensor_scale=1 + Fraction(1, 256)) == [0x3F80]
    assert both("nvfp4", [0x2], 0x38, "bfloat16", tensor_scale=1 + Fraction(3, 256)) == [0x3F82]


# ------------------------------------------------------------------------------------------------
# Overflow: Inf by default, the largest finite value with saturate


def test_saturate_hand_worked():
    # E5M2 57344 (0x7B) * 2^127 (E8M0 0xFE) = 1.75 * 2^142: beyond every output's range
    for output, inf, largest in (
        ("float16", 0x7C00, 0x7BFF),
        ("bfloat16", 0x7F80, 0x7F7F),
        ("float32", 0x7F800000, 0x7F7FFFFF),
    ):
        sign = 0x8000 if output != "float32" else 0x80000000
        assert both("mxfp8_e5m2", [0x7B, 0xFB], 0xFE, output) == [inf, sign | inf]
        assert both("mxfp8_e5m2", [0x7B, 0xFB], 0xFE, output, DequantizeOptions(dequant_overflow="saturate")) == [
            largest,
            sign | largest,
        ]


def test_overflow_is_decided_after_rounding():
    # NVFP4 1.0 (0x2) * 1.0 (0x38) * s_t: 65519 rounds down to 65504 (0x7BFF) under both;
    # 65520 is the midpoint between 65504 (odd mantissa 0x3FF) and 65536: ties to even go up,
    # beyond fp16's range: Inf (0x7C00), or 65504 under saturate
    saturate = DequantizeOptions(dequant_overflow="saturate")
    assert both("nvfp4", [0x2], 0x38, "float16", tensor_scale=65519) == [0x7BFF]
    assert both("nvfp4", [0x2], 0x38, "float16", saturate, tensor_scale=65519) == [0x7BFF]
    assert both("nvfp4", [0x2], 0x38, "float16", tensor_scale=65520) == [0x7C00]
    assert both("nvfp4", [0x2], 0x38, "float16", saturate, tensor_scale=65520) == [0x7BFF]


def test_inf_element_stays_inf_under_saturate():
    # E5M2 +-Inf (0x7C, 0xFC) is not an overflow: +-Inf under both policies (as iDMA's RTL does)
    for output, inf in (("float32", 0x7F800000), ("float16", 0x7C00)):
        sign = 0x80000000 if output == "float32" else 0x8000
        assert both("mxfp8_e5m2", [0x7C, 0xFC], 0x7F, output, DequantizeOptions(dequant_overflow="saturate")) == [
            inf,
            sign | inf,
        ]


# ------------------------------------------------------------------------------------------------
# Subnormal results: kept by default, zero of the same sign with dequant_ftz


def test_ftz_hand_worked():
    ftz = DequantizeOptions(dequant_ftz=True)
    # E4M3 1.75 (0x3E) * 2^-127 (0x00) = 0.875 * 2^-126: fp32 subnormal 0x00700000; bf16 0x0070
    assert both("mxfp8_e4m3", [0x3E, 0xBE], 0x00, "float32") == [0x00700000, 0x80700000]
    assert both("mxfp8_e4m3", [0x3E, 0xBE], 0x00, "float32", ftz) == [0x00000000, 0x80000000]
    assert both("mxfp8_e4m3", [0x3E, 0xBE], 0x00, "bfloat16") == [0x0070, 0x8070]
    assert both("mxfp8_e4m3", [0x3E, 0xBE], 0x00, "bfloat16", ftz) == [0x0000, 0x8000]
    # E4M3 1.75 * 2^-15 (0x70) = 0.875 * 2^-14: fp16 subnormal 896 * 2^-24 = 0x0380
    assert both("mxfp8_e4m3", [0x3E, 0xBE], 0x70, "float16") == [0x0380, 0x8380]
    assert both("mxfp8_e4m3", [0x3E, 0xBE], 0x70, "float16", ftz) == [0x0000, 0x8000]
    # the smallest normal itself is kept: E4M3 1.0 (0x38) * 2^-126 (0x01) = 0x00800000
    assert both("mxfp8_e4m3", [0x38], 0x01, "float32", ftz) == [0x00800000]


def test_ftz_acts_after_rounding():
    # NVFP4 1.0 * 1.0 * s_t with s_t = 511 * 2^-135 = (1 - 2^-9) * 2^-126: on bf16's subnormal grid
    # (2^-133) that is 127.75 steps, which rounds to 128 = the smallest normal 0x0080: kept
    s_t = Fraction(511, 2**135)
    assert both("nvfp4", [0x2, 0xA], 0x38, "bfloat16", DequantizeOptions(dequant_ftz=True), tensor_scale=s_t) == [
        0x0080,
        0x8080,
    ]


def test_negative_zero_and_zero():
    # -0 (E4M3 0x80) times any finite scale is -0; +0 stays +0, also under ftz and saturate
    opts = DequantizeOptions(dequant_ftz=True, dequant_overflow="saturate")
    assert both("mxfp8_e4m3", [0x80, 0x00], 0xFE, "float32", opts) == [0x80000000, 0]
    assert both("mxfp8_e4m3", [0x80, 0x00], 0x00, "float16") == [0x8000, 0]


# ------------------------------------------------------------------------------------------------
# NaN


def test_nan_element_sign():
    canonical = DequantizeOptions(dequant_nan="canonical")
    # E4M3 NaN 0x7F and -NaN 0xFF; E5M2 NaN payloads 0x7D and 0xFF: the output's quiet NaN
    assert both("mxfp8_e4m3", [0x7F, 0xFF], 0x7F, "float32") == [0x7FC00000, 0xFFC00000]
    assert both("mxfp8_e4m3", [0x7F, 0xFF], 0x7F, "float32", canonical) == [0x7FC00000, 0x7FC00000]
    assert both("mxfp8_e5m2", [0x7D, 0xFF], 0x7F, "float16") == [0x7E00, 0xFE00]
    assert both("mxfp8_e5m2", [0x7D, 0xFF], 0x7F, "float16", canonical) == [0x7E00, 0x7E00]
    assert both("mxfp8_e5m2", [0x7D, 0xFF], 0x7F, "bfloat16") == [0x7FC0, 0xFFC0]
    assert both("mxfp8_e5m2", [0x7D, 0xFF], 0x7F, "bfloat16", canonical) == [0x7FC0, 0x7FC0]


@pytest.mark.parametrize("options", [DequantizeOptions(), DequantizeOptions(dequant_nan="canonical")])
def test_nan_scale_gives_positive_nan_for_the_whole_block(options):
    # E8M0 0xFF: -1.5 (E4M3 0xBC), -0 (0x80), -NaN (0xFF), 448 (0x7E): all +qNaN
    assert both("mxfp8_e4m3", [0xBC, 0x80, 0xFF, 0x7E], 0xFF, "float32", options) == [0x7FC00000] * 4
    assert both("mxfp8_e4m3", [0xBC, 0x80, 0xFF, 0x7E], 0xFF, "float16", options) == [0x7E00] * 4
    # NVFP4's UE4M3 NaN scale 0x7F, and MX9 (sub-scales) likewise
    assert both("nvfp4", [0xA, 0x7], 0x7F, "bfloat16", options) == [0x7FC0] * 2
    assert both("mx9", [0x81, 0x7F], 0xFF, "float16", options) == [0x7E00] * 2
    # int8_exponent has no NaN scale: 0xFF is 2^-1, so E4M3 1.0 (0x38) gives 0.5 = 0x3F000000
    assert both("mxfp8_e4m3", [0x38], 0xFF, "float32", options, encoding="int8_exponent") == [0x3F000000]


# ------------------------------------------------------------------------------------------------
# iDMA v0.7.0 (docs/numerics.md section 6.1): MXFP8 E5M2 with int8-exponent scales


IDMA32 = options_for("float32", IDMA_DEQUANTIZE)
IDMA16 = options_for("float16", IDMA_DEQUANTIZE)


def idma(codes, scale, output):
    return both("mxfp8_e5m2", codes, scale, output, options_for(output, IDMA_DEQUANTIZE), encoding="int8_exponent")


def test_idma_fp32_output():
    # scale 0x7F = 2^127: 57344 * 2^127 saturates to 0x7F7FFFFF (sign kept); Inf stays Inf
    assert idma([0x7B, 0xFB, 0x7C], 0x7F, "float32") == [0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000]
    # scale 0x80 = 2^-128: 2^-16 * 2^-128 = 2^-144 is subnormal: flushed to a zero of its sign
    assert idma([0x01, 0x81], 0x80, "float32") == [0x00000000, 0x80000000]
    # scale 0x90 = 2^-112: the smallest E5M2 normal 2^-14 (0x04) lands on fp32's smallest normal
    assert idma([0x04], 0x90, "float32") == [0x00800000]
    # NaN elements of either sign give 0x7FC00000; scale 0xFF = 2^-1: 1.0 (0x3C) -> 0.5
    assert idma([0x7D, 0xFF, 0x3C], 0xFF, "float32") == [0x7FC00000, 0x7FC00000, 0x3F000000]


def test_idma_fp16_output():
    # FP16 keeps the defaults except the canonical NaN: 57344 * 2^127 overflows to Inf
    assert idma([0x7B, 0xFB], 0x7F, "float16") == [0x7C00, 0xFC00]
    # subnormals kept and rounded once: 2^-16 * 2^-8 = 2^-24 -> 0x0001; 2^-16 * 2^-9 = 2^-25 is a
    # tie between 0 and 2^-24 -> even, 0; 0.75 * 2^-14 (0x03) * 2^-10 = 0.75 * 2^-24 -> 0x0001
    assert idma([0x01, 0x01 | 0x80], 0xF8, "float16") == [0x0001, 0x8001]
    assert idma([0x01, 0x81], 0xF7, "float16") == [0x0000, 0x8000]
    assert idma([0x03], 0xF6, "float16") == [0x0001]
    assert idma([0x7D, 0xFF], 0x00, "float16") == [0x7E00, 0x7E00]


# ------------------------------------------------------------------------------------------------
# Fast path == reference model


def random_blocks(fmt, rng, n):
    fmt = mxsim.get_format(fmt)
    blocks = []
    for _ in range(n):
        if fmt.scale.name == "e8m0":
            scale = (
                int(rng.choice([0x00, 0x01, 0xFE, 0xFF, 0x80, 0x7F]))
                if rng.random() < 0.3
                else int(rng.integers(0, 256))
            )
        else:
            scale = int(rng.integers(0, 0x80))
        codes = tuple(int(c) for c in rng.integers(0, 1 << fmt.element.width, fmt.block_size))
        subs = tuple(int(s) for s in rng.integers(0, 1 << fmt.subscale_bits, fmt.subblocks)) if fmt.subblocks else ()
        blocks.append(QuantizedBlock(scale, subs, codes))
    return blocks


CASES = [
    (f, o, e)
    for f in BLOCK_FORMATS
    for o in OUTPUTS
    for e in ("e8m0", "int8_exponent")
    if e == "e8m0" or f in E8M0_FORMATS
]


@pytest.mark.parametrize("name, output, encoding", CASES, ids=["-".join(c) for c in CASES])
def test_fast_equals_reference(name, output, encoding):
    rng = np.random.default_rng(seed(name, output, encoding))
    blocks = random_blocks(name, rng, 6)
    tensor_scale = None
    if name == "nvfp4":  # a 24-bit significand at a random binade: NVFP4 values of up to 30 bits
        tensor_scale = int(rng.integers(1 << 23, 1 << 24)) * Fraction(2) ** int(rng.integers(-60, 60))
    for options in OPTION_SETS:
        got = fast_words(name, blocks, output, options, tensor_scale, encoding)
        expected = [ref_words(name, b, output, options, tensor_scale, encoding) for b in blocks]
        assert got.dtype == WORD_DTYPES[output] and got.tolist() == expected, options


@pytest.mark.parametrize("output", list(OUTPUTS))
def test_fp32_reciprocal_fast_equals_reference(output):
    """NVFP4 tensors made under nvfp4_arith='fp32_reciprocal' (compressed-tensors, contract 6.2): the tensor scale is
    the divisor gs and each value is fp32(element * fp32(scale / gs)), then converted to the output. Random blocks
    (the NaN scale 0x7F included) under global scales from 2^-126 (float32 overflow of the product: +-Inf, or
    +-max under saturate) to 2^120; fast path == reference word for word under every option set."""
    rng = np.random.default_rng(seed("nvfp4", output, "fp32_reciprocal"))
    blocks = random_blocks("nvfp4", rng, 6)
    for gs_exponent in (-126, -100, -3, 0, 7, 60, 120):
        gs = int(rng.integers(1 << 23, 1 << 24)) * Fraction(2) ** (gs_exponent - 23)
        for options in OPTION_SETS:
            got = dequantize_blocks_bits(
                np.array([b.scale for b in blocks], np.uint8), None, np.array([b.codes for b in blocks], np.uint8),
                mxsim.get_format("nvfp4"), output, options, gs, "e8m0", "fp32_reciprocal",
            )
            expected = [dequantize_block_bits(b, "nvfp4", output, options, gs, "e8m0", "fp32_reciprocal")
                        for b in blocks]
            assert got.tolist() == expected, (gs, options)


def test_fp32_reciprocal_overflow_hand_worked():
    """gs = 2^-126: the UE4M3 scale 448 gives step fp32(448 * 2^126) = 1.75 * 2^134, beyond float32: the step is
    +Inf and a nonzero element overflows (6: 0x7F800000, or 0x7F7FFFFF under saturate); a zero element gives
    0 * Inf = NaN, with the element's sign (-0: 0xFFC00000; canonical: 0x7FC00000). With gs = 2^-100 the step
    is 1.75 * 2^108 and 6 * step = 1.3125 * 2^111 is finite: 0x77280000."""
    block = one_block("nvfp4", [0x7, 0x8, 0x0], 0x7E)

    def words(gs, options=DequantizeOptions()):
        ref = dequantize_block_bits(block, "nvfp4", "float32", options, gs, "e8m0", "fp32_reciprocal")
        fast = dequantize_blocks_bits(np.array([block.scale], np.uint8), None, np.array([block.codes], np.uint8),
                                      mxsim.get_format("nvfp4"), "float32", options, gs, "e8m0", "fp32_reciprocal")
        assert fast[0].tolist() == ref
        return ref[:3]

    assert words(Fraction(1, 2**126)) == [0x7F800000, 0xFFC00000, 0x7FC00000]
    assert words(Fraction(1, 2**126), DequantizeOptions(dequant_overflow="saturate", dequant_nan="canonical")) == [
        0x7F7FFFFF, 0x7FC00000, 0x7FC00000]
    assert words(Fraction(1, 2**100)) == [0x77280000, 0x80000000, 0x00000000]


@st.composite
def dequant_cases(draw):
    name = draw(st.sampled_from(BLOCK_FORMATS))
    fmt = mxsim.get_format(name)
    encoding = draw(st.sampled_from(["e8m0", "int8_exponent"] if name in E8M0_FORMATS else ["e8m0"]))
    scale = draw(st.integers(0, (1 << fmt.scale.width) - 1))
    codes = draw(
        st.lists(st.integers(0, (1 << fmt.element.width) - 1), min_size=fmt.block_size, max_size=fmt.block_size)
    )
    subs = draw(st.lists(st.integers(0, (1 << fmt.subscale_bits) - 1), min_size=fmt.subblocks, max_size=fmt.subblocks))
    tensor_scale = None
    if fmt.tensor_scale is not None:  # any positive finite fp32 value, subnormals included
        tensor_scale = Fraction(
            draw(st.floats(min_value=2.0**-149, max_value=float(np.finfo(np.float32).max), width=32))
        )
    options = DequantizeOptions(
        dequant_overflow=draw(st.sampled_from(["inf", "saturate"])),
        dequant_ftz=draw(st.booleans()),
        dequant_nan=draw(st.sampled_from(["keep_sign", "canonical"])),
    )
    return (
        name,
        QuantizedBlock(scale, tuple(subs), tuple(codes)),
        draw(st.sampled_from(list(OUTPUTS))),
        options,
        tensor_scale,
        encoding,
    )


@settings(
    max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(dequant_cases())
def test_fast_equals_reference_property(case):
    name, block, output, options, tensor_scale, encoding = case
    expected = ref_words(name, block, output, options, tensor_scale, encoding)
    assert fast_words(name, [block], output, options, tensor_scale, encoding)[0].tolist() == expected


# ------------------------------------------------------------------------------------------------
# The MXTensor and packed-payload API


def test_tensor_api_per_output_options():
    # E4M3 1.75 * 2^-127 (fp32 subnormal) and 448 * 2^127 (beyond fp32 and fp16)
    k = 32
    codes = np.zeros((2, k), np.uint8)
    codes[0, 0], codes[1, 0] = 0x3E, 0x7E
    t = mxsim.MXTensor.from_codes(np.array([[0x00], [0xFE]], np.uint8), codes, "mxfp8_e4m3")
    words32 = t.dequantize_bits("float32", IDMA_DEQUANTIZE)
    assert words32.dtype == np.uint32 and (words32[0, 0], words32[1, 0]) == (0, 0x7F7FFFFF)
    words16 = t.dequantize_bits("float16", IDMA_DEQUANTIZE)  # FP16 entry: no saturation
    assert words16.dtype == np.uint16 and words16[1, 0] == 0x7C00
    assert t.dequantize_bits("bfloat16", IDMA_DEQUANTIZE)[1, 0] == 0x7F80  # not named: defaults
    assert t.dequantize_bits("float32", IDMA_DEQUANTIZE, dequant_overflow="inf")[1, 0] == 0x7F800000
    assert t.dequantize_bits("float32", dequant_ftz=True)[0, 0] == 0
    values = t.dequantize(np.float32, IDMA_DEQUANTIZE)
    assert values.dtype == np.float32 and values[1, 0] == np.finfo(np.float32).max
    assert t.dequantize("bfloat16").dtype == ml_dtypes.bfloat16
    assert t.dequantize(np.float16).dtype == np.float16
    assert np.array_equal(t.dequantize(np.float64), t.dequantize(np.float64, DequantizeOptions(dequant_ftz=True)))
    with pytest.raises(ValueError, match="dtype=.* is not allowed"):
        t.dequantize(np.int8)


def test_float64_output_applies_only_the_nan_rule():
    codes = np.zeros(32, np.uint8)
    codes[:2] = [0xFF, 0x7E]  # -NaN, 448 (with scale 2^127: 448 * 2^127 is exact in float64)
    t = mxsim.MXTensor.from_codes(np.array([0xFE], np.uint8), codes, "mxfp8_e4m3")
    words = t.dequantize_bits("float64", dequant_overflow="saturate", dequant_ftz=True)
    assert words[0] == 0xFFF8000000000000 and t.dequantize(np.float64)[1] == 448 * 2.0**127
    assert t.dequantize_bits("float64", dequant_nan="canonical")[0] == 0x7FF8000000000000


def test_dequantize_packed_with_options_and_nan_signs():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 256, 32 * 8).astype(np.uint8)
    codes[:4] = [0xFF, 0x7F, 0xFE, 0x7C]  # -NaN, NaN, -Inf, Inf in a finite-scale block
    scales = np.array([0x7F, 0xFF, 0x00, 0xFE, 0x10, 0xF0, 0x7F, 0x90], np.uint8)
    for name in ("mxfp8_e4m3", "mxfp8_e5m2"):
        t = mxsim.MXTensor.from_codes(scales, codes, name)
        payload = pack(t)
        got = dequantize_packed(payload, name, t.shape)  # the one-pass packed route
        assert np.array_equal(got.view(np.uint32), t.dequantize().view(np.uint32))
        for dtype, options in (("float32", IDMA_DEQUANTIZE), ("float16", IDMA_DEQUANTIZE), ("bfloat16", None)):
            got = dequantize_packed(payload, name, t.shape, dtype=dtype, dequantize_options=options)
            assert np.array_equal(got.view(WORD_DTYPES[dtype]), t.dequantize_bits(dtype, options))


# ------------------------------------------------------------------------------------------------
# The committed golden dequantize suites, recomputed by the fast path (the generator used the
# reference model)


GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "dequantize"


def hex_column(suite: Path, name: str) -> list[int]:
    return [int(line, 16) for line in (suite / f"{name}.hex").read_text().split()]


@pytest.mark.parametrize("suite", sorted(p.name for p in GOLDEN.iterdir()) if GOLDEN.is_dir() else [])
def test_golden_suite_equals_fast_path(suite):
    directory = GOLDEN / suite
    manifest = json.loads((directory / "manifest.json").read_text())
    params = manifest["params"]
    fmt = mxsim.get_format(params["block"])
    k, w = fmt.block_size, fmt.element.width
    out_bits = np.dtype(WORD_DTYPES[params["output"]]).itemsize * 8
    scales = np.array(hex_column(directory, "scale"), dtype=np.uint8)
    codes = np.array([[c >> (i * w) & ((1 << w) - 1) for i in range(k)] for c in hex_column(directory, "codes")])
    subscales = None
    if fmt.subblocks:
        d2 = fmt.subscale_bits
        subscales = np.array(
            [
                [s >> (j * d2) & ((1 << d2) - 1) for j in range(fmt.subblocks)]
                for s in hex_column(directory, "subscales")
            ],
            dtype=np.uint8,
        )
    expected = [
        [v >> (i * out_bits) & ((1 << out_bits) - 1) for i in range(k)] for v in hex_column(directory, "values")
    ]
    options = DequantizeOptions(**params["options"])
    assert len(expected) == manifest["count"] == len(scales)
    tensor_scales = hex_column(directory, "tensor_scale") if fmt.tensor_scale is not None else [None] * len(scales)
    for ts in sorted(set(tensor_scales), key=str):  # the fast path takes one tensor scale per call
        rows = [i for i, t in enumerate(tensor_scales) if t == ts]
        s_t = None if ts is None else Fraction(float(np.uint32(ts).view(np.float32)))
        got = dequantize_blocks_bits(
            scales[rows],
            None if subscales is None else subscales[rows],
            codes[rows].astype(np.uint8),
            fmt,
            params["output"],
            options,
            s_t,
            params["scale_encoding"],
        )
        assert got.tolist() == [expected[i] for i in rows]
