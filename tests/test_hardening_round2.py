"""Hardening, round two (issue 23): each test failed before its fix (the item is named).

Expected values are hand-worked: the bytes a file holds, the lines a suite has, the contract's
rules (docs/numerics.md) computed with Fractions; nothing is copied from the code under test.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import mxsim
from mxsim import cli, fileformat, reading
from mxsim.golden import files as golden_files

# =================================================================================================
# helpers
# =================================================================================================


def _run(argv, capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _mxt_with_header(path: Path, header: dict, payload: bytes) -> None:
    """A version 2 tensor file of ``header`` (JSON text as given) and ``payload``, checksums right."""
    blob = header if isinstance(header, bytes) else json.dumps(header, sort_keys=True).encode()
    prefix = struct.pack("<8sHI", fileformat.MAGIC, 2, len(blob))
    path.write_bytes(prefix + hashlib.sha256(prefix + blob).digest() + blob + payload)


def _saved(tmp_path: Path) -> tuple[Path, dict, bytes]:
    """A small real tensor file, its header and its payload."""
    path = tmp_path / "t.mxt"
    fileformat.save(mxsim.quantize(np.linspace(-3, 3, 64, dtype=np.float32), "mxfp8_e4m3"), path)
    found = fileformat.read(path)
    data = path.read_bytes()
    return path, found.header, data[len(data) - found.header["payload_bytes"]:]


# =================================================================================================
# 2. duplicate JSON keys
# =================================================================================================


def test_item2_loads_json_refuses_a_repeated_key():
    assert reading.loads_json('{"a": 1, "b": {"c": 2}}') == {"a": 1, "b": {"c": 2}}
    with pytest.raises(ValueError, match="duplicate key 'c'"):
        reading.loads_json('{"a": 1, "b": {"c": 2, "c": 3}}')


def test_item2_a_tensor_header_with_two_shape_keys_is_refused(tmp_path):
    path, header, payload = _saved(tmp_path)
    text = json.dumps(header, sort_keys=True)
    doubled = text.replace('"shape": [64]', '"shape": [0], "shape": [64]', 1).encode()
    assert doubled != text.encode()
    _mxt_with_header(path, doubled, payload)
    with pytest.raises(ValueError, match="t.mxt: corrupt header: duplicate key 'shape'"):
        fileformat.load(path)


def test_item2_params_with_two_block_keys_is_refused(tmp_path, capsys):
    code, _, err = _run(["golden", "generate", tmp_path / "g", "--suite", "quantize", "--params",
                         '{"block": "mxfp8_e4m3", "block": "mxfp4_e2m1"}'], capsys)
    assert code == 2 and "--params is not valid JSON: duplicate key 'block'" in err
    assert not (tmp_path / "g").exists()


def test_item2_a_manifest_with_a_repeated_key_is_refused(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{"count": 10, "count": 3}')
    with pytest.raises(ValueError, match="duplicate key 'count'"):
        golden_files._read_json(path)


# =================================================================================================
# 6. a JSON file that is a device or a FIFO
# =================================================================================================


def test_item6_a_manifest_on_dev_zero_is_read_with_a_cap(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")  # pragma: no cover - not POSIX
    link = tmp_path / "manifest.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match=f"more than the {golden_files.MAX_JSON_BYTES} bytes this file may have "
                                         r"\(not a regular file\)"):
        golden_files._read_json(link)


def test_item6_a_fifo_without_writer_does_not_block(tmp_path):
    fifo = tmp_path / "index.json"
    os.mkfifo(fifo)
    assert reading.read_capped(fifo, 100) == b""  # no writer: no bytes, at once
    with pytest.raises(ValueError, match="not valid JSON"):
        golden_files._read_json(fifo)


# =================================================================================================
# 10. a bool where an integer is expected
# =================================================================================================


def test_item10_n_blocks_true_is_refused_naming_the_key(tmp_path, capsys):
    code, _, err = _run(["golden", "generate", tmp_path / "g", "--suite", "dotgeneral", "--params",
                         '{"block_a": "mxfp8_e4m3", "n_blocks": true}'], capsys)
    assert code == 2
    assert "n_blocks=true for suite kind dotgeneral is not allowed; expected an integer" in err


# =================================================================================================
# 11. a lone surrogate in a header string
# =================================================================================================


def test_item11_info_shows_a_lone_surrogate_escaped(tmp_path, capsys, monkeypatch):
    path, header, payload = _saved(tmp_path)
    _mxt_with_header(path, {**header, "mxsim_version": "0.\ud800"}, payload)
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    code = cli.main(["info", str(path)])
    sys_out = __import__("sys").stdout
    sys_out.flush()
    text = sys_out.buffer.getvalue().decode("utf-8")
    assert code == 0
    assert "written by      mxsim 0.\\ud800" in text


# =================================================================================================
# 13. echoed inputs are cut short
# =================================================================================================


def test_item13_sixty_thousand_unknown_header_keys_are_not_all_listed(tmp_path):
    path, header, payload = _saved(tmp_path)
    _mxt_with_header(path, {**header, **{f"k{i:05}": 0 for i in range(60000)}}, payload)
    with pytest.raises(ValueError) as error:
        fileformat.load(path)
    message = str(error.value)
    assert "unknown field(s) 'k00000', 'k00001'" in message and "and 59990 more" in message
    assert len(message) < 800


def test_item13_shorten():
    assert reading.shorten("abc", 5) == "abc"
    assert reading.shorten("a" * 10, 4) == "aaaa... (6 more characters)"


# =================================================================================================
# 5. endless stdin and long tails: stop at the first line past the suite
# =================================================================================================


@pytest.fixture(scope="module")
def decode_suite(tmp_path_factory) -> Path:
    """decode/fp4_e2m1: the 16 codes of FP4 (a suite of 16 vectors)."""
    root = tmp_path_factory.mktemp("g")
    assert cli.main(["golden", "generate", str(root), "--suite", "decode", "--params", '{"element": "fp4_e2m1"}']) == 0
    return root / "decode" / "fp4_e2m1"


def _stream_lines(suite_dir: Path) -> list[bytes]:
    """The suite's vectors as stream lines (inputs, outputs, flags), read from its hex files."""
    columns = [(suite_dir / name).read_bytes().split(b"\n")[:-1] for name in ("code.hex", "value.hex", "flags.hex")]
    assert len(columns[0]) == 16
    return [b" ".join(row) + b"\n" for row in zip(*columns)]


class _Endless(io.RawIOBase):
    """``head`` and then ``tail`` repeated forever; counts the bytes handed out."""

    def __init__(self, head: bytes, tail: bytes):
        self.head, self.tail, self.given = head, tail, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        if self.given > 64 << 20:  # what the code under test did before its fix: read on and on
            raise RuntimeError("read more than 64 MiB of an endless stream")
        out = bytearray()
        while len(out) < len(buffer):
            out += self.head[: len(buffer) - len(out)]
            self.head = self.head[len(out):] if self.head else b""
            if not self.head:
                out += self.tail * (1 + (len(buffer) - len(out)) // len(self.tail))
        out = out[: len(buffer)]
        buffer[: len(out)] = out
        self.given += len(out)
        return len(out)


def test_item5_an_endless_stream_after_the_suite_stops_at_the_first_extra_line(decode_suite):
    from mxsim.golden.check import check

    lines = _stream_lines(decode_suite)
    source = _Endless(b"".join(lines), lines[0])
    report = check(decode_suite, io.BufferedReader(source, 1 << 16))
    assert report.vectors == 16 and not len(report.mismatching)
    assert report.errors == ["stdin: more than the suite's 16 vector line(s) (long: line 17 onward is extra; not read "
                             "further)"]
    assert source.given < 1 << 20  # before the fix: read to the end, i.e. forever


def test_item5_dev_zero_on_stdin_is_refused_at_once(decode_suite):
    from mxsim.golden.check import CheckError, check

    source = _Endless(b"", b"\0")
    with pytest.raises(CheckError, match="stdin: line 1: more than 65536 bytes without a line end"):
        check(decode_suite, io.BufferedReader(source, 1 << 16))
    assert source.given < 1 << 20


def test_item5_endless_comment_lines_are_refused(decode_suite):
    from mxsim.golden.check import CheckError, check

    source = _Endless(b"", b"# hello\n")
    with pytest.raises(CheckError, match="more than 1000 comment lines"):
        check(decode_suite, io.BufferedReader(source, 1 << 16))


def test_item5_explain_keeps_no_more_of_stdin_than_the_suite_takes(decode_suite, capsys, monkeypatch):
    lines = _stream_lines(decode_suite)
    source = _Endless(b"".join(lines), lines[0])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(source, 1 << 16)))
    code, _, err = _run(["golden", "check", decode_suite, "-", "--explain"], capsys)
    assert code == 2 and "stdin: more than the" in err and "not read further" in err
    assert source.given < 2 << 20


def test_item5_a_results_file_with_a_long_tail_is_not_read_to_its_end(decode_suite, tmp_path, monkeypatch):
    from mxsim.golden import check as golden_check

    dut = tmp_path / "dut"
    dut.mkdir()
    (dut / "value.hex").write_bytes((decode_suite / "value.hex").read_bytes() + b"00000000\n" * 300000)
    taken = []
    original = golden_check.RecordReader._take

    def counting(self, size):
        data = original(self, size)
        taken.append(len(data))
        return data

    monkeypatch.setattr(golden_check.RecordReader, "_take", counting)
    report = golden_check.check(decode_suite, dut)
    assert report.errors == [f"{dut}/value.hex: more than the suite's 16 vector line(s) (long: line 17 onward is "
                             "extra; not read further)"]
    assert sum(taken) < 1 << 20  # the tail is 2.7 MB


# =================================================================================================
# 6. a hex file that is a device
# =================================================================================================


def test_item6_verify_of_a_hex_file_on_dev_zero_ends(tmp_path, capsys):
    root = tmp_path / "g"
    assert cli.main(["golden", "generate", str(root), "--suite", "decode", "--params", '{"element": "fp4_e2m1"}']) == 0
    value = root / "decode" / "fp4_e2m1" / "value.hex"
    value.unlink()
    value.symlink_to("/dev/zero")
    code, _, err = _run(["golden", "verify", root], capsys)
    assert code == 1
    assert f"{value}: more than twice the 144 bytes of the manifest's 16 lines (not read further)" in err
