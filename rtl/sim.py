"""Build and run the golden-suite testbenches of ``rtl/`` under Icarus Verilog or Verilator.

Used by ``tests/rtl/test_rtl_reproduces_golden.py`` and ``rtl/mutate.py``. A testbench is built once per configuration
(top module, sources, parameters, defines, source text) and cached for the life of the
:class:`Simulator`; running it on a suite returns ``(passed, failed, output)`` from its summary
line ``N passed, N failed``.

* ``Icarus``: ``iverilog -g2005 -Wall`` to a vvp image, run with ``vvp -n``.
* ``Verilator``: ``verilator --cc --exe --main --timing`` (the testbenches are plain Verilog with
  ``#1`` delays and ``initial`` blocks), the model's C++ compiled with ``-O0`` (building dominates:
  a testbench runs its suite in well under a second either way). Verilator's own runtime
  (``verilated.o`` and friends, the same object code for every model) is compiled once per
  :class:`Verilator` and copied into every later build directory, so a build costs only the model.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

RTL = Path(__file__).resolve().parent
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$", re.MULTILINE)

__all__ = ["RTL", "SUMMARY", "Simulator", "Icarus", "Verilator", "SIMULATORS", "SimulatorMissing", "run_testbench"]


class SimulatorMissing(RuntimeError):
    """The simulator's programs are not on PATH."""


def run_testbench(command: list[str], suite: Path, count: int, timeout: int = 300) -> tuple[int, int, str]:
    """Run a built testbench on a suite directory: (passed, failed, full output). AssertionError
    when it ends without its summary line (a crash, or a golden file it could not open)."""
    done = subprocess.run(command + [f"+dir={suite}", f"+count={count}"], capture_output=True, text=True,
                          timeout=timeout, check=False)
    output = done.stdout + done.stderr
    summaries = SUMMARY.findall(output)
    assert done.returncode == 0 and summaries, f"testbench gave no summary line (rc {done.returncode}):\n{output}"
    passed, failed = map(int, summaries[-1])
    return passed, failed, output


class Simulator:
    """``build(top, sources, params, defines, rtl)`` -> the command that runs the testbench (cached
    per configuration); ``sources`` are file names in ``rtl`` (default: this directory, or a copy
    of it holding a mutated model)."""

    name = ""
    programs: tuple[str, ...] = ()

    def __init__(self, out: Path):
        missing = [p for p in self.programs if shutil.which(p) is None]
        if missing:
            raise SimulatorMissing(f"{self.name}: {', '.join(missing)} not installed")
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self._cache: dict = {}

    def build(self, top: str, sources: tuple[str, ...], params: dict, defines: tuple[str, ...] = (),
              rtl: Path = RTL) -> list[str]:
        texts = tuple((rtl / s).read_bytes() for s in sources + ("tb_golden.vh",))
        digest = hashlib.sha256(b"\0".join(texts)).hexdigest()
        key = (top, sources, tuple(sorted(params.items())), tuple(defines), digest)
        if key not in self._cache:
            self._cache[key] = self._build(f"{top}_{len(self._cache)}", top, sources, params, defines, Path(rtl))
        return self._cache[key]

    def _build(self, stem: str, top: str, sources, params: dict, defines, rtl: Path) -> list[str]:
        raise NotImplementedError


def _run(cmd: list[str], what: str, cwd: Path | None = None, timeout: int = 600) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd)
    assert done.returncode == 0, f"{what} failed:\n{' '.join(cmd)}\n{done.stdout[-4000:]}{done.stderr[-4000:]}"


class Icarus(Simulator):
    name = "icarus"
    programs = ("iverilog", "vvp")

    def _build(self, stem, top, sources, params, defines, rtl):
        image = self.out / f"{stem}.vvp"
        cmd = ["iverilog", "-g2005", "-Wall", "-I", str(rtl), "-s", top, "-o", str(image)]
        cmd += [f"-P{top}.{name}={value}" for name, value in params.items()]
        cmd += [f"-D{define}" for define in defines]
        cmd += [str(rtl / source) for source in sources]
        _run(cmd, "iverilog", timeout=120)
        return ["vvp", "-n", str(image)]


class Verilator(Simulator):
    name = "verilator"
    programs = ("verilator", "make")
    RUNTIME = ("verilated", "verilated_timing", "verilated_threads")  # the runtime objects of --timing

    def __init__(self, out: Path):
        super().__init__(out)
        self._runtime: Path | None = None

    def _build(self, stem, top, sources, params, defines, rtl):
        mdir = self.out / stem
        cmd = ["verilator", "--cc", "--exe", "--main", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
               "-I" + str(rtl), "--top-module", top, "-Mdir", str(mdir)]
        cmd += [f"-G{name}={value}" for name, value in params.items()]
        cmd += [f"-D{define}" for define in defines]
        cmd += [str(rtl / source) for source in sources]
        _run(cmd, "verilator")
        if self._runtime is not None:
            # the runtime compiled by the first build (the same flags for every build): copied with a
            # new mtime, so that make finds it newer than the V<top>.mk it depends on
            for obj in self._runtime.iterdir():
                shutil.copy(obj, mdir / obj.name)
        _run(["make", "-s", "-C", str(mdir), "-f", f"V{top}.mk", f"V{top}", "OPT_FAST=-O0", "OPT_SLOW=-O0"],
             "make (Verilator model)")
        if self._runtime is None:
            self._runtime = self.out / "runtime"
            self._runtime.mkdir(exist_ok=True)
            for name in self.RUNTIME:
                for suffix in (".o", ".d"):
                    if (mdir / (name + suffix)).is_file():
                        shutil.copy2(mdir / (name + suffix), self._runtime / (name + suffix))
        return [str(mdir / f"V{top}")]


SIMULATORS = {"icarus": Icarus, "verilator": Verilator}
