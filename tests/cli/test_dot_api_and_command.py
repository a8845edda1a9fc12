"""``mxsim.dot`` (DotGeneral of two MXTensors) and ``mxsim dot`` on the command line.

Expected results come from the reference model (:func:`mxsim.ref.dot.dot_general` on the same
blocks, read straight from the tensors' code arrays), from float64 NumPy arithmetic on the
dequantized values where it is provably exact, or from hand derivation.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import mxsim
from mxsim import Accumulator, MXTensor
from mxsim.options.accumulate import PRESETS
from mxsim.cli import main
from mxsim.ref import dot as ref_dot
from mxsim.ref.stored_block import QuantizedBlock

OUTPUT_DTYPES = {"fp32": (np.float32, np.uint32), "bf16": (np.float32, np.uint16), "fp16": (np.float16, np.uint16),
                 "fp32_e8m13": (np.float32, np.uint32)}


# --- the reference for a whole mxsim.dot call ---------------------------------------------------
def tensor_blocks(t: MXTensor, index: tuple) -> list[QuantizedBlock]:
    """The blocks of row ``index`` of a tensor's stored layout (blocks along the last axis)."""
    k = t.fmt.block_size
    codes, scales = t.codes[index], t.scales[index]
    subs = None if t.subscales is None else t.subscales[index]
    return [
        QuantizedBlock(int(scales[j]), () if subs is None else tuple(int(s) for s in subs[j]),
                       tuple(int(c) for c in codes[j * k:(j + 1) * k]))
        for j in range(scales.shape[-1])
    ]


def broadcast_index(index: tuple, shape: tuple) -> tuple:
    """The element of an array of ``shape`` that NumPy broadcasting pairs with ``index``."""
    tail = index[len(index) - len(shape):] if shape else ()
    return tuple(0 if n == 1 else i for i, n in zip(tail, shape))


def reference(a: MXTensor, b: MXTensor, acc: Accumulator):
    """(lead shape, {index: GeneralDot}) from the reference model."""
    lead = np.broadcast_shapes(a.codes.shape[:-1], b.codes.shape[:-1])
    results = {}
    for index in np.ndindex(*lead):
        results[index] = ref_dot.dot_general(
            tensor_blocks(a, broadcast_index(index, a.codes.shape[:-1])),
            tensor_blocks(b, broadcast_index(index, b.codes.shape[:-1])),
            a.fmt, b.fmt, acc, tensor_scale_a=a.tensor_scale, tensor_scale_b=b.tensor_scale)
    return lead, results


def values_of_bits(bits: np.ndarray, output: str) -> np.ndarray:
    """Output codes as numbers, by the IEEE layouts (bf16 is the top half of an fp32)."""
    if output in ("fp32", "fp32_e8m13"):
        return bits.astype(np.uint32).view(np.float32)
    if output == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.astype(np.uint16).view(np.float16)


def assert_matches_reference(a: MXTensor, b: MXTensor, acc, name_or_acc=None):
    """mxsim.dot(a, b, name_or_acc) (default: acc), plain and with details, equals the reference
    with ``acc`` in every field; returns the DotResult."""
    arg = acc if name_or_acc is None else name_or_acc
    lead, want = reference(a, b, acc)
    value_dtype, bits_dtype = OUTPUT_DTYPES[acc.output]
    plain = mxsim.dot(a, b, arg)
    got = mxsim.dot(a, b, arg, details=True)
    assert isinstance(got, mxsim.DotResult)
    n_blocks = a.scales.shape[-1]
    assert plain.shape == got.values.shape == got.bits.shape == lead
    assert plain.dtype == got.values.dtype == value_dtype
    assert got.bits.dtype == got.block_bits.dtype == bits_dtype
    for field in ("block_bits", "accumulator", "lsb_exponent", "anchor"):
        assert getattr(got, field).shape == lead + (n_blocks,), field
    assert got.lsb_exponent.dtype == got.anchor.dtype == np.int64
    assert got.accumulator.dtype in (np.int64, object)
    for index, g in want.items():
        context = f"{a.fmt.name} x {b.fmt.name}, {acc}, index {index}"
        assert int(got.bits[index]) == g.code, context
        assert tuple(int(s) for s in got.steps[index]) == g.steps, context
        for j, block in enumerate(g.blocks):
            fields = (int(got.block_bits[index + (j,)]), int(got.accumulator[index + (j,)]),
                      int(got.lsb_exponent[index + (j,)]), int(got.anchor[index + (j,)]))
            assert fields == (block.code, block.accumulator, block.lsb_exponent, block.anchor), (context, j)
    expected_values = values_of_bits(got.bits, acc.output)
    for values in (plain, got.values):
        assert np.array_equal(values.view(bits_dtype if acc.output != "bf16" else np.uint32),
                              expected_values.view(bits_dtype if acc.output != "bf16" else np.uint32))
    assert got.steps.dtype == bits_dtype and got.steps.shape[:-1] == lead
    return got


def gaussian(shape, seed, spread=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if spread:
        x *= np.exp2(rng.integers(-spread, spread + 1, shape))
    return x.astype(np.float32)


def exact_float64_dot(x: np.ndarray, y: np.ndarray) -> float:
    """The float64 dot of two vectors of dequantized values, asserted exact (with Fractions)."""
    result = float(np.dot(x.astype(np.float64), y.astype(np.float64)))
    exact = sum((Fraction(float(p)) * Fraction(float(q)) for p, q in zip(x, y)), Fraction(0))
    assert Fraction(result) == exact, "the float64 dot is not exact for this data"
    return result


# --- shapes --------------------------------------------------------------------------------------
def test_1d_with_a_partial_block():
    """K = 100: three whole blocks and one of 4 values padded with 28 zero codes."""
    x, y = gaussian(100, 1, spread=3), gaussian(100, 2)
    a, b = mxsim.quantize(x, "mxfp8_e4m3"), mxsim.quantize(y, "mxfp8_e4m3")
    assert a.codes.shape == (128,) and not a.codes[100:].any()  # padding is +0 codes
    for acc in (Accumulator(), Accumulator(across_blocks="exact"), PRESETS["hopper_fp8_like"]):
        got = assert_matches_reference(a, b, acc)
        assert got.values.shape == () and got.block_bits.shape == (4,)
    # The padding contributes zero: the exact result is the float64 dot of the 100 real values.
    want = exact_float64_dot(a.dequantize(np.float64), b.dequantize(np.float64))
    assert mxsim.dot(a, b, "exact") == np.float32(want)
    # The last block holds 4 real products only: its exact block value (its fp32 code here).
    last = exact_float64_dot(a.dequantize(np.float64)[96:], b.dequantize(np.float64)[96:])
    assert mxsim.dot(a, b, details=True).block_bits[3] == np.float32(last).view(np.uint32)


def test_2d_along_the_last_axis_and_axis_0():
    x, y = gaussian((3, 64), 3), gaussian((3, 64), 4, spread=2)
    last = assert_matches_reference(mxsim.quantize(x, "mxfp8_e4m3"), mxsim.quantize(y, "mxfp8_e4m3"), Accumulator())
    assert last.values.shape == (3,)
    # The same data stored along axis 0: (64, 3) blocks along axis 0 give the same 3 results.
    a0, b0 = mxsim.quantize(x.T.copy(), "mxfp8_e4m3", axis=0), mxsim.quantize(y.T.copy(), "mxfp8_e4m3", axis=0)
    first = assert_matches_reference(a0, b0, Accumulator())
    assert np.array_equal(first.bits, last.bits)
    # Independent: each result is fp32 of the exact dot (exact preset) of the dequantized rows.
    va, vb = a0.dequantize(np.float64), b0.dequantize(np.float64)
    want = np.array([exact_float64_dot(va[:, i], vb[:, i]) for i in range(3)], dtype=np.float32)
    assert np.array_equal(mxsim.dot(a0, b0, "exact"), want)
    # Axis 0 of one operand against the last axis of the other.
    mixed = assert_matches_reference(a0, mxsim.quantize(y, "mxfp8_e4m3"), Accumulator(output="bf16"))
    assert mixed.values.shape == (3,)


def test_scalars():
    """A scalar is one block of one value: 1.5 * 2.0 = 3.0 (hand derivation)."""
    a, b = mxsim.quantize(np.float32(1.5), "mxfp8_e4m3"), mxsim.quantize(np.float32(2.0), "mxfp8_e4m3")
    got = assert_matches_reference(a, b, Accumulator())
    assert got.values.shape == () and got.values == np.float32(3.0)
    assert got.block_bits.shape == (1,) and int(got.bits) == 0x40400000
    # A scalar against a 1-D tensor of length 1 (both have block-axis length 1).
    c = mxsim.quantize(np.array([-0.5], np.float32), "mxfp8_e4m3")
    assert mxsim.dot(a, c) == np.float32(-0.75) and mxsim.dot(c, a).shape == ()


def test_broadcasting_m1k_by_nk():
    m, n, k = 3, 2, 64
    x, y = gaussian((m, 1, k), 5, spread=2), gaussian((n, k), 6)
    a, b = mxsim.quantize(x, "mxfp8_e4m3"), mxsim.quantize(y, "mxfp8_e4m3")
    for acc in (Accumulator(), Accumulator(across_blocks="exact", output="fp16")):
        got = assert_matches_reference(a, b, acc)
        assert got.values.shape == (m, n) and got.accumulator.shape == (m, n, 2)
    # Independent: the exact preset equals fp32 of the float64 matrix product of the dequantized
    # values (exact: every product and partial sum fits in 53 bits).
    va, vb = a.dequantize(np.float64).reshape(m, k), b.dequantize(np.float64)
    for i in range(m):
        for j in range(n):
            exact_float64_dot(va[i], vb[j])
    assert np.array_equal(mxsim.dot(a, b, "exact"), (va @ vb.T).astype(np.float32))
    # b (N, K) x a (M, 1, K) broadcasts the other way round to (M, N) as well.
    assert np.array_equal(mxsim.dot(b, a, "exact"), (va @ vb.T).astype(np.float32))


@pytest.mark.parametrize("fmt_a,fmt_b", [("mxfp8_e4m3", "mxfp8_e5m2"), ("mx9", "mx6"), ("nvfp4", "nvfp4"),
                                         ("nvfp4", "mx9"), ("mxint8", "mxfp4_e2m1"), ("msfp16", "msfp12")])
def test_mixed_formats(fmt_a, fmt_b):
    x, y = gaussian((2, 40), 7, spread=4), gaussian((2, 40), 8) * 1e-3
    a, b = mxsim.quantize(x, fmt_a), mxsim.quantize(y, fmt_b)
    for acc in (Accumulator(), Accumulator(mode="aligned", frac_bits=9, width=14, overflow="wrap"),
                Accumulator(mode="fp32_sequential", output="bf16", output_rounding="rtz")):
        assert_matches_reference(a, b, acc)


def test_nvfp4_tensor_scales_reach_the_result():
    """NVFP4 from_codes, hand derivation: 16 elements 1.0 (code 2) at block scale 1.0 (UE4M3 0x38)
    and tensor scales 0.5 and 3.0: 16 * 1.5 = 24."""
    codes = np.full((16,), 2, np.uint8)
    a = MXTensor.from_codes(np.array([0x38], np.uint8), codes, "nvfp4", tensor_scale=0.5)
    b = MXTensor.from_codes(np.array([0x38], np.uint8), codes, "nvfp4", tensor_scale=3.0)
    got = assert_matches_reference(a, b, Accumulator())
    assert got.values == np.float32(24.0)
    assert mxsim.dot(a, a) == np.float32(4.0)


def block_format_of(element: str):
    """A block format (E8M0 scales per 32) of an element format: the catalogue's, else a custom one."""
    found = [f for f in mxsim.formats.FORMATS.values() if f.kind == "block" and f.element.name == element
             and f.block_size == 32 and f.scale.name == "e8m0" and not f.subblocks]
    if found:
        return found[0]
    return mxsim.formats.BlockFormat(f"mx_{element}", mxsim.get_format(element), 32, mxsim.get_format("e8m0"))


def preset_formats(acc) -> tuple:
    """The block formats a preset's unit takes: the E4M3 x E5M2 pair for presets that take any, else
    its first element format and (when it mixes) its last."""
    if acc.elements is None:
        return mxsim.get_format("mxfp8_e4m3"), mxsim.get_format("mxfp8_e5m2")
    first = block_format_of(acc.elements[0])
    return first, (block_format_of(acc.elements[-1]) if acc.mixed_elements else first)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_by_name_and_as_objects(name):
    x, y = gaussian((2, 1, 64), 9, spread=3), gaussian((3, 64), 10, spread=3)
    acc = Accumulator.preset(name)
    fmt_a, fmt_b = preset_formats(acc)
    a, b = mxsim.quantize(x, fmt_a), mxsim.quantize(y, fmt_b)
    by_name = assert_matches_reference(a, b, acc, name)
    by_object = mxsim.dot(a, b, acc, details=True)
    for field in mxsim.DotResult._fields:
        assert np.array_equal(getattr(by_name, field), getattr(by_object, field)), field


def test_default_accumulator_is_the_contract_default():
    x, y = gaussian((2, 64), 11, spread=6), gaussian((2, 64), 12, spread=6)
    a, b = mxsim.quantize(x, "mxfp8_e4m3"), mxsim.quantize(y, "mxfp8_e4m3")
    got = assert_matches_reference(a, b, Accumulator(), None)
    assert np.array_equal(mxsim.dot(a, b).view(np.uint32), got.bits)
    assert np.array_equal(mxsim.dot(a, b, None, details=True).bits, got.bits)


@pytest.mark.parametrize("output", ["fp32", "bf16", "fp16"])
def test_details_shapes_and_dtypes(output):
    x, y = gaussian((2, 3, 70), 13, spread=2), gaussian((3, 70), 14)
    a, b = mxsim.quantize(x, "mxfp8_e4m3"), mxsim.quantize(y, "mxfp8_e4m3")
    acc = Accumulator(mode="aligned", frac_bits=13, width=24, output=output, output_rounding="rna")
    got = assert_matches_reference(a, b, acc)
    value_dtype, bits_dtype = OUTPUT_DTYPES[output]
    assert got.values.shape == (2, 3) and got.values.dtype == value_dtype
    assert got.bits.shape == (2, 3) and got.bits.dtype == bits_dtype
    for field in ("block_bits", "accumulator", "lsb_exponent", "anchor"):
        assert getattr(got, field).shape == (2, 3, 3), field
    assert got.block_bits.dtype == bits_dtype and got.accumulator.dtype == np.int64
    assert got.anchor.dtype == got.lsb_exponent.dtype == np.int64
    # aligned: lsb_exponent = anchor - frac_bits for every block
    assert np.array_equal(got.lsb_exponent, got.anchor - 13)


def test_details_with_a_register_wider_than_int64():
    """MXFP8 E5M2 exact mode: all-ones data puts every element at 2^15 (scale 2^-15), so each
    register is 32 * (2^15 * 2^16)^2 = 2^67 (hand derivation), held as Python ints."""
    a = mxsim.quantize(np.ones((2, 64), np.float32), "mxfp8_e5m2")
    got = assert_matches_reference(a, a, Accumulator())
    assert got.accumulator.dtype == object
    assert all(int(v) == 2**67 for v in got.accumulator.ravel())
    assert np.array_equal(got.values, np.full(2, 64.0, np.float32))


def test_from_codes_hand_derived_and_anchor():
    """E4M3 codes 0x38 (1.0) and 0x40 (2.0) at scales 2^0 and 2^-3: the per-block registers,
    anchors and values by hand. Block 0: 32 * 1.0 * 2.0 = 64; block 1: 32 * 1.0 * 1.0 * 2^-3."""
    codes_a = np.full((64,), 0x38, np.uint8)
    codes_b = np.concatenate([np.full(32, 0x40), np.full(32, 0x38)]).astype(np.uint8)
    a = MXTensor.from_codes(np.array([127, 124], np.uint8), codes_a, "mxfp8_e4m3")
    b = MXTensor.from_codes(np.array([127, 127], np.uint8), codes_b, "mxfp8_e4m3")
    got = assert_matches_reference(a, b, Accumulator(mode="aligned", frac_bits=5, width=16))
    # aligned, F = 5: block 0 anchor 1 (E 0 + E 1), each product 2.0 is 2^5 LSBs of 2^-4;
    # block 1 anchor 0, each product 1.0 is 2^5 LSBs of 2^-5.
    assert got.anchor.tolist() == [1, 0] and got.lsb_exponent.tolist() == [-4, -5]
    assert got.accumulator.tolist() == [32 * 32, 32 * 32]
    assert got.values == np.float32(64 + 4)
    exact = mxsim.dot(a, b, Accumulator(), details=True)
    assert exact.anchor.tolist() == [1, 0]  # the anchor is reported in exact mode too
    assert exact.lsb_exponent.tolist() == [-18, -18] and exact.accumulator.tolist() == [32 * 2**19, 32 * 2**18]


def test_empty_block_axis_gives_positive_zero():
    """K = 0: no blocks; the empty sum is +0 in every configuration (hand derivation)."""
    a = mxsim.quantize(np.ones((3, 0), np.float32), "mxfp8_e4m3")
    for acc in (Accumulator(), Accumulator(across_blocks="exact", output="fp16"), PRESETS["hopper_fp8_like"]):
        got = assert_matches_reference(a, a, acc)
        assert got.values.shape == (3,) and not got.bits.any() and got.block_bits.shape == (3, 0)


def test_empty_leading_axis():
    a, b = mxsim.quantize(np.ones((0, 64), np.float32), "mxfp8_e4m3"), mxsim.quantize(np.ones(64, np.float32), "mxfp8_e4m3")
    assert mxsim.dot(a, b).shape == (0,)
    assert mxsim.dot(a, b, details=True).bits.shape == (0,)


def test_empty_leading_axis_keeps_the_block_axis_in_details():
    a, b = mxsim.quantize(np.ones((0, 64), np.float32), "mxfp8_e4m3"), mxsim.quantize(np.ones(64, np.float32), "mxfp8_e4m3")
    got = mxsim.dot(a, b, details=True)
    assert got.block_bits.shape == got.accumulator.shape == got.anchor.shape == (0, 2)


def test_from_codes_padding_beyond_shape_is_ignored():
    """A from_codes tensor of shape (5,) whose padded block holds nonzero codes past index 5:
    dequantize shows 5 values of 1.0; the dot over the block axis should be 5.0, not 32.0."""
    t = MXTensor.from_codes(np.array([127], np.uint8), np.full((32,), 0x38, np.uint8), "mxfp8_e4m3", shape=(5,))
    assert np.array_equal(t.dequantize(), np.ones(5, np.float32))
    assert mxsim.dot(t, t) == np.float32(5.0)


# --- errors ------------------------------------------------------------------------------------
def q(shape, fmt="mxfp8_e4m3", axis=-1):
    return mxsim.quantize(np.ones(shape, np.float32), fmt, axis=axis)


@pytest.mark.parametrize("a,b,match", [
    (lambda: q(64), lambda: q(96), r"block axes have lengths 64 .* and 96"),
    (lambda: q((2, 64)), lambda: q((64, 2), axis=0), None),  # fine: the block axes both have 64
    (lambda: q(64), lambda: q(64, "nvfp4"), r"block_size 32.*block_size 16.*do not share a block size"),
    (lambda: q((3, 64)), lambda: q((4, 64)), r"non-block axes .*\(3,\).*\(4,\).*do not broadcast"),
    (lambda: q(64), lambda: np.ones(64, np.float32), r"b must be an MXTensor.*not ndarray"),
    (lambda: [1.0] * 64, lambda: q(64), r"a must be an MXTensor.*not list"),
])
def test_operand_errors(a, b, match):
    a, b = a(), b()
    if match is None:
        assert mxsim.dot(a, b).shape == (2,)
        return
    with pytest.raises(ValueError, match=match):
        mxsim.dot(a, b)


@pytest.mark.parametrize("accumulator,match", [
    ("turbo", r"preset='turbo' is not allowed; expected one of: .*hopper_fp8_like"),
    (42, r"accumulator must be an Accumulator, a preset name or None, not int"),
    ({"mode": "exact"}, r"accumulator must be an Accumulator.*not dict"),
])
def test_accumulator_argument_errors(accumulator, match):
    a = q(64)
    with pytest.raises(ValueError, match=match):
        mxsim.dot(a, a, accumulator)


@pytest.mark.parametrize("kwargs,match", [
    ({"mode": "aligned"}, r"frac_bits=None is not allowed; mode='aligned' needs an integer"),
    ({"mode": "aligned", "frac_bits": -1}, r"frac_bits=-1 is not allowed"),
    ({"mode": "aligned", "frac_bits": 4097}, r"frac_bits=4097 is not allowed"),
    ({"mode": "aligned", "frac_bits": True}, r"frac_bits=True is not allowed"),
    ({"mode": "aligned", "frac_bits": 8, "width": 1}, r"width=1 is not allowed"),
    ({"mode": "aligned", "frac_bits": 8, "width": 8.0}, r"width=8.0 is not allowed"),
    ({"width": 16}, r"width=16 is only used with mode='aligned'"),
    ({"mode": "fp32_sequential", "frac_bits": 3}, r"frac_bits=3 is only used with mode='aligned'"),
    ({"mode": "fast"}, r"mode='fast' is not allowed; expected one of: exact, aligned, fp32_sequential"),
    ({"output": "fp64"}, r"output='fp64' is not allowed"),
    ({"output_rounding": "stochastic"}, r"output_rounding='stochastic' is not allowed"),
    ({"shift_rounding": "rtz"}, r"shift_rounding='rtz' is not allowed"),
    ({"overflow": "clamp"}, r"overflow='clamp' is not allowed"),
    ({"across_blocks": "fp64"}, r"across_blocks='fp64' is not allowed"),
    ({"ftz": 1}, r"ftz=1 is not allowed; expected True or False"),
])
def test_bad_accumulator_fields(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Accumulator(**kwargs)
    with pytest.raises(ValueError, match=match):
        Accumulator.from_kwargs(**kwargs)


def test_unknown_accumulator_option_and_preset_override():
    with pytest.raises(ValueError, match=r"unknown accumulator option\(s\) frac; known options: mode, frac_bits"):
        Accumulator.from_kwargs(frac=3)
    with pytest.raises(ValueError, match=r"preset='fast' is not allowed"):
        Accumulator.preset("fast")
    # Overrides are validated like any field.
    with pytest.raises(ValueError, match=r"width=1 is not allowed"):
        Accumulator.preset("hopper_fp8_like", width=1)


# --- the command line ---------------------------------------------------------------------------
@pytest.fixture
def tensor_files(tmp_path):
    """x (3, 1, 70) and y (2, 70) quantized by `mxsim quantize` (E4M3 and E5M2, 3 blocks each)."""
    np.save(tmp_path / "x.npy", gaussian((3, 1, 70), 20, spread=3))
    np.save(tmp_path / "y.npy", gaussian((2, 70), 21))
    np.save(tmp_path / "ones.npy", np.ones((2, 64), np.float32))
    for src, dst, fmt in (("x.npy", "x.mx", "mxfp8_e4m3"), ("y.npy", "y.mx", "mxfp8_e4m3"),
                          ("y.npy", "y5.mx", "mxfp8_e5m2"), ("ones.npy", "ones5.mx", "mxfp8_e5m2"),
                          ("y.npy", "ynv.mx", "nvfp4")):
        assert main(["quantize", str(tmp_path / src), str(tmp_path / dst), "--format", fmt]) == 0
    return tmp_path


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_cli_matches_reference(out_npy, details_npz, a_path, b_path, acc):
    a, b = mxsim.load(a_path), mxsim.load(b_path)
    lead, want = reference(a, b, acc)
    values = np.load(out_npy)
    value_dtype, bits_dtype = OUTPUT_DTYPES[acc.output]
    assert values.shape == lead and values.dtype == value_dtype
    bits = values.view(np.uint32) >> 16 if acc.output == "bf16" else values.view(bits_dtype)
    for index, g in want.items():
        assert int(bits[index]) == g.code, index
    if details_npz is not None:
        with np.load(details_npz) as d:
            assert sorted(d.files) == ["accumulator", "anchor", "bits", "block_bits", "lsb_exponent", "steps"]
            for index, g in want.items():
                assert int(d["bits"][index]) == g.code
                for j, block in enumerate(g.blocks):
                    pos = index + (j,)
                    assert (int(d["block_bits"][pos]), int(d["accumulator"][pos]), int(d["lsb_exponent"][pos]),
                            int(d["anchor"][pos])) == (block.code, block.accumulator, block.lsb_exponent, block.anchor)


def test_cli_dot_defaults(tensor_files, capsys):
    t = tensor_files
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "y.mx", t / "out.npy")
    assert code == 0 and err == ""
    assert "out.npy" in out and "(3, 2)" in out
    assert_cli_matches_reference(t / "out.npy", None, t / "x.mx", t / "y.mx", Accumulator())


@pytest.mark.parametrize("flags,acc", [
    (["--preset", "hopper_fp8_like", "--width", "16", "--overflow", "wrap", "--output", "bf16",
      "--output-rounding", "rtz", "--ftz"],
     Accumulator(mode="aligned", frac_bits=13, width=16, overflow="wrap", output="bf16", output_rounding="rtz", ftz=True)),
    (["--preset", "exact", "--output", "fp16"], Accumulator(across_blocks="exact", output="fp16")),
    (["--preset", "fp32_fma", "--across-blocks", "exact", "--no-ftz"],
     Accumulator(mode="fp32_sequential", across_blocks="exact")),
    (["--mode", "aligned", "--frac-bits", "6", "--width", "12", "--shift-rounding", "rne"],
     Accumulator(mode="aligned", frac_bits=6, width=12, shift_rounding="rne")),
    (["--preset", "blackwell_fp8_like"], PRESETS["blackwell_fp8_like"]),
])
def test_cli_dot_presets_and_flags(tensor_files, capsys, flags, acc):
    t = tensor_files
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "y5.mx", t / "out.npy", *flags, "--details", t / "d.npz")
    assert code == 0, err
    shown = f"preset {flags[1]}" if flags[0] == "--preset" else f"mode {acc.mode}"  # the preset asked for, by name
    assert f"mxfp8_e4m3 x mxfp8_e5m2, {shown}" in out
    assert_cli_matches_reference(t / "out.npy", t / "d.npz", t / "x.mx", t / "y5.mx", acc)


def test_cli_details_equal_the_api(tensor_files, capsys):
    t = tensor_files
    for b_name in ("y.mx", "ynv.mx"):
        a_name = "x.mx" if b_name == "y.mx" else "ynv.mx"
        code, _, err = run_cli(capsys, "dot", t / a_name, t / b_name, t / "out.npy", "--preset", "hopper_fp8_like",
                               "--details", t / "d.npz")
        assert code == 0, err
        want = mxsim.dot(mxsim.load(t / a_name), mxsim.load(t / b_name), "hopper_fp8_like", details=True)
        with np.load(t / "d.npz") as d:
            for field in ("bits", "block_bits", "accumulator", "lsb_exponent", "anchor"):
                assert d[field].dtype == getattr(want, field).dtype, field
                assert np.array_equal(d[field], getattr(want, field)), field
        assert np.array_equal(np.load(t / "out.npy"), want.values)
        assert_cli_matches_reference(t / "out.npy", t / "d.npz", t / a_name, t / b_name, PRESETS["hopper_fp8_like"])


def test_cli_details_wide_register_as_decimal_strings(tensor_files, capsys):
    """E5M2 exact: the register exceeds int64 (all ones: 2^67 per block, by hand), so the .npz
    holds it as exact decimal strings."""
    t = tensor_files
    code, _, err = run_cli(capsys, "dot", t / "ones5.mx", t / "ones5.mx", t / "out.npy", "--details", t / "d.npz")
    assert code == 0, err
    with np.load(t / "d.npz") as d:
        register = d["accumulator"]
        assert register.dtype.kind == "U" and register.shape == (2, 2)
        assert register.tolist() == [[str(2**67)] * 2] * 2
    want = mxsim.dot(mxsim.load(t / "ones5.mx"), mxsim.load(t / "ones5.mx"), details=True)
    assert [int(s) for s in register.ravel()] == [int(v) for v in want.accumulator.ravel()]
    assert np.array_equal(np.load(t / "out.npy"), np.full(2, 64.0, np.float32))
    # Mixed data: strings still equal the reference's Python ints.
    code, _, err = run_cli(capsys, "dot", t / "y5.mx", t / "y5.mx", t / "out.npy", "--details", t / "d.npz")
    assert code == 0, err
    a = mxsim.load(t / "y5.mx")
    _, ref_results = reference(a, a, Accumulator())
    with np.load(t / "d.npz") as d:
        assert d["accumulator"].dtype.kind == "U"
        for index, g in ref_results.items():
            assert [int(s) for s in d["accumulator"][index]] == [blk.accumulator for blk in g.blocks]


@pytest.mark.parametrize("layout", [{"element_stream": "msb", "scale_placement": "interleaved"},
                                    {"element_stream": "bytes", "scale_placement": "separate"}])
def test_cli_dot_of_files_written_by_mxtensor_save(tmp_path, capsys, layout):
    a = mxsim.quantize(gaussian((2, 48), 30), "mx9")
    b = mxsim.quantize(gaussian((48,), 31), "mx6")
    mxsim.save(a, tmp_path / "a.mx", **layout)
    mxsim.save(b, tmp_path / "b.mx", **layout)
    acc = Accumulator(mode="aligned", frac_bits=7, width=12, output="fp16")
    code, _, err = run_cli(capsys, "dot", tmp_path / "a.mx", tmp_path / "b.mx", tmp_path / "out.npy", "--mode", "aligned",
                           "--frac-bits", "7", "--width", "12", "--output", "fp16", "--details", tmp_path / "d.npz")
    assert code == 0, err
    assert_cli_matches_reference(tmp_path / "out.npy", tmp_path / "d.npz", tmp_path / "a.mx", tmp_path / "b.mx", acc)
    assert np.array_equal(np.load(tmp_path / "out.npy"), mxsim.dot(a, b, acc))


def test_cli_as_a_process(tensor_files):
    """`python -m mxsim.cli dot`: exit codes and the one-line error of a real process."""
    t = tensor_files
    ok = subprocess.run([sys.executable, "-m", "mxsim.cli", "dot", str(t / "x.mx"), str(t / "y.mx"), str(t / "p.npy"),
                         "--preset", "exact"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert_cli_matches_reference(t / "p.npy", None, t / "x.mx", t / "y.mx", PRESETS["exact"])
    bad = subprocess.run([sys.executable, "-m", "mxsim.cli", "dot", str(t / "x.mx"), str(t / "y.mx"), str(t / "q.npy"),
                          "--mode", "aligned"], capture_output=True, text=True, check=False)
    assert_one_line_error(bad.returncode, bad.stdout, bad.stderr, "--frac-bits")
    assert not (t / "q.npy").exists()


def assert_one_line_error(code, out, err, *needles):
    assert code == 2
    assert out == ""
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("mxsim: error:") or lines[0].startswith("mxsim dot: error:"), err
    for needle in needles:
        assert needle in lines[0], (needle, err)


@pytest.mark.parametrize("flags,needles", [
    (["--mode", "aligned"], ["--frac-bits not given"]),  # the CLI's errors name its flags (issue 23, item 17)
    (["--frac-bits", "8"], ["--frac-bits 8", "only used with --mode aligned"]),
    (["--preset", "hopper_fp8_like", "--width", "1"], ["--width 1"]),
    (["--mode", "aligned", "--frac-bits", "5000"], ["--frac-bits 5000"]),
])
def test_cli_accumulator_errors_leave_no_output(tensor_files, capsys, flags, needles):
    t = tensor_files
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "y.mx", t / "out.npy", *flags, "--details", t / "d.npz")
    assert_one_line_error(code, out, err, *needles)
    assert not (t / "out.npy").exists() and not (t / "d.npz").exists()


def test_cli_operand_errors_leave_no_output(tensor_files, capsys):
    t = tensor_files
    # different block sizes (32 vs NVFP4's 16)
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "ynv.mx", t / "out.npy")
    assert_one_line_error(code, out, err, "block_size", "mxfp8_e4m3", "nvfp4")
    # different block-axis lengths (70 vs 64)
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "ones5.mx", t / "out.npy")
    assert_one_line_error(code, out, err, "70", "64")
    # a missing input file
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "missing.mx", t / "out.npy")
    assert_one_line_error(code, out, err, "missing.mx")
    assert not (t / "out.npy").exists()


def test_cli_bad_choice_is_an_argparse_error(tensor_files, capsys):
    t = tensor_files
    with pytest.raises(SystemExit) as exit_info:
        main(["dot", str(t / "x.mx"), str(t / "y.mx"), str(t / "out.npy"), "--preset", "turbo"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().split("\n")) == 1 and "--preset" in err and "turbo" in err
    assert not (t / "out.npy").exists()


def test_cli_failed_details_write_leaves_no_output(tensor_files, capsys):
    t = tensor_files
    code, out, err = run_cli(capsys, "dot", t / "x.mx", t / "y.mx", t / "out.npy", "--details", t / "nodir" / "d.npz")
    assert_one_line_error(code, out, err, "nodir")
    assert not (t / "out.npy").exists()


# --- outer products: (M, K) x (N, K) -> (M, N) -----------------------------------------------------
def outer_reference(a: MXTensor, b: MXTensor, acc: Accumulator) -> dict:
    """{(i..., j...): output code} for every row i of a and every row j of b, from the reference."""
    rows_a, rows_b = a.codes.shape[:-1], b.codes.shape[:-1]
    return {
        i + j: ref_dot.dot_general(tensor_blocks(a, i), tensor_blocks(b, j), a.fmt, b.fmt, acc,
                                   tensor_scale_a=a.tensor_scale, tensor_scale_b=b.tensor_scale).code
        for i in np.ndindex(*rows_a) for j in np.ndindex(*rows_b)
    }


@pytest.mark.parametrize("shape_a, axis_a, shape_b, fmt_a, fmt_b, lead", [
    ((3, 70), -1, (2, 70), "mxfp8_e4m3", "mxfp8_e5m2", (3, 2)),
    ((70, 3), 0, (2, 70), "mx9", "mx6", (3, 2)),           # a blocked along axis 0: its rows are columns
    ((2, 3, 40), -1, (4, 40), "nvfp4", "nvfp4", (2, 3, 4)),
    ((3, 40), -1, (3, 40), "mxint8", "mxfp4_e2m1", (3, 3)),  # M == N: outer, not row by row
    ((40,), -1, (2, 40), "msfp16", "msfp12", (2,)),
])
def test_outer_pairs_every_row_of_a_with_every_row_of_b(shape_a, axis_a, shape_b, fmt_a, fmt_b, lead):
    a = mxsim.quantize(gaussian(shape_a, 40, spread=3), fmt_a, axis=axis_a)
    b = mxsim.quantize(gaussian(shape_b, 41), fmt_b)
    acc = Accumulator(mode="aligned", frac_bits=9, width=20, output="bf16")
    got = mxsim.dot(a, b, acc, outer=True, details=True)
    assert got.values.shape == got.bits.shape == lead and got.accumulator.shape == lead + (a.scales.shape[-1],)
    want = outer_reference(a, b, acc)
    assert sorted(want) == sorted(np.ndindex(*lead))
    for index, code in want.items():
        assert int(got.bits[index]) == code, index
    assert np.array_equal(mxsim.dot(a, b, acc, outer=True), got.values)


def test_outer_of_matrices_is_the_matrix_product():
    """Independent of the datapath: with the exact preset, fp32 of the float64 product A @ B^T."""
    x, y = gaussian((5, 64), 42, spread=2), gaussian((3, 64), 43)
    a, b = mxsim.quantize(x, "mxfp8_e4m3"), mxsim.quantize(y, "mxfp8_e4m3")
    va, vb = a.dequantize(np.float64), b.dequantize(np.float64)
    for i in range(5):
        for j in range(3):
            exact_float64_dot(va[i], vb[j])
    assert np.array_equal(mxsim.dot(a, b, "exact", outer=True), (va @ vb.T).astype(np.float32))
    with pytest.raises(ValueError, match=r"do not broadcast; to pair every row of a with every row of b, use "
                                         r"outer=True \(mxsim dot --outer\)"):
        mxsim.dot(a, b)
    with pytest.raises(ValueError, match="outer=1 is not allowed; expected True or False"):
        mxsim.dot(a, b, outer=1)


def test_cli_dot_outer(tmp_path, capsys):
    np.save(tmp_path / "x.npy", gaussian((4, 70), 44, spread=2))
    np.save(tmp_path / "y.npy", gaussian((3, 70), 45))
    for src, fmt in (("x", "mxfp8_e4m3"), ("y", "mxfp8_e5m2")):
        assert main(["quantize", str(tmp_path / f"{src}.npy"), str(tmp_path / f"{src}.mx"), "--format", fmt]) == 0
    capsys.readouterr()
    code, out, err = run_cli(capsys, "dot", tmp_path / "x.mx", tmp_path / "y.mx", tmp_path / "out.npy")
    assert_one_line_error(code, out, err, "do not broadcast", "--outer")
    code, out, err = run_cli(capsys, "dot", tmp_path / "x.mx", tmp_path / "y.mx", tmp_path / "out.npy", "--outer",
                             "--preset", "hopper_fp8_like")
    assert code == 0 and err == "" and "(4, 3)" in out
    bits = np.load(tmp_path / "out.npy").view(np.uint32)
    want = outer_reference(mxsim.load(tmp_path / "x.mx"), mxsim.load(tmp_path / "y.mx"), PRESETS["hopper_fp8_like"])
    assert {index: int(bits[index]) for index in np.ndindex(4, 3)} == want


def test_cli_dot_help_explains_broadcasting(capsys):
    with pytest.raises(SystemExit):
        main(["dot", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("A (M, K) and B (M, K) -> (M,)", "A (M, 1, K) and B (N, K) -> (M, N)",
                   "with --outer: (M, N) = A @ B^T", "(M,K) x (N,K) -> (M,N)", "broadcast NumPy-style"):
        assert needle in text, needle
