"""The command-line reference, rendered from ``mxsim.cli.build_parser()`` when the site is built.

The ``<!-- mxsim:cli-reference -->`` placeholder (expanded by the ``format_tables.py`` hook) becomes
one section per command and subcommand, holding its ``--help`` text exactly as argparse prints it
at WIDTH columns (``COLUMNS=WIDTH+2 mxsim ... --help`` prints the same), so the page cannot drift
from the code.
"""

from __future__ import annotations

import argparse
import functools

from mxsim.cli import build_parser

WIDTH = 100


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) for the parser and, depth first, every subcommand's parser.

    argparse keeps subcommands in a private action; there is no public way to list them.
    """
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from commands(subparser, path + (name,))


def help_text(parser: argparse.ArgumentParser) -> str:
    """The parser's --help at WIDTH columns, whatever terminal the build runs in."""
    parser.formatter_class = functools.partial(parser.formatter_class, width=WIDTH)
    return parser.format_help().rstrip()


def render() -> str:
    """Markdown: a heading and a text block of --help per command."""
    sections = []
    for path, parser in commands(build_parser()):
        title = " ".join(("mxsim",) + path)
        anchor = "-".join(("mxsim",) + path)
        sections.append(f"## `{title}` {{#{anchor}}}\n\n```text\n{help_text(parser)}\n```\n")
    return "\n".join(sections)
