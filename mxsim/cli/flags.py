"""Command-line flags from the option definitions of :mod:`mxsim.options`, and argparse with one-line errors.

One flag per option of an options class (an unset flag is not passed on), and a command's errors
worded in the flags the user typed.
"""

from __future__ import annotations

import argparse
import re
import textwrap

from ..options.presets import presets_text
from ..options.spec import Choice, Flag, NameOrPattern, options_of


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit code 2, as argparse's own)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def add_option_flags(parser, options_class) -> None:
    """One flag per option of an options dataclass (QuantizeOptions, Accumulator, ...), read from
    the option definitions of :mod:`mxsim.options` (an unset flag is not passed on)."""
    for definition in options_of(options_class):
        if not definition.cli:
            continue
        flag = "--" + definition.name.replace("_", "-")
        help_text = f"{definition.description} (default: {definition.default}; contract section {definition.section})"
        help_text = help_text.replace("%", "%%")
        if isinstance(definition.allowed, Flag):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif isinstance(definition.allowed, Choice):
            parser.add_argument(flag, choices=definition.allowed.values, default=None, help=help_text)
        elif isinstance(definition.allowed, NameOrPattern):  # checked by the options class, naming the allowed ones
            allowed = definition.allowed.text().replace("%", "%%")
            parser.add_argument(flag, default=None, metavar="NAME", help=f"{help_text}; {allowed}")
        else:
            parser.add_argument(flag, type=_integer, default=None, metavar="N", help=help_text)


def _integer(text: str) -> int:
    """An integer flag value, decimal or 0x-prefixed hex (NaN bit patterns read best in hex)."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r}") from None


def in_flags(command, options_classes, extra=("rand_bits",)):
    """``command`` with its errors worded in the flags the user typed: an option's Python name
    (``frac_bits=None``, ``mode='aligned'``, ``rand_bits``) becomes its flag (``--frac-bits`` not
    given, ``--mode aligned``, ``--rand-bits``)."""
    names = sorted({d.name for cls in options_classes for d in options_of(cls)} | set(extra), key=len, reverse=True)
    # name=value for every option; a bare name only where it cannot be an English word (an underscore)
    assigned = "|".join(names)
    bare = "|".join(name for name in names if "_" in name)
    pattern = re.compile(rf"(?<![\w/.-])(?:({assigned})=('[^']*'|[^\s,;)]+)|({bare})\b)")

    def flag(match) -> str:
        name, value = "--" + (match.group(1) or match.group(3)).replace("_", "-"), match.group(2)
        if value is None:
            return name
        return f"{name} not given" if value == "None" else f"{name} {value.strip(chr(39))}"

    def run(args):
        try:
            return command(args)
        except (ValueError, OverflowError) as error:
            raise type(error)(pattern.sub(flag, str(error))) from None

    return run


def given_options(args, options_class) -> dict:
    """The options of ``options_class`` whose flags were given, by option name (an unset flag is None)."""
    return {o.name: getattr(args, o.name) for o in options_of(options_class)
            if o.cli and getattr(args, o.name) is not None}


def presets_epilog() -> str:
    """The accumulator presets (the "preset" key of dot and dotgeneral suites, --preset of dot), one
    per line with its source: generated from mxsim.options.PRESETS."""
    lines = presets_text().replace("%", "%%").splitlines()
    return "accumulator presets (name: source):\n" + "\n".join(
        textwrap.fill(line, 110, initial_indent="  ", subsequent_indent="      ") for line in lines)
