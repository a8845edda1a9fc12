"""NVFP4 blocks of different tensors in one fast-path call (issue 33 item 3).

``mxsim.fast.block.quantize_blocks`` takes one tensor scale s_t per block; each block's scale and
codes must equal the integer reference (``mxsim.ref.block.quantize_block``) of that block with its
own s_t (docs/numerics.md section 2.2), under every NVFP4 arithmetic, for blocks holding NaN, Inf,
zeros, subnormals and huge values, and tensors whose amax is zero (s_t = 1) or so small that s_t is
fp32's smallest subnormal. The golden quantize kind hands a whole chunk of vectors (every one with
its own s_t) to the fast path in one call."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from mxsim.fast import block as fast_block
from mxsim.fast import nvfp4 as fast_nvfp4
from mxsim.fast.block import quantize_blocks
from mxsim.formats import get_format
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.options import QuantizeOptions
from mxsim.ref.block import nvfp4_tensor_scale, quantize_block

NVFP4 = get_format("nvfp4")
K = NVFP4.block_size


def _blocks(seed: int, with_specials: bool) -> np.ndarray:
    """float32 blocks of a spread of magnitudes (2^-140 .. 2^120), and corner blocks: all +0/-0,
    fp32 subnormals only, one element at the fp32 maximum; with ``with_specials`` also a NaN or
    an Inf element in some blocks."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(60):
        centre = rng.integers(-140, 120)
        x = rng.standard_normal(K) * np.exp2(centre + rng.integers(-6, 3, size=K))
        rows.append(x.astype(np.float32))
    rows.append(np.zeros(K, dtype=np.float32))
    rows.append(-np.zeros(K, dtype=np.float32))
    rows.append((rng.integers(-(1 << 23), 1 << 23, size=K) * 2.0**-149).astype(np.float32))
    big = rng.standard_normal(K).astype(np.float32)
    big[3] = np.finfo(np.float32).max
    rows.append(big)
    if with_specials:
        for special in (np.nan, np.inf, -np.inf):
            x = rng.standard_normal(K).astype(np.float32) * np.float32(2.0**-20)
            x[rng.integers(K)] = special
            rows.append(x)
    return np.stack(rows)


def _own_tensor_scales(blocks: np.ndarray, options: QuantizeOptions) -> list[Fraction]:
    """Each block's tensor scale as if it were a tensor of its own: from its largest finite
    magnitude (an all-zero block gets s_t = 1, an all-subnormal one fp32's smallest subnormal)."""
    scales = []
    for block in blocks:
        finite = np.abs(block[np.isfinite(block)]).astype(np.float64)
        amax = Fraction(float(finite.max())) if finite.size else Fraction(0)
        scales.append(nvfp4_tensor_scale(amax, options))
    return scales


OPTIONS = [
    {},
    {"nvfp4_arith": "fp32_steps"},
    {"nvfp4_arith": "fp32_steps", "nvfp4_scale_min": "subnormal", "rounding": "rtz"},
    {"inf_policy": "saturate", "rounding": "rup"},
    {"nvfp4_arith": "fp32_reciprocal"},
]


@pytest.mark.parametrize("settings", OPTIONS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_per_block_tensor_scales_equal_the_reference_block_by_block(settings):
    options = QuantizeOptions(**settings)
    blocks = _blocks(1, with_specials=options.nvfp4_arith != "fp32_reciprocal")  # it refuses NaN/Inf blocks
    s_t = _own_tensor_scales(blocks, options)
    assert len(set(s_t)) > 40 and Fraction(1) in s_t  # many different tensor scales, a zero-amax one among them
    if options.nvfp4_arith != "fp32_reciprocal":
        assert Fraction(1, 1 << 149) in s_t  # the all-subnormal block: s_t at fp32's smallest subnormal
    scales, subscales, codes = quantize_blocks(blocks, NVFP4, options,
                                               tensor_scale=np.array([float(s) for s in s_t]))
    assert subscales is None
    for i, (block, scale) in enumerate(zip(blocks, s_t)):
        expected = quantize_block([float(v) for v in block], NVFP4, options, tensor_scale=scale)
        assert (int(scales[i]), [int(c) for c in codes[i]]) == (expected.scale, list(expected.codes)), i


def test_one_scalar_tensor_scale_is_every_block_s():
    blocks = _blocks(2, with_specials=True)
    options = QuantizeOptions()
    one = quantize_blocks(blocks, NVFP4, options, tensor_scale=Fraction(3, 1 << 10))
    each = quantize_blocks(blocks, NVFP4, options, tensor_scale=np.full(len(blocks), 3 / 1024))
    assert np.array_equal(one[0], each[0]) and np.array_equal(one[2], each[2])


@pytest.mark.parametrize("bad, shown", [
    (0.0, "tensor_scale[1]=0.0"), (-0.5, "tensor_scale[1]=-0.5"), (float("nan"), "tensor_scale[1]=nan"),
    (float("inf"), "tensor_scale[1]=inf"), (0.1, "tensor_scale[1]=0.1"), (2.0**-150, "tensor_scale[1]="),
])
def test_a_tensor_scale_that_is_no_fp32_s_t_is_refused_by_position(bad, shown):
    blocks = _blocks(3, with_specials=False)[:3]
    with pytest.raises(ValueError, match=r"expected finite positive values exactly representable in fp32") as error:
        quantize_blocks(blocks, NVFP4, QuantizeOptions(), tensor_scale=np.array([1.0, bad, 1.0]))
    assert shown in str(error.value)


@pytest.mark.parametrize("value", [np.ones(2), np.ones((3, 1)), np.array(["1", "1", "1"])])
def test_a_tensor_scale_array_of_the_wrong_shape_or_type_is_refused(value):
    with pytest.raises(ValueError, match=r"tensor_scale has shape .* expected one number per block, shape \(3,\)"):
        quantize_blocks(_blocks(4, with_specials=False)[:3], NVFP4, QuantizeOptions(), tensor_scale=value)


def test_the_golden_quantize_kind_quantizes_a_chunk_in_one_fast_call(monkeypatch):
    """A chunk of random NVFP4 vectors (each its own s_t) goes to the fast quantizer once, and
    gives what the reference gives vector by vector (outputs and classes)."""
    suite = suite_from_spec("quantize", block="nvfp4")
    rows = suite.random_run(np.random.default_rng(5), 0, 200)
    rows += [row for row, _ in suite.stimulus(random.Random("test_fast_nvfp4_batch"), 1)]
    assert len({row["tensor_scale"] for row in rows}) > 150
    calls = []
    real = fast_block.quantize_blocks_traced

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr("mxsim.golden.kinds.quantize.expected.quantize_blocks_traced", counted)
    columns = {f.name: [row[f.name] for row in rows] for f in suite.inputs}
    outputs, flags = suite.compute_batch(columns)
    assert calls == [len(rows)]
    from mxsim.golden.coverage.catalogue import flag_bits
    for i, row in enumerate(rows):
        out, classes = suite.compute(row)
        assert {name: column[i] for name, column in outputs.items()} == out, i
        assert flags[i] == flag_bits(classes), i


def _amax_values() -> np.ndarray:
    """float32 tensor maxima: 20,000 consecutive significands (every rounding case of the quotient
    by 2688 = 21 * 2^7 in turn), random values over fp32's whole range (subnormals included), and
    corners: 0, the smallest subnormal, the largest finite value, multiples of 21 (exact quotients)."""
    rng = np.random.default_rng(7)
    consecutive = (np.arange(0x3F800000, 0x3F800000 + 20_000, dtype=np.uint32)).view(np.float32)
    random_bits = rng.integers(1, 0x7F800000, size=5000, dtype=np.uint32).view(np.float32)
    corners = np.array([0.0, 2.0**-149, float(np.finfo(np.float32).max), 21.0, 21 * 2.0**-140, 2688.0,
                        2688 * 2.0**-149 * 3, 2.0**-138], dtype=np.float32)
    return np.concatenate([consecutive, random_bits, corners])


@pytest.mark.parametrize("settings", [{}, {"nvfp4_arith": "fp32_steps"}, {"nvfp4_tensor_scale": "none"},
                                      {"nvfp4_arith": "fp32_reciprocal"}], ids=str)
def test_tensor_scales_at_once_equal_the_reference_one_by_one(settings):
    options = QuantizeOptions(**settings)
    amax = _amax_values()
    if options.nvfp4_arith == "fp32_reciprocal":
        amax = amax[::40]  # the reference's own routine, tensor by tensor: a sample is enough
    got = fast_nvfp4.nvfp4_tensor_scales(amax, options)
    assert got.dtype == np.float32
    expected = [nvfp4_tensor_scale(Fraction(float(a)), options) for a in amax.tolist()]
    assert [Fraction(float(v)) for v in got.tolist()] == expected


def test_tensor_scales_refuse_a_maximum_that_is_not_finite_and_nonnegative():
    for bad in (np.nan, np.inf, -1.0):
        with pytest.raises(ValueError, match="amax holds a value that is not finite and >= 0"):
            fast_nvfp4.nvfp4_tensor_scales(np.array([1.0, bad], dtype=np.float32), QuantizeOptions())
