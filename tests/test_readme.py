"""The README a newcomer reads first (issue 23, item 15).

* The Layout table names every module of the package and nothing that is gone; it is generated
  from the modules' docstrings (``python docs/hooks/readme_layout.py --write``), and a new module
  fails here, named, until the table is regenerated.
* The shell snippets after "Quick use" run in order in one empty directory (``mxsim`` run as
  ``python -m mxsim.cli`` of this checkout), and every "shape (...)" a comment promises is in what
  the command printed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _layout_module():
    spec = importlib.util.spec_from_file_location("readme_layout", ROOT / "docs" / "hooks" / "readme_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layout_table_names_every_module():
    layout = _layout_module()
    table = README[README.index(layout.BEGIN):README.index(layout.END)]
    named = set(re.findall(r"^\| `(mxsim/[^`]+\.py)`", table, re.M))
    modules = {path.as_posix() for path in layout.modules()}
    missing, gone = sorted(modules - named), sorted(named - modules)
    assert not missing and not gone, (f"README's Layout table misses {missing} and names {gone}, which are gone; "
                                      "regenerate it: python docs/hooks/readme_layout.py --write")
    for paths, _ in layout.OTHER_ROWS:
        for path in paths.split(", "):
            assert (ROOT / path).exists(), path


def test_the_layout_summaries_are_the_docstrings():
    """A summary is the first sentence of the module's docstring, as written there."""
    layout = _layout_module()
    assert layout.summary(Path("mxsim/golden/compute/limits.py")) == ("How large a golden suite may be, checked before "
                                                              "anything is allocated or written")
    assert layout.summary(Path("mxsim/ref/dequant.py")).startswith("Reference dequantization to an output float type "
                                                                   "(contract section 3.1)")


def _shell_blocks() -> list[str]:
    quick = README[README.index("## Quick use"):]
    return re.findall(r"```bash\n(.*?)```", quick, re.DOTALL)


def test_the_shell_snippets_run_in_order(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    lines = [line for block in _shell_blocks() for line in block.splitlines() if line.strip()]
    assert any(line.startswith("mxsim dot") and "--outer" in line for line in lines)
    for line in lines:
        command, _, comment = line.partition("   #") if not line.startswith("python -c") else (line, "", "")
        argv = shlex.split(command)
        if argv[0] == "mxsim":
            argv = [sys.executable, "-m", "mxsim.cli", *argv[1:]]
        else:
            assert argv[0] == "python", line
            argv[0] = sys.executable
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (line, done.stderr)
        for shape in re.findall(r"shape \([0-9, ]*\)", comment):
            assert shape in done.stdout, (line, shape, done.stdout)
