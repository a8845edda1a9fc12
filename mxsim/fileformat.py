"""A self-describing file for one :class:`mxsim.MXTensor`: ``save(tensor, path)`` / ``load(path)``.

File layout, version 2 (written by default; all integers little-endian)::

    offset 0    8 bytes   magic  b"\\x89MXSIM\\r\\n"   (the \\x89 and \\r\\n catch 7-bit and text-mode damage)
    offset 8    uint16    version (2)
    offset 10   uint32    header length H in bytes (at most MAX_HEADER_BYTES)
    offset 14   32 bytes  SHA-256 of bytes 0..13 (magic, version, H) followed by the H header bytes
    offset 46   H bytes   header: UTF-8 JSON object (keys sorted)
    46 + H      payload   the packed blocks (:mod:`mxsim.fast.pack`), exactly ``payload_bytes`` long;
                          its SHA-256 is the header's ``payload_sha256``, so the header's digest covers it too

Version 1 (still read; written with ``save(..., version=1)``) has no checksum: the header follows
the 14-byte prefix directly, at offset 14, then the payload; its header has no ``payload_sha256``.

Header fields:

* ``format``: the block format's ``describe()``, with ``element``, ``scale`` and
  ``tensor_scale`` replaced by those formats' own ``describe()`` (or null); Fractions are
  strings ("1/64", "448");
* ``shape`` (list of ints), ``axis`` (int, normalized), ``n_blocks`` (int);
* ``layout``: ``{"element_stream": ..., "scale_placement": ...}``;
* ``options``: ``QuantizeOptions.as_dict()``;
* ``tensor_scale``: the exact tensor scale as a fraction string ("1/2688"; a positive float32
  value) or null;
* ``payload_bytes`` (int), ``mxsim_version`` (str, informative only);
* version 2 only: ``payload_sha256``, the payload's SHA-256 as 64 lowercase hex digits;
* optional, only for a tensor made under a profile (:mod:`mxsim.options.profiles`): ``profile``,
  :meth:`Profile.as_dict` (its name, source, version and every option it sets). Loading gives
  the tensor that profile back (so ``dequantize`` follows it) and refuses a name this mxsim does
  not have, or one whose recorded options differ from this mxsim's profile of that name.

Loading reads the prefix and the header first and checks them (magic, version, header length,
the header digest, every field) before it reads the payload, whose length the header fixes: a
header that declares more payload than the file holds is refused before anything of that size is
allocated. It rebuilds the format from the catalogue by name and requires the header's
parameters to match it, so a file written by a different catalogue is refused rather than
misread; formats outside the catalogue cannot be saved. Every problem is a ValueError that names
the file and, for a header problem, the field. Writes are atomic: a temporary file in the
destination's directory, fsync, ``os.replace``; on any failure the temporary file is removed and
the destination is left as it was. A symbolic link stays a link (its target is written), a FIFO
or character device is written through, never replaced (:func:`mxsim.writing.atomic_write`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import struct
from fractions import Fraction
from typing import NamedTuple

from . import ref
from .reading import available_memory, loads_json, shorten, shorten_list
from .writing import atomic_write, file_mode
from ._version import __version__
from .options import QuantizeOptions
from .options.profiles import get_profile
from .packing import DEFAULT_ELEMENT_STREAM, DEFAULT_SCALE_PLACEMENT, check_layout, packed_nbytes, tensor_layout
from .tensor import MXTensor
from .tensor_pack import pack, unpack
from .formats import format_names, get_format

__all__ = [
    "save",
    "load",
    "read",
    "TensorFile",
    "MAGIC",
    "VERSION",
    "SUPPORTED_VERSIONS",
    "MAX_HEADER_BYTES",
    "atomic_write",
    "file_mode",
]

MAGIC = b"\x89MXSIM\r\n"
VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
MAX_HEADER_BYTES = 1 << 20  # a real header takes about 3 KB
MAX_NESTING = 8  # a real header nests 3 deep (header, format, its element format)
MAX_DIMS = 64  # NumPy's limit
# NumPy refuses an array whose size (zero-length axes counted as 1) times its item size exceeds
# 2^63 bytes; float64 results of 2^59 elements stay within that.
MAX_ELEMENTS = 1 << 59
_PREFIX = struct.Struct("<8sHI")  # magic, version, header length
_DIGEST_BYTES = 32  # SHA-256
_CHUNK = 1 << 24  # payload read size when the file's size is unknown (pipes)
_FRACTION = re.compile(r"[0-9]{1,60}(/[0-9]{1,60})?")  # float32 values need at most 39 and 45 digits
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")

# Every header field: its JSON type and what is allowed (the error messages quote this).
_FIELDS = {
    "format": (dict, "an object: the block format's parameters"),
    "shape": (list, f"a list of at most {MAX_DIMS} non-negative integers"),
    "axis": (int, "an integer"),
    "n_blocks": (int, "a non-negative integer"),
    "layout": (dict, 'an object {"element_stream": ..., "scale_placement": ...}'),
    "options": (dict, "an object of QuantizeOptions fields"),
    "tensor_scale": ((str, type(None)), "null or a positive float32 value as a fraction string such as '1/2688'"),
    "payload_bytes": (int, "a non-negative integer"),
    "mxsim_version": (str, "a string"),
    "payload_sha256": (str, "the payload's SHA-256 as 64 lowercase hex digits"),
}
_VERSION_FIELDS = {1: tuple(name for name in _FIELDS if name != "payload_sha256"), 2: tuple(_FIELDS)}
_OPTIONAL_FIELDS = {"profile": (dict, "an object: the name and options of the profile the tensor was made under")}


def _jsonable(value):
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return value


def _describe_format(fmt) -> dict:
    """The block format's full parameters: its own describe() with its component formats' describe()."""
    out = _jsonable(fmt.describe())
    out["element"] = _jsonable(fmt.element.describe())
    out["scale"] = _jsonable(fmt.scale.describe())
    out["tensor_scale"] = None if fmt.tensor_scale is None else _jsonable(fmt.tensor_scale.describe())
    return out


# --------------------------------------------------------------------------------------------------
# Writing


def save(
    tensor,
    path,
    element_stream: str = DEFAULT_ELEMENT_STREAM,
    scale_placement: str = DEFAULT_SCALE_PLACEMENT,
    version: int = VERSION,
) -> None:
    """Write ``tensor`` (an :class:`mxsim.MXTensor`) to ``path`` in the layout given.

    ``version``: the file version, 2 (default: with SHA-256 checksums) or 1 (no checksum, for
    readers that predate version 2).
    """
    if not isinstance(tensor, MXTensor):
        raise ValueError(f"tensor must be an MXTensor, got {type(tensor).__name__}")
    check_layout(element_stream, scale_placement)
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        allowed = ", ".join(map(str, SUPPORTED_VERSIONS))
        raise ValueError(f"version={version!r} is not allowed; expected one of: {allowed}")
    fmt = tensor.fmt
    known = format_names("block")
    if fmt.name not in known or get_format(fmt.name) != fmt:
        raise ValueError(
            f"format {fmt.name!r} is not a catalogue block format, so a file could not be loaded back; "
            f"saveable formats: {', '.join(known)}"
        )
    payload = pack(tensor, element_stream, scale_placement)
    header = {
        "format": _describe_format(fmt),
        "shape": [int(s) for s in tensor.shape],
        "axis": int(tensor.axis),
        "n_blocks": int(tensor.scales.size),
        "layout": {"element_stream": element_stream, "scale_placement": scale_placement},
        "options": tensor.options.as_dict(),
        "tensor_scale": None if tensor.tensor_scale is None else str(Fraction(tensor.tensor_scale)),
        "payload_bytes": len(payload),
        "mxsim_version": _version(),
    }
    if version >= 2:
        header["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    if tensor.profile is not None:
        header["profile"] = tensor.profile.as_dict()
    blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    prefix = _PREFIX.pack(MAGIC, version, len(blob))
    digest = hashlib.sha256(prefix + blob).digest() if version >= 2 else b""
    atomic_write(path, prefix + digest + blob + payload)


def _version() -> str:
    return __version__


# --------------------------------------------------------------------------------------------------
# Reading


class TensorFile(NamedTuple):
    """What :func:`read` finds in a tensor file, every check passed.

    * ``tensor``: the :class:`mxsim.MXTensor`;
    * ``version``: the file version (1 or 2);
    * ``header``: the header as a dict (its JSON fields, see the module docstring);
    * ``checksum``: the payload's SHA-256 hex digest, verified together with the header's digest
      (version 2), or None (version 1 files have no checksum);
    * ``size``: the file's length in bytes.
    """

    tensor: object
    version: int
    header: dict
    checksum: str | None
    size: int


class _Contents(NamedTuple):
    """The header's fields, checked: everything :func:`unpack` needs, and the payload's length and digest."""

    fmt: object
    shape: list
    axis: int
    element_stream: str
    scale_placement: str
    options: QuantizeOptions
    tensor_scale: Fraction | None
    payload_bytes: int
    payload_sha256: str | None


def load(path):
    """Read an :class:`mxsim.MXTensor` written by :func:`save`.

    Raises ValueError, naming the file (and for a header problem the field), for a file that is
    not an mxsim tensor file (bad magic), an unsupported version, a header that is too long,
    corrupt or fails its checksum, a format this catalogue does not have (or has with other
    parameters), a payload of the wrong length or that fails its checksum, or payload bits no
    tensor can hold.
    """
    return read(path).tensor


def read(path) -> TensorFile:
    """Read and check a tensor file: :func:`load`'s tensor, with the file's version, header and checksum."""
    where = os.fspath(path)
    with open(path, "rb") as file:
        try:
            return _read(file, _file_size(file))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None


def _file_size(file) -> int | None:
    """The length of a regular file; None for a pipe or a device, whose length is not known ahead."""
    status = os.fstat(file.fileno())
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _read(file, size: int | None) -> TensorFile:
    prefix = file.read(_PREFIX.size)
    version, header_len = _check_prefix(prefix)
    digest = _read_exactly(file, _DIGEST_BYTES if version >= 2 else 0, "header checksum")
    offset = _PREFIX.size + len(digest)
    if size is not None and header_len > size - offset:
        raise ValueError(f"truncated header ({max(size - offset, 0)} of {header_len} bytes)")
    blob = _read_exactly(file, header_len, "header")
    if version >= 2 and hashlib.sha256(prefix + blob).digest() != digest:
        raise ValueError("header checksum mismatch: the prefix or the header is damaged")
    header = _parse_header(blob, version)
    contents = _contents(header)
    payload = _read_payload(file, contents.payload_bytes, None if size is None else size - offset - header_len)
    if contents.payload_sha256 is not None and hashlib.sha256(payload).hexdigest() != contents.payload_sha256:
        raise ValueError("payload checksum mismatch: the payload is damaged")
    tensor = unpack(
        payload,
        contents.fmt,
        contents.shape,
        contents.axis,
        contents.element_stream,
        contents.scale_placement,
        contents.tensor_scale,
        **contents.options.as_dict(),
    )
    tensor.profile = _profile(header.get("profile"), contents.fmt)
    length = offset + header_len + len(payload)
    return TensorFile(tensor, version, header, contents.payload_sha256, length)


def _check_prefix(data: bytes) -> tuple[int, int]:
    """(version, header length) from the file's first 14 bytes, checked."""
    if len(data) < _PREFIX.size:
        raise ValueError(f"too short for an mxsim tensor file ({len(data)} bytes; the prefix is {_PREFIX.size})")
    magic, version, header_len = _PREFIX.unpack(data)
    if magic != MAGIC:
        raise ValueError(f"not an mxsim tensor file: bad magic {magic!r} (expected {MAGIC!r})")
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"unsupported mxsim file version {version}; this mxsim reads version(s) "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
        )
    if header_len > MAX_HEADER_BYTES:
        raise ValueError(f"corrupt prefix: header length {header_len} bytes exceeds the limit of {MAX_HEADER_BYTES}")
    return version, header_len


def _read_exactly(file, count: int, what: str) -> bytes:
    """``count`` bytes (``count`` is at most MAX_HEADER_BYTES + 32: one read)."""
    data = file.read(count)
    if len(data) < count:
        raise ValueError(f"truncated {what} ({len(data)} of {count} bytes)")
    return data


def _read_payload(file, expected: int, available: int | None) -> bytes:
    """The payload, exactly ``expected`` bytes; ``available``: what the file holds after the header, if known.

    A regular file's length is checked before the read; a pipe is read in chunks, so a header
    that declares more than the pipe delivers costs no more memory than what arrives, and a
    header declaring more than the memory available (which the whole payload must fit in, and
    an endless pipe would fill) is refused before the first chunk is read.
    """
    if available is not None and available != expected:
        raise _length_error(available, expected)
    if available is None and expected > available_memory():
        raise _FieldError("payload_bytes", f"{expected} bytes from a pipe, more than the {available_memory()} bytes "
                                           "of memory available to hold them (read it from a regular file)")
    if available is not None:
        return file.read(expected)
    data = bytearray()
    while len(data) < expected:
        chunk = file.read(min(_CHUNK, expected - len(data)))
        if not chunk:
            raise _length_error(len(data), expected)
        data += chunk
    if file.read(1):
        raise _length_error(expected + 1, expected)
    return bytes(data)


def _length_error(actual: int, expected: int) -> ValueError:
    state = "truncated" if actual < expected else "trailing data"
    return ValueError(f"payload is {actual} bytes; expected {expected} ({state})")


# --------------------------------------------------------------------------------------------------
# The header, field by field


class _FieldError(ValueError):
    """A header field that is missing or not allowed."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"corrupt header: field {name!r}: {problem}")


def _shown(value) -> str:
    """A field's value for an error message, cut short (a header may hold a megabyte of it)."""
    return _cut(repr(value))


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bad(name: str, value, expected: str | None = None) -> _FieldError:
    return _FieldError(name, f"{_shown(value)} is not allowed; expected {expected or {**_FIELDS, **_OPTIONAL_FIELDS}[name][1]}")


def _parse_header(blob: bytes, version: int) -> dict:
    """The header's JSON object, with exactly the fields of its version, nesting at most MAX_NESTING deep."""
    try:
        header = loads_json(blob)  # a repeated key is refused: which one counts is not for us to guess
    except RecursionError:
        raise ValueError(f"corrupt header: JSON nested deeper than {MAX_NESTING} levels") from None
    except ValueError as error:  # UnicodeDecodeError, JSONDecodeError, a repeated key, numbers beyond int's digits
        raise ValueError(f"corrupt header: {shorten(str(error))}") from None
    if not isinstance(header, dict):
        raise ValueError(f"corrupt header: expected a JSON object, got {type(header).__name__}")
    if _depth(header) > MAX_NESTING:
        raise ValueError(f"corrupt header: JSON nested deeper than {MAX_NESTING} levels")
    fields = _VERSION_FIELDS[version]
    unknown = sorted(set(header) - set(fields) - set(_OPTIONAL_FIELDS))
    if unknown:
        raise ValueError(
            f"corrupt header: unknown field(s) {shorten_list(map(repr, unknown))}; a version {version} "
            f"header has: {', '.join(fields)}"
        )
    for name in fields + tuple(n for n in _OPTIONAL_FIELDS if n in header):
        _typed(header, name)
    return header


def _depth(value) -> int:
    """How deeply ``value`` nests lists and objects (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _typed(header: dict, name: str):
    """The field's value, present and of its JSON type (a bool is not an integer)."""
    if name not in header:
        raise _FieldError(name, "missing")
    value, (kind, _) = header[name], {**_FIELDS, **_OPTIONAL_FIELDS}[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _bad(name, value)
    return value


def _contents(header: dict) -> _Contents:
    """Every field checked against the others and the catalogue; the payload's length follows from them."""
    fmt = _format(header["format"])
    shape = _shape(header["shape"])
    element_stream, scale_placement = _layout(header["layout"])
    options = _options(header["options"], fmt)
    tensor_scale = _tensor_scale(header["tensor_scale"], fmt)
    try:
        codes_shape, axis = tensor_layout(fmt, shape, header["axis"])
    except ValueError as error:
        raise _FieldError("axis", str(error)) from None
    _check_elements(shape, codes_shape)
    n_blocks = math.prod(codes_shape) // fmt.block_size
    if header["n_blocks"] != n_blocks:
        raise _FieldError("n_blocks", f"{header['n_blocks']}, but shape {shape} holds {n_blocks} blocks")
    payload_bytes = packed_nbytes(fmt, n_blocks, element_stream, scale_placement)
    if header["payload_bytes"] != payload_bytes:
        raise _FieldError(
            "payload_bytes",
            f"{header['payload_bytes']}, but {n_blocks} blocks of {fmt.name} in this layout take {payload_bytes}",
        )
    digest = header.get("payload_sha256")
    if digest is not None and not _HEX_DIGEST.fullmatch(digest):
        raise _bad("payload_sha256", digest)
    return _Contents(fmt, shape, axis, element_stream, scale_placement, options, tensor_scale, payload_bytes, digest)


def _profile(recorded: dict | None, fmt):
    """The profile a header names, whose recorded options must be this mxsim's and which must have
    the file's format (the rule of quantize and dequantize --profile); None without one."""
    if recorded is None:
        return None
    try:
        profile = get_profile(recorded.get("name"))
    except ValueError as error:
        raise _FieldError("profile", str(error)) from None
    if _jsonable(profile.as_dict()) != recorded:
        raise _FieldError(
            "profile",
            f"the options recorded for {profile.name!r} differ from this mxsim's profile of that name: {_cut(str(recorded))}",
        )
    try:
        profile.quantize_options(fmt)  # a block profile that has the format
    except ValueError as error:
        raise _FieldError("profile", str(error)) from None
    return profile


def _format(described: dict):
    """The catalogue block format the header names, whose parameters the header must repeat exactly."""
    name = described.get("name")
    known = format_names("block")
    if not isinstance(name, str) or name not in known:
        raise _FieldError("format", f"unknown format {_shown(name)}; known block formats: {', '.join(known)}")
    fmt = get_format(name)
    expected = _describe_format(fmt)
    if described != expected:
        diff = sorted(key for key in set(expected) | set(described) if expected.get(key) != described.get(key))
        raise _FieldError(
            "format",
            f"the parameters of {name!r} differ from this mxsim's catalogue in: {_cut(', '.join(diff))}",
        )
    return fmt


def _shape(shape: list) -> list:
    if len(shape) > MAX_DIMS or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise _bad("shape", shape)
    return shape


def _check_elements(shape: list, codes_shape: tuple) -> None:
    """A bound on the element count that NumPy can hold, zero-length axes counted as 1 (as NumPy
    checks them); non-empty tensors are held to the file's length by ``payload_bytes`` as well."""
    if math.prod(max(s, 1) for s in codes_shape) > MAX_ELEMENTS:
        raise _FieldError("shape", f"{_shown(shape)} holds more than 2^{MAX_ELEMENTS.bit_length() - 1} elements")


def _layout(layout: dict) -> tuple[str, str]:
    if set(layout) != {"element_stream", "scale_placement"}:
        raise _bad("layout", layout)
    try:
        check_layout(layout["element_stream"], layout["scale_placement"])
    except (ValueError, TypeError) as error:
        raise _FieldError("layout", str(error)) from None
    return layout["element_stream"], layout["scale_placement"]


def _options(options: dict, fmt) -> QuantizeOptions:
    try:
        checked = QuantizeOptions.from_kwargs(**options)
        checked.check_format(fmt)
    except (ValueError, TypeError) as error:
        raise _FieldError("options", str(error)) from None
    return checked


def _tensor_scale(text: str | None, fmt) -> Fraction | None:
    """The exact tensor scale: null, or (formats with a tensor scale) a positive float32 value as p or p/q."""
    if text is None:
        return None
    if fmt.tensor_scale is None:
        raise _bad("tensor_scale", text, f"null: format {fmt.name!r} has no tensor scale")
    try:
        value = Fraction(text) if _FRACTION.fullmatch(text) else None
    except ZeroDivisionError:
        value = None
    if value is None or value <= 0 or not _is_float32(value):
        raise _bad("tensor_scale", text)
    return value


def _is_float32(value: Fraction) -> bool:
    """Whether ``value`` is exactly a finite float32 value (checked with integers only)."""
    code = ref.encode(value, "fp32")
    decoded = ref.decode(code, "fp32")
    return decoded.is_finite and decoded.value == value
