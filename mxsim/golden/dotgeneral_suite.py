"""The ``dotgeneral`` suite kind: two vectors of blocks -> the DotGeneral result and every block's Dot."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from ..fast.dot import dot_general_blocks
from ..formats import get_format
from ..ref import dot as ref_dot
from .batch import FloatBits, bit, compute_each, fast_dot_models, pack_items
from .fields import Field
from .dot_suite import DotSuite
from .suite import is_subnormal_code, pack_word, unpack_word


@dataclass
class DotGeneralSuite(DotSuite):
    """Two vectors of ``n_blocks`` blocks -> the DotGeneral ``result`` and each block's rounded
    Dot (``block_results``), for one accumulator configuration (``across_blocks`` included).
    Block j's fields sit at [j*width, (j+1)*width) of each operand field."""

    n_blocks: int = 4
    kind = "dotgeneral"

    def __post_init__(self):
        if not (isinstance(self.n_blocks, int) and 1 <= self.n_blocks <= 64):
            raise ValueError(f"n_blocks={self.n_blocks!r} is not allowed; expected an integer in [1, 64]")
        super().__post_init__()
        n = self.n_blocks
        self.name = f"{self.name}-n{n}-{self.acc.across_blocks}"
        self.single = [f for f in self.inputs]
        self.inputs = [
            f if f.name.endswith("tensor_scale") else Field(f.name, f.bits * n, f.signed, f"{n} blocks, block j at bits [j*{f.bits}, (j+1)*{f.bits}): {f.description}")
            for f in self.single
        ]
        out = get_format(self.acc.output, kind="float")
        self.outputs = [
            Field("result", out.width, description=f"{out.name} bits of the DotGeneral"),
            Field("block_results", out.width * n, description=f"each block's Dot rounded to {out.name}, block j at bits [j*{out.width}, (j+1)*{out.width})"),
        ]

    def params(self) -> dict:
        return {**super().params(), "n_blocks": self.n_blocks}

    def stimulus(self, rng: random.Random, level: int):
        """The dot corners and level-1 random blocks, n to a vector, then vectors whose second block
        cancels the first (the single blocks, a few hundred, are drawn first: held in memory)."""
        singles = [row for row, origin in DotSuite.stimulus(self, rng, 1) if origin != "exhaustive"]
        n = self.n_blocks
        rows = []
        for start in range(0, len(singles) - n + 1, n):
            rows.append((self._join(singles[start : start + n]), "directed" if start < 64 else "random"))
        for _ in range(8):  # cancellation across blocks: block 1 is block 0 with a negated b side
            first = dict(rng.choice(singles))
            other = dict(first)
            other["b_elems"] = pack_word([c ^ self.fb.element.sign_mask for c in unpack_word(first["b_elems"], self.fb.element.width, self.fb.block_size)], self.fb.element.width) if self.fb.element.kind == "float" else first["b_elems"]
            rows.append((self._join([first, other] + [rng.choice(singles) for _ in range(n - 2)]), "directed"))
        yield from rows[: 60 * level + 8] if level == 1 else rows

    def catalogue_size(self, level: int) -> int:
        exhaustive = sum(-(-len(group) // self.fa.block_size) for group in self._exhaustive_groups())
        singles = DotSuite.catalogue_size(self, 1) - exhaustive
        rows = len(range(0, singles - self.n_blocks + 1, self.n_blocks)) + 8
        return min(rows, 60 * level + 8) if level == 1 else rows

    random_run = None  # its random vectors come from random_inputs alone

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """n random blocks of the dot kind, drawn as the dot catalogue's random blocks."""
        return self._join([self._random_block(rng) for _ in range(self.n_blocks)])

    def _join(self, blocks: list[dict]) -> dict:
        joined = {}
        for f in self.single:
            if f.name.endswith("tensor_scale"):
                joined[f.name] = blocks[0][f.name]
            else:
                joined[f.name] = pack_word([b[f.name] for b in blocks], f.bits)
        return joined

    def compute(self, inputs: dict):
        n = self.n_blocks
        per_block = [
            {f.name: (inputs[f.name] if f.name.endswith("tensor_scale") else unpack_word(inputs[f.name], f.bits, n)[j]) for f in self.single}
            for j in range(n)
        ]
        pairs = [self._blocks(row) for row in per_block]
        (ta, tb) = pairs[0][1]
        g = ref_dot.dot_general([p[0][0] for p in pairs], [p[0][1] for p in pairs], self.fa, self.fb, self.acc,
                                tensor_scale_a=ta, tensor_scale_b=tb)
        out = get_format(self.acc.output, kind="float")
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
        return {"result": g.code, "block_results": pack_word([b.code for b in g.blocks], out.width)}, classes

    def compute_batch(self, inputs: dict):
        """``compute`` of N vectors with the fast path (see :meth:`DotSuite.compute_batch`)."""
        if not fast_dot_models(self.acc):
            return compute_each(self, inputs)
        try:
            return self._batch(inputs)
        except ValueError:
            return compute_each(self, inputs)

    def _batch(self, inputs: dict):
        n, count = self.n_blocks, len(inputs["a_scale"])
        sides = [self._operand_arrays(inputs, side, fmt, n) for side, fmt in (("a", self.fa), ("b", self.fb))]
        result = np.zeros(count, dtype=np.int64)
        block_codes = np.zeros((count, n), dtype=np.int64)
        for group in self._tensor_scale_groups(inputs, count):
            op_a, op_b = self._group_operands(sides, group, n)
            rows = group[1]
            size = len(range(count)[rows]) if isinstance(rows, slice) else len(rows)
            codes, blocks = dot_general_blocks(op_a, op_b, self.acc, rows=size, n_blocks=n)
            result[rows], block_codes[rows] = codes, blocks.codes
        out_format = get_format(self.acc.output, kind="float")
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
        flags[(finite_nonzero & block.negative).any(axis=1) & (finite_nonzero & ~block.negative).any(axis=1)] |= bit("mixed_signs")
        outputs = {"result": result.tolist(), "block_results": pack_items(block_codes, out_format.width)}
        return outputs, flags.tolist()
