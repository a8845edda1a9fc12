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

Modules, by seam: this one holds the operands and results, the scales, the chunking and the
DotGeneral drivers; :mod:`mxsim.fast.dot_kernel` the per-block routes, :mod:`mxsim.fast.dot_tables`
the code tables, :mod:`mxsim.fast.dot_rows` the sums across blocks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..options import Accumulator
from ..ref import dot as ref_dot
from ..ref.stored_block import QuantizedBlock, check_tensor_scale
from .chunks import BLOCK_CHUNK, map_chunks
from .dot_kernel import _DotKernel
from .dot_rows import _ExactRows, _Fp32Rows, _split_signed
from .dot_tables import INT64_LIMIT, _dyadic, _terms_of_scale
from .output import FINITE, NAN, output_values, round_output

__all__ = [
    "DOT_CHUNK", "BlockDots", "Operand", "dot_blocks", "dot_general_blocks", "dot_general_broadcast", "output_values"
]


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

    def blocks(self) -> list[QuantizedBlock]:
        """:meth:`block` of every block, the arrays converted to Python ints at once."""
        subscales = [()] * len(self.scales) if self.subscales is None else list(map(tuple, self.subscales.tolist()))
        return [QuantizedBlock(scale, sub, tuple(codes))
                for scale, sub, codes in zip(self.scales.tolist(), subscales, self.codes.tolist())]


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


def _check_operands(a: Operand, b: Operand, paired: bool = True):
    """The formats of ``a`` and ``b``, after checking their arrays (and, if ``paired``, that they
    hold the same number of blocks)."""
    length_b = b.codes.shape[0] if paired else a.codes.shape[0]
    fmt_a, fmt_b = ref_dot.check_pair(a.fmt, b.fmt, a.codes.shape[0], length_b)
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
        self.wide = self.kernel.register_dtype is object or limit >= INT64_LIMIT
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
