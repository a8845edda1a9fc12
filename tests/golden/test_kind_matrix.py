"""Every registered suite kind through every path (issue 33 item 2): a small suite of each kind
(its ``example_params``) is generated, streamed, verified, checked (matching; one flipped bit
reported as a mismatch with its decomposition; from stdin), checked with --explain, merged from
shards and run on a Dask cluster. A kind gets all of this by registering in
:data:`mxsim.golden.kinds.registry.KINDS`; nothing here names a kind.

Expected values: the single-process run is the reference for the stream, the merge and the
cluster (byte for byte); the flipped bit is planted here, so its line, field and packed value
are known without asking the code under test."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from mxsim.cli import main
from mxsim.golden import cluster as golden_cluster
from mxsim.golden import generate, verify
from mxsim.golden.device import check as golden_check
from mxsim.golden.kinds.registry import KINDS, suite_from_spec
from mxsim.golden.storage.merge import merge

COUNT = 48  # vectors per suite: the catalogue's first (a decode catalogue of 16 codes, then random ones)
FLIPPED_LINE = 5  # 0-based line whose first output field gets one bit flipped

pytestmark = pytest.mark.parametrize("kind", list(KINDS))


def _suite(kind):
    cls = KINDS[kind]
    assert cls.example_params is not None, f"suite kind {kind} has no example_params: add them to its class"
    return suite_from_spec(kind, **cls.example_params)


@pytest.fixture
def whole(tmp_path, kind):
    """(suite, its directory) of one generate."""
    suite = _suite(kind)
    return suite, generate(suite, tmp_path / "whole", count=COUNT, npz=True)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _device(tmp_path: Path, suite, directory: Path, flip: bool) -> Path:
    """The device's results: the suite's output files, with one bit flipped if ``flip`` (the least
    significant bit of the first output field on line FLIPPED_LINE: its value 0 differs)."""
    dut = tmp_path / ("flipped" if flip else "matching")
    dut.mkdir()
    for f in suite.outputs:
        shutil.copy(directory / f.file, dut / f.file)
    if flip:
        path = dut / suite.outputs[0].file
        lines = path.read_bytes().split(b"\n")
        digit = int(lines[FLIPPED_LINE][-1:], 16) ^ 1
        lines[FLIPPED_LINE] = lines[FLIPPED_LINE][:-1] + f"{digit:x}".encode()
        path.write_bytes(b"\n".join(lines))
    return dut


def _stream(capsysbinary, suite) -> bytes:
    assert main(["golden", "stream", "--suite", suite.kind, "--params", json.dumps(suite.params()),
                 "--count", str(COUNT)]) == 0
    return capsysbinary.readouterr().out


def _out(capsysbinary) -> str:
    return capsysbinary.readouterr().out.decode()


def test_every_kind_has_a_layout_for_every_field(kind):
    suite = _suite(kind)
    assert {f.name for f in suite.inputs + suite.outputs} <= set(suite.field_layouts())


def test_generate_stream_and_verify(kind, whole, capsysbinary):
    suite, directory = whole
    assert verify(directory).ok
    stream = _stream(capsysbinary, suite)
    rows = [line for line in stream.split(b"\n") if line and not line.startswith(b"#")]
    columns = [(directory / f.file).read_bytes().split(b"\n")[:-1] for f in suite.fields]
    assert rows == [b" ".join(values) for values in zip(*columns)]


def test_check_matching_flipped_and_stdin(kind, whole, tmp_path, capsysbinary, monkeypatch):
    suite, directory = whole
    stream = _stream(capsysbinary, suite)
    assert main(["golden", "check", str(directory), str(_device(tmp_path, suite, directory, False))]) == 0
    assert _out(capsysbinary).startswith(f"check {directory}")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stream)))
    assert main(["golden", "check", str(directory), "-"]) == 0
    assert "all match" in _out(capsysbinary)

    flipped = _device(tmp_path, suite, directory, True)
    assert main(["golden", "check", str(directory), str(flipped)]) == 1
    out = _out(capsysbinary)
    field = suite.outputs[0]
    layout = suite.field_layouts()[field.name]
    assert "1 mismatching vector(s)" in out
    assert f"field {field.name}: 1 mismatch(es), line(s) {FLIPPED_LINE + 1}" in out
    assert f"--- line {FLIPPED_LINE + 1}" in out
    assert f"  {field.name}: expected " in out
    assert f"    {layout.name(field.name, 0)}: expected " in out  # the packed value that differs, decomposed
    for f in suite.inputs:  # every input of the vector shown
        assert f"  {f.name} = " in out

    lines = stream.split(b"\n")  # the same bit flipped in the stream: the first output column
    row = len([line for line in lines if line.startswith(b"#")]) + FLIPPED_LINE
    columns = lines[row].split(b" ")
    position = len(suite.inputs)
    columns[position] = columns[position][:-1] + f"{int(columns[position][-1:], 16) ^ 1:x}".encode()
    lines[row] = b" ".join(columns)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n".join(lines))))
    assert main(["golden", "check", str(directory), "-"]) == 1
    assert f"--- line {FLIPPED_LINE + 1}" in _out(capsysbinary)


def test_check_explain(kind, whole, tmp_path, capsysbinary):
    suite, directory = whole
    flipped = _device(tmp_path, suite, directory, True)
    assert main(["golden", "check", str(directory), str(flipped), "--explain", "--budget", "2"]) == 1
    out = _out(capsysbinary)
    assert f"--- line {FLIPPED_LINE + 1}" in out and "\nexplain: " in out


def test_merge_of_shards_is_the_whole_suite(kind, whole, tmp_path):
    suite, directory = whole
    for index in range(3):
        generate(suite, tmp_path / "jobs", count=COUNT, npz=True, shard=(index, 3))
    (merged,) = merge(tmp_path / "merged", [tmp_path / "jobs"])
    assert _files(merged) == _files(directory)
    assert verify(merged).ok


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    local = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    running = golden_cluster.Cluster(distributed.Client(local), local)
    yield running
    running.close()


def test_dask(kind, whole, tmp_path, cluster, monkeypatch):
    suite, directory = whole
    monkeypatch.setattr(golden_cluster, "GENERATE_VECTORS", 16)  # several pieces of the suite
    monkeypatch.setattr(golden_check, "CHUNK", 16)
    monkeypatch.setattr(golden_check, "_RANGE_LINES", 16)
    (written,) = golden_cluster.generate_suites(cluster, [suite], tmp_path / "cluster", count=COUNT, npz=True)
    assert _files(written) == _files(directory)
    assert verify(written, cluster=cluster).ok
    flipped = _device(tmp_path, suite, directory, True)
    single = golden_check.check(directory, flipped)
    clustered = golden_check.check(directory, flipped, cluster=cluster)
    assert clustered.mismatching.tolist() == single.mismatching.tolist() == [FLIPPED_LINE]
    assert golden_check.report_lines(clustered) == golden_check.report_lines(single)
