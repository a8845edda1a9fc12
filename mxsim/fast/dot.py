"""Vectorized dot-product datapath: the model of :mod:`mxsim.ref.dot` on many blocks at once,
bit-identical to it for every :class:`~mxsim.options.accumulate.Accumulator`.

Each element code is looked up in tables built from the reference's
:func:`~mxsim.ref.dot.element_term` (one rule, one place). Routes, chosen per format pair:

* ``exact``: every element as a signed integer on its format's fixed grid (2^lsb); the block
  sum is a dot product of integers. When its bound is below 2^24 (FP4, FP6 E2M3) the dot runs in
  float32, below 2^53 (FP8 E4M3, FP6 E3M2, MXINT8, MX9/6/4) in float64: every product and
  partial sum is then an integer the float type holds exactly, so the result is exact in any
  summation order. Wider sums (FP8 E5M2: 70 bits) use Python integers (correct, slower).
* ``aligned``: integer significand products, shifted to the block's anchor by
  :func:`~mxsim.fast.round.round_shifted`, summed in int64 (clamped column by column when the
  register can overflow). Registers that int64 cannot hold fall back to the reference.
* ``fp32_sequential``: exact float32 products (checked per pair) added column by column in
  float32, which NumPy rounds to nearest-even as IEEE 754 requires.

The block value significand * 2^exponent (scales folded in) is rounded to the output format by
:func:`~mxsim.fast.encode.encode_dyadic`; values wider than int64 are first narrowed to 61 bits
with a sticky bit, which preserves every rounding decision of a <= 24-bit output.

Memory: a DotGeneral runs in chunks of :data:`DOT_CHUNK` elements of each operand, and
:func:`dot_general_broadcast` never copies a broadcast operand whole, so the temporaries stay
bounded (70 to 130 MB) whatever M, N and K are; only the results themselves grow with the shapes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..options import Accumulator
from ..ref import dot as ref_dot
from ..ref.stored_block import QuantizedBlock, check_tensor_scale
from ..ref.round import CUT_ROUNDING
from .chunks import BLOCK_CHUNK, map_chunks
from .output import FINITE, NAN, NEG_INF, POS_INF, output_values, round_output
from .round import round_shifted

__all__ = [
    "DOT_CHUNK", "BlockDots", "Operand", "dot_blocks", "dot_general_blocks", "dot_general_broadcast", "output_values"
]

_INT64_LIMIT = 1 << 62
#: A cut to the grid of exact float64 values in units of the grid's LSB (``shift_rounding``): truncate
#: toward zero, rne nearest-even, floor toward minus infinity (as CUT_ROUNDING of the reference)
FLOAT_CUTS = {"truncate": np.trunc, "rne": np.rint, "floor": np.floor}
_NO_EXPONENT = -(1 << 20)  # below any anchor: sums of two stay far from int32 limits


@dataclass(frozen=True)
class Operand:
    """The blocks of one operand: ``scales`` (N,), ``subscales`` (N, subblocks) or None,
    ``codes`` (N, block_size), and NVFP4's ``tensor_scale`` (a Fraction, or None for 1)."""

    fmt: object
    scales: np.ndarray
    subscales: np.ndarray | None
    codes: np.ndarray
    tensor_scale: Fraction | None = None

    def block(self, i: int) -> QuantizedBlock:
        subscales = () if self.subscales is None else tuple(int(t) for t in self.subscales[i])
        return QuantizedBlock(int(self.scales[i]), subscales, tuple(int(c) for c in self.codes[i]))


@dataclass
class BlockDots:
    """Per-block results (arrays of one shape): output ``codes``; the register (``accumulator``,
    int64 or Python ints in an object array; ``lsb_exponent``; ``anchor``); and the exact block
    value before output rounding: ``special`` (0 finite, 1 +Inf, 2 -Inf, 3 NaN) or
    ``significand`` * 2^``exponent`` (significand int64 or object)."""

    codes: np.ndarray
    accumulator: np.ndarray
    lsb_exponent: np.ndarray
    anchor: np.ndarray
    special: np.ndarray
    significand: np.ndarray
    exponent: np.ndarray

    def reshape(self, shape) -> "BlockDots":
        return BlockDots(*(None if getattr(self, name) is None else getattr(self, name).reshape(shape)
                           for name in self.__dataclass_fields__))


# --- tables -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Terms:
    """Every code of a format as a datapath term (see :class:`mxsim.ref.dot.Term`)."""

    negative: np.ndarray
    significand: np.ndarray  # int64, 0 for Inf and NaN
    exponent: np.ndarray  # int64
    nan: np.ndarray
    inf: np.ndarray
    zero: np.ndarray


@lru_cache(maxsize=None)
def _terms(element) -> _Terms:
    if element.width > 16:
        raise ValueError(f"format {element.name!r} has {element.width}-bit codes; the array path handles at most 16")
    terms = [ref_dot.element_term(code, element) for code in range(1 << element.width)]
    kinds = np.array([t.kind for t in terms])
    significand = np.array([t.significand for t in terms], dtype=np.int64)
    return _Terms(
        np.array([t.sign for t in terms], dtype=bool),
        significand,
        np.array([t.exponent for t in terms], dtype=np.int64),
        kinds == "nan",
        kinds == "inf",
        (kinds == "finite") & (significand == 0),
    )


@lru_cache(maxsize=None)
def _grid_table(fmt, dtype_name: str) -> np.ndarray:
    """Signed value of every element code (with tau = 0) in units of 2^(E_min - f). Times
    2^(taumax - tau) it is the element on the block format's fixed grid. Inf and NaN codes are
    0 in integer tables and +-Inf / NaN in float tables (whose products and sums then follow
    IEEE 754, which is the contract's rule for specials)."""
    t = _terms(fmt.element)
    shift = t.exponent - ref_dot._min_exponent(fmt.element)
    if np.dtype(dtype_name).kind == "i" and ref_dot.largest_grid_value(fmt).bit_length() > 62:
        # elements spanning more than int64 on the fixed grid (P3109 binary8p1: 2^-63 .. 2^62):
        # Python ints, for the Python-int routes
        return np.array([(-1 if n else 1) * (int(m) << int(e)) for n, m, e in zip(t.negative, t.significand, shift)],
                        dtype=object)
    values = t.significand << shift
    values = np.where(t.negative, -values, values).astype(dtype_name)
    if np.dtype(dtype_name).kind == "f":
        values[t.inf] = np.where(t.negative[t.inf], -np.inf, np.inf)
        values[t.nan] = np.nan
    return values


@lru_cache(maxsize=None)
def _anchor_table(fmt, wide: bool = False) -> tuple[np.ndarray, int]:
    """(table, sentinel): E of every element code (tau = 0), with zero, Inf and NaN codes at
    ``sentinel``, so low that no product with them can be the anchor. int8 when the
    exponents are small (faster lookups) and ``wide`` is False, else int32 (a pair whose other
    format is not small needs the int32 sentinel on both sides: P3109 binary8p1's exponents
    reach 62, more than the int8 sentinel's margin)."""
    t = _terms(fmt.element)
    finite_nonzero = t.significand != 0
    small = not wide and int(np.abs(t.exponent[finite_nonzero]).max(initial=0)) + _DotKernel._taumax(fmt) <= 15
    sentinel = -64 if small else _NO_EXPONENT
    table = np.where(finite_nonzero, t.exponent, sentinel).astype(np.int8 if small else np.int32)
    return table, sentinel


@lru_cache(maxsize=None)
def _pair_table(fmt_a, fmt_b, dtype_name: str) -> np.ndarray:
    """Product of every code pair on the fixed grid, indexed by (code_a << width_b) | code_b
    (IEEE specials: Inf * 0 = NaN, ...). For small formats without sub-blocks."""
    va = _grid_table(fmt_a, "float64")
    vb = _grid_table(fmt_b, "float64")
    with np.errstate(invalid="ignore"):
        return np.multiply.outer(va, vb).reshape(-1).astype(dtype_name)


@lru_cache(maxsize=None)
def _special_table(fmt) -> np.ndarray | None:
    """True for Inf and NaN codes; None if the element format has neither."""
    t = _terms(fmt.element)
    special = t.nan | t.inf
    return special if special.any() else None


@lru_cache(maxsize=None)
def _float32_values(fmt) -> np.ndarray | None:
    """float32 value of every element code (Inf/NaN included), or None if one is not exact."""
    t = _terms(fmt.element)
    f = ref_dot._frac_bits(fmt.element)
    values = np.ldexp(t.significand.astype(np.float64), t.exponent - f)
    values = np.where(t.nan, np.nan, np.where(t.inf, np.inf, values))
    values = np.where(t.negative, -values, values)
    narrow = values.astype(np.float32)
    finite = np.isfinite(values)
    if not np.array_equal(narrow[finite].astype(np.float64), values[finite]):
        return None
    return narrow


@lru_cache(maxsize=None)
def _terms_of_scale(scale_fmt):
    """(significand, exponent - frac_bits, is_nan) of every scale code: value = sig * 2^exp."""
    t = _terms(scale_fmt)
    return t.significand, t.exponent - ref_dot._frac_bits(scale_fmt), t.nan


def _dyadic(q: Fraction) -> tuple[int, int]:
    """A positive dyadic rational as (odd-or-1 significand, exponent)."""
    n, d = q.numerator, q.denominator
    if d & (d - 1):
        raise ValueError(f"tensor scale {q} is not a binary floating-point value")
    shift = (n & -n).bit_length() - 1
    return n >> shift, shift - (d.bit_length() - 1)


def _max_abs(table: np.ndarray) -> int:
    return int(np.abs(table.astype(np.int64)).max()) if table.size else 0


# --- one block pair at a time, vectorized over blocks -------------------------------------------
class _DotKernel:
    """Register, anchor and specials of a chunk of block pairs, for one format pair and
    accumulator. ``anchors``: compute the anchor in modes that do not need it (exact,
    fp32_sequential); otherwise it is reported as 0."""

    def __init__(self, fmt_a, fmt_b, acc: Accumulator, anchors: bool = True):
        self.fmt_a, self.fmt_b, self.acc, self.anchors = fmt_a, fmt_b, acc, anchors
        self.k = fmt_a.block_size
        self.ta, self.tb = _terms(fmt_a.element), _terms(fmt_b.element)
        self.frac = ref_dot._frac_bits(fmt_a.element) + ref_dot._frac_bits(fmt_b.element)
        self.lsb = ref_dot.product_lsb(fmt_a, fmt_b)
        self.has_specials = _special_table(fmt_a) is not None or _special_table(fmt_b) is not None
        # the largest |product| on the fixed grid
        self.product_bound = ref_dot.largest_grid_value(fmt_a) * ref_dot.largest_grid_value(fmt_b)
        self.register_limit = ref_dot.register_limit(fmt_a, fmt_b, acc)
        self.route = getattr(self, f"_route_{acc.mode}")()

    @staticmethod
    def _taumax(fmt) -> int:
        return (1 << fmt.subscale_bits) - 1 if fmt.subblocks else 0

    # Each _route_* picks how its mode runs for this pair and returns the chunk function, which
    # maps (codes_a, codes_b, subscales_a, subscales_b) to (register, lsb, anchor, special).
    def _route_exact(self):
        bound = self.register_limit
        self.register_dtype = np.int64 if bound < _INT64_LIMIT else object
        # The float dtype that holds every product and partial sum exactly; the lookups may be
        # narrower than the sum.
        self.sum_dtype = "float32" if bound < 1 << 24 else "float64" if bound < 1 << 53 else None
        if self.sum_dtype is None:
            return self._exact_python_ints
        self.ones = np.ones(self.k, dtype=self.sum_dtype)
        small = self.fmt_a.element.width + self.fmt_b.element.width <= 12
        if small and not (self.fmt_a.subblocks or self.fmt_b.subblocks):
            self.pair = _pair_table(self.fmt_a, self.fmt_b, self.sum_dtype)
            return self._exact_pairs
        return self._exact_floats

    def _route_aligned(self):
        # every partial sum must stay inside int64 for the array routes
        bound = self.register_limit
        if bound >= _INT64_LIMIT:
            self.register_dtype = object
            return self._by_reference
        self.register_dtype = np.int64
        limit = self.acc.register_bound
        self.clamp = limit is not None and bound >= limit
        if self.product_bound < 1 << 53 and bound < 1 << 53:
            self.ones = np.ones(self.k)
            return self._aligned_floats
        return self._aligned

    def _route_fp32_sequential(self):
        va, vb = _float32_values(self.fmt_a), _float32_values(self.fmt_b)
        sig_bits = int(_max_abs(self.ta.significand)).bit_length() + int(_max_abs(self.tb.significand)).bit_length()
        top = self.fmt_a.element.emax + self.fmt_b.element.emax + 2
        self.register_dtype = np.int64
        if va is None or vb is None or sig_bits > 24 or self.lsb < -149 or top > 127:
            return self._by_reference  # some product is not exact in float32
        self.va, self.vb = va, vb
        return self._fp32_sequential

    # --- pieces ------------------------------------------------------------------------------
    @staticmethod
    def _taus(fmt, subscales) -> np.ndarray:
        return np.repeat(subscales.astype(np.int64), fmt.subblock_size, axis=1)

    def _grid_values(self, fmt, codes, sub, dtype_name: str) -> np.ndarray:
        """Elements on the fixed grid: table value * 2^(taumax - tau)."""
        v = np.take(_grid_table(fmt, dtype_name), codes)
        if fmt.subblocks:
            shift = self._taumax(fmt) - self._taus(fmt, sub)
            v = v * np.left_shift(1, shift).astype(v.dtype)
        return v

    def _anchor(self, codes_a, codes_b, sub_a, sub_b):
        """Largest Ea + Eb over products of two finite nonzero elements, 0 if none; and the
        per-product exponents (int64)."""
        (table_a, sentinel_a), (table_b, sentinel_b) = _anchor_table(self.fmt_a), _anchor_table(self.fmt_b)
        if sentinel_a != sentinel_b:
            (table_a, sentinel_a), (table_b, sentinel_b) = (_anchor_table(f, True) for f in (self.fmt_a, self.fmt_b))
        ea, eb = np.take(table_a, codes_a), np.take(table_b, codes_b)
        if ea.dtype != eb.dtype:
            ea, eb = ea.astype(np.int32), eb.astype(np.int32)
        e = ea + eb
        if self.fmt_a.subblocks or self.fmt_b.subblocks:
            e = e.astype(np.int64)
            for fmt, sub in ((self.fmt_a, sub_a), (self.fmt_b, sub_b)):
                if fmt.subblocks:
                    e -= self._taus(fmt, sub)
        anchor = e.max(axis=1).astype(np.int64)
        # a product with a sentinel lies below every real sum of exponents
        return np.where(anchor < max(sentinel_a, sentinel_b) // 2, 0, anchor), e

    def _anchor_if_wanted(self, codes_a, codes_b, sub_a, sub_b):
        if not self.anchors:
            return np.zeros(codes_a.shape[0], dtype=np.int64)
        return self._anchor(codes_a, codes_b, sub_a, sub_b)[0]

    def _special_rows(self, codes_a, codes_b) -> np.ndarray:
        """Indices of the blocks with an Inf or NaN element."""
        if not self.has_specials:
            return np.zeros(0, dtype=np.intp)
        odd = np.zeros(codes_a.shape, dtype=bool)
        for fmt, codes in ((self.fmt_a, codes_a), (self.fmt_b, codes_b)):
            table = _special_table(fmt)
            if table is not None:
                odd |= np.take(table, codes)
        return np.flatnonzero(odd.any(axis=1))

    def _specials(self, codes_a, codes_b, rows=None) -> np.ndarray:
        """Per block: FINITE, POS_INF, NEG_INF or NAN from the element products (exact and
        aligned modes; the rules of :func:`mxsim.ref.dot._special`)."""
        special = np.zeros(codes_a.shape[0], dtype=np.int8)
        if rows is None:
            rows = self._special_rows(codes_a, codes_b)
        if rows.size == 0:
            return special
        ta, tb = self.ta, self.tb
        ca, cb = codes_a[rows], codes_b[rows]
        nan = ta.nan[ca] | tb.nan[cb] | (ta.inf[ca] & tb.zero[cb]) | (ta.zero[ca] & tb.inf[cb])
        inf = (ta.inf[ca] | tb.inf[cb]) & ~nan
        negative = ta.negative[ca] ^ tb.negative[cb]
        pos, neg = (inf & ~negative).any(axis=1), (inf & negative).any(axis=1)
        special[rows] = np.where(nan.any(axis=1) | (pos & neg), NAN, np.where(pos, POS_INF, np.where(neg, NEG_INF, FINITE)))
        return special

    # --- routes ------------------------------------------------------------------------------
    def _exact_python_ints(self, codes_a, codes_b, sub_a, sub_b):
        va = self._grid_values(self.fmt_a, codes_a, sub_a, "int64").astype(object)
        vb = self._grid_values(self.fmt_b, codes_b, sub_b, "int64").astype(object)
        register = (va * vb).sum(axis=1)
        lsb = np.full(codes_a.shape[0], self.lsb, dtype=np.int64)
        anchor = self._anchor_if_wanted(codes_a, codes_b, sub_a, sub_b)
        return register, lsb, anchor, self._specials(codes_a, codes_b)

    def _exact_pairs(self, codes_a, codes_b, sub_a, sub_b):
        index = codes_a.astype(np.uint16)
        index <<= self.fmt_b.element.width
        index |= codes_b
        products = np.take(self.pair, index)
        with np.errstate(invalid="ignore"):
            total = products @ self.ones
        return self._exact_register(total, codes_a, codes_b, sub_a, sub_b)

    def _exact_floats(self, codes_a, codes_b, sub_a, sub_b):
        # products in place, then a matrix-vector product with ones: measured several times
        # faster than np.einsum("ij,ij->i") on these shapes
        products = self._grid_values(self.fmt_a, codes_a, sub_a, self.sum_dtype)
        with np.errstate(invalid="ignore"):
            products *= self._grid_values(self.fmt_b, codes_b, sub_b, self.sum_dtype)
            total = products @ self.ones
        return self._exact_register(total, codes_a, codes_b, sub_a, sub_b)

    def _exact_register(self, total, codes_a, codes_b, sub_a, sub_b):
        """The register from an exact float sum; IEEE specials in the sum flag exactly the blocks
        with an Inf or NaN element, whose registers count the finite products only."""
        odd = np.flatnonzero(~np.isfinite(total))
        total[odd] = 0
        register = total.astype(np.int64)
        special = np.zeros(codes_a.shape[0], dtype=np.int8)
        if odd.size:
            ia = self._grid_values(self.fmt_a, codes_a[odd], sub_a[odd], "int64")
            ib = self._grid_values(self.fmt_b, codes_b[odd], sub_b[odd], "int64")
            register[odd] = (ia * ib).sum(axis=1)
            special = self._specials(codes_a, codes_b, odd)
        lsb = np.full(codes_a.shape[0], self.lsb, dtype=np.int64)
        return register, lsb, self._anchor_if_wanted(codes_a, codes_b, sub_a, sub_b), special

    def _aligned_floats(self, codes_a, codes_b, sub_a, sub_b):
        """Products exact in float64 on the fixed grid, scaled by one power of two per block to
        the grid 2^(anchor - F), then truncated (np.trunc) or rounded half-even (np.rint): every
        step is exact while the bounds checked in _route_aligned hold."""
        acc = self.acc
        products = self._grid_values(self.fmt_a, codes_a, sub_a, "float64")
        anchor, _ = self._anchor(codes_a, codes_b, sub_a, sub_b)
        lsb = anchor - acc.frac_bits
        with np.errstate(invalid="ignore"):
            products *= self._grid_values(self.fmt_b, codes_b, sub_b, "float64")
            products *= np.ldexp(1.0, self.lsb - lsb)[:, None]
            FLOAT_CUTS[acc.shift_rounding](products, out=products)
            total = products @ self.ones
        # IEEE specials in the sum flag exactly the blocks with an Inf or NaN element; their
        # registers count the finite products only
        odd = np.flatnonzero(~np.isfinite(total))
        if odd.size:
            finite = np.where(np.isfinite(products[odd]), products[odd], 0)
            products[odd] = finite
            total[odd] = finite @ self.ones
        special = self._specials(codes_a, codes_b, odd)
        if not self.clamp:
            return total.astype(np.int64), lsb, anchor, special
        return self._sum(products.astype(np.int64), lsb, anchor, special)

    def _aligned(self, codes_a, codes_b, sub_a, sub_b):
        """Significand products and per-product shifts (pairs whose fixed-grid products exceed
        int64, e.g. FP8 E5M2)."""
        acc = self.acc
        magnitude = np.take(self.ta.significand, codes_a) * np.take(self.tb.significand, codes_b)
        anchor, e = self._anchor(codes_a, codes_b, sub_a, sub_b)
        lsb = anchor - acc.frac_bits
        negative = np.take(self.ta.negative, codes_a) ^ np.take(self.tb.negative, codes_b)
        q = round_shifted(magnitude, (lsb + self.frac)[:, None] - e, CUT_ROUNDING[acc.shift_rounding], negative)
        return self._sum(np.where(negative, -q, q), lsb, anchor, self._specials(codes_a, codes_b))

    def _sum(self, q, lsb, anchor, special):
        """The register: the q_i added in index order with the overflow rule."""
        acc = self.acc
        bound = acc.register_bound
        if not self.clamp:
            register = q.sum(axis=1)
        elif acc.overflow == "wrap":  # wrapping after each addition = wrapping the exact sum
            register = (q.sum(axis=1) + bound) % (2 * bound) - bound
        else:
            register = np.zeros(q.shape[0], dtype=np.int64)
            for column in q.T:
                register += column
                np.clip(register, -bound, bound - 1, out=register)
        return register, lsb, anchor, special

    def _fp32_sequential(self, codes_a, codes_b, sub_a, sub_b):
        pa, pb = np.take(self.va, codes_a), np.take(self.vb, codes_b)
        for fmt, p, sub in ((self.fmt_a, pa, sub_a), (self.fmt_b, pb, sub_b)):
            if fmt.subblocks:
                p *= np.ldexp(np.float32(1), -self._taus(fmt, sub)).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            products = pa * pb
            total = np.zeros(products.shape[0], dtype=np.float32)
            for column in products.T:
                total += column
        negative, magnitude, exponent, special = float32_parts(total)
        register = np.where(special == FINITE, np.where(negative, -magnitude, magnitude), 0)
        lsb = np.where(special == FINITE, exponent, 0)
        return register, lsb, self._anchor_if_wanted(codes_a, codes_b, sub_a, sub_b), special

    def _by_reference(self, codes_a, codes_b, sub_a, sub_b):
        results = []
        for i in range(codes_a.shape[0]):
            blocks = []
            for fmt, codes, sub in ((self.fmt_a, codes_a, sub_a), (self.fmt_b, codes_b, sub_b)):
                taus = tuple(int(t) for t in sub[i]) if fmt.subblocks else ()
                # the scale code of 1.0: only the register matters here
                blocks.append(QuantizedBlock(_unit_scale_code(fmt), taus, tuple(int(c) for c in codes[i])))
            r = ref_dot.dot(blocks[0], blocks[1], self.fmt_a, self.fmt_b, self.acc)
            results.append((r.accumulator, r.lsb_exponent, r.anchor if self.anchors or self.acc.mode == "aligned" else 0, r.exact))
        register = np.array([r[0] for r in results] + [None], dtype=object)[:-1]
        lsb = np.array([r[1] for r in results], dtype=np.int64)
        anchor = np.array([r[2] for r in results], dtype=np.int64)
        special = np.array([_special_code(r[3]) for r in results], dtype=np.int8)
        return register, lsb, anchor, special


def _unit_scale_code(fmt) -> int:
    from ..ref.encode import encode

    return encode(1, fmt.scale)


def _special_code(x) -> int:
    if x.is_nan:
        return NAN
    if x.is_inf:
        return NEG_INF if x.sign else POS_INF
    return FINITE


def float32_parts(x: np.ndarray):
    """A float32 array as (negative, significand int64, exponent int64, special): finite values
    are (-1)^negative * significand * 2^exponent (exponent = the value's own ulp)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    negative = (bits >> 31).astype(bool)
    field = (bits >> 23) & 0xFF
    fraction = bits & 0x7FFFFF
    significand = np.where(field == 0, fraction, fraction | (1 << 23))
    exponent = np.maximum(field, 1) - 150
    special = np.where(field == 0xFF, np.where(fraction != 0, NAN, np.where(negative, NEG_INF, POS_INF)), FINITE)
    return negative, np.where(field == 0xFF, 0, significand), exponent, special.astype(np.int8)


# --- output rounding ----------------------------------------------------------------------------
def _narrow(significand: np.ndarray, exponent: np.ndarray):
    """Object-array significands to (negative, int64 magnitude < 2^62, exponent): magnitudes over
    61 bits keep their top 60 bits and OR the dropped ones into a sticky bit."""
    negative = np.array([s < 0 for s in significand], dtype=bool)
    magnitude = np.empty(significand.shape, dtype=np.int64)
    exponent = exponent.astype(np.int64).copy()
    for i, s in enumerate(significand):
        n = abs(int(s))
        extra = max(n.bit_length() - 60, 0)
        if extra:
            n = (n >> extra) | int(n & ((1 << extra) - 1) != 0)
            exponent[i] += extra
        magnitude[i] = n
    return negative, magnitude, exponent


def _split_signed(significand, exponent):
    if significand.dtype == object:
        return _narrow(significand, exponent)
    return significand < 0, np.abs(significand), exponent


# --- public entry points ------------------------------------------------------------------------
def _check_operands(a: Operand, b: Operand, paired: bool = True):
    """The formats of ``a`` and ``b``, after checking their arrays (and, if ``paired``, that they
    hold the same number of blocks)."""
    length_b = b.codes.shape[0] if paired else a.codes.shape[0]
    fmt_a, fmt_b = ref_dot._check_pair(a.fmt, b.fmt, a.codes.shape[0], length_b)
    for name, op, fmt in (("a", a, fmt_a), ("b", b, fmt_b)):
        if op.codes.shape != (op.codes.shape[0], fmt.block_size) or op.scales.shape != op.codes.shape[:1]:
            raise ValueError(f"operand {name}: codes {op.codes.shape} and scales {op.scales.shape} do not describe {fmt.name!r} blocks")
        expected = (op.codes.shape[0], fmt.subblocks) if fmt.subblocks else None
        if (op.subscales is None) != (expected is None) or (expected and op.subscales.shape != expected):
            raise ValueError(f"operand {name}: {fmt.name!r} needs sub-scales of shape {expected}")
        fields = [("codes", op.codes, fmt.element.width), ("scales", op.scales, fmt.scale.width)]
        if expected:
            fields.append(("sub-scales", op.subscales, fmt.subscale_bits))
        for what, array, width in fields:
            if array.dtype.kind != "u" or (array.size and int(array.max()) >= 1 << width):
                raise ValueError(f"operand {name}: {what} must be unsigned integers below 2^{width} for {fmt.name!r}")
    return fmt_a, fmt_b


class _Scales:
    """The scale side of a block pair: value = register * 2^lsb * scale_a * scale_b * tensor
    scales = significand * 2^exponent, with the tensor scales folded into one integer factor."""

    def __init__(self, a: Operand, b: Operand, fmt_a, fmt_b):
        self.sig_a, self.exp_a, self.nan_a = _terms_of_scale(fmt_a.scale)
        self.sig_b, self.exp_b, self.nan_b = _terms_of_scale(fmt_b.scale)
        self.factor, self.factor_exp = 1, 0
        for fmt, ts in ((fmt_a, a.tensor_scale), (fmt_b, b.tensor_scale)):
            check_tensor_scale(fmt, ts)
            if ts is not None:
                s, e = _dyadic(Fraction(ts))
                self.factor, self.factor_exp = self.factor * s, self.factor_exp + e
        self.largest_factor = int(self.sig_a.max()) * int(self.sig_b.max()) * self.factor

    def apply(self, scales_a, scales_b, register, lsb, special, wide: bool):
        special = np.where(self.nan_a[scales_a] | self.nan_b[scales_b], NAN, special).astype(np.int8)
        exponent = lsb + self.exp_a[scales_a] + self.exp_b[scales_b] + self.factor_exp
        scale_sig = self.sig_a[scales_a] * self.sig_b[scales_b]
        if wide:
            significand = register.astype(object) * scale_sig.astype(object) * self.factor
        else:
            significand = register * scale_sig * self.factor
        return np.where(special == FINITE, significand, 0), exponent, special


# Elements of each operand per chunk of a DotGeneral. The block pairs run in rectangles of rows x
# blocks of at most this many elements (whole rows while a row fits, else one row in equal pieces).
# Per chunk: copies of the operands' blocks when rows broadcast (2 x DOT_CHUNK bytes for 8-bit
# codes), the per-block results that are not returned (about 45 bytes a block, one buffer reused),
# the kernels' temporaries (bounded by BLOCK_CHUNK per thread) and the across-blocks sums (a few
# bytes a row). The peak is thus independent of M, N and K: at 2^24, beyond the inputs and the
# results, about 70 MB (tracemalloc, MXFP8, the float routes) to 130 MB (E5M2 exact: Python ints).
# 2^24 keeps the speed of one chunk: at 2^21 the E4M3 exact route took 4 times the CPU time (the
# allocator handed the kernels' temporaries back to the system after every chunk). A constant, not
# machine state; tests lower it.
DOT_CHUNK = 1 << 24


class _BlockDotter:
    """The per-block datapath of one format pair and accumulator: set up once, run on chunks."""

    def __init__(self, a: Operand, b: Operand, fmt_a, fmt_b, acc: Accumulator, anchors: bool):
        self.acc = acc
        self.kernel = _DotKernel(fmt_a, fmt_b, acc, anchors)
        self.scales = _Scales(a, b, fmt_a, fmt_b)
        # Values that int64 cannot hold (significand >= 2^62) take Python ints, on one thread.
        limit = self.kernel.register_limit * self.scales.largest_factor
        self.wide = self.kernel.register_dtype is object or limit >= _INT64_LIMIT
        self.chunk = max(1, BLOCK_CHUNK // fmt_a.block_size)
        self.code_dtype = np.uint32 if acc.output_storage == "fp32" else np.uint16

    def empty(self, n: int, fields=None) -> BlockDots:
        """Results for ``n`` blocks: every field, or only ``fields`` (the others None)."""
        dtypes = (self.code_dtype, self.kernel.register_dtype, np.int64, np.int64, np.int8,
                  object if self.wide else np.int64, np.int64)
        return BlockDots(*(np.empty(n, dtype) if fields is None or name in fields else None
                           for name, dtype in zip(BlockDots.__dataclass_fields__, dtypes)))

    def run(self, a: Operand, b: Operand, out: BlockDots) -> None:
        """Fill ``out`` (arrays of length N) with the dots of the N block pairs of ``a`` and ``b``,
        BLOCK_CHUNK elements at a time (on two threads unless the values take Python ints)."""
        n = a.codes.shape[0]
        empty = np.zeros((n, 0), np.uint8)
        sub_a = a.subscales if a.subscales is not None else empty
        sub_b = b.subscales if b.subscales is not None else empty
        fields = tuple(getattr(out, f) for f in out.__dataclass_fields__)
        arrays = (a.codes, b.codes, sub_a, sub_b, a.scales, b.scales) + fields
        if self.wide:  # Python-int routes gain nothing from threads
            for start in range(0, n, self.chunk):
                stop = min(start + self.chunk, n)
                self._run(start, stop, *(x[start:stop] for x in arrays))
        elif n:
            map_chunks(self._run, n, *arrays, chunk=self.chunk)

    def _run(self, start, stop, ca, cb, sa, sb, sc_a, sc_b, *out):
        codes, register, lsb, anchor, special, significand, exponent = out
        register[...], lsb[...], anchor[...], block_special = self.kernel.route(ca, cb, sa, sb)
        significand[...], exponent[...], special[...] = self.scales.apply(
            sc_a, sc_b, register, lsb, block_special, self.wide
        )
        negative, magnitude, exponent_out = _split_signed(significand, exponent)
        codes[...] = round_output(negative, magnitude, exponent_out, special, self.acc)


def dot_blocks(a: Operand, b: Operand, acc: Accumulator = Accumulator(), anchors: bool = True) -> BlockDots:
    """Dot of N block pairs (``a.codes`` and ``b.codes`` of shape (N, block_size)): the same
    results as :func:`mxsim.ref.dot.dot` on each pair. ``anchors=False`` skips the anchor in the
    modes whose result does not depend on it (it is then reported as 0). Memory: the O(N) results
    plus temporaries of O(BLOCK_CHUNK) per thread."""
    fmt_a, fmt_b = _check_operands(a, b)
    dotter = _BlockDotter(a, b, fmt_a, fmt_b, acc, anchors)
    out = dotter.empty(a.codes.shape[0])
    dotter.run(a, b, out)
    return out


def dot_general_blocks(
    a: Operand,
    b: Operand,
    acc: Accumulator = Accumulator(),
    rows: int = 1,
    anchors: bool = True,
    n_blocks: int | None = None,
    c: np.ndarray | None = None,
):
    """DotGeneral of ``rows`` rows of ``n_blocks`` block pairs each (codes of shape
    (rows * n_blocks, k), row-major; ``n_blocks`` defaults to N / rows): returns (output codes of
    shape (rows,), :class:`BlockDots` of shape (rows, n_blocks)). Memory: the results (O(rows *
    n_blocks)) plus temporaries bounded by :data:`DOT_CHUNK`.

    ``c``: the accumulator input C of each row as fp32 words (shape (rows,), any integer dtype),
    or None for no C term (separate accumulation only: the fp32 sum starts at C, or the exact sum
    includes C; see :mod:`mxsim.fast.fused` for fused steps)."""
    _check_separate(acc)
    fmt_a, fmt_b = _check_operands(a, b)
    n = n_blocks if n_blocks is not None else (a.codes.shape[0] // rows if rows else 0)
    if rows * n != a.codes.shape[0]:
        raise ValueError(f"{a.codes.shape[0]} blocks do not make {rows} rows of {n} blocks")
    dotter = _BlockDotter(a, b, fmt_a, fmt_b, acc, anchors)
    codes, blocks = _dot_general(dotter, _rows_of(a, (rows,), (rows,), n), _rows_of(b, (rows,), (rows,), n),
                                 rows, n, fmt_a.block_size, keep_blocks=True, c=c)
    return codes, blocks.reshape((rows, n))


def dot_general_broadcast(a: Operand, b: Operand, shape_a: tuple, shape_b: tuple, n_blocks: int,
                          acc: Accumulator = Accumulator(), details: bool = False, c: np.ndarray | None = None):
    """DotGeneral of rows of ``n_blocks`` block pairs, the rows broadcast NumPy style: ``a`` holds
    prod(shape_a) rows of ``n_blocks`` blocks (codes of shape (prod(shape_a) * n_blocks, k),
    row-major), ``b`` likewise, and the rows of the result run over np.broadcast_shapes(shape_a,
    shape_b) = ``lead``. Returns (output codes of shape ``lead``, :class:`BlockDots` of shape
    ``lead + (n_blocks,)`` if ``details``, else None). The details hold the fields
    :class:`mxsim.DotResult` reports (codes, accumulator, lsb_exponent, anchor); the others are
    None, and anchors are computed only with details.

    Memory: no broadcast copy of an operand is made. Beyond the results (O(prod(lead)), and
    O(prod(lead) * n_blocks) for the details), the temporaries are bounded by :data:`DOT_CHUNK`,
    whatever the shapes. ``c``: as in :func:`dot_general_blocks`, one fp32 word per result row
    (shape (prod(lead),)).
    """
    _check_separate(acc)
    fmt_a, fmt_b = _check_operands(a, b, paired=False)
    lead = np.broadcast_shapes(tuple(shape_a), tuple(shape_b))
    rows = int(np.prod(lead, dtype=np.int64))
    for name, op, shape in (("a", a, shape_a), ("b", b, shape_b)):
        if op.codes.shape[0] != int(np.prod(shape, dtype=np.int64)) * n_blocks:
            raise ValueError(
                f"operand {name}: {op.codes.shape[0]} blocks do not make rows {tuple(shape)} of {n_blocks} blocks"
            )
    dotter = _BlockDotter(a, b, fmt_a, fmt_b, acc, details)
    kept = ("codes", "accumulator", "lsb_exponent", "anchor") if details else False
    codes, blocks = _dot_general(dotter, _rows_of(a, shape_a, lead, n_blocks), _rows_of(b, shape_b, lead, n_blocks),
                                 rows, n_blocks, fmt_a.block_size, keep_blocks=kept, c=c)
    return codes.reshape(lead), (blocks.reshape(lead + (n_blocks,)) if details else None)


def _rows_of(op: Operand, shape: tuple, lead: tuple, n: int):
    """``take(r0, r1, j0, j1)``: the blocks [j0, j1) of the result rows [r0, r1) as an
    :class:`Operand`, rows of ``op`` (of ``shape``) broadcast to ``lead``. Views for whole rows or
    one row when no broadcasting is needed, else copies of the part only."""
    shape = (1,) * (len(lead) - len(shape)) + tuple(shape)
    if shape == tuple(lead):

        def take(r0, r1, j0, j1):
            if r1 - r0 == 1 or (j0, j1) == (0, n):  # contiguous: views
                start, stop = r0 * n + j0, (r1 - 1) * n + j1
                subscales = None if op.subscales is None else op.subscales[start:stop]
                return Operand(op.fmt, op.scales[start:stop], subscales, op.codes[start:stop], op.tensor_scale)

            def part(array):  # blocks [j0, j1) of rows [r0, r1): a copy of the part only
                return array.reshape(-1, n, *array.shape[1:])[r0:r1, j0:j1].reshape(-1, *array.shape[1:])

            subscales = None if op.subscales is None else part(op.subscales)
            return Operand(op.fmt, part(op.scales), subscales, part(op.codes), op.tensor_scale)

        return take
    own_rows, k = int(np.prod(shape, dtype=np.int64)), op.codes.shape[1]
    codes, scales = op.codes.reshape(own_rows, n, k), op.scales.reshape(own_rows, n)
    subscales = None if op.subscales is None else op.subscales.reshape(own_rows, n, op.subscales.shape[1])
    # the row of op behind each result row: its index along every axis that is not broadcast
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) if shape[d] != 1 else 0 for d in range(len(shape))]

    def take(r0, r1, j0, j1):
        own = np.zeros(r1 - r0, dtype=np.intp)
        for index, stride in zip(np.unravel_index(np.arange(r0, r1), lead), strides):
            if stride:
                own += index * stride
        sub = None if subscales is None else subscales[own, j0:j1].reshape(-1, subscales.shape[2])
        return Operand(op.fmt, scales[own, j0:j1].reshape(-1), sub, codes[own, j0:j1].reshape(-1, k), op.tensor_scale)

    return take


def _check_separate(acc: Accumulator) -> None:
    if acc.accumulate != "separate":
        raise ValueError("this is separate accumulation; fused steps are mxsim.fast.fused.dot_general_steps")


def _dot_general(dotter: _BlockDotter, take_a, take_b, rows: int, n: int, k: int, keep_blocks: bool, c=None):
    """The DotGeneral of ``rows`` rows of ``n`` block pairs (blocks of ``k`` elements) from
    ``take_a`` / ``take_b`` (see :func:`_rows_of`), in chunks of at most DOT_CHUNK elements:
    whole rows while a row fits, else each row in equal pieces, summed across blocks in order.
    Returns (output codes (rows,), BlockDots (rows * n,) if ``keep_blocks`` else None):
    ``keep_blocks`` True keeps every field, a tuple of field names those only (the others are
    then None). ``c``: fp32 words of each row's accumulator input C, or None (no C term)."""
    acc = dotter.acc
    c_value = None if c is None else np.asarray(c).astype(np.uint32).view(np.float32)
    per = max(1, DOT_CHUNK // k)  # block pairs per chunk
    pieces = -(-n // per)
    bounds = [n * i // pieces for i in range(pieces + 1)] if n else []
    spans = list(itertools.pairwise(bounds))
    row_step = 1 if n > per else max(1, per // max(n, 1))
    codes = np.empty(rows, dtype=dotter.code_dtype)
    fields = tuple(BlockDots.__dataclass_fields__)
    kept = keep_blocks if isinstance(keep_blocks, tuple) else fields if keep_blocks else ()
    blocks = dotter.empty(rows * n, kept) if keep_blocks else None
    buffer = dotter.empty(min(rows * n, per), set(fields) - set(kept))
    for r0 in range(0, rows, row_step):
        r1 = min(r0 + row_step, rows)
        c_rows = None if c_value is None else c_value[r0:r1]
        total = _Fp32Rows(r1 - r0, c_rows) if acc.across_blocks == "fp32" else _ExactRows(r1 - r0, c_rows)
        for j0, j1 in spans:
            count, start = (r1 - r0) * (j1 - j0), r0 * n + j0
            # the kept fields are written in place, the others to the chunk's buffer
            out = BlockDots(*(getattr(blocks, f)[start:start + count] if f in kept else getattr(buffer, f)[:count]
                              for f in fields))
            dotter.run(take_a(r0, r1, j0, j1), take_b(r0, r1, j0, j1), out)
            total.add(out, j1 - j0, acc)
        codes[r0:r1] = round_output(*total.parts(), acc)
    return codes, blocks


class _Fp32Rows:
    """Across blocks in fp32: each block's output value added in block order into an fp32 register
    per row, each addition rounded to nearest-even; fed the blocks piece by piece. The register
    starts at C (float32 values) if given, else at the first block's value."""

    def __init__(self, rows: int, c: np.ndarray | None = None):
        self.rows, self.total = rows, None if c is None else c.copy()

    def add(self, blocks: BlockDots, width: int, acc: Accumulator) -> None:
        values = output_values(blocks.codes, acc).astype(np.float32).reshape(self.rows, width)
        start = 0
        if self.total is None:
            self.total, start = values[:, 0].copy(), 1
        with np.errstate(invalid="ignore", over="ignore"):
            for j in range(start, width):
                self.total += values[:, j]

    def parts(self):
        return float32_parts(self.total if self.total is not None else np.zeros(self.rows, np.float32))


class _ExactRows:
    """Across blocks exactly: per row, the exact sum of the finite block values (and of C, float32
    values, if given) as total * 2^low (Python ints) and the specials seen; fed the blocks piece by
    piece."""

    def __init__(self, rows: int, c: np.ndarray | None = None):
        self.totals = [0] * rows
        self.low: list[int | None] = [None] * rows  # the smallest exponent of a nonzero term
        self.nan, self.pos, self.neg = (np.zeros(rows, dtype=bool) for _ in range(3))
        if c is not None:
            negative, magnitude, exponent, special = float32_parts(c)
            self.nan |= special == NAN
            self.pos |= special == POS_INF
            self.neg |= special == NEG_INF
            for r in np.flatnonzero((special == FINITE) & (magnitude != 0)):
                self.totals[r] = -int(magnitude[r]) if negative[r] else int(magnitude[r])
                self.low[r] = int(exponent[r])

    def add(self, blocks: BlockDots, width: int, acc: Accumulator) -> None:
        shape = (len(self.totals), width)
        special = blocks.special.reshape(shape)
        self.nan |= (special == NAN).any(axis=1)
        self.pos |= (special == POS_INF).any(axis=1)
        self.neg |= (special == NEG_INF).any(axis=1)
        significand, exponent = blocks.significand.reshape(shape), blocks.exponent.reshape(shape)
        for r in range(shape[0]):
            finite = [(int(s), int(e)) for s, e, k in zip(significand[r], exponent[r], special[r]) if k == FINITE and s]
            if not finite:
                continue
            low = min(e for _, e in finite)
            if self.low[r] is not None and self.low[r] < low:
                low = self.low[r]
            total = self.totals[r] << (self.low[r] - low) if self.low[r] is not None else 0
            self.totals[r] = total + sum((s << (e - low) for s, e in finite), 0)
            self.low[r] = low

    def parts(self):
        nan = self.nan | (self.pos & self.neg)
        special = np.where(nan, NAN, np.where(self.pos, POS_INF, np.where(self.neg, NEG_INF, FINITE)))
        totals = np.array(self.totals + [None], dtype=object)[:-1]
        low = np.array([0 if e is None else e for e in self.low], dtype=np.int64)
        negative, magnitude, exponent = _narrow(totals, low)
        return negative, magnitude, exponent, special.astype(np.int8)
