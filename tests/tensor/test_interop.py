"""mxsim.interop: ml_dtypes arrays, torch tensors, torchao MXTensor, gpt-oss blocks/scales.

Expected values come from outside mxsim: gfloat's decoder and ml_dtypes' / torch's own casts
for every code, hand-worked FP4 bytes, torchao's own quantizer and dequantizer, and a restatement
of gpt-oss's loader (openai/gpt-oss ``gpt_oss/torch/weights.py``) written here.
"""

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import torch
from gfloat import decode_float
from oracle_formats import GFLOAT_FORMATS
from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
from torchao.prototype.mx_formats.mx_tensor import MXTensor as TorchaoMXTensor

import mxsim
from mxsim import FloatFormat
from mxsim.interop import (
    from_gpt_oss,
    from_ml_dtypes,
    from_torch,
    from_torchao,
    to_gpt_oss,
    to_ml_dtypes,
    to_torch,
    to_torchao,
)

# format -> (ml_dtypes dtype, torch dtype, code width); ue4m3 rides in E4M3 with the sign bit 0
DTYPE_NAMES = {
    "fp8_e4m3": (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, 8),
    "fp8_e5m2": (ml_dtypes.float8_e5m2, torch.float8_e5m2, 8),
    "fp6_e3m2": (ml_dtypes.float6_e3m2fn, torch.uint8, 6),
    "fp6_e2m3": (ml_dtypes.float6_e2m3fn, torch.uint8, 6),
    "fp4_e2m1": (ml_dtypes.float4_e2m1fn, torch.float4_e2m1fn_x2, 4),
    "e8m0": (ml_dtypes.float8_e8m0fnu, torch.float8_e8m0fnu, 8),
    "ue4m3": (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, 7),
    "int8": (np.int8, torch.int8, 8),
}
ONE_BYTE_TORCH = [name for name in DTYPE_NAMES if name != "fp4_e2m1"]
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
TORCHAO = [  # (mxsim block format, torchao elem_dtype)
    ("mxfp8_e4m3", torch.float8_e4m3fn),
    ("mxfp8_e5m2", torch.float8_e5m2),
    ("mxfp6_e3m2", DTYPE_FP6_E3M2),
    ("mxfp6_e2m3", DTYPE_FP6_E2M3),
    ("mxfp4_e2m1", torch.float4_e2m1fn_x2),
]


def all_codes(name):
    return np.arange(1 << DTYPE_NAMES[name][2], dtype=np.uint8)


def gfloat_values(name):
    """Every code's value from gfloat (UE4M3: the E4M3 value of the same code, sign bit 0)."""
    fi = GFLOAT_FORMATS["fp8_e4m3" if name == "ue4m3" else name]
    return np.array([decode_float(fi, int(code)).fval for code in all_codes(name)], np.float64)


def assert_same_values(got, want):
    """Equal values, NaN where NaN, and the same sign on every non-NaN (so -0 != +0)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_array_equal(got, want)
    finite = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


def buffer_address(array):
    return array.__array_interface__["data"][0]


def data(shape, seed=0):
    """Gaussian data with per-row magnitudes 2^-20 .. 2^20 (no block near the E8M0 floor)."""
    rng = np.random.default_rng(seed)
    magnitudes = np.exp2(rng.integers(-20, 21, size=shape[:-1] + (1,)))
    return (rng.standard_normal(shape) * magnitudes).astype(np.float32)


def gpt_oss_loader(blocks, scales):
    """gpt-oss's decode restated: low nibble -> element 2j, high -> 2j+1, times 2^(scale - 127)."""
    lut = np.array(E2M1)
    values = np.stack([lut[blocks & 0x0F], lut[blocks >> 4]], axis=-1)  # [..., G, 16, 2]
    values = np.ldexp(values, scales.astype(np.int64)[..., None, None] - 127)
    return values.reshape(scales.shape[:-1] + (scales.shape[-1] * 32,))


# --- ml_dtypes --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(DTYPE_NAMES))
def test_ml_dtypes_view_is_zero_copy_and_round_trips(name):
    codes = all_codes(name)
    view = to_ml_dtypes(codes, name)
    assert view.dtype == np.dtype(DTYPE_NAMES[name][0]) and view.shape == codes.shape
    assert np.shares_memory(view, codes)
    back, fmt = from_ml_dtypes(view, fmt=name)
    assert fmt == name and back.dtype == np.uint8 and np.shares_memory(back, codes)
    assert np.array_equal(back, codes)


@pytest.mark.parametrize("name", list(DTYPE_NAMES))
def test_ml_dtypes_decode_matches_gfloat_and_mxsim(name):
    codes = all_codes(name)
    got = to_ml_dtypes(codes, name).astype(np.float64)
    if name == "int8":
        got = got / 64  # numpy int8 carries q; the MXINT8 value is q / 64
    assert_same_values(got, gfloat_values(name))
    assert_same_values(got, mxsim.decode(codes, name).astype(np.float64))


def test_from_ml_dtypes_names_the_dtypes_own_format():
    values = np.array([0.5, 6.0, -1.0, 3.0])
    for dtype, name in [(ml_dtypes.float4_e2m1fn, "fp4_e2m1"), (ml_dtypes.float8_e4m3fn, "fp8_e4m3"),
                        (ml_dtypes.float8_e8m0fnu, "e8m0"), (np.int8, "int8")]:
        assert from_ml_dtypes(np.abs(values).astype(dtype))[1] == name
    codes, name = from_ml_dtypes(values.astype(ml_dtypes.float4_e2m1fn))
    assert name == "fp4_e2m1" and codes.tolist() == [0x1, 0x7, 0xA, 0x5]


def test_custom_format_with_the_same_parameters_has_a_carrier():
    mine = FloatFormat("my_e4m3", 4, 3, 7, specials="fn")
    assert to_ml_dtypes(np.array([0x7E], np.uint8), mine).astype(np.float64).tolist() == [448.0]


def test_other_integer_dtypes_are_converted():
    view = to_ml_dtypes(np.array([1, 7], np.int64), "fp4_e2m1")
    assert view.astype(np.float64).tolist() == [0.5, 6.0]


@pytest.mark.parametrize(
    "fmt, codes, match",
    [
        ("mx9", [0], r"fmt='mx9'.*allowed formats: fp8_e4m3"),
        ("int8_sm", [0], r"fmt='int8_sm' has no ml_dtypes/torch dtype; allowed formats: fp8_e4m3"),
        ("fp7_nope", [0], r"fmt='fp7_nope' is not a known format.*allowed formats"),
        (FloatFormat("e4m3_ieee", 4, 3, 7), [0], r"fmt='e4m3_ieee' has no ml_dtypes/torch dtype"),
        ("fp4_e2m1", [16], r"codes hold values outside \[0, 15\]"),
        ("fp6_e2m3", [0x40], r"codes hold values outside \[0, 63\]"),
        ("ue4m3", [0x80], r"codes hold values outside \[0, 127\]"),
        ("fp8_e4m3", [256], r"codes hold values outside \[0, 255\]"),
        ("fp8_e4m3", [-1], r"codes hold values outside \[0, 255\]"),
        ("fp8_e4m3", [0.5], r"codes must be an integer array.*got dtype float64"),
    ],
)
def test_to_ml_dtypes_rejects(fmt, codes, match):
    with pytest.raises(ValueError, match=match):
        to_ml_dtypes(np.array(codes), fmt)


def test_from_ml_dtypes_rejects():
    with pytest.raises(ValueError, match=r"array has dtype float32; allowed dtypes: float8_e4m3fn"):
        from_ml_dtypes(np.zeros(2, np.float32))
    stray = np.array([0x17], np.uint8).view(ml_dtypes.float4_e2m1fn)  # ml_dtypes reads it as -6
    with pytest.raises(ValueError, match=r"array hold values outside \[0, 15\]"):
        from_ml_dtypes(stray)
    with pytest.raises(
        ValueError, match=r"fmt='fp8_e5m2' is not carried by dtype float8_e4m3fn; allowed: fp8_e4m3, ue4m3$"
    ):
        from_ml_dtypes(np.zeros(2, ml_dtypes.float8_e4m3fn), fmt="fp8_e5m2")
    with pytest.raises(ValueError, match=r"array hold values outside \[0, 127\]"):
        from_ml_dtypes(np.array([-1.0], ml_dtypes.float8_e4m3fn), fmt="ue4m3")


# --- torch ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ONE_BYTE_TORCH)
def test_torch_view_is_zero_copy_and_round_trips(name):
    codes = all_codes(name)
    tensor = to_torch(codes, name)
    assert tensor.dtype == DTYPE_NAMES[name][1] and tuple(tensor.shape) == codes.shape
    assert tensor.data_ptr() == buffer_address(codes)
    back, fmt = from_torch(tensor, fmt=name if name in ("ue4m3", "fp6_e3m2", "fp6_e2m3") else None)
    assert fmt == name and np.shares_memory(back, codes) and np.array_equal(back, codes)


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2", "e8m0", "ue4m3", "int8"])
def test_torch_decode_matches_gfloat_and_ml_dtypes(name):
    codes = all_codes(name)
    got = to_torch(codes, name).to(torch.float64).numpy()
    if name == "int8":
        got = got / 64
    assert_same_values(got, gfloat_values(name))
    assert_same_values(got, to_ml_dtypes(codes, name).astype(np.float64) / (64 if name == "int8" else 1))


def test_torch_views_follow_strides():
    codes = np.arange(24, dtype=np.uint8).reshape(4, 6)
    tensor = to_torch(codes.T, "fp8_e4m3")  # a transposed view: still no copy
    assert tensor.data_ptr() == buffer_address(codes) and tuple(tensor.shape) == (6, 4)
    back, _ = from_torch(tensor)
    assert np.shares_memory(back, codes) and np.array_equal(back, codes.T)
    reversed_codes = codes[:, ::-1]  # negative strides: torch cannot view them, so a copy
    assert np.array_equal(to_torch(reversed_codes, "e8m0").view(torch.uint8).numpy(), reversed_codes)


def test_fp4_packing_hand_example():
    codes = mxsim.encode(np.array([0.5, 6.0, -1.0, 3.0], np.float32), "fp4_e2m1")
    assert codes.tolist() == [0x1, 0x7, 0xA, 0x5]  # S EE M
    packed = to_torch(codes, "fp4_e2m1")
    assert packed.dtype == torch.float4_e2m1fn_x2 and tuple(packed.shape) == (2,)
    assert packed.view(torch.uint8).tolist() == [0x71, 0x5A]
    with pytest.raises(NotImplementedError):  # torch 2.13 has no float4_e2m1fn_x2 -> float cast
        packed.to(torch.float32)
    nibbles = packed.view(torch.uint8).numpy()
    by_hand = [E2M1[n] for byte in nibbles for n in (byte & 0xF, byte >> 4)]
    assert by_hand == [0.5, 6.0, -1.0, 3.0]
    back, fmt = from_torch(packed)
    assert fmt == "fp4_e2m1" and back.tolist() == [0x1, 0x7, 0xA, 0x5]


def test_fp4_every_byte_and_leading_axes():
    pairs = np.arange(256).reshape(2, 8, 16)  # every byte once
    codes = np.stack([pairs & 0xF, pairs >> 4], axis=-1).reshape(2, 8, 32).astype(np.uint8)
    packed = to_torch(codes, "fp4_e2m1")
    assert tuple(packed.shape) == (2, 8, 16)
    assert np.array_equal(packed.view(torch.uint8).numpy(), pairs)
    back, fmt = from_torch(packed)
    assert fmt == "fp4_e2m1" and back.shape == (2, 8, 32) and np.array_equal(back, codes)
    assert np.array_equal(from_torch(packed.view(torch.uint8), fmt="fp4_e2m1")[0], codes)  # torchao's uint8 qdata


def test_torch_rejects():
    with pytest.raises(ValueError, match=r"codes of shape \(3,\).*length must be even"):
        to_torch(np.array([1, 2, 3], np.uint8), "fp4_e2m1")
    with pytest.raises(ValueError, match=r"fmt='mx4'.*allowed formats: fp8_e4m3, fp8_e5m2"):
        to_torch(np.zeros(2, np.uint8), "mx4")
    with pytest.raises(ValueError, match=r"codes hold values outside \[0, 63\]"):
        to_torch(np.array([64], np.uint8), "fp6_e3m2")
    with pytest.raises(
        ValueError, match=r"tensor has dtype torch.float32; allowed dtypes: torch.float8_e4m3fn, torch.fl"
    ):
        from_torch(torch.zeros(2))
    with pytest.raises(ValueError, match=r"torch.uint8 tensor needs fmt=.*allowed formats: fp8_e4m3"):
        from_torch(torch.zeros(2, dtype=torch.uint8))
    with pytest.raises(
        ValueError, match=r"fmt='fp8_e4m3' is not carried by dtype torch.float8_e5m2; allowed: fp8_e5m2$"
    ):
        from_torch(torch.zeros(2, dtype=torch.float8_e5m2), fmt="fp8_e4m3")
    with pytest.raises(ValueError, match=r"tensor hold values outside \[0, 127\]"):
        from_torch(torch.tensor([0x80], dtype=torch.uint8).view(torch.float8_e4m3fn), fmt="ue4m3")
    with pytest.raises(TypeError, match=r"tensor must be a torch.Tensor"):
        from_torch(np.zeros(2, np.uint8))


# --- torchao ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt, elem_dtype", TORCHAO)
def test_from_torchao_matches_mxsim_floor(fmt, elem_dtype):
    x = data((4, 3, 96))
    ao = TorchaoMXTensor.to_mx(torch.from_numpy(x), elem_dtype, block_size=32)
    mx = from_torchao(ao)
    want = mxsim.quantize(x, fmt, scale_rule="floor")
    assert mx.fmt.name == fmt and mx.shape == x.shape and mx.axis == 2
    assert np.array_equal(mx.scales, want.scales) and np.array_equal(mx.codes, want.codes)
    assert np.array_equal(mx.dequantize(), ao.dequantize(torch.float32).numpy())


@pytest.mark.parametrize("fmt, elem_dtype", TORCHAO)
def test_to_torchao_dequantizes_like_mxsim(fmt, elem_dtype):
    mx = mxsim.quantize(data((5, 64), seed=1), fmt)
    ao = to_torchao(mx)
    assert isinstance(ao, TorchaoMXTensor) and ao.elem_dtype == elem_dtype and ao.block_size == 32
    assert tuple(ao.shape) == mx.shape and ao.scale.dtype == torch.float8_e8m0fnu and not ao.is_swizzled_scales
    assert np.array_equal(ao.dequantize(torch.float32).numpy(), mx.dequantize())
    assert ao.scale.data_ptr() == buffer_address(mx.scales)
    if fmt != "mxfp4_e2m1":  # MXFP8 and MXFP6 qdata share mx.codes; MXFP4 is packed (a copy)
        assert ao.qdata.data_ptr() == buffer_address(mx.codes)
    back = from_torchao(ao)
    assert np.array_equal(back.codes, mx.codes) and np.array_equal(back.scales, mx.scales)


@pytest.mark.parametrize("fmt, elem_dtype", [TORCHAO[0], TORCHAO[4]])
def test_torchao_transposed_is_axis_0(fmt, elem_dtype):
    x = data((64, 6), seed=2)
    ao = to_torchao(mxsim.quantize(x, fmt, axis=0))  # torchao's transposed layout
    assert tuple(ao.shape) == (64, 6) and not ao.qdata.is_contiguous()
    assert np.array_equal(ao.dequantize(torch.float32).numpy(), mxsim.quantize(x, fmt, axis=0).dequantize())
    own = TorchaoMXTensor.to_mx(torch.from_numpy(np.ascontiguousarray(x.T)), elem_dtype, block_size=32).t()
    mx = from_torchao(own)
    assert mx.axis == 0 and mx.shape == (64, 6)
    assert np.array_equal(mx.dequantize(), own.dequantize(torch.float32).numpy())


def test_torchao_swizzled_scales_are_unswizzled():
    x = torch.from_numpy(data((200, 96), seed=3))  # 200 x 3 scales: padded to 256 x 4, two tiles
    plain = TorchaoMXTensor.to_mx(x, torch.float8_e4m3fn, block_size=32)
    swizzled = TorchaoMXTensor.to_mx(x, torch.float8_e4m3fn, block_size=32, is_swizzled_scales=True)
    assert tuple(swizzled.scale.shape) != tuple(plain.scale.shape)
    mx = from_torchao(swizzled)
    assert np.array_equal(mx.scales, plain.scale.view(torch.uint8).numpy())
    assert np.array_equal(mx.dequantize(), swizzled.dequantize(torch.float32).numpy())


def test_torchao_other_block_size_is_a_custom_format():
    x = torch.from_numpy(data((3, 48), seed=4))
    ao = TorchaoMXTensor.to_mx(x, torch.float4_e2m1fn_x2, block_size=16)
    mx = from_torchao(ao)
    assert mx.fmt.block_size == 16 and mx.fmt.element == mxsim.get_format("fp4_e2m1")
    assert np.array_equal(mx.dequantize(), ao.dequantize(torch.float32).numpy())
    assert np.array_equal(to_torchao(mx).dequantize(torch.float32).numpy(), mx.dequantize())


@pytest.mark.parametrize(
    "mx, match",
    [
        (mxsim.quantize(np.ones((2, 32), np.float32), "mxint8"), r"format 'mxint8'; torchao holds .*mxfp8_e4m3"),
        (mxsim.quantize(np.ones((2, 32), np.float32), "nvfp4"), r"format 'nvfp4'"),
        (mxsim.quantize(np.ones((2, 32), np.float32), "mx9"), r"format 'mx9'"),
        (mxsim.quantize(np.ones((2, 40), np.float32), "mxfp8_e4m3"), r"partial block: axis length 40"),
        (mxsim.quantize(np.ones((2, 32, 3), np.float32), "mxfp8_e4m3", axis=1), r"axis=1.*last axis"),
    ],
)
def test_to_torchao_rejects(mx, match):
    with pytest.raises(ValueError, match=match):
        to_torchao(mx)


def test_from_torchao_rejects():
    with pytest.raises(TypeError, match=r"t must be a torchao .*MXTensor, got Tensor"):
        from_torchao(torch.zeros(2))


# --- gpt-oss ----------------------------------------------------------------------------------
def test_gpt_oss_hand_example():
    blocks = np.zeros((1, 16), np.uint8)
    blocks[0, :2] = [0x71, 0x5A]
    mx = from_gpt_oss(blocks, np.array([128], np.uint8))  # scale 2^1
    assert mx.shape == (32,) and mx.dequantize()[:4].tolist() == [1.0, 12.0, -2.0, 6.0]


def test_gpt_oss_export_decodes_with_the_gpt_oss_loader():
    x = data((3, 4, 96), seed=5)  # experts x rows x (G = 3 blocks of 32)
    mx = mxsim.quantize(x, "mxfp4_e2m1")
    blocks, scales = to_gpt_oss(mx)
    assert blocks.dtype == scales.dtype == np.uint8
    assert blocks.shape == (3, 4, 3, 16) and scales.shape == (3, 4, 3)
    assert np.shares_memory(scales, mx.scales)
    assert np.array_equal(gpt_oss_loader(blocks, scales), mx.dequantize(np.float64))
    back = from_gpt_oss(blocks, scales)
    assert back.shape == x.shape and back.fmt.name == "mxfp4_e2m1"
    assert np.array_equal(back.codes, mx.codes) and np.array_equal(back.scales, mx.scales)


def test_gpt_oss_any_bytes_round_trip():
    rng = np.random.default_rng(6)
    blocks = rng.integers(0, 256, (2, 5, 4, 16), dtype=np.uint8)
    scales = rng.integers(0, 255, (2, 5, 4), dtype=np.uint8)  # 0xFF excluded: see below
    mx = from_gpt_oss(torch.from_numpy(blocks), scales)  # a CPU torch tensor reads as an array
    assert mx.shape == (2, 5, 128)
    assert np.array_equal(mx.dequantize(np.float64), gpt_oss_loader(blocks, scales))
    again = to_gpt_oss(mx)
    assert np.array_equal(again[0], blocks) and np.array_equal(again[1], scales)


def test_gpt_oss_scale_0xff_is_nan_in_mxsim_only():
    blocks = np.full((1, 16), 0x71, np.uint8)
    scales = np.array([0xFF], np.uint8)
    assert np.isnan(from_gpt_oss(blocks, scales).dequantize()).all()
    loaded = gpt_oss_loader(blocks, scales)  # the loader scales by 2^128 (overflowing to Inf in bf16 for 6)
    assert not np.isnan(loaded).any() and loaded[:2].tolist() == [0.5 * 2.0**128, 6 * 2.0**128]


def test_gpt_oss_rejects():
    x = np.ones((2, 64), np.float32)
    with pytest.raises(ValueError, match=r"format 'mxfp8_e4m3'; gpt-oss stores only mxfp4_e2m1"):
        to_gpt_oss(mxsim.quantize(x, "mxfp8_e4m3"))
    with pytest.raises(ValueError, match=r"axis=0; gpt-oss needs blocks along the last axis"):
        to_gpt_oss(mxsim.quantize(x.T, "mxfp4", axis=0))
    with pytest.raises(ValueError, match=r"shape \(2, 40\).*multiple of 32"):
        to_gpt_oss(mxsim.quantize(np.ones((2, 40), np.float32), "mxfp4"))
    with pytest.raises(ValueError, match=r"blocks has dtype int16; expected uint8"):
        from_gpt_oss(np.zeros((2, 16), np.int16), np.zeros(2, np.uint8))
    with pytest.raises(
        ValueError, match=r"blocks has shape \(2, 16\) and scales \(3,\); expected blocks \[\.\.\., G, 16"
    ):
        from_gpt_oss(np.zeros((2, 16), np.uint8), np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match=r"blocks has shape \(2, 8\)"):
        from_gpt_oss(np.zeros((2, 8), np.uint8), np.zeros(2, np.uint8))


# --- optional dependencies ----------------------------------------------------------------------
def _block(monkeypatch, package):
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, package, None)


@pytest.mark.parametrize(
    "package, function, call",
    [
        ("ml_dtypes", "to_ml_dtypes", lambda: to_ml_dtypes(np.zeros(1, np.uint8), "e8m0")),
        ("ml_dtypes", "from_ml_dtypes", lambda: from_ml_dtypes(np.zeros(1, np.uint8))),
        ("torch", "to_torch", lambda: to_torch(np.zeros(1, np.uint8), "e8m0")),
        ("torch", "from_torch", lambda: from_torch(None)),
        ("torch", "to_torchao", lambda: to_torchao(None)),
        ("torchao", "to_torchao", lambda: to_torchao(None)),
        ("torchao", "from_torchao", lambda: from_torchao(None)),
    ],
)
def test_missing_optional_dependency(monkeypatch, package, function, call):
    _block(monkeypatch, package)
    with pytest.raises(ModuleNotFoundError, match=rf"mxsim.interop.{function} needs the optional package '{package}'"
                       rf".*pip install {package}"):
        call()


def test_import_does_not_need_the_optional_packages():
    script = """
import sys
for name in ("ml_dtypes", "torch", "torchao"):
    sys.modules[name] = None
import numpy as np
import mxsim, mxsim.interop as interop
mx = mxsim.quantize(np.linspace(-6, 6, 64, dtype=np.float32), "mxfp4")
assert np.array_equal(interop.from_gpt_oss(*interop.to_gpt_oss(mx)).codes, mx.codes)  # numpy only
try:
    interop.to_torch(mx.codes, "fp4_e2m1")
except ModuleNotFoundError as exc:
    assert "pip install torch" in str(exc), exc
else:
    raise AssertionError("to_torch worked without torch")
"""
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    optional = "{'torch', 'ml_dtypes', 'torchao'}"
    loaded = f"import sys, mxsim.interop; print(sorted({{m.split('.')[0] for m in sys.modules}} & {optional}))"
    result = subprocess.run([sys.executable, "-c", loaded], check=True, capture_output=True, text=True)
    assert result.stdout.strip() == "[]"
