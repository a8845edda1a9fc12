"""Golden suites beyond one process: ``generate --shard I/N`` + ``golden merge`` (a job array)
gives byte for byte the suite one ``generate`` writes, and merge refuses shards that do not make
one suite; a local Dask cluster of 2 workers generates, verifies and checks suites with the same
bytes and reports as one process. The reference in every comparison is the one-process run."""

from __future__ import annotations

import importlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mxsim.cli import main
from mxsim.golden.device import check as golden_check
from mxsim.golden import cluster as golden_cluster
from mxsim.golden import generate, generate_suites, suite_from_spec, verify
from mxsim.golden.storage.merge import ShardError, merge

verify_module = importlib.import_module("mxsim.golden.storage.verify")  # mxsim.golden.verify is the function

ROOT = Path(__file__).resolve().parents[2]
PACK = ("pack", {"block": "mxfp4_e2m1"})  # 108 vectors in the catalogue
ENCODE = ("encode", {"element": "fp4_e2m1", "rounding": "rtz"})
DECODE = ("decode", {"element": "fp8_e4m3"})  # 256 codes, then random ones; fast to compute
DECODE6 = ("decode", {"element": "fp6_e3m2"})


def _suite(spec):
    return suite_from_spec(spec[0], **spec[1])


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _shards(spec, root: Path, n: int, count=None, seed=0, npz=False, indices=None) -> list[Path]:
    return [generate(_suite(spec), root, seed=seed, shard=(i, n), count=count, npz=npz)
            for i in (range(n) if indices is None else indices)]


# --- merge: a job array's shards -> the suite ----------------------------------------------------
def test_merged_shards_are_the_single_run_byte_for_byte(tmp_path):
    """Two suites, shards written by separate "jobs" into one root (pack with --count, npz
    included; encode's catalogue in 4 shards): the merged root is the single run's, index too."""
    suites = [_suite(PACK), _suite(ENCODE)]
    generate_suites(suites, tmp_path / "single", count=700, npz=True)
    for i in range(3):
        generate_suites(suites, tmp_path / "jobs", shard=(i, 3), count=700, npz=True)
    directories = merge(tmp_path / "merged", [tmp_path / "jobs"])
    assert [d.relative_to(tmp_path / "merged").as_posix() for d in directories] == [
        f"{s.kind}/{s.name}" for s in sorted(suites, key=lambda s: f"{s.kind}/{s.name}")]
    single = _tree(tmp_path / "single")
    assert set(single) == {"index.json"} | {f"{s.kind}/{s.name}/{name}" for s in suites
                                            for name in ["manifest.json", "vectors.npz"] + [f.file for f in s.fields]}
    assert _tree(tmp_path / "merged") == single


def test_merge_from_the_command_line_into_the_shards_root(tmp_path, capsys):
    """`mxsim golden merge OUT SHARD_DIR...` with OUT the root the shards are in, and shard
    directories named one by one, in any order (300 vectors in 7 uneven shards)."""
    suite = _suite(DECODE)
    whole = generate(suite, tmp_path / "single", count=300)
    shards = _shards(DECODE, tmp_path / "out", 7, count=300)
    assert main(["golden", "merge", str(tmp_path / "out"), *map(str, reversed(shards))]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path / 'out'}: 1 suite(s) merged, 300 vectors"
    merged = tmp_path / "out" / suite.kind / suite.name
    for name in os.listdir(whole):
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    index = json.loads((tmp_path / "out" / "index.json").read_text())["suites"]
    assert index[f"{suite.kind}/{suite.name}"] == json.loads((tmp_path / "single" / "index.json").read_text())[
        "suites"][f"{suite.kind}/{suite.name}"]
    assert len(index) == 8  # the suite and its 7 shards
    assert verify(tmp_path / "out").ok


def _expect_refusal(tmp_path, directories, match):
    with pytest.raises(ShardError, match=match):
        merge(tmp_path / "merged", directories)
    assert not (tmp_path / "merged").exists()  # checked before anything is written


def test_merge_refuses_a_missing_shard(tmp_path):
    _shards(PACK, tmp_path / "jobs", 5, count=400, indices=[0, 1, 3])
    _expect_refusal(tmp_path, [tmp_path / "jobs"], r"pack/mxfp4_e2m1-lsb: 2 of 5 shard\(s\) missing: 2, 4 "
                                                   r"\(found: 0, 1, 3\); generate them with --shard I/5")


def test_merge_refuses_a_duplicated_shard(tmp_path):
    shards = _shards(PACK, tmp_path / "jobs", 3, count=400)
    copy = tmp_path / "rerun" / "shard-1-of-3"
    shutil.copytree(shards[1], copy)
    _expect_refusal(tmp_path, [tmp_path / "jobs", copy], r"shard 1/3 twice: .*shard-1-of-3 and .*shard-1-of-3; give "
                                                          "each shard once")


def test_the_same_shard_reached_twice_is_taken_once(tmp_path):
    shards = _shards(PACK, tmp_path / "jobs", 2, count=400)
    merge(tmp_path / "merged", [tmp_path / "jobs", shards[0], tmp_path / "jobs" / ".." / "jobs"])
    assert verify(tmp_path / "merged").ok


@pytest.mark.parametrize("foreign, match", [
    ({"seed": 1}, r"come from different generations \(seed 1 vs 0\)"),
    ({"count": 401}, r"come from different generations \(stimulus "),
    ({"n": 4, "index": 2}, r"is a shard of 4, .* of 3; give the shards of one split"),
])
def test_merge_refuses_a_foreign_shard(tmp_path, foreign, match):
    """Shards 0 and 1 of one generation with shard 2 of another (seed, count or N)."""
    _shards(PACK, tmp_path / "jobs", 3, count=400, indices=[0, 1])
    generate(_suite(PACK), tmp_path / "other", seed=foreign.get("seed", 0), count=foreign.get("count", 400),
             shard=(foreign.get("index", 2), foreign.get("n", 3)))
    _expect_refusal(tmp_path, [tmp_path / "jobs", tmp_path / "other"], match)


def test_merge_refuses_a_shard_of_another_suite(tmp_path):
    """Shard 2 of another suite does not complete this one: both are incomplete."""
    _shards(PACK, tmp_path / "jobs", 3, count=400, indices=[0, 1])
    _shards(("pack", {"block": "mxfp6_e3m2"}), tmp_path / "other", 3, count=400, indices=[2])
    _expect_refusal(tmp_path, [tmp_path / "jobs", tmp_path / "other"],
                    r"pack/mxfp4_e2m1-lsb: 1 of 3 shard\(s\) missing: 2 ")


def test_merge_refuses_shards_with_and_without_npz(tmp_path):
    generate(_suite(PACK), tmp_path / "jobs", shard=(0, 2), count=400, npz=True)
    generate(_suite(PACK), tmp_path / "jobs", shard=(1, 2), count=400)
    _expect_refusal(tmp_path, [tmp_path / "jobs"], r"has vectors.npz and another shard not")


@pytest.mark.parametrize("edit", ["flip", "truncate"])
def test_merge_refuses_an_edited_shard_file_and_leaves_no_suite(tmp_path, edit):
    suite = _suite(PACK)
    shards = _shards(PACK, tmp_path / "jobs", 3, count=400)
    path = shards[2] / "codes.hex"
    data = bytearray(path.read_bytes())
    if edit == "flip":
        data[5] = ord("0") if data[5] != ord("0") else ord("1")
        match = r"shard-2-of-3/codes.hex: SHA-256 differs from its manifest .*generate shard 2/3 again"
    else:
        del data[-9:]
        match = r"shard-2-of-3/codes.hex: \d+ bytes, its manifest's 134 lines make \d+ \(truncated or edited\)"
    path.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=match):
        merge(tmp_path / "merged", [tmp_path / "jobs"])
    assert suite.name and not (tmp_path / "merged").exists()  # every shard is checked before OUT is touched


def test_merge_refuses_directories_without_shards(tmp_path, capsys):
    generate(_suite(PACK), tmp_path / "whole")
    _expect_refusal(tmp_path, [tmp_path / "whole"], r"whole: no shards found \(directories shard-<i>-of-<n>")
    _expect_refusal(tmp_path, [tmp_path / "nowhere"], r"nowhere: no such directory")
    assert main(["golden", "merge", str(tmp_path / "merged"), str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such directory" in capsys.readouterr().err


# --- Dask: the optional extra ------------------------------------------------------------------
def test_dask_is_imported_only_for_a_cluster():
    code = ("import sys, mxsim, mxsim.cli, mxsim.golden.cluster, mxsim.golden.storage.merge; "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')], 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_a_missing_extra_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    with pytest.raises(golden_cluster.MissingExtra, match=r"pip install 'mxsim\[dist\]'"):
        with golden_cluster.open_cluster(workers=2):
            pass
    assert main(["golden", "generate", str(tmp_path / "out"), "--suite", "pack", "--params",
                 '{"block": "mxfp4_e2m1"}', "--workers", "2"]) == 2
    assert "need Dask distributed" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, message", [
    (["generate", "OUT", "--shard", "0/2", "--workers", "2"], "--shard and --scheduler/--workers exclude each other"),
    (["generate", "OUT", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"],
     "--scheduler and --workers exclude each other"),
    (["verify", "OUT", "--workers", "0"], "--workers=0 is not allowed; expected a positive integer"),
    (["check", "OUT", "-", "--workers", "2"], "a stream on stdin is read by one process"),
])
def test_cluster_flags_are_checked_before_a_cluster_starts(tmp_path, capsys, argv, message):
    argv = [str(tmp_path / a) if a == "OUT" else a for a in argv]
    assert main(["golden", *argv]) == 2
    assert message in capsys.readouterr().err


# --- a local cluster of 2 workers ----------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    with golden_cluster.open_cluster(workers=2) as running:
        yield running


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of a few thousand lines, so that small suites make several tasks (the client
    splits; workers compute their pieces as always)."""
    monkeypatch.setattr(golden_cluster, "GENERATE_VECTORS", 1000)
    monkeypatch.setattr(verify_module, "_RANGE_VECTORS", 1)  # one range per 4096-line chunk
    monkeypatch.setattr(golden_check, "CHUNK", 1024)
    monkeypatch.setattr(golden_check, "_RANGE_LINES", 2048)


def test_a_local_cluster_generates_the_single_run(tmp_path, cluster, small_pieces):
    suites = [_suite(DECODE), _suite(ENCODE)]
    assert cluster.threads == 2
    assert [len(cluster.ranges(n, 1000)) for n in (13000, 5000, 300)] == [8, 5, 1]
    generate_suites(suites, tmp_path / "single", count=5000, npz=True)
    written = golden_cluster.generate_suites(cluster, suites, tmp_path / "cluster", count=5000, npz=True)
    assert written == [tmp_path.resolve() / "cluster" / s.kind / s.name for s in suites]
    assert _tree(tmp_path / "cluster") == _tree(tmp_path / "single")  # the staging directory is gone too


def _plant(directory: Path, name: str, lines: list[int]) -> None:
    """Change the last hex digit of the given 0-based lines of a suite file."""
    path = directory / name
    rows = path.read_bytes().split(b"\n")
    for line in lines:
        digit = rows[line][-1:]
        rows[line] = rows[line][:-1] + (b"1" if digit == b"0" else b"0")
    path.write_bytes(b"\n".join(rows))


@pytest.mark.parametrize("sample", [None, 300])
def test_a_local_cluster_verifies_as_one_process(tmp_path, cluster, small_pieces, sample):
    """Two suites of three ranges (4096 lines each); the first mismatch of the first suite is in
    its second range: both runs report it alone (after the manifest's hash), with the vectors
    recomputed up to its chunk of 4096 lines, as one pass stops at the first mismatch."""
    suites = [_suite(DECODE), _suite(DECODE6)]
    generate_suites(suites, tmp_path, count=10000)
    decode = tmp_path / "decode" / suites[0].name
    good = verify(tmp_path, sample=sample)
    assert good.ok and good == verify(tmp_path, sample=sample, cluster=cluster)
    planted = [5000, 9000]
    if sample is not None:  # the lines the sample recomputes (the rule of mxsim.golden.storage.verify's docstring)
        drawn = random.Random(f"mxsim-verify:0:decode/{suites[0].name}").sample(range(10000), sample)
        planted = sorted(line for line in drawn if line >= 4096)[:2]
    _plant(decode, "value.hex", planted)
    single, clustered = verify(tmp_path, sample=sample), verify(tmp_path, sample=sample, cluster=cluster)
    assert clustered == single
    assert single.problems == [
        f"{decode / 'value.hex'}: SHA-256 differs from the manifest (edited or truncated)",
        single.problems[1],
    ] and single.problems[1].startswith(f"{decode}/value.hex: line {planted[0] + 1}: field 'value': reference gives ")
    if sample is None:
        assert single.vectors == 8192 + 10000


def test_a_local_cluster_checks_as_one_process(tmp_path, cluster, small_pieces):
    suite = _suite(DECODE)
    directory = generate(suite, tmp_path / "suite", count=10000)
    dut = tmp_path / "dut"
    dut.mkdir()
    shutil.copy(directory / "value.hex", dut / "value.hex")
    assert golden_check.check(directory, dut, cluster=cluster).ok
    planted = [3, 2047, 2048, 5000, 9999]
    _plant(dut, "value.hex", planted)
    single = golden_check.check(directory, dut, errors=4)
    clustered = golden_check.check(directory, dut, errors=4, cluster=cluster)
    assert clustered.mismatches["value"].tolist() == single.mismatches["value"].tolist() == planted
    assert golden_check.report_lines(clustered) == golden_check.report_lines(single)
    # a file error (a line that is not hex, the size unchanged): the one-process check reports it
    data = bytearray((dut / "value.hex").read_bytes())
    data[9 * 7000] = ord("x")
    (dut / "value.hex").write_bytes(bytes(data))
    single = golden_check.check(directory, dut)
    clustered = golden_check.check(directory, dut, cluster=cluster)
    assert single.errors == clustered.errors == [f"{dut / 'value.hex'}: line 7001: field 'value': 'x{data[9 * 7000 + 1:9 * 7000 + 8].decode()}' is not hex (expected 8 digits 0-9, a-f)"]
    assert golden_check.report_lines(clustered) == golden_check.report_lines(single)


def test_the_command_line_on_a_running_cluster(tmp_path, capsys, cluster, monkeypatch):
    """`--scheduler ADDRESS` (here the fixture's cluster), with relative paths: the files of a
    one-process run, and its verify report (problems name the paths as given)."""
    monkeypatch.chdir(tmp_path)
    address = cluster.client.scheduler.address
    params = ["--suite", "decode", "--params", '{"element": "fp8_e4m3"}', "--count", "3000"]
    assert main(["golden", "generate", "single", *params]) == 0
    assert main(["golden", "generate", "cluster", *params, "--scheduler", address]) == 0
    assert _tree(tmp_path / "cluster") == _tree(tmp_path / "single")
    capsys.readouterr()
    assert main(["golden", "verify", "cluster", "--scheduler", address]) == 0
    assert capsys.readouterr().out.strip() == "cluster: 1 suite(s), 3000 vectors recomputed, all match"
    _plant(Path("cluster/decode/fp8_e4m3"), "value.hex", [2999])
    assert main(["golden", "verify", "cluster"]) == 1
    single = capsys.readouterr().err
    assert main(["golden", "verify", "cluster", "--scheduler", address]) == 1
    assert capsys.readouterr().err == single
    assert "MISMATCH cluster/decode/fp8_e4m3/value.hex: line 3000: field 'value'" in single
    dut = tmp_path / "dut"
    dut.mkdir()
    shutil.copy(tmp_path / "single/decode/fp8_e4m3/value.hex", dut / "value.hex")
    _plant(dut, "value.hex", [0, 1500])
    assert main(["golden", "check", "single/decode/fp8_e4m3", "dut"]) == 1
    single = capsys.readouterr().out
    assert main(["golden", "check", "single/decode/fp8_e4m3", "dut", "--scheduler", address]) == 1
    assert capsys.readouterr().out == single and "field value: 2 mismatch(es), line(s) 1, 1501" in single


def test_a_shard_the_client_cannot_see_is_an_error(tmp_path):
    """With --scheduler, a worker without the shared file system writes its shard elsewhere."""
    suite = _suite(PACK)
    plan = golden_cluster.pipeline.plan(suite, 1)
    with pytest.raises(OSError, match=r"shard-0-of-1: a worker wrote this shard where this machine does not see it; "
                                      r"with --scheduler the output directory must be on a file system the workers "
                                      r"share"):
        golden_cluster._assemble(tmp_path, tmp_path / "staging", suite, plan, [str(tmp_path / "gone/shard-0-of-1")])
