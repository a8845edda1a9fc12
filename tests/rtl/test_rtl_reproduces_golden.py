"""RTL proof of the golden vectors: the Verilog models in ``rtl/`` must reproduce mxsim's golden
suites bit for bit under Icarus Verilog and under Verilator, and the testbenches must have teeth
(a one-behaviour mutation of the RTL is caught; the full mutation score is rtl/mutate.py's, see
tests/rtl/test_rtl_mutation_harness.py).

* decode: ``golden/decode/{fp8_e4m3,fp4_e2m1}`` through ``rtl/tb_decode.v`` (field ``value``);
* dot: every ``golden/dot/<format>-aligned-f<F>-w<W>-<truncate|rne>-<saturate|wrap>`` suite of
  an E4M3 or E2M1 format through ``rtl/tb_dot.v`` (fields acc, lsb, anchor, result);
* dequantize: every ``golden/dequantize/<mxfp8_e4m3|mxfp8_e5m2>-<fp32|fp16|bf16>[-options]`` suite through
  ``rtl/tb_dequant.v`` (field values), the options taken from the manifest's params;
* fused: every golden dot suite of MXFP8 E4M3 with MXDOTP-style fused steps (anchor fixed, fp32
  output with IEEE overflow; e.g. ``mxfp8_e4m3-mxdotp_fp8-steps``) through ``rtl/tb_fused_dot.v``
  (fields steps and result), the parameters taken from the manifest's params;
* teeth: the same dot suites with the RTL compiled ``-DMUTATE_SHIFT`` (inverted shift rounding)
  and ``-DMUTATE_WRAP`` (inverted overflow handling) must report failures, and the dequantize
  suites with ``-DMUTATE_FTZ``, ``-DMUTATE_SATURATE`` and ``-DMUTATE_NAN`` (one option inverted), and
  the fused suites with ``-DMUTATE_NO_FUSION`` (the product sum rounded to fp32 before C is added),
  ``-DMUTATE_NO_BYPASS`` and ``-DMUTATE_CZERO`` (a zero C counts with exponent -126);
* parameters the golden suites do not exercise (rne, wrap, other F and W, K < 32) are checked on
  seeded random blocks against ``mxsim.ref.dot.dot`` directly.

* encode: every ``golden/encode`` suite of an OCP float element format (E4M3, E5M2, E2M3, E3M2,
  E2M1) through ``rtl/tb_encode.v`` (field code), rounding and overflow from the manifest;
  roundings and overflow modes the suites lack (rup, rdn, rna, ieee) on seeded random fp32
  against ``mxsim.ref.encode.encode``;
* quantize: every ``golden/quantize`` suite of an E8M0-scaled float format with the default
  options through ``rtl/tb_quant.v`` (fields scale, scale_exp, codes); K = 8 and random blocks
  spanning fp32 subnormals to the top binade against ``mxsim.ref.block.quantize_block``.

The golden suites of every model run under both simulators (``simulator`` fixture; rtl/sim.py,
one build per configuration); teeth and parameter checks run under Icarus. Without a simulator
its tests skip, or fail when the environment variable CI is set (CI installs both).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
from pathlib import Path

import pytest

from mxsim.formats import BlockFormat, get_format
from mxsim.golden.kinds.format_spec import block_format
from mxsim.options.accumulate import Accumulator
from mxsim.options import DequantizeOptions, QuantizeOptions
from mxsim.ref.block import quantize_block
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.dequant import dequantize_block_bits
from mxsim.ref.dot import dot, dot_general
from mxsim.ref.encode import encode
from mxsim.ref.output import fp32_bits

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "rtl"
# MXSIM_GOLDEN points the RTL proof at another golden tree (e.g. a freshly generated one).
GOLDEN = Path(os.environ.get("MXSIM_GOLDEN") or ROOT / "golden")

DECODE_SUITES = {"fp8_e4m3": 0, "fp4_e2m1": 1}  # suite -> FMT parameter
REQUIRED_DOT_SUITES = (
    "mxfp8_e4m3-aligned-f8-w14-truncate-saturate",
    "mxfp4_e2m1-aligned-f4-w10-truncate-saturate",
    # the configurations the mutation campaign needs (rtl/mutants.py): rne shifts with a wrapping register,
    # and a register of more than 25 significant bits (the fp32 output rounding's carry)
    "mxfp8_e4m3-aligned-f8-w14-rne-wrap",
    "mxfp8_e4m3-aligned-f24-w32-truncate-saturate",
)
# the suites of the teeth checks: every required one but f24-w32, whose register never overflows
# (|acc| <= 32 * 15 * 15 * 2^(24 - 6) < 2^31), so MUTATE_WRAP cannot change it there
DOT_TEETH_SUITES = tuple(name for name in REQUIRED_DOT_SUITES if "-f24-w32-" not in name)
DOT_FORMATS = {"mxfp8_e4m3": (0, 8), "mxfp4_e2m1": (1, 4)}  # format -> (FMT, element bits)
DEQUANT_FORMATS = {"mxfp8_e4m3": 0, "mxfp8_e5m2": 1}  # format -> FMT parameter of mx_dequant
DEQUANT_OUTPUTS = {"float32": (0, 32), "float16": (1, 16), "bfloat16": (2, 16)}  # output -> (OUT, word bits)
REQUIRED_DEQUANT_SUITES = (
    "mxfp8_e4m3-fp32",
    "mxfp8_e5m2-fp32",
    "mxfp8_e5m2-fp32-dequant_ftz=True-dequant_nan=canonical-dequant_overflow=saturate-scale_encoding=int8_exponent",
    # the outputs that round (nearest even into their subnormal bands)
    "mxfp8_e4m3-bf16",
    "mxfp8_e5m2-fp16-dequant_nan=canonical-scale_encoding=int8_exponent",
)
DEQUANT_NAME = re.compile(r"^(mxfp8_e4m3|mxfp8_e5m2)-(fp32|fp16|bf16)(-.*)?$")
SUITE_NAME = re.compile(r"^(mxfp8_e4m3|mxfp4_e2m1)-aligned-f(\d+)-w(\d+)-(truncate|rne)-(saturate|wrap)$")


# ------------------------------------------------------------------------------------------------
# Tools (rtl/sim.py builds and runs the testbenches)
# ------------------------------------------------------------------------------------------------

_spec = importlib.util.spec_from_file_location("mxsim_rtl_sim", RTL / "sim.py")
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)


def _simulator(kind: str, tmp_path_factory):
    """A Simulator of ``kind``; skip (or fail under CI, which installs both) when it is missing."""
    try:
        return sim.SIMULATORS[kind](tmp_path_factory.mktemp(f"rtl_{kind}"))
    except sim.SimulatorMissing as missing:
        reason = f"{missing}; the RTL proof of the golden vectors needs it"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set, and CI installs it)")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def icarus(tmp_path_factory):
    """Icarus Verilog (every test of this file)."""
    return _simulator("icarus", tmp_path_factory)


@pytest.fixture(scope="session")
def verilator(tmp_path_factory):
    """Verilator (the golden suites of every model; one build per configuration, cached)."""
    return _simulator("verilator", tmp_path_factory)


@pytest.fixture(params=sorted(sim.SIMULATORS))
def simulator(request):
    """Each simulator in turn: the golden suites pass under both."""
    return request.getfixturevalue(request.param)


def run_tb(command: list[str], suite: Path, count: int) -> tuple[int, int, str]:
    """Run a built testbench on a suite; (passed, failed, full output)."""
    return sim.run_testbench(command, suite, count)


# ------------------------------------------------------------------------------------------------
# Suites
# ------------------------------------------------------------------------------------------------


def manifest(suite: Path) -> dict:
    path = suite / "manifest.json"
    assert path.is_file(), f"golden suite {suite} has no manifest.json"
    data = json.loads(path.read_text())
    fields = {f["name"]: f for f in data["fields"]}
    for f in fields.values():
        assert f["hex_digits"] == (f["bits"] + 3) // 4, f"{suite.name}: field {f['name']} hex_digits"
        assert (suite / f["file"]).is_file(), f"{suite.name}: missing {f['file']}"
    assert isinstance(data["count"], int) and data["count"] > 0, f"{suite.name}: bad count"
    return {"count": data["count"], "fields": fields, "params": data.get("params", {})}


def dot_params(suite: Path, info: dict) -> dict:
    """mx_dot / tb_dot parameters of a suite, from its name, cross-checked with the manifest."""
    m = SUITE_NAME.match(suite.name)
    assert m, f"unrecognised dot suite name {suite.name}"
    fmt, f_bits, width, rounding, overflow = m.groups()
    code, ew = DOT_FORMATS[fmt]
    fields = info["fields"]
    for name in ("a_scale", "a_elems", "b_scale", "b_elems", "acc", "lsb", "anchor", "result"):
        assert name in fields, f"{suite.name}: manifest has no field {name}"
    elem_bits = fields["a_elems"]["bits"]
    assert elem_bits % ew == 0 and fields["b_elems"]["bits"] == elem_bits, f"{suite.name}: element field widths"
    assert fields["acc"]["bits"] == int(width) and fields["acc"]["signed"], f"{suite.name}: acc must be signed W bits"
    assert fields["lsb"]["bits"] == 16 and fields["anchor"]["bits"] == 16, f"{suite.name}: lsb/anchor widths"
    assert fields["result"]["bits"] == 32, f"{suite.name}: result width"
    params = info["params"]
    if params:  # the generator's record of the configuration must agree with the name
        acc = params.get("accumulator", {})
        expected = {
            "mode": "aligned",
            "frac_bits": int(f_bits),
            "width": int(width),
            "shift_rounding": rounding,
            "overflow": overflow,
            "output": "fp32",
            "output_rounding": "rne",
            "ftz": False,
        }
        assert {key: acc.get(key, expected[key]) for key in expected} == expected, f"{suite.name}: params {acc}"
        assert params.get("block_b", fmt) == params.get("block_a", fmt) == fmt, f"{suite.name}: formats {params}"
    return {
        "FMT": code,
        "K": elem_bits // ew,
        "F": int(f_bits),
        "W": int(width),
        "SHIFT_RNE": int(rounding == "rne"),
        "WRAP": int(overflow == "wrap"),
        "MAXN": info["count"],
    }


def golden_dot_suites() -> list[str]:
    found = set(REQUIRED_DOT_SUITES)
    if (GOLDEN / "dot").is_dir():
        found |= {p.name for p in (GOLDEN / "dot").iterdir() if p.is_dir() and SUITE_NAME.match(p.name)}
    return sorted(found)


def golden_suite(kind: str, name: str) -> Path:
    suite = GOLDEN / kind / name
    assert suite.is_dir(), f"golden suite {suite} is missing (regenerate the golden vectors)"
    return suite


# ------------------------------------------------------------------------------------------------
# Golden suites, clean RTL
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DECODE_SUITES))
def test_decode_golden(simulator, name):
    suite = golden_suite("decode", name)
    info = manifest(suite)
    assert {"code", "value"} <= set(info["fields"]), f"{name}: manifest needs fields code and value"
    params = {"FMT": DECODE_SUITES[name], "MAXN": info["count"]}
    image = simulator.build("tb_decode", ("tb_decode.v", "mx_elem_decode.v"), params)
    passed, failed, output = run_tb(image, suite, info["count"])
    assert failed == 0, output
    assert passed == info["count"], output


@pytest.mark.parametrize("name", golden_dot_suites())
def test_dot_golden(simulator, name):
    suite = golden_suite("dot", name)
    info = manifest(suite)
    image = simulator.build("tb_dot", ("tb_dot.v", "mx_dot.v"), dot_params(suite, info))
    passed, failed, output = run_tb(image, suite, info["count"])
    assert failed == 0, output
    assert passed == info["count"], output


# ------------------------------------------------------------------------------------------------
# Teeth: a one-behaviour mutation of mx_dot must be caught on the same golden suites
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mutation", ["MUTATE_SHIFT", "MUTATE_WRAP"])
@pytest.mark.parametrize("name", DOT_TEETH_SUITES)
def test_dot_mutation_caught(icarus, name, mutation):
    suite = golden_suite("dot", name)
    info = manifest(suite)
    image = icarus.build("tb_dot", ("tb_dot.v", "mx_dot.v"), dot_params(suite, info), (mutation,))
    passed, failed, output = run_tb(image, suite, info["count"])
    assert passed + failed == info["count"], output
    assert failed > 0, f"{mutation} went unnoticed on {name}: the suite lacks vectors that tell it apart\n{output}"
    assert "MISMATCH line" in output, output


# ------------------------------------------------------------------------------------------------
# Parameters outside the golden suites, against the reference model directly
# ------------------------------------------------------------------------------------------------


def write_suite(path: Path, fields: list[tuple[str, int]], rows: list[dict]) -> None:
    """The golden-file layout: one <field>.hex per field, fixed-width two's-complement hex."""
    path.mkdir(parents=True, exist_ok=True)
    for name, bits in fields:
        digits = (bits + 3) // 4
        text = "".join(f"{row[name] & ((1 << bits) - 1):0{digits}x}\n" for row in rows)
        (path / f"{name}.hex").write_text(text)


def pack(codes: list[int], ew: int) -> int:
    """A block word: element i at bits [i*ew, (i+1)*ew) (docs/numerics.md section 3, RTL word)."""
    return sum(c << (i * ew) for i, c in enumerate(codes))


def random_codes(rng: random.Random, ew: int, k: int, kind: int) -> list[int]:
    """Blocks that reach every datapath branch, by kind: 0 any code (NaN included), 1 wide
    exponent spread, 2 large same-sign runs (saturation, wrap), 3 subnormals and zeros, 4 exact
    cancellation, 5 zeros."""
    if ew == 8:
        if kind == 0:
            return [rng.randrange(256) for _ in range(k)]
        if kind == 1:
            return [rng.choice((0, 0x80)) | rng.randrange(0x7F) for _ in range(k)]
        if kind == 2:
            sign = rng.choice((0, 0x80))
            return [sign | rng.randrange(0x70, 0x7F) for _ in range(k)]
        if kind == 3:
            return [rng.choice((0, 0x80)) | rng.randrange(0x10) for _ in range(k)]
    else:
        if kind in (0, 1, 3):
            return [rng.randrange(16) for _ in range(k)]
        if kind == 2:
            sign = rng.choice((0, 8))
            return [sign | rng.randrange(4, 8) for _ in range(k)]
    if kind == 4:
        half = [rng.randrange(1 << (ew - 1)) for _ in range(k // 2)]
        return (half + [c ^ (1 << (ew - 1)) for c in half] + [0] * k)[:k]
    return [0] * k


PARAMETER_CASES = [
    # format, K, F, W, shift_rounding, overflow
    ("mxfp8_e4m3", 32, 8, 14, "rne", "saturate"),
    ("mxfp8_e4m3", 32, 8, 14, "truncate", "wrap"),
    ("mxfp8_e4m3", 32, 0, 6, "rne", "wrap"),
    ("mxfp8_e4m3", 32, 30, 42, "rne", "saturate"),  # contract 5.1 exact width: never overflows
    ("mxfp8_e4m3", 8, 5, 9, "truncate", "saturate"),
    ("mxfp4_e2m1", 32, 4, 10, "rne", "wrap"),
    ("mxfp4_e2m1", 32, 0, 4, "rne", "saturate"),
    ("mxfp4_e2m1", 5, 2, 5, "rne", "wrap"),
    ("mxfp4_e2m1", 32, 9, 16, "truncate", "saturate"),  # exact width: no rounding, no overflow
]


@pytest.mark.parametrize("case", PARAMETER_CASES, ids=lambda c: "-".join(map(str, c)))
def test_dot_parameters_against_reference(icarus, tmp_path, case):
    fmt, k, f_bits, width, rounding, overflow = case
    code, ew = DOT_FORMATS[fmt]
    accumulator = Accumulator(mode="aligned", frac_bits=f_bits, width=width, shift_rounding=rounding, overflow=overflow)
    rng = random.Random(f"{case}")
    scales = (0x00, 0x01, 0x7F, 0xFE, 0xFF)
    rows = []
    for _ in range(250):
        kind = rng.randrange(6)  # operands of one kind 40% of the time: large x large saturates
        a = random_codes(rng, ew, k, kind)
        b = random_codes(rng, ew, k, kind if rng.random() < 0.4 else rng.randrange(6))
        sa = rng.choice(scales) if rng.random() < 0.3 else rng.randrange(100, 160)
        sb = rng.choice(scales) if rng.random() < 0.3 else rng.randrange(256)
        pad = (0,) * (32 - k)  # K < 32: the reference block is padded with zeros, which add nothing
        r = dot(
            QuantizedBlock(sa, (), tuple(a) + pad), QuantizedBlock(sb, (), tuple(b) + pad), fmt, accumulator=accumulator
        )
        rows.append(
            {
                "a_scale": sa,
                "a_elems": pack(a, ew),
                "b_scale": sb,
                "b_elems": pack(b, ew),
                "acc": r.accumulator,
                "lsb": r.lsb_exponent,
                "anchor": r.anchor,
                "result": r.code,
            }
        )
    fields = [
        ("a_scale", 8),
        ("a_elems", k * ew),
        ("b_scale", 8),
        ("b_elems", k * ew),
        ("acc", width),
        ("lsb", 16),
        ("anchor", 16),
        ("result", 32),
    ]
    write_suite(tmp_path, fields, rows)
    params = {
        "FMT": code,
        "K": k,
        "F": f_bits,
        "W": width,
        "SHIFT_RNE": int(rounding == "rne"),
        "WRAP": int(overflow == "wrap"),
        "MAXN": len(rows),
    }
    passed, failed, output = run_tb(icarus.build("tb_dot", ("tb_dot.v", "mx_dot.v"), params), tmp_path, len(rows))
    assert (passed, failed) == (len(rows), 0), output


# ------------------------------------------------------------------------------------------------
# Dequantizer: golden suites, teeth, and parameters outside them
# ------------------------------------------------------------------------------------------------


def dequant_params(suite: Path, info: dict) -> dict:
    """mx_dequant / tb_dequant parameters of a dequantize suite, from the manifest's params."""
    params, fields = info["params"], info["fields"]
    assert params.get("output") in DEQUANT_OUTPUTS, f"{suite.name}: params {params}"
    assert params.get("block") in DEQUANT_FORMATS, f"{suite.name}: params {params}"
    out, word = DEQUANT_OUTPUTS[params["output"]]
    widths = (fields["scale"]["bits"], fields["codes"]["bits"], fields["values"]["bits"])
    assert widths == (8, 256, 32 * word), f"{suite.name}: field widths {widths}"
    options = DequantizeOptions.from_kwargs(**params["options"])
    return {
        "FMT": DEQUANT_FORMATS[params["block"]],
        "OUT": out,
        "SCALE_INT8": int(params["scale_encoding"] == "int8_exponent"),
        "SATURATE": int(options.dequant_overflow == "saturate"),
        "FTZ": int(options.dequant_ftz),
        "NAN_CANON": int(options.dequant_nan == "canonical"),
        "MAXN": info["count"],
    }


def golden_dequant_suites() -> list[str]:
    found = set(REQUIRED_DEQUANT_SUITES)
    if (GOLDEN / "dequantize").is_dir():
        found |= {p.name for p in (GOLDEN / "dequantize").iterdir() if p.is_dir() and DEQUANT_NAME.match(p.name)}
    return sorted(found)


@pytest.mark.parametrize("name", golden_dequant_suites())
def test_dequant_golden(simulator, name):
    suite = golden_suite("dequantize", name)
    info = manifest(suite)
    image = simulator.build("tb_dequant", ("tb_dequant.v", "mx_dequant.v"), dequant_params(suite, info))
    passed, failed, output = run_tb(image, suite, info["count"])
    assert failed == 0, output
    assert passed == info["count"], output


@pytest.mark.parametrize("mutation", ["MUTATE_FTZ", "MUTATE_SATURATE", "MUTATE_NAN"])
@pytest.mark.parametrize("name", REQUIRED_DEQUANT_SUITES)
def test_dequant_mutation_caught(icarus, name, mutation):
    suite = golden_suite("dequantize", name)
    info = manifest(suite)
    image = icarus.build("tb_dequant", ("tb_dequant.v", "mx_dequant.v"), dequant_params(suite, info), (mutation,))
    passed, failed, output = run_tb(image, suite, info["count"])
    assert passed + failed == info["count"], output
    assert failed > 0, f"{mutation} went unnoticed on {name}: the suite lacks vectors that tell it apart\n{output}"
    assert "MISMATCH line" in output, output


DEQUANT_CASES = [
    # format, scale encoding, saturate, ftz, canonical NaN, K, output
    ("mxfp8_e4m3", "e8m0", True, True, True, 32, "float32"),
    ("mxfp8_e4m3", "int8_exponent", False, True, False, 32, "float32"),
    ("mxfp8_e5m2", "e8m0", True, False, False, 32, "float32"),
    ("mxfp8_e5m2", "int8_exponent", False, False, True, 8, "float32"),
    # the rounding outputs with the options and encodings their golden suites lack
    ("mxfp8_e4m3", "int8_exponent", True, True, True, 8, "float16"),
    ("mxfp8_e5m2", "e8m0", False, False, False, 32, "float16"),
    ("mxfp8_e4m3", "int8_exponent", True, False, True, 32, "bfloat16"),
    ("mxfp8_e5m2", "e8m0", False, True, False, 8, "bfloat16"),
]


@pytest.mark.parametrize("case", DEQUANT_CASES, ids=lambda c: "-".join(map(str, c)))
def test_dequant_parameters_against_reference(icarus, tmp_path, case):
    fmt, encoding, saturate, ftz, canonical, k, output = case
    options = DequantizeOptions(
        dequant_overflow="saturate" if saturate else "inf",
        dequant_ftz=ftz,
        dequant_nan="canonical" if canonical else "keep_sign",
    )
    out, word = DEQUANT_OUTPUTS[output]
    rng = random.Random(f"{case}")
    # both encodings' extremes, fp32's edges, and the exponents around fp16's and bf16's subnormal bands
    edges = (0x00, 0x01, 0x7F, 0x80, 0x90, 0xF0, 0xFE, 0xFF, 0x6C, 0x70, 0x74, 0xE8, 0xEC, 0xF8, 0x02, 0x04)
    rows = []
    for _ in range(300):
        scale = rng.choice(edges) if rng.random() < 0.5 else rng.randrange(256)
        codes = [rng.randrange(256) for _ in range(k)]
        block = QuantizedBlock(scale, (), tuple(codes) + (0,) * (32 - k))  # the reference block is 32 wide
        words = dequantize_block_bits(block, fmt, output, options, scale_encoding=encoding)
        rows.append({"scale": scale, "codes": pack(codes, 8), "values": pack(words[:k], word)})
    write_suite(tmp_path, [("scale", 8), ("codes", 8 * k), ("values", word * k)], rows)
    params = {
        "FMT": DEQUANT_FORMATS[fmt], "OUT": out, "K": k, "SCALE_INT8": int(encoding == "int8_exponent"),
        "SATURATE": int(saturate), "FTZ": int(ftz), "NAN_CANON": int(canonical), "MAXN": len(rows),
    }
    image = icarus.build("tb_dequant", ("tb_dequant.v", "mx_dequant.v"), params)
    passed, failed, output = run_tb(image, tmp_path, len(rows))
    assert (passed, failed) == (len(rows), 0), output


# ------------------------------------------------------------------------------------------------
# The cocotb scoreboard (rtl/cocotb): mxsim's reference checking mx_dot in simulation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        ("mxfp8_e4m3", 32, 8, 14, "truncate", "saturate"),
        ("mxfp4_e2m1", 32, 4, 10, "rne", "wrap"),
    ],
    ids=lambda c: "-".join(map(str, c)),
)
def test_cocotb_scoreboard(icarus, tmp_path, config):
    import cocotb  # noqa: F401  (in the [test] extra: a missing cocotb fails, it is not skipped)
    import cocotb_tools.runner  # noqa: F401
    spec = importlib.util.spec_from_file_location("mx_dot_cocotb_run", RTL / "cocotb" / "run.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    fmt, k, f_bits, width, rounding, overflow = config
    tests, failed = runner.run(fmt, k, f_bits, width, rounding, overflow, count=150, seed=7, build_dir=tmp_path)
    assert (tests, failed) == (1, 0)


# ------------------------------------------------------------------------------------------------
# Fused steps (MXDOTP): golden suites, teeth, and parameters outside them
# ------------------------------------------------------------------------------------------------

REQUIRED_FUSED_SUITES = ("mxfp8_e4m3-mxdotp_fp8-steps", "mxfp8_e4m3-mxdotp_fp8-output_rounding=rtz-steps") + tuple(
    f"mxfp8_e4m3-mxdotp_fp8-output_rounding={mode}-steps-no_pairs" for mode in ("rdn", "rup", "rna"))
RM_CODES = {"rne": 0, "rtz": 1, "rdn": 2, "rup": 3, "rna": 4}  # RISC-V frm, mx_fused_dot's RM
FP32_QNAN = 0x7FC00000


def fused_accumulator(params: dict) -> Accumulator | None:
    """The Accumulator of a dot suite that mx_fused_dot implements, or None: MXFP8 E4M3 blocks,
    fused product steps inside the block on the fixed grid (F >= 18: products exact), fp32 output
    with IEEE overflow, no ftz."""
    if params.get("block_a") != "mxfp8_e4m3" or params.get("block_b", "mxfp8_e4m3") != "mxfp8_e4m3":
        return None
    acc = Accumulator.from_kwargs(**params.get("accumulator", {}))
    step = acc.effective_step(32)
    ok = (acc.accumulate == "fused" and acc.anchor == "fixed" and acc.step_terms == "product" and acc.output == "fp32"
          and acc.output_overflow == "ieee" and not acc.ftz and acc.frac_bits >= 18 and 32 % step == 0 and step <= 16)
    return acc if ok else None


def fused_params(suite: Path, info: dict) -> dict:
    """mx_fused_dot / tb_fused_dot parameters of a fused suite, from the manifest's params."""
    acc = fused_accumulator(info["params"])
    assert acc is not None, f"{suite.name}: not a configuration of mx_fused_dot: {info['params']}"
    fields = info["fields"]
    step = acc.effective_step(32)
    widths = {name: fields[name]["bits"] for name in ("a_scale", "a_elems", "b_scale", "b_elems", "c", "result")}
    assert widths == {"a_scale": 8, "a_elems": 256, "b_scale": 8, "b_elems": 256, "c": 32, "result": 32}, widths
    if "steps" in fields:
        assert fields["steps"]["bits"] == 32 * (32 // step), f"{suite.name}: steps width"
    return {
        "N": step, "NSTEP": 32 // step, "F": acc.frac_bits, "USE_BYPASS": int(acc.bypass is not None),
        "BYPASS": acc.bypass or 0, "CZE": acc.effective_c_zero_exponent, "RM": RM_CODES[acc.output_rounding],
        "NAN_BITS": FP32_QNAN if acc.nan_bits is None else acc.nan_bits, "STEPS": int("steps" in fields),
        "PASS_C": int(acc.zero_product_sum != "add"),
        "PASS_BELOW": 24 if acc.zero_product_sum == "pass_c_outside_window" else -1,
        "MAXN": info["count"],
    }


def golden_fused_suites() -> list[str]:
    found = set(REQUIRED_FUSED_SUITES)
    for path in sorted((GOLDEN / "dot").glob("*/manifest.json")) if (GOLDEN / "dot").is_dir() else []:
        if fused_accumulator(json.loads(path.read_text()).get("params", {})) is not None:
            found.add(path.parent.name)
    return sorted(found)


FUSED_SOURCES = ("tb_fused_dot.v", "mx_fused_dot.v")


@pytest.mark.parametrize("name", golden_fused_suites())
def test_fused_golden(simulator, name):
    suite = golden_suite("dot", name)
    info = manifest(suite)
    params = fused_params(suite, info)
    assert params["STEPS"] == 1 or name not in REQUIRED_FUSED_SUITES, f"{name}: the RTL suites have a steps field"
    passed, failed, output = run_tb(simulator.build("tb_fused_dot", FUSED_SOURCES, params), suite, info["count"])
    assert failed == 0, output
    assert passed == info["count"], output


FUSED_MUTATIONS = ("MUTATE_NO_FUSION", "MUTATE_NO_BYPASS", "MUTATE_CZERO")


@pytest.mark.parametrize("mutation", FUSED_MUTATIONS)
@pytest.mark.parametrize("name", REQUIRED_FUSED_SUITES)
def test_fused_mutation_caught(icarus, name, mutation):
    suite = golden_suite("dot", name)
    info = manifest(suite)
    image = icarus.build("tb_fused_dot", FUSED_SOURCES, fused_params(suite, info), (mutation,))
    passed, failed, output = run_tb(image, suite, info["count"])
    assert passed + failed == info["count"], output
    assert failed > 0, f"{mutation} went unnoticed on {name}: the suite lacks vectors that tell it apart\n{output}"
    assert "MISMATCH line" in output, output


def fused_c(rng: random.Random, kind: int, d0: int, grid: int, bypass: int | None) -> int:
    """fp32 bits of C, by kind: 0 any bits, 1 -D0 (cancellation), 2 near D0, 3 at the bypass
    threshold, 4 +-0, 5 +-max, 6 subnormal, 7 NaN or Inf."""
    sign = rng.getrandbits(1) << 31
    if kind == 1 and d0 & 0x7FFFFFFF:
        return d0 ^ 0x80000000
    if kind in (1, 2):
        exponent = (d0 >> 23) & 0xFF or 127
        return sign | min(max(exponent + rng.randint(-20, 20), 1), 254) << 23 | rng.getrandbits(23)
    if kind == 3:
        exponent = grid + (bypass if bypass is not None else 60) + 23 + rng.choice((0, 1, 2, 5)) + 127
        return sign | min(max(exponent, 1), 254) << 23 | rng.getrandbits(23)
    if kind == 4:
        return sign
    if kind == 5:
        return sign | 0x7F7FFFFF
    if kind == 6:
        return sign | rng.randint(1, (1 << 23) - 1)
    if kind == 7:
        return rng.choice((0x7FC00000, 0xFF800001, 0x7F800000, 0xFF800000))
    return rng.getrandbits(32)


FUSED_CASES = [
    # K, products per step, F, bypass, c_zero_exponent, rounding
    (8, 8, 34, 70, -127, "rne"),  # one step per vector
    (32, 8, 34, 70, -127, "rup"),
    (32, 8, 34, 70, -127, "rdn"),
    (32, 8, 34, 70, -127, "rna"),
    (16, 4, 40, None, -127, "rne"),  # no bypass
    (32, 8, 20, 30, -126, "rtz"),
]


@pytest.mark.parametrize("case", FUSED_CASES, ids=lambda c: "-".join(map(str, c)))
def test_fused_parameters_against_reference(icarus, tmp_path, case):
    k, step, f_bits, bypass, c_zero, rounding = case
    fmt = BlockFormat(f"mxfp8_e4m3_k{k}", get_format("fp8_e4m3"), k, get_format("e8m0"))
    acc = Accumulator(mode="aligned", frac_bits=f_bits, accumulate="fused", step=step, anchor="fixed", bypass=bypass,
                      c_zero_exponent=c_zero, output_overflow="ieee", output_rounding=rounding)
    rng = random.Random(f"{case}")
    scales = (0x00, 0x01, 0x7F, 0xFE, 0xFF)
    rows = []
    for number in range(200):
        kind = rng.randrange(6)
        a = random_codes(rng, 8, k, kind)
        b = random_codes(rng, 8, k, kind if rng.random() < 0.4 else rng.randrange(6))
        sa = rng.choice(scales) if rng.random() < 0.2 else rng.randrange(100, 160)
        sb = rng.choice(scales) if rng.random() < 0.2 else rng.randrange(256) if rng.random() < 0.3 else rng.randrange(90, 170)
        if number % 10 == 0:  # scales near the zero-C bypass threshold
            total = c_zero - 23 + f_bits - (bypass or 0) + rng.randint(-2, 1) + 254
            sa, sb = total // 2, total - total // 2
        blocks = ([QuantizedBlock(sa, (), tuple(a))], [QuantizedBlock(sb, (), tuple(b))])
        d0 = dot_general(*blocks, fmt, accumulator=acc).steps[0]
        c = fused_c(rng, rng.randrange(8) if number % 10 else 4, d0, sa + sb - 254 - f_bits, bypass)
        steps = dot_general(*blocks, fmt, accumulator=acc, c=fp32_bits(c)).steps
        rows.append({"a_scale": sa, "a_elems": pack(a, 8), "b_scale": sb, "b_elems": pack(b, 8), "c": c,
                     "result": steps[-1], "steps": pack(list(steps), 32)})
    nstep = k // step
    write_suite(tmp_path, [("a_scale", 8), ("a_elems", 8 * k), ("b_scale", 8), ("b_elems", 8 * k), ("c", 32),
                           ("result", 32), ("steps", 32 * nstep)], rows)
    params = {"N": step, "NSTEP": nstep, "F": f_bits, "USE_BYPASS": int(bypass is not None), "BYPASS": bypass or 0,
              "CZE": c_zero, "RM": RM_CODES[rounding], "STEPS": 1, "MAXN": len(rows),
              "PASS_C": int(acc.zero_product_sum != "add"),
              "PASS_BELOW": 24 if acc.zero_product_sum == "pass_c_outside_window" else -1}
    passed, failed, output = run_tb(icarus.build("tb_fused_dot", FUSED_SOURCES, params), tmp_path, len(rows))
    assert (passed, failed) == (len(rows), 0), output


# ------------------------------------------------------------------------------------------------
# Element encoder and block quantizer: golden suites, and parameters outside them
# ------------------------------------------------------------------------------------------------

SPECIALS_CODES = {"ieee": 0, "fn": 1, "none": 2}  # mx_elem_encode / mx_block_quant SPECIALS
ENCODE_SOURCES = ("tb_encode.v", "mx_elem_encode.v")
QUANT_SOURCES = ("tb_quant.v", "mx_block_quant.v", "mx_elem_encode.v")
REQUIRED_ENCODE_SUITES = (
    "fp8_e4m3-rne-saturate", "fp8_e4m3-rtz-saturate", "fp8_e5m2-rne-ieee", "fp4_e2m1-rna-saturate",
    "fp8_e4m3-rdn-saturate", "fp8_e4m3-rup-saturate", "fp8_e5m2-rup-ieee", "fp8_e5m2-rtz-ieee",
)
REQUIRED_QUANT_SUITES = ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp4_e2m1")


def element_params(element) -> dict | None:
    """EB, MB, SPECIALS of an element format mx_elem_encode implements (a signed float format with
    subnormals, the standard bias 2^(EB-1) - 1 and an ieee, fn or none special-value layout), else None."""
    fmt = get_format(element, kind="element")
    if fmt.kind != "float" or not fmt.signed or not fmt.subnormals or fmt.specials not in SPECIALS_CODES:
        return None
    if fmt.bias != (1 << (fmt.exponent_bits - 1)) - 1 or fmt.width > 8:
        return None
    return {"EB": fmt.exponent_bits, "MB": fmt.mantissa_bits, "SPECIALS": SPECIALS_CODES[fmt.specials]}


def encode_params(suite: Path, info: dict) -> dict | None:
    """tb_encode parameters of an encode suite from its manifest's params, or None (not a suite
    of mx_elem_encode)."""
    params = info["params"]
    element = element_params(params["element"])
    if element is None or params["rounding"] not in RM_CODES or params["overflow"] not in ("saturate", "ieee"):
        return None
    fields = info["fields"]
    assert (fields["x"]["bits"], fields["code"]["bits"]) == (32, 1 + element["EB"] + element["MB"]), suite.name
    return {**element, "RM": RM_CODES[params["rounding"]], "OVF_IEEE": int(params["overflow"] == "ieee"),
            "MAXN": info["count"]}


def quant_params(suite: Path, info: dict) -> dict | None:
    """tb_quant parameters of a quantize suite: an E8M0-scaled float format of mx_elem_encode,
    the default options, no profile; else None."""
    params = info["params"]
    options = QuantizeOptions.from_kwargs(**params.get("options", {}))
    if params.get("profile") is not None or options != QuantizeOptions():
        return None
    fmt = block_format(params["block"])  # a catalogue name or a custom block (e.g. mx_e4m3fnuz)
    element = element_params(fmt.element)
    if element is None or fmt.scale.name != "e8m0" or fmt.subblocks or fmt.tensor_scale is not None:
        return None
    ew, k = 1 + element["EB"] + element["MB"], fmt.block_size
    widths = {name: info["fields"][name]["bits"] for name in ("x", "scale", "scale_exp", "codes")}
    assert widths == {"x": 32 * k, "scale": 8, "scale_exp": 16, "codes": ew * k}, f"{suite.name}: {widths}"
    return {**element, "K": k, "MAXN": info["count"]}


def golden_suites_of(kind: str, required: tuple[str, ...], params_of) -> list[str]:
    """The required suites and every other suite of ``kind`` in golden/ that ``params_of`` accepts."""
    found = set(required)
    for path in sorted((GOLDEN / kind).glob("*/manifest.json")) if (GOLDEN / kind).is_dir() else []:
        if params_of(path.parent, manifest(path.parent)) is not None:
            found.add(path.parent.name)
    return sorted(found)


@pytest.mark.parametrize("name", golden_suites_of("encode", REQUIRED_ENCODE_SUITES, encode_params))
def test_encode_golden(simulator, name):
    suite = golden_suite("encode", name)
    info = manifest(suite)
    params = encode_params(suite, info)
    assert params is not None, f"{name}: not a configuration of mx_elem_encode: {info['params']}"
    passed, failed, output = run_tb(simulator.build("tb_encode", ENCODE_SOURCES, params), suite, info["count"])
    assert (passed, failed) == (info["count"], 0), output


@pytest.mark.parametrize("name", golden_suites_of("quantize", REQUIRED_QUANT_SUITES, quant_params))
def test_quant_golden(simulator, name):
    suite = golden_suite("quantize", name)
    info = manifest(suite)
    params = quant_params(suite, info)
    assert params is not None, f"{name}: not a configuration of mx_block_quant: {info['params']}"
    passed, failed, output = run_tb(simulator.build("tb_quant", QUANT_SOURCES, params), suite, info["count"])
    assert (passed, failed) == (info["count"], 0), output


def random_fp32(rng: random.Random, low: int, high: int) -> int:
    """fp32 bits: a third uniform bits, else a value with its exponent in [low, high] (subnormals
    below -126), a random significand (a third of them near a rounding point of few-bit formats:
    a run of ones or zeros after the top bits), both signs; now and then +-0, +-Inf, NaN."""
    pick = rng.randrange(24)
    if pick == 0:
        return rng.choice((0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFA00001))
    if pick < 8:
        return rng.getrandbits(32)
    sign = rng.getrandbits(1) << 31
    exponent = rng.randint(low, high)
    fraction = rng.getrandbits(23)
    if rng.random() < 0.35:  # the top 1-5 bits, then a run of ones or zeros, maybe one bit at the end
        top = rng.randint(1, 5)
        run = (1 << (23 - top)) - 1 if rng.random() < 0.5 else 0
        fraction = (fraction >> (23 - top) << (23 - top)) | run ^ (rng.getrandbits(1) << rng.randrange(23 - top))
    if exponent < -126:  # fp32 subnormal: m * 2^-149
        return sign | ((1 << 23 | fraction) >> min(-126 - exponent, 24))
    return sign | (exponent + 127) << 23 | fraction


ENCODE_CASES = [
    # element, rounding, overflow
    ("fp8_e4m3", "rup", "ieee"),
    ("fp8_e4m3", "rdn", "saturate"),
    ("fp8_e4m3", "rna", "ieee"),
    ("fp8_e5m2", "rtz", "ieee"),
    ("fp8_e5m2", "rup", "saturate"),
    ("fp8_e5m2", "rdn", "ieee"),
    ("fp6_e3m2", "rup", "ieee"),
    ("fp4_e2m1", "rdn", "ieee"),
]


@pytest.mark.parametrize("case", ENCODE_CASES, ids=lambda c: "-".join(c))
def test_encode_parameters_against_reference(icarus, tmp_path, case):
    element, rounding, overflow = case
    fmt = get_format(element, kind="element")
    rng = random.Random(f"{case}")
    emax = int(fmt.max_normal).bit_length() - 1
    rows = []
    while len(rows) < 600:
        x = random_fp32(rng, fmt.emin - fmt.mantissa_bits - 3, emax + 2)
        if not fmt.has_nan and (x & 0x7FFFFFFF) > 0x7F800000:
            continue  # a NaN input: the reference refuses it for formats without NaN
        rows.append({"x": x, "code": encode(fp32_bits(x), fmt, rounding, overflow)})
    write_suite(tmp_path, [("x", 32), ("code", fmt.width)], rows)
    params = {**element_params(fmt), "RM": RM_CODES[rounding], "OVF_IEEE": int(overflow == "ieee"), "MAXN": len(rows)}
    passed, failed, output = run_tb(icarus.build("tb_encode", ENCODE_SOURCES, params), tmp_path, len(rows))
    assert (passed, failed) == (len(rows), 0), output


QUANT_CASES = [("mxfp8_e4m3", 32), ("mxfp8_e5m2", 32), ("mxfp6_e3m2", 32), ("mxfp4_e2m1", 8)]


@pytest.mark.parametrize("case", QUANT_CASES, ids=lambda c: "-".join(map(str, c)))
def test_quant_parameters_against_reference(icarus, tmp_path, case):
    """Seeded random blocks (K < 32: the reference block padded with zeros, which change nothing):
    one binade spread per block, from fp32 subnormals to the top of fp32, NaN/Inf now and then."""
    block, k = case
    fmt = get_format(block, kind="block")
    ew = fmt.element.width
    rng = random.Random(f"{case}")
    rows = []
    for _ in range(250):
        top = rng.randint(-150, 127)
        low = max(top - rng.choice((1, 3, 12, 40)), -160)
        xs = [random_fp32(rng, low, top) if rng.random() < 0.97 else rng.getrandbits(32) for _ in range(k)]
        if rng.random() < 0.7:  # most blocks finite
            xs = [x if (x & 0x7F800000) != 0x7F800000 else x & 0x807FFFFF for x in xs]
        result = quantize_block([fp32_bits(x) for x in xs] + [fp32_bits(0)] * (32 - k), block)
        exponent = -128 if result.scale == 0xFF else result.scale - 127
        rows.append({"x": pack(xs, 32), "scale": result.scale, "scale_exp": exponent,
                     "codes": pack(list(result.codes[:k]), ew)})
    write_suite(tmp_path, [("x", 32 * k), ("scale", 8), ("scale_exp", 16), ("codes", ew * k)], rows)
    params = {**element_params(fmt.element), "K": k, "MAXN": len(rows)}
    passed, failed, output = run_tb(icarus.build("tb_quant", QUANT_SOURCES, params), tmp_path, len(rows))
    assert (passed, failed) == (len(rows), 0), output


@pytest.mark.parametrize("rounding", ["rne", "rdn"])
def test_fused_zero_sum_window_against_reference(icarus, tmp_path, rounding):
    """MXDOTP's zero product sum (contract 6.1): C = +-0, a nonzero C and a subnormal C with
    all-zero or cancelling products at X = XA + XB - 254 around the window's edges (-187, -186,
    -92, -91) and inside and outside it: mx_fused_dot with PASS_C and PASS_BELOW = 24 gives the
    reference's words, which are -0 for a -0 C exactly outside [-186, -92]."""
    assert Accumulator.preset("mxdotp_fp8").zero_product_sum == "pass_c_outside_window"
    fmt = BlockFormat("mxfp8_e4m3_k8", get_format("fp8_e4m3"), 8, get_format("e8m0"))
    acc = Accumulator.preset("mxdotp_fp8", output_rounding=rounding)
    one, minus_one = 0x38, 0xB8  # E4M3 1.0 and -1.0
    rows = []
    for x in (-254, -187, -186, -150, -92, -91, -40, 0, 254):
        sa, sb = (x + 254) // 2, x + 254 - (x + 254) // 2
        for a in ([0x80, 0, 0, 0x80, 0, 0, 0, 0], [one, minus_one, 0, 0, 0, 0, 0, 0]):
            b = [one, one, 0, 0, 0, 0, 0, 0]
            for c in (0x80000000, 0, 0x80000003, 0x3F800000):
                blocks = ([QuantizedBlock(sa, (), tuple(a))], [QuantizedBlock(sb, (), tuple(b))])
                steps = dot_general(*blocks, fmt, accumulator=acc, c=fp32_bits(c)).steps
                rows.append({"a_scale": sa, "a_elems": pack(a, 8), "b_scale": sb, "b_elems": pack(b, 8), "c": c,
                             "result": steps[-1], "steps": pack(list(steps), 32)})
                if c == 0x80000000:
                    assert steps[-1] == (0 if -186 <= x <= -92 else 0x80000000), x
    write_suite(tmp_path, [("a_scale", 8), ("a_elems", 64), ("b_scale", 8), ("b_elems", 64), ("c", 32),
                           ("result", 32), ("steps", 32)], rows)
    params = {"N": 8, "NSTEP": 1, "F": 34, "USE_BYPASS": 1, "BYPASS": 70, "CZE": -127, "RM": RM_CODES[rounding],
              "STEPS": 1, "MAXN": len(rows), "PASS_C": 1, "PASS_BELOW": 24}
    passed, failed, output = run_tb(icarus.build("tb_fused_dot", FUSED_SOURCES, params), tmp_path, len(rows))
    assert (passed, failed) == (len(rows), 0), output
