"""What the reference dequantizer says each output rounding decides on
(:func:`mxsim.ref.dequant.dequantize_block_traced`, docs/numerics.md sections 3.1 and 3.3), worked by hand:
the exact value, the output grid's step 2^grid at it and the quotient chosen, and the value's
resolution 2^e * multiplier (the element's last bit times the block's multiplier); its values and
words are :func:`mxsim.ref.stored_block.dequantize_block`'s and :func:`mxsim.ref.dequant.dequantize_block_bits`'s;
and the decision classes golden reads from it, worked by hand."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mxsim.fast.decode import scale_table
from mxsim.fast.dequant import dequantize_blocks_traced
from mxsim.golden.coverage.cast_roundings import CastRoundings
from mxsim.golden.coverage.catalogue import class_names
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.options import DequantizeOptions
from mxsim.ref.dequant import dequantize_block_bits, dequantize_block_traced
from mxsim.ref.encode import EncodeRounding
from mxsim.ref.stored_block import QuantizedBlock, dequantize_block

SATURATE = DequantizeOptions(dequant_overflow="saturate")

# (output, options, scale code (E8M0: 2^(code - 127)), E4M3 element code, (negative, n, d, grid, quotient),
#  last bit exponent of the element, output word)
HAND = [
    # 1.125 * 2^0 to fp16: exact on the step 2^-10 (1152 steps); the element's last bit 2^-3
    ("float16", DequantizeOptions(), 127, 0x39, (False, 9, 8, -10, 1152), -3, 0x3C80),
    # 1.875 * 2^-25 to fp16: below the smallest subnormal 2^-24, 0.9375 steps -> 1
    ("float16", DequantizeOptions(), 102, 0x3F, (False, 15, 1 << 28, -24, 1), -3, 0x0001),
    # 1.0 * 2^-25: half a subnormal step, a tie to even 0; negative: -0
    ("float16", DequantizeOptions(), 102, 0xB8, (True, 1, 1 << 25, -24, 0), -3, 0x8000),
    # 448 * 2^8 = 114688 to fp16: 1792 steps of 2^6 (beyond 65504), saturated to 0x7BFF
    ("float16", SATURATE, 135, 0x7E, (False, 114688, 1, 6, 1792), 5, 0x7BFF),
    # 1.5 * 2^-127 to bf16 (subnormal step 2^-133): exactly 96 steps
    ("bfloat16", DequantizeOptions(), 0, 0x3C, (False, 3, 1 << 128, -133, 96), -3, 0x0060),
]


@pytest.mark.parametrize("output,options,scale,code,rounding,last_bit_exponent,word", HAND)
def test_records_worked_by_hand(output, options, scale, code, rounding, last_bit_exponent, word):
    block = QuantizedBlock(scale, (), (code,) + (0,) * 31)
    values, words, records = dequantize_block_traced(block, "mxfp8_e4m3", output, options)
    assert values == dequantize_block(block, "mxfp8_e4m3")
    assert words == dequantize_block_bits(block, "mxfp8_e4m3", output, options)
    assert words[0] == word
    record = records[0]
    assert record.rounding == EncodeRounding(*rounding)
    assert record.last_bit_exponent == last_bit_exponent
    assert record.multiplier == Fraction(2) ** (scale - 127)
    assert records[1:] == [None] * 31  # zeros do not round


def test_nan_scale_and_special_elements_have_no_record():
    values, words, records = dequantize_block_traced(QuantizedBlock(0xFF, (), (0x38,) * 32), "mxfp8_e4m3")
    assert records == [None] * 32 and all(v.is_nan for v in values)
    block = QuantizedBlock(127, (), (0x7F, 0xFF, 0x00, 0x80) + (0x38,) * 28)  # NaN, -NaN, +0, -0
    _, _, records = dequantize_block_traced(block, "mxfp8_e4m3")
    assert records[:4] == [None] * 4 and all(r is not None for r in records[4:])
    with pytest.raises(ValueError, match="DequantizeOptions"):
        dequantize_block_traced(block, "mxfp8_e4m3", "float32", {"dequant_ftz": True})


def test_mx9_records_carry_the_subblock_multiplier():
    # MX9: 2^(E - tau_j) per sub-block of 2; scale 2^0, sub-scales tau = 1 for sub-block 0 only
    block = QuantizedBlock(127, (1,) + (0,) * 7, (0x41,) * 16)
    _, _, records = dequantize_block_traced(block, "mx9", "float32")
    assert [r.multiplier for r in records[:4]] == [Fraction(1, 2)] * 2 + [Fraction(1)] * 2


def test_classes_from_the_records_worked_by_hand():
    suite = suite_from_spec("dequantize", block="mxfp8_e4m3", output="float16")
    # elements 1.0, -1.0, 1.875, 1.125 times 2^-25 (fp16 subnormal step 2^-24, resolution 2^-28)
    block = QuantizedBlock(102, (), (0x38, 0xB8, 0x3F, 0x39) + (0,) * 28)
    _, _, records = dequantize_block_traced(block, "mxfp8_e4m3", "float16")
    flags = suite._decision_flag_words(records)
    assert set(class_names(flags[0])) == {"tie", "truncate"}
    assert set(class_names(flags[1])) == {"tie", "truncate", "zero_result_sign"}
    # 0.9375 steps: guard, top sticky and one more bit set, rounds up onto 2^-24
    assert set(class_names(flags[2])) == {"above_half", "increment", "carry"}
    # 1.125 * 2^-25 = 0.5625 steps: guard and the bottom sticky bit (2^-28 = a sixteenth of a step)
    assert set(class_names(flags[3])) == {"above_half", "near_tie_bottom", "subnormal_near_tie",
                                          "near_tie_bottom_zero_band", "increment", "carry"}
    assert flags[4:] == [0] * 28


AGREE = [
    {"block": "mxfp8_e4m3", "output": "bfloat16"},
    {"block": "mxfp8_e4m3", "output": "float32"},
    {"block": "mxfp8_e5m2", "output": "float16", "scale_encoding": "int8_exponent"},
    {"block": "mxfp4_e2m1", "output": "float16", "options": {"dequant_ftz": True, "dequant_overflow": "saturate"}},
    {"block": "mxfp6_e3m2", "output": "bfloat16"},
    {"block": "mxint8", "output": "bfloat16"},
    {"block": "mx9", "output": "float16"},
    {"block": "nvfp4", "output": "float16"},
]


@pytest.mark.parametrize("params", AGREE, ids=lambda p: "-".join(str(v) for v in p.values()))
def test_both_paths_records_agree(params):
    """The reference's and the fast path's records (:func:`mxsim.fast.dequant.dequantize_blocks_traced`)
    agree value by value on seeded random blocks (scales over the whole range, NaN scales included),
    and so do the classes golden reads from them."""
    suite = suite_from_spec("dequantize", **params)
    fmt, out = suite.fmt, suite.out
    rng = np.random.default_rng(sum(map(ord, str(params))))
    n, k = 300, fmt.block_size
    codes = rng.integers(0, 1 << fmt.element.width, size=(n, k))
    # half the blocks with any scale, half with a scale that puts values near the output's subnormal
    # range, where they round (elsewhere they are mostly exact)
    table = scale_table(fmt.scale, suite.scale_encoding)
    factor = 1.0 if fmt.scale.name == "e8m0" else 3.0 * 2.0**-20
    low = np.flatnonzero((table * factor >= 2.0 ** (out.emin - out.mantissa_bits - 8))
                         & (table * factor <= 2.0 ** (out.emin + 2)))
    scales = np.where(np.arange(n) % 2 == 0, rng.integers(0, 1 << fmt.scale.width, size=n), rng.choice(low, size=n))
    subscales = rng.integers(0, 1 << fmt.subscale_bits, size=(n, fmt.subblocks)) if fmt.subblocks else None
    tensor_scale = Fraction(3, 1 << 20) if fmt.scale.name != "e8m0" else None
    fast_words, fast = dequantize_blocks_traced(scales, subscales, codes, fmt, suite.output, suite.opts,
                                                tensor_scale, suite.scale_encoding)
    records, words = [], []
    for i in range(n):
        block = QuantizedBlock(int(scales[i]), tuple(int(t) for t in subscales[i]) if fmt.subblocks else (),
                               tuple(int(c) for c in codes[i]))
        _, w, r = dequantize_block_traced(block, fmt, suite.output, suite.opts, tensor_scale, suite.scale_encoding)
        words += w
        records += r
    assert fast_words.reshape(-1).tolist() == words
    ref = CastRoundings.from_output_roundings(records)
    assert ref.rounds.tolist() == fast.rounds.tolist() and ref.rounds.sum() > n * k // 2
    assert ref.value.tolist() == fast.value.tolist()
    assert ref.negative[ref.rounds].tolist() == fast.negative[fast.rounds].tolist()
    assert ref.last_bit[ref.rounds].tolist() == fast.last_bit[fast.rounds].tolist()
    inside = ref.rounds & (ref.value <= float(out.max_normal))
    assert ref.grid[inside].tolist() == fast.grid[inside].tolist()
    assert ref.quotient[inside].tolist() == fast.quotient[inside].tolist()
    flags = suite._decision_flag_words(records)
    fast_flags = CastRoundings.from_fast(fast).flags(out)
    if suite.opts.dequant_ftz:  # a flushed value has no rounding class (the suite's rule)
        fast_flags[fast.value < float(out.min_normal)] = 0
    assert flags == fast_flags.tolist()
    assert len(set(flags)) > 5 or not suite.reachable_classes()  # (else every value is exact, or flushed)
