"""The FNUZ and IEEE P3109 special-value layouts (contract section 1): catalogue entries against
their oracles (ml_dtypes' finfo for FNUZ, gfloat's ``format_info_p3109`` for P3109), and the
encoding rules of the layout (one NaN at 0x80, no -0, P3109's Inf at 0x7F / 0xFF) on hand-worked
values. Exhaustive code and value checks against the oracles live in test_decode_oracles.py and
test_encode_oracles.py."""

from fractions import Fraction as F

import ml_dtypes
import numpy as np
import pytest
from oracle_formats import GFLOAT_P3109

import mxsim
from mxsim import FloatFormat, ref
from mxsim.formats.element import negated_code

FNUZ = {"fp8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "fp8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz}
P3109 = list(GFLOAT_P3109)
NEW = list(FNUZ) + P3109


@pytest.mark.parametrize("name", P3109)
def test_p3109_catalogue_matches_gfloat_format_info(name):
    fi, fmt = GFLOAT_P3109[name], mxsim.get_format(name)
    assert (fmt.width, fmt.mantissa_bits + 1, fmt.exponent_bits, fmt.bias) == (fi.k, fi.precision, fi.expBits, fi.bias)
    assert fmt.max_normal == F(fi.max) and fmt.emax == fi.emax
    smallest = fmt.min_subnormal if fmt.min_subnormal is not None else fmt.min_normal
    assert smallest == F(fi.smallest)
    assert (fmt.has_inf, fmt.has_nan) == (True, True)
    assert (fmt.has_negative_zero, fmt.subnormals) == (fi.has_nz, fi.has_subnormals)
    assert fi.num_high_nans == 0 and fi.is_signed and not fi.is_twos_complement


def test_p3109_precision_1_has_no_subnormals_but_zero():
    """binary8p1: no mantissa, so exponent field 0 holds zero alone; code 1 is 2^(1 - 64)."""
    fmt = mxsim.get_format("binary8p1")
    assert fmt.min_subnormal is None and fmt.min_normal == F(2) ** -63
    assert ref.decode(0x00, fmt).is_zero and ref.decode(0x01, fmt).magnitude == F(2) ** -63
    assert ref.decode(0x7E, fmt).magnitude == F(2) ** 62 and ref.decode(0x7F, fmt).is_inf
    # half the smallest normal is a tie between 0 and 2^-63 (significands 0 and 1: even is 0)
    assert ref.encode(F(2) ** -64, fmt) == 0x00 and ref.encode(-F(2) ** -64, fmt) == 0x00
    assert ref.encode(F(2) ** -64, fmt, "rup") == 0x01 and ref.encode(-F(2) ** -64, fmt, "rdn") == 0x81


@pytest.mark.parametrize("name", list(FNUZ))
def test_fnuz_catalogue_matches_ml_dtypes_finfo(name):
    info, fmt = ml_dtypes.finfo(FNUZ[name]), mxsim.get_format(name)
    assert fmt.width == info.bits and fmt.mantissa_bits == info.nmant and fmt.exponent_bits == info.nexp
    assert fmt.max_normal == F(float(info.max)) and fmt.min_normal == F(float(info.smallest_normal))
    assert fmt.min_subnormal == F(float(info.smallest_subnormal))
    assert (fmt.has_inf, fmt.has_nan, fmt.has_negative_zero) == (False, True, False)


def test_aliases_name_the_ml_dtypes_types():
    assert mxsim.get_format("float8_e4m3fnuz").name == "fp8_e4m3fnuz"
    assert mxsim.get_format("float8_e5m2fnuz").name == "fp8_e5m2fnuz"


@pytest.mark.parametrize("name", NEW)
def test_special_codes(name):
    fmt = mxsim.get_format(name)
    assert fmt.nan_code() == fmt.nan_code(True) == 0x80
    assert ref.decode(0x80, fmt).is_nan and ref.decode(0x00, fmt).is_zero
    if fmt.specials == "p3109":
        assert (fmt.inf_code(), fmt.inf_code(True), fmt.max_code) == (0x7F, 0xFF, 0x7E)
    else:
        assert fmt.max_code == 0x7F and not fmt.has_inf
    codes = [c for c in range(256) if ref.decode(c, fmt).is_nan]
    assert codes == [0x80]


@pytest.mark.parametrize("name", NEW)
def test_encode_zero_nan_and_overflow(name):
    fmt = mxsim.get_format(name)
    top = fmt.max_normal
    tiny = (fmt.min_subnormal or fmt.min_normal) / 4  # rounds to zero in rne
    for rounding in ("rne", "rna", "rtz", "rup"):
        assert ref.encode(-0.0, fmt, rounding) == 0x00  # no -0
        assert ref.encode(-tiny, fmt, rounding) == 0x00  # a negative value rounding to zero is +0
    assert ref.encode(-tiny, fmt, "rdn") == 0x80 | 0x01  # rdn: -smallest (code 0x81), not NaN
    assert ref.encode(float("nan"), fmt) == ref.encode(-float("nan"), fmt) == 0x80
    over = top * 2
    assert ref.encode(over, fmt) == 0x7E + (fmt.specials == "fnuz")  # saturate: +max
    assert ref.encode(-over, fmt) == 0xFE + (fmt.specials == "fnuz")  # -max
    inf_or_nan = (0x7F, 0xFF) if fmt.specials == "p3109" else (0x80, 0x80)
    assert ref.encode(over, fmt, "rne", "ieee") == inf_or_nan[0]
    assert ref.encode(-over, fmt, "rne", "ieee") == inf_or_nan[1]
    assert ref.encode(float("-inf"), fmt, "rtz", "ieee") == inf_or_nan[1]  # Inf input: always Inf / NaN
    assert ref.encode(-over, fmt, "rup", "ieee") == ref.encode(-top, fmt)  # toward zero: -max
    assert ref.encode(float("inf"), fmt) == ref.encode(top, fmt)
    with pytest.raises(OverflowError):
        ref.encode(over, fmt, overflow="error")


@pytest.mark.parametrize("name", NEW)
def test_negated_code_keeps_zero_and_nan(name):
    fmt = mxsim.get_format(name)
    assert negated_code(0x00, fmt) == 0x00 and negated_code(0x80, fmt) == 0x80
    for code in range(256):
        x, y = ref.decode(code, fmt), ref.decode(negated_code(code, fmt), fmt)
        assert x.kind == y.kind and x.magnitude == y.magnitude
        if not x.is_nan and not x.is_zero:
            assert x.sign != y.sign


@pytest.mark.parametrize("specials", ["fnuz", "p3109"])
def test_layout_needs_a_signed_format_with_subnormals(specials):
    with pytest.raises(ValueError, match="specials='.*' needs signed=True and subnormals=True"):
        FloatFormat("x", 4, 3, 8, signed=False, specials=specials)
    with pytest.raises(ValueError, match="needs signed=True and subnormals=True"):
        FloatFormat("x", 4, 3, 8, subnormals=False, specials=specials)
    with pytest.raises(ValueError, match="specials='ieee2' is not allowed; expected one of .*fnuz, p3109"):
        FloatFormat("x", 4, 3, 8, specials="ieee2")


def test_custom_fnuz_and_p3109_of_other_widths():
    """The layouts are parametric: a 6-bit FNUZ E3M2 and a 6-bit P3109 E3M2, worked by hand."""
    fnuz6 = FloatFormat("e3m2fnuz", 3, 2, 4, specials="fnuz")
    assert fnuz6.nan_code() == 0x20 and fnuz6.max_code == 0x1F and fnuz6.max_normal == F(7, 4) * 2**3
    p6 = FloatFormat("e3m2p", 3, 2, 4, specials="p3109")
    assert p6.inf_code(True) == 0x3F and p6.max_code == 0x1E and p6.max_normal == F(6, 4) * 2**3
    assert ref.encode(-0.0, p6) == 0 and ref.decode(0x20, p6).is_nan


def test_fnuz_nan_decodes_with_its_sign_bit_as_ml_dtypes_does():
    for name, dtype in FNUZ.items():
        ml = np.array([0x80], np.uint8).view(dtype).astype(np.float32)
        assert np.isnan(ml[0]) and np.signbit(ml[0])
        assert ref.decode(0x80, name).sign == 1


# --- interop: ml_dtypes and torch carry the FNUZ codes as zero-copy views ---------------------
@pytest.mark.parametrize("name", list(FNUZ))
def test_ml_dtypes_fnuz_views_are_zero_copy_and_decode_as_ml_dtypes(name):
    from mxsim.interop import from_ml_dtypes, to_ml_dtypes

    codes = np.arange(256, dtype=np.uint8)
    view = to_ml_dtypes(codes, name)
    assert view.dtype == np.dtype(FNUZ[name]) and np.shares_memory(view, codes)
    back, found = from_ml_dtypes(view)
    assert found == name and np.shares_memory(back, codes) and np.array_equal(back, codes)
    ml = view.astype(np.float64)  # ml_dtypes' own decode of every code
    fast = mxsim.decode(codes, name, dtype=np.float64)
    assert np.array_equal(np.isnan(ml), np.isnan(fast)) and np.isnan(ml).sum() == 1
    assert np.array_equal(ml, fast, equal_nan=True) and np.array_equal(np.signbit(ml), np.signbit(fast))
    # and ml_dtypes' cast of every float32 value back into the type gives the codes themselves
    finite = ~np.isnan(ml)
    assert np.array_equal(ml[finite].astype(FNUZ[name]).view(np.uint8), codes[finite])
    with pytest.raises(ValueError, match="fmt='binary8p4' is not carried by dtype float8_e4m3fnuz|no ml_dtypes"):
        from_ml_dtypes(view, fmt="binary8p4")


@pytest.mark.parametrize("name", list(FNUZ))
def test_torch_fnuz_views_decode_as_torch(name):
    import torch  # an oracle: installed in every test environment (as in test_interop.py)

    from mxsim.interop import from_torch, to_torch

    codes = np.arange(256, dtype=np.uint8)
    tensor = to_torch(codes, name)
    assert tensor.dtype == getattr(torch, FNUZ[name].__name__) and tensor.data_ptr() == codes.ctypes.data
    values = tensor.to(torch.float64).numpy()  # torch's own decode
    fast = mxsim.decode(codes, name, dtype=np.float64)
    assert np.array_equal(values, fast, equal_nan=True) and np.array_equal(np.isnan(values), np.isnan(fast))
    back, found = from_torch(tensor)
    assert found == name and np.array_equal(np.asarray(back), codes)


# --- block formats built from the new elements: fast path == reference (hypothesis) ------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mxsim import BlockFormat  # noqa: E402
from mxsim.ref.stored_block import QuantizedBlock  # noqa: E402
from mxsim.strategies import block_values  # noqa: E402

_E8M0 = mxsim.get_format("e8m0")
BLOCKS = {  # custom MX formats: an E8M0 scale per 32 (or 16) elements of each new element format
    name: BlockFormat(f"mx_{name}", mxsim.get_format(name), 16 if name.startswith("binary8") else 32, _E8M0)
    for name in NEW
}
_PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same_floats(got: np.ndarray, want: np.ndarray) -> bool:
    return np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(
        np.where(np.isnan(want), 0, got), np.where(np.isnan(want), 0, want)
    ) and np.array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("name", NEW)
@given(data=st.data())
@_PROPERTY
def test_block_quantize_and_dequantize_fast_equal_reference(name, data):
    fmt = BLOCKS[name]
    dtype = data.draw(st.sampled_from(["float32", "float64", "bfloat16"]), label="dtype")
    rounding = data.draw(st.sampled_from(["rne", "rna", "rtz", "rup", "rdn"]), label="rounding")
    rule = data.draw(st.sampled_from(["floor", "ceil", "even", "rceil", "tosa"]), label="scale_rule")
    rows = [data.draw(block_values(fmt, dtype), label=f"block {i}") for i in range(2)]
    x = np.stack(rows)
    t = mxsim.quantize(x, fmt, rounding=rounding, scale_rule=rule)
    dequantized = t.dequantize(dtype=np.float64)
    for i, row in enumerate(rows):
        values = [ref.to_exact(v) for v in np.asarray(row, np.float64).tolist()]
        want = ref.quantize_block(values, fmt, t.options, source="bf16" if dtype == "bfloat16" else "fp32")
        assert (int(t.scales[i][0]), tuple(int(c) for c in t.codes[i])) == (want.scale, want.codes), (row, want)
        exact = ref.dequantize_block(want, fmt)
        floats = np.array([np.nan if v.is_nan else float(v.value) if v.is_finite else (-np.inf if v.sign else np.inf)
                           for v in exact])
        floats = np.where([v.is_finite and v.sign == 1 and v.magnitude == 0 for v in exact], -0.0, floats)
        assert _same_floats(dequantized[i], floats), (row, dequantized[i], floats)
        assert not any(c == 0x80 for c, v in zip(want.codes, values) if v.is_finite) or want.scale == 0xFF


def test_block_of_negative_tiny_values_gives_plus_zero_and_nan_blocks_give_0x80():
    """Hand-worked: amax 1.0 (E = -7 for E4M3FNUZ's emax 7) gives the element 2^7 (field 7 + 8:
    0x78); -2^-20 / 2^-7 = -2^-13 is below half the smallest subnormal 2^-10: +0 (0x00);
    a NaN anywhere makes the scale 0xFF and every element the one NaN code 0x80."""
    fmt = BLOCKS["fp8_e4m3fnuz"]
    x = np.zeros((2, 32), np.float32)
    x[0, 0], x[0, 1] = 1.0, -(2.0**-20)
    x[1, 5] = np.nan
    t = mxsim.quantize(x, fmt)
    assert int(t.scales[0][0]) == 127 - 7 and int(t.codes[0][0]) == 0x78 and int(t.codes[0][1]) == 0x00
    assert int(t.scales[1][0]) == 0xFF and set(t.codes[1].tolist()) == {0x80}
    assert ref.quantize_block([1.0, -(2.0**-20)] + [0.0] * 30, fmt).codes[:2] == (0x78, 0x00)


# --- dot products over these elements (separate and aligned accumulators) ---------------------
from test_dot_fast_against_reference import SWEEP_ACCUMULATORS, accumulators, check_general, make_operand, operands  # noqa: E402

DOT_PAIRS = [("fp8_e4m3fnuz", "fp8_e4m3fnuz"), ("fp8_e4m3fnuz", "fp8_e5m2fnuz"), ("fp8_e5m2fnuz", "fp8_e4m3fnuz"),
             ("binary8p4", "binary8p3"), ("binary8p1", "binary8p7"), ("binary8p2", "binary8p5"),
             ("binary8p6", "binary8p6")]


@pytest.mark.parametrize("pair", DOT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_dot_fast_equals_reference_sweep(pair):
    fa, fb = BLOCKS[pair[0]], BLOCKS[pair[1]]
    rng = np.random.default_rng(sum(map(ord, pair[0] + pair[1])))
    for i, acc in enumerate(SWEEP_ACCUMULATORS):
        kw = {"p_zero": 0.2, "p_special": 0.05 if i % 2 else 0.0, "p_edge_scale": 0.1 if i == 3 else 0.0}
        check_general(make_operand(rng, fa, 4, **kw), make_operand(rng, fb, 4, **kw), acc, rows=2)


@st.composite
def _dot_cases(draw):
    fa, fb = (BLOCKS[n] for n in draw(st.sampled_from(DOT_PAIRS)))
    rows, n = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    cancel = draw(st.sampled_from((None, "cancel")))
    a = draw(operands(fa, rows * n, cancel="negate" if cancel else None))
    b = draw(operands(fb, rows * n, cancel="same" if cancel else None))
    return a, b, draw(accumulators()), rows


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_dot_cases())
def test_dot_fast_equals_reference_hypothesis(case):
    check_general(*case)


def test_dot_nan_element_and_inf_elements_hand_worked():
    """0x80 is NaN in both layouts: a product with it gives the canonical NaN; P3109's 0x7F (+Inf)
    times a positive finite gives +Inf, times zero NaN; FNUZ 0x7F is the finite 240."""
    one = {"fp8_e4m3fnuz": 0x40, "binary8p4": 0x40}  # 1.0 in both (bias 8: field 8, mantissa 0)
    for name, unit in one.items():
        fmt = BLOCKS[name]
        a = QuantizedBlock(127, (), (0x80,) + (0,) * (fmt.block_size - 1))
        b = QuantizedBlock(127, (), (unit,) * fmt.block_size)
        assert ref.dot.dot(a, b, fmt).code == 0x7FC00000
        top = QuantizedBlock(127, (), (0x7F,) + (0,) * (fmt.block_size - 1))
        got = ref.dot.dot(top, b, fmt).code
        assert got == (0x7F800000 if name == "binary8p4" else int(np.float32(240.0).view(np.uint32)))
        zero_b = QuantizedBlock(127, (), (0,) * fmt.block_size)
        assert ref.dot.dot(top, zero_b, fmt).code == (0x7FC00000 if name == "binary8p4" else 0)


# --- strategies: the ready-made checks accept the new formats; ml_dtypes passes them ------------
@pytest.mark.parametrize("name", list(FNUZ))
def test_strategy_checks_pass_ml_dtypes_fnuz_casts(name):
    """ml_dtypes (an independent implementation) as the device under test: its cast is rne with
    NaN on overflow (overflow='ieee'), its decode exact; mxsim.strategies draws the inputs."""
    from mxsim.strategies import check_element_decoder, check_element_encoder

    dtype = FNUZ[name]

    def encoder(x):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(x, np.float32).astype(dtype).view(np.uint8)

    report = check_element_encoder(encoder, name, "rne", "ieee", vectorized=True, max_examples=150, seed=1)
    assert report.examples >= 50
    decoded = check_element_decoder(lambda c: np.asarray(c, np.uint8).view(dtype).astype(np.float64), name,
                                    vectorized=True)
    assert decoded.examples == 256


# --- golden suites of the new elements, read back from their files, against the oracles --------
def _hex_column(directory, name) -> np.ndarray:
    return np.array([int(line, 16) for line in (directory / f"{name}.hex").read_text().split()], dtype=np.uint64)


@pytest.mark.parametrize("name", list(FNUZ) + ["binary8p4", "binary8p1"])
def test_golden_encode_and_decode_suites_match_the_oracles(tmp_path, name):
    """encode (rne, overflow='ieee': ml_dtypes' cast for FNUZ, gfloat's sat=False for P3109) and
    decode suites generated to files; every vector's expected output against the oracle."""
    from gfloat import RoundMode, decode_float, encode_float, round_float

    from mxsim.golden.storage.files import generate_suites
    from mxsim.golden.kinds.registry import suite_from_spec

    suites = [suite_from_spec("encode", element=name, overflow="ieee"), suite_from_spec("decode", element=name)]
    generate_suites(suites, tmp_path)
    (encode_dir,) = (tmp_path / "encode").iterdir()
    x = _hex_column(encode_dir, "x").astype(np.uint32).view(np.float32)
    code = _hex_column(encode_dir, "code").astype(np.int64)
    assert x.size > 1000 and np.isnan(x).any() and np.isinf(x).any()
    if name in FNUZ:
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(FNUZ[name]).view(np.uint8).astype(np.int64)
    else:
        fi = GFLOAT_P3109[name]
        want = np.array([encode_float(fi, round_float(fi, float(v), RoundMode.TiesToEven, False)) for v in x])
        if name == "binary8p1":  # the rne ties 1.5 * 2^e with e's field even: see test_encode_oracles
            tie = (np.abs(np.frexp(x.astype(np.float64))[0]) == 0.75) & ((want & 1) == 0) & (code == want + 1)
            want = np.where(tie, code, want)
    assert np.array_equal(code, want), [(float(v), hex(c), hex(w)) for v, c, w in zip(x, code, want) if c != w][:5]
    (decode_dir,) = (tmp_path / "decode").iterdir()
    codes = _hex_column(decode_dir, "code").astype(np.int64)
    value = _hex_column(decode_dir, "value").astype(np.uint32).view(np.float32).astype(np.float64)
    assert sorted(codes.tolist()) == list(range(256))
    if name in FNUZ:
        oracle = codes.astype(np.uint8).view(FNUZ[name]).astype(np.float64)
    else:
        oracle = np.array([decode_float(GFLOAT_P3109[name], int(c)).fval for c in codes])
    assert np.array_equal(value, oracle, equal_nan=True) and np.array_equal(np.isnan(value), np.isnan(oracle))


# --- fused multiply-accumulate steps (contract 4.1) over these elements: fast == reference -------
from test_fused_steps_fast import check_against_reference, random_c, random_tensor  # noqa: E402

FUSED = ["hopper_fp8_wgmma", "blackwell_mxf8f6f4", "mxdotp_fp8"]


@pytest.mark.parametrize("preset", FUSED)
@pytest.mark.parametrize("pair", DOT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_fused_steps_fast_equal_reference(pair, preset):
    from dataclasses import replace

    from mxsim.options.accumulate import PRESETS

    fa, fb = BLOCKS[pair[0]], BLOCKS[pair[1]]
    rng = np.random.default_rng(sum(map(ord, pair[0] + pair[1] + preset)))
    n_blocks = 64 // fa.block_size
    for p_special in (0.0, 0.05):
        a = random_tensor(rng, fa, 3, n_blocks, p_special=p_special)
        b = random_tensor(rng, fb, 3, n_blocks, p_special=p_special)
        # the presets' datapaths over these elements: the units themselves take OCP FP8 only, so the
        # element check (``elements``) is lifted; the arithmetic under test is unchanged
        datapath = replace(PRESETS[preset], elements=None, mixed_elements=True)
        check_against_reference(a, b, datapath, random_c(rng, 3, p_special))


@pytest.mark.parametrize("name", list(FNUZ))
@pytest.mark.parametrize("source", ["fp8_e4m3", "fp8_e5m2"])
def test_encode_from_fp8_codes_matches_ml_dtypes(name, source):
    """The FP8 code input types (ml_dtypes arrays, or uint8 codes with source=): every code of
    E4M3 / E5M2 into the FNUZ formats, against ml_dtypes' own cast (rne, NaN on overflow and for
    NaN, which is overflow='ieee'); and saturate against the definition: +-max where ml_dtypes
    gives NaN for a finite input."""
    ml_source = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}[source]
    codes = np.arange(256, dtype=np.uint8)
    x = codes.view(ml_source)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(FNUZ[name]).view(np.uint8)
    assert np.array_equal(mxsim.encode(x, name, "rne", "ieee"), want)
    assert np.array_equal(mxsim.encode(codes, name, "rne", "ieee", source=source), want)
    values = x.astype(np.float64)
    saturated = np.where(np.isfinite(values) & (want == 0x80), np.where(values < 0, 0xFF, 0x7F), want)
    got = mxsim.encode(x[~np.isnan(values)], name, "rne", "saturate")
    want_saturated = np.where(np.isinf(values), np.where(values < 0, 0xFF, 0x7F), saturated)
    assert np.array_equal(got, want_saturated[~np.isnan(values)])
    assert [ref.encode(float(v), name, "rne", "ieee") for v in values] == want.tolist()
