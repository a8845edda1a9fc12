"""Bit packing (mxsim.ref.pack with bitstring, mxsim.fast.pack with NumPy).

Expected bytes come from the layout definitions (docs/numerics.md sections 2.1 and 3), worked by
hand, and from an integer oracle that restates the definition: an ``lsb`` record is the
little-endian integer sum(field << position); an ``msb`` record is the big-endian integer whose
first field holds the top bits; ``bytes`` is ``lsb`` with every code in whole bytes.
"""

from fractions import Fraction
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxsim
from mxsim import BlockFormat, get_format
from mxsim.fast import pack as fast
from mxsim.ref import pack as ref
from mxsim import tensor_pack

ref_tensor = SimpleNamespace(  # tensor-level packing through the reference packer
    pack=partial(tensor_pack.pack, implementation="reference"),
    unpack=partial(tensor_pack.unpack, implementation="reference"),
)

IMPLS = [pytest.param(ref, id="ref"), pytest.param(fast, id="fast")]
LAYOUTS = [(es, sp) for es in ("lsb", "msb", "bytes") for sp in ("separate", "interleaved")]
BLOCK_FORMATS = mxsim.format_names("block")
SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# a custom format whose blocks are not whole bytes: 3 six-bit elements = 18 bits per block
ODD = BlockFormat("odd_fp6x3", get_format("fp6_e2m3"), block_size=3, scale=get_format("e8m0"))


def zeros(n):
    return [0] * n


# --- the integer oracle -------------------------------------------------------------------------
def _record(fields, element_stream):
    total = sum(width for _, width in fields)
    nbytes = -(-total // 8)
    acc, pos = 0, 0
    for value, width in fields:
        assert 0 <= value < 1 << width
        if element_stream == "msb":
            acc |= value << (nbytes * 8 - pos - width)
        else:
            acc |= value << pos
        pos += width
    return acc.to_bytes(nbytes, "big" if element_stream == "msb" else "little")


def oracle(fmt, scales, subscales, codes, element_stream, scale_placement):
    def container(width):
        return -(-width // 8) * 8 if element_stream == "bytes" else width

    n = len(scales)
    heads = [
        [(int(scales[b]), fmt.scale_storage_bits)]
        + [(int(s), container(fmt.subscale_bits)) for s in (subscales[b] if fmt.subblocks else [])]
        for b in range(n)
    ]
    bodies = [[(int(c), container(fmt.element.width)) for c in codes[b]] for b in range(n)]
    if scale_placement == "interleaved":
        return b"".join(_record(h + e, element_stream) for h, e in zip(heads, bodies))
    return b"".join(_record(h, element_stream) for h in heads) + _record(sum(bodies, []), element_stream)


# --- hand-worked bytes ------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_fp4_lsb_puts_element_0_in_the_low_nibble(impl):
    # torchao / PyTorch float4_e2m1fn_x2: values [0.5, 6, -1, 3] = codes [1, 7, A, 5] -> 71 5A
    data = impl.pack_blocks("mxfp4_e2m1", [0x7F], None, [0x1, 0x7, 0xA, 0x5] + zeros(28), "lsb", "separate")
    assert data == bytes([0x7F, 0x71, 0x5A]) + bytes(14)
    assert impl.pack_blocks("mxfp4_e2m1", [0x7F], None, [0x1, 0x7, 0xA, 0x5] + zeros(28), "lsb", "interleaved") == data


@pytest.mark.parametrize("impl", IMPLS)
def test_fp4_msb_and_bytes(impl):
    codes = [0x1, 0x7, 0xA, 0x5] + zeros(28)
    assert impl.pack_blocks("mxfp4", [0x80], None, codes, "msb") == bytes([0x80, 0x17, 0xA5]) + bytes(14)
    assert impl.pack_blocks("mxfp4", [0x80], None, codes, "bytes") == bytes([0x80, 1, 7, 0xA, 5]) + bytes(28)


@pytest.mark.parametrize("impl", IMPLS)
def test_fp6_lsb_is_the_onnx_stream_and_msb_is_big_endian(impl):
    a, b, c, d = 0b101011, 0b110110, 0b011101, 0b100111
    codes = [a, b, c, d] + zeros(28)
    data = impl.pack_blocks("mxfp6_e2m3", [0x7F], None, codes, "lsb")
    # ONNX: byte0 = b[1:0] a[5:0], byte1 = c[3:0] b[5:2], byte2 = d[5:0] c[5:4]
    assert data[1:4] == bytes([(b & 3) << 6 | a, (c & 0xF) << 4 | b >> 2, d << 2 | c >> 4])
    assert data == bytes([0x7F, 0xAB, 0xDD, 0x9D]) + bytes(21)
    # msb: 101011 110110 011101 100111 -> 10101111 01100111 01100111
    assert impl.pack_blocks("mxfp6_e2m3", [0x7F], None, codes, "msb") == bytes([0x7F, 0xAF, 0x67, 0x67]) + bytes(21)
    assert impl.pack_blocks("mxfp6_e2m3", [0x7F], None, codes, "bytes") == bytes([0x7F, a, b, c, d]) + bytes(28)


@pytest.mark.parametrize("impl", IMPLS)
def test_interleaved_mxfp4_is_scale_byte_then_16_bytes_per_block(impl):
    codes = list(range(16)) * 4  # two blocks of 32
    data = impl.pack_blocks("mxfp4", [0x10, 0x20], None, codes, "lsb", "interleaved")
    row = bytes([0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE])
    assert data == bytes([0x10]) + row * 2 + bytes([0x20]) + row * 2
    separate = impl.pack_blocks("mxfp4", [0x10, 0x20], None, codes, "lsb", "separate")
    assert separate == bytes([0x10, 0x20]) + row * 4


@pytest.mark.parametrize("impl", IMPLS)
def test_mx9_microexponents_follow_the_scale_byte(impl):
    # conventions 2.1: shared exponent byte, 8 microexponent bits (pair 0 first), 16 x 8-bit elements
    micro = [1, 0, 0, 0, 0, 0, 1, 1]
    codes = list(range(0x80, 0x90))
    lsb = impl.pack_blocks("mx9", [0x85], micro, codes, "lsb", "interleaved")
    assert lsb == bytes([0x85, 0b11000001]) + bytes(codes)
    msb = impl.pack_blocks("mx9", [0x85], micro, codes, "msb", "interleaved")
    assert msb == bytes([0x85, 0b10000011]) + bytes(codes)
    assert impl.pack_blocks("mx9", [0x85], micro, codes, "bytes", "interleaved") == bytes([0x85] + micro + codes)
    # separate: scale record = scale byte + microexponent byte per block, then all elements
    two = impl.pack_blocks("mx9", [0x85, 0x86], micro + micro[::-1], codes * 2, "lsb", "separate")
    assert two == bytes([0x85, 0b11000001, 0x86, 0b10000011]) + bytes(codes * 2)


@pytest.mark.parametrize("impl", IMPLS)
def test_mx6_and_mx4_pack_elements_across_byte_boundaries(impl):
    # mx6: 5-bit elements; e0 = 11111 (bits 0-4), e1 = 00001 (bit 5), e2 = 10000 (bit 14)
    data = impl.pack_blocks("mx6", [1], zeros(8), [0x1F, 0x01, 0x10] + zeros(13), "lsb", "interleaved")
    assert data == bytes([1, 0, 0x3F, 0x40]) + bytes(8)  # 8 + 8 + 80 bits = 12 bytes
    data = impl.pack_blocks("mx6", [1], zeros(8), [0x1F, 0x01, 0x10] + zeros(13), "msb", "interleaved")
    assert data == bytes([1, 0, 0b11111000, 0b01100000]) + bytes(8)
    # mx4: 3-bit elements, 8 + 8 + 48 bits = 8 bytes; e0 = 101, e1 = 011, e2 = 111 -> 11 011 101, 0.....1
    data = impl.pack_blocks("mx4", [2], [1] + zeros(7), [0b101, 0b011, 0b111] + zeros(13), "lsb", "interleaved")
    assert data == bytes([2, 1, 0b11011101, 0b00000001, 0, 0, 0, 0])


@pytest.mark.parametrize("impl", IMPLS)
def test_nvfp4_scale_is_a_ue4m3_byte(impl):
    data = impl.pack_blocks("nvfp4", [0x7E], None, [0x7, 0xF] + zeros(14), "lsb", "separate")
    assert data == bytes([0x7E, 0xF7]) + bytes(7)
    with pytest.raises(ValueError, match=r"scales hold values outside \[0, 127\] \(7-bit ue4m3 scale codes"):
        impl.pack_blocks("nvfp4", [0x80], None, zeros(16))
    with pytest.raises(ValueError, match=r"scales in the payload hold values outside \[0, 127\]"):
        impl.unpack_blocks("nvfp4", bytes([0x80]) + bytes(8), 1)


@pytest.mark.parametrize("impl", IMPLS)
def test_separate_element_stream_runs_across_blocks(impl):
    # 2 blocks of 3 six-bit codes: 36 element bits in one stream (5 bytes), not 2 x 3 bytes
    codes = [1, 2, 3, 4, 5, 6]
    data = impl.pack_blocks(ODD, [7, 8], None, codes, "lsb", "separate")
    stream = sum(c << (6 * i) for i, c in enumerate(codes)).to_bytes(5, "little")
    assert data == bytes([7, 8]) + stream
    assert impl.packed_nbytes(ODD, 2, "lsb", "separate") == 7
    inter = impl.pack_blocks(ODD, [7, 8], None, codes, "lsb", "interleaved")  # 26 bits -> 4 bytes per block
    block0, block1 = (1 | 2 << 6 | 3 << 12).to_bytes(3, "little"), (4 | 5 << 6 | 6 << 12).to_bytes(3, "little")
    assert inter == bytes([7]) + block0 + bytes([8]) + block1
    scales, subscales, back = impl.unpack_blocks(ODD, data, 2, "lsb", "separate")
    assert scales.tolist() == [7, 8] and subscales is None and back.tolist() == [[1, 2, 3], [4, 5, 6]]


# --- errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_layout_names_are_checked(impl):
    args = ("mxfp4", [0], None, zeros(32))
    with pytest.raises(ValueError, match="element_stream='little' is not allowed; expected one of: lsb, msb, bytes"):
        impl.pack_blocks(*args, element_stream="little")
    with pytest.raises(ValueError, match="scale_placement='mixed' is not allowed; expected one of: separate, interl"):
        impl.pack_blocks(*args, scale_placement="mixed")
    with pytest.raises(ValueError, match="element_stream='LSB' is not allowed"):
        impl.unpack_blocks("mxfp4", bytes(17), 1, "LSB")
    with pytest.raises(ValueError, match="scale_placement=None is not allowed"):
        impl.packed_nbytes("mxfp4", 1, "lsb", None)


@pytest.mark.parametrize("impl", IMPLS)
def test_bad_block_arrays_are_named(impl):
    message = r"codes hold values outside \[0, 15\] \(4-bit fp4_e2m1 element codes of mxfp4_e2m1\); first offender: 16"
    with pytest.raises(ValueError, match=message):
        impl.pack_blocks("mxfp4", [0], None, [16] + zeros(31))
    with pytest.raises(ValueError, match=r"codes hold values outside \[0, 15\]"):
        impl.pack_blocks("mxfp4", [0], None, [-1] + zeros(31))
    with pytest.raises(ValueError, match=r"scales hold values outside \[0, 255\]"):
        impl.pack_blocks("mxfp4", [256], None, zeros(32))
    with pytest.raises(ValueError, match="codes hold 31 codes; expected n_blocks \\* block_size = 1 \\* 32 = 32"):
        impl.pack_blocks("mxfp4", [0], None, zeros(31))
    with pytest.raises(ValueError, match="codes must be an integer array, got dtype float64"):
        impl.pack_blocks("mxfp4", [0], None, np.zeros(32))
    with pytest.raises(ValueError, match="format 'mx9' needs subscales"):
        impl.pack_blocks("mx9", [0], None, zeros(16))
    with pytest.raises(ValueError, match=r"subscales hold values outside \[0, 1\]"):
        impl.pack_blocks("mx9", [0], [2] + zeros(7), zeros(16))
    with pytest.raises(ValueError, match="subscales hold 7 codes; expected n_blocks \\* subblocks = 1 \\* 8 = 8"):
        impl.pack_blocks("mx9", [0], zeros(7), zeros(16))
    with pytest.raises(ValueError, match="format 'mxfp4_e2m1' has no sub-scales"):
        impl.pack_blocks("mxfp4", [0], zeros(8), zeros(32))
    with pytest.raises(ValueError, match="is a float format"):
        impl.pack_blocks("fp4_e2m1", [0], None, zeros(32))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_wrong_payload_length_is_an_error(impl, layout):
    size = impl.packed_nbytes("mx6", 3, *layout)
    good = impl.pack_blocks("mx6", [1, 2, 3], zeros(24), zeros(48), *layout)
    assert len(good) == size
    for bad in (good[:-1], good + b"\0", b""):
        with pytest.raises(ValueError, match=f"payload is {len(bad)} bytes; expected {size} bytes for 3 blocks of mx6"):
            impl.unpack_blocks("mx6", bad, 3, *layout)


@pytest.mark.parametrize("impl", IMPLS)
def test_unpack_rejects_nonzero_padding_and_stray_container_bits(impl):
    good = impl.pack_blocks(ODD, [7, 8], None, [1, 2, 3, 4, 5, 6], "lsb", "separate")
    with pytest.raises(ValueError, match="nonzero padding bits in the end of the element section"):
        impl.unpack_blocks(ODD, good[:-1] + bytes([good[-1] | 0x80]), 2, "lsb", "separate")
    good = impl.pack_blocks(ODD, [7, 8], None, [1, 2, 3, 4, 5, 6], "msb", "interleaved")
    with pytest.raises(ValueError, match="nonzero padding bits in block 1"):
        impl.unpack_blocks(ODD, good[:-1] + bytes([good[-1] | 0x01]), 2, "msb", "interleaved")
    # bytes: one byte per microexponent; a 2 there is not a 1-bit code
    with pytest.raises(ValueError, match=r"subscales in the payload hold values outside \[0, 1\]"):
        impl.unpack_blocks("mx9", bytes([1, 2] + [0] * 7 + [0] * 16), 1, "bytes", "separate")
    with pytest.raises(ValueError, match=r"codes in the payload hold values outside \[0, 15\]"):
        impl.unpack_blocks("mxfp4", bytes([0, 0x10]) + bytes(31), 1, "bytes", "separate")


# --- round trips and ref == fast -----------------------------------------------------------------
@st.composite
def block_arrays(draw, fmt):
    n = draw(st.integers(0, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scales = rng.integers(0, 1 << fmt.scale.width, n)
    subscales = rng.integers(0, 1 << fmt.subscale_bits, (n, fmt.subblocks)) if fmt.subblocks else None
    codes = rng.integers(0, 1 << fmt.element.width, (n, fmt.block_size))
    return scales, subscales, codes


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", BLOCK_FORMATS + ["odd"])
@SETTINGS
@given(data=st.data())
def test_random_codes_match_the_oracle_in_both_implementations(name, layout, data):
    fmt = ODD if name == "odd" else get_format(name)
    scales, subscales, codes = data.draw(block_arrays(fmt))
    expected = oracle(fmt, scales, subscales, codes, *layout)
    assert fast.pack_blocks(fmt, scales, subscales, codes, *layout) == expected
    assert ref.pack_blocks(fmt, scales, subscales, codes, *layout) == expected
    assert len(expected) == fast.packed_nbytes(fmt, len(scales), *layout)
    for impl in (ref, fast):
        s, sub, c = impl.unpack_blocks(fmt, expected, len(scales), *layout)
        assert s.tolist() == scales.tolist() and c.tolist() == codes.tolist()
        assert (sub is None) == (subscales is None)
        if sub is not None:
            assert sub.tolist() == subscales.tolist() and sub.dtype == np.uint8


def _values(rng, shape):
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))
    x[rng.random(shape) < 0.1] = 0.0
    return x.astype(np.float32)


def assert_same_tensor(a, b):
    assert a.fmt == b.fmt and a.shape == b.shape and a.axis == b.axis and a.options == b.options
    assert a.tensor_scale == b.tensor_scale
    assert a.codes.dtype == b.codes.dtype and np.array_equal(a.codes, b.codes)
    assert a.scales.dtype == b.scales.dtype and np.array_equal(a.scales, b.scales)
    assert (a.subscales is None) == (b.subscales is None)
    if a.subscales is not None:
        assert np.array_equal(a.subscales, b.subscales)
    np.testing.assert_array_equal(a.dequantize(np.float64), b.dequantize(np.float64))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", BLOCK_FORMATS)
@SETTINGS
@given(
    shape=st.lists(st.integers(1, 3), min_size=0, max_size=2).flatmap(
        lambda lead: st.integers(1, 40).map(lambda n: tuple(lead) + (n,))
    ),
    axis_pick=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_tensor_round_trip_and_ref_equals_fast(name, layout, shape, axis_pick, seed):
    rng = np.random.default_rng(seed)
    axis = axis_pick % len(shape)
    tensor = mxsim.quantize(_values(rng, shape), name, axis=axis)
    data = tensor_pack.pack(tensor, *layout)
    assert data == ref_tensor.pack(tensor, *layout)
    assert len(data) == fast.packed_nbytes(name, tensor.scales.size, *layout)
    back = tensor_pack.unpack(data, name, shape, axis, *layout, tensor_scale=tensor.tensor_scale)
    assert_same_tensor(back, tensor)
    assert_same_tensor(ref_tensor.unpack(data, name, shape, axis, *layout, tensor_scale=tensor.tensor_scale), tensor)


def test_unpack_restores_options_scalars_and_empty_tensors():
    t = mxsim.quantize(np.float32(3.0), "mxfp8_e4m3", rounding="rtz")
    back = tensor_pack.unpack(tensor_pack.pack(t), "mxfp8_e4m3", (), rounding="rtz")
    assert back.shape == () and back.options.rounding == "rtz"
    assert_same_tensor(back, t)
    empty = mxsim.quantize(np.zeros((0, 5), np.float32), "mx6")
    assert tensor_pack.pack(empty) == ref_tensor.pack(empty) == b""
    assert_same_tensor(tensor_pack.unpack(b"", "mx6", (0, 5)), empty)
    nv = mxsim.quantize(np.array([1e-3, 2.0, -7.0, 100.0], np.float32), "nvfp4")
    assert nv.tensor_scale == Fraction(nv.tensor_scale) and nv.tensor_scale != 1
    back = ref_tensor.unpack(ref_tensor.pack(nv, "msb", "interleaved"), "nvfp4", (4,), 0, "msb", "interleaved", nv.tensor_scale)
    assert_same_tensor(back, nv)


def test_pack_needs_an_mxtensor():
    for impl in (ref_tensor, tensor_pack):
        with pytest.raises(ValueError, match="tensor must be an MXTensor, got ndarray"):
            impl.pack(np.zeros(32))
        with pytest.raises(ValueError, match="axis=2 is out of range"):
            impl.unpack(bytes(17), "mxfp4", (32,), 2)


def test_fast_pack_chunks_agree_with_one_chunk(monkeypatch):
    rng = np.random.default_rng(5)
    for name in ("mxfp6_e3m2", "mx4"):
        t = mxsim.quantize(_values(rng, (37, 96)), name)
        whole = {layout: tensor_pack.pack(t, *layout) for layout in LAYOUTS}
        monkeypatch.setattr(fast, "CHUNK_BITS", 200)  # many chunks, none a whole multiple of a block
        for layout, data in whole.items():
            assert tensor_pack.pack(t, *layout) == data
            assert_same_tensor(tensor_pack.unpack(data, name, t.shape, -1, *layout), t)
        monkeypatch.undo()
