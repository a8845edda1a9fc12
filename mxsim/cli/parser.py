"""The ``mxsim`` argument parser: the top-level flags, and each command group's subcommands.

Each group adds its own subparsers (:mod:`.info`, :mod:`.tensors`, :mod:`.dot`, :mod:`.golden`), in
the order ``--help`` lists them; every subcommand's ``run`` default is the function that runs it.
"""

from __future__ import annotations

import argparse

from .._version import __version__
from .dot import add_dot_command
from .flags import Parser
from .golden import add_golden_commands
from .info import add_info_command
from .tensors import add_tensor_commands


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``mxsim`` command (docs/cli.md's reference is rendered from it)."""
    parser = Parser(prog="mxsim", description="Bit-accurate MX number format simulator.")
    parser.add_argument("--version", action="version", version=f"mxsim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_info_command(commands)
    add_tensor_commands(commands)
    add_dot_command(commands)
    add_golden_commands(commands)
    return parser
