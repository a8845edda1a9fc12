"""The options layer: each option is defined once (mxsim.options), and the docs tables, the CLI
flags and the manifests cover exactly the defined options."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import mxsim
from mxsim.cli import build_parser
from mxsim.golden import generate, suite_from_spec
from mxsim.options import OPTION_CLASSES, Accumulator, DequantizeOptions, LayoutOptions, QuantizeOptions
from mxsim.options.spec import options_of

ROOT = Path(__file__).resolve().parents[2]
# CLI flags of these commands that are not options of mxsim.options (operands, files, presets)
NOT_OPTIONS = {
    # --source: EncodeOptions.source, the input type; --profile: a bundle of options (mxsim.options.profiles)
    "quantize": {"--format", "--axis", "--rand-bits", "--source", "--profile"},
    "dot": {"--preset", "--details", "--outer", "--c"},
    "dequantize": {"--dtype", "--profile"},
}


def _hook():
    """docs/hooks/format_tables.py, loaded as MkDocs loads it (its folder on sys.path while it
    imports its sibling comparison_examples)."""
    hooks = ROOT / "docs" / "hooks"
    spec = importlib.util.spec_from_file_location("_format_tables_under_test", hooks / "format_tables.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(hooks))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(hooks))
    return module


def _flags(command: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return {s for a in sub._actions for s in a.option_strings if s.startswith("--") and not s.startswith("--no-")} - {
        "--help"
    }


def _option_flags(*classes) -> set[str]:
    return {"--" + o.name.replace("_", "-") for cls in classes for o in options_of(cls) if o.cli}


@pytest.mark.parametrize("kind", sorted(OPTION_CLASSES))
def test_every_option_has_a_definition(kind):
    for definition in options_of(OPTION_CLASSES[kind]):
        assert definition.description and not definition.description.endswith("."), definition.name
        assert re.fullmatch(r"\d(\.\d)?(, \d(\.\d)?)*", definition.section), (definition.name, definition.section)
        definition.check(definition.default)  # a default is always allowed


@pytest.mark.parametrize("kind", sorted(OPTION_CLASSES))
def test_docs_tables_cover_exactly_the_options(kind):
    assert f"<!-- mxsim:options {kind} -->" in (ROOT / "docs" / "numerics.md").read_text()
    rows = _hook().render_options(kind).splitlines()[2:]
    names = [re.match(r"\| `([a-z0-9_]+)` \|", row).group(1) for row in rows]
    assert names == [o.name for o in options_of(OPTION_CLASSES[kind])]


@pytest.mark.parametrize("command,classes", [
    ("quantize", (QuantizeOptions, LayoutOptions)), ("dot", (Accumulator,)), ("dequantize", (DequantizeOptions,)),
])
def test_cli_flags_cover_exactly_the_options(command, classes):
    assert _flags(command) - NOT_OPTIONS[command] == _option_flags(*classes)


def test_manifests_and_files_record_every_option(tmp_path):
    quantize_dir = generate(suite_from_spec("quantize", block="mxfp8_e4m3"), tmp_path / "q")
    dot_dir = generate(suite_from_spec("dot", block_a="mxfp8_e4m3"), tmp_path / "d")
    quantize_manifest = json.loads((Path(quantize_dir) / "manifest.json").read_text())
    dot_manifest = json.loads((Path(dot_dir) / "manifest.json").read_text())
    assert set(quantize_manifest["params"]["options"]) == {o.name for o in options_of(QuantizeOptions)}
    assert set(dot_manifest["params"]["accumulator"]) == {o.name for o in options_of(Accumulator)}
    t = mxsim.quantize(np.ones(32, np.float32), "mxfp8_e4m3")
    mxsim.save(t, tmp_path / "t.mxt")
    raw = (tmp_path / "t.mxt").read_bytes()
    header = json.loads(raw[raw.index(b"{"): raw.rindex(b"}") + 1].decode())
    assert set(header["options"]) == {o.name for o in options_of(QuantizeOptions)}
    assert set(header["layout"]) == {o.name for o in options_of(LayoutOptions)}


def test_an_undeclared_field_is_refused():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Loose:
        x: int = 1

    with pytest.raises(TypeError, match=r"Loose.x is not declared with mxsim.options.option\(\)"):
        options_of(Loose)


def test_accumulator_resolve_is_the_one_way_settings_become_an_accumulator():
    """None, a preset name or an Accumulator, with option fields laid over it (issue 33 item 4)."""
    from mxsim.options.accumulate import PRESETS, Accumulator

    assert Accumulator.resolve() == Accumulator()
    assert Accumulator.resolve(None, mode="exact") == Accumulator(mode="exact")
    name = sorted(PRESETS)[0]
    assert Accumulator.resolve(name) is PRESETS[name]
    assert Accumulator.resolve(name, output="fp32") == dataclasses.replace(PRESETS[name], output="fp32")
    given = Accumulator(mode="exact")
    assert Accumulator.resolve(given) is given
    with pytest.raises(ValueError, match=r"unknown accumulator option\(s\) bogus; known options: .*mode"):
        Accumulator.resolve(name, bogus=1)
    with pytest.raises(ValueError, match=r"unknown accumulator option\(s\) bogus"):
        Accumulator.resolve(given, bogus=1)
    with pytest.raises(ValueError, match=r"preset.*'no_such_unit'"):
        Accumulator.resolve("no_such_unit")
    with pytest.raises(ValueError, match=r"not int"):
        Accumulator.resolve(3)


@pytest.mark.parametrize("rounding", ["rne", "rtz", "rup", "stochastic"])
@pytest.mark.parametrize("overflow", ["saturate", "ieee"])
def test_encode_takes_encode_options_like_the_keywords(rounding, overflow):
    """mxsim.encode and mxsim.ref.encode take one EncodeOptions as quantize and dot take theirs
    (issue 33 item 4); it means what the same keywords mean, and stands alone."""
    from mxsim import ref
    from mxsim.options import EncodeOptions

    rng = np.random.default_rng(7)
    x = (rng.standard_normal(64) * 300).astype(np.float32)
    rand = rng.integers(0, 1 << 8, 64) if rounding == "stochastic" else None
    loose = {"rounding": rounding, "overflow": overflow, "rand_width": 8, "rand_bits": rand}
    options = EncodeOptions(**loose)
    assert np.array_equal(mxsim.encode(x, "fp8_e4m3", options=options), mxsim.encode(x, "fp8_e4m3", **loose))
    for i in range(8):
        scalar = {**loose, "rand_bits": None if rand is None else int(rand[i])}
        assert ref.encode(float(x[i]), "fp8_e4m3", options=EncodeOptions(**scalar)) == ref.encode(
            float(x[i]), "fp8_e4m3", **scalar)
    with pytest.raises(ValueError, match="rounding cannot be given beside it"):
        mxsim.encode(x, "fp8_e4m3", options=options, rounding="rna")
    with pytest.raises(ValueError, match="profile cannot be given beside it"):
        mxsim.encode(x, "fp8_e4m3", options=options, profile="ml_dtypes_0_6")
    with pytest.raises(ValueError, match="int8_allow_neg2 cannot be given beside it"):
        ref.encode(1.0, "int8", options=EncodeOptions(), int8_allow_neg2=True)
    with pytest.raises(ValueError, match="options must be an EncodeOptions or None, not dict"):
        mxsim.encode(x, "fp8_e4m3", options={"rounding": "rne"})
