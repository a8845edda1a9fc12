"""dequantize_packed (the one-pass route from packed bytes to floats) equals unpack + dequantize."""

import numpy as np
import pytest

import mxsim
from mxsim.packing import ELEMENT_STREAMS, SCALE_PLACEMENTS
from mxsim.tensor_pack import dequantize_packed, pack, unpack

RNG = np.random.default_rng(11)
# Wide dynamic range, zeros, -0, NaN and Inf blocks, and a partial last block along axis 0.
DATA = (RNG.standard_normal((70, 9)) * 2.0 ** RNG.integers(-130, 120, (70, 9))).astype(np.float32)
DATA[0, 0], DATA[1, 1], DATA[2, 2], DATA[3, 3] = np.nan, np.inf, -0.0, 0.0


@pytest.mark.parametrize("scale_placement", SCALE_PLACEMENTS)
@pytest.mark.parametrize("element_stream", ELEMENT_STREAMS)
@pytest.mark.parametrize("name", mxsim.format_names("block"))
def test_equals_unpack_then_dequantize(name, element_stream, scale_placement):
    tensor = mxsim.quantize(DATA, name, axis=0)
    payload = pack(tensor, element_stream, scale_placement)
    expected = unpack(payload, name, DATA.shape, 0, element_stream, scale_placement,
                      tensor_scale=tensor.tensor_scale).dequantize()
    got = dequantize_packed(payload, name, DATA.shape, 0, element_stream, scale_placement,
                            tensor_scale=tensor.tensor_scale)
    assert got.dtype == np.float32 and got.shape == DATA.shape
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_float64_output_is_exact():
    tensor = mxsim.quantize(DATA, "mxfp4", axis=0)
    got = dequantize_packed(pack(tensor), "mxfp4", DATA.shape, 0, dtype=np.float64)
    assert np.array_equal(got, tensor.dequantize(np.float64), equal_nan=True)


def test_payload_length_is_checked():
    payload = pack(mxsim.quantize(DATA, "mxfp4", axis=0))
    with pytest.raises(ValueError, match="payload"):
        dequantize_packed(payload[:-1], "mxfp4", DATA.shape, 0)
