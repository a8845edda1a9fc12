"""The inputs of a ``dot`` suite, one vector at a time: structured, exhaustive, directed and random.
The structured and mutation vectors of :mod:`...stimulus`, then every element code pair (FP4, FP6,
FP8), directed corner blocks, cancelling blocks and weighted random blocks; with an accumulator
input each with a C."""

from __future__ import annotations

import random
from fractions import Fraction
from functools import lru_cache

from ....formats.element import negated_code
from ....ref.encode import encode
from ....ref.exact import Exact
from ...stimulus import accumulator as accumulator_input
from ...stimulus import dot as dot_stimulus
from ...stimulus import mutation as mutation_stimulus
from ...values import decode, fp32_bits, pack_word


@lru_cache(maxsize=8)
def _code_pairs(e) -> tuple[list, list]:
    """(finite, special): every (a, b) pair of codes of ``e`` in order, split by whether both are finite."""
    is_finite = [decode(c, e).is_finite for c in range(1 << e.width)]
    pairs = [(ca, cb) for ca in range(1 << e.width) for cb in range(1 << e.width)]
    both = [is_finite[ca] and is_finite[cb] for ca, cb in pairs]
    return [p for p, ok in zip(pairs, both) if ok], [p for p, ok in zip(pairs, both) if not ok]


@lru_cache(maxsize=8)
def finite_codes(fmt) -> list[int]:
    """The finite codes of a (scale) format, in code order (the same list every call: kept)."""
    return [c for c in range(1 << fmt.width) if decode(c, fmt).is_finite]


class DotStimulus:
    """``stimulus``, ``catalogue_size``, ``random_inputs`` and the block draws of a dot suite (needs
    ``self.fa``, ``self.fb``, ``self.tensor_scales``, ``self.unit_scales``, ``self.exhaustive_pairs``,
    ``self.has_c``, ``self.vector_blocks`` and ``self.block_fields``). A vector: each operand's
    ``*_scale``, ``*_sub`` (two-level formats), ``*_elems`` and NVFP4 ``*_tensor_scale``; ``c``."""

    @staticmethod
    @lru_cache(maxsize=64)
    def _code_sets(e) -> dict[str, list[int]]:
        """The element codes each stimulus kind draws from (finite, the largest of both signs and of
        positive sign, the smallest eighth, the non-finite), in code order."""
        finite = [c for c in range(1 << e.width) if decode(c, e).is_finite]
        largest = max(decode(x, e).magnitude for x in finite)
        top = [c for c in finite if decode(c, e).magnitude == largest]
        return {
            "finite": finite,
            "max": top,
            "max_positive": [c for c in top if not decode(c, e).sign] or top,
            "small": sorted(finite, key=lambda c: decode(c, e).magnitude)[: max(4, len(finite) // 8)],
            "special": [c for c in range(1 << e.width) if not decode(c, e).is_finite],
        }

    def _codes(self, fmt, rng: random.Random, kind: str) -> list[int]:
        k, e = fmt.block_size, fmt.element
        sets = self._code_sets(e)
        finite = sets["finite"]
        if kind == "zero":
            return [rng.choice([0, e.sign_mask]) if decode(e.sign_mask, e).is_zero else 0 for _ in range(k)]
        if kind in ("max", "max_positive"):  # max_positive: same-sign products overflow a narrow register
            return [rng.choice(sets[kind]) for _ in range(k)]
        if kind == "small":
            return [rng.choice(sets["small"]) for _ in range(k)]
        if kind == "special":
            codes = [rng.choice(finite) for _ in range(k)]
            if sets["special"]:
                codes[rng.randrange(k)] = rng.choice(sets["special"])
            return codes
        return [rng.choice(finite) if rng.random() < 0.97 else rng.getrandbits(e.width) for _ in range(k)]

    def _side(self, fmt, codes, scale, rng) -> dict:
        side = {"scale": scale, "elems": pack_word(codes, fmt.element.width)}
        if fmt.subblocks:
            side["sub"] = rng.getrandbits(fmt.subblocks * fmt.subscale_bits)
        if fmt.tensor_scale is not None and self.tensor_scales:
            side["tensor_scale"] = fp32_bits(Exact(0, Fraction(rng.randint(1 << 23, (1 << 24) - 1), 1 << rng.randint(20, 40))))
        return side

    def _row(self, a: dict, b: dict) -> dict:
        return {**{f"a_{k}": v for k, v in a.items()}, **{f"b_{k}": v for k, v in b.items()}}

    def _scale(self, fmt, rng: random.Random, kind: str = "normal") -> int:
        s = fmt.scale
        if self.unit_scales:
            return encode(1, s)
        if s.name != "e8m0":
            return rng.choice(finite_codes(s))
        if kind == "low":  # with a 0x00 partner: results in fp32's subnormal range
            return 127 + rng.randint(-12, 6)
        return {"min": 0, "max": 0xFE, "nan": 0xFF}.get(kind, 127 + rng.randint(-8, 8))

    def _exhaustive_groups(self) -> tuple[list, list]:
        """(finite, special): every element code pair of a same-format FP4/FP6/FP8 pair (others:
        none), split by whether both codes are finite."""
        ea, eb = self.fa.element, self.fb.element
        if not self.exhaustive_pairs or ea is not eb or ea.kind != "float" or ea.width > 8:
            return [], []  # every pair of FP4, FP6 and FP8 E4M3/E5M2; other pairs get corners and random
        return _code_pairs(ea)

    def _exhaustive(self, rng: random.Random):
        """Every element code pair, 32 (k) pairs per block, unit scales; pairs with an Inf or
        NaN element go into blocks of their own so that the others stay finite."""
        k = self.fa.block_size
        unit_a, unit_b = encode(1, self.fa.scale), encode(1, self.fb.scale)
        for group in self._exhaustive_groups():
            for i in range(0, len(group), k):
                chunk = group[i : i + k]
                chunk = chunk + [(0, 0)] * (k - len(chunk))
                a = self._side(self.fa, [p[0] for p in chunk], unit_a, rng)
                b = self._side(self.fb, [p[1] for p in chunk], unit_b, rng)
                if self.fa.subblocks:
                    a["sub"] = 0
                if self.fb.subblocks:
                    b["sub"] = 0
                yield self._row(a, b), "exhaustive"

    _DIRECTED = [
        ("zero", "normal", "normal", "normal"), ("max", "max", "normal", "normal"),
        ("small", "small", "normal", "normal"),
        ("max", "max", "max", "max"), ("small", "small", "min", "min"), ("normal", "normal", "min", "max"),
        ("normal", "normal", "nan", "normal"), ("special", "normal", "normal", "normal"),
        ("normal", "special", "normal", "normal"), ("zero", "zero", "normal", "normal"),
        ("max_positive", "max_positive", "normal", "normal"), ("normal", "normal", "min", "low"),
        ("small", "normal", "min", "low"),
    ] * 4
    _CANCELLATIONS = 8

    def stimulus(self, rng: random.Random, level: int):
        """The catalogue: the structured vectors (:func:`.dot_stimulus.structured_rows`), then the
        blocks of every vector (:meth:`_block_stimulus`); with an accumulator input, each with a C
        and then the directed C vectors (:func:`.accumulator_input.with_c`)."""
        yield from dot_stimulus.structured_rows(self, rng)
        yield from mutation_stimulus.mutation_rows(self)
        rows = self._block_stimulus(rng, level)
        yield from accumulator_input.with_c(self, rows, rng) if self.has_c else rows

    def _block_stimulus(self, rng: random.Random, level: int):
        """The blocks of every vector: exhaustive pairs, directed corners, weighted random."""
        yield from self._exhaustive(rng)
        yield from self._corners(rng)
        for _ in range(150 * level):
            yield self._random_block(rng), "random"

    def _corners(self, rng: random.Random):
        """The directed blocks: each (a kind, b kind, a scale, b scale) of _DIRECTED, then blocks
        whose second half of products cancels the first."""
        fa, fb = self.fa, self.fb
        for kind_a, kind_b, scale_a, scale_b in self._DIRECTED:
            a = self._side(fa, self._codes(fa, rng, kind_a), self._scale(fa, rng, scale_a), rng)
            b = self._side(fb, self._codes(fb, rng, kind_b), self._scale(fb, rng, scale_b), rng)
            yield self._row(a, b), "directed"
        for _ in range(self._CANCELLATIONS):  # cancellation: b's products against a's negated copy
            codes = self._codes(fa, rng, "normal")
            half = fa.block_size // 2
            negated = [negated_code(c, fa.element) for c in codes[:half]]
            codes = codes[:half] + negated
            b_codes = self._codes(fb, rng, "normal")
            b_codes = b_codes[:half] + b_codes[:half]
            a = self._side(fa, codes, self._scale(fa, rng), rng)
            b = self._side(fb, b_codes, self._scale(fb, rng), rng)
            if fa.subblocks:
                a["sub"] = 0
            if fb.subblocks:
                b["sub"] = 0
            yield self._row(a, b), "directed"

    def catalogue_size(self, level: int) -> int:
        directed = accumulator_input.directed_count(self) if self.has_c else 0
        structured = dot_stimulus.structured_count(self) + mutation_stimulus.mutation_count(self)
        return structured + self._block_count(level) + directed

    def _block_count(self, level: int) -> int:
        """How many vectors :meth:`_block_stimulus` yields."""
        k = self.fa.block_size
        exhaustive = sum(-(-len(group) // k) for group in self._exhaustive_groups())
        return exhaustive + len(self._DIRECTED) + self._CANCELLATIONS + 150 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """A random vector (:meth:`_random_vector`), with a C weighted toward the corners when the
        suite has an accumulator input."""
        row = self._random_vector(rng)
        return accumulator_input.add_c(self, row, rng) if self.has_c else row

    def _random_vector(self, rng: random.Random) -> dict:
        return self._random_block(rng)

    def _random_block(self, rng: random.Random) -> dict:
        """Two blocks: a of mostly normal codes (or max, small, with an Inf/NaN), b normal, max or
        small; scales 2^+-8 (E8M0), any finite UE4M3."""
        fa, fb = self.fa, self.fb
        kind = rng.choice(["normal"] * 6 + ["max", "small", "special"])
        a = self._side(fa, self._codes(fa, rng, kind), self._scale(fa, rng), rng)
        b = self._side(fb, self._codes(fb, rng, rng.choice(["normal", "max", "small"])), self._scale(fb, rng), rng)
        return self._row(a, b)

    def fresh_row(self, rng: random.Random) -> dict:
        """A vector of random normal blocks (no C)."""
        rows = []
        for _ in range(self.vector_blocks):
            a = self._side(self.fa, self._codes(self.fa, rng, "normal"), self._scale(self.fa, rng), rng)
            b = self._side(self.fb, self._codes(self.fb, rng, "normal"), self._scale(self.fb, rng), rng)
            rows.append(self._row(a, b))
        return self._join(rows)

    def _join(self, blocks: list[dict]) -> dict:
        """One vector of the blocks' fields: block j's value at bits [j*bits, (j+1)*bits) of each
        field (a tensor scale is the first block's)."""
        joined = {}
        for f in self.block_fields:
            if f.name.endswith("tensor_scale"):
                joined[f.name] = blocks[0][f.name]
            else:
                joined[f.name] = pack_word([b[f.name] for b in blocks], f.bits)
        return joined
