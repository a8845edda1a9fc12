"""The parameters of each kind of golden suite (``--params``, a manifest's ``params``).

The keys are the fields of the suite dataclasses (:data:`mxsim.golden.kinds.registry.KINDS`); a field
that takes a JSON object takes the fields of the options dataclass its suite class names in
``nested_options``. The
lists in ``mxsim golden generate --help``, in the error for a wrong key and in
docs/golden-vectors.md are all derived from these classes, so they cannot drift from them.
"""

from __future__ import annotations

import dataclasses
import difflib
import json


__all__ = ["suite_keys", "check_params", "keys_text", "keys_markdown"]


_REQUIRED = object()


def suite_keys(cls) -> list[tuple[str, object]]:
    """(key, default) of a suite or options dataclass, in declaration order; a required key's
    default is the marker ``_REQUIRED``."""
    keys = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            keys.append((f.name, f.default))
        elif f.default_factory is not dataclasses.MISSING:
            keys.append((f.name, f.default_factory()))
        else:
            keys.append((f.name, _REQUIRED))
    return keys


def _suggestion(key: str, known: list[str]) -> str:
    scores = [(difflib.SequenceMatcher(None, key, k).ratio(), -i, k) for i, k in enumerate(known)]
    score, _, best = max(scores, default=(0, 0, ""))
    return f"; did you mean {best!r}?" if score >= 0.6 else ""


def _check_keys(given: dict, cls, where: str) -> None:
    known = [name for name, _ in suite_keys(cls)]
    for key in given:
        if key not in known:
            raise ValueError(f"unknown key {key!r} {where}; known keys: {', '.join(known)}{_suggestion(str(key), known)}")


def check_params(kind: str, cls, params: dict) -> None:
    """Raise ValueError naming the suite kind, the key and the known keys for a key the suite
    kind does not take, a required key that is missing, true/false for an integer key, or an
    options key of the wrong type."""
    if not isinstance(params, dict):
        raise ValueError(f"the parameters of suite kind {kind} must be a JSON object, not {type(params).__name__}")
    _check_keys(params, cls, f"for suite kind {kind}")
    keys = suite_keys(cls)
    for name, default in keys:
        if default is _REQUIRED and name not in params:
            raise ValueError(f"suite kind {kind} needs key {name!r}; known keys: {', '.join(k for k, _ in keys)}")
    for name, default in keys:  # JSON true/false is no integer, though Python's bool is an int
        if type(default) is int and isinstance(params.get(name), bool):
            raise ValueError(f"{name}={json.dumps(params[name])} for suite kind {kind} is not allowed; expected an "
                             "integer")
    for name, options_class in cls.nested_options.items():
        if name in params:
            if not isinstance(params[name], dict):
                raise ValueError(f"{name!r} for suite kind {kind} must be a JSON object of {options_class.__name__} "
                                 f"fields, not {params[name]!r}")
            _check_keys(params[name], options_class, f"in {name!r} for suite kind {kind}")


def _show(default) -> str:
    if default is _REQUIRED:
        return "required"
    return f"default {default if isinstance(default, str) else json.dumps(default)}"


def _nested(kinds: dict) -> list[tuple[str, str, type]]:
    """(kind, field, options class) of every dict-valued field, in the kinds' order."""
    return [(kind, name, options) for kind, cls in kinds.items() for name, options in cls.nested_options.items()]


def keys_text(kinds: dict) -> str:
    """One line per suite kind of ``kinds`` (kind -> suite class: :data:`mxsim.golden.kinds.registry.KINDS`),
    then one per options object: ``key (default ...)``."""
    lines = [f"{kind}: " + ", ".join(f"{name} ({_show(d)})" for name, d in suite_keys(cls)) for kind, cls in kinds.items()]
    for kind, name, options_class in _nested(kinds):
        keys = ", ".join(f"{k} ({_show(d)})" for k, d in suite_keys(options_class))
        lines.append(f"{kind} {name} ({options_class.__name__}): {keys}")
    return "\n".join(lines)


def keys_markdown(kinds: dict) -> str:
    """The same as a Markdown table (docs/golden-vectors.md holds it verbatim)."""
    rows = ["| kind | keys |", "|---|---|"]
    for kind, cls in kinds.items():
        rows.append(f"| `{kind}` | " + ", ".join(f"`{name}` ({_show(d)})" for name, d in suite_keys(cls)) + " |")
    for kind, name, options_class in _nested(kinds):
        rows.append(f"| `{kind}` `{name}` object ({options_class.__name__}) | "
                    + ", ".join(f"`{k}` ({_show(d)})" for k, d in suite_keys(options_class)) + " |")
    return "\n".join(rows)
