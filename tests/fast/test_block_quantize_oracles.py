"""Block quantization (mxsim.quantize) against independent oracles, bit for bit.

* torchao 0.18 (CPU, eager): ``torchao.prototype.mx_formats.mx_tensor.to_mx`` for the scale modes
  FLOOR, CEIL, EVEN, RCEIL and every element type torchao has, and
  ``torchao.prototype.mx_formats.nvfp4_tensor.NVFP4Tensor.to_nvfp4`` (two-level, with
  ``per_tensor_amax_to_scale``, and single-level) against NVFP4 with ``nvfp4_arith="fp32_steps"``.
  Data are blocks of normal magnitudes only: torchao knowingly deviates from exact MX conversion
  for tiny scales, FP32-subnormal maxima, NaN and Inf (formats-and-datapath.md trap T19, 1.7).
* gfloat 0.5.2: ``compute_scale_amax`` (the floor rule) + ``encode_block`` / ``decode_block`` with
  the ``format_info_mx*`` BlockFormatInfos, in every rounding mode both libraries have. gfloat
  emits MXINT8's -2.0 (0x80), so mxsim runs with ``int8_allow_neg2=True`` there. Inputs are
  float32 values held in float64, so gfloat's log2 is exact (trap T10).
* An exact-definition oracle written here from the contract (docs/numerics.md section 2) with
  Fractions, whose element values come from the format definitions typed in below (not from
  mxsim), run on blocks with NaN, Inf, -0, FP32 subnormals and all-zero blocks.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest

import mxsim

# The oracles are part of the [test] extra: a missing one is an error, never a silent skip.
import torch  # noqa: E402
from torchao.prototype.mx_formats import mx_tensor  # noqa: E402
from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402
from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale  # noqa: E402

import gfloat  # noqa: E402,F401
from gfloat import RoundMode, compute_scale_amax, decode_block, encode_block  # noqa: E402
from gfloat import formats as gf  # noqa: E402

import ml_dtypes  # noqa: E402

# --------------------------------------------------------------------------------------------------
# Data: blocks of normal magnitudes


def normal_magnitude_data(seed: int, rows: int, cols: int, k_range=(-30, 30)) -> np.ndarray:
    """float32 rows, each its own magnitude 2^k: half Gaussian, half small integers times a power
    of two (those land exactly on element rounding ties), a few exact zeros. No NaN, Inf, or block
    maximum near the FP32 subnormal range / the scale clamps."""
    rng = np.random.default_rng(seed)
    k = rng.integers(k_range[0], k_range[1] + 1, size=(rows, 1))
    gauss = rng.standard_normal((rows, cols)) * np.exp2(k)
    ints = rng.integers(-(2**10), 2**10, size=(rows, cols)) * np.exp2(k - 8)
    x = np.where((np.arange(rows) % 2 == 0)[:, None], gauss, ints)
    x[rng.random((rows, cols)) < 0.03] = 0.0
    x[3] = 0.0  # one all-zero row: every library gives scale 0x00 and zero elements
    return x.astype(np.float32)


def pack_fp4(codes: np.ndarray) -> np.ndarray:
    """Two FP4 codes per byte, element 0 in bits [3:0] (torchao's pack_uint4 order)."""
    codes = codes.astype(np.uint8)
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


# --------------------------------------------------------------------------------------------------
# torchao


TORCHAO_ELEMENTS = [
    (torch.float8_e4m3fn, "mxfp8_e4m3"),
    (torch.float8_e5m2, "mxfp8_e5m2"),
    ("fp6_e3m2", "mxfp6_e3m2"),
    ("fp6_e2m3", "mxfp6_e2m3"),
    (torch.float4_e2m1fn_x2, "mxfp4_e2m1"),
]
TORCHAO_MODES = ["FLOOR", "CEIL", "EVEN", "RCEIL"]


def torchao_mx(x_torch, elem_dtype, mode: str):
    scale, data = mx_tensor.to_mx(x_torch, elem_dtype, 32, getattr(ScaleCalculationMode, mode))
    return scale.view(torch.uint8).numpy(), data.view(torch.uint8).numpy()


def mxsim_codes_like_torchao(t: mxsim.MXTensor, name: str) -> np.ndarray:
    codes = t.codes.astype(np.uint8)
    return pack_fp4(codes) if name == "mxfp4_e2m1" else codes


@pytest.mark.parametrize("mode", TORCHAO_MODES)
@pytest.mark.parametrize("elem_dtype,name", TORCHAO_ELEMENTS, ids=[n for _, n in TORCHAO_ELEMENTS])
def test_torchao_to_mx_float32(elem_dtype, name, mode):
    x = normal_magnitude_data(seed=zlib.crc32(f"{name}/{mode}".encode()), rows=96, cols=128)
    scales, data = torchao_mx(torch.from_numpy(x), elem_dtype, mode)
    t = mxsim.quantize(x, name, scale_rule=mode.lower())
    assert scales.shape == t.scales.shape
    np.testing.assert_array_equal(t.scales, scales)
    np.testing.assert_array_equal(mxsim_codes_like_torchao(t, name), data)


@pytest.mark.parametrize("mode", ["FLOOR", "RCEIL"])
@pytest.mark.parametrize("elem_dtype,name", TORCHAO_ELEMENTS, ids=[n for _, n in TORCHAO_ELEMENTS])
def test_torchao_to_mx_bfloat16(elem_dtype, name, mode):
    """bfloat16 inputs: torchao widens them to float32; mxsim reads ml_dtypes bfloat16 bit patterns."""
    x = normal_magnitude_data(seed=7 + len(name), rows=32, cols=64)
    x_torch = torch.from_numpy(x).to(torch.bfloat16)
    x_bf16 = x_torch.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    scales, data = torchao_mx(x_torch, elem_dtype, mode)
    t = mxsim.quantize(x_bf16, name, scale_rule=mode.lower())
    np.testing.assert_array_equal(t.scales, scales)
    np.testing.assert_array_equal(mxsim_codes_like_torchao(t, name), data)


def test_torchao_fp4_packing_is_low_nibble_first():
    """The packing convention the other torchao tests rely on: element 0 in bits [3:0]."""
    x = torch.tensor([[1.0, 6.0] + [0.0] * 30])  # scale 2^0; codes 0x2 (1.0) and 0x7 (6.0)
    _, data = torchao_mx(x, torch.float4_e2m1fn_x2, "FLOOR")
    assert data[0, 0] == 0x72


NVFP4_CASES = [(seed, g) for seed, g in [(0, 0), (1, -12), (2, 9), (3, -25), (4, 20)]]


@pytest.mark.parametrize("seed,g", NVFP4_CASES)
def test_torchao_nvfp4_two_level(seed, g):
    """NVFP4 with a per-tensor scale: s_t = fp32(amax / (448 * 6)), then torchao's fp32 steps."""
    rng = np.random.default_rng(100 + seed)
    x = normal_magnitude_data(seed=seed, rows=64, cols=64, k_range=(-8, 8)) * np.float32(2.0**g)
    x[5, :16] = rng.standard_normal(16).astype(np.float32) * np.float32(2.0 ** (g - 14))  # hits the 2^-6 clamp
    x_torch = torch.from_numpy(x)
    per_tensor_scale = per_tensor_amax_to_scale(torch.max(torch.abs(x_torch)))
    ref = NVFP4Tensor.to_nvfp4(x_torch, block_size=16, per_tensor_scale=per_tensor_scale)
    t = mxsim.quantize(x, "nvfp4", nvfp4_arith="fp32_steps")
    assert t.tensor_scale == Fraction(float(per_tensor_scale))
    np.testing.assert_array_equal(t.scales, ref.scale.view(torch.uint8).numpy())
    np.testing.assert_array_equal(pack_fp4(t.codes), ref.qdata.view(torch.uint8).numpy())


@pytest.mark.parametrize("g", [0, -4, 6, 14])
def test_torchao_nvfp4_single_level(g):
    """Single-level NVFP4 (no per-tensor scale) is nvfp4_tensor_scale='none'; block amax above
    6 * 448 clamps the scale at 448 and saturates. Values decode identically too (element times
    UE4M3 scale is exact in float32)."""
    x = normal_magnitude_data(seed=50 + g, rows=48, cols=64, k_range=(-6, 6)) * np.float32(2.0**g)
    ref = NVFP4Tensor.to_nvfp4(torch.from_numpy(x), block_size=16)
    t = mxsim.quantize(x, "nvfp4", nvfp4_arith="fp32_steps", nvfp4_tensor_scale="none")
    assert ref.per_tensor_scale is None
    np.testing.assert_array_equal(t.scales, ref.scale.view(torch.uint8).numpy())
    np.testing.assert_array_equal(pack_fp4(t.codes), ref.qdata.view(torch.uint8).numpy())
    np.testing.assert_array_equal(t.dequantize(np.float32), ref.dequantize(torch.float32).numpy())


# --------------------------------------------------------------------------------------------------
# gfloat

GFLOAT_FORMATS = [
    (gf.format_info_mxfp8_e4m3, "mxfp8_e4m3"),
    (gf.format_info_mxfp8_e5m2, "mxfp8_e5m2"),
    (gf.format_info_mxfp6_e3m2, "mxfp6_e3m2"),
    (gf.format_info_mxfp6_e2m3, "mxfp6_e2m3"),
    (gf.format_info_mxfp4_e2m1, "mxfp4_e2m1"),
    (gf.format_info_mxint8, "mxint8"),
]
GFLOAT_ROUNDING = {
    "rne": RoundMode.TiesToEven,
    "rna": RoundMode.TiesToAway,
    "rtz": RoundMode.TowardZero,
    "rup": RoundMode.TowardPositive,
    "rdn": RoundMode.TowardNegative,
}


@pytest.mark.parametrize("rounding", list(GFLOAT_ROUNDING))
@pytest.mark.parametrize("fi,name", GFLOAT_FORMATS, ids=[n for _, n in GFLOAT_FORMATS])
def test_gfloat_encode_block(fi, name, rounding):
    assert fi.k == 32 and fi.etype.emax == mxsim.get_format(name).element.emax
    x = normal_magnitude_data(seed=1000 + len(name) * 7 + len(rounding), rows=24, cols=32).astype(np.float64)
    t = mxsim.quantize(x, name, rounding=rounding, int8_allow_neg2=name == "mxint8")  # applies to MXINT8 only
    values = t.dequantize(np.float64)
    for row in range(x.shape[0]):
        scale = compute_scale_amax(fi.etype.emax, x[row])
        block = list(encode_block(fi, scale, x[row] / scale, GFLOAT_ROUNDING[rounding]))
        assert block[0] == t.scales[row, 0], row
        assert block[1:] == t.codes[row].tolist(), row
        decoded = np.fromiter(decode_block(fi, block), dtype=np.float64)
        np.testing.assert_array_equal(values[row], decoded)


def test_gfloat_mxint8_neg2_agreement():
    """gfloat's MXINT8 rounds -1.999 to -2.0 (0x80); mxsim does so only with int8_allow_neg2."""
    x = np.array([-1.999] + [0.5] * 31)
    scale = compute_scale_amax(0, x)
    block = list(encode_block(gf.format_info_mxint8, scale, x / scale))
    assert block[:2] == [127, 0x80]
    assert mxsim.quantize(x, "mxint8", int8_allow_neg2=True).codes[0] == 0x80
    assert mxsim.quantize(x, "mxint8").codes[0] == 0x81


# --------------------------------------------------------------------------------------------------
# Exact-definition oracle (docs/numerics.md section 2, floor rule), independent of mxsim
#
# Element formats from their definitions:
#   E4M3 ("fn"): 1 sign, 4 exponent, 3 mantissa bits, bias 7; S.1111.111 is NaN, no Inf.
#   E2M1: 1 sign, 2 exponent, 1 mantissa bit, bias 1; every code finite.
#   MXINT8: two's-complement q, value q / 64; -128 (0x80) only with int8_allow_neg2.
# Field e = 0 is subnormal: value 2^(1 - bias) * m / 2^mbits; else 2^(e - bias) * (1 + m / 2^mbits).

ORACLE_FORMATS = {
    "mxfp8_e4m3": dict(kind="float", ebits=4, mbits=3, bias=7, nan_code=0x7F),
    "mxfp4_e2m1": dict(kind="float", ebits=2, mbits=1, bias=1, nan_code=None),
    "mxint8": dict(kind="int", nan_code=None),
}
FP32_MAX = (2 - Fraction(1, 2**23)) * Fraction(2) ** 127
FP32_MIN_NORMAL = Fraction(1, 2**126)


@lru_cache(maxsize=None)
def magnitude_table(name: str, negative_side: bool = False):
    """Sorted (value, code-of-magnitude) for the non-negative magnitudes of an element format."""
    spec = ORACLE_FORMATS[name]
    if spec["kind"] == "int":
        top = 128 if negative_side else 127
        return tuple((Fraction(q, 64), q) for q in range(top + 1))
    ebits, mbits, bias = spec["ebits"], spec["mbits"], spec["bias"]
    table = []
    for code in range(1 << (ebits + mbits)):
        if spec["nan_code"] is not None and code == spec["nan_code"]:
            continue
        e, m = code >> mbits, code & ((1 << mbits) - 1)
        if e == 0:
            value = Fraction(2) ** (1 - bias) * Fraction(m, 1 << mbits)
        else:
            value = Fraction(2) ** (e - bias) * (1 + Fraction(m, 1 << mbits))
        table.append((value, code))
    return tuple(sorted(table))


def exact_floor_log2(q: Fraction) -> int:
    """floor(log2 q) for q > 0 from integer bit lengths."""
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    below = n < (d << e) if e >= 0 else (n << -e) < d
    return e - 1 if below else e


def emax_elem(name: str) -> int:
    return exact_floor_log2(magnitude_table(name)[-1][0])


def nearest_even(name: str, magnitude: Fraction, negative: bool, int8_allow_neg2: bool) -> int:
    """Code of the magnitude: nearest value, ties to the even code, saturating at the largest."""
    table = magnitude_table(name, negative and int8_allow_neg2 and name == "mxint8")
    values = [v for v, _ in table]
    magnitude = min(magnitude, values[-1])
    i = bisect_left(values, magnitude)
    if values[i] == magnitude:
        return table[i][1]
    (lo, lo_code), (hi, hi_code) = table[i - 1], table[i]
    if magnitude - lo != hi - magnitude:
        return lo_code if magnitude - lo < hi - magnitude else hi_code
    return lo_code if lo_code % 2 == 0 else hi_code


def float32_bits_value(bits: int):
    """(sign, kind, magnitude) of a float32 bit pattern, read field by field."""
    sign, field, mantissa = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    if field == 0xFF:
        return sign, ("nan" if mantissa else "inf"), None
    if field == 0:
        return sign, "finite", Fraction(mantissa, 2**149)
    return sign, "finite", Fraction((1 << 23) | mantissa) * Fraction(2) ** (field - 150)


def oracle_block(bits, name, inf_policy="nan", int8_allow_neg2=False, flush=False):
    """(scale code, element codes) of one block of float32 bit patterns, by the definition."""
    spec = ORACLE_FORMATS[name]
    xs = [float32_bits_value(int(b)) for b in bits]
    if flush:
        xs = [(s, k, Fraction(0)) if k == "finite" and m < FP32_MIN_NORMAL else (s, k, m) for s, k, m in xs]
    if any(k == "nan" or (k == "inf" and inf_policy == "nan") for _, k, _ in xs):
        return 0xFF, [spec["nan_code"] or 0] * len(xs)
    magnitudes = [FP32_MAX if k == "inf" else m for _, k, m in xs]
    amax = max(magnitudes)
    exponent = -127 if amax == 0 else min(max(exact_floor_log2(amax) - emax_elem(name), -127), 127)
    codes = []
    for (sign, kind, _), magnitude in zip(xs, magnitudes):
        scaled = magnitude / Fraction(2) ** exponent
        code = nearest_even(name, scaled, bool(sign), int8_allow_neg2)
        if spec["kind"] == "int":
            codes.append((-code) & 0xFF if sign else code)
        else:
            codes.append(code | (sign << (spec["ebits"] + spec["mbits"])))
    return exponent + 127, codes


def _tie_block(rng, name):
    """Values exactly halfway between adjacent element values, times a power-of-two scale."""
    table = magnitude_table(name)
    e = int(rng.integers(-125, 100))
    i = rng.integers(1, len(table), size=32)
    mids = [(table[j - 1][0] + table[j][0]) / 2 for j in i]
    mids[0] = table[-1][0]  # the block maximum sits at max normal, so the scale is 2^e exactly
    vals = [float(m * Fraction(2) ** (e - 0)) * (1 if rng.random() < 0.5 else -1) for m in mids]
    x = np.array(vals, dtype=np.float64)
    x32 = x.astype(np.float32)
    assert np.array_equal(x32.astype(np.float64), x)
    return x32.view(np.uint32)


def oracle_blocks(seed: int, name: str, n: int = 240) -> np.ndarray:
    """(n, 32) float32 bit patterns: raw random bits, blocks spread over a few binades at any
    scale (FP32 subnormals included), tie blocks, all-zero / all -0 blocks, with NaN, +-Inf, -0,
    +0 and subnormals sprinkled in."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, 32), dtype=np.uint32)
    for b in range(n):
        kind = b % 6
        if kind == 0:
            bits = rng.integers(0, 2**32, size=32, dtype=np.uint64).astype(np.uint32)
        elif kind in (1, 2):
            top = int(rng.integers(0, 255))
            fields = np.clip(top - rng.integers(0, 14 if kind == 1 else 40, size=32), 0, 254)
            bits = (rng.integers(0, 2, 32) << 31) | (fields << 23) | rng.integers(0, 1 << 23, 32)
            bits = bits.astype(np.uint32)
        elif kind == 3:
            bits = (rng.integers(0, 2, 32) << 31) | rng.integers(0, 1 << int(rng.integers(1, 24)), 32)
            bits = bits.astype(np.uint32)  # FP32 subnormals (and zeros) only
        elif kind == 4:
            bits = _tie_block(rng, name)
        else:
            bits = np.full(32, 0x80000000 if rng.random() < 0.5 else 0, dtype=np.uint32)
            bits[rng.random(32) < 0.5] ^= 0x80000000  # a mix of +0 and -0
        specials = [0x7FC00000, 0xFFC00001, 0x7F800001, 0x7F800000, 0xFF800000, 0x80000000, 0, 0x00000001, 0x807FFFFF]
        if kind not in (4, 5) and rng.random() < 0.4:
            for pos in rng.integers(0, 32, size=int(rng.integers(1, 3))):
                bits[pos] = specials[int(rng.integers(0, len(specials)))]
        out[b] = bits
    return out


@pytest.mark.parametrize(
    "inf_policy,int8_allow_neg2,flush",
    [("nan", False, False), ("saturate", True, False), ("saturate", False, True), ("nan", True, True)],
)
@pytest.mark.parametrize("name", list(ORACLE_FORMATS))
def test_exact_definition_oracle(name, inf_policy, int8_allow_neg2, flush):
    bits = oracle_blocks(seed=len(name) * 31 + int8_allow_neg2 + 2 * flush, name=name)
    x = bits.view(np.float32)
    neg2 = int8_allow_neg2 and name == "mxint8"  # the option applies to MXINT8 only
    t = mxsim.quantize(x, name, inf_policy=inf_policy, int8_allow_neg2=neg2, flush_subnormal_inputs=flush)
    assert t.scales.shape == (len(bits), 1)
    for b, block in enumerate(bits):
        scale, codes = oracle_block(block, name, inf_policy, int8_allow_neg2, flush)
        assert (int(t.scales[b, 0]), t.codes[b].tolist()) == (scale, codes), (b, block.view(np.float32))


def test_oracle_self_check():
    """The oracle's own tables agree with the notes' numbers (0.2, 0.3 of formats-and-datapath.md)."""
    assert magnitude_table("mxfp8_e4m3")[-1] == (448, 0x7E) and emax_elem("mxfp8_e4m3") == 8
    assert magnitude_table("mxfp8_e4m3")[1] == (Fraction(1, 512), 1)
    assert [v for v, _ in magnitude_table("mxfp4_e2m1")] == [0, Fraction(1, 2), 1, Fraction(3, 2), 2, 3, 4, 6]
    assert emax_elem("mxfp4_e2m1") == 2 and emax_elem("mxint8") == 0
    assert nearest_even("mxfp4_e2m1", Fraction(5), False, False) == 0x6  # 5 -> 4 (tie, even code)
    assert nearest_even("mxfp4_e2m1", Fraction(7), False, False) == 0x7  # saturates at 6
    assert nearest_even("mxint8", Fraction(255, 128), True, True) == 128  # -1.9921875 -> -2 (tie, even)
    assert exact_floor_log2(Fraction(1, 3)) == -2 and exact_floor_log2(Fraction(4)) == 2
