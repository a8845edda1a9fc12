"""Profiles (docs/numerics.md section 6): each one against the peer it names, run here, bit for bit.

* ``torchao_0_18_floor`` / ``torchao_0_18_rceil``: ``to_mx`` (scale bytes and element codes)
  and ``to_dtype`` (float32 and bfloat16 words) of torchao 0.18 on the CPU, eager;
* ``gfloat_0_5``: ``compute_scale_amax`` + ``encode_block`` and ``decode_block`` of gfloat 0.5;
* ``ml_dtypes_0_6``: NumPy casts to ml_dtypes' FP8/FP6/FP4 types;
* ``tosa_1_1``: CAST_TO_BLOCK_SCALED and CAST_FROM_BLOCK_SCALED run by the TOSA reference model
  (tosa-tools). tosa-tools pins ml-dtypes==0.5.3 and numpy<2.2, which the [test] extra's peers
  cannot share, so it is not part of the extra: its tests run where ``tosa_reference_model``
  and the tosa-tools ``serializer`` package import (install it with ``pip install --no-deps
  --target DIR tosa-tools flatbuffers==25.2.10`` and put DIR on PYTHONPATH, as ``.ci/run`` does),
  skip otherwise, and fail under CI=true;
* ``idma_v0_7``: no runnable peer here (the RTL is measured in Verilator elsewhere); its options
  are checked against contract section 6.1 and hand-worked blocks.

Data: random blocks over the whole float32 range (one magnitude 2^k per block, k from -150 to
127: Gaussian values, small integers on element rounding ties, zeros, -0, FP32 subnormals) and
corner-case blocks (all zero, Inf with finite values, NaN, maxima at the scale clamps and a few
float32 steps around max_normal x 2^E for every E). Each test asserts that every block agrees
and prints the number of blocks compared (``pytest -s``). What a profile leaves out (inputs on
which the peer depends on more than their values) is listed in the profile's ``inputs`` and
excluded here in the way stated there.

A peer that cannot be imported skips its tests with the reason, except under CI=true for the
peers the [test] extra installs (torch, torchao, gfloat, ml_dtypes), where that is a failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings

import numpy as np
import pytest

import mxsim
from mxsim.options.dequantize import IDMA_DEQUANTIZE
from mxsim.options.profiles import PROFILES, get_profile
from mxsim.options.quantize import option_applies

# Peers CI installs: the [test] extra's, and the TOSA reference model (.ci/run puts tosa-tools on
# PYTHONPATH without its numpy<2.2 pin); elsewhere a missing peer skips its tests.
IN_TEST_EXTRA = {"torch", "torchao", "gfloat", "ml_dtypes", "tosa_reference_model"}
COUNTS: dict[str, tuple[int, int]] = {}


def peer(module: str):
    """Import a peer, or skip (fail under CI=true where the [test] extra installs it)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        reason = f"{module} cannot be imported ({error})"
        if os.environ.get("CI") == "true" and module.split(".")[0] in IN_TEST_EXTRA:
            pytest.fail(f"{reason}; CI installs it (the [test] extra, or .ci/run for tosa-tools)")
        pytest.skip(reason)


def record(what: str, compared: int, agreed: int) -> None:
    COUNTS[what] = (compared, agreed)
    print(f"\n{what}: {compared} blocks compared, {agreed} agree")
    assert compared > 0 and agreed == compared, f"{what}: {compared - agreed} of {compared} blocks differ"


# --------------------------------------------------------------------------------------------------
# Data


def random_blocks(seed: int, rows: int, k: int = 32, low: int = -150, high: int = 127) -> np.ndarray:
    """float32 (rows, k): each row one magnitude 2^e, e uniform in [low, high]; half Gaussian,
    half small integers times a power of two (element rounding ties), ~4% zeros and -0."""
    rng = np.random.default_rng(seed)
    e = rng.integers(low, high + 1, size=(rows, 1)).astype(np.float64)
    gauss = rng.standard_normal((rows, k)) * np.exp2(e)
    ints = rng.integers(-(2**9), 2**9, size=(rows, k)) * np.exp2(e - 7)
    with np.errstate(over="ignore", under="ignore"):
        x = np.where((np.arange(rows) % 2 == 0)[:, None], gauss, ints).astype(np.float32)
    x = np.where(np.isinf(x), np.copysign(np.float32(3.0e38), x), x)
    x[rng.random((rows, k)) < 0.02] = 0.0
    x[rng.random((rows, k)) < 0.02] = -0.0
    return x


def corner_blocks(max_normal: float, k: int = 32) -> np.ndarray:
    """Rows of float32 corner cases: zeros, -0, Inf, NaN, tiny and huge maxima, and the maximum a
    few float32 steps around max_normal x 2^E for E from -140 to 127 (where float32 quotients
    and log2 decide rceil), each with smaller companions."""
    rows = []

    def row(*values):
        r = np.zeros(k, np.float32)
        r[: len(values)] = values
        rows.append(r)

    row()
    row(-0.0, 0.0, -0.0)
    for inf in (np.inf, -np.inf):
        row(inf, 1.0, -0.5)
        row(inf, 2.0**-100, 3.0e38)
        row(1e-40, inf)
    row(np.inf, -np.inf, 448.0)
    row(np.nan, 1.0, -2.0)
    row(2.0, np.nan, np.inf)
    row(-np.nan)
    for tiny in (2.0**-149, 1e-40, 2.0**-127, 2.0**-126, 2.0**-120, 2.0**-118, 2.0**-113, 2.0**-110):
        row(tiny, -tiny / 3, tiny / 8, 2.0**-149)
    row(3.4028235e38, -1.0, 2.0**100)
    row(2.0**127, 2.0**126 + 2.0**103)
    mp = np.float32(max_normal)
    for e in range(-140, 128):
        with np.errstate(over="ignore", under="ignore"):
            base = np.float32(np.ldexp(np.float64(mp), e))
        if not np.isfinite(base) or base == 0:
            continue
        value = base
        for step in range(-2, 24):
            value = base
            for _ in range(abs(step)):
                value = np.nextafter(value, np.float32(np.inf) if step > 0 else np.float32(0))
            if np.isfinite(value):
                row(value, -value / 2, value / 7)
    return np.stack(rows)


def nan_rows(x: np.ndarray) -> np.ndarray:
    return np.isnan(x).any(axis=1)


# --------------------------------------------------------------------------------------------------
# Registry and API


def test_registry_names_and_errors():
    assert list(PROFILES) == ["torchao_0_18_floor", "torchao_0_18_rceil", "gfloat_0_5", "ml_dtypes_0_6", "tosa_1_1",
                              "idma_v0_7", "microxcaling_nearest", "microxcaling_even", "microxcaling_floor",
                              "neural_compressor_3_10_nearest", "neural_compressor_3_10_even",
                              "neural_compressor_3_10_floor", "brevitas_0_13", "compressed_tensors_0_20",
                              "quark_0_13", "quark_0_13_floor", "quark_0_13_ceil"]
    with pytest.raises(ValueError) as err:
        mxsim.quantize(np.zeros(32, np.float32), "mxfp8_e4m3", profile="torchao")
    assert "profile='torchao' is not allowed; expected one of: torchao_0_18_floor, torchao_0_18_rceil" in str(err.value)
    with pytest.raises(ValueError, match="profile='nope' is not allowed; expected one of: .*ml_dtypes_0_6"):
        mxsim.encode(np.zeros(2, np.float32), "fp8_e4m3", profile="nope")
    with pytest.raises(ValueError, match="'ml_dtypes_0_6' is a cast profile; quantize takes a block profile"):
        mxsim.quantize(np.zeros(32, np.float32), "mxfp8_e4m3", profile="ml_dtypes_0_6")
    with pytest.raises(ValueError, match="'gfloat_0_5' is a block profile; encode takes a cast profile: ml_dtypes_0_6"):
        mxsim.encode(np.zeros(2, np.float32), "fp8_e4m3", profile="gfloat_0_5")
    with pytest.raises(ValueError, match="format 'mxint8' is not allowed with profile 'torchao_0_18_floor'"):
        mxsim.quantize(np.zeros(32, np.float32), "mxint8", profile="torchao_0_18_floor")
    with pytest.raises(ValueError, match="format 'e8m0' is not allowed with profile 'ml_dtypes_0_6'"):
        mxsim.encode(np.ones(2, np.float32), "e8m0", profile="ml_dtypes_0_6")


@pytest.mark.parametrize("name", [n for n, p in PROFILES.items() if p.kind == "block"])
def test_block_profile_options_and_manifest(name):
    profile = get_profile(name)
    options = profile.quantize_options()
    for key, value in profile.quantize.items():
        assert getattr(options, key) == value
    record_ = profile.as_dict()
    assert record_["name"] == name and record_["quantize"] == dict(profile.quantize)
    assert set(record_["dequantize"]) == set(profile.dequantize)
    for fmt in profile.formats:  # every format the peer has takes the profile's options
        for_fmt = profile.quantize_options(fmt)
        for_fmt.check_format(mxsim.get_format(fmt))
        left_out = {k for k, v in profile.quantize.items() if getattr(for_fmt, k) != v}
        left_out -= set(profile.per_format.get(fmt, {}))  # a per-format field replaces the profile's
        assert left_out <= ({"int8_allow_neg2"} if fmt != "mxint8" else set()) | {
            k for k in profile.quantize if not option_applies(k, mxsim.get_format(fmt))
        }, (fmt, left_out)


def test_gfloat_profile_sets_int8_allow_neg2_for_mxint8_only():
    x = np.zeros(32, np.float32)
    x[:2] = [-1.999, 0.5]
    assert mxsim.quantize(x, "mxint8", profile="gfloat_0_5").codes[0] == 0x80  # -2.0, as gfloat's int8
    t = mxsim.quantize(x, "mxfp8_e4m3", profile="gfloat_0_5")
    assert t.options.int8_allow_neg2 is False and t.options.inf_policy == "max_scale"
    with pytest.raises(ValueError, match="int8_allow_neg2=True is not allowed for format 'mxfp8_e4m3'"):
        mxsim.quantize(x, "mxfp8_e4m3", profile="gfloat_0_5", int8_allow_neg2=True)  # a keyword is checked as given


def test_keyword_options_override_the_profile():
    x = np.zeros((1, 32), np.float32)
    x[0, :2] = [np.inf, 1.0]
    t = mxsim.quantize(x, "mxfp8_e4m3", profile="torchao_0_18_floor")
    assert t.profile.name == "torchao_0_18_floor" and t.options.inf_policy == "exponent_field"
    assert t.scales[0, 0] == 0xF7  # Inf reads as 2^128: E = 128 - 8
    t = mxsim.quantize(x, "mxfp8_e4m3", profile="torchao_0_18_floor", inf_policy="nan")
    assert t.scales[0, 0] == 0xFF and t.options.min_scale_divisor == "min_normal"
    assert mxsim.quantize(x, "mxfp8_e4m3").profile is None  # defaults never change
    assert mxsim.encode(np.array([500.0], np.float32), "fp8_e4m3", profile="ml_dtypes_0_6")[0] == 0x7F
    assert mxsim.encode(np.array([500.0], np.float32), "fp8_e4m3", "rne", "saturate", profile="ml_dtypes_0_6")[0] == 0x7E
    assert mxsim.encode(np.array([500.0], np.float32), "fp8_e4m3")[0] == 0x7E


def test_dequantize_follows_the_profile_and_keywords_override():
    """A tensor made under a profile dequantizes with the profile's entry for the output type;
    ``options`` or keywords replace it. (tosa_1_1 sets the defaults, so a custom profile shows it.)"""
    from mxsim.options.profiles import Profile

    custom = Profile(
        name="custom", kind="block", source="test", version="0", description="", formats=("mxfp8_e5m2",),
        dequantize={"float32": mxsim.DequantizeOptions(dequant_overflow="saturate", dequant_ftz=True)},
    )
    scales = np.array([[0xFE]], np.uint8)  # 2^127
    codes = np.zeros((1, 32), np.uint8)
    codes[0, :2] = [0x7B, 0x01]  # 57344 * 2^127 overflows float32; 2^-16 * 2^127 = 2^111
    t = mxsim.MXTensor.from_codes(scales, codes, "mxfp8_e5m2", profile=custom)
    assert t.dequantize_bits("float32")[0, 0] == 0x7F7FFFFF  # saturate
    assert t.dequantize_bits("float32", dequant_overflow="inf")[0, 0] == 0x7F800000
    assert t.dequantize_bits("float32", options=mxsim.DequantizeOptions())[0, 0] == 0x7F800000
    assert t.dequantize_bits("float16")[0, 0] == 0x7C00  # the profile names no float16 entry: defaults


def test_idma_profile_is_contract_6_1():
    profile = get_profile("idma_v0_7")
    assert dict(profile.quantize) == {"scale_encoding": "int8_exponent", "scale_min": -128, "specials": "per_element",
                                      "nan_code": 0x7D, "subnormal_inputs": "as_normal"}
    assert profile.dequantize == IDMA_DEQUANTIZE and profile.formats == ("mxfp8_e5m2",)
    # Contract 6.1, hand-worked: block max 3.0 (fp32 field 128) -> E = 128 - 127 - 15 = -14 (byte 0xF2);
    # 3.0 * 2^14 = 49152 (0x7A); NaN -> 0x7D with its sign; -Inf -> -57344 (0xFB); 2^-149 as a normal
    # with field 0 reads (1 + 2^-23) * 2^-127: far below the element grid -> 0; -1.0 * 2^14 = -2^14 (0xF4).
    x = np.zeros(32, np.float32)
    x[:5] = [3.0, np.nan, -np.inf, 2.0**-149, -1.0]
    t = mxsim.quantize(x, "mxfp8_e5m2", profile="idma_v0_7")
    assert t.scales.tolist() == [0xF2]
    assert t.codes[:5].tolist() == [0x7A, 0x7D, 0xFB, 0x00, 0xF4]
    # FP16 source: 65504 has fp32 field 142 -> E = 0 (byte 0x00); 65504 saturates to 57344 (0x7B);
    # 1.0 -> 0x3C; -Inf -> -max (0xFB); NaN -> 0x7D.
    x16 = np.zeros(32, np.float16)
    x16[:4] = [65504, 1.0, -np.inf, np.nan]
    t = mxsim.quantize(x16, "mxfp8_e5m2", profile="idma_v0_7")
    assert t.scales.tolist() == [0x00] and t.codes[:4].tolist() == [0x7B, 0x3C, 0xFB, 0x7D]
    # Only fp32 subnormals: E = 0 - 127 - 15 = -142 clamps to scale_min -128 (byte 0x80); 2^-149 reads
    # (1 + 2^-23) * 2^-127 -> 2 + 2^-22 -> 2.0 (0x40); -2^-140 = -(2^9 * 2^-149) reads -(1 + 2^-14) * 2^-127
    # -> -2.0 (0xC0). Dequantized: 2.0 * 2^-128 = 2^-127 is an fp32 subnormal, flushed on the FP32 output
    # (+0, -0); on FP16 it rounds to zero anyway (0x0000, 0x8000).
    x[:] = 0
    x[:2] = [2.0**-149, -(2.0**-140)]
    t = mxsim.quantize(x, "mxfp8_e5m2", profile="idma_v0_7")
    assert t.scales.tolist() == [0x80] and t.codes[:3].tolist() == [0x40, 0xC0, 0x00]
    assert t.dequantize_bits("float32")[:2].tolist() == [0x00000000, 0x80000000]
    assert t.dequantize_bits("float16")[:2].tolist() == [0x0000, 0x8000]


# --------------------------------------------------------------------------------------------------
# torchao 0.18

TORCHAO_FORMATS = {
    "mxfp8_e4m3": "float8_e4m3fn", "mxfp8_e5m2": "float8_e5m2", "mxfp6_e3m2": "fp6_e3m2", "mxfp6_e2m3": "fp6_e2m3",
    "mxfp4_e2m1": "float4_e2m1fn_x2",
}
TORCHAO_PROFILES = {"torchao_0_18_floor": "FLOOR", "torchao_0_18_rceil": "RCEIL"}


def _torchao():
    torch = peer("torch")
    mx_tensor = peer("torchao.prototype.mx_formats.mx_tensor")
    config = peer("torchao.prototype.mx_formats.config")
    return torch, mx_tensor, config


def _elem_dtype(torch, name):
    dtype = TORCHAO_FORMATS[name]
    return getattr(torch, dtype) if dtype.startswith("float") else dtype


def _unpack_fp4(packed: np.ndarray) -> np.ndarray:
    return np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(packed.shape[:-1] + (-1,))


def _pack_fp4(codes: np.ndarray) -> np.ndarray:
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def compare_quantized(peer_scales, peer_codes, t: mxsim.MXTensor, nan_blocks) -> tuple[int, int]:
    """(blocks, agreeing blocks): scale byte and every element code, except NaN blocks, which
    agree when both scales are the NaN code (every element then decodes to NaN in both)."""
    scales = t.scales.reshape(-1)
    codes = t.codes.reshape(len(scales), -1).astype(np.int64)
    same = (peer_scales == scales) & (peer_codes == codes).all(axis=1)
    same = np.where(nan_blocks, (peer_scales == 0xFF) & (scales == 0xFF), same)
    bad = np.nonzero(~same)[0]
    assert bad.size == 0, (
        f"block {bad[0]}: peer scale {peer_scales[bad[0]]:#x} codes {peer_codes[bad[0]][:8].tolist()}; "
        f"mxsim {scales[bad[0]]:#x} {codes[bad[0]][:8].tolist()}"
    )
    return len(same), int(same.sum())


def torchao_to_mx(x: np.ndarray, name: str, profile: str) -> tuple[np.ndarray, np.ndarray]:
    """(scale bytes (n,), element codes (n, 32)) of torchao's to_mx on float32 blocks x (n, 32)."""
    torch, mx_tensor, config = _torchao()
    mode = getattr(config.ScaleCalculationMode, TORCHAO_PROFILES[profile])
    scale, data = mx_tensor.to_mx(torch.from_numpy(x), _elem_dtype(torch, name), 32, mode)
    codes = data.view(torch.uint8).numpy()
    codes = _unpack_fp4(codes) if name == "mxfp4_e2m1" else codes
    return scale.view(torch.uint8).numpy().reshape(-1), codes.reshape(len(x), -1).astype(np.int64)


@pytest.mark.parametrize("name", list(TORCHAO_FORMATS))
@pytest.mark.parametrize("profile", list(TORCHAO_PROFILES))
def test_torchao_to_mx(profile, name):
    fmt = mxsim.get_format(name)
    x = np.concatenate([random_blocks(hash((profile, name)) % 2**32, 1500), corner_blocks(float(fmt.element.max_normal))])
    peer_scales, peer_codes = torchao_to_mx(x, name, profile)
    t = mxsim.quantize(x, name, profile=profile)
    compared, agreed = compare_quantized(peer_scales, peer_codes, t, nan_rows(x))
    # the edges are in the data: Inf blocks (FLOOR: E = 128 - emax; RCEIL: 0xFE) and blocks at 0x00
    inf_blocks = np.isinf(x).any(axis=1) & ~nan_rows(x)
    inf_scale = 0xFE if profile == "torchao_0_18_rceil" else 255 - fmt.element.emax
    assert inf_blocks.any() and (peer_scales[inf_blocks] == inf_scale).all()
    assert (peer_scales[~nan_rows(x) & (np.abs(x).max(axis=1) > 0)] == 0).sum() >= 5
    record(f"{profile} to_mx float32 {name}", compared, agreed)


@pytest.mark.parametrize("profile", list(TORCHAO_PROFILES))
def test_torchao_to_mx_bfloat16(profile):
    """bfloat16 inputs (torchao widens them to float32; mxsim reads them exactly)."""
    torch, mx_tensor, config = _torchao()
    ml_dtypes = peer("ml_dtypes")
    compared = agreed = 0
    for name in TORCHAO_FORMATS:
        fmt = mxsim.get_format(name)
        x32 = np.concatenate([random_blocks(7 + len(name), 400), corner_blocks(float(fmt.element.max_normal))[::3]])
        x_torch = torch.from_numpy(x32).to(torch.bfloat16)
        x_bf16 = x_torch.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        mode = getattr(config.ScaleCalculationMode, TORCHAO_PROFILES[profile])
        scale, data = mx_tensor.to_mx(x_torch, _elem_dtype(torch, name), 32, mode)
        codes = data.view(torch.uint8).numpy()
        codes = _unpack_fp4(codes) if name == "mxfp4_e2m1" else codes
        t = mxsim.quantize(x_bf16, name, profile=profile)
        nan_blocks = np.isnan(x_bf16.astype(np.float32)).any(axis=1)
        c, a = compare_quantized(scale.view(torch.uint8).numpy().reshape(-1), codes.reshape(len(x32), -1), t, nan_blocks)
        compared, agreed = compared + c, agreed + a
    record(f"{profile} to_mx bfloat16 (5 formats)", compared, agreed)


def random_codes(fmt, rows: int, seed: int):
    """Every code of the element format and every scale byte, at random (0xFF included)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1 << fmt.element.width, size=(rows, fmt.block_size)).astype(np.uint8)
    scales = rng.integers(0, 256, size=(rows, 1)).astype(np.uint8)
    scales[:8, 0] = [0, 1, 126, 127, 128, 253, 254, 255]
    return scales, codes


@pytest.mark.parametrize("output", ["float32", "bfloat16"])
@pytest.mark.parametrize("profile", list(TORCHAO_PROFILES))
def test_torchao_to_dtype(profile, output):
    """torchao's dequantization (element cast, times the float32 scale 2^(code - 127), in the
    output type) against t.dequantize under the profile, word for word except NaN words, which
    are compared as NaN: torch's FP8 -> float32 cast keeps the NaN payload (E4M3 0x7F gives
    0x7FF00000), its vectorized float -> bfloat16 cast writes 0xFFFF for every NaN, and in a
    NaN-scale block the CPU picks which NaN operand survives; mxsim writes quiet NaNs."""
    torch, mx_tensor, _ = _torchao()
    compared = agreed = 0
    target = getattr(torch, output)
    for name in TORCHAO_FORMATS:
        fmt = mxsim.get_format(name)
        scales, codes = random_codes(fmt, 600, len(name))
        peer_data = torch.from_numpy(_pack_fp4(codes) if name == "mxfp4_e2m1" else codes)
        if name.startswith("mxfp8"):  # FP4 stays packed uint8, FP6 unpacked uint8, as to_mx returns them
            peer_data = peer_data.view(_elem_dtype(torch, name))
        scale = torch.from_numpy(scales.reshape(-1)).view(torch.float8_e8m0fnu)
        out = mx_tensor.to_dtype(peer_data, scale, _elem_dtype(torch, name), 32, target)
        words = out.view(torch.int32 if output == "float32" else torch.int16).numpy()
        words = words.view(np.uint32 if output == "float32" else np.uint16)
        t = mxsim.MXTensor.from_codes(scales, codes, name, profile=profile)
        mine = t.dequantize_bits(output)
        nan_out = np.isnan(t.dequantize(output).astype(np.float32))
        peer_nan = np.isnan(out.float().numpy())
        same = np.where(nan_out | peer_nan, nan_out & peer_nan, mine == words).all(axis=1)
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, f"{name} block {bad[0]}: scale {scales[bad[0], 0]:#x}"
        compared, agreed = compared + len(same), agreed + int(same.sum())
    record(f"{profile} to_dtype {output} (5 formats)", compared, agreed)


def test_torchao_rceil_float32_log2_sweep():
    """Where torchao's float32 quotient and log2 decide RCEIL: block maxima 1..40 float32 steps
    above max_normal x 2^E for every E and element type (mxsim's exact 'rceil' differs from torchao on
    hundreds of these; 'rceil_fp32' on none)."""
    torch, mx_tensor, config = _torchao()
    compared = agreed = differs_exact = 0
    for name in TORCHAO_FORMATS:
        fmt = mxsim.get_format(name)
        maxima = []
        for e in range(-150, 128):
            with np.errstate(over="ignore", under="ignore"):
                value = np.float32(np.ldexp(float(fmt.element.max_normal), e))
            if value == 0 or not np.isfinite(value):
                continue
            for _ in range(40):
                value = np.nextafter(value, np.float32(np.inf))
                maxima.append(value)
        x = np.zeros((len(maxima), 32), np.float32)
        x[:, 0] = maxima
        x = x[np.isfinite(x[:, 0])]
        scale, data = mx_tensor.to_mx(torch.from_numpy(x), _elem_dtype(torch, name), 32, config.ScaleCalculationMode.RCEIL)
        codes = data.view(torch.uint8).numpy()
        codes = _unpack_fp4(codes) if name == "mxfp4_e2m1" else codes
        peer_scales = scale.view(torch.uint8).numpy().reshape(-1)
        t = mxsim.quantize(x, name, profile="torchao_0_18_rceil")
        c, a = compare_quantized(peer_scales, codes.reshape(len(x), -1), t, np.zeros(len(x), bool))
        compared, agreed = compared + c, agreed + a
        differs_exact += int((mxsim.quantize(x, name, scale_rule="rceil").scales.reshape(-1) != peer_scales).sum())
    record("torchao_0_18_rceil float32 log2 sweep (5 formats)", compared, agreed)
    assert differs_exact > 1000  # the exact rule is not torchao's here


# --------------------------------------------------------------------------------------------------
# gfloat 0.5


GFLOAT_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"]


def gfloat_block_codec(x64: np.ndarray, name: str):
    """(scale bytes, element codes, decoded values) of gfloat's compute_scale_amax, encode_block
    and decode_block on float64 blocks x64 (n, 32)."""
    gfloat = peer("gfloat")
    fi = getattr(peer("gfloat.formats"), f"format_info_{name}")
    scales, codes, values = [], [], []
    for row in x64:
        scale = gfloat.compute_scale_amax(fi.etype.emax, row)
        with np.errstate(invalid="ignore", over="ignore"):
            block = list(gfloat.encode_block(fi, scale, row / scale))
        scales.append(block[0])
        codes.append(block[1:])
        values.append(list(gfloat.decode_block(fi, block)))
    return np.array(scales), np.array(codes, dtype=np.int64), np.array(values, dtype=np.float64)


@pytest.mark.parametrize("name", GFLOAT_FORMATS)
def test_gfloat_encode_decode_block(name):
    """gfloat's block encode and decode on float32 values held in float64 (gfloat's log2 is then
    exact). NaN blocks: gfloat raises for formats without NaN (those are left out) and writes
    0xFF element codes for FP8, compared by scale and decoded value."""
    fmt = mxsim.get_format(name)
    x = np.concatenate([random_blocks(2000 + len(name), 500), corner_blocks(float(fmt.element.max_normal))[::4]])
    if not fmt.element.has_nan:
        x = x[~nan_rows(x)]
    x64 = x.astype(np.float64)
    t = mxsim.quantize(x64, name, profile="gfloat_0_5")
    values = t.dequantize(np.float64)
    peer_scales, peer_codes, peer_values = gfloat_block_codec(x64, name)
    compared, agreed = compare_quantized(peer_scales, peer_codes, t, nan_rows(x))
    same_values = ((peer_values == values) & (np.signbit(peer_values) == np.signbit(values))) | (
        np.isnan(peer_values) & np.isnan(values))
    assert same_values.all(), np.nonzero(~same_values.all(axis=1))[0][:5]
    inf_blocks = np.isinf(x).any(axis=1) & ~nan_rows(x)
    assert inf_blocks.any() and (peer_scales[inf_blocks] == 0xFE).all()  # Inf: the scale clipped at 2^127
    if name == "mxint8":
        assert (peer_codes == 0x80).any()  # -2.0 occurs, and agrees
    record(f"gfloat_0_5 encode_block/decode_block {name}", compared, agreed)


# --------------------------------------------------------------------------------------------------
# ml_dtypes 0.6 (element casts)

ML_DTYPES_FORMATS = {"fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "fp6_e2m3": "float6_e2m3fn",
                     "fp6_e3m2": "float6_e3m2fn", "fp4_e2m1": "float4_e2m1fn"}


def _cast_inputs(fmt, ml_dtypes) -> dict[str, np.ndarray]:
    """float32: every code's value, the midpoints between neighbours and one float32 step either
    side, overflow region, Inf, NaN, random bits; float16 and bfloat16: every bit pattern."""
    element = mxsim.get_format(fmt)
    values = np.array(sorted({float(v) for v in mxsim.decode(np.arange(1 << element.width), fmt) if np.isfinite(v)}))
    mids = (values[1:] + values[:-1]) / 2
    points = np.concatenate([values, mids, [float(element.max_normal) * f for f in (1.01, 1.0625, 1.125, 1.5, 2, 1e3)]])
    points = np.concatenate([points, -points]).astype(np.float32)
    near = np.concatenate([np.nextafter(points, np.float32(np.inf)), np.nextafter(points, np.float32(-np.inf))])
    rng = np.random.default_rng(len(fmt))
    bits = rng.integers(0, 2**32, size=100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    specials = np.array([np.inf, -np.inf, np.nan, 3.4028235e38, 1e-45, -0.0, 0.0], np.float32)
    out = {"float32": np.concatenate([points, near, bits, specials])}
    all16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    out["float16"] = all16.view(np.float16)
    out["bfloat16"] = all16.view(ml_dtypes.bfloat16)
    if not element.has_nan:  # NaN into FP6/FP4: ml_dtypes gives -0, mxsim raises (left out)
        out = {k: v[~np.isnan(v.astype(np.float32))] for k, v in out.items()}
    return out


@pytest.mark.parametrize("fmt", list(ML_DTYPES_FORMATS))
def test_ml_dtypes_casts(fmt):
    ml_dtypes = peer("ml_dtypes")
    target = getattr(ml_dtypes, ML_DTYPES_FORMATS[fmt])
    compared = agreed = 0
    for dtype, x in _cast_inputs(fmt, ml_dtypes).items():
        with np.errstate(invalid="ignore", over="ignore"):
            expected = x.astype(target).view(np.uint8)
        got = mxsim.encode(x, fmt, profile="ml_dtypes_0_6")
        same = got == expected  # NaN inputs too: both write the canonical NaN code with the input's sign
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, f"{dtype} {x[bad[0]]!r}: ml_dtypes {expected[bad[0]]:#x}, mxsim {got[bad[0]]:#x}"
        compared, agreed = compared + len(same), agreed + int(same.sum())
    record(f"ml_dtypes_0_6 casts to {fmt} (values, not blocks)", compared, agreed)


# --------------------------------------------------------------------------------------------------
# TOSA 1.1 (the reference model of tosa-tools)

TOSA_FORMATS = {"mxfp8_e4m3": "FP8E4M3", "mxfp8_e5m2": "FP8E5M2", "mxfp6_e3m2": "FP6E3M2", "mxfp6_e2m3": "FP6E2M3",
                "mxfp4_e2m1": "FP4E2M1", "mxint8": "MXINT8"}
TOSA_ONES = {"mxfp8_e4m3": "float8_e4m3fn", "mxfp8_e5m2": "float8_e5m2", "mxfp6_e3m2": "float6_e3m2fn",
             "mxfp6_e2m3": "float6_e2m3fn", "mxfp4_e2m1": "float4_e2m1fn", "mxint8": None}


def _tosa_codes(name: str, codes: np.ndarray) -> np.ndarray:
    """Codes as the serializer takes them: ml_dtypes arrays, MXINT8 as its uint8 codes."""
    import ml_dtypes

    return codes if TOSA_ONES[name] is None else codes.view(getattr(ml_dtypes, TOSA_ONES[name]))


def _tosa():
    trm = peer("tosa_reference_model")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ts = peer("serializer.tosa_serializer")
    op = peer("tosa.Op")
    return trm.tosa_reference_model, ts, op.Op


def _tosa_run(ser, inputs):
    trm, _, _ = _tosa()
    outs, status = trm.run(bytes(ser.serialize()), inputs)
    assert str(status).endswith("TOSA_VALID"), status
    return outs


def tosa_cast_to_block_scaled(x: np.ndarray, name: str, tmp_path):
    """Scale values and element values of CAST_TO_BLOCK_SCALED (float32 -> name, block 32), read
    back as float32 through CAST_FROM_BLOCK_SCALED with unit scales / unit elements (the Python
    bindings return no E8M0 or sub-byte tensors)."""
    import ml_dtypes

    _, ts, Op = _tosa()
    dtype = getattr(ts.DType, TOSA_FORMATS[name])
    rows, n = x.shape
    ser = ts.TosaSerializer(str(tmp_path))
    inp = ser.addPlaceholder([rows, n], ts.DType.FP32, None)
    data = ser.addIntermediate([rows, n], dtype)
    scale = ser.addIntermediate([rows, n // 32], ts.DType.FP8UE8M0)
    attr = ts.TosaSerializerAttribute()
    attr.CastToBlockScaledAttribute(32)
    ser.addOperator(Op.CAST_TO_BLOCK_SCALED, [inp.name], [data.name, scale.name], attr)
    unit_scale = ser.addConst([rows, n // 32], ts.DType.FP8UE8M0, np.ones((rows, n // 32), ml_dtypes.float8_e8m0fnu))
    one = mxsim.encode(np.ones((rows, n)), mxsim.get_format(name).element.name).astype(np.uint8)
    unit = ser.addConst([rows, n], dtype, _tosa_codes(name, one))
    values = ser.addOutput([rows, n], ts.DType.FP32)
    scales = ser.addOutput([rows, n], ts.DType.FP32)
    for source, scale_in, out in ((data, unit_scale, values), (unit, scale, scales)):
        a = ts.TosaSerializerAttribute()
        a.CastFromBlockScaledAttribute(32)
        ser.addOperator(Op.CAST_FROM_BLOCK_SCALED, [source.name, scale_in.name], [out.name], a)
    element_values, scale_values = _tosa_run(ser, [x])
    return element_values, scale_values[:, ::32]


@pytest.mark.parametrize("name", list(TOSA_FORMATS))
def test_tosa_cast_to_block_scaled(name, tmp_path):
    fmt = mxsim.get_format(name)
    x = np.concatenate([random_blocks(3000 + len(name), 1000), corner_blocks(float(fmt.element.max_normal))])
    element_values, scale_values = tosa_cast_to_block_scaled(x, name, tmp_path)
    t = mxsim.quantize(x, name, profile="tosa_1_1")
    nan_blocks = np.isnan(scale_values[:, 0])
    scales = np.where(nan_blocks, 0xFF, np.frexp(np.nan_to_num(scale_values[:, 0]).astype(np.float64))[1] - 1 + 127)
    peer_codes = mxsim.encode(
        np.where(np.isnan(element_values), 0, element_values), fmt.element.name, "rne", "error",
        int8_allow_neg2=fmt.element.kind == "int",  # the peer's exact element values back to codes
    )
    compared, agreed = compare_quantized(scales, peer_codes.astype(np.int64), t, nan_blocks)
    record(f"tosa_1_1 CAST_TO_BLOCK_SCALED {name}", compared, agreed)


def _words_as_float(words: np.ndarray) -> np.ndarray:
    if words.dtype == np.uint32:
        return words.view(np.float32)
    return (words.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("output", ["float32", "bfloat16"])
def test_tosa_cast_from_block_scaled(output, tmp_path):
    """CAST_FROM_BLOCK_SCALED of random codes and scales (0xFF included) to float32 and bfloat16,
    word for word, except the sign of a NaN element's NaN in a NaN-scale block."""
    import ml_dtypes

    _, ts, Op = _tosa()
    compared = agreed = 0
    for name in TOSA_FORMATS:
        fmt = mxsim.get_format(name)
        scales, codes = random_codes(fmt, 400, 5 + len(name))
        rows = len(codes)
        ser = ts.TosaSerializer(str(tmp_path))
        dtype = getattr(ts.DType, TOSA_FORMATS[name])
        data = ser.addConst([rows, 32], dtype, _tosa_codes(name, codes))
        scale = ser.addConst([rows, 1], ts.DType.FP8UE8M0, scales.view(ml_dtypes.float8_e8m0fnu))
        out = ser.addOutput([rows, 32], ts.DType.FP32 if output == "float32" else ts.DType.BF16)
        a = ts.TosaSerializerAttribute()
        a.CastFromBlockScaledAttribute(32)
        ser.addOperator(Op.CAST_FROM_BLOCK_SCALED, [data.name, scale.name], [out.name], a)
        (result,) = _tosa_run(ser, [])
        words = np.ascontiguousarray(result).view(np.uint32 if output == "float32" else np.uint16)  # bf16: raw |V2
        t = mxsim.MXTensor.from_codes(scales, codes, name, profile="tosa_1_1")
        mine = t.dequantize_bits(output)
        # A NaN element in a NaN-scale block: the bfloat16 output keeps the element's sign (mxsim: +qNaN).
        both_nan = np.isnan(t.dequantize(output).astype(np.float32)) & np.isnan(_words_as_float(words))
        same = np.where(np.repeat(scales == 0xFF, 32, axis=1) & both_nan, True, mine == words).all(axis=1)
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, (name, bad[0], scales[bad[0], 0], codes[bad[0]].tolist(), t.dequantize_bits(output)[bad[0]].tolist(), words[bad[0]].tolist())
        compared, agreed = compared + len(same), agreed + int(same.sum())
    record(f"tosa_1_1 CAST_FROM_BLOCK_SCALED {output} (6 formats)", compared, agreed)


# --------------------------------------------------------------------------------------------------
# Golden vectors made under a profile: the manifest records it, and the vectors are the peer's


def _hex_fields(directory, field: str, width: int, count: int) -> np.ndarray:
    """(vectors, count) integers of ``field``.hex: item i at bits [i*width, (i+1)*width) of each line."""
    from pathlib import Path

    lines = (Path(directory) / f"{field}.hex").read_text().split()
    mask = (1 << width) - 1
    return np.array([[(int(line, 16) >> (width * i)) & mask for i in range(count)] for line in lines], dtype=np.int64)


def _golden(tmp_path, kind: str, **params):
    import json
    from pathlib import Path

    from mxsim.golden import generate, suite_from_spec

    directory = Path(generate(suite_from_spec(kind, **params), tmp_path / kind))
    return directory, json.loads((directory / "manifest.json").read_text())


def _assert_manifest_records(manifest: dict, name: str, fmt: str) -> None:
    import json

    profile = get_profile(name)
    assert manifest["params"]["profile"] == name
    assert manifest["profile"] == json.loads(json.dumps(profile.as_dict()))  # name, source, version, every option
    for key, value in profile.quantize_options(fmt).as_dict().items():
        if key in profile.quantize:
            assert manifest["params"]["options"][key] == value, key


@pytest.mark.parametrize("name,fmt", [
    ("torchao_0_18_floor", "mxfp8_e4m3"), ("torchao_0_18_rceil", "mxfp4_e2m1"), ("gfloat_0_5", "mxint8"),
])
def test_golden_quantize_suite_under_a_profile_is_the_peers(name, fmt, tmp_path):
    """``mxsim golden generate --params '{"block": ..., "profile": ...}'``: the suite's x vectors
    run through the peer itself give the suite's scale and code files (NaN blocks by scale, and
    left out for gfloat's MXINT8, as the profiles say)."""
    directory, manifest = _golden(tmp_path, "quantize", block=fmt, profile=name)
    _assert_manifest_records(manifest, name, fmt)
    element = mxsim.get_format(fmt).element
    x = _hex_fields(directory, "x", 32, 32).astype(np.uint32).view(np.float32)
    scales = _hex_fields(directory, "scale", 8, 1)
    codes = _hex_fields(directory, "codes", element.width, 32)
    nan_blocks = nan_rows(x)
    if name == "gfloat_0_5":
        keep = ~nan_blocks  # gfloat raises on NaN into MXINT8
        x, scales, codes, nan_blocks = x[keep], scales[keep], codes[keep], nan_blocks[keep]
        peer_scales, peer_codes, _ = gfloat_block_codec(x.astype(np.float64), fmt)
    else:
        peer_scales, peer_codes = torchao_to_mx(np.ascontiguousarray(x), fmt, name)
    suite = mxsim.MXTensor.from_codes(scales.astype(np.uint8), codes, fmt)
    compared, agreed = compare_quantized(peer_scales, peer_codes, suite, nan_blocks)
    record(f"{name} golden quantize suite {fmt}", compared, agreed)


def test_golden_dequantize_suite_under_a_profile_is_the_peers(tmp_path):
    """A dequantize suite under torchao_0_18_floor: torchao's to_dtype on the suite's scales and
    codes gives its float32 words (NaN words as NaN, as the profile says)."""
    torch, mx_tensor, _ = _torchao()
    directory, manifest = _golden(tmp_path, "dequantize", block="mxfp8_e4m3", output="float32",
                                  profile="torchao_0_18_floor")
    assert manifest["params"]["profile"] == "torchao_0_18_floor" and manifest["profile"]["name"] == "torchao_0_18_floor"
    scales = _hex_fields(directory, "scale", 8, 1).astype(np.uint8)
    codes = _hex_fields(directory, "codes", 8, 32).astype(np.uint8)
    words = _hex_fields(directory, "values", 32, 32).astype(np.uint32)
    out = mx_tensor.to_dtype(torch.from_numpy(codes).view(torch.float8_e4m3fn),
                             torch.from_numpy(scales.reshape(-1)).view(torch.float8_e8m0fnu), torch.float8_e4m3fn, 32,
                             torch.float32).numpy()
    nan = np.isnan(words.view(np.float32))
    same = np.where(nan | np.isnan(out), nan & np.isnan(out), words == out.view(np.uint32)).all(axis=1)
    record("torchao_0_18_floor golden dequantize suite mxfp8_e4m3 float32", len(same), int(same.sum()))


def test_golden_dequantize_suite_under_idma(tmp_path):
    """idma_v0_7's dequantize suites take its int8-exponent scales and its per-output options
    (contract 6.1); an output the design lacks is refused. Hand-worked: scale byte 0xFF is 2^-1 and
    0x80 is 2^-128 (int8 exponents); E5M2 0x7B (57344) x 2^127 saturates to 0x7F7FFFFF on FP32."""
    directory, manifest = _golden(tmp_path, "dequantize", block="mxfp8_e5m2", output="float32", profile="idma_v0_7")
    assert manifest["params"]["scale_encoding"] == "int8_exponent"
    assert manifest["params"]["options"] == {"dequant_overflow": "saturate", "dequant_ftz": True, "dequant_nan": "canonical"}
    _, manifest16 = _golden(tmp_path / "16", "dequantize", block="mxfp8_e5m2", output="float16", profile="idma_v0_7")
    assert manifest16["params"]["options"] == {"dequant_overflow": "inf", "dequant_ftz": False, "dequant_nan": "canonical"}
    with pytest.raises(ValueError, match="output='bfloat16' is not allowed with profile 'idma_v0_7'"):
        _golden(tmp_path / "bf", "dequantize", block="mxfp8_e5m2", output="bfloat16", profile="idma_v0_7")
    scales = _hex_fields(directory, "scale", 8, 1).reshape(-1)
    codes = _hex_fields(directory, "codes", 8, 32)
    words = _hex_fields(directory, "values", 32, 32)
    checked = 0
    for scale, code, word in ((0xFF, 0x3C, 0x3F000000), (0x80, 0x3C, 0x00000000), (0x7F, 0x7B, 0x7F7FFFFF),
                              (0x00, 0x7D, 0x7FC00000), (0x00, 0xFD, 0x7FC00000)):
        # 1.0 x 2^-1 = 0.5; 1.0 x 2^-128 is an fp32 subnormal, flushed; saturate; NaN canonical
        hits = np.argwhere((scales[:, None] == scale) & (codes == code))
        for row, col in hits:
            assert words[row, col] == word, (hex(scale), hex(code))
        checked += len(hits)
    assert checked > 0


# --------------------------------------------------------------------------------------------------
# Tensor files and the command line


def test_tensor_file_records_the_profile(tmp_path):
    from mxsim import fileformat

    x = random_blocks(1, 4)
    x[0, 0] = np.inf
    t = mxsim.quantize(x, "mxfp8_e4m3", profile="torchao_0_18_floor")
    path = tmp_path / "t.mxt"
    mxsim.save(t, path)
    found = fileformat.read(path)
    assert found.header["profile"] == get_profile("torchao_0_18_floor").as_dict()
    assert found.header["options"]["inf_policy"] == "exponent_field"
    assert found.tensor.profile.name == "torchao_0_18_floor"
    np.testing.assert_array_equal(found.tensor.scales, t.scales)
    plain = tmp_path / "plain.mxt"
    mxsim.save(mxsim.quantize(x, "mxfp8_e4m3"), plain)
    assert "profile" not in fileformat.read(plain).header and mxsim.load(plain).profile is None


def _rewrite_header(path, **fields):
    """Rewrite a version-2 file's header fields, recomputing both checksums."""
    import hashlib
    import json
    import struct

    data = path.read_bytes()
    length = struct.unpack_from("<I", data, 10)[0]
    header = json.loads(data[46 : 46 + length])
    header.update(fields)
    blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    prefix = data[:8] + struct.pack("<HI", 2, len(blob))
    path.write_bytes(prefix + hashlib.sha256(prefix + blob).digest() + blob + data[46 + length :])


def test_tensor_file_refuses_an_unknown_or_changed_profile(tmp_path):
    t = mxsim.quantize(random_blocks(2, 2), "mxfp8_e4m3", profile="gfloat_0_5")
    path = tmp_path / "t.mxt"
    mxsim.save(t, path)
    recorded = get_profile("gfloat_0_5").as_dict()
    _rewrite_header(path, profile=dict(recorded, name="gfloat_9"))
    with pytest.raises(ValueError, match="field 'profile': profile='gfloat_9' is not allowed; expected one of: torchao"):
        mxsim.load(path)
    _rewrite_header(path, profile=dict(recorded, quantize={"inf_policy": "nan"}))
    with pytest.raises(ValueError, match="field 'profile': the options recorded for 'gfloat_0_5' differ"):
        mxsim.load(path)
    _rewrite_header(path, profile="gfloat_0_5")
    with pytest.raises(ValueError, match="field 'profile': 'gfloat_0_5' is not allowed; expected an object"):
        mxsim.load(path)


def test_cli_profile_flags(tmp_path, capsys):
    from mxsim.cli import main

    x = np.zeros((2, 32), np.float32)
    x[0, :2] = [np.inf, 1.0]
    x[1, 0] = 2.0**-120  # torchao FLOOR: scale 0x00, element 64 (0x68) instead of 128
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "x.mxt"
    assert main(["quantize", str(tmp_path / "x.npy"), str(out), "--format", "mxfp8_e4m3",
                 "--profile", "torchao_0_18_floor"]) == 0
    t = mxsim.load(out)
    assert t.profile.name == "torchao_0_18_floor" and t.scales.ravel().tolist() == [0xF7, 0x00]
    assert t.codes[1, 0] == 0x68
    assert main(["quantize", str(tmp_path / "x.npy"), str(out), "--format", "mxfp8_e4m3",
                 "--profile", "torchao_0_18_floor", "--inf-policy", "nan"]) == 0  # a flag overrides the profile
    assert mxsim.load(out).scales.ravel().tolist() == [0xFF, 0x00]
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    assert "profile         torchao_0_18_floor (torchao 0.18.0 (torch 2.13 CPU, eager)): sets inf_policy=exponent_field" \
        in capsys.readouterr().out
    assert main(["dequantize", str(out), str(tmp_path / "y.npy"), "--profile", "tosa_1_1"]) == 0
    with pytest.raises(SystemExit):
        main(["quantize", str(tmp_path / "x.npy"), str(out), "--format", "mxfp8_e4m3", "--profile", "ml_dtypes_0_6"])
    assert "invalid choice: 'ml_dtypes_0_6'" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# The profile pages


def _load_profile_examples():
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "profile_examples", Path(__file__).resolve().parents[2] / "docs" / "hooks" / "profile_examples.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("profile_examples", module)  # dataclasses look their module up
    hooks = str(Path(spec.origin).parent)
    sys.path.insert(0, hooks)  # it imports its neighbour comparison_examples, whichever test file ran first
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(hooks)
    return module


def test_profile_page_examples_are_current():
    """The worked blocks of docs/profiles/*.md, recomputed (the site build checks them too)."""
    module = _load_profile_examples()
    assert {e.profile for e in module.EXAMPLES} == set(PROFILES)
    for example in module.EXAMPLES:
        got, want = example.run(), example.expected()
        assert got == want, (example.profile, example.inputs)


def test_profiles_index_page_examples_run():
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "profiles" / "index.md").read_text()
    blocks = re.findall(r"```pycon\n(.*?)```", text, re.DOTALL)
    assert blocks
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"profiles/index.md[{i}]", "profiles/index.md", 0))
    assert runner.failures == 0
