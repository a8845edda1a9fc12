"""The software quantizers of docs/numerics.md section 6.2, run as oracles: each returns the library's own
(scale bytes, element codes, float32 output) of float32 blocks (tests/options/test_library_profiles.py).

The libraries output fake-quantized float32 tensors; the scale is the library's own shared
exponent (its internal function, run here), and the element codes are the library's output
divided by that scale (exact: a power of two) encoded by ml_dtypes (exact values: any rounding
gives the same code), so no mxsim code takes part in the expected values.

Where they come from: ``MXSIM_ORACLES`` (a directory holding the libraries, as .ci/run installs
them with ``pip install --no-deps --target``), else the environment. Under CI=true a missing
library is a failure (the tests call :func:`require`).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

ORACLE_DIR = os.environ.get("MXSIM_ORACLES")
if ORACLE_DIR and ORACLE_DIR not in sys.path:
    sys.path.append(ORACLE_DIR)

# mxsim format -> (ml_dtypes element type or None for MXINT8, the library's element name)
ELEMENTS = {
    "mxfp8_e4m3": (ml_dtypes.float8_e4m3fn, "fp8_e4m3"),
    "mxfp8_e5m2": (ml_dtypes.float8_e5m2, "fp8_e5m2"),
    "mxfp6_e3m2": (ml_dtypes.float6_e3m2fn, "fp6_e3m2"),
    "mxfp6_e2m3": (ml_dtypes.float6_e2m3fn, "fp6_e2m3"),
    "mxfp4_e2m1": (ml_dtypes.float4_e2m1fn, "fp4_e2m1"),
    "mxint8": (None, "int8"),
}


def _find(relative: str) -> Path | None:
    for root in [ORACLE_DIR, *sys.path]:
        if root and (Path(root) / relative).is_file():
            return Path(root) / relative
    return None


def neural_compressor_mx():
    """neural_compressor/torch/algorithms/mx_quant/utils.py loaded on its own (it imports torch
    only; the package's __init__ pulls heavy dependencies), or None."""
    path = _find("neural_compressor/torch/algorithms/mx_quant/utils.py")
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("nc_mx_quant_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def element_codes(values: np.ndarray, fmt: str) -> np.ndarray:
    """Codes of exact element values (float64 array): ml_dtypes for floats, value * 64 for MXINT8
    (two's complement byte)."""
    dtype, _ = ELEMENTS[fmt]
    if dtype is None:
        return (np.rint(values * 64).astype(np.int64) & 0xFF).astype(np.uint8)
    codes = values.astype(dtype).view(np.uint8)
    return codes


def microxcaling(mx, blocks: np.ndarray, fmt: str, mode: str, flush: bool = False):
    """(scale bytes, codes, float32 output) of Neural Compressor's port of microxcaling
    (``_quantize_mx``, the function behind ``quantize_mx_op`` with its flush_fp32_subnorms
    parameter) on float32 (n, 32) blocks. NaN-block codes are 0 (the library has none)."""
    import torch

    name = ELEMENTS[fmt][1]
    a = torch.from_numpy(blocks.copy())
    out = mx._quantize_mx(a, 8, name, axes=[-1], block_size=32, round=mode, flush_fp32_subnorms=flush).numpy()
    # The library's shared exponent (its own function and steps, _quantize_mx lines 2-4):
    _, _, emax, _, _ = mx._get_format_params(name)
    shared = mx._shared_exponents(a, method="max", axes=[-1], ebits=0).numpy()[:, 0] - emax
    nan = np.isnan(shared) | (shared > 127)
    exponent = np.where(nan, 0, np.maximum(np.nan_to_num(shared), -127)).astype(np.int64)
    scales = np.where(nan, 0xFF, exponent + 127).astype(np.uint8)
    values = np.ldexp(out.astype(np.float64), -exponent[:, None])
    codes = element_codes(np.where(nan[:, None], 0.0, values), fmt)
    codes[nan] = 0
    return scales, codes, out


# mxsim format -> (exponent bits, mantissa bits) of Brevitas' minifloat elements (None: MXINT8)
BREVITAS_ELEMENTS = {
    "mxfp8_e4m3": (4, 3), "mxfp8_e5m2": (5, 2), "mxfp6_e3m2": (3, 2), "mxfp6_e2m3": (2, 3), "mxfp4_e2m1": (2, 1),
    "mxint8": None,
}


def brevitas_quantizer(fmt: str):
    """A Brevitas 0.13 QuantIdentity with the MX activation quantizer of ``fmt`` (MXFloat8e4m3Act
    with its element widths changed, or MXInt8Act), in eval mode, returning quant tensors; None
    if Brevitas is not installed."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from brevitas.nn import QuantIdentity
            from brevitas.quant.mx_quant_ocp import MXFloat8e4m3Act, MXInt8Act
    except ImportError:
        return None
    widths = BREVITAS_ELEMENTS[fmt]
    if widths is None:
        quant = MXInt8Act
    else:
        quant = type(f"MX_{fmt}", (MXFloat8e4m3Act,), {
            "bit_width": 1 + sum(widths), "exponent_bit_width": widths[0], "mantissa_bit_width": widths[1],
        })
    module = QuantIdentity(act_quant=quant, return_quant_tensor=True, group_dim=-1)
    return module.eval()


def brevitas(module, blocks: np.ndarray, fmt: str):
    """(scale bytes, codes, float32 output, MX mask) of a Brevitas MX quantizer on float32 (n, 32)
    blocks. The scale byte is 127 + log2 of the library's scale (MXINT8: its integer step 2^(E - 6),
    so E = log2(step) + 6); a NaN or +Inf scale (NaN or Inf in the block: every output is NaN) is
    0xFF. The MX mask is False where the library's scale is not a power of two (no scale byte:
    those blocks get 0). Codes: output / scale, exact element values, encoded as above (MXINT8:
    the integer itself)."""
    import torch

    with torch.no_grad():
        t = module(torch.from_numpy(blocks.copy()))
    out = t.value.detach().numpy().astype(np.float32)
    scale = t.scale.detach().numpy().astype(np.float64).reshape(len(blocks), -1)[:, 0]
    special = ~np.isfinite(scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.log2(np.where(special, 1.0, scale))
        values = out.astype(np.float64) / np.where(special, 1.0, scale)[:, None]
    mx = special | (exponent == np.round(exponent))
    integer = BREVITAS_ELEMENTS[fmt] is None
    scales = np.where(special, 0xFF, np.where(mx, exponent + 127 + (6 if integer else 0), 0)).astype(np.uint8)
    values = np.where(special[:, None] | ~np.isfinite(values), 0.0, values)
    codes = (np.rint(values).astype(np.int64) & 0xFF).astype(np.uint8) if integer else element_codes(values, fmt)
    return scales, codes, out, mx


class _Stub:
    """Any name of a module compressed-tensors imports for model loading only (see below)."""

    def __init__(self, *args, **kwargs):
        pass


def _stub_module(name: str):
    import types

    def attribute(name: str):
        if name.startswith("__"):  # module metadata (__file__, __spec__...) stays absent, as tools expect
            raise AttributeError(name)
        return _Stub

    module = types.ModuleType(name)
    module.__path__ = []
    module.__getattr__ = attribute
    return module


class _StubFinder:
    """Meta-path finder giving stub modules for the Hugging Face stack (transformers,
    huggingface_hub, safetensors, accelerate) when it is not installed: compressed-tensors imports
    it at package import for model loading, which its quantization functions never use."""

    ROOTS = ("transformers", "huggingface_hub", "safetensors", "accelerate")

    def find_spec(self, name, path, target=None):
        import importlib.machinery

        if name.split(".")[0] in self.ROOTS:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _stub_module(spec.name)

    def exec_module(self, module):
        pass


def compressed_tensors():
    """The quantization functions of compressed-tensors 0.20 (preset_name_to_scheme,
    calculate_qparams, quantize, fake_quantize), or None if it is not installed. The Hugging Face
    stack is stubbed where missing (see :class:`_StubFinder`)."""
    import importlib.util

    if importlib.util.find_spec("compressed_tensors") is None:
        return None
    missing = [root for root in _StubFinder.ROOTS if importlib.util.find_spec(root) is None]
    if missing:
        sys.meta_path.insert(0, _StubFinder())
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from compressed_tensors.quantization import fake_quantize, preset_name_to_scheme, quantize
        from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam
    return {"scheme": preset_name_to_scheme, "qparams": calculate_qparams, "quantize": quantize,
            "fake_quantize": fake_quantize, "gparam": generate_gparam}


CT_PRESETS = {"mxfp4_e2m1": "MXFP4", "mxfp6_e2m3": "MXFP6A16", "mxfp8_e4m3": "MXFP8"}


def compressed_tensors_mx(ct, blocks: np.ndarray, fmt: str):
    """(scale bytes, codes, float32 output, MX mask) of compressed-tensors' MX weight scheme of
    ``fmt`` on float32 (n, 32) blocks (one row of n * 32 values, groups of 32): calculate_qparams
    from each group's min and max, quantize (the element values) and fake_quantize (the output).
    A non-finite scale (an Inf in the block: every output is NaN) is given as 0xFF; the MX mask is
    False for blocks holding a NaN (scale 2^-127, saturated elements and a NaN output: no MX
    encoding) and where the scale is not a power of two."""
    import torch

    args = ct["scheme"](CT_PRESETS[fmt], ["Linear"]).weights
    x = torch.from_numpy(blocks.reshape(1, -1).copy())
    groups = x.unflatten(-1, (len(blocks), 32))
    scale, zero = ct["qparams"](groups.amin(-1), groups.amax(-1), args)
    q = ct["quantize"](x, scale, zero, args).numpy().reshape(blocks.shape).astype(np.float64)
    out = ct["fake_quantize"](x, scale, zero, args).numpy().reshape(blocks.shape)
    scale = scale.numpy().astype(np.float64).reshape(-1)
    special = ~np.isfinite(scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.log2(np.where(special, 1.0, scale))
    mx = (special | (exponent == np.round(exponent)) & (exponent >= -127) & (exponent <= 127))
    mx &= ~np.isnan(blocks).any(axis=1)
    scales = np.where(special, 0xFF, np.where(mx, exponent + 127, 0)).astype(np.uint8)
    codes = element_codes(np.where(np.isfinite(q) & ~special[:, None], q, 0.0), fmt)
    return scales, codes, out, mx


def compressed_tensors_nvfp4(ct, tensor: np.ndarray):
    """(global scale gs, scale codes, element codes, float32 output) of compressed-tensors' NVFP4
    weight scheme on one float32 tensor of (n, 16) blocks (one row, groups of 16): generate_gparam
    from the tensor's min and max, calculate_qparams with it (UE4M3 block scales, as float32),
    quantize (the element values) and fake_quantize (the output). Scale codes: the float32 scales
    encoded by ml_dtypes float8_e4m3fn (exact values); element codes: the quantized values
    (exact E2M1 values) encoded by ml_dtypes float4_e2m1fn."""
    import torch

    args = ct["scheme"]("NVFP4", ["Linear"]).weights
    x = torch.from_numpy(tensor.reshape(1, -1).copy())
    gs = ct["gparam"](x.amin(), x.amax())
    groups = x.unflatten(-1, (len(tensor), 16))
    scale, zero = ct["qparams"](groups.amin(-1), groups.amax(-1), args, global_scale=gs)
    q = ct["quantize"](x, scale, zero, args, global_scale=gs).numpy().reshape(tensor.shape)
    out = ct["fake_quantize"](x, scale, zero, args, global_scale=gs).numpy().reshape(tensor.shape)
    scales = scale.numpy().astype(np.float32).reshape(-1).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    codes = q.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    return float(gs.numpy()[0]), scales, codes, out


QUARK_ELEMENTS = {
    "mxfp8_e4m3": "fp8_e4m3", "mxfp8_e5m2": "fp8_e5m2", "mxfp6_e3m2": "fp6_e3m2", "mxfp6_e2m3": "fp6_e2m3",
    "mxfp4_e2m1": "fp4", "mxint8": "int8",
}


def quark():
    """AMD Quark 0.13's fake-quantize op (``torch.ops.quark.non_scaled_fake_quantize``) and its scale
    helpers, or None if Quark is not installed. Only ``quark.torch.kernel`` is imported: the
    ``quark.torch`` package's own __init__ (export, ONNX, model loading) is bypassed by a bare
    package module on the real directory, and the Hugging Face stack is stubbed where missing.
    Its C++ extension JIT-builds on first import into TORCH_EXTENSIONS_DIR (.ci/run keeps it in a
    fixed directory, so the build happens once)."""
    import importlib.util
    import types

    if importlib.util.find_spec("quark") is None:
        return None
    missing = [root for root in _StubFinder.ROOTS if importlib.util.find_spec(root) is None]
    if missing:
        sys.meta_path.insert(0, _StubFinder())
    import quark as package

    if "quark.torch" not in sys.modules:
        bare = types.ModuleType("quark.torch")
        bare.__path__ = [str(Path(package.__path__[0]) / "torch")]
        sys.modules["quark.torch"] = bare
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import quark.torch.kernel  # noqa: F401  (registers torch.ops.quark)
        from quark.torch.quantization.utils import even_round, get_dtype_params
    import torch

    return {"op": torch.ops.quark.non_scaled_fake_quantize, "even_round": even_round, "params": get_dtype_params}


def quark_mx(q, blocks: np.ndarray, fmt: str, mode: str):
    """(scale exponents E as float64 (NaN for a NaN scale), float32 output) of Quark's MX fake
    quantization of float32 (n, 32) blocks: the output from the op, E from the library's own
    scale steps (fake_quantize_mx: even_round, or 2^(floor/ceil(float32 log2 amax) - emax), a
    zero scale replaced by float32 eps 2^-23), as log2 of the scale value."""
    import torch

    name = QUARK_ELEMENTS[fmt]
    x = torch.from_numpy(blocks.copy())
    out = q["op"](x, "mx", name, -1, 32, mode).numpy()
    amax = x.abs().amax(dim=-1, keepdim=True)
    _, _, emax = q["params"](name)
    if mode == "floor":
        scale = torch.pow(2, torch.floor(torch.log2(amax)) - emax)
    elif mode == "ceil":
        scale = torch.pow(2, torch.ceil(torch.log2(amax)) - emax)
    else:
        scale = q["even_round"](amax, name)
    scale = scale.masked_fill(scale == 0.0, torch.finfo(torch.float32).eps).numpy()[:, 0].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log2(scale), out


def quark_microexponent(q, blocks: np.ndarray, fmt: str, mode: str):
    """(scale bytes, microexponent bits, codes, float32 output) of Quark's MX6 or MX9 (``fmt``
    'mx6' / 'mx9') on float32 (n, 16) blocks: the output from ``non_scaled_fake_quantize(x, fmt,
    ..., 16, mode)``; the block exponent E, the sub-block shift bits (bit j: pair j) and the integer
    codes from ``non_scaled_real_quantize`` (Quark's own encoding, [E, packed bits, codes...] per
    block). Scale byte: E + 127 (E8M0); codes: sign bit (the float code's, so -0 keeps it) above the
    magnitude's m bits, m being Quark's own ``mantissa_bits`` of the format (contract 2.1 layout).
    Blocks holding NaN or Inf: only their output is meaningful (the library passes them through)."""
    import torch

    from quark.common.data_type import BaseMX6, BaseMX9

    m = {"mx6": BaseMX6, "mx9": BaseMX9}[fmt].mantissa_bits
    x = torch.from_numpy(blocks.copy())
    out = q["op"](x, fmt, "None", -1, 16, mode).numpy()
    real = torch.ops.quark.non_scaled_real_quantize(x, fmt, "None", -1, 16).numpy().reshape(len(blocks), 18)
    finite = np.isfinite(real)
    exponent = np.where(finite[:, 0], real[:, 0], 0).astype(np.int64)
    packed = np.where(finite[:, 1], real[:, 1], 0).astype(np.int64)
    subscales = ((packed[:, None] >> np.arange(8)) & 1).astype(np.uint8)
    values = np.where(finite[:, 2:], real[:, 2:], 0.0)
    codes = ((np.signbit(values).astype(np.int64) << m) | np.abs(values).astype(np.int64)).astype(np.uint8)
    return (exponent + 127).astype(np.uint8), subscales, codes, out


def compressed_tensors_nvfp4_checkpoint(ct, tensor: np.ndarray):
    """compressed-tensors' NVFP4 checkpoint of one float32 tensor of (n, 16) blocks (one row, as
    :func:`compressed_tensors_nvfp4`) and its decompression: (global scale gs, scale codes,
    element codes, float32 output, bfloat16 output as uint16 words). The codes are the
    checkpoint's own bytes: ``weight_scale`` (float8_e4m3fn, viewed as bytes) and the nibbles of
    ``weight_packed`` (low nibble first, as the library unpacks them); float32: the library's
    ``dequantize(x_q, scale, ..., global_scale=gs, dtype=float32)`` of its float32 quantize output;
    bfloat16: ``NVFP4PackedCompressor.decompress`` of the checkpoint (the weights a model loads)."""
    import torch
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.quantization import dequantize

    scheme = ct["scheme"]("NVFP4", ["Linear"])
    args = scheme.weights
    x = torch.from_numpy(tensor.reshape(1, -1).copy())
    gs = ct["gparam"](x.amin(), x.amax())
    groups = x.unflatten(-1, (len(tensor), 16))
    scale, zero = ct["qparams"](groups.amin(-1), groups.amax(-1), args, global_scale=gs)
    q = ct["quantize"](x, scale, zero, args, global_scale=gs)
    out32 = dequantize(q, scale, zero, args, dtype=torch.float32, global_scale=gs).numpy().reshape(tensor.shape)
    stored = NVFP4PackedCompressor.compress({"weight": x, "weight_scale": scale, "weight_global_scale": gs}, scheme)
    packed = stored["weight_packed"].numpy().reshape(-1)
    codes = np.stack([packed & 0x0F, packed >> 4], axis=1).reshape(tensor.shape).astype(np.uint8)
    scales = stored["weight_scale"].view(torch.uint8).numpy().reshape(-1)
    weight = NVFP4PackedCompressor.decompress(stored, scheme)["weight"]
    out16 = weight.view(torch.int16).numpy().view(np.uint16).reshape(tensor.shape)
    return float(gs.numpy()[0]), scales, codes, out32, out16
