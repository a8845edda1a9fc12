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
