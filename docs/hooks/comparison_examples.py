"""Where mxsim differs from ml_dtypes, torch, gfloat, torchao and microxcaling: the examples as data.

Each :class:`Example` holds the documented outputs (strings, shown on ``docs/comparison.md`` by the
``format_tables`` hook) and a ``run`` function that recomputes them with the installed libraries
and mxsim; ``tests/docs/test_docs_site.py`` asserts that ``run()`` returns exactly the documented strings.
The page also shows the source of every ``run`` function, so what is displayed is what is run.

microxcaling is not installable here (no release on the package index): its outputs come from
reading microsoft/microxcaling at 7bc4195 (see the reference notes, formats-and-datapath.md 1.7,
2.3, 4.5, trap T6/T10); only the mxsim side of those rows is run.

Versions the outputs were recorded with: ml_dtypes 0.6.0, gfloat 0.5.2, torch 2.13.0+cpu,
torchao 0.18.0.
"""

from __future__ import annotations

import inspect
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import mxsim

NOT_RUN = "from the source at 7bc4195, not run"

# --------------------------------------------------------------------------------------------------
# Output formatting shared by every example


def num(v) -> str:
    """A float as the tables show it: NaN, ±Inf, -0, or up to 6 significant digits."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    return f"{v:.6g}"


def cv(code, value, digits: int = 2) -> str:
    """A code and its value: 0x38 (1)."""
    return f"0x{int(code):0{digits}X} ({num(value)})"


def raises(fn: Callable[[], object]) -> str:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception type is the documented output
        return f"raises {type(e).__name__}"
    return "no exception"


def mx(x, fmt: str, **options) -> str:
    """An mxsim fast-path encode of one value, shown as code (value)."""
    code = mxsim.encode(np.asarray([x]), fmt, **options)[0]
    return cv(code, mxsim.decode(np.asarray([code]), fmt)[0])


def block(values, fmt: str, shown: int = 2, **options) -> str:
    """mxsim.quantize of one zero-padded float32 block: scale code and the first elements' codes."""
    k = mxsim.get_format(fmt).block_size
    x = np.zeros(k, np.float32)
    x[: len(values)] = values
    t = mxsim.quantize(x, fmt, **options)
    return block_text(t.scales.ravel()[0], t.codes.ravel()[:shown], t.dequantize(np.float64).ravel()[:shown])


def block_text(scale, codes, values) -> str:
    elements = ", ".join(cv(c, v) for c, v in zip(codes, values))
    return f"scale 0x{int(scale):02X}; {elements}"


# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    id: str
    library: str
    case: str
    input: str
    library_output: str
    mxsim_output: str
    run: Callable[[], dict]
    option: str | None = None  # a variant that is also run: the mxsim option matching the library, etc.
    option_result: str | None = None
    source: str = "run"  # "run", or NOT_RUN for microxcaling

    @property
    def option_output(self) -> str | None:
        if self.option is None:
            return None
        return f"{self.option}: {self.option_result}"

    def expected(self) -> dict:
        """What ``run()`` must return."""
        out = {"mxsim": self.mxsim_output}
        if self.source == "run":
            out["library"] = self.library_output
        if self.option is not None:
            out["option"] = self.option_result
        return out

    def status(self) -> str:
        return "run" if self.source == "run" else f"{self.library}: {self.source}; mxsim: run"

    def source_code(self) -> str:
        return textwrap.dedent(inspect.getsource(self.run))


# --------------------------------------------------------------------------------------------------
# ml_dtypes 0.6.0


def ml_double_rounding():
    import ml_dtypes

    x = np.array([1.0625 + 2**-40])  # float64, 2^-40 above the midpoint of 1 and 1.125
    a = x.astype(ml_dtypes.float8_e4m3fn)  # ml_dtypes rounds to float32 first (to 1.0625, the tie)
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": mx(x[0], "fp8_e4m3"),  # one rounding of the exact float64 value
        "option": mx(np.float32(x[0]), "fp8_e4m3"),  # round to float32 yourself first
    }


def ml_e4m3_overflow():
    import ml_dtypes

    a = np.array([500.0], np.float32).astype(ml_dtypes.float8_e4m3fn)
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": mx(500.0, "fp8_e4m3"),
        "option": mx(500.0, "fp8_e4m3", overflow="ieee"),
    }


def ml_e4m3_inf():
    import ml_dtypes

    a = np.array([np.inf], np.float32).astype(ml_dtypes.float8_e4m3fn)
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": mx(np.inf, "fp8_e4m3"),
        "option": mx(np.inf, "fp8_e4m3", overflow="ieee"),
    }


def ml_e5m2_overflow():
    import ml_dtypes

    a = np.array([61440.0], np.float32).astype(ml_dtypes.float8_e5m2)  # the tie above 57344
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": mx(61440.0, "fp8_e5m2"),
        "option": mx(61440.0, "fp8_e5m2", overflow="ieee"),
    }


def ml_fp4_nan():
    import ml_dtypes

    a = np.array([np.nan], np.float32).astype(ml_dtypes.float4_e2m1fn)
    return {
        "library": cv(a.view(np.uint8)[0], a[0], digits=1),
        "mxsim": raises(lambda: mxsim.encode(np.array([np.nan]), "fp4_e2m1")),
        "option": block([np.nan, 1.0], "mxfp4"),  # in a block: a NaN block (scale 0xFF)
    }


def ml_fp6_nan():
    import ml_dtypes

    a = np.array([np.nan, np.nan], np.float32)
    e2m3, e3m2 = a.astype(ml_dtypes.float6_e2m3fn), a.astype(ml_dtypes.float6_e3m2fn)
    return {
        "library": f"E2M3 {cv(e2m3.view(np.uint8)[0], e2m3[0])}, E3M2 {cv(e3m2.view(np.uint8)[0], e3m2[0])}",
        "mxsim": raises(lambda: mxsim.encode(a, "fp6_e2m3")),
    }


def ml_e8m0_zero():
    import ml_dtypes

    a = np.array([0.0], np.float32).astype(ml_dtypes.float8_e8m0fnu)
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": raises(lambda: mxsim.encode(np.array([0.0]), "e8m0")),
        "option": block([0.0], "mxfp8_e4m3", shown=1),  # an all-zero block gets scale 0x00 (2^-127)
    }


def ml_e8m0_negative():
    import ml_dtypes

    a = np.array([-1.0], np.float32).astype(ml_dtypes.float8_e8m0fnu)
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": raises(lambda: mxsim.encode(np.array([-1.0]), "e8m0")),
    }


def ml_e8m0_ties():
    import ml_dtypes

    a = np.array([1.5, 3.0, 0.75], np.float32)
    lib = a.astype(ml_dtypes.float8_e8m0fnu)
    codes = mxsim.encode(a, "e8m0")  # rne: with no mantissa bits the even neighbour is the larger
    return {
        "library": ", ".join(cv(c, v) for c, v in zip(lib.view(np.uint8), lib)),
        "mxsim": ", ".join(cv(c, v) for c, v in zip(codes, mxsim.decode(codes, "e8m0"))),
    }


def ml_e8m0_lowest_binade():
    import ml_dtypes

    x = np.array([1.25 * 2.0**-127], np.float32)  # nearer 2^-127 (0x00) than 2^-126 (0x01)
    a = x.astype(ml_dtypes.float8_e8m0fnu)
    return {"library": cv(a.view(np.uint8)[0], a[0]), "mxsim": mx(x[0], "e8m0")}


def ml_e8m0_overflow():
    import ml_dtypes

    x = np.array([1.75 * 2.0**127], np.float32)  # rounds to 2^128, beyond 0xFE (2^127)
    a = x.astype(ml_dtypes.float8_e8m0fnu)
    return {
        "library": cv(a.view(np.uint8)[0], a[0]),
        "mxsim": mx(x[0], "e8m0"),
        "option": mx(x[0], "e8m0", overflow="ieee"),
    }


# --------------------------------------------------------------------------------------------------
# torch 2.13 casts


def torch_e8m0_zero_negative():
    import torch

    t = torch.tensor([0.0, -1.0]).to(torch.float8_e8m0fnu)
    return {
        "library": ", ".join(cv(c, v) for c, v in zip(t.view(torch.uint8).tolist(), t.float().tolist())),
        "mxsim": raises(lambda: mxsim.encode(np.array([0.0]), "e8m0"))
        + ", "
        + raises(lambda: mxsim.encode(np.array([-1.0]), "e8m0")),
    }


def torch_e4m3_saturates():
    import torch

    t = torch.tensor([500.0, float("inf")]).to(torch.float8_e4m3fn)
    return {
        "library": ", ".join(cv(c, v) for c, v in zip(t.view(torch.uint8).tolist(), t.float().tolist())),
        "mxsim": mx(500.0, "fp8_e4m3") + ", " + mx(np.inf, "fp8_e4m3"),
    }


def torch_e5m2_overflow():
    import torch

    t = torch.tensor([61440.0]).to(torch.float8_e5m2)
    return {
        "library": cv(t.view(torch.uint8).item(), t.float().item()),
        "mxsim": mx(61440.0, "fp8_e5m2"),
        "option": mx(61440.0, "fp8_e5m2", overflow="ieee"),
    }


# --------------------------------------------------------------------------------------------------
# gfloat 0.5.2


def gfloat_ties_to_away():
    from gfloat import RoundMode, round_float
    from gfloat.formats import format_info_ocp_e4m3

    x = float.fromhex("0x1.fffffffffffffp-11")  # just below 2^-10, the midpoint of 0 and 2^-9
    return {
        "library": float.hex(float(round_float(format_info_ocp_e4m3, x, RoundMode.TiesToAway))),
        "mxsim": mx(x, "fp8_e4m3", rounding="rna"),
    }


def gfloat_log2_float32():
    from gfloat import compute_scale_amax

    amax = np.array([8 - 2**-21], np.float32)  # the float32 just below 8; float32 log2 gives 3.0
    return {
        "library": num(compute_scale_amax(2, amax)),  # emax_elem of E2M1 is 2
        "mxsim": block(amax, "mxfp4", shown=1),
        "option": num(compute_scale_amax(2, amax.astype(np.float64))),  # gfloat on float64 input
    }


def gfloat_int8_minus_two():
    from gfloat import round_float
    from gfloat.formats import format_info_ocp_int8

    return {
        "library": num(round_float(format_info_ocp_int8, -1.999)),
        "mxsim": mx(-1.999, "int8"),
        "option": mx(-1.999, "int8", int8_allow_neg2=True),
    }


def gfloat_inf_in_block():
    from gfloat import compute_scale_amax, encode_block
    from gfloat.formats import format_info_mxfp8_e4m3

    v = np.array([np.inf, 1.0] + [0.0] * 30)
    scale = compute_scale_amax(8, v)
    codes = list(encode_block(format_info_mxfp8_e4m3, scale, v / scale))  # scale code first
    return {
        "library": f"scale 0x{codes[0]:02X}; elements 0x{codes[1]:02X}, 0x{codes[2]:02X}",
        "mxsim": block([np.inf, 1.0], "mxfp8_e4m3"),
        "option": block([np.inf, 1.0], "mxfp8_e4m3", inf_policy="saturate"),
    }


def gfloat_nan_fp4():
    from gfloat import round_float
    from gfloat.formats import format_info_ocp_e2m1

    return {
        "library": raises(lambda: round_float(format_info_ocp_e2m1, float("nan"))),
        "mxsim": raises(lambda: mxsim.encode(np.array([np.nan]), "fp4_e2m1")),
    }


def gfloat_zero_block():
    from gfloat import compute_scale_amax

    return {
        "library": float.hex(float(compute_scale_amax(8, np.zeros(32)))),  # its docstring says 1.0
        "mxsim": block([0.0], "mxfp8_e4m3", shown=1),
    }


# --------------------------------------------------------------------------------------------------
# torchao 0.18


def _torchao_block(values, elem_dtype, mode: str, shown: int = 2):
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx

    x = torch.zeros(1, 32)
    x[0, : len(values)] = torch.tensor(values, dtype=torch.float32)
    scale, data = to_mx(x, elem_dtype, 32, getattr(ScaleCalculationMode, mode))
    return scale.view(torch.uint8).item(), data.view(torch.uint8)[0, :shown].tolist()


def torchao_fp4_fp6_nan():
    import torch
    from torchao.prototype.custom_fp_utils import _f32_to_floatx_unpacked

    nan = torch.tensor([float("nan")])
    codes = [_f32_to_floatx_unpacked(nan, e, m).item() for e, m in [(2, 1), (2, 3), (3, 2)]]
    return {
        "library": "E2M1 0x{:X}, E2M3 0x{:02X}, E3M2 0x{:02X} (each 1.5)".format(*codes),
        "mxsim": raises(lambda: mxsim.encode(np.array([np.nan]), "fp4_e2m1")),
        "option": block([np.nan, 1.0], "mxfp4"),
    }


def torchao_floor_inf():
    import torch

    scale, codes = _torchao_block([float("inf"), 1.0], torch.float8_e4m3fn, "FLOOR")
    return {
        "library": f"scale 0x{scale:02X}; elements 0x{codes[0]:02X}, 0x{codes[1]:02X}",
        "mxsim": block([np.inf, 1.0], "mxfp8_e4m3"),
        "option": block([np.inf, 1.0], "mxfp8_e4m3", inf_policy="saturate"),
    }


def torchao_rceil_inf():
    import torch

    scale, codes = _torchao_block([float("inf"), 1.0], torch.float8_e4m3fn, "RCEIL")
    return {
        "library": f"scale 0x{scale:02X}; elements 0x{codes[0]:02X}, 0x{codes[1]:02X}",
        "mxsim": block([np.inf, 1.0], "mxfp8_e4m3", scale_rule="rceil"),
        "option": block([np.inf, 1.0], "mxfp8_e4m3", scale_rule="rceil", inf_policy="saturate"),
    }


def torchao_floor_subnormal():
    import ml_dtypes
    import torch

    scale, codes = _torchao_block([1e-40], torch.float8_e4m3fn, "FLOOR", shown=1)
    element = np.array(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)[0]
    return {
        "library": block_text(scale, codes, [element * 2.0 ** (scale - 127)]),  # divides by 2^-126
        "mxsim": block([1e-40], "mxfp8_e4m3", shown=1),
    }


def torchao_rceil_subnormal():
    import torch

    scale, codes = _torchao_block([1e-40], torch.float8_e4m3fn, "RCEIL", shown=1)
    return {
        "library": block_text(scale, codes, [0.0]),  # reciprocal 1.0: the data stays unscaled
        "mxsim": block([1e-40], "mxfp8_e4m3", shown=1, scale_rule="rceil"),
    }


def torchao_floor_clamped_scale():
    import ml_dtypes
    import torch

    scale, codes = _torchao_block([2.0**-120], torch.float8_e4m3fn, "FLOOR", shown=1)
    element = np.array(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)[0]
    return {
        # torchao clamps the divisor to 2^-126 (the smallest normal fp32) but stores code 0 (2^-127)
        "library": block_text(scale, codes, [element * 2.0 ** (scale - 127)]),
        "mxsim": block([2.0**-120], "mxfp8_e4m3", shown=1),
    }


def _scale_rule_example(values, elem_dtype_name: str, fmt: str, mode: str):
    import torch

    scale, codes = _torchao_block(values, getattr(torch, elem_dtype_name), mode, shown=len(values))
    if fmt == "mxfp4":  # torchao packs two FP4 codes per byte, element 0 in the low nibble
        codes = [codes[0] & 0xF, codes[0] >> 4, codes[1] & 0xF][: len(values)]
    t = mxsim.quantize(np.pad(np.array(values, np.float32), (0, 32 - len(values))), fmt, scale_rule=mode.lower())
    mine = [int(c) for c in t.codes[: len(values)]]
    same = scale == int(t.scales[0]) and codes == mine
    return {
        "library": f"scale 0x{scale:02X}; " + " ".join(f"0x{c:02X}" for c in codes),
        "mxsim": ("same" if same else "differs: ") + ("" if same else f"0x{int(t.scales[0]):02X} {mine}"),
    }


def torchao_scale_rules_fp4():
    rows = [_scale_rule_example([7.0, 1.0, 0.3], "float4_e2m1fn_x2", "mxfp4", m) for m in ("FLOOR", "CEIL", "EVEN", "RCEIL")]
    return {
        "library": "; ".join(f"{m}: {r['library']}" for m, r in zip(("FLOOR", "CEIL", "EVEN", "RCEIL"), rows)),
        "mxsim": "; ".join(r["mxsim"] for r in rows),
    }


def torchao_scale_rules_e4m3():
    modes = ("FLOOR", "CEIL", "EVEN", "RCEIL")
    rows = [_scale_rule_example([496.0, 1.0], "float8_e4m3fn", "mxfp8_e4m3", m) for m in modes]
    return {
        "library": "; ".join(f"{m}: {r['library']}" for m, r in zip(modes, rows)),
        "mxsim": "; ".join(r["mxsim"] for r in rows),
    }


# --------------------------------------------------------------------------------------------------
# microxcaling (source read, not run: only the mxsim side runs)


def mxc_rounding():
    return {
        "mxsim": block([4.0, 2.5], "mxfp4"),
        "option": block([4.0, 2.5], "mxfp4", rounding="rna"),
    }


def mxc_int8():
    return {"mxsim": block([-1.999], "mxint8", shown=1)}


def mxc_log2():
    import torch

    amax = np.float32(8 - 2**-21)
    log2 = torch.log2(torch.tensor([amax])).item()  # the float32 log2 microxcaling's Python path uses
    return {"mxsim": block([amax], "mxfp4", shown=1) + f" (float32 torch.log2 gives {num(log2)})"}


def mxc_block_size():
    t = mxsim.quantize(np.ones(64, np.float32), "mxfp8_e4m3")
    return {"mxsim": f"{t.scales.size} scales for 64 values"}


def mxc_inf():
    return {"mxsim": block([np.inf, 1.0], "mxfp8_e4m3")}


EXAMPLES: list[Example] = [
    # ml_dtypes
    Example("D1", "ml_dtypes", "float64 → FP8 E4M3 cast (double rounding)", "`1.0625 + 2**-40` (float64)",
            "0x38 (1)", "0x39 (1.125)", ml_double_rounding,
            "mxsim, float32 input: `encode(np.float32(x))`", "0x38 (1)"),
    Example("D2", "ml_dtypes", "E4M3 overflow", "`500.0`", "0x7F (NaN)", "0x7E (448)", ml_e4m3_overflow,
            "mxsim `overflow=\"ieee\"`", "0x7F (NaN)"),
    Example("D3", "ml_dtypes", "E4M3 Inf input", "`inf`", "0x7F (NaN)", "0x7E (448)", ml_e4m3_inf,
            "mxsim `overflow=\"ieee\"`", "0x7F (NaN)"),
    Example("D4", "ml_dtypes", "E5M2 overflow (the tie above max)", "`61440.0`", "0x7C (+Inf)", "0x7B (57344)",
            ml_e5m2_overflow, "mxsim `overflow=\"ieee\"`", "0x7C (+Inf)"),
    Example("D5", "ml_dtypes", "NaN → FP4 E2M1", "`nan`", "0x8 (-0)", "raises ValueError", ml_fp4_nan,
            "mxsim, in a block: `quantize([nan, 1, 0, …], \"mxfp4\")`", "scale 0xFF; 0x00 (NaN), 0x00 (NaN)"),
    Example("D6", "ml_dtypes", "NaN → FP6", "`nan`", "E2M3 0x20 (-0), E3M2 0x20 (-0)", "raises ValueError",
            ml_fp6_nan),
    Example("D7", "ml_dtypes", "0 → E8M0", "`0.0`", "0xFF (NaN)", "raises ValueError", ml_e8m0_zero,
            "mxsim, an all-zero block", "scale 0x00; 0x00 (0)"),
    Example("D8", "ml_dtypes", "negative → E8M0", "`-1.0`", "0xFF (NaN)", "raises ValueError", ml_e8m0_negative),
    Example("D9", "ml_dtypes", "E8M0 ties (no difference)", "`1.5, 3.0, 0.75`", "0x80 (2), 0x81 (4), 0x7F (1)",
            "0x80 (2), 0x81 (4), 0x7F (1)", ml_e8m0_ties),
    Example("D10", "ml_dtypes", "E8M0 between 2^-127 and 2^-126", "`1.25 * 2**-127` (float32)",
            "0x01 (1.17549e-38)", "0x00 (5.87747e-39)", ml_e8m0_lowest_binade),
    Example("D11", "ml_dtypes", "E8M0 overflow", "`1.75 * 2**127` (float32)", "0xFF (NaN)", "0xFE (1.70141e+38)",
            ml_e8m0_overflow, "mxsim `overflow=\"ieee\"`", "0xFF (NaN)"),
    # torch
    Example("T1", "torch", "0 and negatives → `float8_e8m0fnu`", "`0.0, -1.0`", "0x00 (5.87747e-39), 0x7F (1)",
            "raises ValueError, raises ValueError", torch_e8m0_zero_negative),
    Example("T2", "torch", "`float8_e4m3fn` overflow and Inf (no difference)", "`500.0, inf`", "0x7E (448), 0x7E (448)",
            "0x7E (448), 0x7E (448)", torch_e4m3_saturates),
    Example("T3", "torch", "`float8_e5m2` overflow", "`61440.0`", "0x7C (+Inf)", "0x7B (57344)", torch_e5m2_overflow,
            "mxsim `overflow=\"ieee\"`", "0x7C (+Inf)"),
    # gfloat
    Example("G1", "gfloat", "`round_float` TiesToAway just below a midpoint (E4M3)", "`0x1.fffffffffffffp-11` (float64)",
            "0x1.0000000000000p-9", "0x00 (0)", gfloat_ties_to_away),
    Example("G2", "gfloat", "`compute_scale_amax` on a float32 block (trap T10)", "amax `np.float32(8 - 2**-21)`, MXFP4",
            "2", "scale 0x7F; 0x07 (6)", gfloat_log2_float32,
            "gfloat, the same amax as float64", "1"),
    Example("G3", "gfloat", "MXINT8 `-1.999`", "`-1.999`", "-2", "0x81 (-1.98438)", gfloat_int8_minus_two,
            "mxsim `int8_allow_neg2=True`", "0x80 (-2)"),
    Example("G4", "gfloat", "±Inf in an MXFP8 E4M3 block", "`[inf, 1, 0, …]`", "scale 0xFE; elements 0x7E, 0x00",
            "scale 0xFF; 0x7F (NaN), 0x7F (NaN)", gfloat_inf_in_block,
            "mxsim `inf_policy=\"saturate\"`", "scale 0xF6; 0x7E (2.97747e+38), 0x00 (0)"),
    Example("G5", "gfloat", "NaN → FP4 (no difference)", "`nan`", "raises ValueError", "raises ValueError",
            gfloat_nan_fp4),
    Example("G6", "gfloat", "all-zero block (no difference)", "32 zeros", "0x1.0000000000000p-127",
            "scale 0x00; 0x00 (0)", gfloat_zero_block),
    # torchao
    Example("A1", "torchao", "NaN → FP4/FP6 element cast (`_f32_to_floatx_unpacked`)", "`nan`",
            "E2M1 0x3, E2M3 0x0C, E3M2 0x0E (each 1.5)", "raises ValueError", torchao_fp4_fp6_nan,
            "mxsim, in a block: `quantize([nan, 1, 0, …], \"mxfp4\")`", "scale 0xFF; 0x00 (NaN), 0x00 (NaN)"),
    Example("A2", "torchao", "FLOOR, ±Inf in an E4M3 block", "`[inf, 1, 0, …]`", "scale 0xF7; elements 0x7E, 0x00",
            "scale 0xFF; 0x7F (NaN), 0x7F (NaN)", torchao_floor_inf,
            "mxsim `inf_policy=\"saturate\"`", "scale 0xF6; 0x7E (2.97747e+38), 0x00 (0)"),
    Example("A3", "torchao", "RCEIL, ±Inf in an E4M3 block", "`[inf, 1, 0, …]`", "scale 0xFE; elements 0x7E, 0x00",
            "scale 0xFF; 0x7F (NaN), 0x7F (NaN)", torchao_rceil_inf,
            "mxsim `scale_rule=\"rceil\", inf_policy=\"saturate\"`", "scale 0xF7; 0x7E (5.95494e+38), 0x00 (0)"),
    Example("A4", "torchao", "FLOOR, FP32-subnormal block max (E4M3)", "`[1e-40, 0, …]` (float32)",
            "scale 0x00; 0x04 (4.59177e-41)", "scale 0x00; 0x09 (1.03315e-40)", torchao_floor_subnormal),
    Example("A5", "torchao", "RCEIL, FP32-subnormal block max (E4M3)", "`[1e-40, 0, …]` (float32)",
            "scale 0x00; 0x00 (0)", "scale 0x00; 0x09 (1.03315e-40)", torchao_rceil_subnormal),
    Example("A6", "torchao", "the four scale modes, MXFP4 (no difference)", "`[7, 1, 0.3, 0, …]`",
            "FLOOR: scale 0x7F; 0x07 0x02 0x01; CEIL: scale 0x80; 0x06 0x01 0x00; "
            "EVEN: scale 0x80; 0x06 0x01 0x00; RCEIL: scale 0x80; 0x06 0x01 0x00",
            "same; same; same; same", torchao_scale_rules_fp4),
    Example("A7", "torchao", "the four scale modes, MXFP8 E4M3 (no difference)", "`[496, 1, 0, …]`",
            "FLOOR: scale 0x7F; 0x7E 0x38; CEIL: scale 0x80; 0x78 0x30; EVEN: scale 0x80; 0x78 0x30; "
            "RCEIL: scale 0x80; 0x78 0x30", "same; same; same; same", torchao_scale_rules_e4m3),
    Example("A8", "torchao", "FLOOR, a normal block whose scale clamps to 0x00 (E4M3)", "`[2**-120, 0, …]` (float32)",
            "scale 0x00; 0x68 (3.76158e-37)", "scale 0x00; 0x70 (7.52316e-37)", torchao_floor_clamped_scale),
    # microxcaling
    Example("X1", "microxcaling", "element rounding default (`round=\"nearest\"`: half away from zero)",
            "MXFP4 block `[4, 2.5, 0, …]`", "2.5 → 3", "scale 0x7F; 0x06 (4), 0x04 (2)", mxc_rounding,
            "mxsim `rounding=\"rna\"`", "scale 0x7F; 0x06 (4), 0x05 (3)", source=NOT_RUN),
    Example("X2", "microxcaling", "MXINT8 emulated as sign-magnitude (no difference)", "MXINT8 block `[-1.999, 0, …]`",
            "-1.984375 (clamped to ±127/64)", "scale 0x7F; 0x81 (-1.98438)", mxc_int8, source=NOT_RUN),
    Example("X3", "microxcaling", "shared exponent from float32 `torch.log2` (trap T10)",
            "MXFP4 block, amax `np.float32(8 - 2**-21)`", "shared exponent 3 - 2 = 1 (scale 2^1)",
            "scale 0x7F; 0x07 (6) (float32 torch.log2 gives 3)", mxc_log2, source=NOT_RUN),
    Example("X4", "microxcaling", "default `block_size=0`", "64 values along the block axis",
            "one shared exponent for the whole axis", "2 scales for 64 values", mxc_block_size, source=NOT_RUN),
    Example("X5", "microxcaling", "±Inf in a block (no difference)", "`[inf, 1, 0, …]`",
            "shared exponent NaN: the whole block NaN", "scale 0xFF; 0x7F (NaN), 0x7F (NaN)", mxc_inf,
            source=NOT_RUN),
]
