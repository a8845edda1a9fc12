"""The mutation harness of the RTL models (``rtl/mutate.py``, ``rtl/mutants.py``).

* every model has at least 20 mutants, each a patch whose text occurs exactly once in its file,
  with a unique name; every equivalent mutant states its reason;
* the uniform random suites have the fields and count of their golden suite, and the unmutated
  RTL passes them (their expected values are the reference model's);
* a seeded sample of mutants per model (Icarus): every equivalent one survives the canonical and
  the random suites, and every other one that no configuration gap excuses is killed by the
  canonical suites. The full run (every mutant, its figures in docs/verification-flow.md) is
  ``python rtl/mutate.py``.

Without Icarus Verilog the simulation tests skip, or fail when CI is set.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RTL = ROOT / "rtl"
GOLDEN = Path(os.environ.get("MXSIM_GOLDEN") or ROOT / "golden")
SAMPLE = 3  # mutants per model in the CI sample (seed 0)


def _load(name: str):
    sys.path.insert(0, str(RTL))
    try:
        spec = importlib.util.spec_from_file_location(name, RTL / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(RTL))


rtl_sim = _load("sim")  # before mutate, whose `from sim import ...` then finds this module
mutants = _load("mutants")
mutate = _load("mutate")


@pytest.fixture(scope="module")
def icarus(tmp_path_factory):
    sim = mutate.SIMULATORS["icarus"]
    try:
        return sim(tmp_path_factory.mktemp("mutate_build"))
    except rtl_sim.SimulatorMissing as missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing} (CI is set, and CI installs it)")
        pytest.skip(str(missing))


@pytest.mark.parametrize("name", sorted(mutants.MODELS))
def test_mutant_list(name):
    model = mutants.MODELS[name]
    assert len(model.mutants) >= 20, f"{name}: {len(model.mutants)} mutants"
    names = [m.name for m in model.mutants]
    assert len(set(names)) == len(names), f"{name}: duplicate mutant names"
    for m in model.mutants:
        text = (RTL / m.file).read_text()
        assert text.count(m.old) == 1, f"{name}/{m.name}: its text occurs {text.count(m.old)} times in {m.file}"
        assert m.old != m.new and m.what, f"{name}/{m.name}"
        assert m.file in model.sources, f"{name}/{m.name}: {m.file} is not a source of the model"
        assert not (m.equivalent and m.gap), f"{name}/{m.name}: equivalent or gap, not both"
    assert all(len(m.equivalent) > 20 for m in model.mutants if m.equivalent), f"{name}: an equivalent without reason"


def test_apply_refuses_ambiguous_text(tmp_path):
    (tmp_path / "m.v").write_text("a < b; a < b;\n")
    mutant = mutants.Mutant("x", "lt", "m.v", "a < b", "a <= b", "lt")
    with pytest.raises(ValueError, match="occurs 2 times"):
        mutate.apply(mutant, tmp_path)
    (tmp_path / "m.v").write_text("a < b;\n")
    mutate.apply(mutant, tmp_path)
    assert (tmp_path / "m.v").read_text() == "a <= b;\n"


def test_uniform_suite_matches_golden_fields(tmp_path):
    """A uniform random encode suite: the golden suite's count and field widths, inputs spread over
    all 32 bits (not the suite's narrow exponent range), codes the reference's."""
    from mxsim.golden.values import fp32_value
    from mxsim.ref.encode import encode

    source = GOLDEN / "encode" / "fp8_e4m3-rne-saturate"
    manifest = json.loads((source / "manifest.json").read_text())
    count = mutate.uniform_suite(source, tmp_path, seed=0)
    assert count == manifest["count"]
    xs = [int(line, 16) for line in (tmp_path / "x.hex").read_text().split()]
    codes = [int(line, 16) for line in (tmp_path / "code.hex").read_text().split()]
    assert len(xs) == len(codes) == count
    assert len({x >> 23 & 0xFF for x in xs}) > 200  # exponent fields nearly uniform over 0..255
    for x, code in list(zip(xs, codes))[:200]:
        assert code == encode(fp32_value(x), "fp8_e4m3", "rne", "saturate")
    again = tmp_path.parent / "again"
    mutate.uniform_suite(source, again, seed=0)
    assert (again / "x.hex").read_bytes() == (tmp_path / "x.hex").read_bytes()  # seeded: reproducible


@pytest.mark.parametrize("name", sorted(mutants.MODELS))
def test_mutation_sample(icarus, tmp_path, name):
    model = mutants.MODELS[name]
    chosen = mutate.sample_mutants(model, SAMPLE, seed=0)
    results = mutate.run_model(model, icarus, GOLDEN, tmp_path, 0, chosen, echo=lambda line: None)
    for r in results:
        if r.mutant.equivalent:
            assert not (r.canonical or r.random), f"{name}/{r.mutant.name} is declared equivalent but killed: {r}"
        elif not r.mutant.gap:
            assert r.canonical, f"{name}/{r.mutant.name} ({r.mutant.what}) survives the canonical suites"
    shutil.rmtree(tmp_path / "mutants", ignore_errors=True)
