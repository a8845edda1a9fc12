"""Vectorized dot-product datapath: the model of :mod:`mxsim.ref.dot` on many blocks at once,
bit-identical to it for every :class:`~mxsim.accumulator.Accumulator`.

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

from ..accumulator import Accumulator
from ..formats import get_format
from ..ref import dot as ref_dot
from ..ref.block import QuantizedBlock
from .chunks import BLOCK_CHUNK, map_chunks
from .encode import encode_dyadic
from .round import round_shifted

__all__ = ["Operand", "BlockDots", "dot_blocks", "dot_general_blocks", "output_values"]

FINITE, POS_INF, NEG_INF, NAN = 0, 1, 2, 3
_INT64_LIMIT = 1 << 62
_NO_EXPONENT = np.iinfo(np.int64).min // 4


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
    """Signed value of every element code (with tau = 0) in units of 2^(E_min - f); 0 for Inf
    and NaN. Times 2^(taumax - tau) it is the element on the block format's fixed grid."""
    t = _terms(fmt.element)
    shift = t.exponent - ref_dot._min_exponent(fmt.element)
    values = t.significand << shift
    return np.where(t.negative, -values, values).astype(dtype_name)


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
    terms = [ref_dot.element_term(code, scale_fmt) for code in range(1 << scale_fmt.width)]
    return (
        np.array([t.significand for t in terms], dtype=np.int64),
        np.array([t.exponent - t.frac_bits for t in terms], dtype=np.int64),
        np.array([t.kind == "nan" for t in terms], dtype=bool),
    )


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
    accumulator."""

    def __init__(self, fmt_a, fmt_b, acc: Accumulator):
        self.fmt_a, self.fmt_b, self.acc = fmt_a, fmt_b, acc
        self.k = fmt_a.block_size
        self.ta, self.tb = _terms(fmt_a.element), _terms(fmt_b.element)
        self.frac = ref_dot._frac_bits(fmt_a.element) + ref_dot._frac_bits(fmt_b.element)
        self.special_codes = (
            bool((self.ta.nan | self.ta.inf).any()) or bool((self.tb.nan | self.tb.inf).any())
        )
        self.route = getattr(self, f"_route_{acc.mode}")()

    # Each _route_* picks how its mode runs for this pair and returns the chunk function.
    def _route_exact(self):
        taumax_a = (1 << self.fmt_a.subscale_bits) - 1 if self.fmt_a.subblocks else 0
        taumax_b = (1 << self.fmt_b.subscale_bits) - 1 if self.fmt_b.subblocks else 0
        bound_a = _max_abs(_grid_table(self.fmt_a, "int64")) << taumax_a
        bound_b = _max_abs(_grid_table(self.fmt_b, "int64")) << taumax_b
        bound = self.k * bound_a * bound_b
        if bound < 1 << 24 and max(bound_a, bound_b) < 1 << 24:
            self.dtype = "float32"
        elif bound < 1 << 53:
            self.dtype = "float64"
        else:
            self.dtype = "object"
        self.register_dtype = np.int64 if bound < _INT64_LIMIT else object
        return self._exact

    def _route_aligned(self):
        f = self.acc.frac_bits
        # |q_i| <= Ma*Mb * 2^(F - frac) <= 4 * 2^F (and rne may round up by one): the sum of k
        # of them must stay inside int64 for the array route.
        largest = (_max_abs(self.ta.significand) * _max_abs(self.tb.significand)) >> self.frac
        bound = self.k * ((largest + 1) << f) + self.k
        if bound >= _INT64_LIMIT:
            self.register_dtype = object
            return self._by_reference
        self.register_dtype = np.int64
        limit = self.acc.register_bound
        self.clamp = limit is not None and bound >= limit
        return self._aligned

    def _route_fp32_sequential(self):
        va, vb = _float32_values(self.fmt_a), _float32_values(self.fmt_b)
        lsb = ref_dot.product_lsb(self.fmt_a, self.fmt_b)
        sig_bits = int(_max_abs(self.ta.significand)).bit_length() + int(_max_abs(self.tb.significand)).bit_length()
        top = self.fmt_a.element.emax + self.fmt_b.element.emax + 2
        self.register_dtype = np.int64
        if va is None or vb is None or sig_bits > 24 or lsb < -149 or top > 127:
            return self._by_reference  # some product is not exact in float32
        self.va, self.vb = va, vb
        return self._fp32_sequential

    # --- helpers -----------------------------------------------------------------------------
    def _taus(self, fmt, subscales) -> np.ndarray:
        return np.repeat(subscales.astype(np.int64), fmt.subblock_size, axis=1)

    def _exact(self, codes_a, codes_b, sub_a, sub_b):
        va = _grid_table(self.fmt_a, self.dtype if self.dtype != "object" else "int64")[codes_a]
        vb = _grid_table(self.fmt_b, self.dtype if self.dtype != "object" else "int64")[codes_b]
        if self.dtype == "object":
            va, vb = va.astype(object), vb.astype(object)
        for fmt, v, sub in ((self.fmt_a, va, sub_a), (self.fmt_b, vb, sub_b)):
            if fmt.subblocks:  # v * 2^(taumax - tau): the grid leaves room for the largest tau
                taumax = (1 << fmt.subscale_bits) - 1
                shift = taumax - self._taus(fmt, sub)
                v *= (np.left_shift(1, shift).astype(v.dtype) if self.dtype != "object" else (1 << shift).astype(object))
        if self.dtype == "object":
            register = (va * vb).sum(axis=1)
        else:
            register = np.einsum("ij,ij->i", va, vb).astype(np.int64)
        lsb = np.full(register.shape, ref_dot.product_lsb(self.fmt_a, self.fmt_b), dtype=np.int64)
        anchor = self._anchor(codes_a, codes_b, sub_a, sub_b)
        return register, lsb, anchor, self.specials(codes_a, codes_b)

    def _exponents(self, codes_a, codes_b, sub_a, sub_b):
        e = self.ta.exponent[codes_a] + self.tb.exponent[codes_b]
        if self.fmt_a.subblocks:
            e -= self._taus(self.fmt_a, sub_a)
        if self.fmt_b.subblocks:
            e -= self._taus(self.fmt_b, sub_b)
        return e

    def _anchor(self, codes_a, codes_b, sub_a, sub_b, e=None, nonzero=None):
        if e is None:
            e = self._exponents(codes_a, codes_b, sub_a, sub_b)
        if nonzero is None:
            nonzero = (self.ta.significand[codes_a] != 0) & (self.tb.significand[codes_b] != 0)
        anchor = np.where(nonzero, e, _NO_EXPONENT).max(axis=1)
        return np.where(anchor == _NO_EXPONENT, 0, anchor)

    def _aligned(self, codes_a, codes_b, sub_a, sub_b):
        acc = self.acc
        magnitude = self.ta.significand[codes_a] * self.tb.significand[codes_b]
        e = self._exponents(codes_a, codes_b, sub_a, sub_b)
        anchor = self._anchor(codes_a, codes_b, sub_a, sub_b, e, magnitude != 0)
        lsb = anchor - acc.frac_bits
        negative = self.ta.negative[codes_a] ^ self.tb.negative[codes_b]
        rounding = "rtz" if acc.shift_rounding == "truncate" else "rne"
        q = round_shifted(magnitude, (lsb + self.frac)[:, None] - e, rounding, negative)
        q = np.where(negative, -q, q)
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
        return register, lsb, anchor, self.specials(codes_a, codes_b)

    def _fp32_sequential(self, codes_a, codes_b, sub_a, sub_b):
        pa, pb = self.va[codes_a], self.vb[codes_b]
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
        return register, lsb, self._anchor(codes_a, codes_b, sub_a, sub_b), special

    def _by_reference(self, codes_a, codes_b, sub_a, sub_b):
        results = []
        for i in range(codes_a.shape[0]):
            blocks = []
            for fmt, codes, sub in ((self.fmt_a, codes_a, sub_a), (self.fmt_b, codes_b, sub_b)):
                taus = tuple(int(t) for t in sub[i]) if fmt.subblocks else ()
                # scale 127 (E8M0 1.0) or the scale format's code of 1.0: only the register matters
                blocks.append(QuantizedBlock(_unit_scale_code(fmt), taus, tuple(int(c) for c in codes[i])))
            r = ref_dot.dot(blocks[0], blocks[1], self.fmt_a, self.fmt_b, self.acc)
            results.append((r.accumulator, r.lsb_exponent, r.anchor, r.exact))
        register = np.array([r[0] for r in results] + [None], dtype=object)[:-1]
        lsb = np.array([r[1] for r in results], dtype=np.int64)
        anchor = np.array([r[2] for r in results], dtype=np.int64)
        special = np.array([_special_code(r[3]) for r in results], dtype=np.int8)
        return register, lsb, anchor, special

    def specials(self, codes_a, codes_b) -> np.ndarray:
        """Per block: FINITE, POS_INF, NEG_INF or NAN from the element products (exact and
        aligned modes; the rules of :func:`mxsim.ref.dot._special`)."""
        special = np.zeros(codes_a.shape[0], dtype=np.int8)
        if not self.special_codes:
            return special
        ta, tb = self.ta, self.tb
        odd = ta.nan[codes_a] | ta.inf[codes_a] | tb.nan[codes_b] | tb.inf[codes_b]
        rows = np.flatnonzero(odd.any(axis=1))
        if rows.size == 0:
            return special
        ca, cb = codes_a[rows], codes_b[rows]
        nan = ta.nan[ca] | tb.nan[cb] | (ta.inf[ca] & tb.zero[cb]) | (ta.zero[ca] & tb.inf[cb])
        inf = (ta.inf[ca] | tb.inf[cb]) & ~nan
        negative = ta.negative[ca] ^ tb.negative[cb]
        pos, neg = (inf & ~negative).any(axis=1), (inf & negative).any(axis=1)
        special[rows] = np.where(nan.any(axis=1) | (pos & neg), NAN, np.where(pos, POS_INF, np.where(neg, NEG_INF, FINITE)))
        return special


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


def round_output(negative, magnitude, exponent, special, acc: Accumulator) -> np.ndarray:
    """Output codes (uint32 for fp32, uint16 for bf16/fp16) of (-1)^negative * magnitude *
    2^exponent, or of the special outcome; the rules of :func:`mxsim.ref.dot.round_output`."""
    out = get_format(acc.output, kind="float")
    code, overflows = encode_dyadic(magnitude, exponent, negative, out, acc.output_rounding)
    inf = np.where(negative, out.inf_code(True), out.inf_code(False))
    code = np.where(overflows, inf, code)
    if acc.ftz:
        code = np.where((code & ~out.sign_mask) < (1 << out.mantissa_bits), code & out.sign_mask, code)
    code = np.where(special == POS_INF, out.inf_code(False), code)
    code = np.where(special == NEG_INF, out.inf_code(True), code)
    code = np.where(special == NAN, out.nan_code(), code)
    return code.astype(np.uint32 if out.width == 32 else np.uint16)


def output_values(codes: np.ndarray, acc: Accumulator) -> np.ndarray:
    """Output codes as numbers: float32 for fp32 and bf16 (every bf16 value is a float32),
    float16 for fp16."""
    if acc.output == "fp32":
        return codes.astype(np.uint32).view(np.float32)
    if acc.output == "bf16":
        return (codes.astype(np.uint32) << 16).view(np.float32)
    return codes.astype(np.uint16).view(np.float16)


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
    return fmt_a, fmt_b


def dot_blocks(a: Operand, b: Operand, acc: Accumulator = Accumulator()) -> BlockDots:
    """Dot of N block pairs (``a.codes`` and ``b.codes`` of shape (N, block_size)): the same
    results as :func:`mxsim.ref.dot.dot` on each pair."""
    fmt_a, fmt_b = _check_operands(a, b)
    kernel = _DotKernel(fmt_a, fmt_b, acc)
    n = a.codes.shape[0]
    register = np.empty(n, dtype=kernel.register_dtype)
    lsb, anchor = np.empty(n, np.int64), np.empty(n, np.int64)
    special = np.empty(n, np.int8)
    empty = np.zeros((n, 0), np.uint8)
    sub_a = a.subscales if a.subscales is not None else empty
    sub_b = b.subscales if b.subscales is not None else empty

    def run(start, stop, ca, cb, sa, sb, out_register, out_lsb, out_anchor, out_special):
        out_register[...], out_lsb[...], out_anchor[...], out_special[...] = kernel.route(ca, cb, sa, sb)

    chunk = max(1, BLOCK_CHUNK // fmt_a.block_size)
    if n:
        if kernel.register_dtype is object:  # Python-int routes gain nothing from threads
            run(0, n, a.codes, b.codes, sub_a, sub_b, register, lsb, anchor, special)
        else:
            map_chunks(run, n, a.codes, b.codes, sub_a, sub_b, register, lsb, anchor, special, chunk=chunk)
    significand, exponent, special = _apply_scales(a, b, fmt_a, fmt_b, register, lsb, special)
    negative, magnitude, exponent_out = _split_signed(significand, exponent)
    codes = round_output(negative, magnitude, exponent_out, special, acc)
    return BlockDots(codes, register, lsb, anchor, special, significand, exponent)


def _apply_scales(a, b, fmt_a, fmt_b, register, lsb, special):
    """significand * 2^exponent = register * 2^lsb * scale_a * scale_b (* tensor scales)."""
    sig_a, exp_a, nan_a = _terms_of_scale(fmt_a.scale)
    sig_b, exp_b, nan_b = _terms_of_scale(fmt_b.scale)
    special = np.where(nan_a[a.scales] | nan_b[b.scales], NAN, special).astype(np.int8)
    exponent = lsb + exp_a[a.scales] + exp_b[b.scales]
    factor, factor_exp = 1, 0
    for ts in (a.tensor_scale, b.tensor_scale):
        if ts is not None:
            s, e = _dyadic(Fraction(ts))
            factor, factor_exp = factor * s, factor_exp + e
    exponent = exponent + factor_exp
    scale_sig = sig_a[a.scales] * sig_b[b.scales]
    if register.dtype != object:
        largest = int(np.abs(register).max(initial=0)) * int(scale_sig.max(initial=0)) * factor
        if largest < _INT64_LIMIT:
            significand = register * scale_sig * factor
            return np.where(special == FINITE, significand, 0), exponent, special
    significand = register.astype(object) * scale_sig.astype(object) * factor
    return np.where(special == FINITE, significand, 0), exponent, special


def dot_general_blocks(a: Operand, b: Operand, acc: Accumulator = Accumulator(), rows: int = 1):
    """DotGeneral of ``rows`` rows of n block pairs each (codes of shape (rows * n, k), row-major):
    returns (output codes of shape (rows,), :class:`BlockDots` of shape (rows, n))."""
    blocks = dot_blocks(a, b, acc)
    n = a.codes.shape[0] // rows if rows else 0
    blocks = blocks.reshape((rows, n))
    if acc.across_blocks == "fp32":
        values = output_values(blocks.codes, acc).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            total = values[:, 0].copy() if n else np.zeros(rows, np.float32)
            for j in range(1, n):
                total += values[:, j]
        negative, magnitude, exponent, special = float32_parts(total)
    else:
        negative, magnitude, exponent, special = _exact_row_sums(blocks)
    return round_output(negative, magnitude, exponent, special, acc), blocks


def _exact_row_sums(blocks: BlockDots):
    special = blocks.special
    nan = (special == NAN).any(axis=1) | ((special == POS_INF).any(axis=1) & (special == NEG_INF).any(axis=1))
    row_special = np.where(nan, NAN, np.where((special == POS_INF).any(axis=1), POS_INF,
                                              np.where((special == NEG_INF).any(axis=1), NEG_INF, FINITE)))
    rows, n = special.shape
    totals = np.empty(rows, dtype=object)
    low = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        finite = [(int(s), int(e)) for s, e, k in zip(blocks.significand[r], blocks.exponent[r], special[r]) if k == FINITE and s]
        base = min((e for _, e in finite), default=0)
        totals[r] = sum((s << (e - base) for s, e in finite), 0)
        low[r] = base
    negative, magnitude, exponent = _narrow(totals, low)
    return negative, magnitude, exponent, row_special.astype(np.int8)
