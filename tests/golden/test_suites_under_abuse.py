"""Golden vectors under abuse: formats too wide to enumerate and suites too large are refused
before anything is allocated or written; ``verify`` reports incomplete, missing, unindexed or
damaged suites (and damaged manifests and index) one by one and never passes them; ``--params``
names unknown keys with the known ones; generation shows an overall suite count, and an
interrupt leaves no half-written suite and exits 130."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mxsim.cli import main
from mxsim.golden import canonical, generate, suite_from_spec
from mxsim.golden.kinds.fields import Field

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
DOCS = ROOT / "docs" / "golden-vectors.md"

# small, fast suites (well under a second each)
PACK = ("pack", {"block": "mxfp4_e2m1"})
PACK_MSB = ("pack", {"block": "mxfp4_e2m1", "element_stream": "msb"})
DECODE = ("decode", {"element": "fp4_e2m1"})
DECODE6 = ("decode", {"element": "fp6_e2m3"})


def _cli_generate(root: Path, spec) -> int:
    return main(["golden", "generate", str(root), "--suite", spec[0], "--params", json.dumps(spec[1])])


def _root(tmp_path: Path, *specs) -> Path:
    root = tmp_path / "root"
    for spec in specs:
        assert _cli_generate(root, spec) == 0
    return root


def _verify_cli(path: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["golden", "verify", str(path)])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


# --- item 3: bounded memory ----------------------------------------------------------------------
def _limit_memory():  # runs in the child: 2 GB of address space, so a runaway fails fast
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("kind, element, codes", [("decode", "fp32", 32), ("encode", "fp32", 32), ("decode", "fp64", 64)])
def test_formats_too_wide_to_enumerate_are_refused_at_once(tmp_path, kind, element, codes):
    """Was: decode fp32 grew to 7.85 GB in 45 s (encode fp32 to 1 GB), enumerating 2^32 codes."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "mxsim.cli", "golden", "generate", str(out), "--suite", kind,
            "--params", json.dumps({"element": element})]
    try:
        result = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, env=_env(),
                                preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{kind} {element}: still running after 60 s (enumerating 2^{codes} codes)")
    assert result.returncode == 2, result.stderr[-2000:]
    err = result.stderr
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{kind}/{element}" in err and f"2^{codes}" in err and "2^16" in err
    assert not out.exists() or not any(out.rglob("*.hex"))


def test_sixteen_bit_formats_are_still_enumerated(tmp_path):
    directory = generate(suite_from_spec("decode", element="fp16"), tmp_path)
    assert json.loads((directory / "manifest.json").read_text())["count"] == 1 << 16


@pytest.mark.parametrize("limit, value, shown", [("MAX_VECTORS", 100, "132 vectors"), ("MAX_SUITE_BYTES", 1000, "bytes")])
def test_suites_larger_than_the_limits_are_refused_before_writing(tmp_path, monkeypatch, capsys, limit, value, shown):
    from mxsim.golden.compute import limits

    monkeypatch.setattr(limits, limit, value)
    assert _cli_generate(tmp_path, PACK) == 2
    err = capsys.readouterr().err
    assert "pack/mxfp4_e2m1-lsb" in err and shown in err and str(value) in err and err.count("\n") == 1
    assert not (tmp_path / "pack").exists()


# --- item 4: verify never passes an incomplete or damaged suite ----------------------------------
def test_a_suite_directory_without_manifest_is_an_error(tmp_path, capsys):
    """Was: skipped silently ('2 suite(s) ... all match', rc 0)."""
    root = _root(tmp_path, PACK, DECODE, DECODE6)
    (root / "decode" / "fp4_e2m1" / "manifest.json").unlink()  # deleted, or generation killed before it
    stray = root / "pack" / "orphan"
    stray.mkdir()
    shutil.copy(root / "pack" / "mxfp4_e2m1-lsb" / "codes.hex", stray)
    rc, out = _verify_cli(root, capsys)
    assert rc == 1
    assert "decode/fp4_e2m1: hex files but no manifest.json" in out
    assert "pack/orphan: hex files but no manifest.json" in out
    assert "2 suite(s)" in out  # the two complete ones were still checked


def test_the_root_index_reports_missing_and_unindexed_suites(tmp_path, capsys):
    root = _root(tmp_path, PACK, PACK_MSB, DECODE)
    index = json.loads((root / "index.json").read_text())
    assert sorted(index["suites"]) == ["decode/fp4_e2m1", "pack/mxfp4_e2m1-lsb", "pack/mxfp4_e2m1-msb"]
    assert main(["golden", "verify", str(root)]) == 0
    assert main(["golden", "verify", str(root / "pack")]) == 0  # a kind directory: its entries of the index

    shutil.move(root / "pack" / "mxfp4_e2m1-msb", tmp_path / "aside")
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "pack/mxfp4_e2m1-msb: missing (listed in index.json)" in out

    shutil.move(tmp_path / "aside", root / "pack" / "mxfp4_e2m1-msb")
    shutil.copytree(GOLDEN / "decode" / "fp6_e3m2", root / "decode" / "fp6_e3m2")
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "decode/fp6_e3m2: not listed in index.json" in out

    shutil.rmtree(root / "decode" / "fp6_e3m2")
    manifest = root / "pack" / "mxfp4_e2m1-lsb" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"level": 1', '"level": 2'))
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "pack/mxfp4_e2m1-lsb/manifest.json: SHA-256 differs from index.json" in out

    (root / "index.json").unlink()
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "no index.json" in out
    assert main(["golden", "verify", str(root / "decode" / "fp4_e2m1")]) == 0  # a lone suite needs no index


def test_a_root_missing_most_canonical_suites_fails(tmp_path, capsys):
    """Was: a root missing 37 of 54 suites verified with rc 0. golden/index.json lists all 54."""
    root = tmp_path / "golden"
    root.mkdir()
    shutil.copy(GOLDEN / "index.json", root)
    for kind, name in [("decode", "fp4_e2m1"), ("pack", "mxfp4_e2m1-lsb")]:
        shutil.copytree(GOLDEN / kind / name, root / kind / name)
    rc, out = _verify_cli(root, capsys)
    assert rc == 1
    assert out.count("missing (listed in index.json)") == len(canonical.CANONICAL_SUITES) - 2
    assert "2 suite(s)" in out


def test_damaged_manifests_are_reported_per_suite_and_the_rest_checked(tmp_path, capsys):
    """Was: a manifest without 'fields', 'count' or 'files' stopped verify with a KeyError
    traceback; a deeply nested one with a RecursionError."""
    specs = [PACK, PACK_MSB, DECODE, DECODE6, ("decode", {"element": "fp6_e3m2"})]
    root = _root(tmp_path, *specs)
    damaged = {"pack/mxfp4_e2m1-lsb": "fields", "pack/mxfp4_e2m1-msb": "count", "decode/fp4_e2m1": "files"}
    for name, key in damaged.items():
        path = root / name / "manifest.json"
        manifest = json.loads(path.read_text())
        del manifest[key]
        path.write_text(json.dumps(manifest))
    (root / "decode" / "fp6_e2m3" / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "Traceback" not in out
    for name, key in damaged.items():
        assert f"{name}/manifest.json: missing key {key!r}" in out
    assert "decode/fp6_e2m3/manifest.json: nested too deeply" in out
    assert "64 vectors recomputed" in out  # decode/fp6_e3m2, the intact one, was still checked


def test_a_damaged_index_is_reported(tmp_path, capsys):
    root = _root(tmp_path, DECODE)
    (root / "index.json").write_text("{" * 100_000)
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "index.json" in out and "Traceback" not in out
    (root / "index.json").write_text('{"suites": 3}')
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "index.json" in out
    # generating into such a root does not overwrite a file it cannot read
    assert _cli_generate(root, PACK) == 2 and "index.json" in capsys.readouterr().err


def test_a_non_hex_line_names_file_line_and_field(tmp_path, capsys):
    root = _root(tmp_path, PACK)
    suite = root / "pack" / "mxfp4_e2m1-lsb"
    lines = (suite / "scale.hex").read_text().splitlines()
    lines[2] = "zz"
    (suite / "scale.hex").write_text("\n".join(lines) + "\n")
    rc, out = _verify_cli(root, capsys)
    assert rc == 1 and "pack/mxfp4_e2m1-lsb/scale.hex: line 3: field 'scale': 'zz' is not hex" in out


def test_from_hex_takes_hex_digits_only():
    """int(text, 16) also takes '0x', '_', '+' and spaces: '0x1f' passed as a 4-digit field."""
    f = Field("lsb", 16, signed=True)
    for text in ("0x1f", "1_ff", "+1ff", " 1ff", "1ff\r"):
        with pytest.raises(ValueError, match="field 'lsb'"):
            f.from_hex(text)
    assert f.from_hex("001F") == 31


def test_crlf_line_endings_are_named(tmp_path, capsys):
    root = _root(tmp_path, DECODE)
    suite = root / "decode" / "fp4_e2m1"
    data = (suite / "value.hex").read_bytes()
    (suite / "value.hex").write_bytes(data.replace(b"\n", b"\r\n"))
    rc, out = _verify_cli(root, capsys)
    assert rc == 1
    assert "decode/fp4_e2m1/value.hex: CRLF line endings" in out and "with LF endings it matches the manifest" in out


def test_unexpected_and_leftover_files_in_a_suite_are_reported(tmp_path, capsys):
    root = _root(tmp_path, DECODE)
    suite = root / "decode" / "fp4_e2m1"
    (suite / ".code.hex.x1y2.tmp").write_text("0\n")  # an interrupted atomic write
    (suite / "extra.hex").write_text("0\n")
    rc, out = _verify_cli(root, capsys)
    assert rc == 1
    assert "decode/fp4_e2m1/.code.hex.x1y2.tmp: leftover temporary file" in out
    assert "decode/fp4_e2m1/extra.hex: not listed in the manifest" in out


# --- --params: the keys per suite kind -----------------------------------------------------------
def test_an_unknown_params_key_names_the_kind_and_the_known_keys(tmp_path, capsys):
    """Was: "EncodeSuite.__init__() got an unexpected keyword argument 'rouding'"."""
    for spec, message in [
        (("encode", {"element": "fp4_e2m1", "rouding": "rna"}),
         "unknown key 'rouding' for suite kind encode; known keys: element, rounding, overflow; did you mean 'rounding'?"),
        (("dot", {"block_a": "mxfp4_e2m1", "accumulator": {"mdoe": "exact"}}),
         "unknown key 'mdoe' in 'accumulator' for suite kind dot; known keys: mode, frac_bits"),
        (("dot", {"block": "mxfp4_e2m1"}), "did you mean 'block_a'?"),
        (("dot", {}), "suite kind dot needs key 'block_a'"),
        (("quantize", {"block": "mxfp4_e2m1", "options": 3}), "'options' for suite kind quantize must be a JSON object"),
    ]:
        assert _cli_generate(tmp_path, spec) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_the_params_keys_are_listed_in_help_and_docs(capsys):
    from mxsim.golden.kinds.params import keys_markdown, keys_text
    from mxsim.golden.kinds.registry import KINDS

    with pytest.raises(SystemExit) as exit_info:
        main(["golden", "generate", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for line in keys_text(KINDS).splitlines():
        assert line.strip() in " ".join(help_text.split())
    assert "encode: element (required), rounding (default rne), overflow (default saturate)" in keys_text(KINDS)
    assert keys_markdown(KINDS) in DOCS.read_text(), (
        "docs/golden-vectors.md: paste mxsim.golden.kinds.params.keys_markdown(KINDS)")


def test_every_dict_param_has_its_options_class():
    """The key list is derived from the suite dataclasses; a dict-valued field must name the
    options dataclass its keys come from, so the nested keys cannot drift either."""
    from mxsim.golden.kinds.registry import KINDS

    for cls in KINDS.values():
        dict_fields = {f.name for f in dataclasses.fields(cls) if f.type in ("dict", dict)}
        assert dict_fields == set(cls.nested_options), cls.kind


# --- progress and interrupts ---------------------------------------------------------------------
def test_progress_shows_the_overall_suite_count(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(canonical, "CANONICAL_SUITES", [DECODE, PACK, DECODE6])
    assert main(["golden", "generate", str(tmp_path), "--progress"]) == 0
    err = capsys.readouterr().err
    assert "suite 1/3 decode/fp4_e2m1" in err and "suite 3/3 decode/fp6_e2m3" in err
    assert main(["golden", "verify", str(tmp_path), "--progress"]) == 0
    assert "suite 3/3 " in capsys.readouterr().err


def _main_interrupted(argv) -> SystemExit:
    try:
        main(argv)
    except SystemExit as exit_info:
        return exit_info
    except KeyboardInterrupt:
        pytest.fail("a KeyboardInterrupt escaped mxsim.cli.main (a traceback for the user)")
    pytest.fail("no interrupt")


def test_ctrl_c_during_generation_is_clean(tmp_path, monkeypatch, capsys):
    from mxsim.golden.kinds.registry import PackSuite

    monkeypatch.setattr(canonical, "CANONICAL_SUITES", [DECODE, PACK, DECODE6])
    calls = []

    def interrupted(self, inputs):
        calls.append(1)
        if len(calls) == 50:
            raise KeyboardInterrupt
        return original(self, inputs)

    original = PackSuite.compute
    monkeypatch.setattr(PackSuite, "compute", interrupted)
    exit_info = _main_interrupted(["golden", "generate", str(tmp_path)])
    assert exit_info.code == 130
    err = capsys.readouterr().err
    assert err.startswith("mxsim: interrupted") and "1 of 3 suite(s)" in err and "Traceback" not in err
    assert (tmp_path / "decode" / "fp4_e2m1" / "manifest.json").exists()
    assert not (tmp_path / "pack").exists()
    monkeypatch.undo()
    rc, out = _verify_cli(tmp_path, capsys)
    assert rc == 1
    assert "pack/mxfp4_e2m1-lsb: listed in index.json but its generation did not finish" in out
    assert "decode/fp6_e2m3: listed in index.json but its generation did not finish" in out


@pytest.mark.parametrize("stage", ["write", "rename"])
@pytest.mark.parametrize("error, code", [(KeyboardInterrupt, 130), (OSError(28, "No space left on device"), 2)])
def test_a_failure_while_writing_leaves_no_half_written_suite(tmp_path, monkeypatch, capsys, error, code, stage):
    """Fails the third chunk written (files half full), or the third file put in place."""
    from mxsim.golden.compute import pipeline
    from mxsim.golden.storage import writer

    monkeypatch.setattr(pipeline, "CHUNK", 10)
    calls = []
    if stage == "write":
        real_write = writer.SuiteWriter.write

        def failing(self, chunk):
            calls.append(1)
            if len(calls) == 3:
                raise error
            return real_write(self, chunk)

        monkeypatch.setattr(writer.SuiteWriter, "write", failing)
    else:
        real_replace = os.replace

        def failing(source, target):
            if str(target).endswith(".hex"):
                calls.append(target)
                if len(calls) == 3:
                    raise error
            return real_replace(source, target)

        monkeypatch.setattr(writer.os, "replace", failing)
    if code == 130:
        assert _main_interrupted(["golden", "generate", str(tmp_path), "--suite", "pack", "--params", json.dumps(PACK[1])]).code == 130
    else:
        assert _cli_generate(tmp_path, PACK) == 2
    assert not (tmp_path / "pack").exists(), sorted(p.name for p in tmp_path.rglob("*"))
    assert "No space" in capsys.readouterr().err or code == 130


def test_sigint_to_the_command_exits_130_without_traceback(tmp_path):
    # --count 2 * 10^7 (460 MB of hex, minutes of work): the child is still computing when SIGINT arrives however
    # slowly this process is scheduled (a 65,536-vector suite once finished first on a loaded machine)
    argv = [sys.executable, "-m", "mxsim.cli", "golden", "generate", str(tmp_path), "--suite", "decode",
            "--params", '{"element": "fp16"}', "--count", str(2 * 10**7), "--progress"]
    # SIGINT at its default in the child: a shell starts background jobs (a CI runner's, nohup's)
    # with SIGINT ignored, and the child would inherit that and never see the signal
    child = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=_env(),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = b""
    while b"suite 1/1" not in seen:  # the progress bar is up: the suite is being computed
        chunk = os.read(child.stderr.fileno(), 256)
        if not chunk:
            break
        seen += chunk
    child.send_signal(signal.SIGINT)
    _, rest = child.communicate(timeout=60)
    err = (seen + rest).decode(errors="replace")
    assert b"suite 1/1" in seen, err
    assert child.returncode == 130, err
    assert "mxsim: interrupted" in err and "Traceback" not in err
    assert not any(tmp_path.rglob("*.hex"))
