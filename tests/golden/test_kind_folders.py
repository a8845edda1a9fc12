"""A suite kind is one folder plus its registration (issue 33 item 1): every folder under
mxsim/golden/kinds/ that holds a ``description.py`` is a kind whose ``__init__`` exports the class
that :data:`mxsim.golden.kinds.registry.KINDS` registers under the folder's name, and that class is
defined in that ``description.py``; every registered kind lives in its folder (no kind is a single
module). Expected values: the folder names, read from the file system here."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mxsim.golden.kinds.registry import KINDS

KINDS_DIR = Path(__file__).resolve().parents[2] / "mxsim" / "golden" / "kinds"
FOLDERS = sorted(p.parent.name for p in KINDS_DIR.glob("*/description.py"))


def test_every_registered_kind_has_a_folder():
    assert set(FOLDERS) == set(KINDS)
    assert not [p.name for p in KINDS_DIR.glob("*.py") if p.stem in KINDS], "a kind is still a single module"


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_kind_folder_is_registered_and_exports_its_class(folder):
    assert folder in KINDS, f"mxsim/golden/kinds/{folder}/ is not registered: add it to KINDS in registry.py"
    package = importlib.import_module(f"mxsim.golden.kinds.{folder}")
    cls = KINDS[folder]
    assert getattr(package, cls.__name__) is cls, f"mxsim/golden/kinds/{folder}/__init__.py does not export {cls.__name__}"
    assert cls.__module__ == f"mxsim.golden.kinds.{folder}.description"
    assert cls.kind == folder


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_registered_kind_lives_under_its_name(kind):
    module = KINDS[kind].__module__
    assert module == f"mxsim.golden.kinds.{kind}.description", module

