"""Issue 32, what golden verify, check, merge and info read (items 2, 7, 8, 9, 13 in part, 15, 16):
every file is what its manifest says, arrays included; a FIFO, a device or a symlink to one never
hangs a command; usage errors exit 2 with one line; reports never echo a control character raw and
never print a vector's zero elements one per line.

Expected values are worked by hand here (a planted edit, the hand-decomposed codes of a
vector) or taken from the file system itself; none is copied from the code under test."""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mxsim
from forged_suites import rewrite_suite
from mxsim import fileformat
from mxsim.cli import main
from mxsim.golden import generate, verify
from mxsim.golden.device.decompose import vector_lines
from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.golden.storage.merge import ShardError, merge

ROOT = Path(__file__).resolve().parents[2]


# --- item 16: a mismatching vector's zero elements -----------------------------------------------
def test_runs_of_equal_codes_take_one_line():
    """Two blocks of 32 MXFP4 elements each, two of them nonzero: 0x3 (E2M1 s=0 e=01 m=1, 1.5) at
    element 2 of block 0 and 0x5 (e=10 m=1, 2 x 1.5 = 3) at element 8 of block 1; every run of
    zeros within a block is one line (the 128 elements of a_elems and b_elems: 8 lines, not 128);
    a run of any equal codes likewise (an exhaustive pair's repeated code)."""
    suite = suite_from_spec("dotgeneral", block_a="mxfp4_e2m1", n_blocks=2)
    values = {f.name: 0 for f in suite.inputs}
    values["a_elems"] = (0x3 << 4 * 2) | (0x5 << 4 * (32 + 8))
    values["a_scale"] = 0x7F7F
    lines = vector_lines(suite, values, suite.inputs)
    zero = "each s=0 e=00 m=0 = +0"
    assert lines[lines.index("a_elems = " + f"{values['a_elems']:064x}") + 1:] == [
        f"  a_elems[block 0][0..1]: 0 x2, {zero}",
        "  a_elems[block 0][2]: 3 s=0 e=01 m=1 (2^0) = +1.5",
        f"  a_elems[block 0][3..31]: 0 x29, {zero}",
        f"  a_elems[block 1][0..7]: 0 x8, {zero}",
        "  a_elems[block 1][8]: 5 s=0 e=10 m=1 (2^1) = +3",
        f"  a_elems[block 1][9..31]: 0 x23, {zero}",
        "b_scale = 0000",
        "  b_scale[0..1]: 00 x2, each e=00000000 (2^-127) = +5.87747175e-39...",
        "b_elems = " + "0" * 64,
        f"  b_elems[block 0][0..31]: 0 x32, {zero}",
        f"  b_elems[block 1][0..31]: 0 x32, {zero}",
    ]
    assert lines[:2] == ["a_scale = 7f7f", "  a_scale[0..1]: 7f x2, each e=01111111 (2^0) = +1"]  # equal codes too
    values["a_elems"] = sum(0xA << 4 * i for i in range(64))  # E2M1 0xA = s=1 e=01 m=0 = -1 in every element
    lines = vector_lines(suite, values, [suite.inputs[1]])
    assert lines == ["a_elems = " + "a" * 64, "  a_elems[block 0][0..31]: a x32, each s=1 e=01 m=0 (2^0) = -1",
                     "  a_elems[block 1][0..31]: a x32, each s=1 e=01 m=0 (2^0) = -1"]


# --- a small suite with vectors.npz, and the command line in a child process ---------------------
def _decode_suite(root: Path, count: int = 40, shard=None, npz: bool = True) -> Path:
    """decode/fp4_e2m1 with ``count`` vectors (16 codes, then random ones) and vectors.npz."""
    return generate(suite_from_spec("decode", element="fp4_e2m1"), root, count=count, npz=npz, shard=shard)


def _cli(*argv: str, timeout: float = 60) -> tuple[int, str]:
    """``mxsim ARGV`` in a child process (a hang is a failure after ``timeout`` seconds, not a
    hung test run): (exit code, stdout + stderr)."""
    try:
        done = subprocess.run([sys.executable, "-m", "mxsim.cli", *argv], capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mxsim {' '.join(argv)} did not finish in {timeout} s (blocked on a FIFO or reading a device)")
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


def _forge_npz(directory: Path, root: Path, edit) -> None:
    """Rewrite vectors.npz as ``edit(arrays)`` makes it (np.savez, as a forger would) and make every
    SHA-256 and the index match it."""
    arrays = dict(np.load(directory / "vectors.npz"))
    edit(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    (directory / "vectors.npz").write_bytes(buffer.getvalue())
    rewrite_suite(directory, root)


# --- item 2: vectors.npz is read, not only hashed ------------------------------------------------
def test_verify_compares_a_forged_npz_with_the_hex_files(tmp_path):
    directory = _decode_suite(tmp_path)
    assert verify(tmp_path).ok
    value = [int(line, 16) for line in (directory / "value.hex").read_text().split()]

    def flip(arrays):
        arrays["value"] = arrays["value"].copy()
        arrays["value"][3] ^= 1

    _forge_npz(directory, tmp_path, flip)
    assert verify(tmp_path).problems == [
        f"{directory / 'vectors.npz'}: value.npy row 3 is {value[3] ^ 1:08x}, but value.hex line 4 has "
        f"{value[3]:08x} (the archive was edited or replaced)"]
    assert _cli("golden", "verify", str(tmp_path))[0] == 1


@pytest.mark.parametrize("edit, message", [
    (lambda arrays: arrays.pop("flags"), "expected one array per field: code.npy, value.npy, flags.npy (missing flags.npy)"),
    (lambda arrays: arrays.update(extra=np.zeros(3)), "(not of this suite or repeated: extra.npy)"),
    (lambda arrays: arrays.update(code=arrays["code"][:-1]), "code.npy is uint64 of shape (39,), expected uint64 of "
                                                              "shape (40,)"),
    (lambda arrays: arrays.update(code=arrays["code"].astype(np.int32)), "code.npy is int32 of shape (40,)"),
])
def test_verify_names_an_npz_whose_arrays_are_not_the_suites(tmp_path, edit, message):
    directory = _decode_suite(tmp_path)
    _forge_npz(directory, tmp_path, edit)
    (problem,) = verify(tmp_path).problems
    assert problem.startswith(f"{directory / 'vectors.npz'}: ") and message in problem


def test_verify_and_merge_never_read_a_device_or_wait_on_a_fifo_as_npz(tmp_path):
    """vectors.npz a symlink to /dev/zero (an endless file), then a FIFO without a writer: a
    problem naming it, at once (before the fix: verify and merge read /dev/zero for ever)."""
    directory = _decode_suite(tmp_path / "whole")
    shards = [_decode_suite(tmp_path / "jobs", shard=(i, 2)) for i in range(2)]
    for replace in (lambda p: p.symlink_to("/dev/zero"), os.mkfifo):
        for npz in (directory / "vectors.npz", shards[1] / "vectors.npz"):
            npz.unlink()
            replace(npz)
        what = "a character device" if (directory / "vectors.npz").is_symlink() else "a FIFO"
        code, out = _cli("golden", "verify", str(directory))
        assert code == 1 and f"MISMATCH {directory / 'vectors.npz'}: not a regular file ({what})" in out
        code, out = _cli("golden", "merge", str(tmp_path / "merged"), str(tmp_path / "jobs"))
        assert code == 2 and f"{shards[1] / 'vectors.npz'}: not a regular file ({what})" in out


# --- item 9: merge of a shard whose npz (hash matching) is no archive or lacks an array ----------
@pytest.mark.parametrize("damage, message", [
    (lambda path: path.write_bytes(b"not a zip archive"), "not a vectors.npz as mxsim writes it"),
    (lambda path: _without_entry(path, "value.npy"), "(missing value.npy)"),
    (lambda path: _with_row_changed(path), "value.npy row 5 is "),
])
def test_merge_refuses_a_shard_npz_that_is_not_its_vectors(tmp_path, damage, message):
    """The shard's manifest re-signed to the damaged archive (a hash that matches): a ShardError
    naming it, before OUT is touched (before the fix: a BadZipFile or KeyError traceback, or the
    damaged rows copied into the merged suite)."""
    shards = [_decode_suite(tmp_path / "jobs", shard=(i, 2)) for i in range(2)]
    damage(shards[0] / "vectors.npz")
    rewrite_suite(shards[0], tmp_path / "jobs")
    with pytest.raises(ShardError, match="generate shard 0/2 again") as error:
        merge(tmp_path / "merged", [tmp_path / "jobs"])
    assert str(error.value).startswith(f"{shards[0] / 'vectors.npz'}: ") and message in str(error.value)
    assert not (tmp_path / "merged").exists()
    code, out = _cli("golden", "merge", str(tmp_path / "merged"), str(tmp_path / "jobs"))
    assert code == 2 and message in out


def _without_entry(path: Path, name: str) -> None:
    arrays = dict(np.load(path))
    del arrays[name.removesuffix(".npy")]
    np.savez(path, **arrays)


def _with_row_changed(path: Path) -> None:
    arrays = dict(np.load(path))
    arrays["value"] = arrays["value"].copy()
    arrays["value"][5] ^= np.uint64(1 << 31)
    np.savez(path, **arrays)


# --- item 7: FIFOs as a suite's or the device's files ----------------------------------------------
def _device_copy(directory: Path, dut: Path) -> Path:
    dut.mkdir()
    (dut / "value.hex").write_bytes((directory / "value.hex").read_bytes())
    return dut


def test_a_fifo_is_refused_by_name_whether_or_not_it_has_a_writer(tmp_path):
    """check with the device's value.hex a FIFO (no writer: before the fix check blocked for
    ever; with a writer: "File or stream is not seekable", naming no file) and with a suite file
    a FIFO; verify with a suite file a FIFO (blocked for ever before)."""
    directory = _decode_suite(tmp_path / "suite")
    dut = tmp_path / "dut"
    dut.mkdir()
    os.mkfifo(dut / "value.hex")
    code, out = _cli("golden", "check", str(directory), str(dut))
    assert code == 2 and f"ERROR {dut / 'value.hex'}: not a regular file (a FIFO)" in out
    writer = subprocess.Popen(["sh", "-c", f"cat '{directory / 'value.hex'}' > '{dut / 'value.hex'}'"])
    try:
        code, out = _cli("golden", "check", str(directory), str(dut))
    finally:
        writer.kill()
        writer.wait()
    assert code == 2 and f"ERROR {dut / 'value.hex'}: not a regular file (a FIFO)" in out
    (dut / "value.hex").unlink()
    (dut / "value.hex").write_bytes((directory / "value.hex").read_bytes())
    assert _cli("golden", "check", str(directory), str(dut))[0] == 0
    (directory / "code.hex").rename(tmp_path / "code.hex")
    os.mkfifo(directory / "code.hex")
    code, out = _cli("golden", "check", str(directory), str(dut))
    assert code == 2 and f"mxsim: error: {directory / 'code.hex'}: not a regular file (a FIFO)" in out
    code, out = _cli("golden", "verify", str(directory))
    assert code == 1 and f"MISMATCH {directory / 'code.hex'}: not a regular file (a FIFO)" in out


def test_info_refuses_a_fifo_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "x.mxt")
    code, out = _cli("info", str(tmp_path / "x.mxt"))
    assert (code, out) == (2, f"mxsim: error: {tmp_path / 'x.mxt'}: not a regular file (a FIFO); mxsim info describes "
                              "a tensor file (.mxt)\n")


# --- item 8: a manifest check cannot use is a usage error (exit 2), never a loop or a traceback --
@pytest.mark.parametrize("key, value, message", [
    ("count", 10**18, "'count' is 1000000000000000000, more than a suite may have"),
    ("count", 41, "code.hex: 80 bytes, but the manifest's 41 vectors make 82"),  # 40 lines: not the device's fault
    ("coverage", None, "'coverage' is null, expected a count per class"),
    ("coverage", {"zero": [1]}, "'coverage' is {\"zero\": [1]}, expected a count per class"),
])
def test_check_refuses_a_manifest_it_cannot_use(tmp_path, key, value, message):
    directory = _decode_suite(tmp_path / "suite")
    dut = _device_copy(directory, tmp_path / "dut")
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest[key] = value
    (directory / "manifest.json").write_text(json.dumps(manifest))
    code, out = _cli("golden", "check", str(directory), str(dut))
    assert code == 2 and out.startswith("mxsim: error: ") and message in out and out.count("\n") == 1
    code, out = _cli("golden", "check", str(directory), "-")
    assert code == 2 and message in out


# --- item 13 (parts): usage errors, a device as index.json ---------------------------------------
def test_verify_of_a_directory_that_is_not_there_is_a_usage_error(tmp_path):
    code, out = _cli("golden", "verify", str(tmp_path / "nope"))
    assert (code, out) == (2, f"mxsim: error: {tmp_path / 'nope'}: no such directory (verify takes the directory of a "
                              "suite, or a root of suites with its index.json)\n")


def test_an_index_that_is_a_device_is_named(tmp_path):
    """index.json a symlink to /dev/urandom: before the fix verify said there was no index.json."""
    _decode_suite(tmp_path)
    (tmp_path / "index.json").unlink()
    (tmp_path / "index.json").symlink_to("/dev/urandom")
    code, out = _cli("golden", "verify", str(tmp_path))
    assert code == 1 and f"MISMATCH {tmp_path / 'index.json'}: not a regular file (a character device)" in out
    assert "no index.json" not in out


# --- item 15: a merged suite's shards are not counted (or recomputed) twice -----------------------
def test_verify_after_merge_into_the_shards_root_counts_each_vector_once(tmp_path):
    """300 vectors in 3 shards merged into their own root: 300 vectors recomputed (before the fix,
    600: the shards too), the shards' 300 lines compared with the merged suite; a shard line
    edited (hashes and index re-signed) is named against the merged suite's line."""
    shards = [_decode_suite(tmp_path, count=300, shard=(i, 3), npz=False) for i in range(3)]
    assert main(["golden", "merge", str(tmp_path), str(tmp_path)]) == 0
    report = verify(tmp_path)
    assert report.ok and (report.suites, report.vectors, report.lines) == (1, 300, 300)
    assert (report.shards, report.shard_lines) == (3, 300)
    code, out = _cli("golden", "verify", str(tmp_path))
    assert (code, out) == (0, f"{tmp_path}: 1 suite(s), 300 vectors recomputed; 3 shard(s) of merged suites (300 "
                              "lines) compared line for line with their merged suite, all match\n")

    def edit(lines):  # line 7 of shard 1 (line 107 of the suite): a code the seed does not draw there
        lines[6] = lines[7]
        return lines

    rewrite_suite(shards[1], tmp_path, lines=edit)
    problems = verify(tmp_path).problems
    assert f"{shards[1] / 'code.hex'}: line 7 differs from line 107 of the merged suite's " \
           f"{shards[1].parent / 'code.hex'} (the shard or the merged suite was edited)" in problems
    assert all(problem.startswith(str(shards[1])) for problem in problems)  # the shard's, not the merged suite's


# --- item 13 (parts): names and headers echoed in reports never forge a line or move the cursor -----
def test_a_newline_in_a_name_forges_no_report_line(tmp_path):
    """A suite root named with a newline and "all match", and a stray file whose name holds a
    newline and "MISMATCH": each report line stays one line, the names' controls escaped."""
    root = tmp_path / "g\nall match"
    directory = _decode_suite(root, npz=False)
    code, out = _cli("golden", "verify", str(root))
    assert (code, out.count("\n")) == (0, 1) and out.startswith(f"{tmp_path}/g\\nall match: 1 suite(s)")
    (directory / "stray\nMISMATCH forged.hex").write_text("0\n")
    code, out = _cli("golden", "verify", str(root))
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2 and lines[1] == (
        f"MISMATCH {tmp_path}/g\\nall match/decode/fp4_e2m1/stray\\nMISMATCH forged.hex: not listed in the manifest")


def test_escape_sequences_in_a_name_or_a_stream_header_are_escaped(tmp_path):
    """ESC [2J (clear the screen) in the device's directory name and in a stream header's suite
    name: printed as \\x1b, never raw."""
    directory = _decode_suite(tmp_path / "suite", npz=False)
    dut = tmp_path / "dut\x1b[2J"
    dut.mkdir()
    code, out = _cli("golden", "check", str(directory), str(dut))
    assert code == 2 and "\x1b" not in out and f"ERROR {tmp_path}/dut\\x1b[2J/value.hex: missing" in out
    header = "# mxsim golden stream kind=decode suite=\x1b[2Jevil seed=0\n"
    done = subprocess.run([sys.executable, "-m", "mxsim.cli", "golden", "check", str(directory), "-"], input=header,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "\x1b" not in done.stderr
    assert "the header names a stream of decode/\\x1b[2Jevil, not of the suite decode/fp4_e2m1" in done.stderr


def test_info_escapes_the_control_characters_of_a_tensor_files_header(tmp_path):
    """A version 2 tensor file (checksums right) whose header's mxsim_version holds ESC [2J and a
    newline: info prints them escaped, one line each (before: raw, the screen cleared)."""
    path = tmp_path / "t.mxt"
    fileformat.save(mxsim.quantize(np.linspace(-3, 3, 64, dtype=np.float32), "mxfp8_e4m3"), path)
    found = fileformat.read(path)
    data = path.read_bytes()
    payload = data[len(data) - found.header["payload_bytes"]:]
    blob = json.dumps({**found.header, "mxsim_version": "0.\x1b[2J\nchecksum        forged"}, sort_keys=True).encode()
    prefix = struct.pack("<8sHI", fileformat.MAGIC, 2, len(blob))
    path.write_bytes(prefix + hashlib.sha256(prefix + blob).digest() + blob + payload)
    code, out = _cli("info", str(path))
    assert code == 0 and "\x1b" not in out
    assert "written by      mxsim 0.\\x1b[2J\\nchecksum        forged\n" in out


def test_escape_controls():
    from mxsim.printable import escape_controls

    assert escape_controls("plain name/é ü\\x") == "plain name/é ü\\x"
    assert escape_controls("a\nb\rc\td\x1b[0m\x7f\x85\u202eZ") == "a\\nb\\rc\\td\\x1b[0m\\x7f\\x85\\u202eZ"
