"""Profiles of the software quantizers that make MX data (docs/numerics.md section 6.2), each against the
library itself, run here, bit for bit: scale bytes, element codes and the float32 output.

* ``microxcaling_{nearest,even,floor}`` and their alias ``neural_compressor_3_10_*``: Intel
  Neural Compressor 3.10's ``mx_quant/utils.py`` (a port of microxcaling; microxcaling itself is
  not on PyPI), loaded on its own (tests/library_oracles.py); every MX format it has (MXFP8
  E4M3/E5M2, MXFP6 E3M2/E2M3, MXFP4, MXINT8), every rounding mode, and ``flush_fp32_subnorms``.
* ``compressed_tensors_0_20``: compressed-tensors 0.20.0's MXFP4, MXFP6A16 (E2M3) and MXFP8
  (E4M3) weight schemes (calculate_qparams, quantize, fake_quantize); blocks holding a NaN (no
  MX encoding there) must make ``quantize`` raise, one by one.
* ``compressed_tensors_0_20`` NVFP4 (preset NVFP4): tensors of two blocks of 16, global scale,
  scale and element codes, and the float32 output by the library's formula from mxsim's codes;
  tensors holding NaN or Inf must make ``quantize`` raise.
* ``quark_0_13``: AMD Quark 0.13's ``non_scaled_fake_quantize`` in mode 'even' for MXFP8
  E4M3/E5M2, MXFP6 E3M2/E2M3, MXFP4 and MXINT8; FP4/FP6 blocks holding an Inf must make
  ``quantize`` raise.
* ``brevitas_0_13``: Brevitas 0.13.4's MXFloat8e4m3Act (with E4M3, E5M2, E3M2, E2M3 and E2M1
  elements) and MXInt8Act in a QuantIdentity. Blocks whose Brevitas scale is not a power of two
  (amax 0 or below 2^-33: the documented exception) must make ``quantize`` raise, one by one.

Data: tests/library_stimulus.py, every corner class (Gaussian, wide range, zeros and -0, fp32
subnormals, ties and near-ties, maxima just below powers of two, saturation gaps, NaN/Inf), a
fixed seed, :data:`PER_CLASS` blocks of 32 per class and format, through the fast path
(``mxsim.quantize``) and a sample through the reference (``mxsim.ref.block.quantize_block``).
The one documented exception: MXINT8 float outputs where the library gives -0 (a negative value
rounding to zero; MXINT8 has no -0 code, the codes agree) are compared as zeros and counted.

A library that cannot be loaded skips its tests, except under CI=true (.ci/run installs it),
where that is a failure.
"""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest

import mxsim
from mxsim.fast.decode import value_table
from mxsim.formats import get_format
from mxsim.options.profiles import get_profile
from mxsim import DequantizeOptions, QuantizeOptions
from mxsim.ref.block import quantize_block
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.dequant import dequantize_block_bits

import library_oracles
import library_stimulus

# blocks per class, format and mode (fast path); a larger campaign: MXSIM_LIBRARY_PER_CLASS=125 pytest -s this file
PER_CLASS = int(os.environ.get("MXSIM_LIBRARY_PER_CLASS", "40"))
REF_PER_CLASS = 2  # blocks per class, format and mode (reference)
MODES = ("nearest", "even", "floor")


def _missing(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI installs it (.ci/run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def nc_mx():
    module = library_oracles.neural_compressor_mx()
    if module is None:
        reason = "neural-compressor 3.10 is not installed (set MXSIM_ORACLES to its --target directory)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI installs it (.ci/run)")
        pytest.skip(reason)
    return module


def _grid(fmt: str) -> np.ndarray:
    """The positive finite element values of ``fmt``, sorted (ties and maxima are drawn from them)."""
    values = value_table(get_format(fmt).element)
    grid = np.unique(np.abs(values[np.isfinite(values)]))
    return grid[grid > 0]


def _draw(fmt: str, per_class: int, seed: int = 21) -> np.ndarray:
    grid = _grid(fmt)
    return np.concatenate([library_stimulus.blocks(grid, 32, per_class, c, seed) for c in library_stimulus.CLASSES])


def _compare(expected, scales, codes, output, fmt: str):
    """(agreeing blocks mask, MXINT8 -0 exceptions): scale, codes (not of NaN blocks: the library
    has none) and float32 bits (NaN as NaN)."""
    want_scales, want_codes, want_out = expected
    nan_block = want_scales == 0xFF
    ok = (scales == want_scales) & (np.all(codes == want_codes, axis=1) | nan_block)
    same = (output.view(np.uint32) == want_out.view(np.uint32)) | (np.isnan(output) & np.isnan(want_out))
    exceptions = 0
    if fmt == "mxint8":  # the documented exception: the library's -0, mxsim's +0, code 0 on both sides
        minus_zero = (want_out == 0) & np.signbit(want_out) & (output == 0) & ~np.signbit(output)
        exceptions = int(minus_zero.sum())
        same |= minus_zero
    return ok & same.all(axis=1), exceptions


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", list(library_oracles.ELEMENTS))
def test_microxcaling_fast_path_agrees_with_neural_compressor(nc_mx, fmt, mode):
    blocks = _draw(fmt, PER_CLASS)
    expected = library_oracles.microxcaling(nc_mx, blocks, fmt, mode)
    for profile in (f"microxcaling_{mode}", f"neural_compressor_3_10_{mode}"):
        t = mxsim.quantize(blocks.reshape(-1), fmt, profile=profile)
        scales = np.asarray(t.scales).reshape(-1)
        codes = np.asarray(t.codes).reshape(blocks.shape)
        output = t.dequantize(np.float32).reshape(blocks.shape)
        ok, exceptions = _compare(expected, scales, codes, output, fmt)
        print(f"{profile} {fmt}: {int(ok.sum())} / {len(ok)} blocks agree ({exceptions} MXINT8 -0 outputs)")
        assert ok.all(), f"{profile} {fmt}: first disagreeing block {blocks[np.flatnonzero(~ok)[0]].tolist()}"
    # the stimulus reaches the differences: the contract's defaults (exact floor rule, rne) do not agree
    plain = mxsim.quantize(blocks.reshape(-1), fmt, rounding={"nearest": "rna", "even": "rne", "floor": "rtz"}[mode])
    plain_ok, _ = _compare(
        expected, np.asarray(plain.scales).reshape(-1), np.asarray(plain.codes).reshape(blocks.shape),
        plain.dequantize(np.float32).reshape(blocks.shape), fmt,
    )
    assert not plain_ok.all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", list(library_oracles.ELEMENTS))
def test_microxcaling_reference_agrees_with_neural_compressor(nc_mx, fmt, mode):
    blocks = _draw(fmt, REF_PER_CLASS, seed=22)
    want_scales, want_codes, _ = library_oracles.microxcaling(nc_mx, blocks, fmt, mode)
    options = get_profile(f"microxcaling_{mode}").quantize_options(fmt)
    for i, block in enumerate(blocks):
        q = quantize_block([float(v) for v in block], fmt, options)
        assert q.scale == want_scales[i], (fmt, mode, block.tolist())
        if want_scales[i] != 0xFF:
            assert q.codes == tuple(int(c) for c in want_codes[i]), (fmt, mode, block.tolist())


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp4_e2m1", "mxint8"])
def test_flush_subnormal_blocks_is_flush_fp32_subnorms(nc_mx, fmt):
    blocks = np.concatenate([_draw(fmt, 10, seed=23), library_stimulus.blocks(_grid(fmt), 32, 200, "subnormal", 24)])
    expected = library_oracles.microxcaling(nc_mx, blocks, fmt, "even", flush=True)
    t = mxsim.quantize(blocks.reshape(-1), fmt, profile="microxcaling_even", flush_subnormal_blocks=True)
    ok, _ = _compare(
        expected, np.asarray(t.scales).reshape(-1), np.asarray(t.codes).reshape(blocks.shape),
        t.dequantize(np.float32).reshape(blocks.shape), fmt,
    )
    assert ok.all()
    options = get_profile("microxcaling_even").quantize_options(fmt, flush_subnormal_blocks=True)
    for i in range(0, len(blocks), 37):
        q = quantize_block([float(v) for v in blocks[i]], fmt, options)
        assert q.scale == expected[0][i] and (q.scale == 0xFF or q.codes == tuple(int(c) for c in expected[1][i]))


def test_float32_log2_gives_the_next_exponent_below_a_power_of_two():
    """Contract 6.2, hand-worked: amax 0x437FFFFE = 256 - 2^-15 has log2 = 8 - 1.7e-7, which
    rounds to 8 in float32 (half the spacing below 8 is 2^-22); MXFP8 E4M3 (emax 8) gets E = 0,
    the exact rule E = -1. The element 256 - 2^-15 is then 0.99999... * 2^8 / 2^0: nearest
    gives 256 (code 0x78, E4M3 1.0 * 2^8)."""
    amax = np.uint32(0x437FFFFE).view(np.float32)
    assert Fraction(float(amax)) == 256 - Fraction(1, 2**15)
    block = np.zeros(32, np.float32)
    block[0] = amax
    t = mxsim.quantize(block, "mxfp8_e4m3", profile="microxcaling_nearest")
    assert int(np.asarray(t.scales).reshape(-1)[0]) == 127 + 0
    assert int(np.asarray(t.codes).reshape(-1)[0]) == 0x78
    assert int(np.asarray(mxsim.quantize(block, "mxfp8_e4m3").scales).reshape(-1)[0]) == 127 - 1
    q = quantize_block([float(v) for v in block], "mxfp8_e4m3", get_profile("microxcaling_nearest").quantize_options())
    assert (q.scale, q.codes[0]) == (127, 0x78)


def test_half_plus_value_double_rounds_in_float32():
    """Contract 6.2, hand-worked: 0x2F7FFFFF = (2 - 2^-23) * 2^-33 in a block with E = -22 is
    2^-10 * (1 - 2^-24) after scaling, just under half E4M3's smallest subnormal 2^-9: scaled by
    2^9 (binade clamped at emin -6, 3 mantissa bits) it is 0.5 - 2^-25, and 0.5 + that = 1 - 2^-25
    rounds to 1.0 in float32 (a tie, to even): code 0x01 (2^-9), where the exact value rounds to 0."""
    block = np.zeros(32, np.float32)
    block[0] = np.float32(2.0**-14)  # amax 2^-14: E = -14 - 8 = -22
    block[1] = np.uint32(0x2F7FFFFF).view(np.float32)
    assert Fraction(float(block[1])) == (2 - Fraction(1, 2**23)) * Fraction(1, 2**33)
    for layer in ("fast", "reference"):
        if layer == "fast":
            t = mxsim.quantize(block, "mxfp8_e4m3", profile="microxcaling_nearest")
            scale, code = int(np.asarray(t.scales).reshape(-1)[0]), int(np.asarray(t.codes).reshape(-1)[1])
        else:
            q = quantize_block([float(v) for v in block], "mxfp8_e4m3",
                               get_profile("microxcaling_nearest").quantize_options())
            scale, code = q.scale, q.codes[1]
        assert (scale, code) == (127 - 22, 0x01), layer
    assert int(np.asarray(mxsim.quantize(block, "mxfp8_e4m3", rounding="rna").codes).reshape(-1)[1]) == 0x00


def test_microxcaling_zero_blocks_and_signs():
    """All-zero blocks read amax as 2^-126 (MXINT8: E = -126, code 1; E4M3: -134 clamps to -127);
    -0 gives +0; a negative value rounding to zero keeps -0 (E4M3 code 0x80)."""
    zeros = np.array([-0.0] * 32, np.float32)
    for fmt, scale in (("mxint8", 1), ("mxfp8_e4m3", 0)):
        t = mxsim.quantize(zeros, fmt, profile="microxcaling_even")
        assert int(np.asarray(t.scales).reshape(-1)[0]) == scale
        assert not np.asarray(t.codes).any()
    block = np.zeros(32, np.float32)
    block[0], block[1], block[2] = 1.0, -0.0, -2.0**-20
    codes = np.asarray(mxsim.quantize(block, "mxfp8_e4m3", profile="microxcaling_even").codes).reshape(-1)
    assert (codes[1], codes[2]) == (0x00, 0x80)


def test_float32_profiles_refuse_other_inputs_and_roundings():
    with pytest.raises(ValueError, match="not a float32 value"):
        mxsim.quantize(np.full(32, 0.1, np.float64), "mxfp4_e2m1", profile="microxcaling_even")
    with pytest.raises(ValueError, match="not a float32 value"):
        quantize_block([0.1] * 32, "mxfp4_e2m1", get_profile("microxcaling_even").quantize_options())
    with pytest.raises(ValueError, match="rounding='rup' is not allowed with element_arith='fp32_log2'"):
        get_profile("microxcaling_even").quantize_options("mxfp4_e2m1", rounding="rup")
    with pytest.raises(ValueError, match="element_arith"):
        mxsim.quantize(np.ones(32, np.float32), "mx6", element_arith="fp32_log2")


def test_neural_compressor_profiles_alias_microxcaling():
    for mode in MODES:
        assert dict(get_profile(f"neural_compressor_3_10_{mode}").quantize) == dict(
            get_profile(f"microxcaling_{mode}").quantize
        )


@pytest.mark.parametrize("fmt", list(library_oracles.BREVITAS_ELEMENTS))
def test_brevitas_agrees_with_brevitas(fmt):
    module = library_oracles.brevitas_quantizer(fmt)
    if module is None:
        _missing("brevitas 0.13.4 is not installed (set MXSIM_ORACLES to its --target directory)")
    blocks = _draw(fmt, PER_CLASS)
    want_scales, want_codes, want_out, mx = library_oracles.brevitas(module, blocks, fmt)
    for i in np.flatnonzero(~mx):  # the documented exception: no MX encoding, quantize refuses each block
        with pytest.raises(ValueError, match="has no MX encoding under scale_value_min='1e-10'"):
            mxsim.quantize(blocks[i], fmt, profile="brevitas_0_13")
    kept = blocks[mx]
    t = mxsim.quantize(kept.reshape(-1), fmt, profile="brevitas_0_13")
    ok, exceptions = _compare(
        (want_scales[mx], want_codes[mx], want_out[mx]), np.asarray(t.scales).reshape(-1),
        np.asarray(t.codes).reshape(kept.shape), t.dequantize(np.float32).reshape(kept.shape), fmt,
    )
    print(f"brevitas_0_13 {fmt}: {int(ok.sum())} / {len(ok)} MX blocks agree, {int((~mx).sum())} non-MX blocks "
          f"refused ({exceptions} MXINT8 -0 outputs)")
    assert ok.all(), f"first disagreeing block {kept[np.flatnonzero(~ok)[0]].tolist()}"
    assert (~mx).any() and mx.sum() > len(blocks) // 2
    options = get_profile("brevitas_0_13").quantize_options(fmt)
    for i in range(0, len(kept), 23):  # the reference on a sample
        q = quantize_block([float(v) for v in kept[i]], fmt, options)
        assert q.scale == want_scales[mx][i]
        if q.scale != 0xFF:
            assert q.codes == tuple(int(c) for c in want_codes[mx][i])


def test_brevitas_mxint8_scale_is_one_binade_lower():
    """Hand-worked: amax 1.5 gives E = floor(log2 1.5) - 1 = -1 (scale 0x7E), so 1.5 / 2^-1 = 3
    saturates to 127/64 (code 0x7F) and -1.5 to -2 (code 0x80)."""
    block = np.zeros(32, np.float32)
    block[:2] = [1.5, -1.5]
    t = mxsim.quantize(block, "mxint8", profile="brevitas_0_13")
    assert int(np.asarray(t.scales).reshape(-1)[0]) == 0x7E
    assert [int(c) for c in np.asarray(t.codes).reshape(-1)[:2]] == [0x7F, 0x80]


@pytest.fixture(scope="module")
def ct():
    functions = library_oracles.compressed_tensors()
    if functions is None:
        _missing("compressed-tensors 0.20.0 is not installed (set MXSIM_ORACLES to its --target directory)")
    return functions


@pytest.mark.parametrize("fmt", list(library_oracles.CT_PRESETS))
def test_compressed_tensors_agrees_with_compressed_tensors(ct, fmt):
    blocks = _draw(fmt, PER_CLASS)
    want_scales, want_codes, want_out, mx = library_oracles.compressed_tensors_mx(ct, blocks, fmt)
    for i in np.flatnonzero(~mx):  # the documented exception: NaN blocks have no MX encoding there
        with pytest.raises(ValueError, match="holds a NaN, which has no MX encoding under nan_blocks='error'"):
            mxsim.quantize(blocks[i], fmt, profile="compressed_tensors_0_20")
    kept = blocks[mx]
    t = mxsim.quantize(kept.reshape(-1), fmt, profile="compressed_tensors_0_20")
    ok, _ = _compare(
        (want_scales[mx], want_codes[mx], want_out[mx]), np.asarray(t.scales).reshape(-1),
        np.asarray(t.codes).reshape(kept.shape), t.dequantize(np.float32).reshape(kept.shape), fmt,
    )
    print(f"compressed_tensors_0_20 {fmt}: {int(ok.sum())} / {len(ok)} blocks agree, {int((~mx).sum())} NaN blocks "
          "refused")
    assert ok.all(), f"first disagreeing block {kept[np.flatnonzero(~ok)[0]].tolist()}"
    assert (~mx).any() and mx.sum() > len(blocks) // 2
    options = get_profile("compressed_tensors_0_20").quantize_options(fmt)
    for i in range(0, len(kept), 23):  # the reference on a sample
        q = quantize_block([float(v) for v in kept[i]], fmt, options)
        assert q.scale == want_scales[mx][i]
        if q.scale != 0xFF:
            assert q.codes == tuple(int(c) for c in want_codes[mx][i])


NVFP4_PER_TENSOR = 2  # blocks of 16 per tensor (gs is the tensor's): consecutive blocks of one class


@pytest.mark.parametrize("path", ["fast", "reference"])
def test_compressed_tensors_nvfp4_agrees_with_compressed_tensors(ct, path):
    """NVFP4 preset: global scale, scale codes, element codes and the float32 output (mxsim's dequantize of its
    tensor: the library's fp32(code * fp32(scale / gs))) agree on every tensor of finite blocks; tensors holding
    NaN or Inf (NaN outputs, gs 1 or 0: no NVFP4 encoding) make quantize raise."""
    per_class = PER_CLASS if path == "fast" else 2 * NVFP4_PER_TENSOR
    grid = _grid("nvfp4")
    blocks = np.concatenate([library_stimulus.blocks(grid, 16, per_class, c, 21) for c in library_stimulus.CLASSES])
    options = get_profile("compressed_tensors_0_20").quantize_options("nvfp4")
    agree = refused = 0
    for tensor in blocks.reshape(-1, NVFP4_PER_TENSOR, 16):
        gs, want_scales, want_codes, want_out = library_oracles.compressed_tensors_nvfp4(ct, tensor)
        if not np.isfinite(tensor).all():
            assert np.isnan(want_out).any()
            with pytest.raises(ValueError, match="no NVFP4 encoding under nvfp4_arith='fp32_reciprocal'"):
                mxsim.quantize(tensor.reshape(-1), "nvfp4", profile="compressed_tensors_0_20")
            refused += 1
            continue
        t = mxsim.quantize(tensor.reshape(-1), "nvfp4", profile="compressed_tensors_0_20")
        assert t.tensor_scale == Fraction(gs)
        if path == "fast":
            scales, codes = np.asarray(t.scales).reshape(-1), np.asarray(t.codes).reshape(tensor.shape)
            out = t.dequantize(np.float32).reshape(tensor.shape)
        else:
            gs_exact = Fraction(gs)
            results = [quantize_block([float(v) for v in b], "nvfp4", options, tensor_scale=gs_exact) for b in tensor]
            scales = np.array([r.scale for r in results])
            codes = np.array([r.codes for r in results])
            out = np.array([dequantize_block_bits(r, "nvfp4", "float32", DequantizeOptions(), gs_exact, "e8m0",
                                                  "fp32_reciprocal") for r in results], np.uint32).view(np.float32)
        ok = (scales == want_scales) & np.all(codes == want_codes, axis=1)
        ok &= np.all(out.view(np.uint32) == want_out.view(np.uint32), axis=1)
        assert ok.all(), f"first disagreeing block {tensor[np.flatnonzero(~ok)[0]].tolist()} (gs {gs})"
        agree += len(tensor)
    print(f"compressed_tensors_0_20 nvfp4 ({path}): {agree} / {len(blocks)} blocks agree, {refused} tensors of "
          f"{NVFP4_PER_TENSOR} blocks with NaN/Inf refused")
    # every tensor of the specials class is refused (large draws of the wide class overflow to Inf too)
    assert refused >= per_class // NVFP4_PER_TENSOR and agree == len(blocks) - refused * NVFP4_PER_TENSOR


def test_compressed_tensors_nvfp4_checkpoint_dequantizes_as_the_library(ct):
    """compressed-tensors' own NVFP4 checkpoints (NVFP4PackedCompressor.compress: packed E2M1 nibbles, float8 block
    scales, the global scale) of tensors of two blocks of every finite class, read with MXTensor.from_codes under
    compressed_tensors_0_20: dequantize to float32 equals the library's dequantize(..., dtype=float32), and to
    bfloat16 its decompress (the weights a model loads), word for word; the reference on a sample. mxsim's codes
    from the source equal the checkpoint's. The float32 steps matter: rounding the exact code * scale / gs once
    (float64 division, then float32: no double rounding for these operands) differs on some values."""
    import ml_dtypes

    grid = _grid("nvfp4")
    blocks = np.concatenate([library_stimulus.blocks(grid, 16, PER_CLASS, c, 25) for c in library_stimulus.CLASSES])
    tensors = [t for t in blocks.reshape(-1, NVFP4_PER_TENSOR, 16) if np.isfinite(t).all()]
    agree = single_rounding_differs = 0
    for n, tensor in enumerate(tensors):
        gs, scales, codes, out32, out16 = library_oracles.compressed_tensors_nvfp4_checkpoint(ct, tensor)
        t = mxsim.MXTensor.from_codes(scales[:, None], codes, "nvfp4", tensor_scale=Fraction(gs),
                                      profile="compressed_tensors_0_20")
        assert np.array_equal(t.dequantize_bits("float32"), out32.view(np.uint32)), (tensor.tolist(), gs)
        assert np.array_equal(t.dequantize_bits("bfloat16"), out16), (tensor.tolist(), gs)
        mine = mxsim.quantize(tensor.reshape(-1), "nvfp4", profile="compressed_tensors_0_20")
        assert np.array_equal(np.asarray(mine.codes).reshape(codes.shape), codes)
        assert np.array_equal(np.asarray(mine.scales).reshape(-1), scales)
        if n % 9 == 0:  # the reference
            for b in range(len(tensor)):
                block = QuantizedBlock(int(scales[b]), (), tuple(int(c) for c in codes[b]))
                for output, want in (("float32", out32[b].view(np.uint32)), ("bfloat16", out16[b])):
                    words = dequantize_block_bits(block, "nvfp4", output, DequantizeOptions(), Fraction(gs), "e8m0",
                                                  "fp32_reciprocal")
                    assert words == [int(w) for w in want], (output, tensor.tolist())
        exact = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64) * scales.view(
            ml_dtypes.float8_e4m3fn).astype(np.float64)[:, None] / gs
        single_rounding_differs += int((exact.astype(np.float32).view(np.uint32) != out32.view(np.uint32)).sum())
        agree += len(tensor)
    print(f"compressed_tensors_0_20 nvfp4 checkpoints: {agree} blocks dequantize as the library (float32, bfloat16); "
          f"{single_rounding_differs} float32 values differ from the exact value rounded once")
    assert agree >= 6 * PER_CLASS and single_rounding_differs > 0


@pytest.mark.parametrize("mode", ["exact", "flush", "flush_plus"])
def test_nvfp4_fp32_reciprocal_reads_subnormal_inputs_in_both_layers(mode):
    """The fast path of nvfp4_arith='fp32_reciprocal' reads inputs through subnormal_inputs as the reference does
    (it once quantized the raw values): [1e-40, -1e-40, 2^-130, 1, 0...] gives -1e-40 the code 0x8 (-0) under
    'exact' and 'flush', 0x0 under 'flush_plus'; 'as_normal' is refused by both."""
    x = np.array([1e-40, -1e-40, 2.0**-130, 1.0] + [0.0] * 12, np.float32)
    t = mxsim.quantize(x, "nvfp4", nvfp4_arith="fp32_reciprocal", subnormal_inputs=mode)
    options = QuantizeOptions(nvfp4_arith="fp32_reciprocal", subnormal_inputs=mode)
    want = quantize_block([float(v) for v in x], "nvfp4", options, tensor_scale=t.tensor_scale)
    assert tuple(int(c) for c in np.asarray(t.codes).reshape(-1)) == want.codes
    assert want.codes[:4] == ((0, 0, 0, 7) if mode == "flush_plus" else (0, 8, 0, 7))
    with pytest.raises(ValueError, match="as_normal"):
        mxsim.quantize(x, "nvfp4", nvfp4_arith="fp32_reciprocal", subnormal_inputs="as_normal")


def test_compressed_tensors_nvfp4_dequantize_hand_worked():
    """Contract 6.2, hand-worked: a tensor with amax 7 has gs = fp32(fp32(1 / 7) * 2688) = 384 + 2^-15
    (0x43C00001) and block scale 448 (0x7E); the step fp32(448 / gs) is 0x3F955555 (1.16666663), and the code 6
    (0x7) dequantizes to fp32(6 * step) = 7.0 exactly (0x40E00000), where 6 * 448 / gs = 6.99999944 rounds to
    0x40DFFFFF; 1.5 (0x3) gives 1.75 (0x3FE00000), not 0x3FDFFFFF. The tensor's own inputs 7 and 1.75 come back."""
    tensor = np.zeros(16, np.float32)
    tensor[0], tensor[1] = 7.0, 1.75
    t = mxsim.quantize(tensor, "nvfp4", profile="compressed_tensors_0_20")
    assert t.tensor_scale == 384 + Fraction(1, 2**15)
    assert int(np.asarray(t.scales).reshape(-1)[0]) == 0x7E and np.asarray(t.codes).reshape(-1)[:2].tolist() == [7, 3]
    assert t.dequantize_bits("float32")[:2].tolist() == [0x40E00000, 0x3FE00000]
    assert t.dequantize(np.float64)[:2].tolist() == [7.0, 1.75]
    # the exact 6 * 448 / gs lies within half a float32 step (2^-22 in [4, 8)) of 0x40DFFFFF: one rounding gives it
    exact = 6 * Fraction(448) / t.tensor_scale
    below = Fraction(float(np.uint32(0x40DFFFFF).view(np.float32)))
    assert abs(exact - below) < Fraction(1, 2**22) and exact != 7


def test_compressed_tensors_nvfp4_hand_worked():
    """Contract 6.2, hand-worked: amax 6 gives gs = 448 exactly, block scale fp32(448 * 1) = 448 (0x7E),
    step 448 / 448 = 1; an all-zero block in that tensor gets scale 0.125 (0x20); a tensor of fp32
    subnormals gets gs = 1 (2688 / 2^-126 overflows fp32), scale UE4M3(amax / 6) = 0, so 0.125, and
    every element flushes to zero (|x| / 0.125 rounds to 0): a negative one to -0 (code 0x8, its quotient is
    nonzero), while a -0 input gives +0 (code 0x0, zero_sign 'plus_input'). -0.75 ties to even: -1.0 (0xA)."""
    tensor = np.zeros(32, np.float32)
    tensor[0], tensor[1], tensor[2] = 6.0, -0.75, -0.0
    t = mxsim.quantize(tensor, "nvfp4", profile="compressed_tensors_0_20")
    assert t.tensor_scale == 448
    assert np.asarray(t.scales).reshape(-1).tolist() == [0x7E, 0x20]
    assert np.asarray(t.codes).reshape(-1)[:3].tolist() == [0x7, 0xA, 0x0]
    tiny = -np.full(16, 2.0**-140, np.float32)
    t = mxsim.quantize(tiny, "nvfp4", profile="compressed_tensors_0_20")
    assert t.tensor_scale == 1
    assert np.asarray(t.scales).reshape(-1).tolist() == [0x20]
    assert np.asarray(t.codes).reshape(-1).tolist() == [0x8] * 16


def test_compressed_tensors_mxfp8_scale_rounds_at_one_bit():
    """Contract 6.2, hand-worked: amax 1.75 * 2^8 = 448 rounds half-up at one fraction bit to 2^9,
    so E = 9 - 8 = 1 (0x80) and 448 / 2 = 224 is code 0x76; at E4M3's three bits 448 stays in its
    binade (E = 0, 0x7F, code 0x7E)."""
    block = np.zeros(32, np.float32)
    block[0] = 448.0
    t = mxsim.quantize(block, "mxfp8_e4m3", profile="compressed_tensors_0_20")
    assert (int(np.asarray(t.scales).reshape(-1)[0]), int(np.asarray(t.codes).reshape(-1)[0])) == (0x80, 0x76)
    t = mxsim.quantize(block, "mxfp8_e4m3", scale_rule="even")
    assert (int(np.asarray(t.scales).reshape(-1)[0]), int(np.asarray(t.codes).reshape(-1)[0])) == (0x7F, 0x7E)


@pytest.fixture(scope="module")
def quark():
    functions = library_oracles.quark()
    if functions is None:
        _missing("amd-quark 0.13 is not installed (set MXSIM_ORACLES to its --target directory)")
    return functions


def _quark_codes(exponent: np.ndarray, out: np.ndarray, fmt: str):
    """(scale bytes, codes, output) of Quark's E and float32 output: a NaN or Inf scale (mode
    'floor' with an Inf: every output NaN) is the NaN block 0xFF (codes 0); MXINT8 E below -120 is -120 (its step clamp, the documented encoding); codes are
    output / 2^E (MXINT8: / 2^(E - 6)), encoded by ml_dtypes (MXINT8: the integer)."""
    nan = ~np.isfinite(exponent)
    if fmt == "mxint8":
        exponent = np.maximum(exponent, -120)
    exponent = np.where(nan, 0, exponent)
    scales = np.where(nan, 0xFF, exponent + 127).astype(np.uint8)
    shift = (exponent - (6 if fmt == "mxint8" else 0)).astype(np.int64)
    with np.errstate(invalid="ignore"):
        values = np.where(nan[:, None], 0.0, np.ldexp(out.astype(np.float64), -shift[:, None]))
    if fmt == "mxint8":
        codes = (np.rint(np.nan_to_num(values)).astype(np.int64) & 0xFF).astype(np.uint8)
    else:
        codes = library_oracles.element_codes(values, fmt)
    return scales, codes, out


QUARK_PROFILES = {"even": "quark_0_13", "floor": "quark_0_13_floor", "ceil": "quark_0_13_ceil"}


@pytest.mark.parametrize("mode", list(QUARK_PROFILES))
@pytest.mark.parametrize("fmt", list(library_oracles.QUARK_ELEMENTS))
def test_quark_agrees_with_quark(quark, fmt, mode):
    """quark_0_13 (mode 'even'), quark_0_13_floor and quark_0_13_ceil against Quark's fake-quantize op: scale byte
    (Quark's own scale steps; MXINT8 below 2^-120: E = -120, the documented step clamp), element
    codes (Quark's output / scale, encoded by ml_dtypes / as integers; not where the output is
    Inf) and the float32 output, every block. Refused, one by one: 'even' FP4/FP6 blocks holding
    an Inf (Quark's output keeps the Inf), 'floor' / 'ceil' blocks whose Quark scale is 2^-128 .. 2^-149
    (no E8M0 code; MXINT8's step clamp makes those E = -120)."""
    name = QUARK_PROFILES[mode]
    blocks = _draw(fmt, PER_CLASS)
    exponent, out = library_oracles.quark_mx(quark, blocks, fmt, mode)
    if mode == "even":
        refuse = np.isinf(blocks).any(axis=1) & (fmt in ("mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1"))
        message = "holds an Inf, which has no MX encoding under inf_policy='error'"
    else:
        refuse = (exponent < -127) & (fmt != "mxint8")
        message = "which no E8M0 code holds"
    for i in np.flatnonzero(refuse):
        if mode == "even":
            assert np.isinf(out[i]).any()
        with pytest.raises(ValueError, match=message):
            mxsim.quantize(blocks[i], fmt, profile=name)
    kept = blocks[~refuse]
    want_scales, want_codes, out = _quark_codes(exponent[~refuse], out[~refuse], fmt)
    t = mxsim.quantize(kept.reshape(-1), fmt, profile=name)
    scales, codes = np.asarray(t.scales).reshape(-1), np.asarray(t.codes).reshape(kept.shape)
    # an Inf output (FP8: an Inf saturates to max x 2^127, which overflows float32) shows no code: output only
    unseen = np.isinf(out)
    want_codes = np.where(unseen, codes, want_codes)
    ok, _ = _compare((want_scales, want_codes, out), scales, codes, t.dequantize(np.float32).reshape(kept.shape), fmt)
    print(f"{name} {fmt}: {int(ok.sum())} / {len(ok)} blocks agree, {int(refuse.sum())} blocks refused")
    assert ok.all(), f"first disagreeing block {kept[np.flatnonzero(~ok)[0]].tolist()}"
    options = get_profile(name).quantize_options(fmt)
    for i in range(0, len(kept), 23):  # the reference on a sample
        q = quantize_block([float(v) for v in kept[i]], fmt, options)
        assert q.scale == scales[i] and q.codes == tuple(int(c) for c in codes[i])


def test_quark_hand_worked():
    """Contract 6.2, hand-worked. MXFP4: -0.2 under E = 0 (amax 6: 6 rounds at 1 bit to 6, binade 2, E = 2 - 2)
    rounds to zero, code +0 (0x0), not -0. MXINT8: amax 2 - 2^-7 is kept at Quark's 8 fraction bits (E = 0)
    where 6 bits round it up to 2 (E = 1); an all-zero block and a block of 2^-140 get E = -120 (byte 0x07)."""
    block = np.zeros(32, np.float32)
    block[0], block[1] = 6.0, -0.2
    t = mxsim.quantize(block, "mxfp4_e2m1", profile="quark_0_13")
    assert int(t.scales[0]) == 127 and np.asarray(t.codes)[:2].tolist() == [0x7, 0x0]
    assert mxsim.quantize(block, "mxfp4_e2m1", scale_rule="even").codes[1] == 0x8  # mxsim's default keeps -0
    block = np.zeros(32, np.float32)
    block[0] = 255 / 128  # 1.9921875 = 2 - 2^-7: kept at 8 fraction bits (E = 0), half-up at 6 gives 2.0 (E = 1)
    assert int(mxsim.quantize(block, "mxint8", profile="quark_0_13").scales[0]) == 127
    assert int(mxsim.quantize(block, "mxint8", scale_rule="even").scales[0]) == 128
    assert int(mxsim.quantize(np.zeros(32, np.float32), "mxint8", profile="quark_0_13").scales[0]) == 7
    assert int(mxsim.quantize(np.full(32, 2.0**-140, np.float32), "mxint8", profile="quark_0_13").scales[0]) == 7


def test_quark_floor_hand_worked():
    """Contract 6.2, Quark 'floor': an all-zero block has scale 0, replaced by float32 eps 2^-23 (byte 104);
    E4M3 amax 2^-130 gives 2^(-130 - 8) = 2^-138, no E8M0 code (raises); amax 2^-149 gives 2^-157, which
    float32 flushes to 0, so eps again (104); MXINT8 amax 2^-130 is E = -120 (byte 7, its step clamp)."""
    zeros = np.zeros(32, np.float32)
    assert int(mxsim.quantize(zeros, "mxfp8_e4m3", profile="quark_0_13_floor").scales[0]) == 104
    with pytest.raises(ValueError, match=r"has scale 2\^-138 under scale_underflow='fp32_pow'"):
        mxsim.quantize(np.full(32, 2.0**-130, np.float32), "mxfp8_e4m3", profile="quark_0_13_floor")
    tiny = np.full(32, 2.0**-149, np.float32)
    assert int(mxsim.quantize(tiny, "mxfp8_e4m3", profile="quark_0_13_floor").scales[0]) == 104
    small = np.full(32, 2.0**-130, np.float32)
    assert int(mxsim.quantize(small, "mxint8", profile="quark_0_13_floor").scales[0]) == 7


def test_quark_ceil_hand_worked():
    """Contract 6.2, Quark 'ceil': amax 2^10 * (1 + 2^-23) has log2 10 + 1.72e-7, below half the float32
    spacing at 10 (2^-21 = 4.77e-7), so float32 log2 is 10 and E = 10 - 8 = 2 (byte 0x81) for E4M3, where the
    exact ceiling gives 11 - 8 = 3 (0x82); 2^10 * (1 + 2^-21) has log2 10 + 6.88e-7, which rounds up: 0x82."""
    block = np.zeros(32, np.float32)
    block[0] = np.float32(2.0**10 * (1 + 2.0**-23))
    assert int(mxsim.quantize(block, "mxfp8_e4m3", profile="quark_0_13_ceil").scales[0]) == 0x81
    assert int(mxsim.quantize(block, "mxfp8_e4m3", scale_rule="ceil").scales[0]) == 0x82
    block[0] = np.float32(2.0**10 * (1 + 2.0**-21))
    assert int(mxsim.quantize(block, "mxfp8_e4m3", profile="quark_0_13_ceil").scales[0]) == 0x82


@pytest.mark.parametrize("mode", list(QUARK_PROFILES))
@pytest.mark.parametrize("fmt", ["mx6", "mx9"])
def test_quark_mx6_mx9_agrees_with_quark(quark, fmt, mode):
    """quark_0_13 (and _floor, _ceil: Quark does not read the mode for MX6/MX9) against Quark's MX6/MX9 on blocks
    of 16 of every class: scale byte, the 8 microexponent bits and the element codes from Quark's own real
    quantize (block exponent, packed shift bits, integer codes), and the float32 output of its fake quantize, every
    block; through the fast path and, on a sample, the reference. Blocks holding NaN or Inf (Quark passes them
    through and quantizes the rest: no MX encoding) must make quantize raise, one by one. The stimulus reaches the
    difference: mxsim's plain rule with flush_subnormal_inputs (signed zeros) disagrees on some blocks."""
    name = QUARK_PROFILES[mode]
    grid = _grid(fmt)
    blocks = np.concatenate([library_stimulus.blocks(grid, 16, PER_CLASS, c, 21) for c in library_stimulus.CLASSES])
    want_scales, want_subscales, want_codes, want_out = library_oracles.quark_microexponent(quark, blocks, fmt, mode)
    special = ~np.isfinite(blocks).all(axis=1)
    for i in np.flatnonzero(special):
        passed = ~np.isfinite(blocks[i])
        assert np.array_equal(want_out[i][passed], blocks[i][passed], equal_nan=True)  # Quark passes them through
        with pytest.raises(ValueError, match="which has no MX encoding under (nan_blocks|inf_policy)='error'"):
            mxsim.quantize(blocks[i], fmt, profile=name)
    kept = ~special
    t = mxsim.quantize(blocks[kept].reshape(-1), fmt, profile=name)
    scales = np.asarray(t.scales).reshape(-1)
    subscales = np.asarray(t.subscales).reshape(-1, 8)
    codes = np.asarray(t.codes).reshape(-1, 16)
    output = t.dequantize(np.float32).reshape(-1, 16)
    ok = (scales == want_scales[kept]) & np.all(subscales == want_subscales[kept], axis=1)
    ok &= np.all(codes == want_codes[kept], axis=1)
    ok &= np.all(output.view(np.uint32) == want_out[kept].view(np.uint32), axis=1)
    print(f"{name} {fmt}: {int(ok.sum())} / {int(kept.sum())} blocks agree, {int(special.sum())} blocks refused")
    assert ok.all(), f"first disagreeing block {blocks[kept][np.flatnonzero(~ok)[0]].tolist()}"
    assert special.sum() >= PER_CLASS and kept.sum() >= 6 * PER_CLASS  # (the wide class can overflow to Inf)
    options = get_profile(name).quantize_options(fmt)
    for i in range(0, int(kept.sum()), 11):  # the reference on a sample
        q = quantize_block([float(v) for v in blocks[kept][i]], fmt, options)
        assert (q.scale, q.subscales, q.codes) == (scales[i], tuple(subscales[i]), tuple(codes[i])), i
    plain = mxsim.quantize(blocks[kept].reshape(-1), fmt, flush_subnormal_inputs=True)
    plain_out = plain.dequantize(np.float32).reshape(-1, 16)
    assert not np.array_equal(plain_out.view(np.uint32), want_out[kept].view(np.uint32))


def test_quark_mx6_hand_worked():
    """Contract 2.1 and 6.2, hand-worked MX6 (m = 4: elements M * 2^(E - tau - 3), M <= 15). Block [2^127,
    -2^-126, -0, -1e-40, -2^120, 3, 0...]: E = 127 (byte 0xFE); pair 0 holds the maximum (tau 0), every other pair
    lies below 2^127 (tau 1, bits 0b11111110). -2^-126 / 2^124 rounds to zero and keeps its sign: code 0x10 (-0);
    -0 and the subnormal -1e-40 read as +0 (code 0x00, subnormal_inputs 'flush_plus'); -2^120 / 2^123 = -0.125
    rounds to -0 (0x10); 3 / 2^123 rounds to +0. mxsim's flush_subnormal_inputs keeps -0 and gives -1e-40 a -0."""
    block = np.zeros(16, np.float32)
    block[:6] = [2.0**127, -(2.0**-126), -0.0, -1e-40, -(2.0**120), 3.0]
    t = mxsim.quantize(block, "mx6", profile="quark_0_13")
    assert int(t.scales[0]) == 0xFE
    assert np.asarray(t.subscales).reshape(-1).tolist() == [0] + [1] * 7
    assert np.asarray(t.codes).reshape(-1)[:6].tolist() == [0x08, 0x10, 0x00, 0x00, 0x10, 0x00]
    plain = mxsim.quantize(block, "mx6", flush_subnormal_inputs=True)
    assert np.asarray(plain.codes).reshape(-1)[:6].tolist() == [0x08, 0x10, 0x10, 0x10, 0x10, 0x00]
    # a maximum 1.9375 = 15.5 / 8 ties to 16, which clamps to 15 (1.875)
    block = np.zeros(16, np.float32)
    block[0] = 15.5 / 8
    t = mxsim.quantize(block, "mx6", profile="quark_0_13")
    assert (int(t.scales[0]), int(np.asarray(t.codes).reshape(-1)[0])) == (127, 0x0F)
    assert t.dequantize(np.float32)[0] == 1.875


# --------------------------------------------------------------------------------------------------
# identify: the library named from its output


def _identify_source(seed: int) -> np.ndarray:
    """Gaussian blocks over many binades, with FP4 ties, maxima below powers of two and -0: no
    zero blocks (Brevitas has no MX encoding for those)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((96, 32)) * np.ldexp(1.0, rng.integers(-25, 40, size=(96, 1)))
    x[::7, 3] = -0.0
    x = x.astype(np.float32)
    powers = np.ldexp(np.float32(1), rng.integers(-30, 30, size=24)).astype(np.float32)
    x[72:, 0] = (powers.view(np.int32) - rng.integers(1, 40, size=24).astype(np.int32)).view(np.float32)
    scale = np.ldexp(np.float32(1), rng.integers(-20, 20, size=(24, 1))).astype(np.float32)
    x[40:64, :6] = np.array([6, 0.25, -0.75, 1.25, -2.5, 5], np.float32) * scale  # FP4 ties under a maximum of 6
    return x


@pytest.mark.parametrize("mode", MODES)
def test_identify_names_microxcaling(nc_mx, mode):
    from mxsim.golden.device.identify import identify, identify_lines

    source = _identify_source(1)
    scales, codes, _ = library_oracles.microxcaling(nc_mx, source, "mxfp4_e2m1", mode)
    report = identify(source, scales, codes, "mxfp4_e2m1")
    print("\n".join(identify_lines(report)))
    assert {c.label for c in report.best} == {f"profile microxcaling_{mode}", f"profile neural_compressor_3_10_{mode}"}
    assert report.best[0].explained == len(scales)


@pytest.mark.parametrize("fmt", list(library_oracles.CT_PRESETS))
def test_identify_names_compressed_tensors(ct, fmt):
    from mxsim.golden.device.identify import identify

    source = _identify_source(4)
    source[5] = -0.0  # an all -0 block
    source[6, :] = np.float32(448 * 2.0**-10)  # MXFP8: amax 1.75 * 2^k, the one-bit scale rounding
    scales, codes, _, mx = library_oracles.compressed_tensors_mx(ct, source, fmt)
    assert mx.all()
    report = identify(source, scales, codes, fmt)
    assert [c.label for c in report.best] == ["profile compressed_tensors_0_20"]
    assert report.best[0].explained == len(scales)


def test_identify_names_compressed_tensors_nvfp4(ct):
    """A tensor compressed-tensors made with its NVFP4 preset (one global scale over 96 blocks of 16: Gaussian
    blocks over 13 binades, -0 inputs, an all-zero block (scale 0.125), FP4 ties under a block maximum of 6):
    identify names compressed_tensors_0_20 alone, explaining every block, and mxsim's defaults fewer."""
    from mxsim.golden.device.identify import identify

    rng = np.random.default_rng(6)
    source = rng.standard_normal((96, 16)) * np.ldexp(1.0, rng.integers(-6, 7, size=(96, 1)))
    source[::7, 3] = -0.0
    source[5] = 0.0
    source[60:72, :6] = np.array([6, 0.25, -0.75, 1.25, -2.5, 5]) * np.ldexp(1.0, rng.integers(-3, 4, size=(12, 1)))
    source = source.astype(np.float32)
    gs, scales, codes, _ = library_oracles.compressed_tensors_nvfp4(ct, source)
    report = identify(source, scales, codes, "nvfp4")
    assert [c.label for c in report.best] == ["profile compressed_tensors_0_20"]
    assert report.best[0].explained == len(scales) == 96
    defaults = next(c for c in report.results if c.profile is None and not c.changes)
    assert defaults.explained < len(scales)
    # with the library's global scale given, a candidate must reproduce it too: the defaults' s_t is not gs
    report = identify(source, scales, codes, "nvfp4", tensor_scale=gs)
    assert [c.label for c in report.best] == ["profile compressed_tensors_0_20"]
    defaults = next(c for c in report.results if c.profile is None and not c.changes)
    assert defaults.explained == 0 and defaults.error.startswith("tensor scale ")


@pytest.mark.parametrize("fmt", ["mx6", "mx9"])
def test_identify_names_quark_mx6_mx9(quark, fmt):
    """MX6/MX9 tensors Quark made (its real quantize: scale bytes and element codes) from finite Gaussian blocks with
    -0 and fp32 subnormal inputs: identify names the three Quark profiles (they do not differ on MX6/MX9), every
    block explained; mxsim's defaults keep the -0 signs and explain fewer."""
    from mxsim.golden.device.identify import identify

    rng = np.random.default_rng(7)
    source = rng.standard_normal((96, 16)) * np.ldexp(1.0, rng.integers(-30, 30, size=(96, 1)))
    source[::5, 3] = -0.0
    source[::9, 6] = -1e-40
    source = source.astype(np.float32)
    scales, subscales, codes, _ = library_oracles.quark_microexponent(quark, source, fmt, "even")
    report = identify(source, scales, codes, fmt, subscales=subscales)
    assert {c.label for c in report.best} == {f"profile {name}" for name in QUARK_PROFILES.values()}
    assert report.best[0].explained == len(scales)
    defaults = next(c for c in report.results if c.profile is None and not c.changes)
    assert defaults.explained < len(scales)
    subscales[3, 0] ^= 1  # one shift bit changed: that block is no longer reproduced
    report = identify(source, scales, codes, fmt, subscales=subscales)
    assert next(c for c in report.results if c.label == "profile quark_0_13").explained == len(scales) - 1
    assert report.best[0].explained == len(scales) - 1


def test_identify_command_line_reads_subscales_from_a_tensor_file(quark, tmp_path, capsys):
    """An mxsim tensor file of Quark's MX6 codes, scales and shift bits: `mxsim identify` names the Quark profiles;
    the same file with one shift bit changed is no longer explained whole."""
    from mxsim.cli import main
    from mxsim.fileformat import save

    rng = np.random.default_rng(8)
    source = (rng.standard_normal((12, 16)) * np.ldexp(1.0, rng.integers(-5, 5, size=(12, 1)))).astype(np.float32)
    source[2, 5] = -0.0
    scales, subscales, codes, _ = library_oracles.quark_microexponent(quark, source, "mx6", "even")
    np.save(tmp_path / "x.npy", source)
    for changed in (False, True):
        if changed:
            subscales[0, 0] ^= 1
        t = mxsim.MXTensor.from_codes(scales[:, None], codes, "mx6", subscales=subscales[:, None, :])
        save(t, tmp_path / "t.mxt")
        assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / "t.mxt")]) == 0
        first = capsys.readouterr().out.split("\n")[0]
        assert "profile quark_0_13" in first
        want = "reproduces 11 of 12 blocks (91.7 %)" if changed else "reproduces 12 of 12 blocks (100.0 %)"
        assert first.endswith(want)


@pytest.mark.parametrize("fmt", ["mxfp4_e2m1", "mxint8"])
def test_identify_names_quark(quark, fmt):
    from mxsim.golden.device.identify import identify

    source = _identify_source(5)
    source[7] = 0.0  # an all-zero block (amax read as 2^-126)
    exponent, out = library_oracles.quark_mx(quark, source, fmt, "even")
    scales, codes, _ = _quark_codes(exponent, out, fmt)
    report = identify(source, scales, codes, fmt)
    assert [c.label for c in report.best] == ["profile quark_0_13"]
    assert report.best[0].explained == len(scales)


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxint8"])
def test_identify_names_brevitas(fmt):
    from mxsim.golden.device.identify import identify

    module = library_oracles.brevitas_quantizer(fmt)
    if module is None:
        _missing("brevitas 0.13.4 is not installed (set MXSIM_ORACLES to its --target directory)")
    source = _identify_source(2)
    scales, codes, _, mx = library_oracles.brevitas(module, source, fmt)
    assert mx.all()
    report = identify(source, scales, codes, fmt)
    labels = [c.label for c in report.best]
    assert "profile brevitas_0_13" in labels and report.best[0].explained == len(scales)
    # a profile named beside it must reproduce Brevitas's blocks too (these blocks cannot tell the two apart:
    # quark_0_13_floor also floors the float32 log2 on MXFP8)
    for label in labels:
        t = mxsim.quantize(source, fmt, profile=label.removeprefix("profile "))
        assert np.array_equal(np.asarray(t.scales).reshape(-1), np.asarray(scales).reshape(-1)), label
        assert np.array_equal(np.asarray(t.codes).reshape(len(t.scales.reshape(-1)), -1),
                              np.asarray(codes).reshape(len(t.scales.reshape(-1)), -1)), label


def test_identify_command_line(nc_mx, tmp_path, capsys):
    from mxsim.cli import main

    source = _identify_source(3)
    source[0] = 0.0  # an all-zero block: microxcaling's MXINT8 scale 0x01, mxsim's default 0x00
    scales, codes, _ = library_oracles.microxcaling(nc_mx, source, "mxint8", "even")
    for name, array in (("x", source), ("codes", codes), ("scales", scales)):
        np.save(tmp_path / f"{name}.npy", array)
    assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / "codes.npy"), str(tmp_path / "scales.npy"),
                 "--format", "mxint8"]) == 0
    out = capsys.readouterr().out
    first = out.split("\n")[0]
    assert first.startswith("identified: ") and "profile microxcaling_even" in first and "defaults" not in first
    assert first.endswith("reproduces 96 of 96 blocks (100.0 %)")  # (no MXINT8 ties here: nearest explains it too)
    assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / "codes.npy")]) == 2
    assert "needs SCALES.npy and --format" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# The options of 6.2: the fast path equals the reference (no library needed)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


OCP_FORMATS = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"]
DIFFERENTIAL = {"blocks": 0, "errors": 0}


@st.composite
def _library_options(draw, name: str) -> dict:
    o = {"scale_rule": draw(st.sampled_from(["floor", "floor_fp32", "even", "floor_fp32", "ceil_fp32"])),
         "zero_block_scale": draw(st.sampled_from(["scale_min", "min_normal"])),
         "scale_overflow": draw(st.sampled_from(["clamp", "nan"])),
         "element_arith": draw(st.sampled_from(["exact", "fp32_log2", "fp32_log2"])),
         "zero_sign": draw(st.sampled_from(["keep", "plus_input", "plus"])),
         "flush_subnormal_blocks": draw(st.booleans()),
         "nan_blocks": draw(st.sampled_from(["nan", "error"])),
         "scale_offset": draw(st.sampled_from([0, -1])),
         "scale_value_min": draw(st.sampled_from(["none", "none", "1e-10"])),
         "inf_policy": draw(st.sampled_from(["nan", "saturate", "max_scale", "error"])),
         "scale_underflow": draw(st.sampled_from(["clamp", "fp32_pow"])),
         "subnormal_inputs": draw(st.sampled_from(["exact", "exact", "flush", "flush_plus"])),
         "scale_min": draw(st.sampled_from([-127, -127, -120])),
         "rounding": draw(st.sampled_from(["rne", "rna", "rtz"])),
         "int8_allow_neg2": name == "mxint8" and draw(st.booleans())}
    if o["scale_rule"] == "even":
        o["scale_round_bits"] = draw(st.sampled_from([None, 0, 1, 3]))
    return o


def _fp32_block(draw, k: int = 32) -> np.ndarray:
    """k float32 values: a maximum a few steps below or above a power of two (any binade, subnormals
    included), others spread below it, some zeros, -0, and now and then NaN or Inf."""
    top = draw(st.integers(-148, 127))
    steps = draw(st.integers(-40, 3))
    bits = int(np.float32(2.0**top).view(np.uint32)) + steps
    amax = np.uint32(min(max(bits, 1), 0x7F7FFFFF)).view(np.float32)
    shifts = draw(st.lists(st.integers(0, 40), min_size=k - 1, max_size=k - 1))
    fractions = draw(st.lists(st.integers(0, (1 << 23) - 1), min_size=k - 1, max_size=k - 1))
    signs = draw(st.lists(st.booleans(), min_size=k, max_size=k))
    rest = [np.float32(float(amax) * (1 + f / 2**23) / 2 ** (s + 1)) for s, f in zip(shifts, fractions)]
    x = np.array([amax] + rest, np.float32)
    x[np.array(draw(st.lists(st.booleans(), min_size=k, max_size=k)))] *= np.float32(draw(st.sampled_from([1, 0])))
    x = np.where(signs, -x, x).astype(np.float32)
    special = draw(st.sampled_from([None] * 6 + [np.nan, np.inf, -np.inf]))
    if special is not None:
        x[draw(st.integers(0, k - 1))] = special
    return x


@pytest.mark.parametrize("name", OCP_FORMATS)
@given(data=st.data())
@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_fast_path_equals_reference_on_library_options(name, data):
    options = data.draw(_library_options(name))
    opts = QuantizeOptions(**options)
    blocks = np.stack([_fp32_block(data.draw) for _ in range(data.draw(st.integers(1, 3)))])
    expected, error = [], None
    for block in blocks:
        try:
            expected.append(quantize_block([float(v) for v in block], name, opts))
        except ValueError as exc:
            error = exc
            break
    if error is not None:
        with pytest.raises(ValueError):
            mxsim.quantize(blocks.reshape(-1), name, **options)
        DIFFERENTIAL["errors"] += 1
        return
    t = mxsim.quantize(blocks.reshape(-1), name, **options)
    for b, want in enumerate(expected):
        assert int(np.asarray(t.scales).reshape(-1)[b]) == want.scale, (b, options, blocks[b].tolist())
        assert tuple(int(c) for c in np.asarray(t.codes).reshape(len(blocks), 32)[b]) == want.codes, (b, options)
    DIFFERENTIAL["blocks"] += len(blocks)


@pytest.mark.parametrize("name", ["mx6", "mx9", "mx4", "msfp12"])
@given(data=st.data())
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_fast_path_equals_reference_on_shared_exponent_options(name, data):
    """The 6.2 options of the E8M0 shared-exponent formats (Quark MX6/MX9: subnormal_inputs 'flush_plus',
    nan_blocks and inf_policy 'error'), the fast path against the reference, blocks of 16 (or an error from both)."""
    options = {"subnormal_inputs": data.draw(st.sampled_from(["exact", "flush", "flush_plus", "flush_plus"])),
               "nan_blocks": data.draw(st.sampled_from(["nan", "error"])),
               "inf_policy": data.draw(st.sampled_from(["nan", "saturate", "error"])),
               "rounding": data.draw(st.sampled_from(["rne", "rna", "rtz"]))}
    opts = QuantizeOptions(**options)
    blocks = np.stack([_fp32_block(data.draw, 16) for _ in range(data.draw(st.integers(1, 3)))])
    try:
        expected = [quantize_block([float(v) for v in block], name, opts) for block in blocks]
    except ValueError:
        with pytest.raises(ValueError):
            mxsim.quantize(blocks.reshape(-1), name, **options)
        DIFFERENTIAL["errors"] += 1
        return
    t = mxsim.quantize(blocks.reshape(-1), name, **options)
    subscales = None if t.subscales is None else np.asarray(t.subscales).reshape(len(blocks), -1)
    for b, want in enumerate(expected):
        assert int(np.asarray(t.scales).reshape(-1)[b]) == want.scale, (b, options, blocks[b].tolist())
        assert tuple(int(c) for c in np.asarray(t.codes).reshape(len(blocks), 16)[b]) == want.codes, (b, options)
        assert (() if subscales is None else tuple(int(s) for s in subscales[b])) == want.subscales, (b, options)
    DIFFERENTIAL["blocks"] += len(blocks)


def test_library_option_differential_counts():
    """Runs after the test above (file order): how many blocks and errors agreed."""
    print(f"\nfast == reference on the 6.2 options: {DIFFERENTIAL['blocks']} blocks, {DIFFERENTIAL['errors']} errors")
    if DIFFERENTIAL["blocks"] or DIFFERENTIAL["errors"]:
        assert DIFFERENTIAL["blocks"] > 100
