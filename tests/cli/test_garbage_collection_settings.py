"""A command runs with the startup objects frozen and young collections every YOUNG_THRESHOLD
allocations (mxsim/cli/garbage.py), and both are undone afterwards, however the command ends: a
process that runs many commands (the tests, a notebook) keeps Python's settings and collects its
cycles as before."""

from __future__ import annotations

import gc
import weakref

import pytest

from mxsim.cli import main
from mxsim.cli.garbage import YOUNG_THRESHOLD, batch_collection


def test_settings_hold_inside_and_are_restored_after():
    before = gc.get_threshold()
    with batch_collection():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settings_are_restored_when_the_command_fails():
    before = gc.get_threshold()
    with pytest.raises(ZeroDivisionError), batch_collection():
        1 / 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_cycle_frozen_during_a_command_is_collected_after_it(capsys):
    """The objects that exist when a command starts are frozen (full collections skip them) and
    unfrozen at its end: a cycle alive then and dropped afterwards is garbage the next full
    collection frees."""
    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    with batch_collection():
        assert gc.get_freeze_count() > 0
    del a, b
    gc.collect()
    assert alive() is None
    assert main(["info", "fp8_e4m3"]) == 0 and gc.get_freeze_count() == 0
    assert "fp8_e4m3" in capsys.readouterr().out
