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
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..options import Accumulator
from ..formats import get_format
from ..ref import dot as ref_dot
from ..ref.block import QuantizedBlock, check_tensor_scale
from .chunks import BLOCK_CHUNK, map_chunks
from .output import FINITE, NAN, NEG_INF, POS_INF, output_values, round_output
from .round import round_shifted

__all__ = ["Operand", "BlockDots", "dot_blocks", "dot_general_blocks", "output_values"]

_INT64_LIMIT = 1 << 62
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
        return BlockDots(*(getattr(self, name).reshape(shape) for name in self.__dataclass_fields__))


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
    values = t.significand << shift
    values = np.where(t.negative, -values, values).astype(dtype_name)
    if np.dtype(dtype_name).kind == "f":
        values[t.inf] = np.where(t.negative[t.inf], -np.inf, np.inf)
        values[t.nan] = np.nan
    return values


@lru_cache(maxsize=None)
def _anchor_table(fmt) -> tuple[np.ndarray, int]:
    """(table, sentinel): E of every element code (tau = 0), with zero, Inf and NaN codes at
    ``sentinel``, so low that no product with them can be the anchor. int8 when the
    exponents are small (faster lookups), else int32."""
    t = _terms(fmt.element)
    finite_nonzero = t.significand != 0
    small = int(np.abs(t.exponent[finite_nonzero]).max(initial=0)) + _DotKernel._taumax(fmt) <= 15
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
            (np.trunc if acc.shift_rounding == "truncate" else np.rint)(products, out=products)
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
        rounding = "rtz" if acc.shift_rounding == "truncate" else "rne"
        q = round_shifted(magnitude, (lsb + self.frac)[:, None] - e, rounding, negative)
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
def _check_operands(a: Operand, b: Operand):
    fmt_a, fmt_b = ref_dot._check_pair(a.fmt, b.fmt, a.codes.shape[0], b.codes.shape[0])
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


def dot_blocks(a: Operand, b: Operand, acc: Accumulator = Accumulator(), anchors: bool = True) -> BlockDots:
    """Dot of N block pairs (``a.codes`` and ``b.codes`` of shape (N, block_size)): the same
    results as :func:`mxsim.ref.dot.dot` on each pair. ``anchors=False`` skips the anchor in the
    modes whose result does not depend on it (it is then reported as 0)."""
    fmt_a, fmt_b = _check_operands(a, b)
    kernel = _DotKernel(fmt_a, fmt_b, acc, anchors)
    scales = _Scales(a, b, fmt_a, fmt_b)
    # Values that int64 cannot hold (significand >= 2^62) take Python ints, on one thread.
    wide = kernel.register_dtype is object or kernel.register_limit * scales.largest_factor >= _INT64_LIMIT
    n = a.codes.shape[0]
    out = BlockDots(
        np.empty(n, np.uint32 if get_format(acc.output_storage).width == 32 else np.uint16),
        np.empty(n, dtype=kernel.register_dtype),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int8),
        np.empty(n, dtype=object if wide else np.int64),
        np.empty(n, np.int64),
    )
    empty = np.zeros((n, 0), np.uint8)
    sub_a = a.subscales if a.subscales is not None else empty
    sub_b = b.subscales if b.subscales is not None else empty

    def run(start, stop, ca, cb, sa, sb, sc_a, sc_b, codes, register, lsb, anchor, special, significand, exponent):
        register[...], lsb[...], anchor[...], block_special = kernel.route(ca, cb, sa, sb)
        significand[...], exponent[...], special[...] = scales.apply(sc_a, sc_b, register, lsb, block_special, wide)
        negative, magnitude, exponent_out = _split_signed(significand, exponent)
        codes[...] = round_output(negative, magnitude, exponent_out, special, acc)

    arrays = (a.codes, b.codes, sub_a, sub_b, a.scales, b.scales) + tuple(getattr(out, f) for f in out.__dataclass_fields__)
    if n and wide:  # Python-int routes gain nothing from threads
        run(0, n, *arrays)
    elif n:
        map_chunks(run, n, *arrays, chunk=max(1, BLOCK_CHUNK // fmt_a.block_size))
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
    shape (rows,), :class:`BlockDots` of shape (rows, n_blocks)).

    ``c``: the accumulator input C of each row as fp32 words (shape (rows,), any integer dtype),
    or None for no C term (separate accumulation only: the fp32 sum starts at C, or the exact sum
    includes C; see :mod:`mxsim.fast.fused` for fused steps)."""
    if acc.accumulate != "separate":
        raise ValueError(
            "dot_general_blocks is separate accumulation; fused steps are mxsim.fast.fused.dot_general_steps"
        )
    blocks = dot_blocks(a, b, acc, anchors)
    n = n_blocks if n_blocks is not None else (a.codes.shape[0] // rows if rows else 0)
    if rows * n != a.codes.shape[0]:
        raise ValueError(f"{a.codes.shape[0]} blocks do not make {rows} rows of {n} blocks")
    blocks = blocks.reshape((rows, n))
    c_value = None if c is None else np.asarray(c).astype(np.uint32).view(np.float32)
    if acc.across_blocks == "fp32":
        values = output_values(blocks.codes, acc).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            if c_value is not None:
                total = c_value.copy()
                for j in range(n):
                    total += values[:, j]
            else:
                total = values[:, 0].copy() if n else np.zeros(rows, np.float32)
                for j in range(1, n):
                    total += values[:, j]
        negative, magnitude, exponent, special = float32_parts(total)
    else:
        negative, magnitude, exponent, special = _exact_row_sums(blocks, c_value)
    return round_output(negative, magnitude, exponent, special, acc), blocks


def _exact_row_sums(blocks: BlockDots, c_value: np.ndarray | None = None):
    """Each row's blocks (and C, a float32 array, if given) summed exactly: (negative, magnitude,
    exponent, special) of the sum, narrowed to 61 bits with a sticky bit."""
    special, significands, exponents = blocks.special, blocks.significand, blocks.exponent
    if c_value is not None:
        negative, magnitude, exponent, c_special = float32_parts(c_value)
        special = np.concatenate([special, c_special[:, None]], axis=1)
        significands = np.concatenate([significands, np.where(negative, -magnitude, magnitude)[:, None]], axis=1)
        exponents = np.concatenate([exponents, exponent[:, None]], axis=1)
    nan = (special == NAN).any(axis=1) | ((special == POS_INF).any(axis=1) & (special == NEG_INF).any(axis=1))
    row_special = np.where(nan, NAN, np.where((special == POS_INF).any(axis=1), POS_INF,
                                              np.where((special == NEG_INF).any(axis=1), NEG_INF, FINITE)))
    rows, n = special.shape
    totals = np.empty(rows, dtype=object)
    low = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        finite = [(int(s), int(e)) for s, e, k in zip(significands[r], exponents[r], special[r]) if k == FINITE and s]
        base = min((e for _, e in finite), default=0)
        totals[r] = sum((s << (e - base) for s, e in finite), 0)
        low[r] = base
    negative, magnitude, exponent = _narrow(totals, low)
    return negative, magnitude, exponent, row_special.astype(np.int8)
