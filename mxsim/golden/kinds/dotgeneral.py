"""The ``dotgeneral`` suite kind: two vectors of blocks -> the DotGeneral result and every block's Dot."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...formats.element import negated_code
from ...fast.dot import BlockDots, dot_general_blocks
from ...ref import dot as ref_dot
from ...ref.exact import Exact
from ...ref.output import storage_format
from ..coverage.accumulator import c_classes
from ..coverage.rounding_record import block_dot_rows
from .batch import FloatBits, bit, code_table, pack_items
from .dot import DotSuite, merged_block_dots, rounding_flags
from .fields import Field, c_field
from ..values import code_sets, float_value, is_subnormal_code, pack_word, unpack_word


@dataclass
class DotGeneralSuite(DotSuite):
    """Two vectors of ``n_blocks`` blocks -> the DotGeneral ``result`` and each block's rounded
    Dot (``block_results``), for one accumulator configuration (``across_blocks`` included).
    Block j's fields sit at [j*width, (j+1)*width) of each operand field."""

    n_blocks: int = 4
    kind = "dotgeneral"
    example_params = {"block_a": "mxfp4_e2m1", "n_blocks": 2}

    def __post_init__(self):
        if not (isinstance(self.n_blocks, int) and 1 <= self.n_blocks <= 64):
            raise ValueError(f"n_blocks={self.n_blocks!r} is not allowed; expected an integer in [1, 64]")
        if self.exhaustive_pairs is not True:
            raise ValueError(f"exhaustive_pairs={self.exhaustive_pairs!r} is not allowed for dotgeneral; its catalogue "
                             "has no exhaustive code pairs: leave it true")
        self.vector_blocks = self.n_blocks
        super().__post_init__()
        n = self.n_blocks
        blocks = [f"n{n}"] if self.fused else [f"n{n}", self.acc.across_blocks]
        self.name = "-".join([self._pair()] + self._label() + blocks + self._suffixes())
        self.single = self.block_fields
        self.inputs = [
            f if f.name.endswith("tensor_scale") else Field(f.name, f.bits * n, f.signed, f"{n} blocks, block j at bits [j*{f.bits}, (j+1)*{f.bits}): {f.description}")
            for f in self.single
        ]
        if self.has_c:
            self.inputs.append(c_field(self.c_format))
        out = storage_format(self.acc)
        self.outputs = [Field("result", out.width, description=f"{out.name} bits of the DotGeneral")]
        if not self.fused:
            self.outputs.append(Field("block_results", out.width * n, description=(
                f"each block's Dot rounded to {out.name}, block j at bits [j*{out.width}, (j+1)*{out.width})")))
        self._add_steps_field()

    def params(self) -> dict:
        return {**super().params(), "n_blocks": self.n_blocks}

    def _block_stimulus(self, rng: random.Random, level: int):
        """The dot corners and level-1 random blocks, n to a vector, then vectors whose second block
        cancels the first (the single blocks, a few hundred, are drawn first: held in memory)."""
        singles = [row for row, origin in DotSuite._block_stimulus(self, rng, 1) if origin != "exhaustive"]
        n = self.n_blocks
        rows = []
        for start in range(0, len(singles) - n + 1, n):
            rows.append((self._join(singles[start : start + n]), "directed" if start < 64 else "random"))
        for _ in range(8):  # cancellation across blocks: block 1 is block 0 with a negated b side
            first = dict(rng.choice(singles))
            other = dict(first)
            element = self.fb.element
            if element.kind == "float":  # negated_code: a FNUZ/P3109 zero stays +0 (its 0x80 is the NaN)
                codes = unpack_word(first["b_elems"], element.width, self.fb.block_size)
                other["b_elems"] = pack_word([negated_code(c, element) for c in codes], element.width)
            rows.append((self._join([first, other] + [rng.choice(singles) for _ in range(n - 2)]), "directed"))
        yield from rows[: 60 * level + 8] if level == 1 else rows

    def _block_count(self, level: int) -> int:
        exhaustive = sum(-(-len(group) // self.fa.block_size) for group in self._exhaustive_groups())
        singles = DotSuite._block_count(self, 1) - exhaustive
        rows = len(range(0, singles - self.n_blocks + 1, self.n_blocks)) + 8
        return min(rows, 60 * level + 8) if level == 1 else rows

    def _random_vector(self, rng: random.Random) -> dict:
        """n random blocks of the dot kind, drawn as the dot catalogue's random blocks (a run of
        them at once: :meth:`DotSuite.random_run`, ``vector_blocks`` = n)."""
        return self._join([self._random_block(rng) for _ in range(self.n_blocks)])

    def _vector_blocks(self, inputs: dict):
        n = self.n_blocks
        # block j's value of each field at [j]
        fields = {f.name: [inputs[f.name]] * n if f.name.endswith("tensor_scale")
                  else unpack_word(inputs[f.name], f.bits, n) for f in self.single}
        per_block = [{name: values[j] for name, values in fields.items()} for j in range(n)]
        pairs = [self._blocks(row) for row in per_block]
        (ta, tb) = pairs[0][1]
        return [p[0][0] for p in pairs], [p[0][1] for p in pairs], ta, tb

    def _fused_vector(self, inputs: dict):
        blocks_a, blocks_b, _, _ = self._vector_blocks(inputs)
        return self._fused(blocks_a, blocks_b, float_value(inputs["c"], self.c_format) if self.has_c else None)

    def _reference_vector(self, inputs: dict):
        """(outputs, the classes but the blocks' output roundings', the roundings' record rows)."""
        blocks_a, blocks_b, ta, tb = self._vector_blocks(inputs)
        c = float_value(inputs["c"], self.c_format) if self.has_c else None
        scales = {"tensor_scale_a": ta, "tensor_scale_b": tb}
        g = ref_dot.dot_general(blocks_a, blocks_b, self.fa, self.fb, self.acc, **scales, c=c)
        out = storage_format(self.acc)
        classes = set()
        if g.value.is_nan:
            classes.add("nan")
        elif g.value.is_inf:
            classes.add("inf")
            if all(b.value.is_finite for b in g.blocks):
                classes.add("overflow")
        elif g.value.is_zero:
            classes.add("negative_zero" if g.value.sign else "zero")
            if any(not b.value.is_zero for b in g.blocks):
                classes.add("cancellation")
        elif is_subnormal_code(g.code, out):
            classes.add("subnormal_output")
        if len({b.value.sign for b in g.blocks if b.value.is_finite and not b.value.is_zero}) == 2:
            classes.add("mixed_signs")
        roundings = block_dot_rows(zip(blocks_a, blocks_b, g.blocks), self.fa, self.fb, ta is not None or tb is not None)
        for side, fmt, blocks in (("a", self.fa, blocks_a), ("b", self.fb, blocks_b)):
            if any(not code_sets(fmt.element)["inf"].isdisjoint(block.codes) for block in blocks):
                classes.add(f"inf_{side}")  # element Inf per operand (contract 3.3 (5))
        if c is not None:
            finite = all(b.exact.is_finite for b in g.blocks)
            exact = sum((b.exact.value for b in g.blocks), Fraction(0)) if finite else None
            classes |= c_classes(c, None if exact is None else Exact(int(exact < 0), abs(exact)))
        return {"result": g.code, "block_results": pack_word([b.code for b in g.blocks], out.width)}, classes, roundings

    def _batch(self, inputs: dict):
        n, count = self.n_blocks, len(inputs["a_scale"])
        sides = [self._operand_arrays(inputs, side, fmt, n) for side, fmt in (("a", self.fa), ("b", self.fb))]
        result = np.zeros(count, dtype=np.int64)
        block_codes = np.zeros((count, n), dtype=np.int64)
        parts = []
        for group in self._tensor_scale_groups(inputs, count):
            op_a, op_b = self._group_operands(sides, group, n)
            rows = group[1]
            size = len(range(count)[rows]) if isinstance(rows, slice) else len(rows)
            codes, group_blocks = dot_general_blocks(op_a, op_b, self.acc, rows=size, n_blocks=n)
            result[rows], block_codes[rows] = codes, group_blocks.codes
            parts.append((rows, group_blocks))
        blocks = merged_block_dots(parts, count, n)
        out_format = self.out_format
        value, block = FloatBits.of(result, out_format), FloatBits.of(block_codes, out_format)
        flags = np.zeros(count, dtype=np.int64)
        flags[value.nan] |= bit("nan")
        flags[value.inf] |= bit("inf")
        flags[value.inf & ~(block.nan | block.inf).any(axis=1)] |= bit("overflow")
        flags[value.zero & ~value.negative] |= bit("zero")
        flags[value.zero & value.negative] |= bit("negative_zero")
        flags[value.zero & ~block.zero.all(axis=1)] |= bit("cancellation")
        flags[value.subnormal] |= bit("subnormal_output")
        finite_nonzero = ~(block.nan | block.inf | block.zero)
        flags |= self._batch_block_flags(sides, blocks, count)
        flags[(finite_nonzero & block.negative).any(axis=1) & (finite_nonzero & ~block.negative).any(axis=1)] |= bit("mixed_signs")
        outputs = {"result": result.tolist(), "block_results": pack_items(block_codes, out_format.width)}
        return outputs, flags.tolist()

    def _batch_block_flags(self, sides, blocks: BlockDots, count: int) -> np.ndarray:
        """Flags of the batch path (as :meth:`compute`): every block's output-rounding classes, and
        an Inf element per operand."""
        (scales_a, _, ca), (scales_b, _, cb) = sides
        n, k = self.n_blocks, self.fa.block_size
        flat = blocks.reshape((count * n,))
        block_flags = rounding_flags(self, scales_a, scales_b, flat).reshape(count, n)
        flags = np.bitwise_or.reduce(block_flags, axis=1) if n else np.zeros(count, dtype=np.int64)
        ta, tb = code_table(self.fa.element), code_table(self.fb.element)
        flags[ta.inf[ca].reshape(count, n * k).any(axis=1)] |= bit("inf_a")
        flags[tb.inf[cb].reshape(count, n * k).any(axis=1)] |= bit("inf_b")
        return flags
