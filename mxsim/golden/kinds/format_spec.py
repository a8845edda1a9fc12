"""Block and element formats as suite parameters: a catalogue name, or a JSON object of the format's
parameters (a custom format), so that ``--params`` can name any format and a manifest's ``params``
rebuild it (``mxsim golden verify``).

A block format object has the keys of :class:`mxsim.formats.BlockFormat`: ``name``, ``element``,
``block_size``, ``scale``, ``subblock_size``, ``subscale_bits``, ``tensor_scale``. ``element`` is a
catalogue name or an object: a float element (``name``, ``exponent_bits``, ``mantissa_bits``,
``bias``, ``signed``, ``subnormals``, ``specials``) or an integer one (``name``, ``bits``,
``frac_bits``, ``encoding``). ``scale`` is ``e8m0`` or ``ue4m3`` (or an object of their
parameters), ``tensor_scale`` null or ``fp32``. Example, FP4 with an E8M0 scale per 16::

    {"name": "mxfp4_k16", "element": "fp4_e2m1", "block_size": 16, "scale": "e8m0"}

A catalogue format is recorded by its name (so its manifests are unchanged); a custom one by the
object :func:`format_param` gives, which holds every parameter. A custom name must not be a
catalogue name (unless the parameters are the catalogue format's) and is used in directory names:
letters, digits and ``_`` only.
"""

from __future__ import annotations

import dataclasses
import re

from ...formats import FORMATS, BlockFormat, FloatFormat, IntFormat, get_format

__all__ = ["block_format", "element_format", "format_param"]

_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_FLOAT_KEYS = ("name", "exponent_bits", "mantissa_bits", "bias", "signed", "subnormals", "specials")
_INT_KEYS = ("name", "bits", "frac_bits", "encoding")
_BLOCK_KEYS = ("name", "element", "block_size", "scale", "subblock_size", "subscale_bits", "tensor_scale")


def _check_keys(value: dict, allowed: tuple, required: tuple, what: str) -> None:
    unknown = [key for key in value if key not in allowed]
    if unknown:
        raise ValueError(f"{what}: unknown key {unknown[0]!r}; allowed keys: {', '.join(allowed)}")
    missing = [key for key in required if key not in value]
    if missing:
        raise ValueError(f"{what}: missing key {missing[0]!r}; required keys: {', '.join(required)}")


def _check_name(name, what: str, fmt) -> None:
    if not (isinstance(name, str) and _NAME.fullmatch(name)):
        raise ValueError(f"{what}: name={name!r} is not allowed; expected 1 to 64 letters, digits or '_'")
    known = FORMATS.get(name.lower())
    if known is not None and known != fmt:
        raise ValueError(
            f"{what}: name={name!r} is the catalogue format {known.name!r} with other parameters; give the custom "
            "format another name, or pass the catalogue name alone"
        )


def _build(cls, value: dict, what: str):
    try:
        return cls(**value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what}: {error}") from None


def _named(value, key: str, kind: str):
    """A catalogue format by name; an error names the parameter ``key``."""
    try:
        return get_format(value, kind=kind)
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from None


def element_format(value, key: str = "element", kind: str = "element"):
    """An element (or scale) format from a catalogue name or an object of its parameters."""
    if not isinstance(value, dict):
        return _named(value, key, kind)
    what = f"{key} (a custom {'scale' if kind == 'float' else 'element'} format)"
    if "bits" in value:
        _check_keys(value, _INT_KEYS, ("name", "bits", "frac_bits"), what)
        fmt = _build(IntFormat, value, what)
    else:
        _check_keys(value, _FLOAT_KEYS, ("name", "exponent_bits", "mantissa_bits", "bias"), what)
        fmt = _build(FloatFormat, value, what)
    get_format(fmt, kind=kind)  # an integer format where a scale is asked for is refused here
    _check_name(value["name"], what, fmt)
    return fmt


def block_format(value, key: str = "block"):
    """A block format from a catalogue name or an object of its parameters (module docstring)."""
    if not isinstance(value, dict):
        return _named(value, key, "block")
    what = f"{key} (a custom block format)"
    _check_keys(value, _BLOCK_KEYS, ("name", "element", "block_size", "scale"), what)
    parts = dict(value)
    parts["element"] = element_format(value["element"], f"{key}.element")
    parts["scale"] = element_format(value["scale"], f"{key}.scale", kind="float")
    if parts.get("tensor_scale") is not None:
        parts["tensor_scale"] = element_format(value["tensor_scale"], f"{key}.tensor_scale", kind="float")
    fmt = _build(BlockFormat, parts, what)
    _check_name(value["name"], what, fmt)
    return FORMATS.get(fmt.name.lower(), fmt)


def _param(fmt) -> str | dict:
    if FORMATS.get(fmt.name) == fmt:
        return fmt.name
    return {f.name: getattr(fmt, f.name) for f in dataclasses.fields(fmt) if f.init}


def format_param(fmt) -> str | dict:
    """How a suite records a format in its ``params``: the catalogue name, or every parameter."""
    if FORMATS.get(fmt.name) == fmt:
        return fmt.name
    if fmt.kind != "block":
        return _param(fmt)
    record = {name: getattr(fmt, name) for name in _BLOCK_KEYS}
    for name in ("element", "scale", "tensor_scale"):
        if record[name] is not None:
            record[name] = _param(record[name])
    return record
