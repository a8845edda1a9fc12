"""Golden vectors at verification scale: ``generate --count`` (the catalogue first, then seeded
random vectors; the same bytes whatever the chunk size or sharding; bounded memory), ``stream``
(TestFloat-style lines on stdout), ``verify --sample``, and ``check`` of a device's results
against planted mistakes (expected reports derived here from the plants, not from the checker)."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys
import tracemalloc
from fractions import Fraction
from pathlib import Path

import pytest

from mxsim.cli import main
from mxsim.golden import generate, suite_from_spec, verify
from mxsim.golden.compute import pipeline
from mxsim.golden.storage import stream as golden_stream
from mxsim.golden.device.check import check
from mxsim.golden.coverage.catalogue import CLASSES, class_names, flag_bits
from mxsim.golden.kinds.decode import DecodeSuite
from mxsim.golden.device.decompose import layouts, value_text

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
PACK = ("pack", {"block": "mxfp4_e2m1"})  # catalogue: 8 + 24 pattern directed + 100 random
QUANTIZE = ("quantize", {"block": "mxfp4_e2m1"})  # catalogue: 32 directed + 100 random; outputs scale, scale_exp, codes
DECODE = ("decode", {"element": "fp4_e2m1"})  # catalogue: the 16 codes


def _suite(spec):
    return suite_from_spec(spec[0], **spec[1])


def _lines(directory: Path, name: str) -> list[str]:
    return (directory / f"{name}.hex").read_text().splitlines()


def _manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text())


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


# --- --count: the catalogue first, then random --------------------------------------------------
# One small suite of every kind (each kind draws its own random vectors beyond the catalogue).
EVERY_KIND = [
    ("decode", {"element": "fp4_e2m1"}),
    ("encode", {"element": "fp4_e2m1"}),
    ("quantize", {"block": "mxfp4_e2m1"}),
    ("pack", {"block": "mxfp4_e2m1"}),
    ("dequantize", {"block": "mxfp4_e2m1", "output": "bf16"}),
    ("dot", {"block_a": "mxfp4_e2m1"}),
    ("dotgeneral", {"block_a": "mxfp4_e2m1", "n_blocks": 2}),
]


@pytest.mark.parametrize("spec", EVERY_KIND, ids=[kind for kind, _ in EVERY_KIND])
def test_every_kind_draws_vectors_beyond_its_catalogue(tmp_path, spec):
    """--count beyond the catalogue works for every suite kind (the dequantize kind once raised
    NotImplementedError), and the reference recomputes the drawn vectors to the same bits."""
    suite = _suite(spec)
    catalogue = _manifest(generate(suite, tmp_path / "whole"))["count"]
    directory = generate(suite, tmp_path / "more", count=catalogue + 7)
    assert _manifest(directory)["count"] == catalogue + 7
    assert _manifest(directory)["stimulus"]["beyond_catalogue"] == 7
    whole = generate(suite, tmp_path / "whole")
    for name in _manifest(directory)["files"]:
        if name.endswith(".hex"):
            assert _lines(directory, name[:-4])[:catalogue] == _lines(whole, name[:-4])
    verify(directory)


def test_count_takes_the_catalogue_then_random_vectors(tmp_path):
    suite = _suite(PACK)
    whole = generate(suite, tmp_path / "catalogue")
    more = generate(suite, tmp_path / "more", count=150)
    fewer = generate(suite, tmp_path / "fewer", count=20)
    for f in suite.fields:
        catalogue = _lines(whole, f.name)
        assert len(catalogue) == 132
        assert _lines(more, f.name)[:132] == catalogue
        assert _lines(fewer, f.name) == catalogue[:20]
    assert all(class_names(int(x, 16))[:1] == ["random"] for x in _lines(more, "flags")[132:])
    assert _manifest(more)["count"] == 150 and _manifest(fewer)["count"] == 20
    assert _manifest(more)["stimulus"] == {**_manifest(more)["stimulus"], "catalogue": 132, "count_requested": 150,
                                           "from_catalogue": 132, "beyond_catalogue": 18}
    assert _manifest(fewer)["stimulus"] == {**_manifest(fewer)["stimulus"], "catalogue": 132, "count_requested": 20,
                                            "from_catalogue": 20, "beyond_catalogue": 0}
    assert _manifest(whole)["stimulus"]["count_requested"] is None
    # vector i beyond the catalogue depends on i alone: a longer suite starts with the shorter one
    longer = generate(suite, tmp_path / "longer", count=700)
    assert _lines(longer, "codes")[:150] == _lines(more, "codes")
    assert len(set(_lines(longer, "codes")[132:])) > 560  # random blocks, not repeats
    assert verify(more).ok and verify(longer).ok
    for bad in (0, -3, True):
        with pytest.raises(ValueError, match="count"):
            generate(suite, tmp_path / "bad", count=bad)


@pytest.mark.parametrize("spec, levels", [
    (DECODE, (1,)), (("encode", {"element": "fp6_e2m3", "rounding": "rtz"}), (1, 2)), (QUANTIZE, (1, 3)),
    (("quantize", {"block": "nvfp4"}), (1,)), (("pack", {"block": "mx9"}), (2,)),
    (("dot", {"block_a": "mxfp4_e2m1"}), (1, 2)), (("dot", {"block_a": "mxint8"}), (1,)),
    (("dotgeneral", {"block_a": "mxfp4_e2m1", "n_blocks": 3}), (1, 2)),
])
def test_catalogue_size_is_the_length_of_the_stimulus(spec, levels):
    suite = _suite(spec)
    for level in levels:
        assert suite.catalogue_size(level) == sum(1 for _ in suite.stimulus(random.Random(5), level))


def test_the_same_bytes_whatever_the_chunk_size_or_sharding(tmp_path, monkeypatch):
    suite = _suite(("dot", {"block_a": "mxfp4_e2m1"}))  # catalogue 218
    whole = generate(suite, tmp_path / "whole", count=300 + 2 * pipeline.RUN, npz=True)
    monkeypatch.setattr(pipeline, "CHUNK", 7)
    small = generate(suite, tmp_path / "small", count=300 + 2 * pipeline.RUN, npz=True)
    shards = [generate(suite, tmp_path / "shards", shard=(i, 5), count=300 + 2 * pipeline.RUN) for i in range(5)]
    for name in _manifest(whole)["files"]:
        assert (small / name).read_bytes() == (whole / name).read_bytes(), name
        if name.endswith(".hex"):  # shard 2 starts in the middle of a run of random vectors
            assert b"".join((s / name).read_bytes() for s in shards) == (whole / name).read_bytes(), name
    assert _manifest(small) == _manifest(whole)
    assert [_manifest(s)["shard"]["first_line"] for s in shards] == [1 + i * 812 // 5 for i in range(5)]


class _TableDecode(DecodeSuite):
    """The decode suite with a ``compute_batch`` (a table of the reference's results): a cheap
    suite for the memory test, and the batch interface a fast path plugs into."""

    def __post_init__(self):
        super().__post_init__()
        self.table = [self.compute({"code": c}) for c in range(1 << self.fmt.width)]

    def compute_batch(self, inputs):
        rows = [self.table[c] for c in inputs["code"]]
        return {"value": [out["value"] for out, _ in rows]}, [flag_bits(classes) for _, classes in rows]


def _peak_bytes(suite, directory: Path, count: int) -> int:
    tracemalloc.start()
    try:
        generate(suite, directory, count=count)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_large_count_is_written_in_bounded_memory(tmp_path, monkeypatch):
    count = 200_000
    suite = _TableDecode("fp4_e2m1")
    bounded = _peak_bytes(suite, tmp_path / "bounded", count)
    directory = tmp_path / "bounded" / "decode" / "fp4_e2m1"
    assert _manifest(directory)["count"] == count and (directory / "value.hex").stat().st_size == 9 * count
    # what the pipeline would hold if it kept its vectors: a quarter of them in one chunk is over the bound
    monkeypatch.setattr(pipeline, "CHUNK", count // 4)
    quarter = _peak_bytes(suite, tmp_path / "quarter", count // 4)
    assert bounded < 8 << 20 < quarter, (bounded, quarter)
    # compute_batch gives the bytes compute gives
    plain = generate(suite_from_spec("decode", element="fp4_e2m1"), tmp_path / "plain", count=2000)
    batch = generate(suite, tmp_path / "batch", count=2000)
    assert all((plain / f).read_bytes() == (batch / f).read_bytes() for f in ("code.hex", "value.hex", "flags.hex"))


# --- stream --------------------------------------------------------------------------------------
def _stream(argv: list[str], capsysbinary) -> tuple[int, bytes]:
    capsysbinary.readouterr()
    rc = main(["golden", "stream", *argv])
    return rc, capsysbinary.readouterr().out


def test_stream_writes_one_vector_per_line_after_a_header(tmp_path, capsysbinary):
    suite = _suite(PACK)
    params = ["--suite", "pack", "--params", json.dumps(PACK[1])]
    rc, out = _stream([*params, "--count", "130", "--seed", "4"], capsysbinary)
    assert rc == 0
    lines = out.decode().split("\n")
    assert lines[-1] == "" and len(lines) == 1 + 130 + 1
    assert lines[0] == ("# mxsim golden stream kind=pack suite=mxfp4_e2m1-lsb seed=4 level=1 count=130 "
                        "inputs=scale:8,codes:128 outputs=stream:136,flags:64")
    assert {tuple(len(column) for column in line.split(" ")) for line in lines[1:-1]} == {(2, 32, 34, 16)}
    directory = generate(suite, tmp_path, seed=4, count=130)
    files = [_lines(directory, f.name) for f in suite.fields]
    assert lines[1:-1] == [" ".join(row) for row in zip(*files)]
    rc, out = _stream([*params, "--count", "3", "--manifest", str(tmp_path / "m.json")], capsysbinary)
    assert rc == 0 and not out.startswith(b"#") and out.count(b"\n") == 3
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert [f["hex_digits"] for f in manifest["fields"]] == [2, 32, 34, 16] and manifest["count"] == 3


def test_stream_forever_into_head_ends_quietly():
    argv = [sys.executable, "-m", "mxsim.cli", "golden", "stream", "--suite", "decode", "--params",
            json.dumps(DECODE[1]), "--forever"]
    result = subprocess.run(f"{' '.join(map(repr, argv))} | head -n 40", shell=True, capture_output=True, text=True,
                            env=_env(), timeout=120, check=False)
    lines = result.stdout.split("\n")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert lines[0].endswith("count=forever inputs=code:4 outputs=value:32,flags:64") and len(lines) == 41
    pipe = subprocess.run(["bash", "-c", "set -o pipefail; " + " ".join(map(repr, argv)) + " | head -n 3 >/dev/null"],
                          capture_output=True, text=True, env=_env(), timeout=120, check=False)
    assert pipe.returncode == 0 and pipe.stderr == "", pipe.stderr  # the stream's own exit code is 0


# --- verify --sample -----------------------------------------------------------------------------
def test_verify_sample_recomputes_the_directed_vectors_and_a_seeded_sample(tmp_path, capsys):
    suite = _suite(QUANTIZE)
    directory = generate(suite, tmp_path, count=300)
    flags = [int(x, 16) for x in _lines(directory, "flags")]
    directed = {i for i, f in enumerate(flags) if "directed" in class_names(f)}
    picked = set(random.Random(f"mxsim-verify:3:quantize/{suite.name}").sample(range(300), 10))
    report = verify(directory, sample=10, sample_seed=3)
    assert report.ok and report.vectors == len(directed | picked) and report.lines == 300
    assert main(["golden", "verify", str(directory), "--sample", "10", "--sample-seed", "3"]) == 0
    out = capsys.readouterr().out
    assert f"{len(directed | picked)} vectors recomputed of 300 (every directed vector and 10 sampled" in out
    # a wrong scale on a directed line, with the manifest's hash made to match: the sample finds it
    line = sorted(directed)[5]
    scales = _lines(directory, "scale")
    scales[line] = format(int(scales[line], 16) ^ 1, "02x")
    (directory / "scale.hex").write_text("\n".join(scales) + "\n")
    manifest = _manifest(directory)
    import hashlib

    manifest["files"]["scale.hex"] = hashlib.sha256((directory / "scale.hex").read_bytes()).hexdigest()
    (directory / "manifest.json").write_text(json.dumps(manifest))
    problems = verify(directory, sample=0).problems
    assert len(problems) == 2 and "manifest.json: SHA-256 differs from index.json" in problems[0]
    assert f"scale.hex: line {line + 1}: field 'scale'" in problems[1]


# --- check ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quantize_suite(tmp_path_factory) -> Path:
    return generate(_suite(QUANTIZE), tmp_path_factory.mktemp("suite"))


@pytest.fixture
def dut(quantize_suite, tmp_path) -> Path:
    """A device whose results are all right: copies of the suite's output files."""
    for name in ("scale", "scale_exp", "codes"):
        shutil.copy(quantize_suite / f"{name}.hex", tmp_path / f"{name}.hex")
    return tmp_path


def _edit(path: Path, line: int, change) -> str:
    """Replace 1-based ``line`` by change(old); returns the new text."""
    lines = path.read_text().split("\n")
    lines[line - 1] = change(lines[line - 1])
    path.write_text("\n".join(lines))
    return lines[line - 1]


def _check_cli(argv, capsys, stdin: bytes | None = None, monkeypatch=None) -> tuple[int, str]:
    capsys.readouterr()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    rc = main(["golden", "check", *map(str, argv)])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def _class_summary(suite_dir: Path, lines: set[int]) -> dict[str, int]:
    """Per class, how many of the 0-based ``lines`` have it (from the suite's flags file)."""
    flags = [int(x, 16) for x in _lines(suite_dir, "flags")]
    counts = {name: sum(1 for i in lines if name in class_names(flags[i])) for name in CLASSES}
    return {name: n for name, n in counts.items() if n}


def test_check_passes_a_correct_device(quantize_suite, dut, capsys):
    rc, out = _check_cli([quantize_suite, dut], capsys)
    assert rc == 0 and out.endswith("154 vectors, fields scale, scale_exp, codes: all match\n")
    (dut / "flags.hex").write_text("nonsense\n")  # the device's flags are not read
    for name in ("scale", "codes"):  # upper-case hex is the same value
        (dut / f"{name}.hex").write_text((dut / f"{name}.hex").read_text().upper())
    assert _check_cli([quantize_suite, dut], capsys)[0] == 0


def test_check_reports_planted_mistakes_with_lines_classes_and_decomposed_inputs(quantize_suite, dut, capsys):
    codes_line, bit = 7, 4 * 13 + 2  # element 13 of the codes of vector 7 gets bit 2 flipped
    _edit(dut / "codes.hex", codes_line, lambda old: format(int(old, 16) ^ (1 << bit), f"0{len(old)}x"))
    scale_lines = [3, 40, 100]
    for line in scale_lines:
        _edit(dut / "scale.hex", line, lambda old: format((int(old, 16) + 1) % 256, "02x"))
    report = check(quantize_suite, dut, errors=2)
    assert not report.ok and not report.errors and report.vectors == 154
    assert report.mismatches["codes"].tolist() == [codes_line - 1]
    assert report.mismatches["scale"].tolist() == [line - 1 for line in scale_lines]
    assert report.mismatches["scale_exp"].tolist() == []
    wrong = {codes_line - 1, *(line - 1 for line in scale_lines)}
    assert report.mismatching.tolist() == sorted(wrong)
    assert report.classes == _class_summary(quantize_suite, wrong)
    assert [m.line for m in report.first] == [2, 6]  # the first two, in line order
    assert set(report.first[1].fields) == {"codes"}

    rc, out = _check_cli([quantize_suite, dut, "--errors", "2"], capsys)
    assert rc == 1
    assert "154 vectors, fields scale, scale_exp, codes: 4 mismatching vector(s)" in out
    assert "field codes: 1 mismatch(es), line(s) 7\n" in out
    assert "field scale: 3 mismatch(es), line(s) 3, 40, 100\n" in out
    assert "field scale_exp" not in out
    totals = _manifest(quantize_suite)["coverage"]
    summary = ", ".join(f"{name} {n}/{totals[name]}" for name, n in _class_summary(quantize_suite, wrong).items())
    assert f"mismatching vectors per class (of the suite's vectors of that class): {summary}\n" in out
    assert "--- line 3\n" in out and "--- line 7\n" in out and "--- line 40" not in out
    block = out[out.index("--- line 7"):]
    flags = int(_lines(quantize_suite, "flags")[codes_line - 1], 16)
    assert f"classes: {', '.join(class_names(flags))}" in block
    x = int(_lines(quantize_suite, "x")[codes_line - 1], 16)
    first = x & 0xFFFFFFFF
    assert f"x[0]: {first:08x} s={first >> 31} e={(first >> 23) & 0xFF:08b} m={first & 0x7FFFFF:023b}" in block
    want = int(_lines(quantize_suite, "codes")[codes_line - 1], 16)
    element, flipped = (want >> (4 * 13)) & 0xF, ((want >> (4 * 13)) & 0xF) ^ 4
    assert f"codes[13]: expected {element:x} " in block and f"; device {flipped:x} " in block
    assert f"expected bin {'_'.join(format(want, '0128b')[i:i + 4] for i in range(0, 128, 4))}" in block


def test_check_names_missing_short_long_and_malformed_files(quantize_suite, dut, capsys):
    cases = []
    (dut / "scale_exp.hex").unlink()
    cases.append(("scale_exp.hex: missing (No such file or directory); the device's results are scale.hex, "
                  "scale_exp.hex, codes.hex", None))
    text = (dut / "codes.hex").read_text().split("\n")
    (dut / "codes.hex").write_text("\n".join(text[:125]) + "\n")
    cases.append(("codes.hex: ends after 125 vector line(s), the suite has 154 (short: line 126 onward missing)", None))
    scale = (dut / "scale.hex").read_text()
    for content, message in [
        (scale + "7f\n7f\n",
         "scale.hex: more than the suite's 154 vector line(s) (long: line 155 onward is extra; not read further)"),
        (scale.replace("\n", "\r\n"), "scale.hex: line 1: CRLF line ending"),
        (_replace_line(scale, 12, "zz"), "scale.hex: line 12: field 'scale': 'zz' is not hex"),
        (_replace_line(scale, 30, "7"), "scale.hex: line 30: field 'scale': '7' is not 2 hex digits"),
        (_replace_line(scale, 31, "0x7f"), "scale.hex: line 31: field 'scale': '0x7f' is not hex"),
    ]:
        (dut / "scale.hex").write_text(content, newline="")
        rc, out = _check_cli([quantize_suite, dut], capsys)
        assert rc == 2, out
        assert all(f"{dut}/{expected}" in out for expected, _ in cases), out
        assert f"{dut}/{message}" in out, out
        assert out.count("ERROR ") == 3
    assert _check_cli([quantize_suite, dut / "nowhere"], capsys)[0] == 2
    assert _check_cli([quantize_suite, dut, "--fields", "codes,colour"], capsys) == (
        2, "mxsim: error: --fields codes,colour: colour; the output fields of quantize/mxfp4_e2m1 are scale, "
           "scale_exp, codes\n")


def _replace_line(text: str, line: int, new: str) -> str:
    lines = text.split("\n")
    lines[line - 1] = new
    return "\n".join(lines)


def test_check_reads_a_stream_on_stdin(quantize_suite, capsys, monkeypatch):
    suite = _suite(QUANTIZE)
    out = io.BytesIO()
    golden_stream.write_stream(suite, out, 0, 1, pipeline.plan(suite, 1))
    lines = out.getvalue().decode().split("\n")
    assert _check_cli([quantize_suite, "-"], capsys, out.getvalue(), monkeypatch)[0] == 0
    # outputs only from column 2 on (x, then scale, scale_exp, codes, flags): a wrong codes column on line 51
    columns = lines[51].split(" ")
    columns[3] = format(int(columns[3], 16) ^ 1, f"0{len(columns[3])}x")
    planted = lines[:51] + [" ".join(columns)] + lines[52:]
    rc, text = _check_cli([quantize_suite, "-"], capsys, "\n".join(planted).encode(), monkeypatch)
    assert rc == 1 and "field codes: 1 mismatch(es), line(s) 51\n" in text  # vector 51 (stdin line 52)
    assert "codes[0]: expected" in text
    without_flags = [" ".join(line.split(" ")[:-1]) for line in planted[1:-1]]
    rc, text = _check_cli([quantize_suite, "-"], capsys, ("\n".join(without_flags) + "\n").encode(), monkeypatch)
    assert rc == 1 and "field codes: 1 mismatch(es), line(s) 51\n" in text
    dropped = lines[:20] + lines[21:]
    rc, text = _check_cli([quantize_suite, "-"], capsys, "\n".join(dropped).encode(), monkeypatch)
    assert rc == 2 and "stdin: line 21: input x is" in text and "vector 20 of the suite" in text
    other = _suite(PACK)
    header = golden_stream.header(other, 0, 1, pipeline.plan(other, 1))
    rc, text = _check_cli([quantize_suite, "-"], capsys, (header + "\n").encode(), monkeypatch)
    assert rc == 2 and "a stream of pack/mxfp4_e2m1-lsb, not of the suite quantize/mxfp4_e2m1" in text


# --- pieces --------------------------------------------------------------------------------------
def test_decomposition_of_codes():
    dot = _suite(("dot", {"block_a": "mxfp8_e4m3"}))
    shapes = layouts(dot)
    assert value_text(0x3A, shapes["a_elems"]) == "s=0 e=0111 m=010 (2^0) = +1.25"
    assert value_text(0x7F, shapes["a_scale"]) == "e=01111111 (2^0) = +1"
    assert value_text(0xFF, shapes["a_scale"]) == "e=11111111 = NaN"
    assert value_text(0x01, shapes["a_elems"]) == "s=0 e=0000 m=001 (2^-6, subnormal) = +0.001953125"
    assert value_text(0x80, layouts(_suite(("dot", {"block_a": "mxint8"})))["a_elems"]) == (
        "q=-128 (two's complement x 2^-6) = -2")
    bits = dot.outputs[0].bits  # acc: signed
    assert value_text((1 << bits) - 3, shapes["acc"]) == "= -3" and value_text(3, shapes["acc"]) == "= 3"


def test_fp32_bits_packs_exact_values_as_the_encoder_does():
    from mxsim.golden.values import FP32, fp32_bits
    from mxsim.ref.encode import encode
    from mxsim.ref.exact import Exact

    rng = random.Random(11)
    for _ in range(20000):
        significand = rng.getrandbits(rng.choice([1, 12, 24, 25, 40]))
        x = Exact(rng.getrandbits(1), Fraction(significand) * Fraction(2) ** rng.randint(-175, 150))
        assert fp32_bits(x) == encode(x, FP32, "rne", "ieee"), x
