"""Writes never replace what is not theirs and never lose a complete suite (issue 32 items 1, 3,
10, 12 and 13's full disk): a symbolic link stays a link and its target gets the bytes; a FIFO
or a character device is written through, never replaced, and /dev/full is an error naming the
file; regenerating a suite keeps the previous complete one through SIGINT, SIGTERM and kill -9
(the next generate cleans up, undoing a swap cut short at any rename); a suite name the file
system cannot take and a seed that is not an integer are refused before anything is written;
every write error names its file."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mxsim import cli
from mxsim.golden import generate_suites, suite_from_spec
from mxsim.writing import atomic_write

ROOT = Path(__file__).resolve().parents[2]
DECODE = '{"element": "fp4_e2m1"}'
FP16 = '{"element": "fp16"}'
# 356 bytes of suite name: every one of these options differs from its default (each allowed alone)
LONG_OPTIONS = {"scale_rule": "ceil", "rounding": "rtz", "rand_width": 16, "inf_policy": "saturate",
                "flush_subnormal_inputs": True, "scale_min": -120, "flush_subnormal_blocks": True,
                "scale_overflow": "nan", "partial_block": "error", "subnormal_inputs": "flush", "scale_offset": -1,
                "zero_sign": "plus", "min_scale_divisor": "min_normal", "element_arith": "fp32_log2",
                "scale_underflow": "fp32_pow", "zero_block_scale": "min_normal", "nan_code": 127}


def _run(argv, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _hidden(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*"))


@pytest.fixture
def values(tmp_path) -> Path:
    path = tmp_path / "x.npy"
    np.save(path, np.linspace(-3, 3, 64, dtype=np.float32))
    return path


def _quantized_bytes(values: Path, tmp_path: Path, capsys) -> bytes:
    """The tensor file quantize writes to a plain new path (what every other destination must get)."""
    plain = tmp_path / "plain.mxt"
    assert _run(["quantize", values, plain, "--format", "mxfp8_e4m3"], capsys)[0] == 0
    return plain.read_bytes()


# =================================================================================================
# 1. symbolic links, FIFOs and devices are never replaced
# =================================================================================================


def test_a_symlink_destination_stays_a_link_and_its_target_gets_the_bytes(values, tmp_path, capsys):
    expected = _quantized_bytes(values, tmp_path, capsys)
    target = tmp_path / "target.mxt"
    target.write_bytes(b"old contents")
    link = tmp_path / "link.mxt"
    link.symlink_to(target.name)
    assert _run(["quantize", values, link, "--format", "mxfp8_e4m3"], capsys)[0] == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes() == expected


def test_dequantize_through_a_link_to_nothing_yet_creates_the_target(values, tmp_path, capsys):
    tensor = tmp_path / "t.mxt"
    assert _run(["quantize", values, tensor, "--format", "mxfp8_e4m3"], capsys)[0] == 0
    plain = tmp_path / "plain.npy"
    assert _run(["dequantize", tensor, plain], capsys)[0] == 0
    link = tmp_path / "link.npy"
    link.symlink_to(tmp_path / "made.npy")  # dangling until written
    assert _run(["dequantize", tensor, link], capsys)[0] == 0
    assert link.is_symlink() and (tmp_path / "made.npy").read_bytes() == plain.read_bytes()


def test_a_fifo_destination_is_written_through_and_stays_a_fifo(values, tmp_path, capsys):
    """The reader opens the FIFO first (without blocking), so the writer's open finds it; the
    file (under 2 KB) fits in the pipe's buffer, so no reading thread is needed."""
    expected = _quantized_bytes(values, tmp_path, capsys)
    fifo = tmp_path / "pipe.mxt"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        code, out = _run(["quantize", values, fifo, "--format", "mxfp8_e4m3"], capsys)
        received = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(reader, 1 << 16):
                received += chunk
    finally:
        os.close(reader)
    assert code == 0, out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received == expected


def _device(tmp_path: Path, name: str, minor: int) -> Path:
    """A copy of /dev/null (minor 3) or /dev/full (minor 7) in tmp_path: the system's own nodes
    are never put at risk by a writer that would replace them."""
    node = tmp_path / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        with open(node, "wb"):
            pass
    except OSError as error:  # not root, or a file system mounted nodev
        pytest.skip(f"cannot make a character device here ({error.strerror})")
    return node


def test_a_null_device_is_written_through_and_never_replaced(values, tmp_path, capsys):
    null = _device(tmp_path, "null", 3)
    code, out = _run(["quantize", values, null, "--format", "mxfp8_e4m3"], capsys)
    assert code == 0, out
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    assert not _hidden(tmp_path)  # no temporary file left beside it


@pytest.mark.parametrize("command", ["quantize", "dequantize"])
def test_a_full_device_is_a_clear_enospc_error_naming_it(values, tmp_path, capsys, command):
    full = _device(tmp_path, "full", 7)
    source = values
    if command == "dequantize":
        source = tmp_path / "t.mxt"
        assert _run(["quantize", values, source, "--format", "mxfp8_e4m3"], capsys)[0] == 0
    argv = [command, source, full] + (["--format", "mxfp8_e4m3"] if command == "quantize" else [])
    code, out = _run(argv, capsys)
    assert code == 2
    assert f"mxsim: error: [Errno 28] cannot write {full}: No space left on device" in out
    assert stat.S_ISCHR(os.lstat(full).st_mode) and os.lstat(full).st_rdev == os.makedev(1, 7)


def test_a_directory_destination_is_refused_naming_it(values, tmp_path, capsys):
    directory = tmp_path / "out"
    directory.mkdir()
    code, out = _run(["quantize", values, directory, "--format", "mxfp8_e4m3"], capsys)
    assert code == 2 and f"cannot write {directory}: it is a directory" in out
    assert directory.is_dir() and not any(directory.iterdir())


def test_a_stream_manifest_through_a_symlink_keeps_the_link(tmp_path, capsys):
    target, link = tmp_path / "m.json", tmp_path / "link.json"
    link.symlink_to(target)
    code, _ = _run(["golden", "stream", "--suite", "decode", "--params", DECODE, "--manifest", link], capsys)
    assert code == 0 and link.is_symlink() and json.loads(target.read_text())["suite"] == "fp4_e2m1"


def test_an_index_and_a_suite_directory_that_are_symlinks_stay_links(tmp_path, capsys):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (elsewhere / "fp4_e2m1").mkdir(parents=True)
    (root / "decode").mkdir(parents=True)
    (root / "decode" / "fp4_e2m1").symlink_to(elsewhere / "fp4_e2m1")
    (root / "index.json").symlink_to(elsewhere / "index.json")
    for _ in range(2):  # a new suite, then one regenerated in place
        assert _run(["golden", "generate", root, "--suite", "decode", "--params", DECODE], capsys)[0] == 0
        assert (root / "decode" / "fp4_e2m1").is_symlink() and (root / "index.json").is_symlink()
        assert (elsewhere / "fp4_e2m1" / "manifest.json").is_file()
        entry = json.loads((elsewhere / "index.json").read_text())["suites"]["decode/fp4_e2m1"]
        manifest = (elsewhere / "fp4_e2m1" / "manifest.json").read_bytes()
        assert entry["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()


def test_a_suite_file_that_is_a_fifo_is_refused_and_left_alone(tmp_path, capsys):
    root = tmp_path / "root"
    assert _run(["golden", "generate", root, "--suite", "decode", "--params", DECODE], capsys)[0] == 0
    value = root / "decode" / "fp4_e2m1" / "value.hex"
    value.unlink()
    os.mkfifo(value)
    code, out = _run(["golden", "generate", root, "--suite", "decode", "--params", DECODE], capsys)
    assert code == 2 and f"cannot write {value}: it is not a regular file" in out
    assert stat.S_ISFIFO(os.lstat(value).st_mode)


# =================================================================================================
# 13 (part). every write error names its file
# =================================================================================================


def test_atomic_write_names_the_file_on_a_full_disk(tmp_path, monkeypatch):
    from mxsim import writing

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writing.os, "fsync", full)
    path = tmp_path / "out.npy"
    with pytest.raises(OSError) as raised:
        atomic_write(path, b"data")
    assert raised.value.errno == errno.ENOSPC
    assert str(raised.value) == f"[Errno 28] cannot write {path}: No space left on device"
    assert not path.exists() and not _hidden(tmp_path)


def test_a_suite_write_on_a_full_disk_names_the_hex_file(tmp_path, monkeypatch, capsys):
    """The disk fills while the first field's temporary file is written: a file object's write
    error carries no file name of its own."""
    from mxsim.golden.storage import writer

    class FullFile:
        def __init__(self, file):
            self.file = file

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.file, name)

    real_temporary = writer._temporary

    def temporary(directory, name):
        file, path = real_temporary(directory, name)
        return FullFile(file), path

    monkeypatch.setattr(writer, "_temporary", temporary)
    root = tmp_path / "g"
    code, out = _run(["golden", "generate", root, "--suite", "decode", "--params", DECODE], capsys)
    assert code == 2
    assert f"cannot write {root}/decode/fp4_e2m1/code.hex: No space left on device" in out
    assert not (root / "decode").exists()


@pytest.mark.parametrize("argv", [["info", "mxfp8_e4m3"],
                                  ["golden", "stream", "--suite", "decode", "--params", DECODE]])
def test_stdout_on_a_full_disk_is_a_one_line_error_naming_stdout(argv):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "wb") as full:  # the test's redirection, as a shell's `> /dev/full`
        child = subprocess.run([sys.executable, "-m", "mxsim.cli", *argv], stdout=full, stderr=subprocess.PIPE,
                               env=_env(), timeout=300)
    err = child.stderr.decode(errors="replace")
    assert child.returncode == 2, err
    assert err == "mxsim: error: [Errno 28] cannot write <stdout>: No space left on device\n"


def test_a_planted_device_on_a_full_disk_names_the_file(tmp_path, monkeypatch):
    from mxsim.golden.device import simulate

    root = tmp_path / "root"
    [suite] = generate_suites([suite_from_spec("decode", element="fp4_e2m1")], root)

    class FullFile:
        def __init__(self, *args, **kwargs):
            pass

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            pass

    real_open = open
    monkeypatch.setattr(simulate, "open", lambda path, mode="r", **kw: FullFile() if "w" in mode
                        else real_open(path, mode, **kw), raising=False)
    with pytest.raises(OSError, match=f"cannot write {tmp_path / 'dut'}/value.hex: No space left on device"):
        simulate.plant_device(suite, tmp_path / "dut")


# =================================================================================================
# 3. a regeneration cut short keeps the previous complete suite
# =================================================================================================


def _generate_argv(root: Path, params: str, count: int) -> list[str]:
    return ["golden", "generate", str(root), "--suite", "decode", "--params", params, "--count", str(count)]


def _start_big_regeneration(root: Path) -> subprocess.Popen:
    """A regeneration of decode/fp16 with 2 * 10^7 vectors (minutes of work), returned once its
    staging file has data (it is computing and writing, far from done); SIGINT at its default in
    the child (a shell may start background jobs with SIGINT ignored)."""
    argv = [sys.executable, "-m", "mxsim.cli", *_generate_argv(root, FP16, 2 * 10**7)]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while not any(p.stat().st_size for p in root.rglob(".code.hex.*.tmp") if p.is_file()):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            out, err = child.communicate()
            pytest.fail(f"the regeneration never started writing: {err.decode(errors='replace')}")
        time.sleep(0.05)  # polling a file's state, not racing: the child needs minutes more
    return child


def _old_fp16_suite(root: Path, capsys) -> tuple[dict, dict]:
    assert _run(_generate_argv(root, FP16, 100), capsys)[0] == 0
    suite = root / "decode" / "fp16"
    return _snapshot(suite), json.loads((root / "index.json").read_text())


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_regeneration_keeps_the_previous_suite(tmp_path, capsys, signum, code):
    root = tmp_path / "root"
    before, index = _old_fp16_suite(root, capsys)
    child = _start_big_regeneration(root)
    child.send_signal(signum)
    _, err = child.communicate(timeout=120)
    err = err.decode(errors="replace")
    assert child.returncode == code, err
    assert "the previous complete decode/fp16 was kept as it was" in err and "Traceback" not in err
    assert _snapshot(root / "decode" / "fp16") == before
    assert json.loads((root / "index.json").read_text()) == index
    assert _hidden(root) == []  # no staging directory, no temporary file
    rc, out = _run(["golden", "verify", root], capsys)
    assert rc == 0, out


def test_after_kill_9_the_next_generate_cleans_up_and_the_previous_suite_stays(tmp_path, capsys):
    root = tmp_path / "root"
    before, index = _old_fp16_suite(root, capsys)
    child = _start_big_regeneration(root)
    child.kill()
    child.communicate(timeout=120)
    assert _snapshot(root / "decode" / "fp16") == before
    rc, out = _run(["golden", "verify", root], capsys)
    assert rc == 1 and "leftover temporary file" in out  # until a generate or merge cleans up
    assert _run(_generate_argv(root, DECODE, 16), capsys)[0] == 0  # another suite, into the same root
    assert _hidden(root) == []
    assert _snapshot(root / "decode" / "fp16") == before
    assert json.loads((root / "index.json").read_text())["suites"]["decode/fp16"] == index["suites"]["decode/fp16"]
    rc, out = _run(["golden", "verify", root], capsys)
    assert rc == 0, out


_DIE_AT_RENAME = """
import os, sys
from mxsim import cli
real, calls = os.rename, []
def dying(source, target):
    calls.append(1)
    if len(calls) == {k}:
        os._exit(137)  # as kill -9: no cleanup, no finally
    return real(source, target)
os.rename = dying
sys.exit(cli.main({argv!r}))
"""


@pytest.mark.parametrize("k", range(1, 10))
def test_a_swap_cut_short_at_any_rename_is_undone_by_the_next_generate(tmp_path, capsys, k):
    """The regeneration of a 4-file suite dies before its k-th rename (4 files aside, 4 in; 9:
    it finishes): after the next generate, the suite is the previous one whole, or (k = 9) the new one."""
    root = tmp_path / "root"
    assert _run(_generate_argv(root, DECODE, 20), capsys)[0] == 0
    before = _snapshot(root / "decode" / "fp4_e2m1")
    argv = _generate_argv(root, DECODE, 30)
    child = subprocess.run([sys.executable, "-c", _DIE_AT_RENAME.format(k=k, argv=argv)], env=_env(),
                           capture_output=True, timeout=300)
    assert child.returncode == (137 if k < 9 else 0), child.stderr.decode(errors="replace")
    assert _run(["golden", "generate", root, "--suite", "decode", "--params", '{"element": "fp6_e2m3"}'],
                capsys)[0] == 0
    assert _hidden(root) == []
    after = _snapshot(root / "decode" / "fp4_e2m1")
    manifest = json.loads(after["manifest.json"])
    assert manifest["count"] == (20 if k < 9 else 30)
    if k < 9:
        assert after == before
    rc, out = _run(["golden", "verify", root], capsys)
    assert rc == 0, out


_SIGTERM_DURING_INFO = """
import os, signal, sys
from mxsim import cli
from mxsim.cli import info
def terminated(args):
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(10**7):  # the handler runs at the next bytecode
        pass
    sys.exit(99)
info._cmd_info = terminated  # the parser built by cli.main reads the info command from its module
code = cli.main(["info"])
assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
sys.exit(code)
"""


def test_sigterm_during_any_command_is_one_line_and_exit_143():
    """In a child: without the handler SIGTERM would end the test run itself."""
    child = subprocess.run([sys.executable, "-c", _SIGTERM_DURING_INFO], env=_env(), capture_output=True, timeout=300)
    assert child.returncode == 143, child.stderr.decode(errors="replace")
    assert child.stderr == b"mxsim: terminated (SIGTERM); no partial output file left\n"


def test_the_next_generate_removes_only_what_dead_writers_left(tmp_path, capsys):
    """Directories of a live writer (its lock held, here by this process) stay; unlocked ones go."""
    from mxsim.golden.storage.staging import SHARDS_PREFIX, Staging

    root = tmp_path / "root"
    assert _run(_generate_argv(root, DECODE, 20), capsys)[0] == 0
    kind = root / "decode"
    live_suite, live_shards = Staging.beside(kind / "fp8_e4m3"), Staging(root, SHARDS_PREFIX)
    dead = [kind / ".fp6_e3m2.new-abcd1234", root / f"{SHARDS_PREFIX}abcd1234"]
    for directory in dead:
        directory.mkdir()
        (directory / ".code.hex.x1y2z3.tmp").write_text("0\n")
    try:
        assert _run(["golden", "generate", root, "--suite", "decode", "--params", '{"element": "fp6_e2m3"}'],
                    capsys)[0] == 0
        assert live_suite.path.is_dir() and live_shards.path.is_dir()
        assert not any(directory.exists() for directory in dead)
    finally:
        live_suite.remove()
        live_shards.remove()


def test_a_failed_regeneration_keeps_the_previous_suite_and_its_index_entry(tmp_path, monkeypatch, capsys):
    from mxsim.golden.storage import writer

    root = tmp_path / "root"
    assert _run(_generate_argv(root, DECODE, 20), capsys)[0] == 0
    before, index = _snapshot(root / "decode" / "fp4_e2m1"), (root / "index.json").read_bytes()
    monkeypatch.setattr(writer.SuiteWriter, "write", lambda self, chunk: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        cli.main(_generate_argv(root, DECODE, 30))
    except SystemExit as exit_info:
        assert exit_info.code == 130
    assert "the previous complete decode/fp4_e2m1 was kept" in capsys.readouterr().err
    assert _snapshot(root / "decode" / "fp4_e2m1") == before and (root / "index.json").read_bytes() == index


def test_sigint_during_the_swap_is_held_back_until_the_suite_is_complete(tmp_path, monkeypatch, capsys):
    """SIGINT arrives as the index entry is made (the last step of the swap): the suite is
    complete and indexed, nothing is left beside it, and the message counts it as written."""
    from mxsim.golden.storage import files

    root = tmp_path / "root"
    assert _run(_generate_argv(root, DECODE, 20), capsys)[0] == 0
    real_update = files._update_index

    def update_then_sigint(where, entries):
        real_update(where, entries)
        if any(entry is not None for entry in entries.values()):
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(files, "_update_index", update_then_sigint)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(_generate_argv(root, DECODE, 30))
    assert exit_info.value.code == 130
    assert "1 of 1 suite(s) written" in capsys.readouterr().err
    monkeypatch.undo()
    assert json.loads((root / "decode" / "fp4_e2m1" / "manifest.json").read_text())["count"] == 30
    assert _hidden(root) == []
    rc, out = _run(["golden", "verify", root], capsys)
    assert rc == 0, out


def test_an_interrupted_merge_keeps_the_suite_already_in_out(tmp_path, monkeypatch, capsys):
    from mxsim.golden.storage import writer

    shards, out = tmp_path / "shards", tmp_path / "out"
    for index in range(2):
        assert _run(["golden", "generate", shards, "--suite", "decode", "--params", DECODE, "--shard", f"{index}/2"],
                    capsys)[0] == 0
    assert _run(["golden", "generate", out, "--suite", "decode", "--params", DECODE, "--count", "20"], capsys)[0] == 0
    before, index = _snapshot(out / "decode" / "fp4_e2m1"), (out / "index.json").read_bytes()
    monkeypatch.setattr(writer.SuiteWriter, "append", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["golden", "merge", str(out), str(shards)])
    assert exit_info.value.code == 130
    assert "a complete suite of that name already in" in capsys.readouterr().err
    assert _snapshot(out / "decode" / "fp4_e2m1") == before and (out / "index.json").read_bytes() == index
    assert _hidden(out) == []


def test_regenerating_keeps_what_else_is_in_the_suite_directory(tmp_path, capsys):
    """Shard directories (and a user's notes) beside a whole suite are not the suite's files."""
    root = tmp_path / "root"
    assert _run(_generate_argv(root, DECODE, 20), capsys)[0] == 0
    suite = root / "decode" / "fp4_e2m1"
    (suite / "NOTES.txt").write_text("kept\n")
    assert _run(["golden", "generate", root, "--suite", "decode", "--params", DECODE, "--shard", "0/2"], capsys)[0] == 0
    assert _run(_generate_argv(root, DECODE, 30), capsys)[0] == 0
    assert (suite / "NOTES.txt").read_text() == "kept\n" and (suite / "shard-0-of-2" / "manifest.json").is_file()
    assert json.loads((suite / "manifest.json").read_text())["count"] == 30


# =================================================================================================
# 10. a suite name the file system cannot take is refused before anything is written
# =================================================================================================


def test_a_suite_name_over_the_file_name_limit_is_refused_before_anything(tmp_path, capsys):
    suite = suite_from_spec("quantize", block="mxfp8_e4m3", options=LONG_OPTIONS)
    assert len(suite.name.encode()) > os.pathconf(tmp_path, "PC_NAME_MAX")
    root = tmp_path / "root"
    with pytest.raises(ValueError, match=r"suite name '.*' is not allowed: 356 bytes, more than the 241"):
        generate_suites([suite], root)
    assert not root.exists()
    code, out = _run(["golden", "generate", root, "--suite", "quantize", "--params",
                      json.dumps({"block": "mxfp8_e4m3", "options": LONG_OPTIONS})], capsys)
    assert code == 2 and "suite name" in out and "Errno 36" not in out
    assert not root.exists()


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "tab\there", ""])
def test_a_suite_name_that_is_no_directory_name_is_refused(tmp_path, name):
    suite = suite_from_spec("decode", element="fp4_e2m1")
    suite.name = name
    with pytest.raises(ValueError, match="suite name .* is not allowed"):
        generate_suites([suite], tmp_path / "root")
    assert not (tmp_path / "root").exists() and not (tmp_path / "escape").exists()


# =================================================================================================
# 12. the seed is checked at the call
# =================================================================================================


@pytest.mark.parametrize("seed", [True, np.bool_(True), 1.5, np.float64(3.0), "abc", "3", None, [3]])
def test_a_seed_that_is_not_an_integer_is_refused_before_anything(tmp_path, seed):
    root = tmp_path / "root"
    with pytest.raises(ValueError, match=r"seed=.* is not allowed; expected an integer"):
        generate_suites([suite_from_spec("decode", element="fp4_e2m1")], root, seed=seed)
    assert not root.exists()


@pytest.mark.parametrize("seed", [np.int64(3), np.uint8(3)])
def test_a_numpy_integer_seed_is_the_same_as_the_int(tmp_path, capsys, seed):
    suite = suite_from_spec("decode", element="fp6_e2m3")
    [numpy_seeded] = generate_suites([suite], tmp_path / "a", seed=seed)
    [int_seeded] = generate_suites([suite], tmp_path / "b", seed=3)
    assert _snapshot(numpy_seeded) == _snapshot(int_seeded)
    assert json.loads((numpy_seeded / "manifest.json").read_text())["seed"] == 3
    rc, out = _run(["golden", "verify", tmp_path / "a"], capsys)
    assert rc == 0, out
