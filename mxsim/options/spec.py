"""How an option is defined: the one place each option of mxsim lives.

Every option of the numerics contract is an :class:`Option`: its name, default, allowed values,
a one-line description and the contract section that defines it. Options of one operation are
the fields of a frozen dataclass (``QuantizeOptions``, ``Accumulator``, ...), each declared with
:func:`option`, which stores the :class:`Option` in the field's metadata. Validation and error
messages (:func:`validate_fields`), manifests (``as_dict``), the documentation's option tables
and the CLI's flags all read these definitions, so an option cannot be documented, exposed or
recorded in one place and forgotten in another.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Option",
    "Choice",
    "NameOrPattern",
    "Names",
    "Flag",
    "IntRange",
    "Data",
    "option",
    "options_of",
    "option_named",
    "choices_of",
    "validate_fields",
    "options_from_kwargs",
    "check_option_names",
    "check_choice",
]


def check_choice(name: str, value, allowed) -> None:
    """Raise ValueError unless ``value`` is one of ``allowed``, naming the option and the choices."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; expected one of: {', '.join(allowed)}")


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of names, or None where ``none`` says what None means."""

    values: tuple[str, ...]
    none: str = ""

    def accepts(self, value) -> bool:
        return (value is None and bool(self.none)) or (isinstance(value, str) and value in self.values)

    def text(self) -> str:
        choices = f"one of: {', '.join(self.values)}"
        return f"{choices}, or None ({self.none})" if self.none else choices


@dataclass(frozen=True)
class NameOrPattern:
    """One of a fixed set of names, or a name matching ``pattern`` (a regular expression, matched
    whole); ``pattern_text`` says what such names mean."""

    values: tuple[str, ...]
    pattern: str
    pattern_text: str

    def accepts(self, value) -> bool:
        return isinstance(value, str) and (value in self.values or re.fullmatch(self.pattern, value) is not None)

    def text(self) -> str:
        return f"one of: {', '.join(self.values)}, or {self.pattern_text}"


@dataclass(frozen=True)
class Names:
    """A tuple of names (a list is read as a tuple), or None where ``none`` says what None means."""

    what: str
    none: str

    def accepts(self, value) -> bool:
        if value is None:
            return True
        return isinstance(value, tuple) and bool(value) and all(isinstance(v, str) and v for v in value)

    def text(self) -> str:
        return f"a non-empty tuple of {self.what}, or None ({self.none})"


@dataclass(frozen=True)
class Flag:
    """True or False (a real bool: 1 and 0 are refused)."""

    def accepts(self, value) -> bool:
        return isinstance(value, bool)

    def text(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class IntRange:
    """An integer in [low, high] (bools refused), or None where ``none`` says what None means.
    ``tries``: the values worth trying when the option is unset and the range is too wide to try
    whole (``check --explain``'s candidates); empty: none."""

    low: int
    high: int
    none: str = ""
    tries: tuple[int, ...] = ()

    def accepts(self, value) -> bool:
        if value is None:
            return bool(self.none)
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    def text(self) -> str:
        span = f"an integer in [{self.low}, {self.high}]"
        return f"{span} or None ({self.none})" if self.none else span


@dataclass(frozen=True)
class Data:
    """Caller-supplied data rather than a setting (checked where it is read); ``what`` describes it."""

    what: str

    def accepts(self, value) -> bool:
        return True

    def text(self) -> str:
        return self.what


@dataclass(frozen=True)
class Option:
    """One option: ``name``, ``default``, ``allowed`` (a :class:`Choice`, :class:`Flag` or
    :class:`IntRange`), a one-line ``description`` and the contract ``section``. ``cli`` is False
    for options the command line does not take as a flag (data rather than a setting)."""

    name: str
    default: Any
    allowed: Choice | NameOrPattern | Names | Flag | IntRange | Data
    description: str
    section: str
    cli: bool = True

    def check(self, value) -> None:
        """Raise ValueError naming the option and its allowed values unless ``value`` is allowed."""
        if not self.allowed.accepts(value):
            raise ValueError(f"{self.name}={value!r} is not allowed; expected {self.allowed.text()}")


def option(default, allowed, description: str, section: str, *, cli: bool = True):
    """A dataclass field holding an option (its name is the field's name)."""
    if isinstance(allowed, tuple):
        allowed = Choice(allowed)
    definition = Option("", default, allowed, description, section, cli)
    return dataclasses.field(default=default, metadata={"option": definition})


@lru_cache(maxsize=None)
def options_of(options_class) -> tuple[Option, ...]:
    """The :class:`Option` of every field of an options dataclass, in field order."""
    found = []
    for f in dataclasses.fields(options_class):
        if "option" not in f.metadata:
            raise TypeError(f"{options_class.__name__}.{f.name} is not declared with mxsim.options.option()")
        found.append(dataclasses.replace(f.metadata["option"], name=f.name))
    return tuple(found)


def option_named(options_class, name: str) -> Option:
    """The definition of one option of an options dataclass."""
    for definition in options_of(options_class):
        if definition.name == name:
            return definition
    raise KeyError(f"{options_class.__name__} has no option {name!r}")


def choices_of(options_class, name: str) -> tuple[str, ...]:
    """The allowed names of a choice option."""
    allowed = option_named(options_class, name).allowed
    if not isinstance(allowed, Choice):
        raise TypeError(f"{options_class.__name__}.{name} is not a choice option")
    return allowed.values


def validate_fields(instance) -> None:
    """Check every field of an options dataclass against its own definition."""
    for definition in options_of(type(instance)):
        definition.check(getattr(instance, definition.name))


def check_option_names(options_class, names, what: str = "") -> None:
    """ValueError naming every name in ``names`` that is not a field of ``options_class``
    (``what`` says whose, e.g. "accumulator ") and listing the known ones."""
    known = [f.name for f in dataclasses.fields(options_class)]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ValueError(f"unknown {what}option(s) {', '.join(unknown)}; known options: {', '.join(known)}")


def options_from_kwargs(options_class, kwargs: dict, what: str = ""):
    """Build a frozen options dataclass from keywords, naming any unknown option (see
    :func:`check_option_names`)."""
    check_option_names(options_class, kwargs, what)
    return options_class(**kwargs)
