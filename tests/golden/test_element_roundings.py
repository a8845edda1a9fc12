"""The record of many quantized elements' roundings (``mxsim.golden.coverage.element_roundings.ElementRoundings``),
filled by the reference (``mxsim.ref.block.quantize_block_roundings``) and by the fast path
(``mxsim.fast.block.quantize_blocks_traced``), and its classes computed for a whole chunk at once
(issue 33 item 3): what each path says an element rounds (value, divisor, last-bit floor) worked by
hand from docs/numerics.md sections 2 and 2.3; both paths' records agree element by element over a
spread of options; hand-worked classes; a result that is no end of its interval is classed on the
grid's own interval; a block flushed by ``flush_subnormal_blocks`` rounds nothing."""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import numpy as np
import pytest

from mxsim.fast.block import quantize_blocks_traced
from mxsim.formats import get_format
from mxsim.golden.coverage.catalogue import class_names
from mxsim.golden.coverage.element_roundings import ElementRoundings
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.options import QuantizeOptions
from mxsim.ref.block import quantize_block_roundings
from mxsim.ref.refusals import NoMXEncoding
from mxsim.ref.stored_block import to_fp32


def _f32(values) -> list[float]:
    """The values as fp32 (Python floats holding fp32 values)."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def _ratio_value(ratio) -> Fraction:
    sign, n, d = ratio
    return Fraction(n, d) * (-1) ** sign


# --- what each path says an element rounds, worked by hand ------------------------------------------
def test_mxfp8_elements_round_x_over_two_to_the_e():
    """E = floor(log2 448) - 8 = 0 (OCP floor rule): every element rounds x / 2^0; a block whose maximum
    is 448 * 2^-20 has E = -20, divisor 2^-20. -0 and zeros do not round."""
    k = 32
    for shift in (0, -20):
        values = _f32([448.0 * 2.0**shift, 35 / 32 * 2.0**shift, -0.0] + [0.0] * (k - 3))
        block, record = quantize_block_roundings(values, "mxfp8_e4m3")
        assert record.divisors == ((1, 1 << -shift),) * k if shift else ((1, 1),) * k
        assert _ratio_value(record.values[1]) == Fraction(35, 32) * Fraction(2) ** shift
        assert record.last_bit_floor == -126
        *_, fast = quantize_blocks_traced(np.array([values], dtype=np.float32), get_format("mxfp8_e4m3", kind="block"),
                                          QuantizeOptions())
        assert fast.divisor.ravel()[0] == 2.0**shift
        assert fast.value[0, 1] == 35 / 32 * 2.0**shift
        assert fast.rounds[0].tolist() == [True, True] + [False] * (k - 2)


def test_mx9_elements_round_against_their_sub_block_divisor():
    """MX9: E = floor(log2 1.5) - 0 = 0 (its element's emax 0); the pair (1.5, x) has tau 0, the pair (0.25,
    0.125) has e_j = -2, tau = min(0 + 2, 1) = 1: divisor 2^(0 - 1)."""
    values = _f32([1.5, 1.0, 0.25, 0.125] + [0.0] * 12)
    block, record = quantize_block_roundings(values, "mx9")
    assert block.subscales[:2] == (0, 1)
    assert record.divisors[:4] == ((1, 1), (1, 1), (1, 2), (1, 2))
    *_, fast = quantize_blocks_traced(np.array([values], dtype=np.float32), get_format("mx9", kind="block"),
                                      QuantizeOptions())
    assert fast.divisor[0, :4].tolist() == [1.0, 1.0, 0.5, 0.5]


def test_nvfp4_elements_round_against_the_tensor_and_block_scales():
    """NVFP4, amax 2688 with s_t = 1: block scale 2688 / 6 = 448, D = 448 (not a power of two);
    under nvfp4_arith='fp32_steps' an element rounds fp32(x * fp32(fp32(1 / s_t) / 448)) against 1."""
    values = _f32([2688.0, 1232.0] + [0.0] * 14)
    fmt = get_format("nvfp4", kind="block")
    _, record = quantize_block_roundings(values, fmt, tensor_scale=Fraction(1))
    assert set(record.divisors) == {(448, 1)} and record.factor is None
    *_, fast = quantize_blocks_traced(np.array([values], dtype=np.float32), fmt, QuantizeOptions(), np.array([1.0]))
    assert fast.divisor.ravel()[0] == 448.0 and fast.value[0, 1] == 1232.0
    steps = QuantizeOptions(nvfp4_arith="fp32_steps")
    _, record = quantize_block_roundings(values, fmt, steps, tensor_scale=Fraction(1))
    factor = to_fp32(Fraction(1, 448)).value
    assert record.factor.value == factor
    assert record.divisors[1] == (1, 1)
    assert _ratio_value(record.values[1]) == to_fp32(1232 * factor).value
    *_, fast = quantize_blocks_traced(np.array([values], dtype=np.float32), fmt, steps, np.array([1.0]))
    assert fast.divisor.ravel()[0] == 1.0 and Fraction(fast.value[0, 1]) == to_fp32(1232 * factor).value


def test_as_normal_reads_a_subnormal_with_a_last_bit_of_two_to_the_minus_150():
    """subnormal_inputs='as_normal' (docs/numerics.md section 2.3): m * 2^-149 reads as (2^23 + m) * 2^-150,
    and every value's last bit is 2^(max(floor(log2 v), -127) - 23)."""
    options = QuantizeOptions(subnormal_inputs="as_normal")
    values = [3 * 2.0**-149, 2.0**-140] + [0.0] * 30
    _, record = quantize_block_roundings(values, "mxfp8_e5m2", options)
    assert _ratio_value(record.values[0]) == Fraction((1 << 23) + 3, 1 << 150)
    assert record.last_bit_floor == -127
    *_, fast = quantize_blocks_traced(np.array([values], dtype=np.float32), get_format("mxfp8_e5m2", kind="block"),
                                      options)
    assert Fraction(fast.value[0, 0]) == Fraction((1 << 23) + 3, 1 << 150) and fast.last_bit_floor == -127


# --- both paths fill the same record ---------------------------------------------------------------
SPECS = [
    {"block": "mxfp8_e4m3"},
    {"block": "mxfp8_e4m3", "options": {"rounding": "rdn", "scale_rule": "ceil"}},
    {"block": "mxfp8_e4m3", "profile": "torchao_0_18_rceil"},
    {"block": "mxfp8_e4m3", "profile": "microxcaling_even"},
    {"block": "mxfp8_e5m2", "profile": "idma_v0_7"},
    {"block": "mxfp4_e2m1", "options": {"flush_subnormal_blocks": True, "inf_policy": "saturate"}},
    {"block": {"block_size": 32, "element": "fp8_e4m3fnuz", "name": "mx_e4m3fnuz", "scale": "e8m0"}},
    {"block": "mxint8", "options": {"int8_allow_neg2": True}},
    {"block": "mx6", "options": {"inf_policy": "saturate"}},
    {"block": "mx9"},
    {"block": "nvfp4"},
    {"block": "nvfp4", "options": {"nvfp4_arith": "fp32_steps"}},
    {"block": "nvfp4", "options": {"nvfp4_arith": "fp32_reciprocal"}},
]


def _words(rng: random.Random, k: int, specials: bool) -> list[int]:
    """k fp32 words: normal values over 2^-30 .. 2^20; with ``specials`` also zeros, Infs, NaNs, subnormals."""
    words = []
    for _ in range(k):
        if specials and rng.random() < 0.1:
            words.append(rng.choice([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, rng.getrandbits(23)]))
        else:
            words.append(rng.getrandbits(1) << 31 | (127 + rng.randint(-30, 20)) << 23 | rng.getrandbits(23))
    return words


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "-".join(str(v.get("name", v) if isinstance(v, dict) else v)
                                                            for v in s.values()))
def test_reference_and_fast_records_agree_element_by_element(spec):
    """Seeded random blocks (specials, subnormals, wide ranges): each path's own record, read as binary64,
    gives the same rounding elements, signs, values, divisors and resolutions, and the same classes."""
    suite = suite_from_spec("quantize", **spec)
    fmt, k = suite.fmt, suite.fmt.block_size
    rng = random.Random(f"element-roundings:{spec}")
    rows = []
    blocks, records, tensor = [], [], []
    for i in range(300):
        words = _words(rng, k, i % 4 == 0)
        values = list(struct.unpack(f"<{k}f", struct.pack(f"<{k}I", *words)))
        if suite.opts.nvfp4_arith == "fp32_reciprocal" and not all(math.isfinite(v) for v in values):
            continue  # the fast path refuses NaN and Inf there; the reference gives a NaN block
        s_t = None
        if fmt.tensor_scale is not None:
            s_t = to_fp32(Fraction(rng.randint(1 << 23, (1 << 24) - 1), 1 << (23 + rng.randint(-10, 10)))).value
        try:
            block, record = quantize_block_roundings(values, fmt, suite.opts, tensor_scale=s_t)
        except (ValueError, NoMXEncoding):  # options that refuse a block (NaN under nan_blocks='error', ...)
            continue
        if s_t is not None:
            tensor.append(float(s_t))
        blocks.append((words, block))
        records.append(record)
        rows.append(values)
    assert len(records) > 100
    codes = np.array([block.codes for _, block in blocks], dtype=np.int64)
    reference = ElementRoundings.from_reference(records, codes, k)
    array = np.array(rows, dtype=np.float32)
    _, _, fast_codes, fast = quantize_blocks_traced(array, fmt, suite.opts, np.array(tensor) if tensor else None)
    assert (fast_codes == codes).all()
    fast_record = ElementRoundings.from_fast(fast, fast_codes)
    assert (reference.rounds == fast_record.rounds).all()
    rounds = reference.rounds
    assert reference.rounds.sum() > 50 * k
    assert (reference.negative[rounds] == fast_record.negative[rounds]).all()
    assert (reference.value == fast_record.value).all()
    assert (reference.divisor[rounds] == np.broadcast_to(fast_record.divisor, codes.shape)[rounds]).all()
    floors = np.broadcast_to(reference.last_bit_floor, (len(codes), 1))
    assert (floors == fast_record.last_bit_floor).all()
    assert (reference.flags(fmt.element, suite.opts.int8_allow_neg2)
            == fast_record.flags(fmt.element, suite.opts.int8_allow_neg2)).all()


# --- classes, hand-worked ---------------------------------------------------------------------------
E4M3 = get_format("fp8_e4m3")


def _one(x: float, code: int, negative: bool = False) -> set:
    """The classes of one E4M3 element x / 1 rounded to ``code``, fp32 resolution."""
    record = ElementRoundings(np.array([[True]]), np.array([[negative]]), np.array([[x]]), np.array([[1.0]]), -126,
                              np.array([[code]]))
    return set(class_names(int(record.flags(E4M3)[0])))


@pytest.mark.parametrize(
    "x, code, expected",
    [
        # [1.25, 1.375) (E4M3 1.010 and 1.011, codes 0x3A and 0x3B): 1.3125 is its midpoint, rne keeps 1.25 (even)
        (1.3125, 0x3A, {"tie", "truncate"}),
        # 3/4 of the interval: guard and the top sticky bit only
        (1.25 + 3 / 32, 0x3B, {"above_half", "near_tie_top", "near_tie_top_normal", "increment"}),
        # 1.9375 = 15/8 + 1/16, the tie of [1.875, 2): rounding up carries into the next binade (2 = 0x40)
        (1.9375, 0x40, {"tie", "increment", "carry"}),
        # 1.25 exactly
        (1.25, 0x3A, {"exact"}),
        # above the largest magnitude 448: saturation alone
        (500.0, 0x7E, {"saturation"}),
        # a result that is no end of x's interval (2.0 for 1.3125): classed on the grid's [1.25, 1.375)
        (1.3125, 0x40, {"tie", "increment"}),
    ],
)
def test_element_classes_hand_worked(x, code, expected):
    assert _one(x, code) == expected


def test_a_negative_element_rounding_to_zero_has_zero_result_sign():
    """-2^-11 in E4M3 (smallest subnormal 2^-9): in the zero band, below half: rne gives -0 (code 0x80)."""
    assert _one(2.0**-11, 0x80, negative=True) == {"below_half", "truncate", "zero_result_sign"}


def test_a_block_flushed_by_flush_subnormal_blocks_rounds_nothing():
    """flush_subnormal_blocks (microxcaling's flush_fp32_subnorms): a block whose largest magnitude is below
    2^-126 becomes zeros, no element is rounded, so the vector has no rounding-decision class (before
    the record, golden classed x / 2^-127 against the flushed zero codes: truncate, zero_result_sign)."""
    suite = suite_from_spec("quantize", block="mxfp8_e4m3", options={"flush_subnormal_blocks": True})
    k = suite.fmt.block_size
    values = [2.0**-130, -(2.0**-131)] + [0.0] * (k - 2)
    word = int.from_bytes(struct.pack(f"<{k}f", *values), "little")
    out, classes = suite.compute({"x": word})
    assert out["codes"] == 1 << 15  # element 1 is -0 (the flushed value keeps its sign), the others +0
    decision = {"exact", "below_half", "tie", "above_half", "truncate", "increment", "zero_result_sign", "carry"}
    assert not classes & decision
    _, flags = suite.compute_batch({"x": [word]})
    assert set(class_names(flags[0])) == classes


def test_nvfp4_reciprocal_elements_round_their_fp32_quotient(tmp_path):
    """nvfp4_arith='fp32_reciprocal' (compressed-tensors): gs = fp32(fp32(1 / 3) * 2688) for amax 3, block
    scale UE4M3(fp32(gs * fp32(3 / 6))) = 448, step fp32(448 / gs); each element rounds the fp32 quotient
    fp32(x / step) against 1 (its factor 1 / step). Its suite's catalogue reaches every class it requires
    (ties only by chance under an amax global scale: not required)."""
    from mxsim.golden import generate
    from mxsim.ref.block import nvfp4_tensor_scale

    options = QuantizeOptions(nvfp4_arith="fp32_reciprocal")
    gs = nvfp4_tensor_scale(Fraction(3), options)
    assert gs == to_fp32(to_fp32(Fraction(1, 3)).value * 2688).value
    values = _f32([3.0, 1.1] + [0.0] * 14)
    block, record = quantize_block_roundings(values, "nvfp4", options, tensor_scale=gs)
    step = to_fp32(Fraction(448) / gs).value
    assert record.factor.value == 1 / step
    assert _ratio_value(record.values[1]) == to_fp32(Fraction(1.1) / step).value
    assert record.divisors[1] == (1, 1)
    suite = suite_from_spec("quantize", block="nvfp4", options={"nvfp4_arith": "fp32_reciprocal"})
    assert "tie" not in suite.reachable_classes()
    generate(suite, tmp_path / "g")
