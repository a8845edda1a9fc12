"""A self-describing file for one :class:`mxsim.MXTensor`: ``save(tensor, path)`` / ``load(path)``.

File layout (all integers little-endian)::

    offset 0   8 bytes   magic  b"\\x89MXSIM\\r\\n"   (the \\x89 and \\r\\n catch 7-bit and text-mode damage)
    offset 8   uint16    version (VERSION = 1)
    offset 10  uint32    header length H in bytes
    offset 14  H bytes   header: UTF-8 JSON object (keys sorted)
    14 + H     payload   the packed blocks (:mod:`mxsim.fast.pack`), exactly ``payload_bytes`` long

Header fields (version 1):

* ``format``: the block format's ``describe()``, with ``element``, ``scale`` and
  ``tensor_scale`` replaced by those formats' own ``describe()`` (or null); Fractions are
  strings ("1/64", "448");
* ``shape`` (list of ints), ``axis`` (int, normalized), ``n_blocks`` (int);
* ``layout``: ``{"element_stream": ..., "scale_placement": ...}``;
* ``options``: ``QuantizeOptions.as_dict()``;
* ``tensor_scale``: the exact tensor scale as a fraction string ("1/2688") or null;
* ``payload_bytes`` (int), ``mxsim_version`` (str, informative only).

Loading rebuilds the format from the catalogue by name and requires the header's parameters to
match it, so a file written by a different catalogue is refused rather than misread; formats
outside the catalogue cannot be saved. Writes are atomic: a temporary file in the destination's
directory, fsync, ``os.replace``; on any failure the temporary file is removed and the
destination is left as it was.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import tempfile
from fractions import Fraction

from .options import QuantizeOptions
from .formats.packing import DEFAULT_ELEMENT_STREAM, DEFAULT_SCALE_PLACEMENT, check_layout, packed_nbytes, tensor_layout
from .tensor_pack import pack, unpack
from .formats import format_names, get_format

__all__ = ["save", "load", "MAGIC", "VERSION", "SUPPORTED_VERSIONS", "atomic_write", "file_mode"]

MAGIC = b"\x89MXSIM\r\n"
VERSION = 1
SUPPORTED_VERSIONS = (1,)
_PREFIX = struct.Struct("<8sHI")  # magic, version, header length

# read once, while the import is single-threaded: os.umask can only be read by setting it
_UMASK = os.umask(0)
os.umask(_UMASK)


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


def file_mode(path) -> int:
    """The permissions a file written to ``path`` gets: an existing file's, else 0o666 minus the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_UMASK


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same directory, fsync, os.replace.

    On any failure the temp file is removed and an existing ``path`` is untouched. A new file
    gets the usual permissions (0o666 minus the umask); a replaced file keeps its mode.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    mode = file_mode(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise OSError(error.errno, f"cannot write {path}: no temporary file in {directory}: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), mode)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename durable; not every platform allows this
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save(
    tensor, path, element_stream: str = DEFAULT_ELEMENT_STREAM, scale_placement: str = DEFAULT_SCALE_PLACEMENT
) -> None:
    """Write ``tensor`` (an :class:`mxsim.MXTensor`) to ``path`` in the layout given."""
    from .tensor import MXTensor

    if not isinstance(tensor, MXTensor):
        raise ValueError(f"tensor must be an MXTensor, got {type(tensor).__name__}")
    check_layout(element_stream, scale_placement)
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
    blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    atomic_write(path, _PREFIX.pack(MAGIC, VERSION, len(blob)) + blob + payload)


def _version() -> str:
    from . import __version__

    return __version__


def _field(header: dict, name: str, kind: type, what: str):
    if name not in header:
        raise ValueError(f"corrupt header: missing field {name!r}")
    value = header[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"corrupt header: field {name!r} = {value!r}; expected {what}")
    return value


def load(path):
    """Read an :class:`mxsim.MXTensor` written by :func:`save`.

    Raises ValueError for a file that is not an mxsim tensor file (bad magic), an unsupported
    version, a corrupt header, a format this catalogue does not have (or has with other
    parameters), or a payload of the wrong length.
    """
    with open(path, "rb") as file:
        data = file.read()
    where = os.fspath(path)
    if len(data) < _PREFIX.size:
        raise ValueError(
            f"{where}: too short for an mxsim tensor file ({len(data)} bytes; the prefix is {_PREFIX.size})"
        )
    magic, version, header_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise ValueError(f"{where}: not an mxsim tensor file: bad magic {magic!r} (expected {MAGIC!r})")
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"{where}: unsupported mxsim file version {version}; this mxsim reads version(s) "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
        )
    body = data[_PREFIX.size :]
    if header_len > len(body):
        raise ValueError(f"{where}: truncated header ({len(body)} of {header_len} bytes)")
    try:
        header = json.loads(body[:header_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{where}: corrupt header: {error}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{where}: corrupt header: expected a JSON object")
    try:
        return _from_header(header, body[header_len:])
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def _from_header(header: dict, payload: bytes):
    described = _field(header, "format", dict, "an object")
    name = described.get("name")
    known = format_names("block")
    if name not in known:
        raise ValueError(f"header names an unknown format {name!r}; known block formats: {', '.join(known)}")
    fmt = get_format(name)
    expected = _describe_format(fmt)
    if described != expected:
        diff = sorted(key for key in set(expected) | set(described) if expected.get(key) != described.get(key))
        raise ValueError(
            f"header's parameters of format {name!r} differ from this mxsim's catalogue in: {', '.join(diff)}"
        )
    shape = _field(header, "shape", list, "a list of non-negative integers")
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise ValueError(f"corrupt header: field 'shape' = {shape!r}; expected a list of non-negative integers")
    axis = _field(header, "axis", int, "an integer")
    layout = _field(header, "layout", dict, "an object")
    element_stream, scale_placement = layout.get("element_stream"), layout.get("scale_placement")
    check_layout(element_stream, scale_placement)
    options = QuantizeOptions.from_kwargs(**_field(header, "options", dict, "an object"))
    options.check_format(fmt)
    tensor_scale = header.get("tensor_scale")
    if tensor_scale is not None:
        try:
            tensor_scale = Fraction(tensor_scale) if isinstance(tensor_scale, str) else None
        except (ValueError, ZeroDivisionError):
            tensor_scale = None
        if tensor_scale is None:
            raise ValueError(f"corrupt header: tensor_scale={header['tensor_scale']!r}; expected a fraction string")
    codes_shape, axis = tensor_layout(fmt, shape, axis)
    n_blocks = math.prod(codes_shape) // fmt.block_size
    if _field(header, "n_blocks", int, "an integer") != n_blocks:
        raise ValueError(f"corrupt header: n_blocks={header['n_blocks']}, but shape {shape} holds {n_blocks} blocks")
    expected_bytes = packed_nbytes(fmt, n_blocks, element_stream, scale_placement)
    if header.get("payload_bytes") != expected_bytes:
        raise ValueError(
            f"corrupt header: payload_bytes={header.get('payload_bytes')!r}, but {n_blocks} blocks of {name} "
            f"in this layout take {expected_bytes}"
        )
    if len(payload) != expected_bytes:
        raise ValueError(
            f"payload is {len(payload)} bytes; expected {expected_bytes} "
            f"({'truncated' if len(payload) < expected_bytes else 'trailing data'})"
        )
    return unpack(payload, fmt, shape, axis, element_stream, scale_placement, tensor_scale, **options.as_dict())
