"""Hardening: inputs the library must read correctly or refuse clearly (issue "Hardening").

* any byte order of every array input (big-endian floats and codes read value for value);
* NVFP4 inputs beyond fp32 (finite float64) quantize like any large finite value;
* tensor scales: a finite positive fp32 value, checked for real; NumPy integer codes in ``ref``;
* options that do not apply to a format, and a bool ``axis``, are refused, naming the option.

Expected values are hand-worked from the format definitions (OCP MX v1.0, docs/numerics.md), or
come from ml_dtypes, or (for byte order) from the same input in native order.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import mxsim
import mxsim.interop
import mxsim.strategies
from mxsim import MXTensor, ref
from mxsim import tensor_pack
from mxsim.fast import pack as fast_pack
from mxsim.fast.dot import Operand, dot_blocks
from mxsim.ref import QuantizedBlock

FP32_MAX = Fraction(float(np.finfo(np.float32).max))  # (2 - 2^-23) * 2^127
TWO = Fraction(2)

# =================================================================================================
# Byte order
# =================================================================================================

# E4M3 by hand: 0.3 = 1.2 * 2^-2 -> 1.25 * 2^-2 (field 5, mantissa 2) = 0x2A; 7 = 1.75 * 2^2
# (field 9, mantissa 6) = 0x4E; -0 = 0x80; 448 = max = 0x7E.
E4M3_CASE = ([0.3, 7.0, -0.0, 448.0], [0x2A, 0x4E, 0x80, 0x7E])


@pytest.mark.parametrize("dtype", [">f2", ">f4", ">f8", "<f2", "<f4", "<f8"])
def test_encode_reads_any_byte_order(dtype):
    """mxsim.encode(np.array([0.3, 7, -0.0, 448], '>f8'), 'fp8_e4m3') gave [126 126 126 126], and
    '>f4' raised a shape error from inside the kernel."""
    values, codes = E4M3_CASE
    x = np.array(values, dtype)
    assert mxsim.encode(x, "fp8_e4m3").tolist() == codes
    assert mxsim.encode(x, "fp8_e4m3", "rna").tolist() == codes  # the generic kernel
    assert mxsim.encode(x[:2], "int8", "rtz").tolist() == [0x13, 0x7F]  # int kernel: 0.3 * 64 = 19.2 -> 19; 7 saturates


@pytest.mark.parametrize("dtype", [">f4", ">f8"])
def test_encode_big_endian_matches_ml_dtypes(dtype):
    rng = np.random.default_rng(11)
    x = np.clip(rng.standard_normal(4096) * 2.0 ** rng.integers(-12, 10, 4096), -448, 448).astype(np.float32)
    expected = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)  # in range: ml_dtypes and mxsim both round rne
    np.testing.assert_array_equal(mxsim.encode(x.astype(dtype), "fp8_e4m3"), expected)


def test_encode_big_endian_bfloat16():
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = np.array([0.3, 7.0, -0.0, 448.0], np.float32).astype(bf16)
    swapped = x.astype(bf16.newbyteorder(">"))
    assert not swapped.dtype.isnative
    np.testing.assert_array_equal(mxsim.encode(swapped, "fp8_e4m3"), mxsim.encode(x, "fp8_e4m3"))


@pytest.mark.parametrize("dtype", [">u2", ">i2", ">i4", ">u8"])
def test_decode_reads_any_byte_order(dtype):
    np.testing.assert_array_equal(
        mxsim.decode(np.array(E4M3_CASE[1], dtype), "fp8_e4m3"), np.array([0.3125, 7.0, -0.0, 448.0], np.float32)
    )


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxint8", "mx9", "nvfp4", "mxfp4_e2m1"])
@pytest.mark.parametrize("dtype", [">f2", ">f4", ">f8"])
def test_quantize_reads_any_byte_order(fmt, dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 64)) * 8).astype(dtype)
    native = x.astype(x.dtype.newbyteorder("="))
    a, b = mxsim.quantize(x, fmt), mxsim.quantize(native, fmt)
    np.testing.assert_array_equal(a.scales, b.scales)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert a.tensor_scale == b.tensor_scale


@pytest.mark.parametrize("dtype", [">u2", ">i4", ">u8", "<u2"])
def test_codes_in_any_byte_order(dtype):
    """from_codes (with sub-scales), fast dot operands, pack_blocks and interop read big-endian codes."""
    codes = np.array(E4M3_CASE[1] * 8)
    t = MXTensor.from_codes(np.array([127], dtype), codes.astype(dtype), "mxfp8_e4m3")
    assert t.dequantize(np.float64)[:4].tolist() == [0.3125, 7.0, -0.0, 448.0]  # scale 2^0
    mx9 = MXTensor.from_codes(np.array([128], dtype), np.arange(16).astype(dtype), "mx9",
                              subscales=np.array([[0, 1] * 4], dtype))
    # MX9 element code c = +c * 2^(E - tau - 6), E = 1: element 1 (sub-block 0, tau 0) -> 1/32;
    # element 3 (sub-block 1, tau 1) -> 3/64
    assert mx9.dequantize(np.float64)[[1, 3]].tolist() == [1 / 32, 3 / 64]
    fmt = mxsim.get_format("mxfp8_e4m3")
    native = Operand(fmt, np.array([127], np.uint8), None, codes.reshape(1, 32).astype(np.uint8))
    if dtype[1] == "u":  # dot operands are unsigned by contract
        swapped = Operand(fmt, np.array([127], dtype), None, codes.reshape(1, 32).astype(dtype))
        assert dot_blocks(swapped, native).codes.tolist() == dot_blocks(native, native).codes.tolist()
    assert fast_pack.pack_blocks("mxfp8_e4m3", np.array([127], dtype), None, codes.astype(dtype)) == bytes(
        [127] + list(codes)
    )
    assert mxsim.interop.to_ml_dtypes(codes.astype(dtype), "fp8_e4m3").view(np.uint8).tolist() == codes.tolist()


# =================================================================================================
# NVFP4 beyond fp32, tensor scales
# =================================================================================================


@pytest.mark.parametrize("arith", ["exact", "fp32_steps"])
def test_nvfp4_finite_float64_beyond_fp32_saturates(arith):
    """mxsim.quantize(np.full(16, 1e42), 'nvfp4') raised 'inf has no rational value'.

    1e42 / (6 * 448) = 3.7e38 rounds to Inf in fp32: s_t saturates to FP32_MAX (a finite fp32,
    as the contract needs). Block scale: 1e42 / 6 / FP32_MAX = 489.7 -> clamp 448 (UE4M3 0x7E);
    elements 1e42 / (448 * FP32_MAX) = 6.56 -> saturate at 6 (E2M1 0b0111; -6 is 0b1111)."""
    x = np.full(32, 1e42)
    x[16:] = -1e42
    t = mxsim.quantize(x, "nvfp4", nvfp4_arith=arith)
    assert t.tensor_scale == FP32_MAX
    assert t.scales.tolist() == [0x7E, 0x7E]
    assert t.codes.tolist() == [0x7] * 16 + [0xF] * 16
    assert t.dequantize(np.float64)[0] == 6 * 448 * float(FP32_MAX)  # 9.15e41, exact in float64
    assert np.isinf(t.dequantize(np.float32)[0])  # beyond float32: rounds to Inf
    expected = ref.quantize_block(list(x[:16]), "nvfp4", mxsim.QuantizeOptions(nvfp4_arith=arith),
                                  tensor_scale=FP32_MAX)
    assert (expected.scale, list(expected.codes)) == (0x7E, [0x7] * 16)


def test_nvfp4_inf_under_saturate_does_not_lower_a_larger_float64_amax():
    """inf_policy='saturate': an Inf counts as FP32_MAX in the amax, as in the block amax; a larger
    finite float64 value (1e42) stays the amax (s_t was computed from FP32_MAX instead)."""
    x = np.full(32, 1e42)
    x[20] = np.inf
    t = mxsim.quantize(x, "nvfp4", inf_policy="saturate")
    assert t.tensor_scale == FP32_MAX  # fp32(1e42 / 2688) overflows: saturated
    assert t.scales.tolist() == [0x7E, 0x7E] and set(t.codes.ravel().tolist()) == {0x7}


def test_nvfp4_tensor_scale_saturates_only_beyond_fp32():
    """s_t = fp32(amax / 2688): the largest amax whose s_t is finite in IEEE rounding is just below
    2688 * (2^128 - 2^103) (the fp32 overflow threshold); above it s_t is FP32_MAX, not an error."""
    threshold = 2688 * (TWO**128 - TWO**103)
    assert ref.nvfp4_tensor_scale(threshold - 1) == FP32_MAX  # rounds down to FP32_MAX anyway
    assert ref.nvfp4_tensor_scale(threshold) == FP32_MAX  # IEEE: a tie to even overflows
    assert ref.nvfp4_tensor_scale(Fraction(10) ** 300) == FP32_MAX
    assert ref.nvfp4_tensor_scale(Fraction(2688)) == 1


def test_nvfp4_fp32_steps_block_beyond_fp32_with_finite_tensor_scale():
    """amax = 3e39: s_t = fp32(3e39 / 2688) is finite, but the first fp32 step amax / 6 = 5e38
    overflows to Inf (the reference raised 'inf has no rational value'). Inf / s_t = Inf, clamped
    to 448 (0x7E); the elements x * fp32(fp32(1 / s_t) / 448) are 6 within fp32 rounding -> 0b0111."""
    t = mxsim.quantize(np.full(16, 3e39), "nvfp4", nvfp4_arith="fp32_steps")
    assert t.scales.tolist() == [0x7E] and t.codes.tolist() == [0x7] * 16


@pytest.mark.parametrize(
    "tensor_scale",
    [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, -1.0, 1e-45, 2.0**-150, 1e39, 1 / 3, Fraction(1, 3),
     2.0**128, 1 + 2.0**-24, "0.5", True, None],
)
def test_from_codes_refuses_tensor_scales_fp32_cannot_hold(tensor_scale):
    """tensor_scale=inf gave OverflowError from inside Fraction; 1e-45, 1e39 and 2^-150 were
    accepted (the float32 test compared in float64 under NumPy 2's promotion)."""
    scales, codes = np.array([0x38], np.uint8), np.zeros(16, np.uint8)
    if tensor_scale is None:
        assert MXTensor.from_codes(scales, codes, "nvfp4").tensor_scale is None
        return
    with pytest.raises(ValueError, match=r"tensor_scale=.* is not allowed; expected a finite positive value exactly"):
        MXTensor.from_codes(scales, codes, "nvfp4", tensor_scale=tensor_scale)


@pytest.mark.parametrize(
    "tensor_scale, exact",
    [(2.0**-149, TWO**-149), (float(np.finfo(np.float32).max), FP32_MAX), (np.float32(0.1), Fraction(13421773, 2**27)),
     (3, Fraction(3)), (Fraction(3, 4), Fraction(3, 4)), (np.float64(2.0**-126), TWO**-126)],
)
def test_from_codes_accepts_fp32_tensor_scales_and_they_survive_save_load(tmp_path, tensor_scale, exact):
    """Every positive fp32 value is a tensor scale, subnormals included (mxsim gives tiny tensors a
    subnormal s_t, e.g. 2^-149); float32(0.1) = 13421773 / 2^27."""
    t = MXTensor.from_codes(np.array([0x38], np.uint8), np.full(16, 2, np.uint8), "nvfp4", tensor_scale=tensor_scale)
    assert t.tensor_scale == exact
    mxsim.save(t, tmp_path / "t.mxt")
    back = mxsim.load(tmp_path / "t.mxt")
    assert back.tensor_scale == exact
    assert back.dequantize(np.float64)[0] == float(exact)  # element 1.0 (code 2) * scale 1.0 (0x38) * s_t


def test_quantize_tiny_tensor_scale_round_trips_through_from_codes():
    x = np.zeros(16, np.float32)
    x[0] = 2.0**-149
    t = mxsim.quantize(x, "nvfp4")
    assert t.tensor_scale == TWO**-149  # fp32(2^-149 / 2688) = 0 -> the smallest subnormal
    again = MXTensor.from_codes(t.scales, t.codes, "nvfp4", tensor_scale=t.tensor_scale)
    np.testing.assert_array_equal(again.dequantize(np.float64), t.dequantize(np.float64))


@pytest.mark.parametrize("call", [
    lambda ts: ref.quantize_block([1.0] * 16, "nvfp4", tensor_scale=ts),
    lambda ts: ref.dequantize_block(QuantizedBlock(0x38, (), (0,) * 16), "nvfp4", tensor_scale=ts),
    lambda ts: mxsim.strategies.check_block_quantizer(lambda v: (0, [0] * 16), "nvfp4", tensor_scale=ts),
])
@pytest.mark.parametrize("tensor_scale", [float("inf"), 1e-45, 1e39])
def test_every_tensor_scale_entry_point_checks_it(call, tensor_scale):
    with pytest.raises(ValueError, match="tensor_scale="):
        call(tensor_scale)


# =================================================================================================
# NumPy integer scalars as codes in ref
# =================================================================================================


@pytest.mark.parametrize("kind", [np.int64, np.uint8, np.int16, np.uint64, np.dtype(">i4").type])
def test_ref_decode_accepts_numpy_integers(kind):
    """ref.decode(np.int64(3), 'fp4_e2m1') said the code was out of range. E2M1 0b0011 = 1.5."""
    assert ref.decode(kind(3), "fp4_e2m1").value == Fraction(3, 2)
    assert ref.decode(kind(0xFF), "fp8_e4m3").is_nan


def test_ref_block_paths_accept_numpy_integer_codes():
    """A block of NumPy integers (scale, microexponents, codes) is the same block as Python ints.
    MX9 by hand: scale 0x80 (E = 1); element code 3 is +3 * 2^(E - tau - 6); tau = 1 -> 3/64."""
    block = QuantizedBlock(np.uint8(0x80), (np.uint8(1),) + (np.uint8(0),) * 7, tuple(np.uint8(3) for _ in range(16)))
    values = ref.dequantize_block(block, "mx9")
    assert values[0].value == Fraction(3, 64) and values[2].value == Fraction(3, 32)
    plain = QuantizedBlock(0x80, (1,) + (0,) * 7, (3,) * 16)
    assert ref.dot.dot(block, block, "mx9").code == ref.dot.dot(plain, plain, "mx9").code
    assert ref.encode(0.3, "fp4_e2m1", "stochastic", rand_bits=np.uint32(0)) == 0  # floor(0.6) -> 0 (code of +0)
    assert ref.encode(0.3, "fp4_e2m1", "stochastic", rand_bits=np.uint32(3 << 30)) == 1  # 0.6 + 0.75 -> 1 (0.5)


@pytest.mark.parametrize("bad", [True, np.True_, 1.0, "3"])
def test_ref_decode_refuses_non_integers(bad):
    with pytest.raises(ValueError, match="out of range for format 'fp4_e2m1'"):
        ref.decode(bad, "fp4_e2m1")


# =================================================================================================
# Options that do not apply; axis
# =================================================================================================

X32 = np.ones(32, np.float32)


@pytest.mark.parametrize(
    "fmt, option, value, applies_to",
    [
        ("mxfp4_e2m1", "nvfp4_arith", "fp32_steps", "nvfp4"),
        ("mxfp8_e4m3", "nvfp4_scale_min", "subnormal", "nvfp4"),
        ("mx9", "nvfp4_tensor_scale", "none", "nvfp4"),
        ("mxfp8_e4m3", "int8_allow_neg2", True, "mxint8"),
        ("nvfp4", "int8_allow_neg2", True, "mxint8"),
        ("mx9", "scale_rule", "ceil", "mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1, mxint8"),
    ],
)
def test_block_options_that_do_not_apply_are_refused(fmt, option, value, applies_to):
    """nvfp4_arith on mxfp4, int8_allow_neg2 on fp8 etc. were accepted silently."""
    message = f"{option}={value!r} is not allowed for format {fmt!r}: the option applies to {applies_to} only"
    x = np.ones(mxsim.get_format(fmt).block_size * 2, np.float32)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mxsim.quantize(x, fmt, **{option: value})
    with pytest.raises(ValueError, match=option):
        ref.quantize_block([1.0] * (len(x) // 2), fmt, mxsim.QuantizeOptions(**{option: value}))
    k = mxsim.get_format(fmt).block_size
    subscales = np.zeros((1, mxsim.get_format(fmt).subblocks), np.uint8) if mxsim.get_format(fmt).subblocks else None
    with pytest.raises(ValueError, match=option):
        MXTensor.from_codes(np.zeros(1, np.uint8), np.zeros(k, np.uint8), fmt, subscales=subscales, **{option: value})


@pytest.mark.parametrize(
    "fmt, options",
    [("mxfp4_e2m1", {"nvfp4_arith": "exact", "nvfp4_scale_min": "normal", "nvfp4_tensor_scale": "amax"}),
     ("nvfp4", {"int8_allow_neg2": False, "scale_rule": "floor"}),
     ("mxint8", {"int8_allow_neg2": True, "scale_rule": "ceil"}),
     ("nvfp4", {"nvfp4_arith": "fp32_steps", "nvfp4_scale_min": "subnormal", "nvfp4_tensor_scale": "none"})],
)
def test_options_at_their_default_or_where_they_apply_are_accepted(fmt, options):
    mxsim.quantize(X32, fmt, **options)


@pytest.mark.parametrize("call", [mxsim.encode, ref.encode])
def test_element_int8_allow_neg2_only_for_twos_complement_integers(call):
    x = np.float32(-2.0) if call is mxsim.encode else -2.0
    message = "int8_allow_neg2=True is not allowed for format 'fp8_e4m3': the option applies to int8 only"
    with pytest.raises(ValueError, match=message):
        call(x, "fp8_e4m3", int8_allow_neg2=True)
    with pytest.raises(ValueError, match="int8_allow_neg2=True is not allowed for format 'int8_sm'"):
        call(x, "int8_sm", int8_allow_neg2=True)
    with pytest.raises(ValueError, match="int8_allow_neg2='yes' is not allowed; expected True or False"):
        call(x, "int8", int8_allow_neg2="yes")
    assert int(call(x, "int8", int8_allow_neg2=True)) == 0x80  # -2 * 64 = -128: two's complement 0x80
    assert int(call(x, "fp8_e4m3", int8_allow_neg2=False)) == 0xC0  # -2 = -1.0 * 2^1: field 8 -> 0b1_1000_000


def test_check_element_encoder_refuses_int8_allow_neg2_up_front():
    with pytest.raises(ValueError, match="int8_allow_neg2=True is not allowed for format 'fp8_e4m3'"):
        mxsim.strategies.check_element_encoder(lambda x: 0, "fp8_e4m3", int8_allow_neg2=True, max_examples=5)


@pytest.mark.parametrize("axis", [True, False, np.True_, 1.0, "0", None])
def test_axis_must_be_an_integer(axis):
    """axis=True was read as axis 1."""
    x = np.ones((2, 32), np.float32)
    with pytest.raises(ValueError, match=r"axis=.* is not allowed; expected an integer \(not a bool\) in \[-2, 2\)"):
        mxsim.quantize(x, "mxfp8_e4m3", axis=axis)
    with pytest.raises(ValueError, match="axis="):
        MXTensor.from_codes(np.zeros((2, 1), np.uint8), np.zeros((2, 32), np.uint8), "mxfp8_e4m3", axis=axis)
    with pytest.raises(ValueError, match="axis="):
        tensor_pack.unpack(bytes(66), "mxfp8_e4m3", (2, 32), axis)


def test_numpy_integer_axis_is_fine():
    x = np.arange(64, dtype=np.float32).reshape(2, 32)
    a, b = mxsim.quantize(x, "mxfp8_e4m3", axis=np.int64(1)), mxsim.quantize(x, "mxfp8_e4m3", axis=-1)
    assert a.axis == b.axis == 1
    np.testing.assert_array_equal(a.codes, b.codes)
