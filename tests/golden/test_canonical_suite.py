"""Golden vectors: the committed canonical suite regenerates byte for byte, verifies against the
reference model, and verification catches edited, truncated or wrong files; shards concatenate
to the whole; the file layout is checked against independent decoders (ml_dtypes, Fractions)."""

from __future__ import annotations

import filecmp
import json
import shutil
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mxsim import Accumulator
from mxsim.cli import main
from mxsim.golden import CANONICAL_SUITES, generate, generate_canonical, suite_from_spec, verify
from mxsim.golden.coverage.catalogue import CLASSES, class_names, flag_bits
from mxsim.golden.kinds.fields import Field

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
SMALL = ("dot", "mxfp4_e2m1-exact")


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _hex_lines(directory: Path, name: str) -> list[int]:
    return [int(line, 16) for line in (directory / f"{name}.hex").read_text().split()]


# --- the canonical suite -------------------------------------------------------------------------
def test_canonical_regeneration_is_byte_identical(tmp_path):
    generate_canonical(tmp_path)
    assert _files(tmp_path) == _files(GOLDEN), "golden/ and a fresh generation hold different files"
    different = [f for f in _files(GOLDEN) if not filecmp.cmp(GOLDEN / f, tmp_path / f, shallow=False)]
    assert not different, f"regenerate golden/ with 'mxsim golden generate golden': {different[:5]}"


def test_verify_passes_on_the_canonical_suite(capsys):
    assert main(["golden", "verify", str(GOLDEN)]) == 0
    out = capsys.readouterr().out
    assert f"{len(CANONICAL_SUITES)} suite(s)" in out and "all match" in out


def test_canonical_coverage_reaches_every_class():
    totals = {name: 0 for name in CLASSES}
    for manifest in GOLDEN.rglob("manifest.json"):
        for name, count in json.loads(manifest.read_text())["coverage"].items():
            totals[name] += count
    assert [name for name, count in totals.items() if count == 0] == []


def test_manifest_records_the_contract_and_the_layout():
    m = json.loads((GOLDEN / "dot" / "mxfp8_e4m3-aligned-f8-w14-truncate-saturate" / "manifest.json").read_text())
    accumulator = m["params"]["accumulator"]
    assert accumulator == {**accumulator, **{
        "mode": "aligned", "frac_bits": 8, "width": 14, "shift_rounding": "truncate", "overflow": "saturate",
        "output": "fp32", "output_rounding": "rne", "ftz": False, "across_blocks": "fp32",
        # contract 4.1's options, recorded at their defaults (every manifest records every option)
        "output_overflow": "inf", "nan_bits": None, "accumulate": "separate", "step": None, "step_terms": "product",
        "term_size": None, "anchor": "max", "bypass": None, "c_zero_exponent": None,
    }}
    assert set(accumulator) == set(Accumulator().as_dict())  # every option, so each vector traces to its convention
    fields = {f["name"]: f for f in m["fields"]}
    assert fields["a_elems"]["bits"] == 256 and fields["a_elems"]["hex_digits"] == 64
    assert fields["acc"] == {**fields["acc"], "bits": 14, "hex_digits": 4, "signed": True}
    assert m["count"] == len((GOLDEN / "dot" / m["suite"] / "acc.hex").read_text().splitlines())
    assert m["seed"] == 0 and m["mxsim_version"]


# --- verification catches bad files --------------------------------------------------------------
@pytest.fixture
def small_copy(tmp_path) -> Path:
    target = tmp_path / SMALL[0] / SMALL[1]
    shutil.copytree(GOLDEN / SMALL[0] / SMALL[1], target)
    return target


def _edit_line(path: Path, line: int, new: str) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = new
    path.write_text("\n".join(lines) + "\n")


def test_verify_reports_an_edited_value_with_line_field_and_both_values(small_copy, capsys):
    original = (small_copy / "result.hex").read_text().splitlines()[4]
    wrong = format(int(original, 16) ^ 1, "08x")
    _edit_line(small_copy / "result.hex", 5, wrong)
    report = verify(small_copy)
    assert not report.ok
    assert any("SHA-256 differs" in p and "result.hex" in p for p in report.problems)
    assert any("line 5" in p and "'result'" in p and original in p and wrong in p for p in report.problems)
    assert main(["golden", "verify", str(small_copy)]) == 1
    assert "MISMATCH" in capsys.readouterr().err


def test_verify_reports_a_consistent_but_wrong_file(small_copy):
    """Even with the manifest's hash updated, the recomputation finds the wrong vector."""
    original = (small_copy / "acc.hex").read_text().splitlines()[9]
    _edit_line(small_copy / "acc.hex", 10, format(int(original, 16) ^ 2, f"0{len(original)}x"))
    manifest = json.loads((small_copy / "manifest.json").read_text())
    import hashlib

    manifest["files"]["acc.hex"] = hashlib.sha256((small_copy / "acc.hex").read_bytes()).hexdigest()
    (small_copy / "manifest.json").write_text(json.dumps(manifest))
    report = verify(small_copy)
    assert [p for p in report.problems if "line 10" in p and "'acc'" in p]
    assert not [p for p in report.problems if "SHA-256" in p]


def test_verify_reports_truncated_and_missing_files(small_copy):
    lines = (small_copy / "anchor.hex").read_text().splitlines()
    (small_copy / "anchor.hex").write_text("\n".join(lines[:-1]) + "\n")
    problems = verify(small_copy).problems
    assert any("anchor.hex" in p and "SHA-256" in p for p in problems)
    assert any("anchor.hex" in p and f"{len(lines) - 1} lines" in p for p in problems)
    (small_copy / "lsb.hex").unlink()
    assert any("lsb.hex: missing" in p for p in verify(small_copy).problems)


def test_verify_reports_wrong_flags_and_a_bad_hex_width(small_copy):
    flags = (small_copy / "flags.hex").read_text().splitlines()
    _edit_line(small_copy / "flags.hex", 3, format(int(flags[2], 16) ^ flag_bits(["nan"]), "016x"))
    assert any("line 3" in p and "'flags'" in p for p in verify(small_copy).problems)
    shutil.copy(GOLDEN / SMALL[0] / SMALL[1] / "flags.hex", small_copy / "flags.hex")
    _edit_line(small_copy / "lsb.hex", 2, "0")
    assert any("line 2" in p and "hex digits" in p for p in verify(small_copy).problems)


def test_verify_of_an_empty_directory_fails(tmp_path):
    assert not verify(tmp_path).ok


# --- generation ---------------------------------------------------------------------------------
def test_shards_concatenate_to_the_whole(tmp_path):
    suite = suite_from_spec("encode", element="fp4_e2m1", rounding="rtz")
    whole = generate(suite, tmp_path / "whole")
    parts = [generate(suite, tmp_path / "parts", shard=(i, 3)) for i in range(3)]
    manifest = json.loads((whole / "manifest.json").read_text())
    counts = [json.loads((p / "manifest.json").read_text())["count"] for p in parts]
    assert sum(counts) == manifest["count"] and min(counts) > 0
    for f in manifest["files"]:
        assert b"".join((p / f).read_bytes() for p in parts) == (whole / f).read_bytes()
    assert verify(parts[1]).ok


def test_seeds_change_the_random_vectors_only(tmp_path):
    suite = suite_from_spec("quantize", block="mxfp4_e2m1")
    a, b = generate(suite, tmp_path / "a", seed=1), generate(suite, tmp_path / "b", seed=2)
    flags = _hex_lines(a, "flags")
    xa, xb = _hex_lines(a, "x"), _hex_lines(b, "x")
    random_bit = flag_bits(["random"])
    assert any(x != y for x, y, f in zip(xa, xb, flags) if f & random_bit)
    assert (a / "x.hex").read_bytes() == generate(suite, tmp_path / "c", seed=1).joinpath("x.hex").read_bytes()


def test_level_scales_the_random_vectors(tmp_path):
    suite = suite_from_spec("dot", block_a="mxfp4_e2m1")
    one = json.loads((generate(suite, tmp_path / "1") / "manifest.json").read_text())
    two = json.loads((generate(suite, tmp_path / "2", level=2) / "manifest.json").read_text())
    assert two["coverage"]["random"] == 2 * one["coverage"]["random"]
    with pytest.raises(ValueError, match="level"):
        generate(suite, tmp_path / "3", level=0)


def test_cli_generates_one_suite_and_rejects_bad_requests(tmp_path, capsys):
    params = '{"block_a": "mxfp4_e2m1", "accumulator": {"mode": "aligned", "frac_bits": 3, "width": 8, "overflow": "wrap"}}'
    assert main(["golden", "generate", str(tmp_path), "--suite", "dot", "--params", params, "--seed", "5"]) == 0
    assert (tmp_path / "dot" / "mxfp4_e2m1-aligned-f3-w8-truncate-wrap" / "manifest.json").exists()
    assert main(["golden", "verify", str(tmp_path)]) == 0
    capsys.readouterr()
    for argv, message in [
        (["--suite", "dot", "--params", "{bad"], "--params is not valid JSON"),
        (["--suite", "dot", "--params", '{"block_a": "mxfp4_e2m1", "colour": 1}'], "colour"),
        (["--suite", "dot", "--params", '{"block_a": "mxfp4_e2m1", "accumulator": {"mode": "aligned"}}'], "frac_bits"),
        (["--shard", "3"], "--shard"),
        (["--shard", "4/4"], "shard"),
        (["--params", "{}", "--suite", "encode", "--params", '{"element": "fp4_e2m1", "rounding": "stochastic"}'], "stochastic"),
    ]:
        assert main(["golden", "generate", str(tmp_path / "x"), *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


# --- fields and classes -------------------------------------------------------------------------
def test_field_hex_encoding():
    f = Field("acc", 14, signed=True)
    assert f.to_hex(-1) == "3fff" and f.from_hex("3fff") == -1
    assert f.to_hex(8191) == "1fff" and f.from_hex("2000") == -8192
    with pytest.raises(ValueError):
        f.to_hex(8192)
    with pytest.raises(ValueError):
        f.from_hex("fff")  # too few digits
    with pytest.raises(ValueError):
        f.from_hex("4000")  # a bit above bit 13
    assert Field("code", 4).to_hex(0xA) == "a"


def test_flag_bits_round_trip():
    names = ["nan", "tie", "acc_overflow"]
    assert class_names(flag_bits(names)) == sorted(names, key=list(CLASSES).index)


# --- the layout against independent decoders ----------------------------------------------------
def test_decode_suite_matches_ml_dtypes():
    directory = GOLDEN / "decode" / "fp8_e4m3"
    codes = np.array(_hex_lines(directory, "code"), dtype=np.uint8)
    values = np.array(_hex_lines(directory, "value"), dtype=np.uint32).view(np.float32)
    expected = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(values), nan)
    assert np.array_equal(values[~nan].view(np.uint32), expected[~nan].view(np.uint32))


def test_dot_suite_layout_matches_an_exact_dot_product():
    """Element 0 in the low bits, scales 2^(code-127): the exact dot of the decoded elements,
    rounded once to fp32, is the result field (finite, non-NaN-scale vectors)."""
    directory = GOLDEN / "dot" / "mxfp8_e4m3-exact"
    fields = {name: _hex_lines(directory, name) for name in ("a_scale", "a_elems", "b_scale", "b_elems", "result")}
    table = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    checked = 0
    for sa, ea, sb, eb, result in zip(*fields.values()):
        a = [table[(ea >> (8 * i)) & 0xFF] for i in range(32)]
        b = [table[(eb >> (8 * i)) & 0xFF] for i in range(32)]
        if 0xFF in (sa, sb) or np.isnan(a).any() or np.isnan(b).any():
            continue
        exact = sum(Fraction(x) * Fraction(y) for x, y in zip(a, b)) * Fraction(2) ** (sa + sb - 254)
        # exact < 2^53 units of its LSB, so float64 holds it and one cast rounds it to fp32
        with np.errstate(over="ignore"):
            expected = np.float32(np.float64(exact))
        assert int(np.float32(expected).view(np.uint32)) == result, (sa, hex(ea), sb, hex(eb))
        checked += 1
    assert checked > 2000


def test_pack_suite_layout_is_the_interleaved_lsb_stream():
    """FP4, lsb stream: byte 0 is the scale, then element 2j in the low nibble of byte 1 + j."""
    directory = GOLDEN / "pack" / "mxfp4_e2m1-lsb"
    for scale, codes, stream in zip(*(_hex_lines(directory, n) for n in ("scale", "codes", "stream"))):
        data = stream.to_bytes(17, "little")
        elements = [(codes >> (4 * i)) & 0xF for i in range(32)]
        assert data[0] == scale
        assert list(data[1:]) == [elements[2 * j] | elements[2 * j + 1] << 4 for j in range(16)]


def test_dotgeneral_suite_block_results_add_up_in_fp32():
    """across_blocks='fp32': the result is the block results added in order in float32."""
    directory = GOLDEN / "dotgeneral" / "mxfp8_e4m3-exact-n4-fp32"
    for result, blocks in zip(_hex_lines(directory, "result"), _hex_lines(directory, "block_results")):
        values = np.array([(blocks >> (32 * j)) & 0xFFFFFFFF for j in range(4)], dtype=np.uint32).view(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            total = values[0]
            for v in values[1:]:
                total = np.float32(total + v)
        if np.isnan(total):
            assert result == 0x7FC00000
        else:
            assert int(np.float32(total).view(np.uint32)) == result


def test_npz_holds_the_same_vectors_and_is_reproducible(tmp_path):
    suite = suite_from_spec("dot", block_a="mxfp4_e2m1")
    a = generate(suite, tmp_path / "a", npz=True)
    b = generate(suite, tmp_path / "b", npz=True)
    assert (a / "vectors.npz").read_bytes() == (b / "vectors.npz").read_bytes()
    with np.load(a / "vectors.npz") as arrays:
        assert arrays["acc"].dtype == np.uint64 and arrays["a_elems"].dtype.kind == "U"
        assert [int(x) for x in arrays["result"]] == _hex_lines(a, "result")
        assert [int(x, 16) for x in arrays["a_elems"]] == _hex_lines(a, "a_elems")
    assert verify(a).ok
    (a / "vectors.npz").write_bytes(b"not an archive")
    assert any("vectors.npz" in p for p in verify(a).problems)


# --- quantize suites: the rounding classes tie, carry, saturation (hand-worked blocks) -------------
def _quantize_classes(block: str, values: list[float], **options) -> set:
    """The classes QuantizeSuite.compute gives one block of fp32 inputs (the rest of it zeros),
    and the same from compute_batch (the fast path's flags must agree)."""
    import struct

    from mxsim.golden.kinds.batch import bit
    from mxsim.golden.kinds.quantize import QuantizeSuite

    suite = QuantizeSuite(block=block, options=options)
    k = suite.fmt.block_size
    xs = values + [0.0] * (k - len(values))
    word = int.from_bytes(struct.pack(f"<{k}f", *xs), "little")
    _, classes = suite.compute({"x": word})
    _, flags = suite.compute_batch({"x": [word]})
    assert {name for name in CLASSES if flags[0] & bit(name)} == classes
    return classes & {"tie", "carry", "saturation"}


@pytest.mark.parametrize(
    "block, values, options, expected",
    [
        # E = floor(log2 480) - 8 = 0: 480 > 448 (E4M3 max) is clamped; 1.0625 lies midway between
        # 1 and 1.125 (ties to even: 1); 1.9375 midway between 1.875 and 2 (ties to even: 2, the
        # next binade)
        ("mxfp8_e4m3", [480.0, 1.0625, 1.9375], {}, {"saturation", "tie", "carry"}),
        ("mxfp8_e4m3", [-480.0], {}, {"saturation"}),
        ("mxfp8_e4m3", [448.0, 1.0625], {}, {"tie"}),  # 448 is the max itself; the tie rounds down
        ("mxfp8_e4m3", [448.0, 1.125, 2.0, -3.5], {}, set()),  # every value on the grid
        ("mxfp8_e4m3", [448.0, 1.95], {}, {"carry"}),  # 1.95 rounds up to 2, not a tie
        # MXINT8: E = floor(log2 1.99) = 0, elements q/64 in [-127/64, 127/64] (or -2 with neg2)
        ("mxint8", [1.99], {}, {"saturation"}),
        ("mxint8", [-1.99], {}, {"saturation"}),
        ("mxint8", [-1.99], {"int8_allow_neg2": True}, set()),  # 127.36/64: rounds to -127/64, inside the grid
        ("mxint8", [-1.995], {"int8_allow_neg2": True}, {"carry"}),  # 127.68/64 rounds to -2: binade 1
        ("mxint8", [1.5, 1.0078125], {}, {"tie"}),  # 1 + 1/128: midway between 64/64 and 65/64
        # MXFP4 E2M1 (0, 0.5, 1, 1.5, 2, 3, 4, 6): E = floor(log2 5) - 2 = 0; 5 is midway 4..6
        ("mxfp4_e2m1", [5.0], {}, {"tie", }),
        ("mxfp4_e2m1", [7.0, 3.5], {}, {"saturation", "tie", "carry"}),  # 7 > 6; 3.5 -> 4 (even)
    ],
)
def test_quantize_rounding_classes_hand_worked(block, values, options, expected):
    assert _quantize_classes(block, values, **options) == expected


def test_canonical_quantize_suites_flag_ties_carries_and_saturations():
    """Each OCP MX quantize suite of golden/ has vectors of every rounding class (they never did)."""
    for name in ("mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4_e2m1", "mxint8"):
        coverage = json.loads((GOLDEN / "quantize" / name / "manifest.json").read_text())["coverage"]
        assert min(coverage["tie"], coverage["carry"], coverage["saturation"]) > 0, (name, coverage)
