"""Vectorized encoder: float arrays to element codes, bit-identical to :func:`mxsim.ref.encode`.

Three kernels, chosen per call; all give the reference's codes (the test suite checks each):

* ``_RneSaturateKernel`` (round-to-nearest-even with saturation into a signed float format with
  subnormals, the MX default): integer rounding on the input's bit pattern for the normal range,
  and the exact IEEE addition x + 2^(emin - m + p) for the subnormal range;
* ``_IntKernel`` (integer formats, rne/rtz/rup/rdn): the exact product x * 2^frac_bits rounded by
  NumPy's rint/trunc/ceil/floor, which are exact on float64;
* ``_GenericKernel`` (everything else, stochastic rounding included): the input's integer
  significand and exponent, rounded by :func:`mxsim.fast.round.round_shifted`.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import NamedTuple

import numpy as np

from ..formats import get_format
from ..options.encode import EncodeOptions, check_encode_options, check_int8_allow_neg2, overflow_code
from ..options.profiles import resolve_encode
from .chunks import map_chunks
from .decode import check_fast_format, code_dtype
from .round import round_shifted
from .sources import read_source

__all__ = ["encode", "encode_traced", "EncodeRoundings", "encode_dyadic", "floor_log2_int64", "fp32_rne_table",
           "fp32_table_index"]


class _Binary:
    """Bit layout of an IEEE binary input type (float32 or float64)."""

    def __init__(self, dtype):
        self.float = np.dtype(dtype)
        self.uint = np.dtype(np.uint32 if self.float == np.float32 else np.uint64)
        self.signed = np.dtype(np.int32 if self.float == np.float32 else np.int64)
        self.bits = 8 * self.float.itemsize
        self.mantissa_bits = 23 if self.bits == 32 else 52
        self.bias = 127 if self.bits == 32 else 1023
        self.magnitude_mask = (1 << (self.bits - 1)) - 1
        self.inf_bits = ((2 * self.bias + 1) << self.mantissa_bits)


def _as_binary_array(x, source=None) -> np.ndarray:
    """float32 or float64 view of the input (see :func:`mxsim.fast.sources.read_source`)."""
    return read_source(x, source)[0]


def _flat_rand_bits(rand_bits, shape, rand_width: int) -> np.ndarray:
    bits = np.asarray(rand_bits)
    if bits.dtype.kind not in "ui":
        raise ValueError(f"rand_bits must be an integer array, got dtype {bits.dtype}")
    try:
        bits = np.broadcast_to(bits, shape)
    except ValueError:
        raise ValueError(f"rand_bits of shape {bits.shape} does not broadcast to the input shape {shape}") from None
    if bits.size and (bits.min() < 0 or bits.max() >= (1 << rand_width)):
        raise ValueError(f"rand_bits must lie in [0, 2^{rand_width}) for rand_width={rand_width}")
    return np.ascontiguousarray(bits, dtype=np.int64).reshape(-1)


def _raise_at(error, message: str, start: int, mask: np.ndarray, values: np.ndarray):
    index = int(np.flatnonzero(mask)[0])
    raise error(f"{message} (flat index {start + index}, value {values[index]!r})")


class _Outcomes:
    """Codes of the special outcomes, indexed by sign (0 positive, 1 negative)."""

    def __init__(self, fmt, rounding, overflow, int8_allow_neg2):
        self.error = overflow == "error"
        if not self.error:
            self.overflow = np.array(
                [overflow_code(fmt, s, overflow, rounding, int8_allow_neg2=int8_allow_neg2) for s in (False, True)]
            )
            self.infinite = np.array(
                [overflow_code(fmt, s, overflow, rounding, True, int8_allow_neg2) for s in (False, True)]
            )
        if fmt.has_nan:
            self.nan = np.array([fmt.nan_code(s) for s in (False, True)])


def _check_specials(fmt, start, x, is_nan, negative_nonzero, is_zero) -> None:
    if not fmt.has_nan and is_nan.any():
        _raise_at(ValueError, f"NaN input cannot be encoded: format {fmt.name!r} has no NaN", start, is_nan, x)
    if not fmt.signed and negative_nonzero.any():
        _raise_at(ValueError, f"negative input cannot be encoded: format {fmt.name!r} is unsigned", start, negative_nonzero, x)
    if not fmt.has_zero and is_zero.any():
        _raise_at(ValueError, f"zero cannot be encoded: format {fmt.name!r} has no zero", start, is_zero, x)


class _RneSaturateKernel:
    """rne + saturate into a signed float format with subnormals, on float32/float64 bits."""

    @staticmethod
    def applies(fmt, rounding, overflow, binary: _Binary) -> bool:
        return (
            rounding == "rne"
            and overflow == "saturate"
            and fmt.kind == "float"
            and fmt.signed
            and fmt.subnormals
            # with no mantissa bit, ties to even on the bit pattern would pick the even exponent
            # field; mxsim's rne takes the even significand (2, the upper value): the generic kernel
            and 1 <= fmt.mantissa_bits < binary.mantissa_bits
            and fmt.emin + binary.bias >= 1
            and fmt.bias <= binary.bias
            and fmt.emax <= binary.bias
        )

    def __init__(self, fmt, binary: _Binary):
        self.fmt, self.b = fmt, binary
        u = binary.uint.type
        m, p = fmt.mantissa_bits, binary.mantissa_bits
        self.shift = u(p - m)
        rebias = (binary.bias - fmt.bias) << p
        self.round_add = u((((1 << (p - m - 1)) - 1) - rebias) % (1 << binary.bits))
        self.one = u(1)
        self.magnitude_mask = u(binary.magnitude_mask)
        self.subnormal_limit = u((fmt.emin + binary.bias) << p)  # bits of 2^emin
        magic_exponent = fmt.emin - m + p  # ulp(2^magic_exponent) = target subnormal spacing
        self.magic = binary.float.type(2.0**magic_exponent)
        self.magic_bits = u((magic_exponent + binary.bias) << p)
        self.max_code = u(fmt.max_code)
        self.inf_bits = u(binary.inf_bits)
        self.sign_shift = u(binary.bits - fmt.width)
        self.sign_mask = u(fmt.sign_mask)
        self.nan_code = u(fmt.nan_code(False)) if fmt.has_nan else None
        self.unsigned_zero = not fmt.has_negative_zero  # 'fnuz', 'p3109': no -0, their 0x80 is NaN
        self._local = threading.local()

    def _scratch(self, size: int):
        """Per-thread buffers, reused across chunks (no allocation in the loop)."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None or buffers[0].size < size:
            u = self.b.uint
            buffers = tuple(np.empty(size, u) for _ in range(4))
            self._local.buffers = buffers
        return [b[:size] for b in buffers]

    def __call__(self, start, stop, x, out):
        magnitude, code, scratch, select = self._scratch(x.size)
        bits = x.view(self.b.uint)
        np.bitwise_and(bits, self.magnitude_mask, out=magnitude)
        # Normal range: round the bit pattern at the target's last mantissa bit (ties to even),
        # letting a carry ripple into the exponent, then rebias.
        np.right_shift(magnitude, self.shift, out=code)
        code &= self.one
        code += magnitude
        code += self.round_add
        code >>= self.shift
        # Subnormal range: |x| + 2^magic rounds |x| to the target's subnormal spacing (exact IEEE
        # addition, ties to even); the low bits of the sum count the target ulps.
        with np.errstate(invalid="ignore"):  # a signalling-NaN input; NaN codes are set below
            np.add(magnitude.view(self.b.float), self.magic, out=scratch.view(self.b.float))
        scratch -= self.magic_bits
        # Branch-free select (a masked copy mispredicts on mixed data): all-ones where
        # |x| < 2^emin, from the sign of magnitude - limit (both below 2^(bits-1)).
        np.subtract(magnitude, self.subnormal_limit, out=select)
        signed_select = select.view(self.b.signed)
        np.right_shift(signed_select, self.b.bits - 1, out=signed_select)
        scratch ^= code
        scratch &= select
        code ^= scratch
        np.minimum(code, self.max_code, out=code)
        if magnitude.max() > self.inf_bits:  # NaN inputs are rare: find them only if present
            nan = magnitude > self.inf_bits
            if self.nan_code is None:
                _raise_at(ValueError, f"NaN input cannot be encoded: format {self.fmt.name!r} has no NaN", start, nan, x)
            code[nan] = self.nan_code
        np.right_shift(bits, self.sign_shift, out=scratch)
        scratch &= self.sign_mask
        if self.unsigned_zero:  # a zero result stays +0 whatever the sign (the NaN code has it already)
            np.minimum(code, self.one, out=select)
            scratch *= select
        code |= scratch
        out[...] = code


def _table_fits(fmt) -> bool:
    """Whether :func:`fp32_rne_table` serves ``fmt``: a signed float format with subnormals, at
    most 8-bit codes and at most 5 mantissa bits (the round-to-odd bound below)."""
    return _RneSaturateKernel.applies(fmt, "rne", "saturate", _Binary(np.float32)) and fmt.width <= 8 and (
        fmt.mantissa_bits <= 5
    )


@cache
def fp32_rne_table(fmt) -> np.ndarray | None:
    """rne + saturate codes of ``fmt`` (uint8, 65536 entries) indexed by :func:`fp32_table_index`
    of a float32, or None where the table does not serve (see :func:`_table_fits`).

    The index is the float32's top 16 bits (sign, exponent, 7 mantissa bits) with a sticky bit ORed
    into the last: round to odd at 8 significant bits. Rounding to odd at p bits, then to nearest
    even at q <= p - 2 bits, gives the single nearest-even rounding (every q-bit value and every
    midpoint between two is an 8-bit value with a last bit of 0, so the odd stand-in lies on the
    same side of each); fmt's normals have mantissa_bits + 1 <= 6 significant bits, its
    subnormals fewer, and values below 2^-126 round to zero either way. Saturation is monotone,
    so the table entry of each index is the code of its 8-bit stand-in value, computed by the
    rne-saturate kernel of :func:`encode`. Entries of NaN indices are the NaN code (0 for formats
    without NaN: callers decide NaN inputs before looking up). An Inf saturates to +-max."""
    if not _table_fits(fmt):
        return None
    patterns = (np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)).view(np.float32)
    nan = np.isnan(patterns)
    table = np.zeros(patterns.size, dtype=np.uint8)
    if fmt.has_nan:
        table[:] = encode(patterns, fmt, "rne", "saturate")
    else:
        table[~nan] = encode(patterns[~nan], fmt, "rne", "saturate")
    table.flags.writeable = False
    return table


def fp32_table_index(bits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out`` (uint32, bits' shape) = the :func:`fp32_rne_table` index of float32 bit patterns
    ``bits`` (uint32): (bits >> 16) with bit 0 ORed with (bits & 0xFFFF != 0). Four passes, in place."""
    np.bitwise_and(bits, np.uint32(0xFFFF), out=out)
    out += np.uint32(0xFFFF)  # bit 16 set iff a low bit was
    out |= bits
    out >>= np.uint32(16)
    return out


class _IntKernel:
    """Integer formats with rne/rtz/rup/rdn: round the exact float64 product x * 2^frac_bits."""

    ROUNDERS = {"rne": np.rint, "rtz": np.trunc, "rup": np.ceil, "rdn": np.floor}

    @staticmethod
    def applies(fmt, rounding, overflow, binary: _Binary) -> bool:
        if fmt.kind != "int" or rounding not in _IntKernel.ROUNDERS:
            return False
        return fmt.frac_bits >= 0 or binary.bits == 32  # x * 2^frac_bits must be exact

    def __init__(self, fmt, rounding, overflow, int8_allow_neg2):
        self.fmt, self.rounder, self.error = fmt, self.ROUNDERS[rounding], overflow == "error"
        self.scale = 2.0**fmt.frac_bits
        self.high = float(fmt.max_int)
        widest = fmt.encoding == "twos_complement" and int8_allow_neg2
        self.low = -float(fmt.max_int + (1 if widest else 0))
        self.mask = (1 << fmt.bits) - 1

    def __call__(self, start, stop, x, out):
        fmt = self.fmt
        is_nan = np.isnan(x)
        if is_nan.any():
            _raise_at(ValueError, f"NaN input cannot be encoded: format {fmt.name!r} has no NaN", start, is_nan, x)
        scaled = np.multiply(x, self.scale, dtype=np.float64)
        self.rounder(scaled, out=scaled)
        if self.error:
            beyond = (scaled > self.high) | (scaled < self.low)
            if beyond.any():
                _raise_at(OverflowError, f"value overflows format {fmt.name!r} under overflow='error'", start, beyond, x)
        np.clip(scaled, self.low, self.high, out=scaled)
        q = scaled.astype(np.int64)
        if fmt.encoding == "sign_magnitude":
            code = np.abs(q) | np.where(np.signbit(x), fmt.sign_mask, 0)
        else:
            code = q & self.mask
        out[...] = code


def floor_log2_int64(n: np.ndarray) -> np.ndarray:
    """floor(log2(n)) of int64 values in [1, 2^62], exactly (float64(n) may round up to the next
    power of two; that case steps back). Values below 1 give a harmless negative number."""
    e = np.frexp(n.astype(np.float64))[1] - 1
    return e - ((n >> np.minimum(np.maximum(e, 0), 62)) == 0)


def encode_dyadic(significand, lsb_exponent, negative, fmt, rounding, rand=None, rand_width=32, allow_neg2=False,
                  trace=None):
    """Round the finite values (-1)^negative * significand * 2^lsb_exponent into ``fmt`` codes.

    ``significand``: int64 in [0, 2^62); ``lsb_exponent``: int64; ``negative``: bool. Same
    rounding as :func:`mxsim.ref.encode` (``rand``: stochastic words). Returns ``(code,
    overflows)``: the code of the rounded value where it fits, and a mask of the values whose
    rounding exceeds the largest finite magnitude (their code is left to the caller's overflow
    rule). ``allow_neg2``: two's-complement integers may take the most negative code. ``trace``:
    None, or a dict that gets the rounding's ``grid`` (int64: the exponent of the output grid's
    last bit at each value) and ``rounded`` (int64: the integer it chose on that grid, before the
    overflow rule; 0 for a value at or above 2^(emax + 2)), and ``floor_log2``.
    """
    is_zero = significand == 0
    floor_log2 = lsb_exponent + floor_log2_int64(significand)
    # Anything at or above 2^(emax + 2) overflows whatever the rounding; keep its integer
    # arithmetic harmless and report it as an overflow.
    beyond = ~is_zero & (floor_log2 > fmt.emax + 1)
    significand = np.where(beyond, 0, significand)
    if fmt.kind == "float":
        grid = np.maximum(floor_log2, fmt.emin) - fmt.mantissa_bits
    else:
        grid = np.full_like(floor_log2, -fmt.frac_bits)
    rounded = round_shifted(significand, grid - lsb_exponent, rounding, negative, rand, rand_width)
    if trace is not None:
        trace.update(grid=grid, rounded=rounded, floor_log2=floor_log2)
    if fmt.kind == "float":
        code, overflows = _assemble_float(fmt, rounded, grid, negative, floor_log2, is_zero)
    else:
        code, overflows = _assemble_int(fmt, rounded, negative, allow_neg2)
    return code, (overflows & ~is_zero) | beyond


def _assemble_float(fmt, rounded, grid, negative, floor_log2, is_zero):
    m = fmt.mantissa_bits
    max_significand = (fmt.max_code & ((1 << m) - 1)) | (1 << m)
    top_grid = fmt.emax - m
    overflows = (grid > top_grid) | ((grid == top_grid) & (rounded > max_significand))
    carry = rounded == (1 << (m + 1))
    rounded = np.where(carry, rounded >> 1, rounded)
    grid = grid + carry
    normal_code = ((grid + m + fmt.bias) << m) | (rounded - (1 << m))
    code = np.where(rounded < (1 << m), rounded, normal_code)
    if not fmt.subnormals:  # no zero and nothing below the smallest normal (e8m0)
        code = np.where((floor_log2 < fmt.emin) & ~is_zero, 0, code)
    if fmt.has_zero and not fmt.has_negative_zero:  # 'fnuz', 'p3109': a zero is +0 whatever its sign
        negative = negative & (code != 0)
    return code | np.where(negative, fmt.sign_mask, 0), overflows


def _assemble_int(fmt, rounded, negative, allow_neg2):
    limit = np.where(negative & allow_neg2, fmt.max_int + 1, fmt.max_int)
    overflows = rounded > limit
    if fmt.encoding == "sign_magnitude":
        code = rounded | np.where(negative, fmt.sign_mask, 0)
    else:
        code = np.where(negative, -rounded, rounded) & ((1 << fmt.bits) - 1)
    return code, overflows


class _GenericKernel:
    """Every format, rounding and overflow mode, from the exact significand and exponent of x."""

    def __init__(self, fmt, rounding, overflow, rand_width, int8_allow_neg2):
        self.fmt, self.rounding, self.rand_width = fmt, rounding, rand_width
        self.outcomes = _Outcomes(fmt, rounding, overflow, int8_allow_neg2)
        self.allow_neg2 = int8_allow_neg2 and fmt.kind == "int" and fmt.encoding == "twos_complement"

    def __call__(self, start, stop, x, rand, out):
        out[...] = self.encode(start, x, rand)

    def encode(self, start, x, rand, trace=None):
        """The codes of the flat array ``x`` (flat index ``start`` first, for errors); ``trace``:
        None, or a dict that gets :func:`encode_dyadic`'s and ``negative``, ``rounds`` (finite
        and nonzero) and ``value`` (float64 |x|, 0 where it does not round)."""
        fmt = self.fmt
        with np.errstate(invalid="ignore"):  # a signalling NaN quietens when widened; still NaN
            bits = x.astype(np.float64).view(np.uint64)
        negative = (bits >> np.uint64(63)).astype(bool)
        field = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
        significand = (bits & np.uint64((1 << 52) - 1)).astype(np.int64)
        special = field == 0x7FF
        is_nan = special & (significand != 0)
        is_inf = special & (significand == 0)
        is_zero = (field == 0) & (significand == 0)
        _check_specials(fmt, start, x, is_nan, negative & ~is_zero & ~is_nan, is_zero)
        negative &= fmt.signed
        significand |= (field != 0).astype(np.int64) << 52
        significand[special] = 0  # Inf and NaN are decided below
        lsb_exponent = np.maximum(field, 1) - 1075
        code, overflows = encode_dyadic(
            significand, lsb_exponent, negative, fmt, self.rounding, rand, self.rand_width, self.allow_neg2, trace
        )
        if trace is not None:
            rounds = ~special & ~is_zero
            trace.update(negative=negative, rounds=rounds, value=np.where(rounds, np.abs(x.astype(np.float64)), 0.0))
        if self.outcomes.error:
            if (overflows | is_inf).any():
                _raise_at(OverflowError, f"value overflows format {fmt.name!r} under overflow='error'", start, overflows | is_inf, x)
        else:
            sign = negative.astype(np.intp)
            code = np.where(overflows, self.outcomes.overflow[sign], code)
            code = np.where(is_inf, self.outcomes.infinite[sign], code)
        if fmt.has_nan:
            code = np.where(is_nan, self.outcomes.nan[negative.astype(np.intp)], code)
        return code


class EncodeRoundings(NamedTuple):
    """What the roundings of :func:`encode_traced` decided on, as arrays of the input's flat length
    (docs/numerics.md sections 1 and 3.3): the fast path's half of the record whose reference half
    is :class:`mxsim.ref.encode.EncodeRounding`. ``rounds`` (bool): the value is finite and nonzero,
    so its code comes from a rounding; ``negative`` (bool): its sign (False for unsigned formats);
    ``value`` (float64 >= 0, exact): its magnitude, 0 where it does not round; ``grid`` (int64): the
    exponent of the output grid's step at the value (the last significand bit at its binade, the
    smallest normal binade's for subnormals, -frac_bits for integers), so that the value lies in
    [lo, lo + 2^grid) with lo = floor(value / 2^grid) * 2^grid; ``quotient`` (int64): the integer
    the rounding chose on that grid (the result is quotient * 2^grid, before the overflow rule;
    0 for a value at or above 2^(emax + 2), an overflow whatever the rounding). A format without
    subnormals holds nothing below 2^emin: there ``grid`` is emin and ``quotient`` 1 (the value
    goes to the smallest normal). ``grid`` and ``quotient`` are 0 where nothing rounds."""

    rounds: np.ndarray
    negative: np.ndarray
    value: np.ndarray
    grid: np.ndarray
    quotient: np.ndarray


def encode_traced(x, fmt, rounding: str = "rne", overflow: str = "saturate") -> tuple[np.ndarray, EncodeRoundings]:
    """(:func:`encode` of the float32 or float64 array ``x`` (flattened), what each rounding decided
    on: :class:`EncodeRoundings`). Deterministic roundings only (rne, rna, rtz, rup, rdn); the codes
    come from the exact significand and exponent of each value (the generic kernel, whatever the
    format), errors as :func:`encode`'s."""
    fmt = get_format(fmt, kind="element")
    check_fast_format(fmt)
    if rounding not in _IntKernel.ROUNDERS and rounding != "rna":
        raise ValueError(f"rounding={rounding!r}: encode_traced takes rne|rna|rtz|rup|rdn")
    check_encode_options(rounding, overflow, None, 32)
    flat = np.ascontiguousarray(np.asarray(x)).reshape(-1)
    if flat.dtype not in (np.float32, np.float64):
        raise ValueError(f"x must be a float32 or float64 array, not {flat.dtype}")
    trace: dict = {}
    kernel = _GenericKernel(fmt, rounding, overflow, 32, False)
    code = kernel.encode(0, flat, np.zeros(1, np.int64), trace)
    rounds = trace["rounds"]
    grid = np.where(rounds, trace["grid"], 0).astype(np.int64)
    quotient = np.where(rounds, trace["rounded"], 0).astype(np.int64)
    if fmt.kind == "float" and not fmt.subnormals:  # below 2^emin: [0, 2^emin), to the smallest normal
        below = rounds & (trace["floor_log2"] < fmt.emin)
        grid[below], quotient[below] = fmt.emin, 1
    return code.astype(code_dtype(fmt)), EncodeRoundings(rounds, trace["negative"], trace["value"], grid, quotient)


def encode(
    x,
    fmt,
    rounding: str | None = None,
    overflow: str | None = None,
    *,
    rand_bits=None,
    rand_width: int | None = None,
    int8_allow_neg2: bool | None = None,
    profile=None,
    source=None,
    options: EncodeOptions | None = None,
) -> np.ndarray:
    """Encode an array (any shape, any byte order) into element codes: float16, bfloat16, float32,
    float64, or ml_dtypes float8_e4m3fn / float8_e5m2 values, or unsigned-integer bit patterns of
    one of these types named by ``source`` (see :mod:`mxsim.fast.sources`).

    Same semantics as :func:`mxsim.ref.encode` applied element by element, on the exact value of
    each input: rounding rne/rna/rtz/rup/rdn/stochastic, overflow saturate/ieee/error, NaN to the
    canonical NaN code (ValueError for formats without NaN, naming the first offending index),
    -0 kept in float formats. ``rand_bits`` (stochastic only) is an integer array broadcastable to
    ``x`` with values in [0, 2^rand_width). ``int8_allow_neg2``: two's-complement integer
    formats only (ValueError elsewhere).

    ``profile``: the name of a cast profile (e.g. ``"ml_dtypes_0_6"``, see
    :mod:`mxsim.options.profiles`) whose EncodeOptions apply. An option left at None takes the
    profile's value, else the default (``rne``, ``saturate``, 32, False); a given option
    overrides the profile's. ``options``: an :class:`mxsim.options.EncodeOptions` holding every
    setting instead (rounding, overflow, rand_bits, rand_width, int8_allow_neg2, source), given
    alone.

    Returns codes of the input's shape, uint8 for formats of at most 8 bits, else uint16.
    """
    given = {"rounding": rounding, "overflow": overflow, "rand_width": rand_width, "int8_allow_neg2": int8_allow_neg2,
             "rand_bits": rand_bits, "source": source}
    chosen = resolve_encode(profile, options, given, fmt)
    rounding, overflow, rand_bits, source = chosen.rounding, chosen.overflow, chosen.rand_bits, chosen.source
    rand_width, int8_allow_neg2 = chosen.rand_width, chosen.int8_allow_neg2
    fmt = get_format(fmt, kind="element")
    check_fast_format(fmt)
    check_encode_options(rounding, overflow, rand_bits, rand_width)
    check_int8_allow_neg2(fmt, int8_allow_neg2)
    values = _as_binary_array(x, source)
    shape = values.shape
    flat = np.ascontiguousarray(values).reshape(-1)
    out = np.empty(flat.shape, dtype=code_dtype(fmt))
    binary = _Binary(flat.dtype)
    if _RneSaturateKernel.applies(fmt, rounding, overflow, binary):
        map_chunks(_RneSaturateKernel(fmt, binary), flat.size, flat, out)
    elif _IntKernel.applies(fmt, rounding, overflow, binary):
        map_chunks(_IntKernel(fmt, rounding, overflow, int8_allow_neg2), flat.size, flat, out)
    else:
        rand = _flat_rand_bits(rand_bits, shape, rand_width) if rounding == "stochastic" else np.zeros(1, np.int64)
        kernel = _GenericKernel(fmt, rounding, overflow, rand_width, int8_allow_neg2)
        map_chunks(kernel, flat.size, flat, rand, out)
    return out.reshape(shape)
