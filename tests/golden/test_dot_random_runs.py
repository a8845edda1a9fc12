"""Random vectors beyond the catalogue of dot and dotgeneral suites drawn a run of 256 at a time
(``DotSuite.random_run``, mxsim.golden.compute.pipeline): well-formed, from the documented
distribution, each C checked against the first step's D that the reference model computes here,
and the same vectors whichever chunk asks for them.

The expected values come from outside the code under test: the reference decoder
(``mxsim.ref.decode``) and the reference DotGeneral (``mxsim.ref.dot.dot_general``) on the
vector's blocks, the code sets and odds of the docstring (``random_inputs``'s mix), counted.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mxsim.golden.compute import pipeline
from mxsim.golden.kinds.fused_batch import exact_outputs
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.golden.values import unpack_word
from mxsim.options.accumulate import PRESETS
from mxsim.ref import dot as ref_dot
from mxsim.ref.decode import decode
from mxsim.ref.encode import encode
from mxsim.ref.exact import Exact, floor_log2
from mxsim.ref.output import storage_format

RUNS = 6  # 1,536 vectors per suite

SUITES = {
    "hopper_unit_scales": ("dot", {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma", "unit_scales": True}),
    "blackwell_mxf8f6f4_n2": ("dotgeneral", {"block_a": "mxfp8_e4m3", "block_b": "mxfp4_e2m1",
                                             "preset": "blackwell_mxf8f6f4", "n_blocks": 2}),
    "blackwell_mxf4nvf4_n4": ("dotgeneral", {"block_a": "nvfp4", "preset": "blackwell_mxf4nvf4", "n_blocks": 4}),
    "mxdotp_steps": ("dot", {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}),
    "separate_c": ("dot", {"block_a": "mxfp8_e4m3", "c_input": True,
                           "accumulator": {"mode": "aligned", "frac_bits": 13, "width": 24}}),
    "separate_nvfp4_n2": ("dotgeneral", {"block_a": "nvfp4", "n_blocks": 2}),
    "mx9_unit_scales": ("dot", {"block_a": "mx9", "unit_scales": True}),
}

FP32_MAX = 0x7F7FFFFF
NANS = {0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FC00001}
WEIGHT = 17  # the C kinds' weights add up to 17: near 5, cancel 3, dominant 2, zero 2, one each for the rest


def _run_rows(suite) -> list[dict]:
    return [row for r in range(RUNS) for row in suite.random_run(pipeline.run_generator(3, suite, r), 256 * r, 256)]


def _blocks(suite, row: dict, side: str, fmt):
    """(scale codes, sub-scale codes or None, element codes per block) of one side of a vector."""
    n = suite.vector_blocks
    scales = unpack_word(row[f"{side}_scale"], fmt.scale_storage_bits, n)
    subs = unpack_word(row[f"{side}_sub"], fmt.subscale_bits, n * fmt.subblocks) if fmt.subblocks else None
    codes = unpack_word(row[f"{side}_elems"], fmt.element.width, n * fmt.block_size)
    k = fmt.block_size
    return scales, subs, [codes[j * k : (j + 1) * k] for j in range(n)]


def _sets(element) -> dict[str, set[int]]:
    """The code sets of the documented mix, from the reference decoder."""
    values = {c: decode(c, element) for c in range(1 << element.width)}
    finite = [c for c, v in values.items() if v.is_finite]
    largest = max(values[c].magnitude for c in finite)
    small = sorted(finite, key=lambda c: values[c].magnitude)[: max(4, len(finite) // 8)]
    return {"finite": set(finite), "max": {c for c in finite if values[c].magnitude == largest}, "small": set(small),
            "special": {c for c, v in values.items() if not v.is_finite}}


def _block_kind(codes, sets) -> str:
    if set(codes) <= sets["max"]:
        return "max"
    if set(codes) <= sets["small"]:
        return "small"
    if sum(c in sets["special"] for c in codes) == 1:
        return "special"  # or a normal block with one of its 3 % arbitrary codes non-finite: counted below
    return "normal"


@pytest.mark.parametrize("name", sorted(SUITES))
def test_run_vectors_are_well_formed_and_follow_the_documented_mix(name):
    kind, params = SUITES[name]
    suite = suite_from_spec(kind, **params)
    rows = _run_rows(suite)
    assert len(rows) == 256 * RUNS
    for row in rows[:64]:
        assert set(row) == {f.name for f in suite.inputs}
        for f in suite.inputs:
            assert isinstance(row[f.name], int) and 0 <= row[f.name] < 1 << f.bits, f.name
    counts = {side: {"max": 0, "small": 0, "special": 0, "normal": 0} for side in "ab"}
    code_sets = {side: _sets(fmt.element) for side, fmt in (("a", suite.fa), ("b", suite.fb))}
    for row in rows:
        for side, fmt in (("a", suite.fa), ("b", suite.fb)):
            scales, subs, blocks = _blocks(suite, row, side, fmt)
            if suite.unit_scales:
                assert scales == [encode(1, fmt.scale)] * suite.vector_blocks
            elif fmt.scale.name == "e8m0":
                assert all(127 - 8 <= s <= 127 + 8 for s in scales), scales
            else:
                assert all(decode(s, fmt.scale).is_finite for s in scales), scales
            for codes in blocks:
                counts[side][_block_kind(codes, code_sets[side])] += 1
            ts = row.get(f"{side}_tensor_scale")
            if ts is not None:  # m / 2^s, m a 24-bit significand, s in 20 .. 40: fp32 exponent 3 .. -17
                assert ts >> 31 == 0 and 127 - 17 <= (ts >> 23) & 0xFF <= 127 + 3, hex(ts)
        if suite.fa.tensor_scale is not None and suite.tensor_scales:
            assert "a_tensor_scale" in row and "b_tensor_scale" in row
    total = len(rows) * suite.vector_blocks
    share = {side: {k: v / total for k, v in c.items()} for side, c in counts.items()}
    # a: normal 6 in 9, max, small, special 1 in 9 each (special only where the format has non-finite
    # codes); b: normal, max, small 1 in 3 each
    has_special = bool(code_sets["a"]["special"])
    assert abs(share["a"]["max"] - 1 / 9) < 0.03 and abs(share["a"]["small"] - 1 / 9) < 0.03, share
    assert abs(share["a"]["special"] - (1 / 9 if has_special else 0)) < 0.03, share
    assert abs(share["b"]["max"] - 1 / 3) < 0.04 and abs(share["b"]["small"] - 1 / 3) < 0.04, share
    assert share["b"]["special"] < 0.02, share


def _first_d(suite, row) -> Exact:
    """The first step's D with C = +0 (the Dot's result for separate accumulation), by the reference."""
    blocks_a, blocks_b, ta, tb = suite._vector_blocks(row)
    general = ref_dot.dot_general(blocks_a, blocks_b, suite.fa, suite.fb, suite.acc, tensor_scale_a=ta,
                                  tensor_scale_b=tb, c=Exact(0))
    code = general.steps[0] if general.steps else general.code
    return decode(code, storage_format(suite.acc))


def _fp32_bits(sign: int, magnitude) -> int:
    """fp32 bits of an fp32 value (sign, exact magnitude), from the reference encoder."""
    return encode(Exact(sign, magnitude), storage_format(PRESETS["blackwell_mxf8f6f4"]))


@pytest.mark.parametrize("name", [n for n in sorted(SUITES) if suite_from_spec(*SUITES[n][:1], **SUITES[n][1]).has_c])
def test_run_c_follows_its_kinds_and_aims_at_the_references_first_step(name):
    """Each C kind turns up at its weight's share (within 3.5 points), and the aimed kinds really
    are aimed: C = -D (or one ulp off) for the cancel kind, C within 2^+-25 of |D| for near, where
    D is the first step's D with C = +0 computed here by the reference, vector by vector."""
    kind, params = SUITES[name]
    suite = suite_from_spec(kind, **params)
    rows = _run_rows(suite)
    n = len(rows)
    seen = {k: 0 for k in ("zero", "nan", "inf", "max", "subnormal", "cancel", "near", "other")}
    aimed = 0  # vectors whose D is finite and nonzero (only those get a cancel or near C aimed at D)
    for row in rows:
        c, d = row["c"], _first_d(suite, row)
        magnitude_bits, field = c & 0x7FFFFFFF, (c >> 23) & 0xFF
        live = d.is_finite and d.magnitude != 0
        aimed += live
        if magnitude_bits == 0:
            seen["zero"] += 1
        elif c in NANS:
            seen["nan"] += 1
        elif magnitude_bits == 0x7F800000:
            seen["inf"] += 1
        elif magnitude_bits in (FP32_MAX, FP32_MAX - 1, FP32_MAX - 2):
            seen["max"] += 1
        elif field == 0:
            seen["subnormal"] += 1
        elif live and abs(c - _fp32_bits(1 - d.sign, d.magnitude)) <= 1:
            seen["cancel"] += 1
        elif live and field != 0xFF and abs((field - 127) - floor_log2(d.magnitude)) <= 25:
            seen["near"] += 1
        else:
            seen["other"] += 1
    share = {k: v / n for k, v in seen.items()}
    live = aimed / n
    assert abs(share["zero"] - 2 / WEIGHT) < 0.035, share
    for single in ("inf", "max"):
        assert abs(share[single] - 1 / WEIGHT) < 0.025, share
    assert abs(share["nan"] - 1 / WEIGHT) < 0.025, share  # a random 'bits' C is a NaN 1 time in 256
    # subnormal: its own kind, plus near or cancel C aimed at a subnormal D
    assert share["subnormal"] >= 1 / WEIGHT - 0.025, share
    assert abs(share["cancel"] - 3 / WEIGHT * live) < 0.035, (share, live)
    # near: 5 in 17 of the live vectors (a dominant C of a max-anchored suite may land within 2^25 too)
    assert share["near"] >= 5 / WEIGHT * live - 0.035, (share, live)
    assert live > 0.5 and all(seen.values()), seen


@pytest.mark.parametrize("name", ["blackwell_mxf4nvf4_n4", "mxdotp_steps", "separate_nvfp4_n2"])
def test_a_run_is_the_same_whichever_chunk_asks_for_it(name):
    """Vectors beyond the catalogue depend on their line alone: a slice starting inside a run and
    crossing into the next equals that slice of the whole, and a run drawn twice is the same."""
    kind, params = SUITES[name]
    suite = suite_from_spec(kind, **params)
    c = suite.catalogue_size(1)
    plan = pipeline.plan(suite, 1, c + 700)
    whole = [row for row, _ in pipeline.vectors(suite, 5, 1, plan, c)]
    part = [row for row, _ in pipeline.vectors(suite, 5, 1, plan, c + 300, c + 600)]
    assert len(whole) == 700 and part == whole[300:600]
    again = suite.random_run(pipeline.run_generator(5, suite, 1), c + 256, 256)
    assert again == whole[256:512]
    other_seed = [row for row, _ in pipeline.vectors(suite, 6, 1, plan, c, c + 256)]
    assert sum(a == b for a, b in zip(other_seed, whole)) == 0


@pytest.mark.parametrize("preset", ["blackwell_mxf8f6f4", "hopper_fp8_wgmma", "hopper_fp8_wgmma_f16",
                                    "mxdotp_fp8_bf16"])
def test_exact_outputs_are_the_reference_decoders_values(preset):
    """fused_batch.exact_outputs (fp32, fp32_e8m13 in fp32 storage, fp16, bf16) gives what the
    reference decoder gives for every code class: zeros, subnormals, normals, the largest, Inf, NaN."""
    acc = PRESETS[preset]
    storage = storage_format(acc)
    width, m = storage.width, storage.mantissa_bits
    top = 1 << (width - 1)
    inf = ((1 << (width - 1 - m)) - 1) << m
    codes = [0, top, 1, top | 1, (1 << m) - 1, 1 << m, inf - 1, top | (inf - 1), inf, top | inf, inf | 1, top | inf | 1]
    codes += random.Random(preset).sample(range(1 << width), 2000)
    got = exact_outputs(np.array(codes), acc)
    for code, value in zip(codes, got):
        want = decode(code, storage)
        assert (value.kind, value.sign) == (want.kind, want.sign), hex(code)
        if want.is_finite:
            assert value.magnitude == want.magnitude, hex(code)
