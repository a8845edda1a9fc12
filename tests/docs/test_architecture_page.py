"""docs/architecture.md cannot drift from the tree: every repository path it names exists, the
golden layers it draws are the ones tests/project/test_package_layers.py enforces, in that order,
the kinds it lists are the registered ones, and the site's nav lists the page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()
# a path: starts at a top-level folder of the repository (or is a root file), no placeholder like <kind>
_PATH = re.compile(r"(?<![\w/.])((?:mxsim|tests|docs|benchmarks)/[\w./<>-]*[\w/>]|README\.md|mkdocs\.yml)")


def named_paths(text: str) -> list[str]:
    return sorted({m.rstrip(".") for m in _PATH.findall(text) if "<" not in m})


def test_the_path_finder_sees_paths_and_skips_placeholders():
    text = "see mxsim/ref/output.py, `mxsim/golden/kinds/<kind>/` and tests/docs/ (and README.md)."
    assert named_paths(text) == ["README.md", "mxsim/ref/output.py", "tests/docs/"]


def test_every_path_the_page_names_exists():
    paths = named_paths(PAGE)
    assert len(paths) > 30, paths  # the page names the files of its table; a broken finder finds few
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_golden_layers_drawn_are_the_enforced_ones():
    from test_package_layers import GOLDEN_LAYERS

    drawn = re.search(r"^ +\| +(values -> .*)$", PAGE, re.M).group(1)
    assert [name.strip() for name in drawn.split("->")] == list(GOLDEN_LAYERS)


def test_the_kinds_listed_are_the_registered_ones():
    from mxsim.golden.kinds.registry import KINDS

    listed = re.search(r"A golden suite kind \(([^)]*)\)", PAGE, re.S).group(1)
    assert re.findall(r"`(\w+)`", listed) == list(KINDS)


def test_the_site_nav_lists_the_page():
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    assert re.search(r"^\s+- [^:\n]+: architecture\.md$", nav, re.M)
