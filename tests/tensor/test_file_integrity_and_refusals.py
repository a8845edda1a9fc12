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
from forged_suites import rewrite_suite
from mxsim import cli, fileformat, reading
from mxsim.golden.storage import files as golden_files

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
        golden_files.read_json(path)


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
        golden_files.read_json(link)


def test_item6_a_fifo_without_writer_does_not_block(tmp_path):
    fifo = tmp_path / "index.json"
    os.mkfifo(fifo)
    assert reading.read_capped(fifo, 100) == b""  # no writer: no bytes, at once
    with pytest.raises(ValueError, match="not valid JSON"):
        golden_files.read_json(fifo)


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
    from mxsim.golden.device.check import check

    lines = _stream_lines(decode_suite)
    source = _Endless(b"".join(lines), lines[0])
    report = check(decode_suite, io.BufferedReader(source, 1 << 16))
    assert report.vectors == 16 and not len(report.mismatching)
    assert report.errors == ["stdin: more than the suite's 16 vector line(s) (long: line 17 onward is extra; not read "
                             "further)"]
    assert source.given < 1 << 20  # before the fix: read to the end, i.e. forever


def test_item5_dev_zero_on_stdin_is_refused_at_once(decode_suite):
    from mxsim.golden.device.check import CheckError, check

    source = _Endless(b"", b"\0")
    with pytest.raises(CheckError, match="stdin: line 1: more than 65536 bytes without a line end"):
        check(decode_suite, io.BufferedReader(source, 1 << 16))
    assert source.given < 1 << 20


def test_item5_endless_comment_lines_are_refused(decode_suite):
    from mxsim.golden.device.check import CheckError, check

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
    from mxsim.golden.device import check as golden_check

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
    assert f"{value}: not a regular file (a character device)" in err  # refused before a byte is read (issue 32 item 7)
    value.unlink()
    value.write_bytes(b"0" * 8 + b"\n" * 1000)  # a regular file grown: read no further than twice its lines' bytes
    code, _, err = _run(["golden", "verify", root], capsys)
    assert code == 1 and f"{value}: more than twice the 144 bytes of the manifest's 16 lines (not read further)" in err


# =================================================================================================
# 1. verify recomputes what the manifest records; merge checks the shards' coverage
# =================================================================================================


def _generate(root: Path, kind: str, params: str, *extra) -> Path:
    assert cli.main(["golden", "generate", str(root), "--suite", kind, "--params", params, *map(str, extra)]) == 0
    (directory,) = [p.parent for p in root.rglob("manifest.json")]
    return directory


def _verify_problems(root: Path, capsys) -> str:
    code, _, err = _run(["golden", "verify", root], capsys)
    assert code == 1, err
    return err


def test_item1_an_untouched_suite_verifies(tmp_path, capsys):
    root = tmp_path / "g"
    directory = _generate(root, "dot", '{"block_a": "mxfp4_e2m1"}', "--count", 300)
    rewrite_suite(directory, root)  # the same bytes: nothing changes
    code, out, err = _run(["golden", "verify", root], capsys)
    assert code == 0, err


def test_item1_a_suite_cut_short_with_count_and_hashes_rewritten_is_caught(tmp_path, capsys):
    root = tmp_path / "g"
    directory = _generate(root, "decode", '{"element": "fp4_e2m1"}')
    rewrite_suite(directory, root, lambda lines: lines[:10], count=10)
    assert "'count' is 10, but the stimulus makes 16 vectors" in _verify_problems(root, capsys)


@pytest.mark.parametrize("sample", [[], ["--sample", "3"]])
def test_item1_reversed_lines_are_caught(tmp_path, capsys, sample):
    root = tmp_path / "g"
    directory = _generate(root, "decode", '{"element": "fp4_e2m1"}')
    rewrite_suite(directory, root, lambda lines: lines[::-1])  # 16 lines: none stays in place
    code, _, err = _run(["golden", "verify", root, *sample], capsys)
    assert code == 1 and "not the vector the manifest's seed, level and stimulus draw for this line" in err
    if not sample:
        assert f"{directory}: line 1: not the vector" in err


@pytest.mark.parametrize("change", [{"seed": 1}, {"level": 2}])
def test_item1_an_edited_seed_or_level_is_caught(tmp_path, capsys, change):
    root = tmp_path / "g"
    directory = _generate(root, "dot", '{"block_a": "mxfp4_e2m1"}', "--count", 300)
    rewrite_suite(directory, root, **change)
    err = _verify_problems(root, capsys)
    if "level" in change:  # level 2 draws a catalogue of 368 vectors, not 218
        assert "'stimulus' is" in err and "at level 2 with count_requested 300 this suite draws" in err
    else:  # seed 1 draws other random vectors: line 1 of the catalogue is exhaustive, the first random one differs
        assert "not the vector the manifest's seed, level and stimulus draw for this line" in err


def test_item1_an_edited_stimulus_is_caught(tmp_path, capsys):
    root = tmp_path / "g"
    directory = _generate(root, "decode", '{"element": "fp4_e2m1"}')
    stimulus = json.loads((directory / "manifest.json").read_text())["stimulus"]
    rewrite_suite(directory, root, stimulus={**stimulus, "catalogue": 99})
    assert "'stimulus' is" in _verify_problems(root, capsys)


def test_item1_a_coverage_that_does_not_match_the_flags_is_caught(tmp_path, capsys):
    root = tmp_path / "g"
    directory = _generate(root, "decode", '{"element": "fp4_e2m1"}')
    coverage = json.loads((directory / "manifest.json").read_text())["coverage"]
    # FP4 E2M1 by its definition: 16 codes, one -0 (0x8), two of the largest magnitude 6 (0x7, 0xF)
    assert (coverage["exhaustive"], coverage["negative_zero"], coverage["max"]) == (16, 1, 2)
    rewrite_suite(directory, root, coverage={**coverage, "max": 5})
    assert "'coverage' differs from the classes counted in flags.hex: max 5 (flags.hex: 2)" in _verify_problems(
        root, capsys)


def test_item1_merge_refuses_a_shard_whose_coverage_does_not_match_its_flags(tmp_path, capsys):
    from mxsim.golden.storage.merge import ShardError, merge

    root = tmp_path / "shards"
    for index in range(2):
        assert cli.main(["golden", "generate", str(root), "--suite", "decode", "--params", '{"element": "fp4_e2m1"}',
                         "--shard", f"{index}/2"]) == 0
    shard = root / "decode" / "fp4_e2m1" / "shard-1-of-2"
    coverage = json.loads((shard / "manifest.json").read_text())["coverage"]
    rewrite_suite(shard, root, coverage={**coverage, "max": coverage["max"] + 3})
    with pytest.raises(ShardError, match="'coverage' differs from the classes counted in its flags.hex"):
        merge(tmp_path / "out", [root])
    assert not (tmp_path / "out").exists()


# =================================================================================================
# 3. a failed merge leaves OUT as it was
# =================================================================================================


def test_item3_a_failed_merge_keeps_the_good_suite_in_out(tmp_path, capsys):
    root, out = tmp_path / "shards", tmp_path / "out"
    for index in range(2):
        assert cli.main(["golden", "generate", str(root), "--suite", "decode", "--params", '{"element": "fp4_e2m1"}',
                         "--shard", f"{index}/2"]) == 0
    assert cli.main(["golden", "merge", str(out), str(root)]) == 0
    before = {p.name: p.read_bytes() for p in (out / "decode" / "fp4_e2m1").iterdir()}
    value = root / "decode" / "fp4_e2m1" / "shard-1-of-2" / "value.hex"
    data = bytearray(value.read_bytes())
    data[0] = ord("7") if data[0] != ord("7") else ord("6")  # same size, other bytes: only the SHA-256 tells
    value.write_bytes(bytes(data))
    code, _, err = _run(["golden", "merge", out, root], capsys)
    assert code == 2 and f"{value}: SHA-256 differs from its manifest" in err
    assert {p.name: p.read_bytes() for p in (out / "decode" / "fp4_e2m1").iterdir()} == before
    assert _run(["golden", "verify", out], capsys)[0] == 0


# =================================================================================================
# 9. Dask: dead workers, no workers, workers that cannot start
# =================================================================================================


def _distributed():
    try:
        import distributed
    except ImportError:  # pragma: no cover - the [dist] extra is missing
        if os.environ.get("CI"):
            pytest.fail("Dask distributed is not installed (CI is set, and CI installs the [dist] extra)")
        pytest.skip("Dask distributed is not installed (the [dist] extra)")
    return distributed


def _close_my_worker():
    """A task whose worker goes away while it runs (as one killed for memory does): the worker,
    in this process, is closed under it."""
    import time

    import distributed

    worker = distributed.get_worker()
    worker.loop.add_callback(worker.close)
    time.sleep(1.0)


def test_item9_a_task_whose_worker_dies_is_a_clear_error():
    distributed = _distributed()
    import dask

    from mxsim.golden import cluster as golden_cluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as local:
            with distributed.Client(local) as client:
                running = golden_cluster.Cluster(client)
                with pytest.raises(golden_cluster.ClusterError,
                                   match=r"task 1 of 1 \(_close_my_worker\): the workers running it died "
                                         r"\(KilledWorker: .*give the workers more memory"):
                    list(running.map(_close_my_worker, [()]))


def test_item9_no_worker_left_ends_the_wait(monkeypatch):
    distributed = _distributed()
    from mxsim.golden import cluster as golden_cluster

    monkeypatch.setattr(golden_cluster, "NO_WORKER_SECONDS", 2)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as local:
        with distributed.Client(local) as client:
            running = golden_cluster.Cluster(client)
            with pytest.raises(golden_cluster.ClusterError, match=r"task 1 of 1 \(abs\): no worker in the cluster for "
                                                                  r"2 s"):
                list(running.map(abs, [(-1,)]))


def test_item9_workers_that_cannot_start_are_a_clear_error(monkeypatch, capsys, tmp_path):
    distributed = _distributed()

    def failing(*args, **kwargs):
        raise RuntimeError("Nanny failed to start.\nmore lines of Dask's traceback")

    monkeypatch.setattr(distributed, "LocalCluster", failing)
    code, _, err = _run(["golden", "verify", tmp_path, "--workers", "2"], capsys)
    assert code == 2 and "Traceback" not in err
    assert err == ("mxsim: error: could not start a local cluster of 2 worker(s) (RuntimeError: Nanny failed to "
                   "start.); lower --workers or free memory\n")


# =================================================================================================
# 8. work is chunked by bytes, not lines
# =================================================================================================

BIG_BLOCK = '{"block": {"name": "k1024", "element": "fp8_e4m3", "block_size": 1024, "scale": "e8m0"}}'


def test_item8_generate_verify_and_check_work_on_chunks_of_bounded_bytes(tmp_path, monkeypatch, capsys):
    from mxsim.golden.storage import columns
    from mxsim.golden.compute import limits
    from mxsim.golden.compute import pipeline

    reference = _generate(tmp_path / "one", "quantize", BIG_BLOCK, "--count", 14)  # default chunking
    # a line: x (1024 fp32: 8 hex digits each), codes (1024 x 2 digits), scale, scale_exp, flags, newlines
    line_bytes = sum(len(p.read_bytes()) for p in reference.glob("*.hex")) // 14
    assert line_bytes > 10 * 1024
    monkeypatch.setattr(limits, "CHUNK_BYTES", 64 << 10)  # at most 6 such lines a chunk
    sizes, reads = [], []
    computed = pipeline.computed_chunks

    def spy_chunks(*args, **kwargs):
        for chunk in computed(*args, **kwargs):
            sizes.append(len(chunk["flags"]))
            yield chunk

    read = columns.RecordReader.read

    def spy_read(self, count):
        reads.append(count * self.width)
        return read(self, count)

    monkeypatch.setattr(pipeline, "computed_chunks", spy_chunks)
    monkeypatch.setattr(columns.RecordReader, "read", spy_read)
    again = _generate(tmp_path / "two", "quantize", BIG_BLOCK, "--count", 14)
    assert {p.name: p.read_bytes() for p in again.iterdir()} == {p.name: p.read_bytes() for p in reference.iterdir()}
    assert sum(sizes) == 14 and max(sizes) * line_bytes <= 64 << 10
    assert _run(["golden", "verify", tmp_path / "two"], capsys)[0] == 0
    assert _run(["golden", "check", again, again], capsys)[0] == 0  # the suite's own files as the device's
    assert reads and max(reads) <= 64 << 10  # per file read: lines of that file (or of the stream) only


# =================================================================================================
# 14. check's headline, --fields twice, a full disk, a task run again
# =================================================================================================


def test_item14_the_headline_does_not_say_all_match_when_a_field_was_dropped(tmp_path, capsys):
    root = tmp_path / "g"
    suite = _generate(root, "quantize", '{"block": "mxfp4_e2m1"}')
    dut = tmp_path / "dut"
    dut.mkdir()
    for name in ("scale.hex", "scale_exp.hex"):  # codes.hex missing: that field is not compared
        (dut / name).write_bytes((suite / name).read_bytes())
    capsys.readouterr()
    code, out, _ = _run(["golden", "check", suite, dut], capsys)
    head = out.splitlines()[0]
    assert code == 2 and "all match" not in head
    assert head.endswith("no mismatch in the lines compared, 1 file error(s): the comparison is incomplete")


def test_item14_a_field_named_twice_is_refused(tmp_path, capsys):
    suite = _generate(tmp_path / "g", "decode", '{"element": "fp4_e2m1"}')
    code, _, err = _run(["golden", "check", suite, suite, "--fields", "value,value"], capsys)
    assert code == 2 and "--fields value,value: value given more than once" in err


def test_item14_a_full_disk_names_the_suite_and_its_directory(tmp_path, monkeypatch, capsys):
    from mxsim.golden.storage import writer

    def full(self, chunk):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.SuiteWriter, "write", full)
    code, _, err = _run(["golden", "generate", tmp_path / "g", "--suite", "decode", "--params",
                         '{"element": "fp4_e2m1"}'], capsys)
    assert code == 2
    assert (f"mxsim: error: [Errno 28] {tmp_path}/g/decode/fp4_e2m1: cannot write suite decode/fp4_e2m1: No space "
            "left on device; nothing of this suite was left") in err


def test_item14_a_task_run_again_does_not_touch_the_first_attempts_shard(tmp_path, monkeypatch):
    """A worker died after its task wrote the shard; the task ran again elsewhere and failed: the
    first attempt's shard must stay (it was removed, and the client blamed the file system)."""
    from mxsim.golden import cluster as golden_cluster
    from mxsim.golden.storage import writer

    staging = tmp_path / "staging"
    staging.mkdir()
    job = ("decode", {"element": "fp4_e2m1"}, 0, 1, None, 0, 1, str(staging), False)
    first = Path(golden_cluster.generate_piece(*job))
    monkeypatch.setattr(writer.SuiteWriter, "write", lambda self, chunk: (_ for _ in ()).throw(OSError(5, "I/O")))
    with pytest.raises(OSError):
        golden_cluster.generate_piece(*job)
    assert (first / "manifest.json").is_file()
    monkeypatch.undo()
    suite = golden_cluster.suite_from_spec("decode", element="fp4_e2m1")
    plan = golden_cluster.pipeline.plan(suite, 1)
    out = golden_cluster._assemble(tmp_path / "out", staging, suite, plan, [str(first)])
    assert (out / "manifest.json").is_file() and not any(staging.iterdir())  # both attempts' directories removed


# =================================================================================================
# 7. a tensor file on a pipe declaring a huge shape
# =================================================================================================


def test_item7_a_pipe_declaring_terabytes_is_refused_before_its_payload(tmp_path):
    import threading

    path, header, _ = _saved(tmp_path)
    blocks = 1 << 36  # 2^36 blocks of 32 FP8 elements: 32 code bytes and one E8M0 scale byte each (OCP MX v1.0)
    huge = {**header, "shape": [32 * blocks], "n_blocks": blocks, "payload_bytes": 33 * blocks}
    _mxt_with_header(path, huge, b"")
    data = path.read_bytes()
    fifo = tmp_path / "pipe.mxt"
    os.mkfifo(fifo)
    written = []

    def writer():
        try:
            with open(fifo, "wb") as out:
                out.write(data)
                for _ in range(64):  # then zeros, 64 MiB at most (before the fix: all of them read)
                    out.write(bytes(1 << 20))
                    written.append(1)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with pytest.raises(ValueError, match=r"pipe.mxt: corrupt header: field 'payload_bytes': 2267742732288 bytes "
                                             r"from a pipe, more than the \d+ bytes of memory available"):
            fileformat.load(fifo)
    finally:
        thread.join(timeout=60)
    assert len(written) < 64


# =================================================================================================
# 12. huge allocations are refused, saying what was asked
# =================================================================================================


def _npy_header(path: Path, shape, tail: bytes = b"") -> None:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": shape})
    path.write_bytes(buffer.getvalue() + tail)


def test_item12_a_npy_header_of_2_40_rows_is_refused(tmp_path, capsys):
    source = tmp_path / "x.npy"
    _npy_header(source, (1 << 40, 32), bytes(64))
    code, _, err = _run(["quantize", source, tmp_path / "x.mxt", "--format", "mxfp8_e4m3"], capsys)
    assert code == 2 and "ArrayMemoryError" not in err
    assert f"{source}: the array of shape (1099511627776, 32) of float32 needs 140737488355328 bytes" in err


def test_item12_a_npy_on_a_pipe_is_read_and_checked(tmp_path, monkeypatch, capsys):
    values = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    buffer = io.BytesIO()
    np.save(buffer, values)
    read_end, write_end = os.pipe()
    os.write(write_end, buffer.getvalue())
    os.close(write_end)
    code, out, err = _run(["quantize", f"/dev/fd/{read_end}", tmp_path / "x.mxt", "--format", "mxfp8_e4m3"], capsys)
    os.close(read_end)
    assert code == 0, err
    expected = mxsim.quantize(values, "mxfp8_e4m3")
    found = fileformat.load(tmp_path / "x.mxt")
    assert np.array_equal(found.codes, expected.codes) and np.array_equal(found.scales, expected.scales)


def test_item12_dot_outer_of_two_million_row_tensors_is_refused(tmp_path, capsys):
    empty = mxsim.quantize(np.zeros((1 << 20, 0), np.float32), "mxfp8_e4m3")
    fileformat.save(empty, tmp_path / "a.mxt")
    code, _, err = _run(["dot", tmp_path / "a.mxt", tmp_path / "a.mxt", tmp_path / "d.npy", "--outer"], capsys)
    assert code == 2 and "ArrayMemoryError" not in err
    # (2^20)^2 results of at least 16 bytes each
    assert "dot --outer: the result of shape (1048576, 1048576) (16 bytes a result) needs 17592186044416 bytes" in err


# =================================================================================================
# 4. rceil_fp32 with float64 input: Inf under max_scale, and maxima beyond float32
# =================================================================================================


@pytest.mark.parametrize("first, code", [(np.inf, None), (1e300, 0x7E), (-1e300, 0xFE)])
@pytest.mark.parametrize("how", [{"scale_rule": "rceil_fp32", "inf_policy": "max_scale"},
                                 {"profile": "torchao_0_18_rceil"}])
def test_item4_rceil_fp32_takes_float64_inf_and_maxima_beyond_float32(first, code, how):
    """By hand: inf_policy='max_scale' gives a block holding Inf E = 127 (E8M0 byte 254). 1e300 /
    448 is above float32's largest value, so d rounds to +Inf, log2 d = +Inf and E clamps to 127:
    byte 254; 1e300 / 2^127 saturates to E4M3's 448 (0x7E, sign bit 0x80), 1.0 / 2^127 is below
    half E4M3's smallest subnormal 2^-9: +0."""
    from mxsim import ref
    from mxsim.formats import get_format
    from mxsim.options import QuantizeOptions
    from mxsim.options.profiles import get_profile

    x = np.array([first] + [1.0] * 31, dtype=np.float64)
    fast = mxsim.quantize(x, "mxfp8_e4m3", **how)
    options = get_profile(how["profile"]).quantize if "profile" in how else how
    block = ref.quantize_block([float(v) for v in x], get_format("mxfp8_e4m3"), QuantizeOptions(**options),
                               source="fp64")
    assert fast.scales.tolist() == [block.scale] == [254]
    assert fast.codes.tolist() == list(block.codes)
    if code is not None:
        assert fast.codes.tolist() == [code] + [0] * 31


# =================================================================================================
# 17. frictions: presets and profiles in --help, the preset in dot's line, flags in errors,
#     a documented helper to plant a device
# =================================================================================================


def test_item17_generate_help_lists_every_preset_and_profile(capsys):
    from mxsim.options import PRESETS
    from mxsim.options.profiles import PROFILES

    with pytest.raises(SystemExit):
        cli.main(["golden", "generate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "names --params takes: preset (dot, dotgeneral):" in text
    for name in PRESETS:
        assert name in text, name
    for name, profile in PROFILES.items():
        assert (name in text) == (profile.kind == "block"), name


def test_item17_dot_names_the_preset_and_errors_name_flags(tmp_path, capsys):
    fileformat.save(mxsim.quantize(np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32), "mxfp8_e4m3"),
                    tmp_path / "a.mxt")
    code, out, _ = _run(["dot", tmp_path / "a.mxt", tmp_path / "a.mxt", tmp_path / "d.npy", "--preset",
                         "blackwell_mxf8f6f4"], capsys)
    assert code == 0 and out.strip().endswith("(mxfp8_e4m3 x mxfp8_e4m3, preset blackwell_mxf8f6f4, accumulate fused)")
    a = tmp_path / "a.mxt"
    code, _, err = _run(["dot", a, a, tmp_path / "d.npy", "--mode", "aligned"], capsys)
    assert code == 2 and "--frac-bits not given is not allowed; --mode aligned needs an integer" in err
    assert "frac_bits" not in err
    np.save(tmp_path / "x.npy", np.ones(32, np.float32))
    code, _, err = _run(["quantize", tmp_path / "x.npy", tmp_path / "x.mxt", "--format", "mxfp8_e4m3", "--rounding",
                         "stochastic"], capsys)
    assert code == 2 and "--rand-bits is needed with --rounding stochastic" in err


def test_item17_a_planted_device_without_changes_is_the_suite(tmp_path, capsys):
    from mxsim.golden.device.check import check
    from mxsim.golden.device.simulate import plant_device

    suite = _generate(tmp_path / "g", "quantize", '{"block": "mxfp8_e4m3"}', "--count", 300)
    same = plant_device(suite, tmp_path / "same")
    for name in ("scale.hex", "scale_exp.hex", "codes.hex"):
        assert (same / name).read_bytes() == (suite / name).read_bytes()
    ceil = plant_device(suite, tmp_path / "ceil", options={"scale_rule": "ceil"})
    report = check(suite, ceil)
    # ceil differs from floor exactly where amax is not a power of two: most random blocks
    assert not report.errors and 0 < len(report.mismatching) < 300


@pytest.mark.parametrize("line", [b"f" * 100000, b"\0" * 100000], ids=["long", "nuls"])
def test_item13_a_huge_bad_line_gives_a_short_error(decode_suite, tmp_path, capsys, line):
    dut = tmp_path / "dut"
    dut.mkdir()
    lines = (decode_suite / "value.hex").read_bytes().split(b"\n")
    lines[3] = line
    (dut / "value.hex").write_bytes(b"\n".join(lines))
    code, out, _ = _run(["golden", "check", decode_suite, dut], capsys)
    errors = [text for text in out.splitlines() if text.startswith("ERROR")]
    assert code == 2 and len(errors) == 1 and f"{dut}/value.hex: line 4" in errors[0]
    assert len(errors[0]) < 400  # was 66 KB (f...) and 264 KB (NULs)
