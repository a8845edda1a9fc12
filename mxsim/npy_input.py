"""The .npy arrays the command line reads (``quantize IN.npy``, ``identify SOURCE.npy``, codes,
scales, random words, ``dot --c``): strictly, in bounded memory, with errors that name the file.

* A file that is not a .npy array (text, an mxsim tensor file, anything without NumPy's magic
  ``\\x93NUMPY``) is refused as such, never handed to ``np.load``'s pickle fallback (whose advice to
  load it with ``allow_pickle`` is wrong for every file mxsim reads); an .npz archive is named.
* The header's shape is checked against what the file holds and the memory available before NumPy
  allocates it; a pipe (``/dev/stdin``) is read once, as its header says.
* ``np.save`` of an ml_dtypes array records raw items (``'<V2'`` for bfloat16, ``'<V1'`` for
  float8_e4m3fn and the other 1-byte types) or, for float8_e5m2, ``'<f1'``, which NumPy cannot
  read back: :func:`typed_raw_items` reads raw items as the bit patterns of the type the caller
  names (``--source``), and without one 2-byte items as ml_dtypes bfloat16 (its only 2-byte type;
  NumPy's own float16 saves as ``'<f2'``) and ``'<f1'`` items as float8_e5m2; 1-byte raw items
  need ``--source`` (the file does not say which float8 type they are).
"""

from __future__ import annotations

import ast
import io
import math
import os
import stat

import numpy as np

from .reading import check_allocation, shorten

__all__ = ["NPY_MAGIC", "load_array", "typed_raw_items"]

NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_MXSIM_MAGIC = b"\x89MXSIM\r\n"  # mxsim.fileformat.MAGIC (not imported: the tensor layer sits above this module)

# raw item size -> the source types (mxsim.ref.sources) whose bit patterns it can hold, the first read by default
_RAW_SOURCES = {2: ("bf16", "fp16"), 1: ("fp8_e4m3", "fp8_e5m2")}
_E5M2_DESCRS = ("<f1", "|f1", ">f1")  # how numpy.save records ml_dtypes float8_e5m2 (no NumPy type is a 1-byte float)
MAX_HEADER_BYTES = 1 << 20  # a .npy header longer than this is no array mxsim reads


def load_array(path) -> np.ndarray:
    """The array of the .npy file ``path``; ValueError naming the file for anything else (see the
    module docstring)."""
    piped = _checked_npy_header(path)
    if piped is not None:
        return piped
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as error:  # numpy's messages for damaged .npy files or object arrays
        raise ValueError(f"{path}: cannot read as a .npy array ({shorten(str(error))})") from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise ValueError(f"{path}: is an .npz archive; expected a single .npy array")
    return array


def _not_npy(path, start: bytes) -> ValueError:
    """The error for a file whose first bytes ``start`` are not NumPy's magic."""
    if start.startswith(_ZIP_MAGIC):
        return ValueError(f"{path}: is an .npz archive (a zip file); expected a single .npy array")
    if start.startswith(_MXSIM_MAGIC):
        return ValueError(f"{path}: is an mxsim tensor file, not a .npy array (mxsim dequantize turns it into one)")
    if not start:
        return ValueError(f"{path}: is empty; expected a .npy array")
    return ValueError(f"{path}: is not a .npy array (it does not start with NumPy's magic \\x93NUMPY; "
                      "a text or other file cannot be read as one: save the array with numpy.save)")


def _read_header(file, path) -> tuple[int, tuple, bool, np.dtype]:
    """(bytes read, shape, Fortran order, dtype) of the .npy header at the start of ``file``, read
    once (a pipe cannot seek back) and at most :data:`MAX_HEADER_BYTES`. ml_dtypes' float8_e5m2
    saves as ``'<f1'``, which NumPy cannot read back: its items come back raw (``'V1'``) with the
    dtype metadata ``{"ml_dtypes": "float8_e5m2"}`` (see :func:`typed_raw_items`)."""
    start = file.read(len(NPY_MAGIC) + 2)
    if start[: len(NPY_MAGIC)] != NPY_MAGIC:
        raise _not_npy(path, start + file.read(len(_MXSIM_MAGIC) - len(start)) if start else b"")
    version = tuple(start[len(NPY_MAGIC):])
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise ValueError(f"{path}: cannot read as a .npy array (unknown .npy format version {version})")
    size_bytes = 2 if version == (1, 0) else 4
    size_field = file.read(size_bytes)
    size = int.from_bytes(size_field, "little")
    if len(size_field) != size_bytes or size > MAX_HEADER_BYTES:
        raise ValueError(f"{path}: cannot read as a .npy array (its header length is missing or over "
                         f"{MAX_HEADER_BYTES} bytes)")
    prefix = start + size_field + file.read(size)
    reader = io.BytesIO(prefix)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        np.lib.format.read_magic(reader)
        shape, fortran, dtype = read(reader)
    except (ValueError, EOFError, SyntaxError, TypeError) as error:
        if _descr(prefix[len(start) + size_bytes:], version) not in _E5M2_DESCRS:
            raise ValueError(f"{path}: cannot read as a .npy array ({shorten(str(error))})") from None
        reader = io.BytesIO(prefix.replace(b"f1'", b"u1'", 1))  # the same header with NumPy's uint8
        np.lib.format.read_magic(reader)
        shape, fortran, _ = read(reader)
        dtype = np.dtype("V1", metadata={"ml_dtypes": "float8_e5m2"})
    return len(prefix), shape, fortran, dtype


def _descr(header: bytes, version: tuple) -> object:
    """The ``descr`` of a .npy header dict, or None where it cannot be read."""
    try:
        value = ast.literal_eval(header.decode("utf8" if version == (3, 0) else "latin1"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        return None
    return value.get("descr") if isinstance(value, dict) else None


def _checked_npy_header(path) -> np.ndarray | None:
    """Refuse a file that is not a .npy file, or whose header declares more data than the file
    holds or than memory has room for (None: a regular file np.load may read). A file that is not
    a regular one (a pipe) cannot be read twice, and NumPy cannot read ml_dtypes' ``'<f1'``: their
    array, read here."""
    with open(path, "rb") as file:
        regular = stat.S_ISREG(os.fstat(file.fileno()).st_mode)
        header_bytes, shape, fortran, dtype = _read_header(file, path)
        if dtype.hasobject:
            raise ValueError(f"{path}: cannot read as a .npy array (an array of Python objects)")
        needed = math.prod(shape) * dtype.itemsize
        what = f"{path}: the array of shape {shorten(str(shape))} of {dtype}"
        if regular:
            held = os.fstat(file.fileno()).st_size - header_bytes
            if needed > held:
                raise ValueError(f"{what} needs {needed} bytes, the file holds {held} after its header (truncated or "
                                 "damaged)")
        check_allocation(needed, what)
        if regular and dtype.metadata is None:
            return None
        data = file.read(needed)
    if len(data) != needed:
        raise ValueError(f"{what} needs {needed} bytes, the stream held {len(data)}")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()


def typed_raw_items(array: np.ndarray, path, source: str | None = None) -> tuple[np.ndarray, str | None]:
    """(array, source) to quantize from an array of raw items (dtype ``'V1'``/``'V2'``, which is how
    ``np.save`` writes ml_dtypes float8 and bfloat16 arrays); any other array unchanged.

    With ``source`` (``--source``: a source type of :mod:`mxsim.ref.sources` of the items' width)
    the items are read as its unsigned bit patterns (``'<u1'``/``'<u2'``: numpy.save's ``'<V2'``
    says little-endian). Without it, 2-byte items are ml_dtypes bfloat16 (its only 2-byte type;
    NumPy's own float16 saves as ``'<f2'``), viewed as such with ml_dtypes (an optional import:
    ValueError saying so where it is missing); 1-byte items are refused (float8_e4m3fn,
    float8_e5m2 and the other ml_dtypes 1-byte types save alike). ValueError naming the file for
    those, a ``source`` of another width, and raw items of other sizes or with fields."""
    if array.dtype.kind != "V":
        return array, source
    size = array.dtype.itemsize
    known = (array.dtype.metadata or {}).get("ml_dtypes")  # float8_e5m2, whose '<f1' says what it is
    fits = _RAW_SOURCES.get(size, ()) if array.dtype.fields is None else ()
    if known == "float8_e5m2":
        fits = ("fp8_e5m2",)
    if not fits:
        raise ValueError(f"{path}: holds {size}-byte raw items ({array.dtype.str}), not numbers: expected a float "
                         "array, or bit patterns as unsigned integers")
    if source is not None:
        if source not in fits:
            raise ValueError(f"{path}: holds {size}-byte raw items; source {source!r} reads other bit patterns "
                             f"(for these: {', '.join(fits)})")
        return array.view(f"<u{size}"), source
    if size == 1 and known is None:
        raise ValueError(
            f"{path}: holds 1-byte raw items ('<V1'), as numpy.save writes ml_dtypes float8_e4m3fn (and its other "
            "1-byte types) arrays: the file does not say which type; read them as codes with quantize "
            f"--source {' or --source '.join(fits)}, or save the array as float32 (exact for every float8 value)"
        )
    name, saved = (known, "'<f1'") if known else ("bfloat16", "'<V2'")
    try:
        import ml_dtypes
    except ImportError:
        raise ValueError(
            f"{path}: holds {saved} items, as numpy.save writes an ml_dtypes {name} array; reading them as {name} "
            f"needs ml_dtypes, which is not installed (pip install ml_dtypes), or give quantize --source {fits[0]} "
            "to read them as bit patterns"
        ) from None
    return array.view(getattr(ml_dtypes, name)), None
