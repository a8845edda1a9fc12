"""quantize_block's options check, skipped for the (options, format) pair that passed it last (found
by identity), still refuses: the same options with a format they do not apply to, and an equal
format with another options object that does not apply to it; the passing pair passes again."""

from __future__ import annotations

import pytest

from mxsim.options import QuantizeOptions
from mxsim.ref.block import quantize_block


def test_quantize_options_check_after_a_passing_pair():
    neg2 = QuantizeOptions(int8_allow_neg2=True)
    ones = [1.0] * 32
    assert quantize_block(ones, "mxint8", neg2).scale == 127  # amax 1, int8 emax 0: E = 0
    with pytest.raises(ValueError, match="int8_allow_neg2"):
        quantize_block(ones, "mxfp8_e4m3", neg2)  # the same options, a format they do not apply to
    assert quantize_block(ones, "mxfp8_e4m3", QuantizeOptions()).scale == 127 - 8  # E4M3 emax 8
    with pytest.raises(ValueError, match="int8_allow_neg2"):
        quantize_block(ones, "mxfp8_e4m3", QuantizeOptions(int8_allow_neg2=True))  # the format, other options
    assert quantize_block(ones, "mxint8", neg2).scale == 127
