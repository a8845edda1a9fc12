"""The catalogue: derived properties against the published format tables, and validation."""

from fractions import Fraction as F

import numpy as np
import pytest

import mxsim
from mxsim import BlockFormat, FloatFormat, IntFormat, get_format

# (max normal, min normal, min subnormal, emax_elem, width) from the OCP MX v1.0 / OFP8 tables
# (formats-and-datapath.md section 0.2) and IEEE 754 for the interchange types.
PUBLISHED = {
    "fp8_e4m3": (F(448), F(1, 64), F(1, 512), 8, 8),
    "fp8_e5m2": (F(57344), F(1, 2**14), F(1, 2**16), 15, 8),
    "fp6_e3m2": (F(28), F(1, 4), F(1, 16), 4, 6),
    "fp6_e2m3": (F(15, 2), F(1), F(1, 8), 2, 6),
    "fp4_e2m1": (F(6), F(1), F(1, 2), 2, 4),
    "e8m0": (F(2) ** 127, F(2) ** -127, None, 127, 8),
    "ue4m3": (F(448), F(1, 64), F(1, 512), 8, 7),
    "fp16": (F(65504), F(2) ** -14, F(2) ** -24, 15, 16),
    "bf16": ((2 - F(2) ** -7) * F(2) ** 127, F(2) ** -126, F(2) ** -133, 127, 16),
    "fp32": ((2 - F(2) ** -23) * F(2) ** 127, F(2) ** -126, F(2) ** -149, 127, 32),
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_float_format_derived_properties_match_published_tables(name):
    fmt = get_format(name)
    max_normal, min_normal, min_subnormal, emax, width = PUBLISHED[name]
    assert fmt.max_normal == max_normal
    # the encoder's integer view of max_normal: an (m + 1)-bit significand on the grid 2^(emax - m)
    assert fmt.max_significand.bit_length() == fmt.mantissa_bits + 1
    assert fmt.max_significand * F(2) ** (emax - fmt.mantissa_bits) == max_normal
    assert fmt.min_normal == min_normal
    assert fmt.min_subnormal == min_subnormal
    assert fmt.emax == emax
    assert fmt.width == width


def test_special_codes_match_published_tables():
    assert get_format("fp8_e4m3").nan_code() == 0x7F and get_format("fp8_e4m3").nan_code(True) == 0xFF
    assert not get_format("fp8_e4m3").has_inf
    assert get_format("fp8_e5m2").inf_code() == 0x7C and get_format("fp8_e5m2").inf_code(True) == 0xFC
    assert get_format("e8m0").nan_code() == 0xFF and not get_format("e8m0").has_zero
    assert get_format("ue4m3").nan_code() == 0x7F
    for name in ("fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"):
        assert not get_format(name).has_nan and not get_format(name).has_inf


@pytest.mark.parametrize(
    "name, max_value, min_value, emax",
    [
        ("int8", F(127, 64), F(-2), 0),  # OCP MXINT8: 1.6 fixed point, 0x80 = -2
        ("int8_sm", F(127, 64), F(-127, 64), 0),  # MX9/MSFP16 element: sign + 7 magnitude bits
        ("int5_sm", F(15, 8), F(-15, 8), 0),  # MX6: sign + 4
        ("int4_sm", F(7, 4), F(-7, 4), 0),  # MSFP12: sign + 3
        ("int3_sm", F(3, 2), F(-3, 2), 0),  # MX4: sign + 2
    ],
)
def test_int_formats(name, max_value, min_value, emax):
    fmt = get_format(name)
    assert (fmt.max_normal, fmt.min_value, fmt.emax) == (max_value, min_value, emax)


# Bits per block from OCP MX v1.0 Table 1 and the BDR paper (formats-and-datapath.md 0.1, 2.2).
@pytest.mark.parametrize(
    "name, k, bits",
    [
        ("mxfp8_e4m3", 32, 264),
        ("mxfp8_e5m2", 32, 264),
        ("mxfp6_e3m2", 32, 200),
        ("mxfp6_e2m3", 32, 200),
        ("mxfp4_e2m1", 32, 136),
        ("mxint8", 32, 264),
        ("mx9", 16, 144),
        ("mx6", 16, 96),
        ("mx4", 16, 64),
        ("msfp16", 16, 136),
        ("msfp12", 16, 72),
        ("nvfp4", 16, 72),
    ],
)
def test_block_formats(name, k, bits):
    fmt = get_format(name)
    assert fmt.block_size == k and fmt.bits_per_block == bits


def test_aliases_and_pass_through():
    assert get_format("mxfp4") is get_format("mxfp4_e2m1")
    assert get_format("float8_e4m3fn") is get_format("fp8_e4m3")
    assert get_format("FLOAT8_E8M0FNU") is get_format("e8m0")
    fmt = FloatFormat("mine", 3, 4, 3)
    assert get_format(fmt) is fmt
    assert "mxfp4_e2m1" in mxsim.format_names("block") and "fp4_e2m1" not in mxsim.format_names("block")


def test_unknown_name_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown format 'fp7'.*fp8_e4m3.*mxfp4"):
        get_format("fp7")


def test_wrong_kind_is_rejected():
    with pytest.raises(ValueError, match="block format; expected one of: fp8_e4m3"):
        mxsim.ref.encode(1, "mxfp4")
    with pytest.raises(ValueError, match="format must be a name"):
        get_format(3)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: FloatFormat("x", 0, 3, 1), "exponent_bits=0"),
        (lambda: FloatFormat("x", 4, -1, 7), "mantissa_bits=-1"),
        (lambda: FloatFormat("x", 4, 3, 7, specials="nan"), "specials='nan'.*ieee, fn, none"),
        (lambda: FloatFormat("x", 4, 0, 7, specials="ieee"), "needs mantissa_bits >= 1"),
        (lambda: FloatFormat("x", 1, 2, 0, specials="ieee"), "leaves no normal binade"),
        (lambda: FloatFormat("x", 16, 56, 0), "exceeds the 64-bit limit"),
        (lambda: IntFormat("x", 1, 0), "bits=1"),
        (lambda: IntFormat("x", 8, 6, encoding="ones"), "encoding='ones'.*twos_complement, sign_magnitude"),
        (lambda: BlockFormat("x", get_format("fp4_e2m1"), 0, get_format("e8m0")), "block_size=0"),
        (lambda: BlockFormat("x", get_format("fp4_e2m1"), 32, get_format("fp8_e4m3")), "scale must be an unsigned"),
        (lambda: BlockFormat("x", get_format("e8m0"), 32, get_format("e8m0")), "must be signed"),
        (lambda: BlockFormat("x", get_format("int3_sm"), 16, get_format("e8m0"), 3, 1), "must divide"),
        (lambda: BlockFormat("x", get_format("int3_sm"), 16, get_format("e8m0"), None, 1), "needs a subblock_size"),
        # Block quantization implements E8M0 and UE4M3 scales only; a 5-bit E5M0 used to quantize
        # into out-of-range scale codes (found while writing the docs).
        (
            lambda: BlockFormat("x", get_format("fp4_e2m1"), 32, FloatFormat("e5m0", 5, 0, 15, False, False, "fn")),
            "scale 'e5m0' is not supported; allowed: E8M0.*UE4M3",
        ),
        (
            lambda: BlockFormat("x", get_format("fp4_e2m1"), 32, get_format("e8m0"), tensor_scale=get_format("fp32")),
            "tensor_scale must be None, or fp32 with a UE4M3 block scale",
        ),
        (
            lambda: BlockFormat("x", get_format("fp4_e2m1"), 16, get_format("ue4m3"), tensor_scale=get_format("bf16")),
            "tensor_scale must be None, or fp32",
        ),
    ],
)
def test_impossible_parameters_raise_with_the_field_named(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_custom_format_works_end_to_end():
    """A user-built E3M4 with 'fn' specials: derived numbers, then a round trip of every code."""
    fmt = FloatFormat("e3m4fn", 3, 4, 3, specials="fn")
    assert fmt.max_normal == F(2) ** 4 * (1 + F(14, 16))  # mantissa 1111 is NaN in the top binade
    assert fmt.min_subnormal == F(2) ** (-2 - 4)
    for code in range(1 << fmt.width):
        value = mxsim.ref.decode(code, fmt)
        if not value.is_nan:
            assert mxsim.ref.encode(value, fmt) == code


def test_a_scale_with_the_e8m0_parameters_under_another_name_is_e8m0():
    """The block rules are chosen by the scale, so an identical scale format is the same scale."""
    mine = FloatFormat("my_scale", 8, 0, 127, signed=False, subnormals=False, specials="fn")
    fmt = BlockFormat("my_mxfp4", get_format("fp4_e2m1"), 32, mine)
    assert fmt.scale == get_format("e8m0")
    x = np.linspace(-3, 3, 32, dtype=np.float32)
    t = mxsim.quantize(x, fmt)
    assert t.scales.tolist() == mxsim.quantize(x, "mxfp4_e2m1").scales.tolist() == [127 + 1 - 2]  # floor(log2 3) - emax_elem 2
