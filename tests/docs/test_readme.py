"""The README a newcomer reads first (issue 23, item 15).

* The Layout table names every module of the package and nothing that is gone; it is generated
  from the modules' docstrings (``python docs/hooks/readme_layout.py --write``), and a new module
  fails here, named, until the table is regenerated.
* It opens with what mxsim is and the two commands (the main job; the whole test suite, exactly
  .ci/run's pytest line), with no history (that is CHANGELOG.md).
* The runnable shell blocks run in order in one empty directory (``mxsim`` run as ``python -m
  mxsim.cli`` of this checkout; tests/doc_examples.py), and every output a console block shows is
  what the command printed.
"""

from __future__ import annotations

import importlib.util
import re
from fractions import Fraction
from pathlib import Path

import doc_examples

ROOT = Path(__file__).resolve().parents[2]
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


def test_the_two_commands_open_the_readme():
    """The README opens (after one paragraph and the line about the virtual environment) with the
    two commands: the main job, and the whole test suite exactly as .ci/run runs it."""
    first_block = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert first_block.start() < README.index("\n## "), "the commands must come before the first section"
    lines = [line.split("   #")[0].strip() for line in first_block.group(1).splitlines() if line.strip()]
    assert lines[0] == "pip install -e . && mxsim golden generate golden-out && mxsim golden verify golden-out", lines
    ci_pytest = re.search(r"(python -m pytest .*)$", (ROOT / ".ci" / "run").read_text(), re.M).group(1)
    assert lines[1] == f'pip install -e ".[test]" && {ci_pytest}', (lines[1], ci_pytest)
    assert len(lines) == 2, lines
    assert "download.pytorch.org/whl/cpu" in README  # the CPU wheel of the pinned torch


def test_the_opening_is_not_a_changelog():
    """History (issue numbers, commit hashes) lives in CHANGELOG.md, which the README links."""
    opening = README[:README.index("\n## ")]
    assert not re.search(r"\bissue \d+|\bcommit [0-9a-f]{7}\b", opening), opening
    assert "(CHANGELOG.md)" in opening and (ROOT / "CHANGELOG.md").is_file()


def test_the_shell_snippets_run_in_order(tmp_path):
    """The README's runnable blocks (``<!-- run -->``, tests/doc_examples.py) run in order in one
    empty directory, and each console block's output is what the command printed."""
    blocks = doc_examples.runnable(Path("README.md"))
    commands = [line for e in blocks if e.language == "console" for line in e.text.splitlines()
                if line.startswith("$ ")]
    assert any(line.startswith("$ mxsim dot") and "--outer" in line for line in commands)
    assert any(line.startswith("$ mxsim golden check") for line in commands)
    workdir = tmp_path / "readme"
    workdir.mkdir()
    assert doc_examples.run_page(Path("README.md"), workdir) == len(blocks) >= 4


# The five OCP float element formats: (exponent bits, mantissa bits, bias, which codes are special).
OCP_FLOATS = {"fp8_e4m3": (4, 3, 7, "fn"), "fp8_e5m2": (5, 2, 15, "ieee"), "fp6_e3m2": (3, 2, 3, "none"),
              "fp6_e2m3": (2, 3, 1, "none"), "fp4_e2m1": (2, 1, 1, "none")}


def _finite_magnitudes(e: int, m: int, bias: int, specials: str) -> dict[int, Fraction]:
    """Every finite non-negative code's value, from the OCP definition (subnormals at E = 0)."""
    values = {}
    for code in range(1 << (e + m)):
        field, mant = code >> m, code & ((1 << m) - 1)
        if specials == "ieee" and field == (1 << e) - 1:
            continue
        if specials == "fn" and field == (1 << e) - 1 and mant == (1 << m) - 1:
            continue
        significand = Fraction(mant, 1 << m) + (field != 0)
        values[code] = significand * Fraction(2) ** (max(field, 1) - bias)
    return values


def _number(cell: str) -> Fraction:
    """A README number: '448', '7.5', '2^-6'."""
    base, _, exponent = cell.partition("^")
    return Fraction(base) ** int(exponent) if exponent else Fraction(cell)


def test_the_element_table_states_the_ocp_definitions():
    """Bias, emax_elem, max normal (with its code), min normal and min subnormal of each OCP float
    element format in the README's table, against the formats' definitions computed here."""
    for name, (e, m, bias, specials) in OCP_FLOATS.items():
        row = re.search(rf"^\| `{name}`[^|]* \| ([^|]+) \| (\d+) \| (\d+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", README,
                        re.M)
        assert row, name
        layout, shown_bias, emax, max_normal, min_normal, min_subnormal = (cell.strip() for cell in row.groups())
        values = _finite_magnitudes(e, m, bias, specials)
        top = max(values, key=values.get)
        assert layout.replace(" ", "") == "S" + "E" * e + "M" * m, (name, layout)
        assert int(shown_bias) == bias, name
        assert 2 ** int(emax) <= values[top] < 2 ** (int(emax) + 1), name
        value, code = re.fullmatch(r"(\S+) \((0x[0-9A-F]+)\)", max_normal).groups()
        assert (_number(value), int(code, 16)) == (values[top], top), name
        assert _number(min_normal) == Fraction(2) ** (1 - bias), name
        assert _number(min_subnormal) == Fraction(2) ** (1 - bias - m) == values[1], name
