"""Public API behaviour: shapes, dtypes, threading over chunks, and clear errors for bad input."""

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import mxsim
from mxsim import ref
from mxsim.fast.chunks import CHUNK


@pytest.mark.parametrize("call", [mxsim.encode, ref.encode])
def test_unknown_rounding_and_overflow_name_the_choices(call):
    x = np.float32(1.0) if call is mxsim.encode else 1.0
    with pytest.raises(ValueError, match="rounding='nearest' is not allowed; expected one of: rne, rna, rtz, rup, rdn, stochastic"):
        call(x, "fp8_e4m3", "nearest")
    with pytest.raises(ValueError, match="overflow='clip' is not allowed; expected one of: saturate, ieee, error"):
        call(x, "fp8_e4m3", "rne", "clip")


@pytest.mark.parametrize("call", [mxsim.encode, ref.encode])
def test_stochastic_needs_valid_random_bits(call):
    x = np.float32(0.3) if call is mxsim.encode else 0.3
    with pytest.raises(ValueError, match="needs rand_bits"):
        call(x, "fp4_e2m1", "stochastic")
    with pytest.raises(ValueError, match=r"rand_bits.*\[0, 2\^4\)"):
        call(x, "fp4_e2m1", "stochastic", rand_bits=16, rand_width=4)
    with pytest.raises(ValueError, match="rand_width=33"):
        call(x, "fp4_e2m1", "stochastic", rand_bits=0, rand_width=33)
    with pytest.raises(ValueError, match="only used with rounding='stochastic'"):
        call(x, "fp4_e2m1", "rne", rand_bits=1)


def test_input_dtype_is_checked():
    with pytest.raises(ValueError, match="input dtype int32 is not allowed; expected one of: float16, bfloat16, float32, float64"):
        mxsim.encode(np.arange(4, dtype=np.int32), "fp8_e4m3")
    with pytest.raises(ValueError, match="cannot read str"):
        ref.encode("1.0", "fp8_e4m3")


@pytest.mark.parametrize("call", [mxsim.encode, ref.encode])
def test_nan_into_a_format_without_nan_is_an_error(call):
    x = np.array([1.0, np.nan], np.float32) if call is mxsim.encode else float("nan")
    with pytest.raises(ValueError, match="NaN input cannot be encoded: format 'fp4_e2m1' has no NaN"):
        call(x, "fp4_e2m1")


@pytest.mark.parametrize("rounding", ["rne", "rna"])  # the fast kernel and the generic kernel
def test_error_names_the_flat_index_across_chunks_and_threads(rounding):
    x = np.ones(5 * CHUNK + 3, np.float32)
    x[3 * CHUNK + 7] = np.nan
    with pytest.raises(ValueError, match=f"flat index {3 * CHUNK + 7}"):
        mxsim.encode(x, "fp6_e2m3", rounding)
    x[3 * CHUNK + 7] = 1e6
    with pytest.raises(OverflowError, match=f"flat index {3 * CHUNK + 7}"):
        mxsim.encode(x, "fp6_e2m3", rounding, "error")


def test_unsigned_and_zero_free_formats_reject_what_they_cannot_hold():
    with pytest.raises(ValueError, match="format 'e8m0' has no zero"):
        ref.encode(0, "e8m0")
    with pytest.raises(ValueError, match="format 'e8m0' has no zero"):
        mxsim.encode(np.zeros(2, np.float32), "e8m0", "rna")
    with pytest.raises(ValueError, match="format 'ue4m3' is unsigned"):
        ref.encode(-1, "ue4m3")
    with pytest.raises(ValueError, match="format 'ue4m3' is unsigned"):
        mxsim.encode(np.array([-1.0]), "ue4m3")
    assert ref.encode(-0.0, "ue4m3") == 0 and mxsim.encode(np.array([-0.0]), "ue4m3").tolist() == [0]
    # E8M0 has nothing below 2^-127: smaller magnitudes encode as code 0 (2^-127)
    assert ref.encode(2.0**-140, "e8m0", "rtz") == 0


def test_shapes_dtypes_and_layouts_are_kept():
    x = np.linspace(-8, 8, 24, dtype=np.float32).reshape(2, 3, 4)
    codes = mxsim.encode(x, "fp4_e2m1")
    assert codes.shape == (2, 3, 4) and codes.dtype == np.uint8
    assert np.array_equal(mxsim.encode(x[:, ::2, ::-1], "fp4_e2m1"), codes[:, ::2, ::-1])
    assert mxsim.encode(np.float32(3.0), "fp4_e2m1").shape == ()
    assert mxsim.encode(np.zeros((0, 5), np.float32), "fp4_e2m1").shape == (0, 5)
    assert mxsim.encode(x, "bf16").dtype == np.uint16
    assert mxsim.decode(codes, "fp4_e2m1").shape == (2, 3, 4)


def test_float16_and_bfloat16_inputs_are_widened_exactly():
    rng = np.random.default_rng(3)
    wide = (rng.standard_normal(4096) * 2.0 ** rng.integers(-30, 30, 4096)).astype(np.float32)
    with np.errstate(over="ignore"):  # values beyond float16 become inf: still a valid input
        narrowed = (wide.astype(np.float16), wide.astype(ml_dtypes.bfloat16))
    for narrow in narrowed:
        for rounding in ("rne", "rtz", "rna"):
            expected = mxsim.encode(narrow.astype(np.float64), "fp8_e4m3", rounding)
            assert np.array_equal(mxsim.encode(narrow, "fp8_e4m3", rounding), expected)


def test_large_arrays_match_the_reference_on_both_threads():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(6 * CHUNK + 11) * 2.0 ** rng.integers(-12, 12, 6 * CHUNK + 11)).astype(np.float32)
    sample = np.concatenate([np.arange(50), rng.integers(0, x.size, 300), np.arange(x.size - 50, x.size)])
    for name, rounding in [("fp8_e4m3", "rne"), ("fp6_e3m2", "rdn"), ("int8", "rne"), ("fp4_e2m1", "rna")]:
        codes = mxsim.encode(x, name, rounding)
        assert [codes[i] for i in sample] == [ref.encode(float(x[i]), name, rounding) for i in sample]
        values = mxsim.decode(codes, name)
        assert [values[i] for i in sample] == [float(ref.decode(int(codes[i]), name).value) for i in sample]


def test_decode_errors_and_dtypes():
    with pytest.raises(ValueError, match=r"code 16 at flat index 1 is out of range for format 'fp4_e2m1': expected \[0, 0xf\]"):
        mxsim.decode(np.array([1, 16], np.uint8), "fp4_e2m1")
    with pytest.raises(ValueError, match="code -1"):
        mxsim.decode(np.array([-1]), "fp4_e2m1")
    with pytest.raises(ValueError, match="integer array"):
        mxsim.decode(np.array([1.0]), "fp4_e2m1")
    with pytest.raises(ValueError, match="dtype=.*float16.*not allowed"):
        mxsim.decode(np.array([1], np.uint8), "fp4_e2m1", dtype=np.float16)
    with pytest.raises(ValueError, match="at most 16 bits"):
        mxsim.decode(np.array([1], np.uint32), "fp32")
    with pytest.raises(ValueError, match="out of range"):
        ref.decode(0x100, "fp8_e4m3")
    assert mxsim.decode(np.array([0x7E], np.uint8), "fp8_e4m3", dtype=np.float64).dtype == np.float64
    assert mxsim.decode(np.array([0x7E], np.int64), "fp8_e4m3").tolist() == [448.0]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mxsim.cli", *args], capture_output=True, text=True)


def test_cli_info_lists_every_format():
    result = run_cli("info")
    assert result.returncode == 0
    for name in mxsim.format_names():
        assert f"\n{name} " in result.stdout
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line.strip()}
    assert rows["fp8_e4m3"][:5] == ["float", "8", "SE4M3", "bias", "7"]
    assert rows["fp8_e4m3fnuz"][:7] == ["float", "8", "SE4M3", "bias", "8", "7", "240"]


def test_cli_info_codes_and_details():
    codes = run_cli("info", "float4_e2m1fn", "--codes").stdout.splitlines()
    assert codes[2:] [7].split() == ["0x7", "0111", "6", "6"] and codes[2 + 8].split()[-1] == "-0"
    assert len(codes) == 2 + 16
    details = run_cli("info", "mxfp4").stdout
    assert "bits_per_block     136" in details and "element            fp4_e2m1" in details


def test_cli_errors_are_one_clear_line():
    result = run_cli("info", "fp7")
    assert result.returncode == 2 and result.stderr.startswith("mxsim: error: unknown format 'fp7'")
    result = run_cli("info", "mxfp4", "--codes")
    assert result.returncode == 2 and "block format" in result.stderr


def test_reference_reads_numpy_scalars_exactly():
    assert ref.encode(np.float32(0.75), "fp4_e2m1", "rna") == ref.encode(0.75, "fp4_e2m1", "rna") == 0x2
    assert ref.encode(np.float16(-0.0), "fp8_e4m3") == 0x80
    assert ref.encode(ml_dtypes.bfloat16(448), "fp8_e4m3") == 0x7E
    assert ref.encode(np.int64(-2), "int8", int8_allow_neg2=True) == 0x80
    with pytest.raises(ValueError, match="cannot read longdouble"):
        ref.encode(np.longdouble(1), "fp8_e4m3")


def test_block_kernels_match_the_reference_across_chunks_and_threads():
    from mxsim.fast.chunks import BLOCK_CHUNK
    from mxsim.tensor_pack import dequantize_packed, pack

    rng = np.random.default_rng(8)
    n = 3 * BLOCK_CHUNK + 96
    x = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    x[BLOCK_CHUNK + 5] = np.nan  # a NaN block in the second chunk
    for name in ("mxfp8_e4m3", "mxfp4"):
        t = mxsim.quantize(x, name)
        blocks = np.concatenate([np.arange(4), rng.integers(0, n // 32, 60), [BLOCK_CHUNK // 32, n // 32 - 1]])
        for b in blocks:
            expected = ref.quantize_block([float(v) for v in x[32 * b : 32 * b + 32]], name)
            assert (t.scales[b], t.codes[32 * b : 32 * b + 32].tolist()) == (expected.scale, list(expected.codes))
        values = t.dequantize()
        assert np.array_equal(dequantize_packed(pack(t), name, x.shape).view(np.uint32), values.view(np.uint32))
        assert np.isnan(values[BLOCK_CHUNK : BLOCK_CHUNK + 32]).all()
