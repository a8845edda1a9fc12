"""The suites' ``compute_batch`` (the fast path, many vectors at once) gives exactly what ``compute``
(the reference, vector by vector) gives: every output field and the flags word, on the whole
stimulus of a level-2 suite plus seeded random vectors, over a spread of formats and options.

The fast routes are called directly (``_batch``), so a silent fallback to the reference cannot
pass for the fast path; the fallback itself (fused accumulation, invalid vectors) is tested
through ``compute_batch``."""

from __future__ import annotations

import random
import re
from fractions import Fraction

import numpy as np
import pytest

from mxsim.golden.kinds.batch import pack_items, unpack_items
from mxsim.golden.coverage.catalogue import class_names, flag_bits
from mxsim.golden.values import fp32_bits, pack_word, unpack_word
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.ref import dot as ref_dot
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.exact import Exact

ALIGNED = {"mode": "aligned", "shift_rounding": "truncate", "overflow": "saturate"}

DOT = [
    {"block_a": "mxfp8_e4m3"},
    {"block_a": "mxfp8_e4m3", "accumulator": {**ALIGNED, "frac_bits": 13, "width": 24}},
    {"block_a": "mxfp8_e4m3", "accumulator": {**ALIGNED, "frac_bits": 8, "width": 14}},
    {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "fp32_sequential"}},
    {"block_a": "mxfp8_e5m2"},
    {"block_a": "mxfp8_e5m2", "accumulator": {"mode": "aligned", "frac_bits": 30, "shift_rounding": "rne"}},
    {"block_a": "mxfp8_e5m2", "accumulator": {"mode": "fp32_sequential", "output": "bf16"}},
    {"block_a": "mxfp8_e4m3", "block_b": "mxfp8_e5m2",
     "accumulator": {"mode": "aligned", "frac_bits": 20, "width": 16, "overflow": "wrap", "shift_rounding": "rne"}},
    {"block_a": "mxfp6_e3m2", "block_b": "mxfp4_e2m1", "accumulator": {"output": "bf16", "output_rounding": "rup", "ftz": True}},
    {"block_a": "mxfp4_e2m1", "accumulator": {**ALIGNED, "frac_bits": 4, "width": 10}},
    {"block_a": "mxint8", "accumulator": {"output": "fp16", "output_rounding": "rna"}},
    {"block_a": "mx9"},
    {"block_a": "mx9", "accumulator": {"mode": "aligned", "frac_bits": 3, "width": 8, "overflow": "wrap"}},
    {"block_a": "mx9", "block_b": "mx6", "accumulator": {"mode": "fp32_sequential", "output_rounding": "rtz"}},
    {"block_a": "nvfp4"},
    {"block_a": "nvfp4", "accumulator": {"mode": "aligned", "frac_bits": 8}},
    {"block_a": "nvfp4", "accumulator": {"mode": "fp32_sequential", "output": "fp16", "output_rounding": "rdn"}},
]

DOTGENERAL = [
    {"block_a": "mxfp8_e4m3"},
    {"block_a": "mxfp8_e4m3", "accumulator": {"across_blocks": "exact"}},
    {"block_a": "mxfp8_e5m2", "n_blocks": 3, "accumulator": {**ALIGNED, "frac_bits": 13, "width": 24}},
    {"block_a": "mxfp4_e2m1", "block_b": "mxfp6_e2m3", "n_blocks": 5, "accumulator": {"mode": "fp32_sequential"}},
    {"block_a": "mx9", "n_blocks": 2, "accumulator": {"output": "fp16", "across_blocks": "exact"}},
    {"block_a": "nvfp4", "n_blocks": 3, "accumulator": {"across_blocks": "exact", "output": "bf16", "output_rounding": "rtz"}},
]

QUANTIZE = [
    {"block": "mxfp8_e4m3"},
    {"block": "mxfp8_e4m3", "options": {"rounding": "rup"}},
    {"block": "mxfp8_e5m2", "options": {"scale_rule": "ceil"}},
    {"block": "mxfp6_e3m2", "options": {"scale_rule": "even", "rounding": "rna"}},
    {"block": "mxfp6_e2m3", "options": {"scale_rule": "rceil", "inf_policy": "saturate"}},
    {"block": "mxfp4_e2m1", "options": {"scale_rule": "tosa", "rounding": "rtz", "flush_subnormal_inputs": True}},
    {"block": "mxint8", "options": {"int8_allow_neg2": True, "rounding": "rdn"}},
    {"block": "mx9"},
    {"block": "mx6", "options": {"inf_policy": "saturate"}},
    {"block": "mx4"},
    {"block": "nvfp4"},
    {"block": "nvfp4", "options": {"nvfp4_arith": "fp32_steps", "nvfp4_scale_min": "subnormal"}},
    {"block": "nvfp4", "options": {"nvfp4_tensor_scale": "none", "inf_policy": "saturate"}},
]


# --- random vectors ------------------------------------------------------------------------------
def _random_block_side(fmt, rng: random.Random, prefix: str, blocks: int) -> dict:
    """Random fields of one operand: uniform scale codes (NaN, 0x00 and 0xFE included), random
    sub-scales, element codes uniform (every code) or finite only, a random tensor scale."""
    element = fmt.element
    finite = [c for c in range(1 << element.width) if c not in _nonfinite(element)]
    scales, subs, elems = [], [], []
    for _ in range(blocks):
        scales.append(rng.randrange(1 << fmt.scale.width))
        subs.append(rng.getrandbits(fmt.subblocks * fmt.subscale_bits) if fmt.subblocks else 0)
        pick = (lambda: rng.getrandbits(element.width)) if rng.random() < 0.3 else (lambda: rng.choice(finite))
        elems.append(pack_word([pick() for _ in range(fmt.block_size)], element.width))
    side = {f"{prefix}_scale": pack_word(scales, fmt.scale_storage_bits),
            f"{prefix}_elems": pack_word(elems, fmt.block_size * element.width)}
    if fmt.subblocks:
        side[f"{prefix}_sub"] = pack_word(subs, fmt.subblocks * fmt.subscale_bits)
    if fmt.tensor_scale is not None:
        significand, exponent = rng.randint(1 << 23, (1 << 24) - 1), rng.randint(-40, 10)
        side[f"{prefix}_tensor_scale"] = fp32_bits(Exact(0, Fraction(significand) * Fraction(2) ** exponent))
    return side


def _nonfinite(element) -> set:
    from mxsim.golden.values import code_sets

    sets = code_sets(element)
    return set(sets["nan"] | sets["inf"])


def _random_dot_vectors(suite, count: int, seed: int, blocks: int = 1) -> list[dict]:
    rng = random.Random(seed)
    return [{**_random_block_side(suite.fa, rng, "a", blocks), **_random_block_side(suite.fb, rng, "b", blocks)}
            for _ in range(count)]


def _random_fp32_word(rng: random.Random) -> int:
    """Any fp32 bit pattern (specials, subnormals, extremes) or a value near a random binade."""
    if rng.random() < 0.2:
        return rng.getrandbits(32)
    exponent = rng.choice([0, 1, 2, 253, 254]) if rng.random() < 0.1 else 127 + rng.randint(-20, 20)
    return rng.getrandbits(1) << 31 | exponent << 23 | rng.getrandbits(23)


def _random_quantize_vectors(suite, count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    k = suite.fmt.block_size
    rows = []
    for _ in range(count):
        words = [_random_fp32_word(rng) for _ in range(k)]
        if rng.random() < 0.5:  # a block of one binade: finite, ties and carries at one scale
            words = [w & 0x807FFFFF | (127 + rng.randint(-3, 3)) << 23 for w in words]
        row = {"x": pack_word(words, 32)}
        if suite.fmt.tensor_scale is not None:
            row["tensor_scale"] = rng.choice([0x3F800000, (rng.randint(90, 140) << 23) | rng.getrandbits(23)])
        rows.append(row)
    return rows


# --- the comparison ------------------------------------------------------------------------------
def _columns(suite, rows: list[dict]) -> dict:
    return {f.name: [row[f.name] for row in rows] for f in suite.inputs}


def _assert_batch_matches(suite, rows: list[dict], batch) -> None:
    outputs, flags = batch(_columns(suite, rows))
    assert sorted(outputs) == sorted(f.name for f in suite.outputs)
    assert len(flags) == len(rows) and all(len(v) == len(rows) for v in outputs.values())
    for i, row in enumerate(rows):
        expected, classes = suite.compute(row)
        got = {name: outputs[name][i] for name in expected}
        assert got == expected, f"{suite.kind}/{suite.name} vector {i} {row}: fast {got}, reference {expected}"
        assert flags[i] == flag_bits(classes), (
            f"{suite.kind}/{suite.name} vector {i}: fast {class_names(flags[i])}, reference {sorted(classes)}")


def _stimulus(suite) -> list[dict]:
    return [row for row, _ in suite.stimulus(random.Random(f"test_golden_batch:{suite.name}"), 2)]


@pytest.mark.parametrize("params", DOT, ids=lambda p: suite_from_spec("dot", **p).name)
def test_dot_batch_is_compute(params):
    suite = suite_from_spec("dot", **params)
    _assert_batch_matches(suite, _stimulus(suite) + _random_dot_vectors(suite, 300, 1), suite._batch)


@pytest.mark.parametrize("params", DOTGENERAL, ids=lambda p: suite_from_spec("dotgeneral", **p).name)
def test_dotgeneral_batch_is_compute(params):
    suite = suite_from_spec("dotgeneral", **params)
    rows = _stimulus(suite) + _random_dot_vectors(suite, 150, 2, suite.n_blocks)
    _assert_batch_matches(suite, rows, suite._batch)


@pytest.mark.parametrize("params", QUANTIZE, ids=lambda p: suite_from_spec("quantize", **p).name)
def test_quantize_batch_is_compute(params):
    suite = suite_from_spec("quantize", **params)
    _assert_batch_matches(suite, _stimulus(suite) + _random_quantize_vectors(suite, 300, 3), suite._batch)


# --- the fallback and the interface --------------------------------------------------------------
@pytest.mark.parametrize("kind, params", [
    ("dotgeneral", {"block_a": "mxfp8_e4m3", "n_blocks": 2,
                    "accumulator": {"mode": "aligned", "frac_bits": 25, "accumulate": "fused", "step": 16}}),
    ("dot", {"block_a": "mxint8", "accumulator": {"output": "fp16", "output_overflow": "saturate", "nan_bits": 0x7FFF}}),
    ("dotgeneral", {"block_a": "mxfp8_e4m3", "accumulator": {"output_overflow": "ieee", "output_rounding": "rtz"}}),
])
def test_what_the_fast_path_does_not_model_goes_through_the_reference(kind, params):
    suite = suite_from_spec(kind, **params)
    _assert_batch_matches(suite, _stimulus(suite)[-60:], suite.compute_batch)


# the fused units of docs/numerics.md section 6.1: the first 300 vectors of their level-2 stimulus (the directed
# rows: aimed roundings, C distances, zeros, Inf positions) through compute_batch, which takes them
# on the fast path (mxsim.golden.kinds.fused_batch) or hands them to the reference (configurations it does
# not model: steps of 11, INT8 as integers, CDNA3's partial sums and late C join)
_FNUZ = {"name": "mx_e4m3fnuz", "element": "fp8_e4m3fnuz", "block_size": 32, "scale": "e8m0"}
FUSED_PRESETS = [
    {"block_a": "mxfp8_e5m2", "preset": "mxdotp_fp8_bf16", "steps": True},
    {"block_a": "mxfp6_e3m2", "preset": "mxdotp_fp6", "steps": True},
    {"block_a": "mxfp4_e2m1", "preset": "mxdotp_fp4_bf16", "steps": True},
    {"block_a": "mxint8", "preset": "mxdotp_int8", "steps": True},
    {"block_a": "mxfp8_e4m3", "block_b": "mxfp8_e5m2", "preset": "ada_fp8_mma_f16", "unit_scales": True,
     "steps": True},
    {"block_a": "mxfp8_e5m2", "block_b": "mxfp4_e2m1", "preset": "rtx_blackwell_f8f6f4", "unit_scales": True},
    {"block_a": _FNUZ, "preset": "cdna3_fp8_mfma", "unit_scales": True, "steps": True},
]


@pytest.mark.parametrize("params", FUSED_PRESETS, ids=lambda p: p["preset"])
def test_fused_preset_batch_is_compute(params):
    suite = suite_from_spec("dot", exhaustive_pairs=False, **params)
    _assert_batch_matches(suite, _stimulus(suite)[:300], suite.compute_batch)


@pytest.mark.parametrize("kind, params, field, bad", [
    ("dot", {"block_a": "nvfp4"}, "a_scale", 0x80),  # not a UE4M3 code
    ("quantize", {"block": "nvfp4"}, "tensor_scale", 0),  # a zero tensor scale (for a block that is not NaN)
])
def test_an_invalid_vector_raises_what_the_reference_raises(kind, params, field, bad):
    suite = suite_from_spec(kind, **params)
    rows = _stimulus(suite)[:5]
    rows[1] = {**rows[1], field: bad}
    with pytest.raises(Exception) as reference:
        for row in rows:
            suite.compute(row)
    with pytest.raises(type(reference.value), match="^" + re.escape(str(reference.value)) + "$"):
        suite.compute_batch(_columns(suite, rows))


def test_compute_batch_takes_numpy_columns_and_empty_batches():
    suite = suite_from_spec("dot", block_a="mxfp4_e2m1")
    rows = _stimulus(suite)[:50]
    columns = _columns(suite, rows)
    as_arrays = {name: (np.array(v, dtype=np.uint64) if name.endswith("scale") else v) for name, v in columns.items()}
    assert suite.compute_batch(as_arrays) == suite.compute_batch(columns)
    outputs, flags = suite.compute_batch({name: [] for name in columns})
    assert flags == [] and all(v == [] for v in outputs.values())
    quantize = suite_from_spec("quantize", block="mxfp8_e4m3")
    outputs, flags = quantize.compute_batch({"x": []})
    assert flags == [] and all(v == [] for v in outputs.values())


@pytest.mark.parametrize("width, count", [(1, 8), (4, 32), (6, 32), (7, 3), (8, 32), (16, 4), (32, 32), (32, 1), (64, 2)])
def test_items_round_trip_through_words(width, count):
    rng = random.Random(width * 100 + count)
    items = [[rng.getrandbits(width) for _ in range(count)] for _ in range(20)]
    words = [pack_word(row, width) for row in items]
    assert unpack_items(words, width, count).tolist() == items
    assert unpack_items(words, width, count).tolist() == [unpack_word(w, width, count) for w in words]
    assert pack_items(np.array(items, dtype=np.uint64), width) == words


def test_an_exactly_zero_block_value_is_positive_zero():
    """A zero NVFP4 scale times a negative register: the exact block value is 0, +0 (the module
    docstring's rule; the fast path agrees)."""
    a = QuantizedBlock(0x00, (), (0x9,) + (0,) * 15)  # scale 0, element -0.5
    b = QuantizedBlock(0x38, (), (0x2,) + (0,) * 15)  # scale 1, element 1.0
    r = ref_dot.dot(a, b, "nvfp4")
    assert r.accumulator < 0 and r.exact == Exact(0) and r.code == 0
