"""The package metadata and the source distribution (issue 32, item 18).

* ``project.license`` is an SPDX expression (the table form is deprecated, and setuptools warns
  on every build), with a build-system setuptools that reads it (77 or later).
* The sdist carries what the test suite reads besides the package: ``golden/`` (the canonical
  suite), ``docs/`` and ``mkdocs.yml`` (the site the docs tests build), ``rtl/`` (the RTL proof),
  ``benchmarks/`` (the QSNR figure), ``tests/`` and ``.ci/run``. The test builds it with
  setuptools' PEP 517 backend (a few seconds) from a copy of the checkout without ``*.egg-info``
  (setuptools would otherwise carry every file an earlier build's ``SOURCES.txt`` lists, MANIFEST.in
  or not) and lists the archive; its file list for each folder must equal the folder's files in the
  checkout.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = (ROOT / "pyproject.toml").read_text()
CARRIED_FOLDERS = ("golden", "docs", "rtl", "benchmarks", "tests")
CARRIED_FILES = ("README.md", "CHANGELOG.md", "mkdocs.yml", ".ci/run", "pyproject.toml")


def test_license_is_an_spdx_expression():
    assert re.search(r'^license = "Apache-2\.0"$', PYPROJECT, re.M), "project.license must be an SPDX string"
    requires = re.search(r"^requires = (.*)$", PYPROJECT, re.M).group(1)
    minimum = re.search(r"setuptools>=(\d+)", requires)
    assert minimum and int(minimum.group(1)) >= 77, requires  # PEP 639 license expressions


def _checkout_files(folder: str) -> set[str]:
    """The files of a folder of the checkout that a source distribution should carry (no caches)."""
    return {path.relative_to(ROOT).as_posix() for path in (ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")}


@pytest.fixture(scope="module")
def sdist_members(tmp_path_factory) -> set[str]:
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} predates license expressions (the build pulls >= 77)")
    out = tmp_path_factory.mktemp("sdist")
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "*.egg-info", "__pycache__", "*.pyc", "build",
                                                               "dist", "site", ".venv", "golden-out"))
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "License classifiers are deprecated" not in done.stderr and "project.license" not in done.stderr, done.stderr
    archive = out / done.stdout.split()[-1]
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    top = names[0].split("/")[0]
    return {name[len(top) + 1:] for name in names if name.startswith(top + "/")}


@pytest.mark.parametrize("folder", CARRIED_FOLDERS)
def test_sdist_carries_the_folders_the_tests_read(sdist_members, folder):
    carried = {name for name in sdist_members if name.startswith(folder + "/")}
    missing = sorted(_checkout_files(folder) - carried)
    assert not missing, f"the sdist lacks {len(missing)} file(s) of {folder}/, e.g. {missing[:5]}"


def test_sdist_carries_the_top_level_files(sdist_members):
    assert set(CARRIED_FILES) <= sdist_members, sorted(set(CARRIED_FILES) - sdist_members)
    assert "mxsim/ref/encode.py" in sdist_members and "golden/index.json" in sdist_members
