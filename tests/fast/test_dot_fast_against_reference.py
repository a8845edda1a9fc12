"""The vectorized dot-product datapath (mxsim.fast.dot) against the reference model (mxsim.ref.dot).

Oracles:

* the reference :func:`mxsim.ref.dot.dot_general` / :func:`mxsim.ref.dot.dot` (integers and
  Fractions only), compared field by field: each block's output code, integer register,
  lsb_exponent, anchor and exact value, and the DotGeneral's output code;
* hand-derived registers and results for each internal route of the fast path;
* an independent float64 computation (NumPy, with ml_dtypes decoding the element codes) for
  Gaussian data where the float64 dot is provably exact.

Hypothesis example counts are modest so that the file runs in well under 90 s; set
MXSIM_DOT_EXAMPLES=N to run N examples per property instead (e.g. 2000 for a soak run).
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from fractions import Fraction
from functools import cache

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxsim
from mxsim import ref
from mxsim.options.accumulate import PRESETS, Accumulator
from mxsim.fast import dot as fast_dot
from mxsim.fast import dot_kernel
from mxsim.fast import output as fast_output
from mxsim.fast.chunks import BLOCK_CHUNK
from mxsim.fast.dot import Operand, dot_blocks, dot_general_blocks
from mxsim.formats import FORMATS, get_format
from mxsim.ref import dot as ref_dot
from mxsim.ref.stored_block import QuantizedBlock

_OVERRIDE = os.environ.get("MXSIM_DOT_EXAMPLES")


def _settings(default: int):
    n = int(_OVERRIDE) if _OVERRIDE else default
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


BLOCK_FORMATS = sorted(name for name, f in FORMATS.items() if f.kind == "block")
PAIRS = [(a, b) for a in BLOCK_FORMATS for b in BLOCK_FORMATS
         if get_format(a).block_size == get_format(b).block_size]
MIXED_PAIRS = [("mxfp8_e4m3", "mxfp8_e5m2"), ("mxfp8_e5m2", "mxfp8_e4m3"), ("mx9", "mx6"), ("mx6", "mx9"),
               ("nvfp4", "nvfp4"), ("nvfp4", "mx9"), ("msfp12", "nvfp4"), ("mxint8", "mxfp8_e5m2"),
               ("mxfp6_e2m3", "mxfp4_e2m1"), ("mx4", "msfp16")]
OUTPUTS = ("fp32", "bf16", "fp16")
ROUNDINGS = ("rne", "rna", "rtz", "rup", "rdn")
FP32_SCALES = [Fraction(float(np.float32(v))) for v in (1.0, 0.75, 3.0e-3, 1.7e-38, 1e-45, 3.4e38, 448.0, 1 / 3)]


def test_catalogue_pairs():
    """The generated pairs cover the catalogue: every pair of formats with one block size."""
    named = {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8", "mx9", "mx6", "mx4",
             "msfp16", "msfp12", "nvfp4"}
    assert named <= set(BLOCK_FORMATS)
    sizes = [get_format(f).block_size for f in BLOCK_FORMATS]
    assert len(PAIRS) == sum(sizes.count(k) ** 2 for k in set(sizes))
    assert all(pair in PAIRS for pair in MIXED_PAIRS)


# --- code classes of each element format (used to bias the generated data) ------------------------
@cache
def code_classes(element_name: str) -> dict:
    """Finite, special, zero, largest-magnitude and smallest-nonzero codes, and the code of -x."""
    fmt = get_format(element_name, kind="element")
    values = [ref.decode(c, fmt) for c in range(1 << fmt.width)]
    finite = [c for c, v in enumerate(values) if v.is_finite]
    by_value = {(values[c].sign, values[c].magnitude): c for c in finite}
    top = max(values[c].magnitude for c in finite)
    low = min(values[c].magnitude for c in finite if values[c].magnitude)
    negate = np.arange(1 << fmt.width)
    for c in finite:
        negate[c] = by_value.get((1 - values[c].sign, values[c].magnitude), c)
    return {
        "finite": np.array(finite),
        "special": np.array([c for c, v in enumerate(values) if not v.is_finite], dtype=np.int64),
        "zero": [c for c in finite if values[c].magnitude == 0],
        "max": [c for c in finite if values[c].magnitude == top],
        "min": [c for c in finite if values[c].magnitude == low],
        "negate": negate,
    }


def interesting_codes(element_name: str) -> list[int]:
    c = code_classes(element_name)
    return sorted(set(c["zero"] + c["max"] + c["min"] + [int(x) for x in c["special"]]))


SCALE_EDGES = {"e8m0": [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF], "ue4m3": [0x00, 0x01, 0x38, 0x7E, 0x7F]}
SCALE_UNITY = {"e8m0": 127, "ue4m3": 0x38}


def make_operand(rng, fmt_name, n, *, palette=(), p_palette=0.0, p_zero=0.0, p_special=0.0, p_edge_scale=0.0,
                 scale_spread=4, tensor_scale=None, subscale_mode="random", cancel=None) -> Operand:
    """n random blocks: finite codes, then a palette, zeros and specials mixed in with the given
    probabilities; scales near 1.0 (+- 2^scale_spread) or edge codes (0, max, NaN ...)."""
    fmt = get_format(fmt_name, kind="block")
    classes = code_classes(fmt.element.name)
    k = fmt.block_size
    codes = rng.choice(classes["finite"], size=(n, k))
    if len(palette):
        codes = np.where(rng.random((n, k)) < p_palette, rng.choice(np.array(palette), size=(n, k)), codes)
    codes = np.where(rng.random((n, k)) < p_zero, rng.choice(classes["zero"], size=(n, k)), codes)
    if classes["special"].size:
        codes = np.where(rng.random((n, k)) < p_special, rng.choice(classes["special"], size=(n, k)), codes)
    scale_name = fmt.scale.name
    step = 1 if scale_name == "e8m0" else 8  # one binade of UE4M3 is 8 codes
    scales = SCALE_UNITY[scale_name] + step * rng.integers(-scale_spread, scale_spread + 1, size=n)
    scales = np.clip(scales, 0, (1 << fmt.scale.width) - 1)  # the spread may run past the ends
    scales = np.where(rng.random(n) < p_edge_scale, rng.choice(SCALE_EDGES[scale_name], size=n), scales)
    subscales = None
    if fmt.subblocks:
        if subscale_mode == "random":
            subscales = rng.integers(0, 1 << fmt.subscale_bits, size=(n, fmt.subblocks))
        else:
            subscales = np.full((n, fmt.subblocks), (1 << fmt.subscale_bits) - 1 if subscale_mode == "max" else 0)
    if cancel is not None:  # second half = first half ("same") or its negation ("negate")
        half = k // 2
        first = codes[:, :half]
        codes[:, half:] = classes["negate"][first] if cancel == "negate" else first
        if subscales is not None:
            sb = fmt.subblocks // 2
            subscales[:, sb:] = subscales[:, :sb]
    dtype = np.uint8 if fmt.element.width <= 8 else np.uint16
    return Operand(fmt, scales.astype(np.uint8), None if subscales is None else subscales.astype(np.uint8),
                   codes.astype(dtype), tensor_scale)


def ref_block(op: Operand, i: int) -> QuantizedBlock:
    """Block i as the reference model's QuantizedBlock (built here, not by Operand.block)."""
    subs = () if op.subscales is None else tuple(int(t) for t in op.subscales[i])
    return QuantizedBlock(int(op.scales[i]), subs, tuple(int(c) for c in op.codes[i]))


def describe(a: Operand, b: Operand, acc, i=None) -> str:
    text = f"{a.fmt.name} x {b.fmt.name}, {acc}, ts=({a.tensor_scale}, {b.tensor_scale})"
    if i is not None:
        text += f"\n  block a {ref_block(a, i)}\n  block b {ref_block(b, i)}"
    return text


def assert_block_equal(fast: fast_dot.BlockDots, pos, want: ref_dot.BlockDot, context: str) -> None:
    got = (int(fast.codes[pos]), int(fast.accumulator[pos]), int(fast.lsb_exponent[pos]), int(fast.anchor[pos]))
    expected = (want.code, want.accumulator, want.lsb_exponent, want.anchor)
    assert got == expected, f"(code, accumulator, lsb_exponent, anchor) {got} != reference {expected}: {context}"
    special = int(fast.special[pos])
    if want.exact.is_nan:
        assert special == fast_output.NAN, context
    elif want.exact.is_inf:
        assert special == (fast_output.NEG_INF if want.exact.sign else fast_output.POS_INF), context
    else:
        assert special == fast_output.FINITE, context
        value = Fraction(int(fast.significand[pos])) * Fraction(2) ** int(fast.exponent[pos])
        assert value == want.exact.value, f"block value {value} != reference {want.exact}: {context}"


def check_general(a: Operand, b: Operand, acc: Accumulator, rows: int) -> None:
    """dot_general_blocks == ref.dot_general on every row, every block field and the row code."""
    codes, blocks = dot_general_blocks(a, b, acc, rows)
    n = a.codes.shape[0] // rows
    out_dtype = np.uint32 if acc.output_storage == "fp32" else np.uint16
    assert codes.shape == (rows,) and codes.dtype == out_dtype
    assert blocks.codes.shape == (rows, n) and blocks.accumulator.shape == (rows, n)
    for r in range(rows):
        indices = range(r * n, (r + 1) * n)
        want = ref_dot.dot_general([ref_block(a, i) for i in indices], [ref_block(b, i) for i in indices],
                                   a.fmt, b.fmt, acc, tensor_scale_a=a.tensor_scale, tensor_scale_b=b.tensor_scale)
        for j, block in enumerate(want.blocks):
            assert_block_equal(blocks, (r, j), block, describe(a, b, acc, r * n + j))
        assert int(codes[r]) == want.code, (
            f"row {r}: DotGeneral code {int(codes[r]):#x} != reference {want.code:#x}: {describe(a, b, acc)}")


def check_blocks(a: Operand, b: Operand, acc: Accumulator, indices) -> fast_dot.BlockDots:
    """dot_blocks == ref.dot on the given block indices."""
    got = dot_blocks(a, b, acc)
    assert got.codes.shape == (a.codes.shape[0],)
    for i in indices:
        i = int(i)
        want = ref_dot.dot(ref_block(a, i), ref_block(b, i), a.fmt, b.fmt, acc,
                           tensor_scale_a=a.tensor_scale, tensor_scale_b=b.tensor_scale)
        assert_block_equal(got, i, want, f"block {i}: " + describe(a, b, acc, i))
    return got


def kernel(fmt_a, fmt_b, acc):
    return dot_kernel._DotKernel(get_format(fmt_a, kind="block"), get_format(fmt_b, kind="block"), acc)


def route_name(fmt_a, fmt_b, acc) -> str:
    return kernel(fmt_a, fmt_b, acc).route.__name__


# --- hypothesis strategies -------------------------------------------------------------------------
@st.composite
def accumulators(draw, modes=("exact", "aligned", "fp32_sequential"), large_frac=True):
    mode = draw(st.sampled_from(modes))
    kw = {}
    if mode == "aligned":
        # 0..40 (the float route), 41..56 (int64 shifts) and 55..70 (the reference fallback)
        frac = draw(st.one_of(st.integers(0, 40), st.integers(41, 56), st.integers(55, 70)) if large_frac
                    else st.integers(0, 40))
        kw["frac_bits"] = frac
        kw["width"] = draw(st.one_of(st.none(), st.integers(2, 64),
                                     st.integers(-3, 8).map(lambda d: min(max(frac + d, 2), 64))))
        kw["shift_rounding"] = draw(st.sampled_from(("truncate", "rne")))
        kw["overflow"] = draw(st.sampled_from(("saturate", "wrap")))
    return Accumulator(mode=mode, output=draw(st.sampled_from(OUTPUTS)),
                       output_rounding=draw(st.sampled_from(ROUNDINGS)), ftz=draw(st.booleans()),
                       across_blocks=draw(st.sampled_from(("fp32", "exact"))), **kw)


tensor_scales = st.one_of(
    st.none(),
    st.sampled_from(FP32_SCALES),
    st.floats(min_value=float(np.float32(1e-45)), max_value=float(np.finfo(np.float32).max), width=32)
    .map(lambda v: Fraction(float(np.float32(v)))),
)


@st.composite
def operands(draw, fmt_name, n_total, cancel=None):
    fmt = get_format(fmt_name, kind="block")
    element = fmt.element.name
    palette = draw(st.lists(st.one_of(st.sampled_from(interesting_codes(element)),
                                      st.integers(0, (1 << fmt.element.width) - 1)), min_size=1, max_size=6))
    negate = code_classes(element)["negate"]
    palette = palette + [int(negate[c]) for c in palette]
    return make_operand(
        np.random.default_rng(draw(st.integers(0, 2**32 - 1))), fmt_name, n_total,
        palette=palette,
        p_palette=draw(st.sampled_from((0.0, 0.3, 0.9, 1.0))),
        p_zero=draw(st.sampled_from((0.0, 0.0, 0.5, 0.97))),
        p_special=draw(st.sampled_from((0.0, 0.0, 0.0, 0.01, 0.1))),
        p_edge_scale=draw(st.sampled_from((0.0, 0.0, 0.2, 1.0))),
        scale_spread=draw(st.sampled_from((0, 3, 12, 60))),
        tensor_scale=draw(tensor_scales) if fmt.tensor_scale is not None else None,
        subscale_mode=draw(st.sampled_from(("random", "zero", "max"))),
        cancel=cancel,
    )


@st.composite
def cases(draw, pairs=PAIRS, modes=("exact", "aligned", "fp32_sequential"), large_frac=True):
    fmt_a, fmt_b = draw(st.sampled_from(pairs))
    rows, n = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    cancel = draw(st.sampled_from((None, None, None, "cancel")))
    a = draw(operands(fmt_a, rows * n, cancel="negate" if cancel else None))
    b = draw(operands(fmt_b, rows * n, cancel="same" if cancel else None))
    return a, b, draw(accumulators(modes, large_frac)), rows


# --- 1. hypothesis: fast == reference ---------------------------------------------------------------
@_settings(150)
@given(cases())
def test_fast_equals_reference_all_pairs(case):
    check_general(*case)


@_settings(100)
@given(cases(pairs=MIXED_PAIRS))
def test_fast_equals_reference_mixed_pairs_and_tensor_scales(case):
    check_general(*case)


@_settings(100)
@given(cases(modes=("aligned",)))
def test_fast_equals_reference_aligned(case):
    check_general(*case)


@_settings(60)
@given(cases(modes=("fp32_sequential",)))
def test_fast_equals_reference_fp32_sequential(case):
    check_general(*case)


# Deterministic sweep: every catalogue pair under each preset and a few odd configurations, so that
# no pair depends on Hypothesis' luck.
SWEEP_ACCUMULATORS = [acc for acc in PRESETS.values() if acc.accumulate == "separate"] + [
    Accumulator(mode="aligned", frac_bits=4, width=7, overflow="wrap", shift_rounding="rne", output="bf16",
                output_rounding="rna", across_blocks="exact"),
    Accumulator(mode="aligned", frac_bits=0, width=2, output="fp16", output_rounding="rdn", ftz=True),
    Accumulator(output="fp16", output_rounding="rup", ftz=True),
]


@pytest.mark.parametrize("fmt_a,fmt_b", PAIRS)
def test_fast_equals_reference_sweep(fmt_a, fmt_b):
    rng = np.random.default_rng(zlib.crc32(f"{fmt_a}x{fmt_b}".encode()))
    for i, acc in enumerate(SWEEP_ACCUMULATORS):
        kw = {"p_zero": 0.2, "p_special": 0.01 if i % 2 else 0.0, "p_edge_scale": 0.1 if i == 3 else 0.0, "scale_spread": 3}
        a = make_operand(rng, fmt_a, 4, tensor_scale=FP32_SCALES[i % len(FP32_SCALES)]
                         if get_format(fmt_a).tensor_scale else None, **kw)
        b = make_operand(rng, fmt_b, 4, tensor_scale=Fraction(3, 8) if get_format(fmt_b).tensor_scale else None, **kw)
        check_general(a, b, acc, rows=2)


# --- 2. the internal routes ----------------------------------------------------------------------
def codes_of(values, ml_type) -> np.ndarray:
    """Element codes of exactly representable values, from ml_dtypes (independent of mxsim)."""
    array = np.array(values, dtype=np.float64)
    codes = array.astype(ml_type)
    assert np.array_equal(codes.astype(np.float64), array), "not representable"
    return codes.view(np.uint8)


def unit_operand(fmt_name, codes, scale=127, subscales=None, tensor_scale=None) -> Operand:
    codes = np.atleast_2d(np.asarray(codes, dtype=np.uint8))
    n = codes.shape[0]
    return Operand(get_format(fmt_name, kind="block"), np.full(n, scale, np.uint8),
                   None if subscales is None else np.asarray(subscales, np.uint8).reshape(n, -1), codes, tensor_scale)


def fp32_code(x: float) -> int:
    return int(np.array(x, dtype=np.float32).view(np.uint32))


A = Accumulator
# (format a, format b, accumulator, route, attributes of the kernel): every route of
# mxsim.fast.dot, each with and without its variations (float32/float64 sums, clamp or not).
ROUTES = [
    ("mxfp4_e2m1", "mxfp4_e2m1", A(), "_exact_pairs", {"sum_dtype": "float32"}),
    ("nvfp4", "msfp12", A(output="bf16"), "_exact_pairs", {"sum_dtype": "float32"}),
    ("mxfp8_e5m2", "mxfp4_e2m1", A(across_blocks="exact"), "_exact_pairs", {"sum_dtype": "float64"}),
    ("mxint8", "mxint8", A(), "_exact_floats", {"sum_dtype": "float32"}),
    ("mx9", "mx6", A(output="fp16"), "_exact_floats", {"sum_dtype": "float32"}),
    ("mxfp8_e4m3", "mxfp8_e4m3", A(), "_exact_floats", {"sum_dtype": "float64"}),
    ("mxfp8_e5m2", "mxint8", A(output_rounding="rtz"), "_exact_floats", {"sum_dtype": "float64"}),
    ("mxfp8_e5m2", "mxfp8_e5m2", A(), "_exact_python_ints", {"register_dtype": object}),
    ("mxfp8_e4m3", "mxfp8_e5m2", A(across_blocks="exact"), "_exact_python_ints", {"sum_dtype": None}),
    ("mxfp8_e4m3", "mxfp8_e4m3", A(mode="aligned", frac_bits=10, width=8), "_aligned_floats", {"clamp": True}),
    ("mx9", "mx6", A(mode="aligned", frac_bits=9, width=10, overflow="wrap", shift_rounding="rne"), "_aligned_floats", {"clamp": True}),
    ("nvfp4", "nvfp4", A(mode="aligned", frac_bits=13, width=None, shift_rounding="rne"), "_aligned_floats", {"clamp": False}),
    ("mxint8", "mxfp6_e2m3", A(mode="aligned", frac_bits=40, width=64), "_aligned_floats", {"clamp": False}),
    ("mxfp8_e5m2", "mxfp8_e5m2", A(mode="aligned", frac_bits=12, width=14, overflow="saturate"), "_aligned", {"clamp": True}),
    ("mxfp8_e5m2", "mxfp8_e5m2", A(mode="aligned", frac_bits=20, width=23, overflow="wrap", shift_rounding="rne"), "_aligned", {"clamp": True}),
    ("mxfp8_e5m2", "mxfp8_e5m2", A(mode="aligned", frac_bits=30, width=None), "_aligned", {"clamp": False}),
    ("mxfp8_e4m3", "mxfp8_e4m3", A(mode="aligned", frac_bits=50, width=52, shift_rounding="rne"), "_aligned", {"clamp": True}),
    ("mxint8", "mxint8", A(mode="aligned", frac_bits=50, width=None), "_aligned", {"clamp": False}),
    ("mxfp8_e4m3", "mxfp8_e5m2", A(mode="aligned", frac_bits=60, width=80), "_by_reference", {"register_dtype": object}),
    ("mx9", "mx6", A(mode="aligned", frac_bits=64, width=None, shift_rounding="rne"), "_by_reference", {"register_dtype": object}),
    ("nvfp4", "nvfp4", A(mode="aligned", frac_bits=62, width=64, overflow="wrap"), "_by_reference", {"register_dtype": object}),
    ("mxfp8_e4m3", "mxfp8_e5m2", A(mode="fp32_sequential"), "_fp32_sequential", {}),
    ("mx9", "mx6", A(mode="fp32_sequential", output_rounding="rup"), "_fp32_sequential", {}),
    ("mxint8", "mxint8", A(mode="fp32_sequential", across_blocks="exact"), "_fp32_sequential", {}),
]


@pytest.mark.parametrize("fmt_a,fmt_b,acc,route,attributes", ROUTES,
                         ids=[f"{r[3]}-{r[0]}x{r[1]}-{i}" for i, r in enumerate(ROUTES)])
def test_route(fmt_a, fmt_b, acc, route, attributes):
    """The route is taken and equals the reference on data at its bounds: largest codes (the
    route's sum bound), zeros, specials, edge scales, cancelling halves."""
    k = kernel(fmt_a, fmt_b, acc)
    assert k.route.__name__ == route, f"expected route {route}, got {k.route.__name__}"
    for name, value in attributes.items():
        assert getattr(k, name) == value, (name, getattr(k, name))
    rng = np.random.default_rng(zlib.crc32(f"{fmt_a}{fmt_b}{acc}".encode()))
    ts_a = Fraction(float(np.float32(0.3))) if get_format(fmt_a).tensor_scale else None
    ts_b = Fraction(2**-140) if get_format(fmt_b).tensor_scale else None
    ca, cb = (code_classes(get_format(f).element.name) for f in (fmt_a, fmt_b))
    n = 16 if route == "_by_reference" else 48
    for extra in ({}, {"cancel": True}):
        a = make_operand(rng, fmt_a, n, palette=ca["max"] + ca["min"], p_palette=0.6, p_zero=0.1, p_special=0.004,
                         p_edge_scale=0.05, tensor_scale=ts_a, cancel="negate" if extra else None)
        b = make_operand(rng, fmt_b, n, palette=cb["max"], p_palette=0.6, p_zero=0.1, p_special=0.004,
                         tensor_scale=ts_b, subscale_mode="max", cancel="same" if extra else None)
        check_blocks(a, b, acc, range(n))
        check_general(a, b, acc, rows=n // 4)


def test_exact_float32_route_hand_derived():
    """FP4 E2M1 has emin 0 and 1 fraction bit: grid unit 2^-1, product grid 2^-2; 6.0 is 12
    units, so 32 products 6 * 6 give a register of 32 * 144 = 4608 (value 1152)."""
    six = codes_of([6.0] * 32, ml_dtypes.float4_e2m1fn)
    a = unit_operand("mxfp4_e2m1", six)
    got = check_blocks(a, a, Accumulator(), [0])
    assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.anchor[0])) == (4608, -2, 4)
    assert int(got.codes[0]) == fp32_code(1152.0)
    # The same with scales 2^-3 and 2^5: 1152 * 4.
    b = unit_operand("mxfp4_e2m1", six, scale=132)
    a = unit_operand("mxfp4_e2m1", six, scale=124)
    got = check_blocks(a, b, Accumulator(), [0])
    assert int(got.codes[0]) == fp32_code(4608.0) and int(got.accumulator[0]) == 4608


def test_exact_float64_route_hand_derived():
    """E4M3 has emin -6 and 3 fraction bits (grid 2^-9): 448 = 229376 units; MXINT8 0x80 is -2
    (significand 128, 6 fraction bits, grid 2^-6)."""
    big = unit_operand("mxfp8_e4m3", codes_of([448.0] * 32, ml_dtypes.float8_e4m3fn))
    got = check_blocks(big, big, Accumulator(), [0])
    assert int(got.accumulator[0]) == 32 * 229376**2 and int(got.lsb_exponent[0]) == -18
    assert int(got.anchor[0]) == 16  # 448 = 1.75 * 2^8: Ea + Eb = 16
    assert int(got.codes[0]) == fp32_code(32 * 448.0**2)
    m = unit_operand("mxint8", [[0x80] * 32])
    got = check_blocks(m, m, Accumulator(), [0])
    assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.codes[0])) == (524288, -12, fp32_code(128.0))
    # NaN elements: E4M3 0x7F makes the block NaN; its register counts the finite products only.
    codes = codes_of([448.0] * 32, ml_dtypes.float8_e4m3fn)
    codes[5] = 0x7F
    got = check_blocks(unit_operand("mxfp8_e4m3", codes), big, Accumulator(), [0])
    assert int(got.codes[0]) == 0x7FC00000 and int(got.accumulator[0]) == 31 * 229376**2


def test_exact_python_int_route_hand_derived():
    """E5M2 has emin -14 and 2 fraction bits (grid 2^-16); 57344 = 7 * 2^13 is 7 * 2^29 units, so
    the register of 32 products 57344^2 is 32 * 49 * 2^58 (about 2^68.6, beyond int64)."""
    big = unit_operand("mxfp8_e5m2", codes_of([57344.0] * 32, ml_dtypes.float8_e5m2))
    got = check_blocks(big, big, Accumulator(), [0])
    assert int(got.accumulator[0]) == 32 * 49 * 2**58 > 2**63
    assert int(got.lsb_exponent[0]) == -32 and int(got.anchor[0]) == 30
    assert int(got.codes[0]) == fp32_code(49 * 2.0**31)
    # With scales 2^127 each the value (about 2^290) overflows every output: +Inf.
    huge = unit_operand("mxfp8_e5m2", codes_of([57344.0] * 32, ml_dtypes.float8_e5m2), scale=0xFE)
    for output, inf in (("fp32", 0x7F800000), ("bf16", 0x7F80), ("fp16", 0x7C00)):
        for rounding in ROUNDINGS:
            got = check_blocks(huge, huge, Accumulator(output=output, output_rounding=rounding), [0])
            assert int(got.codes[0]) == inf


def test_aligned_clamp_hand_derived():
    """E4M3 1.0 x 1.0 with F = 3 is 8 LSBs per product; a 6-bit register holds [-32, 31].
    Four +1 products then four -1: saturate gives 8, 16, 24, 31 | 23, 15, 7, -1; wrap gives the
    exact sum 0 (wrapping after each addition is wrapping the sum)."""
    ones = unit_operand("mxfp8_e4m3", codes_of([1.0] * 4 + [-1.0] * 4 + [0.0] * 24, ml_dtypes.float8_e4m3fn))
    b = unit_operand("mxfp8_e4m3", codes_of([1.0] * 32, ml_dtypes.float8_e4m3fn))
    for overflow, register in (("saturate", -1), ("wrap", 0)):
        acc = Accumulator(mode="aligned", frac_bits=3, width=6, overflow=overflow)
        assert kernel("mxfp8_e4m3", "mxfp8_e4m3", acc).clamp
        got = check_blocks(ones, b, acc, [0])
        assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.anchor[0])) == (register, -3, 0)
        assert int(got.codes[0]) == fp32_code(register / 8)
    # A positive overflow: 5 * 8 = 40 -> saturate 31, wrap 40 - 64 = -24.
    five = unit_operand("mxfp8_e4m3", codes_of([1.0] * 5 + [0.0] * 27, ml_dtypes.float8_e4m3fn))
    for overflow, register in (("saturate", 31), ("wrap", -24)):
        got = check_blocks(five, b, Accumulator(mode="aligned", frac_bits=3, width=6, overflow=overflow), [0])
        assert int(got.accumulator[0]) == register
    # The same sequence on the E5M2 pair (the int64 shift route): 1.0 is 1.0 in both formats.
    ones5 = unit_operand("mxfp8_e5m2", codes_of([1.0] * 4 + [-1.0] * 4 + [0.0] * 24, ml_dtypes.float8_e5m2))
    b5 = unit_operand("mxfp8_e5m2", codes_of([1.0] * 32, ml_dtypes.float8_e5m2))
    for overflow, register in (("saturate", -1), ("wrap", 0)):
        acc = Accumulator(mode="aligned", frac_bits=3, width=6, overflow=overflow)
        assert route_name("mxfp8_e5m2", "mxfp8_e5m2", acc) == "_aligned"
        got = check_blocks(ones5, b5, acc, [0])
        assert (int(got.accumulator[0]), int(got.lsb_exponent[0])) == (register, -3)


def test_aligned_clamp_at_the_edge_of_the_bound():
    """MXINT8 0x80 x 0x80 is (-2) * (-2) = 4: with F = 0 each product is 4 LSBs and 32 of them
    reach 128 = 2^7 exactly. An 8-bit register ([-128, 127]) saturates to 127 or wraps to -128; a
    9-bit one holds 128 (hand derivation)."""
    m = unit_operand("mxint8", [[0x80] * 32])
    for width, overflow, register in ((8, "saturate", 127), (8, "wrap", -128), (9, "saturate", 128), (9, "wrap", 128)):
        got = check_blocks(m, m, Accumulator(mode="aligned", frac_bits=0, width=width, overflow=overflow), [0])
        assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.anchor[0])) == (register, 0, 0), (width, overflow)
    # The same at F = 20: 2^27 in a 28-bit register.
    for overflow, register in (("saturate", 2**27 - 1), ("wrap", -(2**27))):
        got = check_blocks(m, m, Accumulator(mode="aligned", frac_bits=20, width=28, overflow=overflow), [0])
        assert int(got.accumulator[0]) == register


@pytest.mark.parametrize("fmt,ml_type", [("mxfp8_e4m3", ml_dtypes.float8_e4m3fn), ("mxfp8_e5m2", ml_dtypes.float8_e5m2)])
def test_aligned_shift_rounding_hand_derived(fmt, ml_type):
    """F = 0, anchor 0 (1.0 x 1.0): the register's LSB is 1.0. Products 0.75, 0.75, -0.75, 0.5:
    truncate drops them all (register 1); rne rounds them to 1, 1, -1 and the tie 0.5 to even 0
    (register 2); 1.5 is a tie that rne rounds to 2 (register 4 with it). The exact sum is 2.25."""
    a = unit_operand(fmt, codes_of([1.0, 0.75, 0.75, -0.75, 0.5] + [0.0] * 27, ml_type))
    b = unit_operand(fmt, codes_of([1.0] * 32, ml_type))
    for rounding, register in (("truncate", 1), ("rne", 2)):
        acc = Accumulator(mode="aligned", frac_bits=0, width=None, shift_rounding=rounding)
        got = check_blocks(a, b, acc, [0])
        assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.codes[0])) == (register, 0, fp32_code(register))
    tie = unit_operand(fmt, codes_of([1.0, 1.5, -1.5, -0.5] + [0.0] * 28, ml_type))
    # rne: 1 + 2 - 2 - 0 = 1 ; truncate: 1 + 1 - 1 - 0 = 1 ; with F = 1: 2 + 3 - 3 - 1 = 1 (0.5)
    for frac, rounding, register in ((0, "rne", 1), (0, "truncate", 1), (1, "rne", 1), (1, "truncate", 1)):
        got = check_blocks(tie, b, Accumulator(mode="aligned", frac_bits=frac, shift_rounding=rounding), [0])
        assert (int(got.accumulator[0]), int(got.lsb_exponent[0])) == (register, -frac)
    got = check_blocks(a, b, Accumulator(), [0])
    assert int(got.codes[0]) == fp32_code(2.25)


def test_aligned_reference_fallback_hand_derived():
    """F = 60: 1.0 x 1.0 is significand 64 with 6 fraction bits at e = 0 = anchor, i.e. 2^60 LSBs
    of 2^-60; 32 of them: 2^65, beyond int64."""
    one = unit_operand("mxfp8_e4m3", codes_of([1.0] * 32, ml_dtypes.float8_e4m3fn))
    acc = Accumulator(mode="aligned", frac_bits=60, width=None)
    assert route_name("mxfp8_e4m3", "mxfp8_e4m3", acc) == "_by_reference"
    got = check_blocks(one, one, acc, [0])
    assert got.accumulator.dtype == object
    assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.codes[0])) == (2**65, -60, fp32_code(32.0))
    # A 66-bit register saturates at 2^65 - 1; a 64-bit one wraps 2^65 to 0.
    for width, overflow, register in ((66, "saturate", 2**65 - 1), (64, "wrap", 0), (80, "wrap", 2**65)):
        got = check_blocks(one, one, Accumulator(mode="aligned", frac_bits=60, width=width, overflow=overflow), [0])
        assert int(got.accumulator[0]) == register


def test_fp32_sequential_hand_derived():
    """E5M2 products 1.0 and 31 x 2^-24. The fp32 chain 1 + 2^-24 ties to even (1.0) every time;
    with the small products first they sum exactly and 1 + 31 * 2^-24 rounds to 1 + 2^-19. The
    exact mode rounds 1 + 31 * 2^-24 once: 1 + 2^-19."""
    acc = Accumulator(mode="fp32_sequential")
    first = unit_operand("mxfp8_e5m2", codes_of([1.0] + [2.0**-12] * 31, ml_dtypes.float8_e5m2))
    last = unit_operand("mxfp8_e5m2", codes_of([2.0**-12] * 31 + [1.0], ml_dtypes.float8_e5m2))
    got = check_blocks(first, first, acc, [0])
    assert (int(got.accumulator[0]), int(got.lsb_exponent[0]), int(got.anchor[0])) == (2**23, -23, 0)
    assert int(got.codes[0]) == fp32_code(1.0)
    got = check_blocks(last, last, acc, [0])
    assert (int(got.accumulator[0]), int(got.lsb_exponent[0])) == (2**23 + 16, -23)
    assert int(got.codes[0]) == fp32_code(1 + 2.0**-19)
    got = check_blocks(first, first, Accumulator(), [0])
    assert (int(got.accumulator[0]), int(got.lsb_exponent[0])) == (2**32 + 31 * 2**8, -32)
    assert int(got.codes[0]) == fp32_code(1 + 2.0**-19)
    # A zero sum is +0 with the register 0 on the ulp of the smallest subnormal (2^-149).
    zero = unit_operand("mxfp8_e5m2", codes_of([1.0, -1.0] + [0.0] * 30, ml_dtypes.float8_e5m2))
    got = check_blocks(zero, unit_operand("mxfp8_e5m2", codes_of([1.0] * 32, ml_dtypes.float8_e5m2)), acc, [0])
    assert (int(got.codes[0]), int(got.accumulator[0]), int(got.lsb_exponent[0])) == (0, 0, -149)
    # IEEE specials through the chain: Inf then finite is Inf; Inf + (-Inf) is NaN; Inf * 0 is NaN.
    inf, ninf, one = codes_of([np.inf, -np.inf, 1.0], ml_dtypes.float8_e5m2)
    a = unit_operand("mxfp8_e5m2", [[inf, one] + [0] * 30, [inf, ninf] + [0] * 30, [inf] + [0] * 31])
    b = unit_operand("mxfp8_e5m2", [[one] * 32, [one] * 32, [0] * 32])
    got = check_blocks(a, b, acc, range(3))
    assert [int(c) for c in got.codes] == [0x7F800000, 0x7FC00000, 0x7FC00000]
    assert [int(x) for x in got.accumulator] == [0, 0, 0] and [int(x) for x in got.lsb_exponent] == [0, 0, 0]


@pytest.mark.parametrize("mode,frac_bits", [("exact", None), ("aligned", 4), ("aligned", 60), ("fp32_sequential", None)])
def test_special_rules_hand_derived(mode, frac_bits):
    """The contract's special rules, block by block (E5M2 has +-Inf and NaN codes): a NaN element,
    Inf x 0 (either order) or Inf products of both signs give NaN; other Inf products give Inf
    of their sign, even when the scale is 0; a NaN scale (E8M0 0xFF) gives NaN."""
    inf, ninf, one, two, zero = (int(c) for c in codes_of([np.inf, -np.inf, 1.0, 2.0, 0.0], ml_dtypes.float8_e5m2))
    nan = 0x7D  # a NaN code of E5M2 (0x7D..0x7F and 0xFD..0xFF)
    assert np.isnan(np.array([nan], np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float64)[0])
    pad = [zero] * 29
    cases = [  # (a codes, b codes, scale a, scale b, expected fp32 code)
        ([inf, one, two], [one, one, one], 127, 127, 0x7F800000),
        ([inf, one, two], [ninf, one, one], 127, 127, 0xFF800000),
        ([inf, one, two], [zero, one, one], 127, 127, 0x7FC00000),  # Inf x 0
        ([zero, one, two], [inf, one, one], 127, 127, 0x7FC00000),  # 0 x Inf
        ([inf, ninf, two], [one, one, one], 127, 127, 0x7FC00000),  # +Inf and -Inf
        ([inf, inf, two], [one, two, one], 127, 127, 0x7F800000),
        ([nan, one, two], [one, one, one], 127, 127, 0x7FC00000),
        ([one, two, two], [one, one, nan], 127, 127, 0x7FC00000),
        ([inf, one, two], [one, one, one], 0, 127, 0x7F800000),  # scale 2^-127: still Inf
        ([one, one, two], [one, one, one], 0xFF, 127, 0x7FC00000),  # NaN scale
        ([inf, one, two], [one, one, one], 127, 0xFF, 0x7FC00000),
        ([one, one, two], [two, one, one], 127, 127, fp32_code(5.0)),
    ]
    acc = Accumulator(mode=mode, frac_bits=frac_bits, width=8 if frac_bits == 4 else None)
    if frac_bits == 60:
        assert route_name("mxfp8_e5m2", "mxfp8_e5m2", acc) == "_by_reference"
    a = Operand(get_format("mxfp8_e5m2"), np.array([c[2] for c in cases], np.uint8), None,
                np.array([c[0] + pad for c in cases], np.uint8))
    b = Operand(get_format("mxfp8_e5m2"), np.array([c[3] for c in cases], np.uint8), None,
                np.array([c[1] + pad for c in cases], np.uint8))
    got = check_blocks(a, b, acc, range(len(cases)))
    assert [hex(int(c)) for c in got.codes] == [hex(c[4]) for c in cases]


def e4m3_powers(exponents) -> tuple[np.ndarray, np.ndarray]:
    """E4M3 codes a, b (32 each, zero padded) whose products are 2^j for j in ``exponents``."""
    ea = [j // 2 for j in exponents]
    eb = [j - j // 2 for j in exponents]
    pad = [0.0] * (32 - len(exponents))
    return (codes_of([2.0**e for e in ea] + pad, ml_dtypes.float8_e4m3fn),
            codes_of([2.0**e for e in eb] + pad, ml_dtypes.float8_e4m3fn))


def test_ftz_and_subnormal_boundary_hand_derived():
    """Block values at the fp32 subnormal boundary: products 2^j (j = -11..11) sum to
    (2^23 - 1) * 2^-11, times scales 2^-127 * 2^-11: the largest fp32 subnormal, which ftz turns
    into +0 (-0 for the negative); 2^-126 (the smallest normal) stays. (2^24 - 1) * 2^-150 rounds
    to 2^-126 to nearest (kept by ftz) but to the largest subnormal toward zero (flushed)."""
    ca, cb = e4m3_powers(range(-11, 12))
    neg = ca | 0x80  # the sign bit of E4M3
    ones = codes_of([1.0] + [0.0] * 31, ml_dtypes.float8_e4m3fn)
    c24a, c24b = e4m3_powers(range(-12, 12))  # (2^24 - 1) * 2^-12
    rows = [  # (a, b, scale a, scale b) ; expected (no ftz, ftz) under rne and rtz
        (ca, cb, 0, 116), (neg, cb, 0, 116), (ones, ones, 1, 127), (c24a, c24b, 0, 116),
    ]
    a = Operand(get_format("mxfp8_e4m3"), np.array([r[2] for r in rows], np.uint8), None, np.array([r[0] for r in rows]))
    b = Operand(get_format("mxfp8_e4m3"), np.array([r[3] for r in rows], np.uint8), None, np.array([r[1] for r in rows]))
    # (2^24 - 1) * 2^-12 * 2^-138 = (2^24 - 1) * 2^-150.
    expected = {
        ("rne", False): [0x007FFFFF, 0x807FFFFF, 0x00800000, 0x00800000],
        ("rne", True): [0x00000000, 0x80000000, 0x00800000, 0x00800000],
        ("rtz", False): [0x007FFFFF, 0x807FFFFF, 0x00800000, 0x007FFFFF],
        ("rtz", True): [0x00000000, 0x80000000, 0x00800000, 0x00000000],
    }
    for (rounding, ftz), codes in expected.items():
        for mode in ("exact", "fp32_sequential"):
            got = check_blocks(a, b, Accumulator(mode=mode, output_rounding=rounding, ftz=ftz), range(len(rows)))
            assert [hex(int(c)) for c in got.codes] == [hex(c) for c in codes], (mode, rounding, ftz)
    # bf16: the largest subnormal is 127 * 2^-133 (MXINT8 127 * 2^-6 at scale 2^-127, times 1.0).
    a = Operand(get_format("mxint8"), np.array([0], np.uint8), None, np.array([[127] + [0] * 31], np.uint8))
    b = Operand(get_format("mxint8"), np.array([127], np.uint8), None, np.array([[64] * 32], np.uint8))
    for ftz, code in ((False, 0x007F), (True, 0x0000)):
        got = check_blocks(a, b, Accumulator(output="bf16", ftz=ftz), [0])
        assert int(got.codes[0]) == code


@pytest.mark.parametrize("mode", ["exact", "fp32_sequential", "aligned"])
def test_anchors_false_only_drops_the_anchor(mode):
    """dot_blocks(anchors=False) (what mxsim.dot uses without details) reports anchor 0 in the
    modes whose result does not depend on it, and the reference's fields otherwise."""
    acc = Accumulator(mode=mode, frac_bits=6 if mode == "aligned" else None)
    rng = np.random.default_rng(11)
    a = make_operand(rng, "mxfp8_e4m3", 40, p_zero=0.2, p_special=0.005)
    b = make_operand(rng, "mxfp8_e5m2", 40, p_zero=0.2, p_special=0.005)
    got = dot_blocks(a, b, acc, anchors=False)
    for i in range(40):
        want = ref_dot.dot(ref_block(a, i), ref_block(b, i), a.fmt, b.fmt, acc)
        if mode != "aligned":
            want = dataclasses.replace(want, anchor=0)
        assert_block_equal(got, i, want, describe(a, b, acc, i))


# --- more than one chunk, on two threads ---------------------------------------------------------
LARGE_N = 20000
LARGE_ACCUMULATORS = [
    Accumulator(),
    Accumulator(mode="aligned", frac_bits=8, width=14, overflow="saturate"),
    Accumulator(mode="aligned", frac_bits=13, width=20, overflow="wrap", shift_rounding="rne", output="bf16"),
    Accumulator(mode="fp32_sequential", output="fp16", across_blocks="exact"),
]


@pytest.fixture(scope="module")
def large_operands():
    rng = np.random.default_rng(7)
    a = make_operand(rng, "mxfp8_e4m3", LARGE_N, p_zero=0.05, p_special=0.0005, p_edge_scale=0.001, scale_spread=5)
    b = make_operand(rng, "mxfp8_e4m3", LARGE_N, p_zero=0.05, p_special=0.0005, scale_spread=5)
    return a, b


def large_sample(n: int, chunk: int, seed: int, count: int = 300) -> np.ndarray:
    """``count`` random indices plus the first and last index of every chunk (and of the thread
    split)."""
    edges = set()
    for start in range(0, n, chunk):
        edges.update((start, min(start + chunk, n) - 1))
    half = (n // 2 + chunk - 1) // chunk * chunk
    edges.update((half - 1, half, n - 1))
    rng = np.random.default_rng(seed)
    return np.array(sorted(edges | set(rng.choice(n, count, replace=False).tolist())))


@pytest.mark.parametrize("acc", LARGE_ACCUMULATORS, ids=lambda a: f"{a.mode}-{a.width}-{a.output}")
def test_large_input_over_several_chunks(large_operands, acc):
    a, b = large_operands
    chunk = BLOCK_CHUNK // 32
    assert LARGE_N > 2 * chunk, "the input must span more than two chunks to use both threads"
    got = check_blocks(a, b, acc, large_sample(LARGE_N, chunk, 8))
    # Some sampled blocks are special and some finite: both paths of the chunks are compared.
    assert (got.special != 0).any() and (got.special == 0).any()
    # DotGeneral of 5000 rows of 4 blocks: compare sampled rows (each row's 4 blocks and its code).
    rows, n = LARGE_N // 4, 4
    codes, blocks = dot_general_blocks(a, b, acc, rows)
    for r in large_sample(rows, chunk // n, 9, count=60):
        indices = range(r * n, (r + 1) * n)
        want = ref_dot.dot_general([ref_block(a, i) for i in indices], [ref_block(b, i) for i in indices],
                                   a.fmt, b.fmt, acc)
        assert int(codes[r]) == want.code, f"row {r}"
        for j, block in enumerate(want.blocks):
            assert_block_equal(blocks, (r, j), block, f"row {r} block {j}")


# --- 3. an independent float64 check -----------------------------------------------------------
def decode_independent(t: mxsim.MXTensor) -> np.ndarray:
    """Blocked float64 values of an E8M0-scaled MX tensor: ml_dtypes decodes the element codes,
    ldexp applies 2^(scale - 127). Shape: t.codes.shape (padding included, codes 0 = +0)."""
    ml_type = {"fp4_e2m1": ml_dtypes.float4_e2m1fn, "fp8_e4m3": ml_dtypes.float8_e4m3fn}[t.fmt.element.name]
    elements = t.codes.astype(np.uint8).view(ml_type).astype(np.float64)
    scales = np.repeat(t.scales.astype(np.int64) - 127, t.fmt.block_size, axis=-1)
    assert not (t.scales == 0xFF).any()
    return np.ldexp(elements, scales)


def exact_dot(x: np.ndarray, y: np.ndarray) -> Fraction:
    return sum((Fraction(float(p)) * Fraction(float(q)) for p, q in zip(x, y)), Fraction(0))


@pytest.mark.parametrize("fmt", ["mxfp4_e2m1", "mxfp8_e4m3"])
def test_exact_mode_equals_float64_dot_of_dequantized_values(fmt):
    rng = np.random.default_rng(10)
    m, n, k = 6, 5, 200  # 7 blocks per row, the last one partial (padded with zeros)
    x = (rng.standard_normal((m, k)) * np.exp2(rng.integers(-3, 4, (m, 1)))).astype(np.float32)
    y = rng.standard_normal((n, k)).astype(np.float32)
    ta, tb = mxsim.quantize(x, fmt), mxsim.quantize(y, fmt)
    va, vb = decode_independent(ta), decode_independent(tb)  # (m, 224), (n, 224)
    float64_dot = va @ vb.T
    for i in range(m):
        for j in range(n):
            exact = exact_dot(va[i], vb[j])
            assert Fraction(float(float64_dot[i, j])) == exact, "the float64 dot is not exact; pick other data"
    want_fp32 = float64_dot.astype(np.float32)  # one rounding of the exact value
    want_fp16 = float64_dot.astype(np.float16)

    # The fast datapath, fed the tensors' blocks directly (rows of the (m, n) grid).
    def operand(t, rows_index):
        blocks = t.scales.shape[-1]
        codes = t.codes.reshape(t.codes.shape[0], blocks, t.fmt.block_size)[rows_index].reshape(-1, t.fmt.block_size)
        return Operand(t.fmt, t.scales[rows_index].reshape(-1), None, codes)

    ii, jj = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    for acc, want in ((Accumulator(across_blocks="exact"), want_fp32),
                      (Accumulator(across_blocks="exact", output="fp16"), want_fp16)):
        codes, _ = dot_general_blocks(operand(ta, ii.ravel()), operand(tb, jj.ravel()), acc, m * n)
        got = fast_dot.output_values(codes, acc).reshape(m, n)
        assert np.array_equal(got.view(np.uint32 if got.dtype == np.float32 else np.uint16),
                              want.view(np.uint32 if want.dtype == np.float32 else np.uint16)), (got, want)
    # The public API with the 'exact' preset on the broadcast layout (m, 1, k) x (n, k).
    got = mxsim.dot(mxsim.quantize(x[:, None, :], fmt), tb, "exact")
    assert got.shape == (m, n) and np.array_equal(got, want_fp32)
