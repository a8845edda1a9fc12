"""The mxsim tensor file (mxsim.fileformat) and the quantize / dequantize CLI commands."""

import json
import os
import struct
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import mxsim
from mxsim import fileformat
from mxsim.cli import main
from mxsim.fast import pack as fast

PREFIX = struct.Struct("<8sHI")


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
    """(version, header dict, payload) of a saved file."""
    data = path.read_bytes()
    _, version, length = PREFIX.unpack_from(data)
    header = json.loads(data[PREFIX.size : PREFIX.size + length])
    return version, header, data[PREFIX.size + length :]


def rewrite(path, header=None, payload=None, version=None, magic=None):
    old_version, old_header, old_payload = split(path)
    blob = json.dumps(old_header if header is None else header).encode()
    path.write_bytes(
        PREFIX.pack(magic or fileformat.MAGIC, old_version if version is None else version, len(blob))
        + blob
        + (old_payload if payload is None else payload)
    )


# --- save / load -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", mxsim.format_names("block"))
def test_save_load_round_trip_every_block_format(tmp_path, name):
    t = mxsim.quantize(values(1, (3, 50)), name, axis=1)
    path = tmp_path / f"{name}.mxt"
    t.save(path)
    back = mxsim.load(path)
    assert_same_tensor(back, t)
    version, header, payload = split(path)
    assert path.read_bytes()[:8] == fileformat.MAGIC == b"\x89MXSIM\r\n"
    assert version == fileformat.VERSION == 1
    assert payload == fast.pack(t)
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
    t.save(tmp_path / "nv.mxt", element_stream="msb")
    _, header, _ = split(tmp_path / "nv.mxt")
    assert header["tensor_scale"] == f"{t.tensor_scale.numerator}/{t.tensor_scale.denominator}"
    back = mxsim.load(tmp_path / "nv.mxt")
    assert isinstance(back.tensor_scale, Fraction) and back.tensor_scale == t.tensor_scale
    assert_same_tensor(back, t)


def test_header_describes_the_format_with_fractions_as_strings(tmp_path):
    mxsim.quantize(values(3, (64,)), "mxfp4").save(tmp_path / "a.mxt")
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
        t.save(tmp_path / "s.mxt")
        assert_same_tensor(mxsim.load(tmp_path / "s.mxt"), t)


def test_save_refuses_bad_input(tmp_path):
    t = mxsim.quantize(values(4, (32,)), "mxfp8_e5m2")
    with pytest.raises(ValueError, match="element_stream='le' is not allowed; expected one of: lsb, msb, bytes"):
        t.save(tmp_path / "x", element_stream="le")
    with pytest.raises(ValueError, match="tensor must be an MXTensor, got ndarray"):
        fileformat.save(np.zeros(3), tmp_path / "x")
    custom = mxsim.BlockFormat("mxfp8_e5m2", t.fmt.element, block_size=16, scale=t.fmt.scale)  # catalogue name, other k
    c = mxsim.MXTensor.from_codes(np.zeros(2, np.uint8), np.zeros(32, np.uint8), custom)
    with pytest.raises(ValueError, match="is not a catalogue block format"):
        c.save(tmp_path / "x")
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
        t.save(dest)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == (["t.mxt"] if existing else [])
    if existing:
        assert dest.read_bytes() == b"old contents"
    t.save(dest)  # and a later write works
    assert_same_tensor(mxsim.load(dest), t)
    assert os.listdir(tmp_path) == ["t.mxt"]


def test_overwrite_keeps_mode_and_new_files_follow_umask(tmp_path):
    dest = tmp_path / "t.mxt"
    t = mxsim.quantize(values(6, (32,)), "mxint8")
    t.save(dest)
    umask = os.umask(0)
    os.umask(umask)
    assert dest.stat().st_mode & 0o777 == 0o666 & ~umask
    os.chmod(dest, 0o600)
    t.save(dest)
    assert dest.stat().st_mode & 0o777 == 0o600


# --- corrupted files ------------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "t.mxt"
    mxsim.quantize(values(7, (2, 33)), "mxfp6_e3m2").save(path, element_stream="msb")
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
    rewrite(saved, magic=fileformat.MAGIC, version=2)
    with pytest.raises(ValueError, match="unsupported mxsim file version 2; this mxsim reads version\\(s\\) 1"):
        mxsim.load(saved)


def test_header_problems(saved):
    _, header, payload = split(saved)

    def load_with(**changes):
        h = json.loads(json.dumps(header))
        for key, value in changes.items():
            h[key] = value
        rewrite(saved, header=h, payload=payload, version=1)
        return mxsim.load(saved)

    with pytest.raises(ValueError, match="header names an unknown format 'mxfp5'; known block formats: mxfp8_e4m3"):
        load_with(format=dict(header["format"], name="mxfp5"))
    with pytest.raises(ValueError, match="header names an unknown format 'fp6_e3m2'"):  # an element format
        load_with(format=dict(header["format"], name="fp6_e3m2"))
    with pytest.raises(ValueError, match="differ from this mxsim's catalogue in: bits_per_block, block_size"):
        load_with(format=dict(header["format"], block_size=16, bits_per_block=104))
    with pytest.raises(ValueError, match="corrupt header: missing field 'shape'"):
        mxsim.load(_drop(saved, header, payload, "shape"))
    with pytest.raises(ValueError, match="scale_placement='sideways' is not allowed"):
        load_with(layout={"element_stream": "msb", "scale_placement": "sideways"})
    with pytest.raises(ValueError, match="unknown option\\(s\\) from_the_future"):
        load_with(options=dict(header["options"], from_the_future=1))
    with pytest.raises(ValueError, match="corrupt header: n_blocks=5, but shape \\[2, 33\\] holds 4 blocks"):
        load_with(n_blocks=5)
    with pytest.raises(ValueError, match="corrupt header: tensor_scale='one'"):
        load_with(tensor_scale="one")
    with pytest.raises(ValueError, match="has no tensor scale"):
        load_with(tensor_scale="1/2")
    with pytest.raises(ValueError, match="expected a list of non-negative integers"):
        load_with(shape=[2, -33])
    # a different layout makes the same payload the wrong length
    with pytest.raises(ValueError, match="payload_bytes=100, but 4 blocks of mxfp6_e3m2 in this layout take 132"):
        load_with(layout={"element_stream": "bytes", "scale_placement": "separate"})
    saved.write_bytes(PREFIX.pack(fileformat.MAGIC, 1, 5) + b"{nope" + payload)
    with pytest.raises(ValueError, match="corrupt header"):
        mxsim.load(saved)


def _drop(path, header, payload, key):
    h = {k: v for k, v in header.items() if k != key}
    rewrite(path, header=h, payload=payload)
    return path


def test_corrupt_payload_bits_are_caught(tmp_path):
    path = tmp_path / "nv.mxt"
    mxsim.quantize(values(8, (16,)), "nvfp4").save(path)
    data = bytearray(path.read_bytes())
    data[-9] |= 0x80  # the UE4M3 scale byte: 7-bit codes only
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"scales in the payload hold values outside \[0, 127\]"):
        mxsim.load(path)


# --- CLI -------------------------------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mxsim.cli", *map(str, args)], capture_output=True, text=True)


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
        (["quantize", "X", "OUT", "--format", "mx9", "--scale-rule", "ceil"], "scale_rule='ceil' is not allowed"),
        (["quantize", "INT", "OUT", "--format", "mx9"], "input dtype int64 is not allowed"),
        (["quantize", "X", "OUT", "--format", "mxfp4", "--partial-block", "error"], "axis length 33 is not a multiple"),
        (["quantize", "X", "OUT", "--format", "mxfp4", "--rounding", "stochastic"], "rand_bits is needed"),
        (["quantize", "NOPE", "OUT", "--format", "mx9"], "No such file"),
        (["quantize", "TXT", "OUT", "--format", "mx9"], "cannot read as a .npy array"),
        (["dequantize", "X", "OUT"], "bad magic"),
        (["dequantize", "X", "OUT", "--dtype", "float16"], "argument --dtype: invalid choice"),
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
