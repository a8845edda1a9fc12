"""The .npy files the command line reads (issue 32 item 13, input parts): a file that is not a .npy
array is refused as such (not with NumPy's advice to load it with allow_pickle), ml_dtypes
bfloat16 and float8 arrays saved with numpy.save (raw items '<V2' / '|V1') are read as the help
promises, and a golden stream header's inputs=/outputs= items are checked (not int()'s message)."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import mxsim
from mxsim.cli import main


def _values() -> np.ndarray:
    """64 values exact in bfloat16 (not all in the float8 types): halves, both signs, a -0."""
    v = np.arange(-32, 32, dtype=np.float32) / 2
    v[5] = -0.0
    return v


def _run(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mxsim.cli", *args], input=stdin, capture_output=True, timeout=120)


# --------------------------------------------------------------------------------------------------
# files that are not .npy arrays

def _not_npy_files(tmp_path) -> dict:
    np.save(tmp_path / "x.npy", _values())
    mxsim.save(mxsim.quantize(_values(), "mxfp8_e4m3"), tmp_path / "t.mxt")
    (tmp_path / "text.npy").write_text("1 2 3\n4 5 6\n")
    (tmp_path / "empty.npy").write_bytes(b"")
    np.savez(tmp_path / "z.npz", a=_values())
    return {
        "text.npy": "is not a .npy array (it does not start with NumPy's magic",
        "t.mxt": "is an mxsim tensor file, not a .npy array",
        "empty.npy": "is empty; expected a .npy array",
        "z.npz": "is an .npz archive (a zip file); expected a single .npy array",
    }


def test_quantize_refuses_a_file_that_is_not_npy(tmp_path, capsys):
    for name, message in _not_npy_files(tmp_path).items():
        assert main(["quantize", str(tmp_path / name), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"]) == 2, name
        err = capsys.readouterr().err
        assert f"{tmp_path / name}: {message}" in err, err
        assert "allow_pickle" not in err and "pickle" not in err
        assert not (tmp_path / "o.mxt").exists()


def test_identify_refuses_a_file_that_is_not_npy(tmp_path, capsys):
    files = _not_npy_files(tmp_path)
    np.save(tmp_path / "scales.npy", np.full(2, 127, np.uint8))
    for name, message in files.items():
        source, codes = str(tmp_path / name), str(tmp_path / "t.mxt")
        assert main(["identify", source, codes]) == 2, name
        assert f"{source}: {message}" in capsys.readouterr().err
        if name.endswith(".npy"):  # codes as .npy (another name is read as an mxsim tensor file)
            assert main(["identify", str(tmp_path / "x.npy"), str(tmp_path / name), str(tmp_path / "scales.npy"),
                         "--format", "mxfp8_e4m3"]) == 2, name
            assert f"{tmp_path / name}: {message}" in capsys.readouterr().err


def test_a_piped_file_that_is_not_npy_is_refused_and_a_piped_npy_is_read(tmp_path):
    result = _run(["quantize", "/dev/stdin", str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"], b"1 2 3\n")
    assert result.returncode == 2
    assert b"/dev/stdin: is not a .npy array" in result.stderr and b"pickle" not in result.stderr
    np.save(tmp_path / "x.npy", _values())
    result = _run(["quantize", "/dev/stdin", str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"],
                  (tmp_path / "x.npy").read_bytes())
    assert result.returncode == 0, result.stderr
    want = mxsim.quantize(_values(), "mxfp8_e4m3")
    assert np.array_equal(mxsim.load(tmp_path / "o.mxt").codes, want.codes)


# --------------------------------------------------------------------------------------------------
# ml_dtypes arrays saved with numpy.save

def _same_tensor(path, want) -> None:
    got = mxsim.load(path)
    assert np.array_equal(got.scales, want.scales) and np.array_equal(got.codes, want.codes)
    assert got.shape == want.shape


def test_quantize_reads_a_saved_bfloat16_array(tmp_path, capsys):
    bf16 = _values().astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "bf.npy", bf16)
    assert np.load(tmp_path / "bf.npy").dtype.str == "|V2"  # what numpy.save keeps of the type
    want = mxsim.quantize(bf16, "mxfp8_e4m3")  # the in-memory array (values exact, so also float32's)
    assert np.array_equal(want.codes, mxsim.quantize(_values(), "mxfp8_e4m3").codes)
    assert main(["quantize", str(tmp_path / "bf.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"]) == 0
    _same_tensor(tmp_path / "o.mxt", want)
    assert main(["quantize", str(tmp_path / "bf.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3",
                 "--source", "bf16"]) == 0
    _same_tensor(tmp_path / "o.mxt", want)
    assert main(["quantize", str(tmp_path / "bf.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3",
                 "--source", "fp8_e4m3"]) == 2
    assert "holds 2-byte raw items; source 'fp8_e4m3' reads other bit patterns (for these: bf16, fp16)" in \
        capsys.readouterr().err


def test_quantize_reads_a_saved_float8_e4m3fn_array_with_its_source(tmp_path, capsys):
    f8 = _values().astype(ml_dtypes.float8_e4m3fn)
    np.save(tmp_path / "f8.npy", f8)
    assert main(["quantize", str(tmp_path / "f8.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"]) == 2
    err = capsys.readouterr().err
    assert "holds 1-byte raw items ('<V1'), as numpy.save writes ml_dtypes float8_e4m3fn" in err
    assert "--source fp8_e4m3 or --source fp8_e5m2" in err
    assert main(["quantize", str(tmp_path / "f8.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3",
                 "--source", "fp8_e4m3"]) == 0
    _same_tensor(tmp_path / "o.mxt", mxsim.quantize(f8, "mxfp8_e4m3"))
    widened = f8.astype(np.float32)  # ml_dtypes' own widening (exact)
    assert np.array_equal(mxsim.load(tmp_path / "o.mxt").codes, mxsim.quantize(widened, "mxfp8_e4m3").codes)


def test_quantize_reads_a_saved_float8_e5m2_array(tmp_path, capsys):
    """numpy.save records float8_e5m2 as '<f1', which np.load cannot read ("descr is not a valid dtype
    descriptor"); mxsim reads it as float8_e5m2, with or without --source fp8_e5m2, from a file or a pipe."""
    f8 = _values().astype(ml_dtypes.float8_e5m2)
    np.save(tmp_path / "f8.npy", f8)
    assert b"'descr': '<f1'" in (tmp_path / "f8.npy").read_bytes()[:80]
    widened = f8.astype(np.float32)  # ml_dtypes' own widening (exact)
    want = mxsim.quantize(widened, "mxfp8_e4m3")
    for extra in ([], ["--source", "fp8_e5m2"]):
        assert main(["quantize", str(tmp_path / "f8.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3",
                     *extra]) == 0
        _same_tensor(tmp_path / "o.mxt", want)
    result = _run(["quantize", "/dev/stdin", str(tmp_path / "p.mxt"), "--format", "mxfp8_e4m3"],
                  (tmp_path / "f8.npy").read_bytes())
    assert result.returncode == 0, result.stderr
    _same_tensor(tmp_path / "p.mxt", want)
    assert main(["quantize", str(tmp_path / "f8.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3",
                 "--source", "fp8_e4m3"]) == 2
    assert "source 'fp8_e4m3' reads other bit patterns (for these: fp8_e5m2)" in capsys.readouterr().err


def test_identify_reads_a_saved_bfloat16_source(tmp_path, capsys):
    np.save(tmp_path / "bf.npy", _values().astype(ml_dtypes.bfloat16))
    mxsim.save(mxsim.quantize(_values(), "mxfp8_e4m3"), tmp_path / "t.mxt")
    assert main(["identify", str(tmp_path / "bf.npy"), str(tmp_path / "t.mxt")]) == 0
    assert "reproduces 2 of 2 blocks (100.0 %)" in capsys.readouterr().out.split("\n")[0]


def test_without_ml_dtypes_a_saved_bfloat16_array_says_so(tmp_path, capsys, monkeypatch):
    np.save(tmp_path / "bf.npy", _values().astype(ml_dtypes.bfloat16))
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now raises ImportError
    assert main(["quantize", str(tmp_path / "bf.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"]) == 2
    err = capsys.readouterr().err
    assert "reading them as bfloat16 needs ml_dtypes, which is not installed (pip install ml_dtypes)" in err
    assert "--source bf16" in err
    # the bit patterns need no ml_dtypes
    assert main(["quantize", str(tmp_path / "bf.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3",
                 "--source", "bf16"]) == 0
    assert np.array_equal(mxsim.load(tmp_path / "o.mxt").codes, mxsim.quantize(_values(), "mxfp8_e4m3").codes)


def test_other_raw_items_are_refused(tmp_path, capsys):
    np.save(tmp_path / "v4.npy", np.zeros(8, "V4"))
    assert main(["quantize", str(tmp_path / "v4.npy"), str(tmp_path / "o.mxt"), "--format", "mxfp8_e4m3"]) == 2
    assert "holds 4-byte raw items (|V4), not numbers" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# the header of a golden stream

@pytest.fixture(scope="module")
def decode_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("golden")
    assert main(["golden", "generate", str(root), "--suite", "decode", "--params", '{"element": "fp4_e2m1"}']) == 0
    result = _run(["golden", "stream", "--suite", "decode", "--params", '{"element": "fp4_e2m1"}'])
    assert result.returncode == 0
    return root / "decode" / "fp4_e2m1", result.stdout.decode()


@pytest.mark.parametrize("item", ["code:abc", "code:4x", "code", ":4", "code:-4", "code:" + "9" * 40])
def test_check_refuses_a_stream_header_item_that_is_not_name_bits(decode_suite, item):
    suite, stream = decode_suite
    assert " inputs=code:4 " in stream.split("\n")[0]
    result = _run(["golden", "check", str(suite), "-"], stream.replace(" inputs=code:4 ", f" inputs={item} ", 1).encode())
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "the stream header's inputs= item " in err and "expected name:bits" in err
    assert "invalid literal for int()" not in err


def test_check_reads_the_stream_header_mxsim_writes(decode_suite):
    suite, stream = decode_suite
    result = _run(["golden", "check", str(suite), "-"], stream.encode())
    assert result.returncode == 0 and b"all match" in result.stdout
