"""The mxsim tensor file (mxsim.fileformat) and the quantize / dequantize CLI commands."""

import contextlib
import hashlib
import json
import os
import re
import resource
import struct
import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest

import mxsim
from mxsim import fileformat
from mxsim.cli import main
from mxsim import tensor_pack

PREFIX = struct.Struct("<8sHI")
DIGEST = 32  # SHA-256


def values(seed, shape):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))).astype(np.float32)


def assert_same_tensor(a, b):
    assert a.fmt == b.fmt and a.shape == b.shape and a.axis == b.axis and a.options == b.options
    assert a.tensor_scale == b.tensor_scale
    assert np.array_equal(a.codes, b.codes) and np.array_equal(a.scales, b.scales)
    assert (a.subscales is None) == (b.subscales is None)
    if a.subscales is not None:
        assert np.array_equal(a.subscales, b.subscales)
    np.testing.assert_array_equal(a.dequantize(np.float64), b.dequantize(np.float64))


def split(path):
    """(version, header dict, payload) of a saved file, read by the documented layouts: version 1
    has the header right after the 14-byte prefix; version 2 has a 32-byte SHA-256 in between."""
    data = path.read_bytes()
    _, version, length = PREFIX.unpack_from(data)
    start = PREFIX.size + (DIGEST if version == 2 else 0)
    header = json.loads(data[start : start + length])
    return version, header, data[start + length :]


def build(header, payload, version=2, magic=None, resign=True):
    """A file in the documented layout of ``version``, its checksums computed here (version 2):
    the header's digest always, its ``payload_sha256`` if ``resign``. ``header``: a dict, or the
    header's bytes as they are."""
    if isinstance(header, bytes):
        blob = header
    else:
        if resign and version == 2 and "payload_sha256" in header:
            header = dict(header, payload_sha256=hashlib.sha256(payload).hexdigest())
        blob = json.dumps(header).encode()
    prefix = PREFIX.pack(magic or fileformat.MAGIC, version, len(blob))
    digest = hashlib.sha256(prefix + blob).digest() if version == 2 else b""
    return prefix + digest + blob + payload


def rewrite(path, header=None, payload=None, version=None, magic=None):
    """Rewrite a saved file with some parts replaced, its checksums recomputed (so that the
    reader gets past them to the part under test)."""
    old_version, old_header, old_payload = split(path)
    path.write_bytes(build(old_header if header is None else header, old_payload if payload is None else payload,
                           old_version if version is None else version, magic))


# --- save / load -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", mxsim.format_names("block"))
def test_save_load_round_trip_every_block_format(tmp_path, name):
    t = mxsim.quantize(values(1, (3, 50)), name, axis=1)
    path = tmp_path / f"{name}.mxt"
    mxsim.save(t, path)
    back = mxsim.load(path)
    assert_same_tensor(back, t)
    version, header, payload = split(path)
    assert path.read_bytes()[:8] == fileformat.MAGIC == b"\x89MXSIM\r\n"
    assert version == fileformat.VERSION == 2
    assert payload == tensor_pack.pack(t)
    assert header["layout"] == {"element_stream": "lsb", "scale_placement": "separate"}


@pytest.mark.parametrize("layout", [("msb", "interleaved"), ("bytes", "separate"), ("lsb", "interleaved")])
def test_mx9_subscales_and_options_survive(tmp_path, layout):
    x = values(2, (4, 3, 20))
    t = mxsim.quantize(x, "mx9", axis=0, rounding="rtz", flush_subnormal_inputs=True, inf_policy="saturate")
    assert t.subscales.any() and not t.subscales.all()  # the test sees microexponents of both values
    path = tmp_path / "t.mxt"
    fileformat.save(t, path, element_stream=layout[0], scale_placement=layout[1])
    back = mxsim.load(path)
    assert_same_tensor(back, t)
    assert back.options.rounding == "rtz" and back.options.flush_subnormal_inputs and back.axis == 0
    _, header, _ = split(path)
    assert header["layout"] == {"element_stream": layout[0], "scale_placement": layout[1]}
    assert header["options"] == t.options.as_dict()


def test_nvfp4_tensor_scale_is_exact(tmp_path):
    x = np.array([[1e-3, 2.0, -7.0, 123.456] * 8], np.float32)
    t = mxsim.quantize(x, "nvfp4")
    assert t.tensor_scale.denominator > 1 and t.tensor_scale.numerator > 1  # not a power of two
    mxsim.save(t, tmp_path / "nv.mxt", element_stream="msb")
    _, header, _ = split(tmp_path / "nv.mxt")
    assert header["tensor_scale"] == f"{t.tensor_scale.numerator}/{t.tensor_scale.denominator}"
    back = mxsim.load(tmp_path / "nv.mxt")
    assert isinstance(back.tensor_scale, Fraction) and back.tensor_scale == t.tensor_scale
    assert_same_tensor(back, t)


def test_header_describes_the_format_with_fractions_as_strings(tmp_path):
    mxsim.save(mxsim.quantize(values(3, (64,)), "mxfp4"), tmp_path / "a.mxt")
    _, header, _ = split(tmp_path / "a.mxt")
    fmt = header["format"]
    assert fmt["name"] == "mxfp4_e2m1" and fmt["block_size"] == 32 and fmt["bits_per_element"] == "17/4"
    assert fmt["element"]["name"] == "fp4_e2m1" and fmt["element"]["max_normal"] == "6"
    assert fmt["element"]["min_subnormal"] == "1/2"
    assert fmt["scale"]["name"] == "e8m0" and fmt["scale"]["min_normal"] == f"1/{2**127}"
    assert fmt["tensor_scale"] is None and header["tensor_scale"] is None
    assert header["shape"] == [64] and header["axis"] == 0 and header["n_blocks"] == 2
    assert header["payload_bytes"] == 2 + 32


def test_scalar_and_empty_tensors(tmp_path):
    for x in (np.float32(-2.5), np.zeros((0, 7), np.float32)):
        t = mxsim.quantize(x, "msfp12")
        mxsim.save(t, tmp_path / "s.mxt")
        assert_same_tensor(mxsim.load(tmp_path / "s.mxt"), t)


def test_save_refuses_bad_input(tmp_path):
    t = mxsim.quantize(values(4, (32,)), "mxfp8_e5m2")
    with pytest.raises(ValueError, match="element_stream='le' is not allowed; expected one of: lsb, msb, bytes"):
        mxsim.save(t, tmp_path / "x", element_stream="le")
    with pytest.raises(ValueError, match="tensor must be an MXTensor, got ndarray"):
        fileformat.save(np.zeros(3), tmp_path / "x")
    custom = mxsim.BlockFormat("mxfp8_e5m2", t.fmt.element, block_size=16, scale=t.fmt.scale)  # catalogue name, other k
    c = mxsim.MXTensor.from_codes(np.zeros(2, np.uint8), np.zeros(32, np.uint8), custom)
    with pytest.raises(ValueError, match="is not a catalogue block format"):
        mxsim.save(c, tmp_path / "x")
    assert os.listdir(tmp_path) == []


# --- atomic writes -------------------------------------------------------------------------------
def _fail(*args, **kwargs):
    raise OSError("injected failure")


@pytest.mark.parametrize("where", ["replace", "fsync", "write"])
@pytest.mark.parametrize("existing", [True, False])
def test_failed_write_leaves_the_destination_alone(tmp_path, monkeypatch, where, existing):
    dest = tmp_path / "t.mxt"
    if existing:
        dest.write_bytes(b"old contents")
    t = mxsim.quantize(values(5, (2, 40)), "mx6")
    if where == "write":  # fail half way: the temp file holds part of the data when it breaks
        real_fdopen = os.fdopen

        class Broken:
            def __init__(self, file):
                self.file = file

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.file.close()

            def write(self, data):
                self.file.write(data[: len(data) // 2])
                self.file.flush()
                raise OSError("disk full")

            def __getattr__(self, name):
                return getattr(self.file, name)

        monkeypatch.setattr(os, "fdopen", lambda fd, mode: Broken(real_fdopen(fd, mode)))
    else:
        monkeypatch.setattr(os, where, _fail)
    with pytest.raises(OSError, match="injected failure|disk full"):
        mxsim.save(t, dest)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == (["t.mxt"] if existing else [])
    if existing:
        assert dest.read_bytes() == b"old contents"
    mxsim.save(t, dest)  # and a later write works
    assert_same_tensor(mxsim.load(dest), t)
    assert os.listdir(tmp_path) == ["t.mxt"]


def test_overwrite_keeps_mode_and_new_files_follow_umask(tmp_path):
    dest = tmp_path / "t.mxt"
    t = mxsim.quantize(values(6, (32,)), "mxint8")
    mxsim.save(t, dest)
    umask = os.umask(0)
    os.umask(umask)
    assert dest.stat().st_mode & 0o777 == 0o666 & ~umask
    os.chmod(dest, 0o600)
    mxsim.save(t, dest)
    assert dest.stat().st_mode & 0o777 == 0o600


# --- corrupted files ------------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "t.mxt"
    mxsim.save(mxsim.quantize(values(7, (2, 33)), "mxfp6_e3m2"), path, element_stream="msb")
    return path


def test_truncated_or_extended_payload(saved):
    data = saved.read_bytes()
    saved.write_bytes(data[:-1])
    with pytest.raises(ValueError, match=r"payload is 99 bytes; expected 100 \(truncated\)"):
        mxsim.load(saved)
    saved.write_bytes(data + b"\0")
    with pytest.raises(ValueError, match=r"payload is 101 bytes; expected 100 \(trailing data\)"):
        mxsim.load(saved)
    saved.write_bytes(data[:20])
    with pytest.raises(ValueError, match="truncated header"):
        mxsim.load(saved)
    saved.write_bytes(data[:5])
    with pytest.raises(ValueError, match=r"too short for an mxsim tensor file \(5 bytes"):
        mxsim.load(saved)


def test_bad_magic_and_future_version(saved, tmp_path):
    rewrite(saved, magic=b"\x89MXSIN\r\n")
    with pytest.raises(ValueError, match="not an mxsim tensor file: bad magic"):
        mxsim.load(saved)
    np.save(tmp_path / "a.npy", np.zeros(3))
    with pytest.raises(ValueError, match="bad magic"):
        mxsim.load(tmp_path / "a.npy")
    rewrite(saved, magic=fileformat.MAGIC, version=3)
    with pytest.raises(ValueError, match="unsupported mxsim file version 3; this mxsim reads version\\(s\\) 1, 2"):
        mxsim.load(saved)


def test_header_problems(saved):
    _, header, payload = split(saved)

    def load_with(**changes):
        h = json.loads(json.dumps(header))
        for key, value in changes.items():
            h[key] = value
        rewrite(saved, header=h, payload=payload)
        return mxsim.load(saved)

    with pytest.raises(ValueError, match="field 'format': unknown format 'mxfp5'; known block formats: mxfp8_e4m3"):
        load_with(format=dict(header["format"], name="mxfp5"))
    with pytest.raises(ValueError, match="field 'format': unknown format 'fp6_e3m2'"):  # an element format
        load_with(format=dict(header["format"], name="fp6_e3m2"))
    with pytest.raises(ValueError, match="field 'format': the parameters of 'mxfp6_e3m2' differ from this mxsim's "
                                         "catalogue in: bits_per_block, block_size"):
        load_with(format=dict(header["format"], block_size=16, bits_per_block=104))
    with pytest.raises(ValueError, match="corrupt header: field 'shape': missing"):
        mxsim.load(_drop(saved, header, payload, "shape"))
    with pytest.raises(ValueError, match="field 'layout': scale_placement='sideways' is not allowed"):
        load_with(layout={"element_stream": "msb", "scale_placement": "sideways"})
    with pytest.raises(ValueError, match="field 'options': unknown option\\(s\\) from_the_future"):
        load_with(options=dict(header["options"], from_the_future=1))
    with pytest.raises(ValueError, match="corrupt header: field 'n_blocks': 5, but shape \\[2, 33\\] holds 4 blocks"):
        load_with(n_blocks=5)
    with pytest.raises(ValueError, match="field 'tensor_scale': '1/2' is not allowed; expected null: format "
                                         "'mxfp6_e3m2' has no tensor scale"):
        load_with(tensor_scale="1/2")
    with pytest.raises(ValueError, match="field 'shape': \\[2, -33\\] is not allowed; expected a list of at most 64 "
                                         "non-negative integers"):
        load_with(shape=[2, -33])
    # a different layout makes the same payload the wrong length
    with pytest.raises(ValueError, match="field 'payload_bytes': 100, but 4 blocks of mxfp6_e3m2 in this layout "
                                         "take 132"):
        load_with(layout={"element_stream": "bytes", "scale_placement": "separate"})
    saved.write_bytes(PREFIX.pack(fileformat.MAGIC, 1, 5) + b"{nope" + payload)
    with pytest.raises(ValueError, match="corrupt header"):
        mxsim.load(saved)


def _drop(path, header, payload, key):
    h = {k: v for k, v in header.items() if k != key}
    rewrite(path, header=h, payload=payload)
    return path


def test_corrupt_payload_bits_are_caught(tmp_path):
    """Bits no tensor can hold are refused even where no checksum covers them (or it was recomputed)."""
    path = tmp_path / "nv.mxt"
    mxsim.save(mxsim.quantize(values(8, (16,)), "nvfp4"), path)
    _, _, payload = split(path)
    payload = bytearray(payload)
    payload[-9] |= 0x80  # the UE4M3 scale byte: 7-bit codes only
    rewrite(path, payload=bytes(payload))
    with pytest.raises(ValueError, match=r"scales in the payload hold values outside \[0, 127\]"):
        mxsim.load(path)


# --- CLI -------------------------------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mxsim.cli", *map(str, args)], capture_output=True, text=True)


def test_cli_dequantize_float16_with_options(tmp_path):
    # block 0: 448 * 2^10 (E4M3 448, scale 2^10) lies beyond float16; block 1: 2^-20 (E4M3 256,
    # scale 2^-28) is a float16 subnormal
    x = np.zeros(64, dtype=np.float32)
    x[0], x[32] = 448 * 2.0**10, 2.0**-20
    np.save(tmp_path / "x.npy", x)
    assert run_cli("quantize", tmp_path / "x.npy", tmp_path / "x.mxt", "--format", "mxfp8_e4m3").returncode == 0
    plain = run_cli("dequantize", tmp_path / "x.mxt", tmp_path / "p.npy", "--dtype", "float16")
    d = run_cli("dequantize", tmp_path / "x.mxt", tmp_path / "y.npy", "--dtype", "float16",
                "--dequant-overflow", "saturate", "--dequant-ftz")
    assert plain.returncode == 0 and d.returncode == 0, plain.stderr + d.stderr
    p, y = np.load(tmp_path / "p.npy"), np.load(tmp_path / "y.npy")
    assert p.dtype == y.dtype == np.float16
    assert (p[0], p[32]) == (np.inf, 2.0**-20) and (y[0], y[32]) == (65504, 0)
    t = mxsim.load(tmp_path / "x.mxt")
    assert np.array_equal(y.view(np.uint16), t.dequantize_bits("float16", dequant_overflow="saturate", dequant_ftz=True))


def test_cli_round_trip_through_npy(tmp_path):
    x = values(9, (40, 3))
    np.save(tmp_path / "x.npy", x)
    q = run_cli("quantize", tmp_path / "x.npy", tmp_path / "x.mxt", "--format", "mx6", "--axis", "0",
                "--rounding", "rtz", "--element-stream", "msb", "--scale-placement", "interleaved")
    assert q.returncode == 0, q.stderr
    assert "mx6" in q.stdout and q.stderr == ""
    d = run_cli("dequantize", tmp_path / "x.mxt", tmp_path / "y", "--dtype", "float64")
    assert d.returncode == 0, d.stderr
    y = np.load(tmp_path / "y")  # no .npy suffix added
    expected = mxsim.quantize(x, "mx6", axis=0, rounding="rtz")
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, expected.dequantize(np.float64))
    assert_same_tensor(mxsim.load(tmp_path / "x.mxt"), expected)
    _, header, _ = split(tmp_path / "x.mxt")
    assert header["layout"] == {"element_stream": "msb", "scale_placement": "interleaved"}


def test_cli_error_is_one_line_and_exit_2(tmp_path):
    r = run_cli("dequantize", tmp_path / "missing.mxt", tmp_path / "y.npy")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("mxsim: error:") and "missing.mxt" in r.stderr


def test_cli_options_in_process(tmp_path, capsys):
    x = values(10, (2, 32)).astype(np.float64)
    x[0, 3] = np.inf
    np.save(tmp_path / "x.npy", x)
    argv = ["quantize", str(tmp_path / "x.npy"), str(tmp_path / "x.mxt"), "--format", "mxint8",
            "--scale-rule", "ceil", "--inf-policy", "saturate", "--int8-allow-neg2", "--no-flush-subnormal-inputs"]
    assert main(argv) == 0
    t = mxsim.load(tmp_path / "x.mxt")
    assert t.options == mxsim.QuantizeOptions(scale_rule="ceil", inf_policy="saturate", int8_allow_neg2=True)
    assert_same_tensor(t, mxsim.quantize(x, "mxint8", scale_rule="ceil", inf_policy="saturate", int8_allow_neg2=True))
    rand = np.arange(64, dtype=np.uint32).reshape(2, 32) * 12345 % 256
    np.save(tmp_path / "r.npy", rand)
    assert main(["quantize", str(tmp_path / "x.npy"), str(tmp_path / "s.mxt"), "--format", "mxfp4", "--rounding",
                 "stochastic", "--rand-width", "8", "--rand-bits", str(tmp_path / "r.npy")]) == 0
    expected = mxsim.quantize(x, "mxfp4", rounding="stochastic", rand_width=8, rand_bits=rand)
    assert_same_tensor(mxsim.load(tmp_path / "s.mxt"), expected)
    assert main(["dequantize", str(tmp_path / "s.mxt"), str(tmp_path / "s.npy")]) == 0
    assert np.load(tmp_path / "s.npy").dtype == np.float32
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["quantize", "X", "OUT", "--format", "mxfp5"], "argument --format: invalid choice: 'mxfp5'"),
        (["quantize", "X", "OUT", "--format", "mx9", "--rounding", "nearest"], "argument --rounding: invalid choice"),
        (["quantize", "X", "OUT", "--format", "mx9", "--element-stream", "le"], "--element-stream: invalid choice"),
        (["quantize", "X", "OUT", "--format", "mx9", "--scale-placement", "x"], "--scale-placement: invalid choice"),
        (["quantize", "X", "OUT", "--format", "mx9", "--scale-rule", "ceil"], "--scale-rule ceil is not allowed"),
        (["quantize", "INT", "OUT", "--format", "mx9"], "input dtype int64 is not allowed"),
        (["quantize", "X", "OUT", "--format", "mxfp4", "--partial-block", "error"], "axis length 33 is not a multiple"),
        (["quantize", "X", "OUT", "--format", "mxfp4", "--rounding", "stochastic"], "--rand-bits is needed"),
        (["quantize", "NOPE", "OUT", "--format", "mx9"], "No such file"),
        (["quantize", "TXT", "OUT", "--format", "mx9"], "t.txt: is not a .npy array"),
        (["dequantize", "X", "OUT"], "bad magic"),
        (["dequantize", "X", "OUT", "--dtype", "bfloat16"], "argument --dtype: invalid choice"),
        (["quantize", "X", "NODIR/OUT", "--format", "mx9"], "cannot write"),
    ],
)
def test_cli_errors(tmp_path, capsys, argv, message):
    np.save(tmp_path / "x.npy", values(11, (2, 33)))
    np.save(tmp_path / "i.npy", np.arange(4))
    (tmp_path / "t.txt").write_text("hello")
    paths = {"X": tmp_path / "x.npy", "INT": tmp_path / "i.npy", "OUT": tmp_path / "out", "NOPE": tmp_path / "nope.npy",
             "TXT": tmp_path / "t.txt", "NODIR/OUT": tmp_path / "nodir" / "out"}
    argv = [str(paths.get(a, a)) for a in argv]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "error:" in err and message in err, err
    assert not (tmp_path / "out").exists()


# --- hardening: bounded reads, every header field checked, checksums (format version 2) ----------
def _address_space_limit():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("kind", ["device", "sparse zeros", "sparse tail"])
def test_prefix_and_header_are_checked_before_the_payload_is_read(tmp_path, kind):
    """`mxsim dequantize` on /dev/zero, or on a file of gigabytes, stops at the prefix or the
    header: under a 1 GiB address-space limit it gives the one-line error, no MemoryError."""
    path = tmp_path / "big.mxt"
    if kind == "device":
        path = "/dev/zero"
        message = "/dev/zero: not an mxsim tensor file: bad magic"
    elif kind == "sparse zeros":
        with open(path, "wb") as file:
            file.truncate(8 << 30)  # 8 GiB of zeros that take no disk space
        message = "big.mxt: not an mxsim tensor file: bad magic"
    else:  # a good file followed by 8 GiB of zeros
        mxsim.save(mxsim.quantize(values(20, (2, 33)), "mxfp6_e3m2"), path, element_stream="msb")
        size = path.stat().st_size
        with open(path, "r+b") as file:
            file.truncate(size + (8 << 30))
        message = rf"big.mxt: payload is {100 + (8 << 30)} bytes; expected 100 \(trailing data\)"
    r = subprocess.run([sys.executable, "-m", "mxsim.cli", "dequantize", str(path), str(tmp_path / "o.npy")],
                       capture_output=True, text=True, preexec_fn=_address_space_limit, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert re.search(message, r.stderr), r.stderr
    assert not (tmp_path / "o.npy").exists()


def test_header_length_is_capped(saved):
    saved.write_bytes(PREFIX.pack(fileformat.MAGIC, 2, 0xFFFFFFFF) + bytes(64))
    with pytest.raises(ValueError, match=r"t.mxt: corrupt prefix: header length 4294967295 bytes exceeds the limit "
                                         r"of 1048576"):
        mxsim.load(saved)


def test_header_declaring_more_payload_than_the_file_holds(saved):
    """A header whose shape needs 2^41 blocks (18 TB) is refused by the file's length, not by an allocation."""
    _, header, payload = split(saved)
    rewrite(saved, header=dict(header, shape=[1 << 40, 33], n_blocks=1 << 41, payload_bytes=25 << 41))
    with pytest.raises(ValueError, match=rf"t.mxt: payload is 100 bytes; expected {25 << 41} \(truncated\)"):
        mxsim.load(saved)
    rewrite(saved, header=dict(header, shape=[0, 10**30], n_blocks=0, payload_bytes=0), payload=b"")
    with pytest.raises(ValueError, match=r"field 'shape': \[0, 1000000000000000000000000000000\] holds more than "
                                         r"2\^59 elements"):
        mxsim.load(saved)


@pytest.mark.parametrize("version", [1, 2])
def test_deeply_nested_header_is_a_clear_error(saved, version):
    _, _, payload = split(saved)
    saved.write_bytes(build(b"[" * 100_000 + b"]" * 100_000, payload, version))
    with pytest.raises(ValueError, match="t.mxt: corrupt header: JSON nested deeper than 8 levels"):
        mxsim.load(saved)
    deep = {"format": {"a": [[[[[[[[[1]]]]]]]]]}}  # parses, but nests 11 deep
    saved.write_bytes(build(json.dumps(deep).encode(), payload, version))
    with pytest.raises(ValueError, match="t.mxt: corrupt header: JSON nested deeper than 8 levels"):
        mxsim.load(saved)


TENSOR_SCALES = ["1e400", "1/3", "0", "-1/2", "1/0", "1/" + "2" * 200, "3" * 200, str(2**128), "1/" + str(2**150),
                 " 1/2", 1e400, 0.5, True]


@pytest.mark.parametrize("value", TENSOR_SCALES, ids=[f"{i}:{str(v)[:10]}" for i, v in enumerate(TENSOR_SCALES)])
def test_nvfp4_tensor_scale_out_of_range_names_file_and_field(tmp_path, capsys, value):
    path = tmp_path / "nv.mxt"
    mxsim.save(mxsim.quantize(values(21, (2, 16)), "nvfp4"), path)
    _, header, _ = split(path)
    rewrite(path, header=dict(header, tensor_scale=value))
    with pytest.raises(ValueError) as caught:
        mxsim.load(path)
    message = str(caught.value)
    shown = repr(value)[:20].replace("1e+400", "inf")  # JSON has no 1e400: it reads back as inf
    assert message.startswith(f"{path}: corrupt header: field 'tensor_scale': {shown}")
    assert message.endswith("is not allowed; expected null or a positive float32 value as a fraction string such as "
                            "'1/2688'") and len(message) < len(str(path)) + 250
    assert main(["dequantize", str(path), str(tmp_path / "o.npy")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "field 'tensor_scale'" in err


def test_nvfp4_tensor_scale_boundaries_load(tmp_path):
    """The extreme float32 values are accepted, exactly (the check is on integers, not floats)."""
    path = tmp_path / "nv.mxt"
    t = mxsim.quantize(values(22, (16,)), "nvfp4")
    for scale in (Fraction(1, 2**149), Fraction((2**24 - 1) * 2**104), Fraction(3, 4)):
        u = mxsim.MXTensor.from_codes(t.scales, t.codes, "nvfp4", tensor_scale=scale)
        mxsim.save(u, path)
        assert mxsim.load(path).tensor_scale == scale


@pytest.mark.parametrize(
    "field, value",
    [
        ("format", "mxfp4"), ("format", {"name": ["mxfp4"]}),
        ("shape", "2x33"), ("shape", [2, 33.0]), ("shape", [True, 33]), ("shape", [1] * 65),
        ("axis", "1"), ("axis", True), ("axis", 2),
        ("n_blocks", "4"), ("n_blocks", -1),
        ("layout", ["msb", "separate"]), ("layout", {"element_stream": 1, "scale_placement": "separate"}),
        ("layout", {"element_stream": "msb", "scale_placement": "separate", "extra": 0}),
        ("options", ["rne"]), ("options", {"rounding": 5}), ("options", {"int8_allow_neg2": "yes"}),
        ("options", {"rand_width": True}), ("options", {"scale_rule": "tosa", "spare": 1}),
        ("tensor_scale", "1/2"),
        ("payload_bytes", "100"), ("payload_bytes", None), ("payload_bytes", 99),
        ("mxsim_version", 1), ("mxsim_version", None),
        ("payload_sha256", 5), ("payload_sha256", "X" * 64), ("payload_sha256", "ab"),
    ],
)
def test_wrong_header_field_names_file_and_field(saved, capsys, field, value):
    _, header, payload = split(saved)
    h = dict(header, **{field: value})
    saved.write_bytes(build(h, payload, resign=False))  # keep the bad digest value itself
    with pytest.raises(ValueError) as caught:
        mxsim.load(saved)
    assert str(caught.value).startswith(f"{saved}: corrupt header: field '{field}': "), caught.value
    assert main(["dequantize", str(saved), str(saved.with_suffix(".npy"))]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mxsim: error: {saved}: corrupt header: field '{field}': ") and err.count("\n") == 1


def test_missing_and_unknown_header_fields(saved):
    _, header, payload = split(saved)
    for field in header:
        saved.write_bytes(build({k: v for k, v in header.items() if k != field}, payload, resign=False))
        with pytest.raises(ValueError, match=rf"t.mxt: corrupt header: field '{field}': missing"):
            mxsim.load(saved)
    saved.write_bytes(build(dict(header, comment="hi"), payload))
    with pytest.raises(ValueError, match=r"t.mxt: corrupt header: unknown field\(s\) 'comment'; a version 2 header "
                                         r"has: format, shape, axis"):
        mxsim.load(saved)
    saved.write_bytes(build(header, payload, version=1))  # a version 1 header has no payload_sha256
    with pytest.raises(ValueError, match=r"unknown field\(s\) 'payload_sha256'; a version 1 header has"):
        mxsim.load(saved)


def test_version_2_layout_is_as_documented(saved):
    """Offsets and digests computed here with hashlib, from the layout in the module docstring."""
    data = saved.read_bytes()
    magic, version, length = PREFIX.unpack_from(data)
    assert (magic, version) == (b"\x89MXSIM\r\n", 2)
    digest, blob, payload = data[14:46], data[46 : 46 + length], data[46 + length :]
    assert digest == hashlib.sha256(data[:14] + blob).digest()
    header = json.loads(blob)
    assert list(header) == sorted(header)
    assert header["payload_sha256"] == hashlib.sha256(payload).hexdigest()
    assert len(payload) == header["payload_bytes"] == 100
    assert fileformat.read(saved).checksum == header["payload_sha256"]


@pytest.mark.parametrize("name", ["mxfp6_e3m2", "nvfp4", "mx9"])
def test_version_1_files_still_load(tmp_path, name):
    """A version 1 file built here by the v1 layout (the header right after the 14-byte prefix,
    no checksums) loads as the tensor; ``save(version=1)`` writes that layout."""
    t = mxsim.quantize(values(23, (3, 40)), name, axis=1)
    mxsim.save(t, tmp_path / "v2.mxt", element_stream="msb")
    _, header, payload = split(tmp_path / "v2.mxt")
    v1 = {key: value for key, value in header.items() if key != "payload_sha256"}
    blob = json.dumps(v1).encode()
    (tmp_path / "v1.mxt").write_bytes(PREFIX.pack(b"\x89MXSIM\r\n", 1, len(blob)) + blob + payload)
    found = fileformat.read(tmp_path / "v1.mxt")
    assert found.version == 1 and found.checksum is None
    assert_same_tensor(found.tensor, t)
    fileformat.save(t, tmp_path / "w1.mxt", element_stream="msb", version=1)
    assert split(tmp_path / "w1.mxt") == (1, v1, payload)
    with pytest.raises(ValueError, match="version=3 is not allowed; expected one of: 1, 2"):
        fileformat.save(t, tmp_path / "w3.mxt", version=3)


def load_error(path) -> str:
    """The message of the ValueError that loading ``path`` raises ("" if it loads)."""
    try:
        mxsim.load(path)
    except ValueError as error:
        return str(error)
    return ""


def test_flipped_byte_anywhere_is_detected(tmp_path):
    """Every byte of a version 2 file, changed in its lowest bit, its highest bit or all bits: a
    clear error, naming the checksum for a header or payload byte."""
    path = tmp_path / "nv.mxt"
    mxsim.save(mxsim.quantize(values(24, (2, 32)), "nvfp4"), path)
    data = path.read_bytes()
    length = PREFIX.unpack_from(data)[2]
    with open(path, "r+b") as file:  # patched in place: one byte at a time, then restored
        for i in range(len(data)):
            for mask in (0x01, 0x80, 0xFF):
                file.seek(i)
                file.write(bytes([data[i] ^ mask]))
                file.flush()
                message = load_error(path)
                assert message.startswith(f"{path}: "), (i, mask, message)
                if 14 <= i < 46 + length:
                    assert "header checksum mismatch" in message, (i, mask, message)
                elif i >= 46 + length:
                    assert message.endswith("payload checksum mismatch: the payload is damaged"), (i, mask, message)
            file.seek(i)
            file.write(data[i : i + 1])
    assert path.read_bytes() == data
    assert_same_tensor(mxsim.load(path), mxsim.quantize(values(24, (2, 32)), "nvfp4"))


def _feed(fd, data):
    with os.fdopen(fd, "wb") as pipe:
        with contextlib.suppress(BrokenPipeError):
            pipe.write(data)


@pytest.mark.parametrize("cut", [0, 1, -1])
def test_load_from_a_pipe(saved, cut):
    """A pipe has no length to check ahead: the payload is read up to its declared length, then
    one more byte must not come."""
    data = saved.read_bytes()
    data = data if cut == 0 else data + b"\0" if cut == 1 else data[:-1]
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=_feed, args=(write_end, data))
    writer.start()
    try:
        if cut == 0:
            assert_same_tensor(mxsim.load(f"/dev/fd/{read_end}"), mxsim.load(saved))
        else:
            state = "trailing data" if cut == 1 else "truncated"
            with pytest.raises(ValueError, match=rf"/dev/fd/{read_end}: payload is {100 + cut} bytes; expected 100 "
                                                 rf"\({state}\)"):
                mxsim.load(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
        writer.join()


# --- CLI: format names in any case, `mxsim info FILE` ----------------------------------------------
@pytest.mark.parametrize("spelling, name", [("MXFP4", "mxfp4_e2m1"), ("MxFp6_E3M2", "mxfp6_e3m2"), (" NVFP4", "nvfp4"),
                                            ("MX9", "mx9")])
def test_cli_format_names_are_case_insensitive(tmp_path, capsys, spelling, name):
    """As mxsim.get_format and mxsim.quantize: any case, aliases too."""
    x = values(30, (2, 40))
    np.save(tmp_path / "x.npy", x)
    code = main(["quantize", str(tmp_path / "x.npy"), str(tmp_path / "x.mxt"), "--format", spelling])
    assert code == 0 and capsys.readouterr().err == ""
    assert_same_tensor(mxsim.load(tmp_path / "x.mxt"), mxsim.quantize(x, name))
    assert main(["info", spelling]) == 0
    assert capsys.readouterr().out.split("\n")[0].split() == ["name", name]


def info_rows(text: str) -> dict:
    """`mxsim info FILE` output as {key: value}: the key is everything before the 15-column value."""
    return {line[:15].strip(): line[16:] for line in text.strip("\n").split("\n")}


def test_cli_info_describes_a_tensor_file(tmp_path, capsys):
    x = values(31, (40, 3))
    path = tmp_path / "x.mxt"
    t = mxsim.quantize(x, "mx9", axis=0, rounding="rtz")
    mxsim.save(t, path, element_stream="msb", scale_placement="interleaved")
    assert main(["info", str(path)]) == 0
    rows = info_rows(capsys.readouterr().out)
    size = path.stat().st_size
    digest = hashlib.sha256(split(path)[2]).hexdigest()
    assert rows == {
        "file": f"{path}: mxsim tensor file version 2, {size} bytes",
        "format": "mx9: int8_sm elements, 16 per block, 144 bits per block",
        "shape": "(40, 3)",
        "block axis": "0, length 40: 9 blocks in all (the last one padded)",  # 3 columns x ceil(40/16)
        "scale encoding": "one e8m0 code (8 bits) per block; 8 sub-scales of 1 bit(s) per block, one per 2 elements",
        "tensor scale": "-",
        "layout": "element_stream=msb, scale_placement=interleaved",
        "payload": "162 bytes",  # 9 blocks x (8 + 8 + 16 x 8) bits
        "options": "scale_rule=floor, rounding=rtz, rand_width=32, inf_policy=nan, flush_subnormal_inputs=False, "
                   "partial_block=pad, int8_allow_neg2=False, min_scale_divisor=scale, nvfp4_scale_min=normal, "
                   "nvfp4_arith=exact, nvfp4_tensor_scale=amax, scale_encoding=e8m0, scale_min=-127, specials=block, "
                   "nan_code=None, subnormal_inputs=exact, zero_block_scale=scale_min, scale_overflow=clamp, "
                   "element_arith=exact, zero_sign=keep, flush_subnormal_blocks=False, nan_blocks=nan, "
                   "scale_round_bits=None, scale_offset=0, scale_underflow=clamp, scale_value_min=none",
        "profile": "-",
        "checksum": f"SHA-256 of header and payload verified (payload {digest})",
        "written by": f"mxsim {mxsim.__version__}",
    }


def test_cli_info_of_nvfp4_version_1_and_damaged_files(tmp_path, capsys):
    path = tmp_path / "nv.mxt"
    t = mxsim.quantize(np.array([[1e-3, 2.0, -7.0, 123.456] * 4], np.float32), "nvfp4")
    fileformat.save(t, path, version=1)
    assert main(["info", str(path)]) == 0
    rows = info_rows(capsys.readouterr().out)
    assert rows["file"] == f"{path}: mxsim tensor file version 1, {path.stat().st_size} bytes"
    assert rows["checksum"] == "none: a version 1 file has no checksum"
    assert rows["scale encoding"] == "one ue4m3 code (7 bits) per block; times one fp32 tensor scale"
    s = t.tensor_scale
    assert rows["tensor scale"] == f"{s.numerator}/{s.denominator} ({float(s):.7g})"
    mxsim.save(t, path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert main(["info", str(path)]) == 2
    assert capsys.readouterr().err == f"mxsim: error: {path}: payload checksum mismatch: the payload is damaged\n"
    assert main(["info", str(path), "--codes"]) == 2
    assert "--codes lists an element format's codes" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "none.mxt")]) == 2
    err = capsys.readouterr().err
    assert "unknown format" in err and f"nor is '{tmp_path / 'none.mxt'}' a file" in err
