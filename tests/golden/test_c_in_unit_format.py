"""Suites whose C the hardware can load (docs/numerics.md section 4.1): a fused unit's accumulator
input C is its D register, so an fp16-D instruction takes an fp16 C and MXDOTP's BF16 destination
a bf16 C (``Accumulator.c_storage``); separate accumulation starts an fp32 sum at C.

A dot or dotgeneral suite stores C in that format's width, draws only C values of that format,
and the datapath reads C by its value. Expected values here come from NumPy's float16 and from
bf16 as the top half of an fp32 word (independent of mxsim's decoder), and from the reference
model; the suites round-trip through generate, verify, check and stream.
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from mxsim import Accumulator
from mxsim.cli import main
from mxsim.golden import generate, suite_from_spec, verify
from mxsim.golden.device.decompose import layouts, value_text
from mxsim.golden.kinds.batch import compute_each
from mxsim.golden.values import float_value
from mxsim.ref.exact import Exact

F16_SUITE = ("dot", {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma_f16", "unit_scales": True})
BF16_SUITE = ("dot", {"block_a": "mxfp8_e5m2", "preset": "mxdotp_fp8_bf16", "steps": True})
GENERAL_F16 = ("dotgeneral", {"block_a": "mxfp8_e5m2", "preset": "rtx_blackwell_f8f6f4_f16", "unit_scales": True,
                              "n_blocks": 2})
FP32_SUITE = ("dot", {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True})


def exact_of(word: int, name: str) -> Exact:
    """The exact value of a 16-bit C word, computed without mxsim: NumPy's float16, or bf16 as
    the top half of an fp32 word; every such value is a float64."""
    if name == "fp16":
        value = float(np.array([word], np.uint16).view(np.float16)[0])
    else:
        value = float(np.array([word << 16], np.uint32).view(np.float32)[0])
    if value != value:
        return Exact(0, Fraction(0), "nan")
    if value in (float("inf"), float("-inf")):
        return Exact(int(value < 0), Fraction(0), "inf")
    return Exact(int(np.signbit(value)), abs(Fraction(value)))


@pytest.mark.parametrize("preset, c_format", [
    ("hopper_fp8_wgmma_f16", "fp16"), ("ada_fp8_mma_f16", "fp16"), ("rtx_blackwell_f8f6f4_f16", "fp16"),
    ("mxdotp_fp8_bf16", "bf16"), ("mxdotp_int8_bf16", "bf16"), ("hopper_fp8_wgmma", "fp32"), ("mxdotp_fp8", "fp32"),
    ("blackwell_mxf8f6f4", "fp32"), ("fp32_per_block", "fp32"),
])
def test_a_preset_says_its_c_format(preset, c_format):
    assert Accumulator.preset(preset).c_storage == c_format


def test_separate_accumulation_keeps_an_fp32_c():
    """Separate accumulation adds C into its fp32 sum: an fp16 output does not make C fp16."""
    assert Accumulator(output="fp16").c_storage == "fp32"
    suite = suite_from_spec("dot", block_a="mxfp8_e4m3", accumulator={"output": "fp16"}, c_input=True)
    assert next(f.bits for f in suite.inputs if f.name == "c") == 32


@pytest.mark.parametrize("spec, c_format, bits", [
    (F16_SUITE, "fp16", 16), (BF16_SUITE, "bf16", 16), (GENERAL_F16, "fp16", 16), (FP32_SUITE, "fp32", 32),
])
def test_the_c_field_has_the_unit_s_width(spec, c_format, bits):
    suite = suite_from_spec(spec[0], **spec[1])
    field = next(f for f in suite.inputs if f.name == "c")
    assert (field.bits, field.description) == (bits, f"{c_format} bits of the accumulator input C")
    assert layouts(suite)["c"].fmt.name == c_format and layouts(suite)["c"].width == bits


@pytest.fixture(scope="module", params=[F16_SUITE, BF16_SUITE, GENERAL_F16], ids=["f16", "bf16", "general_f16"])
def generated(request, tmp_path_factory) -> tuple:
    suite = suite_from_spec(request.param[0], **request.param[1])
    return suite, generate(suite, tmp_path_factory.mktemp("suite"), count=600)


def _column(directory: Path, name: str) -> list[int]:
    return [int(line, 16) for line in (directory / f"{name}.hex").read_text().split()]


def test_every_c_is_a_value_of_the_destination_and_the_reference_reads_it(generated):
    """The manifest states C's width and format; every C line is one 16-bit word; the suite's
    outputs are the reference's with C = that word's exact value (decoded independently here),
    and the fast path's (compute_batch) equal them."""
    suite, directory = generated
    manifest = json.loads((directory / "manifest.json").read_text())
    field = next(f for f in manifest["fields"] if f["name"] == "c")
    name = suite.acc.c_storage
    assert (field["bits"], field["hex_digits"], field["description"]) == (16, 4, f"{name} bits of the accumulator input C")
    lines = (directory / "c.hex").read_text().split()
    assert len(lines) == manifest["count"] and all(len(line) == 4 for line in lines)
    inputs = {f.name: _column(directory, f.name) for f in suite.inputs}
    c_words = inputs["c"]
    kinds = {exact_of(w, name).kind for w in c_words}
    assert kinds == {"finite", "nan", "inf"}, kinds  # C draws of every kind
    assert sum(1 for w in c_words if exact_of(w, name).kind == "finite" and exact_of(w, name).magnitude) > 300
    results = _column(directory, "result")
    for i in range(0, len(c_words), 7):
        row = {key: column[i] for key, column in inputs.items()}
        assert float_value(row["c"], suite.c_format) == exact_of(c_words[i], name) or exact_of(c_words[i], name).kind == "nan"
        expected = suite.reference_codes(row, exact_of(c_words[i], name))[-1]
        assert results[i] == expected, (i, hex(c_words[i]))
    fast, fast_flags = suite.compute_batch(inputs)
    ref, ref_flags = compute_each(suite, inputs)
    assert [int(v) for v in fast["result"]] == ref["result"] == results
    assert [int(v) for v in fast_flags] == ref_flags


def test_a_16_bit_c_suite_verifies_checks_and_streams(generated, tmp_path, capsys):
    """verify passes; check passes a device that gives the suite's outputs and names a wrong
    result, showing C decoded in its 16-bit format; stream writes the same lines with a c:16 column."""
    suite, directory = generated
    assert verify(directory).ok
    dut = tmp_path / "dut"
    dut.mkdir()
    for f in suite.outputs:
        shutil.copy(directory / f"{f.name}.hex", dut / f"{f.name}.hex")
    capsys.readouterr()
    assert main(["golden", "check", str(directory), str(dut)]) == 0
    lines = (dut / "result.hex").read_text().split("\n")
    lines[3] = format(int(lines[3], 16) ^ 1, f"0{len(lines[3])}x")
    (dut / "result.hex").write_text("\n".join(lines))
    capsys.readouterr()
    assert main(["golden", "check", str(directory), str(dut)]) == 1
    out = capsys.readouterr().out
    c_word = _column(directory, "c")[3]
    assert f"  c = {c_word:04x}" in out.splitlines(), out  # the device's input C as the 16-bit word it loads
    bits = 5 if suite.acc.c_storage == "fp16" else 8  # and decomposed in its own format (check --explain)
    field = (c_word >> (15 - bits)) & ((1 << bits) - 1)
    assert value_text(c_word, layouts(suite)["c"]).startswith(f"s={c_word >> 15} e={field:0{bits}b} m=")
    capsys.readouterr()
    assert main(["golden", "stream", "--suite", suite.kind, "--params", json.dumps(suite.params()), "--count", "40",
                 "--seed", "0"]) == 0
    streamed = capsys.readouterr().out.split("\n")
    assert ",c:16 " in streamed[0] or ",c:16" in streamed[0], streamed[0]
    again = generate(suite, tmp_path / "again", count=40)
    files = [(again / f"{f.name}.hex").read_text().split() for f in suite.fields]
    assert streamed[1:-1] == [" ".join(row) for row in zip(*files)]
