"""The worked blocks of the profile pages (docs/profiles/*.md), as data.

Each :class:`ProfileExample` is one profile's worked block (or casts): the inputs, and the
outputs of mxsim with its defaults and with the profile, as the pages show them. The
``format_tables`` hook computes the outputs with mxsim when the site is built and refuses to build
(so ``mkdocs build --strict`` and ``tests/docs/test_docs_site.py`` fail) if they differ from the strings
recorded here; ``tests/options/test_profiles_against_peers.py`` runs them too. That the profile's output is the peer's
is what ``tests/options/test_profiles_against_peers.py`` proves against the peer itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import mxsim
from comparison_examples import num  # the pages' one way of showing a float
from mxsim.options.profiles import get_profile


def block(values, fmt: str, shown: int, **options) -> str:
    """mxsim.quantize of one zero-padded float32 block: the scale byte, then the first elements
    as code (decoded value)."""
    k = mxsim.get_format(fmt).block_size
    x = np.zeros(k, np.float32)
    x[: len(values)] = values
    t = mxsim.quantize(x, fmt, **options)
    values = t.dequantize(np.float64).ravel()
    elements = ", ".join(f"0x{int(c):02X} ({num(v)})" for c, v in zip(t.codes.ravel()[:shown], values[:shown]))
    return f"scale 0x{int(t.scales.ravel()[0]):02X}; {elements}"


def casts(values, fmt: str, **options) -> str:
    """mxsim.encode of float32 values: code (decoded value) each."""
    codes = mxsim.encode(np.array(values, np.float32), fmt, **options)
    decoded = mxsim.decode(codes, fmt)
    return ", ".join(f"0x{int(c):02X} ({num(v)})" for c, v in zip(codes, decoded))


@dataclass(frozen=True)
class ProfileExample:
    """One worked row: ``inputs`` (text shown), ``values`` (float32 inputs), ``fmt``, ``shown``
    elements, and the recorded ``default`` and ``profile`` outputs (and a ``variant``'s)."""

    profile: str
    fmt: str
    inputs: str
    values: tuple
    default: str
    with_profile: str
    shown: int = 2
    variant: dict | None = None  # other mxsim options, shown for contrast (e.g. the exact rule)
    variant_output: str | None = None

    def run(self) -> dict:
        """The outputs, computed now: {'default': ..., 'profile': ...} (and 'variant')."""
        profile = get_profile(self.profile)
        if profile.kind == "cast":
            return {"default": casts(self.values, self.fmt), "profile": casts(self.values, self.fmt, profile=self.profile)}
        out = {
            "default": block(self.values, self.fmt, self.shown),
            "profile": block(self.values, self.fmt, self.shown, profile=self.profile),
        }
        if self.variant is not None:
            out["variant"] = block(self.values, self.fmt, self.shown, **self.variant)
        return out

    def expected(self) -> dict:
        out = {"default": self.default, "profile": self.with_profile}
        if self.variant is not None:
            out["variant"] = self.variant_output
        return out


INF = float("inf")
NAN = float("nan")

EXAMPLES = [
    ProfileExample(
        "torchao_0_18_floor", "mxfp8_e4m3", "`[inf, 1, 0, …]`", (INF, 1.0),
        "scale 0xFF; 0x7F (NaN), 0x7F (NaN)", "scale 0xF7; 0x7E (5.95494e+38), 0x00 (0)",
    ),
    ProfileExample(
        "torchao_0_18_floor", "mxfp8_e4m3", "`[2**-120, 2**-125, 0, …]`", (2.0**-120, 2.0**-125),
        "scale 0x00; 0x70 (7.52316e-37), 0x48 (2.35099e-38)", "scale 0x00; 0x68 (3.76158e-37), 0x40 (1.17549e-38)",
    ),
    ProfileExample(
        "torchao_0_18_rceil", "mxfp8_e4m3", "`[7168 + 2**-11, 1, 0, …]` (448 × 16, one float32 step up)",
        (7168.0 + 2.0**-11, 1.0),
        "scale 0x83; 0x7E (7168), 0x18 (1)", "scale 0x83; 0x7E (7168), 0x18 (1)",
        variant={"scale_rule": "rceil"}, variant_output="scale 0x84; 0x76 (7168), 0x10 (1)",
    ),
    ProfileExample(
        "torchao_0_18_rceil", "mxfp8_e4m3", "`[1e-38, 2**-127, 0, …]`", (1e-38, 2.0**-127),
        "scale 0x00; 0x3E (1.02856e-38), 0x38 (5.87747e-39)", "scale 0x00; 0x00 (0), 0x00 (0)",
    ),
    ProfileExample(
        "gfloat_0_5", "mxfp8_e4m3", "`[inf, 1, 0, …]`", (INF, 1.0),
        "scale 0xFF; 0x7F (NaN), 0x7F (NaN)", "scale 0xFE; 0x7E (7.62233e+40), 0x00 (0)",
    ),
    ProfileExample(
        "gfloat_0_5", "mxint8", "`[-1.999, 0.5, 0, …]`", (-1.999, 0.5),
        "scale 0x7F; 0x81 (-1.98438), 0x20 (0.5)", "scale 0x7F; 0x80 (-2), 0x20 (0.5)",
    ),
    ProfileExample(
        "ml_dtypes_0_6", "fp8_e4m3", "`500, inf, -1000, 448` (float32)", (500.0, INF, -1000.0, 448.0),
        "0x7E (448), 0x7E (448), 0xFE (-448), 0x7E (448)", "0x7F (NaN), 0x7F (NaN), 0xFF (NaN), 0x7E (448)",
    ),
    ProfileExample(
        "ml_dtypes_0_6", "fp8_e5m2", "`61440, -inf, 57344` (float32)", (61440.0, -INF, 57344.0),
        "0x7B (57344), 0xFB (-57344), 0x7B (57344)", "0x7C (+Inf), 0xFC (-Inf), 0x7B (57344)",
    ),
    ProfileExample(
        "tosa_1_1", "mxfp8_e4m3", "`[500, 1, 0, …]`", (500.0, 1.0),
        "scale 0x7F; 0x7E (448), 0x38 (1)", "scale 0x80; 0x78 (512), 0x30 (1)",
    ),
    ProfileExample(
        "idma_v0_7", "mxfp8_e5m2", "`[3, nan, -inf, 2**-149, -1, 0, …]`", (3.0, NAN, -INF, 2.0**-149, -1.0),
        "scale 0xFF; 0x7E (NaN), 0x7E (NaN), 0x7E (NaN), 0x7E (NaN), 0x7E (NaN)",
        "scale 0xF2; 0x7A (3), 0x7D (NaN), 0xFB (-3.5), 0x00 (0), 0xF4 (-1)", shown=5,
    ),
    ProfileExample(
        "microxcaling_nearest", "mxfp8_e4m3", "`[256 - 2**-15, 1, 0, …]` (float32 0x437FFFFE)", (256 - 2.0**-15, 1.0),
        "scale 0x7E; 0x7E (224), 0x40 (1)", "scale 0x7F; 0x78 (256), 0x38 (1)",
    ),
    ProfileExample(
        "microxcaling_nearest", "mxfp8_e4m3", "`[2**-14, 0x2F7FFFFF, -0, 0, …]` (float32)",
        (2.0**-14, float(np.uint32(0x2F7FFFFF).view(np.float32)), -0.0),
        "scale 0x69; 0x78 (6.10352e-05), 0x00 (0), 0x80 (-0)",
        "scale 0x69; 0x78 (6.10352e-05), 0x01 (4.65661e-10), 0x00 (0)",
        shown=3, variant={"rounding": "rna"}, variant_output="scale 0x69; 0x78 (6.10352e-05), 0x00 (0), 0x80 (-0)",
    ),
    ProfileExample(
        "microxcaling_even", "mxint8", "`[0, 0, …]`", (), "scale 0x00; 0x00 (0), 0x00 (0)",
        "scale 0x01; 0x00 (0), 0x00 (0)",
    ),
    ProfileExample(
        "microxcaling_floor", "mxfp8_e4m3", "`[448, 256 - 2**-15, 0, …]`", (448.0, 256 - 2.0**-15),
        "scale 0x7F; 0x7E (448), 0x78 (256)", "scale 0x7F; 0x7E (448), 0x76 (224)",
        variant={"rounding": "rtz"}, variant_output="scale 0x7F; 0x7E (448), 0x77 (240)",
    ),
    ProfileExample(
        "neural_compressor_3_10_nearest", "mxfp8_e4m3", "`[256 - 2**-15, 1, 0, …]`", (256 - 2.0**-15, 1.0),
        "scale 0x7E; 0x7E (224), 0x40 (1)", "scale 0x7F; 0x78 (256), 0x38 (1)",
    ),
    ProfileExample(
        "neural_compressor_3_10_even", "mxint8", "`[0, 0, …]`", (), "scale 0x00; 0x00 (0), 0x00 (0)",
        "scale 0x01; 0x00 (0), 0x00 (0)",
    ),
    ProfileExample(
        "neural_compressor_3_10_floor", "mxfp8_e4m3", "`[448, 256 - 2**-15, 0, …]`", (448.0, 256 - 2.0**-15),
        "scale 0x7F; 0x7E (448), 0x78 (256)", "scale 0x7F; 0x7E (448), 0x76 (224)",
    ),
    ProfileExample(
        "brevitas_0_13", "mxint8", "`[1.5, -1.5, 0, …]`", (1.5, -1.5),
        "scale 0x7F; 0x60 (1.5), 0xA0 (-1.5)", "scale 0x7E; 0x7F (0.992188), 0x80 (-1)",
    ),
    ProfileExample(
        "brevitas_0_13", "mxfp8_e4m3", "`[256 - 2**-15, 1, 0, …]`", (256 - 2.0**-15, 1.0),
        "scale 0x7E; 0x7E (224), 0x40 (1)", "scale 0x7F; 0x78 (256), 0x38 (1)",
    ),
    ProfileExample(
        "compressed_tensors_0_20", "mxfp8_e4m3", "`[448, 1, 0, …]`", (448.0, 1.0),
        "scale 0x7F; 0x7E (448), 0x38 (1)", "scale 0x80; 0x76 (448), 0x30 (1)",
        variant={"scale_rule": "even"}, variant_output="scale 0x7F; 0x7E (448), 0x38 (1)",
    ),
    ProfileExample(
        "compressed_tensors_0_20", "mxfp4_e2m1", "`[2**100, -2**-60, -2**90, -0, 0, …]`",
        (2.0**100, -(2.0**-60), -(2.0**90), -0.0),
        "scale 0xE1; 0x06 (1.26765e+30), 0x08 (-0), 0x08 (-0), 0x08 (-0)",
        "scale 0xE1; 0x06 (1.26765e+30), 0x00 (0), 0x08 (-0), 0x00 (0)", shown=4,
    ),
    ProfileExample(
        "quark_0_13", "mxfp4_e2m1", "`[6, -0.2, 0, …]`", (6.0, -0.2),
        "scale 0x7F; 0x07 (6), 0x08 (-0)", "scale 0x7F; 0x07 (6), 0x00 (0)",
    ),
    ProfileExample(
        "quark_0_13", "mxint8", "`[2 - 2**-7, 0, …]`", (2 - 2.0**-7,),
        "scale 0x7F; 0x7F (1.98438)", "scale 0x7F; 0x7F (1.98438)", shown=1,
        variant={"scale_rule": "even"}, variant_output="scale 0x80; 0x40 (2)",
    ),
    ProfileExample(
        "quark_0_13", "mxint8", "`[2**-140, 0, …]`", (2.0**-140,),
        "scale 0x00; 0x00 (0)", "scale 0x07; 0x00 (0)", shown=1,
    ),
    ProfileExample(  # MX6: -0 and the fp32 subnormal read as +0; -2^-126 rounds to zero from a nonzero value: -0
        "quark_0_13", "mx6", "`[2**127, -2**-126, -0, -1e-40, 0, …]`", (2.0**127, -(2.0**-126), -0.0, -1e-40),
        "scale 0xFE; 0x08 (1.70141e+38), 0x10 (-0), 0x10 (-0), 0x10 (-0)",
        "scale 0xFE; 0x08 (1.70141e+38), 0x10 (-0), 0x00 (0), 0x00 (0)", shown=4,
    ),
    ProfileExample(  # MX9: the same signs at 7 magnitude bits; flush_subnormal_inputs keeps them (zeros of their sign)
        "quark_0_13", "mx9", "`[1, -0.3, -0, -1e-40, 0, …]`", (1.0, -0.3, -0.0, -1e-40),
        "scale 0x7F; 0x40 (1), 0x93 (-0.296875), 0x80 (-0), 0x80 (-0)",
        "scale 0x7F; 0x40 (1), 0x93 (-0.296875), 0x00 (0), 0x00 (0)", shown=4,
        variant={"flush_subnormal_inputs": True},
        variant_output="scale 0x7F; 0x40 (1), 0x93 (-0.296875), 0x80 (-0), 0x80 (-0)",
    ),
    ProfileExample(  # float32 log2(256 - 2^-15) rounds to 8.0: the floor is one binade above the exact rule's
        "quark_0_13_floor", "mxfp8_e4m3", "`[256 - 2**-15, 1, 0, …]`", (256 - 2.0**-15, 1.0),
        "scale 0x7E; 0x7E (224), 0x40 (1)", "scale 0x7F; 0x78 (256), 0x38 (1)",
    ),
    ProfileExample(  # float32 log2(2^10 (1 + 2^-23)) rounds to 10.0: its ceiling is 10, the exact one 11
        "quark_0_13_ceil", "mxfp8_e4m3", "`[2**10 + 2**-13, 0, …]`", (2.0**10 + 2.0**-13,),
        "scale 0x81; 0x78 (1024)", "scale 0x81; 0x78 (1024)", shown=1,
        variant={"scale_rule": "ceil"}, variant_output="scale 0x82; 0x70 (1024)",
    ),
]


def examples_of(profile: str) -> list[ProfileExample]:
    return [e for e in EXAMPLES if e.profile == profile]
