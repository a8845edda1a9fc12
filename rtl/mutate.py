#!/usr/bin/env python3
"""Mutation score of mxsim's golden suites on the RTL models of ``rtl/``.

Every model has a list of mutants (:mod:`mutants`, at least 20 each): single textual patches of
the kinds real bugs take (a ``<`` for ``<=``, an off-by-one shift or bias, a dropped sticky bit,
an inverted sign or NaN condition, a wrong tie rule, ...). Each mutant is applied to a copy of
``rtl/``, compiled (Icarus Verilog by default: a build takes a fraction of a second, Verilator's
C++ build a few seconds, and a run of a suite is well under a second on either) and run against

* the model's **canonical suites** (``golden/``, the configurations ``tests/rtl/test_rtl_reproduces_golden.py`` proves
  the model on), and
* **uniform random suites** of the same size: every input field of every vector uniform random
  bits (seeded), the expected outputs from mxsim's reference model (``suite.compute``), the same
  fields and parameters as the canonical suite (:func:`uniform_suite`).

A mutant is *killed* by a set of suites when some vector of one of them fails. The report gives,
per model, the kills of each set, names every survivor, and lists the *equivalent* mutants with
the reason they cannot change behaviour (they must survive both sets: a kill of one is an error
of the harness). A *gap* note on a mutant names the configuration the canonical suites lack
(a parameter value no canonical suite takes): such a mutant is not equivalent, and its survival
is a hole in the canonical collection, reported as such.

    python rtl/mutate.py                          # every mutant of every model (docs/verification-flow.md)
    python rtl/mutate.py --models encode,quant    # some models
    python rtl/mutate.py --sample 4 --seed 0      # a seeded sample of 4 mutants per model (CI)
    python rtl/mutate.py --list                   # the mutants, no simulation
    python rtl/mutate.py --json out.json          # also the results as JSON

The output is stable: the same seed, suites and mutants print the same lines (the elapsed time
is on the last line only).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

RTL = Path(__file__).resolve().parent
ROOT = RTL.parent
sys.path.insert(0, str(RTL))
sys.path.insert(1, str(ROOT))

from mutants import MODELS, Model, Mutant  # noqa: E402  (rtl/ on the path)
from sim import SIMULATORS, run_testbench  # noqa: E402

__all__ = ["uniform_suite", "apply", "MutantResult", "run_model", "main"]


# ------------------------------------------------------------------------------------------------
# Uniform random suites
# ------------------------------------------------------------------------------------------------


def uniform_suite(suite_dir: Path, out: Path, seed: int = 0) -> int:
    """Write to ``out`` a suite with the fields, parameters and vector count of the golden suite in
    ``suite_dir``, every input field uniform random bits (``random.Random('mxsim-mutate:<seed>:
    <kind>/<suite>')``, fields drawn in manifest order, vector after vector) and every output from
    the reference model. An input the reference refuses (a NaN for an element format without NaN)
    is drawn again. Returns the count. Cached: an ``out`` with a matching ``uniform.json`` is kept."""
    from mxsim.golden.compute.crosscheck import reference_expected
    from mxsim.golden.kinds.registry import suite_from_spec

    manifest = json.loads((suite_dir / "manifest.json").read_text())
    kind, name, count = manifest["kind"], manifest["suite"], manifest["count"]
    stamp = {"kind": kind, "suite": name, "count": count, "seed": seed, "params": manifest["params"]}
    if (out / "uniform.json").is_file() and json.loads((out / "uniform.json").read_text()) == stamp:
        return count
    suite = suite_from_spec(kind, **manifest["params"])
    rng = random.Random(f"mxsim-mutate:{seed}:{kind}/{name}")
    inputs: dict[str, list[int]] = {f.name: [] for f in suite.inputs}
    outputs: dict[str, list[int]] = {f.name: [] for f in suite.outputs}
    while len(inputs[suite.inputs[0].name]) < count:
        row = {f.name: rng.getrandbits(f.bits) for f in suite.inputs}
        try:
            computed, _ = reference_expected(suite, {key: [value] for key, value in row.items()})
        except ValueError:  # refused by the reference (e.g. a NaN input of an FP4 encode): draw again
            continue
        for key, value in row.items():
            inputs[key].append(value)
        for key, column in computed.items():
            outputs[key].append(column[0])
    out.mkdir(parents=True, exist_ok=True)
    for f in suite.inputs + suite.outputs:
        (out / f.file).write_text(f.to_hex_lines({**inputs, **outputs}[f.name]))
    (out / "uniform.json").write_text(json.dumps(stamp, sort_keys=True))
    return count


# ------------------------------------------------------------------------------------------------
# Mutants
# ------------------------------------------------------------------------------------------------


def apply(mutant: Mutant, rtl: Path) -> None:
    """Patch ``mutant.file`` in the directory ``rtl`` (a copy of ``rtl/``): its ``old`` text,
    which must occur exactly once, becomes ``new``."""
    path = rtl / mutant.file
    text = path.read_text()
    found = text.count(mutant.old)
    if found != 1:
        raise ValueError(f"mutant {mutant.name}: its text occurs {found} times in {mutant.file} (must be once)")
    path.write_text(text.replace(mutant.old, mutant.new))


@dataclass
class MutantResult:
    mutant: Mutant
    canonical: str   # the first canonical suite that kills it (with its failed vector count), or ""
    random: str      # the same for the uniform random suites

    @property
    def verdict(self) -> str:
        if self.mutant.equivalent:
            return "equivalent" if not (self.canonical or self.random) else "ERROR: equivalent mutant killed"
        if self.canonical:
            return "killed"
        return "survived (gap)" if self.mutant.gap else "survived"

    def as_dict(self) -> dict:
        return {"model": self.mutant.model, "mutant": self.mutant.name, "what": self.mutant.what,
                "verdict": self.verdict, "canonical": self.canonical, "random": self.random,
                "equivalent": self.mutant.equivalent, "gap": self.mutant.gap}


def _first_kill(sim, model: Model, rtl: Path, suites: list[tuple[Path, dict, int]]) -> str:
    """'<suite>: <failed>/<count>' of the first suite with a failing vector ('' if none). A
    mutant that breaks the build or crashes the testbench counts as killed."""
    for directory, params, count in suites:
        try:
            command = sim.build(model.top, model.sources, {**params, "MAXN": count}, rtl=rtl)
            passed, failed, _ = run_testbench(command, directory, count)
        except AssertionError as broken:
            return f"{directory.name}: build or run failed ({str(broken).splitlines()[0]})"
        if failed:
            return f"{directory.name}: {failed}/{count}"
    return ""


def model_suites(model: Model, golden: Path, work: Path, seed: int):
    """(canonical, uniform): each a list of (directory, testbench parameters, count)."""
    canonical, uniform = [], []
    for kind, name, params in model.suites:
        directory = golden / kind / name
        if not (directory / "manifest.json").is_file():
            raise FileNotFoundError(f"model {model.name}: golden suite {directory} is missing")
        count = json.loads((directory / "manifest.json").read_text())["count"]
        canonical.append((directory, params, count))
        random_dir = work / "uniform" / kind / name
        uniform.append((random_dir, params, uniform_suite(directory, random_dir, seed)))
    return canonical, uniform


def run_model(model: Model, sim, golden: Path, work: Path, seed: int, mutants: list[Mutant], echo=print):
    """Check the unmutated model passes every suite of both sets, then run every mutant."""
    canonical, uniform = model_suites(model, golden, work, seed)
    for suites, label in ((canonical, "canonical"), (uniform, "uniform random")):
        clean = _first_kill(sim, model, RTL, suites)
        if clean:
            raise RuntimeError(f"model {model.name}: the unmutated RTL fails a {label} suite: {clean}")
    results = []
    for mutant in mutants:
        copy = work / "mutants" / model.name / mutant.name
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(RTL, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__", "cocotb", "*.md"))
        apply(mutant, copy)
        result = MutantResult(mutant, _first_kill(sim, model, copy, canonical), _first_kill(sim, model, copy, uniform))
        shutil.rmtree(copy)
        echo(f"  {mutant.name:<28} {result.verdict:<16} canonical: {result.canonical or '-'}; "
             f"random: {result.random or '-'}")
        results.append(result)
    return results


def summary(model: Model, results: list[MutantResult], total: int) -> list[str]:
    """The model's lines of the report."""
    eq = [r for r in results if r.mutant.equivalent]
    live = [r for r in results if not r.mutant.equivalent]
    killed = sum(1 for r in live if r.canonical)
    killed_random = sum(1 for r in live if r.random)
    lines = [f"{model.name}: {len(results)} of {total} mutants run, {len(eq)} equivalent; of the {len(live)} others "
             f"canonical suites kill {killed}, uniform random suites of the same size kill {killed_random}"]
    for r in live:
        if not r.canonical:
            note = f" [gap: {r.mutant.gap}]" if r.mutant.gap else ""
            lines.append(f"  survivor {r.mutant.name}: {r.mutant.what}{note}"
                         f"{'; random kills it: ' + r.random if r.random else ''}")
    for r in eq:
        lines.append(f"  equivalent {r.mutant.name}: {r.mutant.equivalent}")
    errors = [r for r in results if r.verdict.startswith("ERROR")]
    for r in errors:
        lines.append(f"  ERROR {r.mutant.name}: declared equivalent but killed ({r.canonical or r.random})")
    return lines


def sample_mutants(model: Model, sample: int | None, seed: int) -> list[Mutant]:
    """Every mutant of the model, or a seeded sample of ``sample`` of them (in list order) drawn
    from those without a gap note (a gap mutant survives until the collection gains the missing
    configuration: a sample of them would test nothing)."""
    if sample is None:
        return list(model.mutants)
    pool = [i for i, m in enumerate(model.mutants) if not m.gap]
    rng = random.Random(f"mxsim-mutate-sample:{seed}:{model.name}")
    chosen = sorted(rng.sample(pool, min(sample, len(pool))))
    return [model.mutants[i] for i in chosen]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of: {', '.join(MODELS)}")
    parser.add_argument("--sample", type=int, default=None,
                        help="a seeded sample of N mutants per model (of those without a gap note)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and of the uniform random suites")
    parser.add_argument("--simulator", choices=sorted(SIMULATORS), default="icarus")
    parser.add_argument("--golden", type=Path, default=ROOT / "golden", help="the golden tree (default: golden/)")
    parser.add_argument("--work", type=Path, default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; allowed: {', '.join(MODELS)}")
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be a positive integer")
    if args.list:
        for name in names:
            model = MODELS[name]
            print(f"{name} ({len(model.mutants)} mutants; {', '.join(f'{k}/{s}' for k, s, _ in model.suites)})")
            for m in model.mutants:
                tag = " [equivalent]" if m.equivalent else f" [gap: {m.gap}]" if m.gap else ""
                print(f"  {m.name:<28} {m.file}: {m.what}{tag}")
        return 0
    start = time.monotonic()
    work = args.work or Path(tempfile.mkdtemp(prefix="mxsim-mutate-"))
    sim = SIMULATORS[args.simulator](work / f"build-{args.simulator}")
    print(f"mutation run: simulator {args.simulator}, seed {args.seed}, "
          f"{'every mutant' if args.sample is None else f'sample of {args.sample} per model'}")
    report, records, errors = [], [], 0
    for name in names:
        model = MODELS[name]
        print(f"{name}:")
        results = run_model(model, sim, args.golden, work, args.seed, sample_mutants(model, args.sample, args.seed))
        report += summary(model, results, len(model.mutants))
        records += [r.as_dict() for r in results]
        errors += sum(1 for r in results if r.verdict.startswith("ERROR"))
    print("summary:")
    for line in report:
        print(line)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1) + "\n")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"elapsed {time.monotonic() - start:.1f} s")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
