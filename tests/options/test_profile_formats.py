"""Which formats and outputs a block profile takes: one rule for quantize and dequantize
(issue 32 item 4; docs/numerics.md section 6).

iDMA v0.7.0 has MXFP8 E5M2 only: ``quantize --profile idma_v0_7`` refuses an MXFP8 E4M3 tensor, and
``dequantize --profile idma_v0_7`` must refuse it too rather than apply iDMA's FP32 flush to it."""

from __future__ import annotations

import numpy as np
import pytest

from mxsim.cli import main
from mxsim.options.profiles import PROFILES, get_profile

TINY = np.float32(2.0**-130)  # an fp32 subnormal (element 2^-3 of scale 2^-127: exact): iDMA's FP32 output flushes it


def _tensor_file(tmp_path, fmt: str):
    x = np.zeros(32, np.float32)
    x[0] = TINY
    np.save(tmp_path / "x.npy", x)
    assert main(["quantize", str(tmp_path / "x.npy"), str(tmp_path / "x.mxt"), "--format", fmt]) == 0
    return tmp_path / "x.mxt"


def test_dequantize_refuses_a_format_the_profile_lacks(tmp_path, capsys):
    path = _tensor_file(tmp_path, "mxfp8_e4m3")
    out = tmp_path / "y.npy"
    assert main(["dequantize", str(path), str(out)]) == 0
    assert np.load(out)[0] == TINY  # the defaults keep the subnormal
    capsys.readouterr()
    assert main(["dequantize", str(path), str(tmp_path / "z.npy"), "--profile", "idma_v0_7"]) == 2
    err = capsys.readouterr().err
    assert "format 'mxfp8_e4m3' is not allowed with profile 'idma_v0_7'; expected one of: mxfp8_e5m2" in err
    assert not (tmp_path / "z.npy").exists()
    # quantize says the same of the same pair
    assert main(["quantize", str(tmp_path / "x.npy"), str(path), "--format", "mxfp8_e4m3",
                 "--profile", "idma_v0_7"]) == 2
    assert "format 'mxfp8_e4m3' is not allowed with profile 'idma_v0_7'; expected one of: mxfp8_e5m2" in \
        capsys.readouterr().err


def test_dequantize_applies_the_profile_to_a_format_it_has(tmp_path):
    path = _tensor_file(tmp_path, "mxfp8_e5m2")
    out = tmp_path / "y.npy"
    assert main(["dequantize", str(path), str(out)]) == 0
    assert np.load(out)[0] == TINY
    assert main(["dequantize", str(path), str(out), "--profile", "idma_v0_7"]) == 0
    flushed = np.load(out)[0]
    assert flushed == 0 and not np.signbit(flushed)  # FP32 output: subnormal results flush to a zero of their sign


def test_dequantize_refuses_an_output_the_profile_lacks(tmp_path, capsys):
    path = _tensor_file(tmp_path, "mxfp8_e5m2")
    assert main(["dequantize", str(path), str(tmp_path / "y.npy"), "--profile", "idma_v0_7", "--dtype", "float64"]) == 2
    assert "output='float64' is not allowed with profile 'idma_v0_7'; expected one of: float32, float16" in \
        capsys.readouterr().err


@pytest.mark.parametrize("name", [n for n, p in PROFILES.items() if p.kind == "block"])
def test_quantize_and_dequantize_take_the_same_formats(name):
    profile = get_profile(name)
    for fmt in ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8", "mx6", "mx9", "nvfp4"]:
        takes = fmt in profile.formats
        for call in (lambda: profile.quantize_options(fmt), lambda: profile.dequantize_for(fmt, profile.outputs[0])):
            if takes:
                call()
            else:
                with pytest.raises(ValueError, match=f"format '{fmt}' is not allowed with profile '{name}'"):
                    call()


def test_a_cast_profile_does_not_dequantize():
    with pytest.raises(ValueError, match="'ml_dtypes_0_6' is a cast profile; dequantize takes a block profile"):
        get_profile("ml_dtypes_0_6").dequantize_for("mxfp8_e4m3", "float32")


def test_a_tensor_file_whose_profile_lacks_its_format_is_refused(tmp_path):
    """A file recording iDMA's profile on an MXFP8 E4M3 tensor (which quantize --profile idma_v0_7
    never writes) would dequantize with iDMA's FP32 flush: load refuses it, naming the field."""
    import mxsim

    x = np.zeros(32, np.float32)
    x[0] = TINY
    t = mxsim.quantize(x, "mxfp8_e4m3")
    t.profile = get_profile("idma_v0_7")
    mxsim.save(t, tmp_path / "x.mxt")
    with pytest.raises(ValueError, match="field 'profile': format 'mxfp8_e4m3' is not allowed with profile 'idma_v0_7'"):
        mxsim.load(tmp_path / "x.mxt")
