"""The ``dot`` suite kind: two blocks -> the datapath register, its LSB, the anchor and the result; with
an accumulator input (``c``) or fused multiply-accumulate steps (contract 4.1) -> the result and,
if asked, every step's D (``steps``)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ...fast.dot import FINITE, BlockDots, Operand, dot_blocks
from ...fast.fused import dot_general_steps
from ...formats.element import negated_code
from ...options import Accumulator
from ...options.accumulate import PRESETS, output_float_format
from ...ref import dot as ref_dot
from ...ref.block import QuantizedBlock
from ...ref.encode import encode
from ...ref.exact import Exact
from ...ref.fused import fused_result, fused_step_details
from ...ref.output import storage_format
from ..coverage.accumulator import block_lows, c_classes, element_classes, fused_classes
from ..coverage.rounding_record import OutputRoundings, block_dot_rows, with_rounding_classes
from ..stimulus import accumulator as accumulator_input
from ..stimulus import dot as dot_stimulus
from ..stimulus import mutation as mutation_stimulus
from .batch import (
    FloatBits, add_operand_classes, bit, code_table, compute_each, dyadic_differ, fast_dot_models, pack_items, unpack_items,
)
from .fields import Field, c_field
from .dot_reports import DotReports
from .format_spec import block_format, format_param
from .fused_batch import compute_fused_batch, exact_outputs
from .suite import Suite, jsonable
from ..values import decode, float_value, fp32_bits, fp32_value, is_subnormal_code, pack_word, unpack_word


def register_bits(fmt_a, fmt_b, acc: Accumulator) -> int:
    """Bits of the ``acc`` field: W for a bounded aligned register; else a width that holds every
    value the register can take (:func:`mxsim.ref.dot.register_limit`; formats-and-datapath.md 5.1 for exact)."""
    if acc.mode == "aligned" and acc.width is not None:
        return acc.width
    return ref_dot.register_limit(fmt_a, fmt_b, acc).bit_length() + 1



def _shown(name: str, value) -> str:
    return f"{name}={value:#x}" if name == "nan_bits" and value is not None else f"{name}={value}"


def _check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not allowed; expected true or false")


@lru_cache(maxsize=8)
def _code_pairs(e) -> tuple[list, list]:
    """(finite, special): every (a, b) pair of codes of ``e`` in order, split by whether both are finite."""
    is_finite = [decode(c, e).is_finite for c in range(1 << e.width)]
    pairs = [(ca, cb) for ca in range(1 << e.width) for cb in range(1 << e.width)]
    both = [is_finite[ca] and is_finite[cb] for ca, cb in pairs]
    return [p for p, ok in zip(pairs, both) if ok], [p for p, ok in zip(pairs, both) if not ok]


@lru_cache(maxsize=8)
def _finite_codes(fmt) -> list[int]:
    """The finite codes of a (scale) format, in code order (the same list every call: kept)."""
    return [c for c in range(1 << fmt.width) if decode(c, fmt).is_finite]


@lru_cache(maxsize=64)
def _np_codes(codes: tuple[int, ...]) -> np.ndarray:
    """A tuple of codes as an int64 array (kept: the same array every call; read only)."""
    array = np.array(codes, dtype=np.int64)
    array.flags.writeable = False
    return array


def _np_code_sets(e) -> dict[str, np.ndarray]:
    """:meth:`DotSuite._code_sets` of element format ``e`` as int64 arrays."""
    return {name: _np_codes(tuple(codes)) for name, codes in DotSuite._code_sets(e).items()}


@dataclass
class DotSuite(DotReports, Suite):
    """Two blocks (scales, sub-scales, elements; NVFP4 tensor scales) -> the register, its LSB
    exponent, the anchor, and the result bits, for one accumulator configuration.

    ``preset``: an :data:`~mxsim.options.accumulate.PRESETS` name, ``accumulator`` then overrides its
    fields. ``c_input``: add the accumulator input ``c`` (fp32 bits; always there with a fused
    accumulator). ``steps`` (fused only): add every step's D, step j at bits [j*w, (j+1)*w).
    ``unit_scales``: every scale code encodes 1 (units without block scales, e.g. Hopper FP8).
    ``exhaustive_pairs`` (default true): the catalogue starts with every element code pair; false
    leaves them out (a suite that repeats a configuration in another rounding mode: the pairs are
    exact products, the structured and directed vectors are what the mode changes).
    A fused suite has no register fields and no tensor scales (the fused adder takes none)."""

    block_a: str | dict
    block_b: str | dict | None = None
    accumulator: dict = field(default_factory=dict)
    preset: str | None = None
    c_input: bool = False
    steps: bool = False
    unit_scales: bool = False
    exhaustive_pairs: bool = True
    kind = "dot"
    nested_options = {"accumulator": Accumulator}  # the dict field -> the options class of its keys
    vector_blocks = 1  # block pairs per vector

    def __post_init__(self):
        self.fa = block_format(self.block_a, "block_a")
        self.fb = self.fa if self.block_b is None else block_format(self.block_b, "block_b")
        ref_dot.check_pair(self.fa, self.fb, 1, 1)
        for name in ("c_input", "steps", "unit_scales", "exhaustive_pairs"):
            _check_flag(name, getattr(self, name))
        self.acc = Accumulator.resolve(self.preset, **self.accumulator)
        self.fused = self.acc.accumulate == "fused"
        if self.steps and not self.fused:
            raise ValueError("steps=true needs a fused accumulator (accumulate='fused', or a fused preset such as "
                             "mxdotp_fp8): the separate datapath has no steps")
        self.acc.check_block_format(self.fa, self.fb)
        if self.acc.mode == "aligned":  # the references of the acc_overflow and shift_inexact classes
            self.unbounded_acc = Accumulator(mode="aligned", frac_bits=self.acc.frac_bits,
                                             shift_rounding=self.acc.shift_rounding)
            self.exact_acc = Accumulator()
        self.has_c, self.c_format = self.c_input or self.fused, output_float_format(self.acc.c_storage)
        self.tensor_scales = not self.fused
        self.name = "-".join([self._pair()] + self._label() + self._suffixes())
        self.block_fields = self._block_fields()  # the fields of one block pair (c excluded)
        self.inputs = list(self.block_fields)
        if self.has_c:
            self.inputs.append(c_field(self.c_format))
        out = self.out_format = storage_format(self.acc)
        if self.fused:
            self.outputs = [Field("result", out.width, description=f"{out.name} bits of D, the last step's output")]
        else:
            self.outputs = [
                Field("acc", register_bits(self.fa, self.fb, self.acc), True,
                      "the register: block sum before scales = acc * 2^lsb"),
                Field("lsb", 16, True, "exponent of the register's LSB"),
                Field("anchor", 16, True,
                      "e_max: largest Ea+Eb over products of two finite nonzero elements (0 if none)"),
                Field("result", out.width,
                      description=f"{out.name} bits of the block's Dot" + (" + C" if self.has_c else "")),
            ]
        self._add_steps_field()

    def _pair(self) -> str:
        return self.fa.name + ("" if self.fb == self.fa else f"x{self.fb.name}")

    def _label(self) -> list[str]:
        """The accumulator part of the suite name."""
        acc = self.acc
        if self.preset is not None:
            base = PRESETS[self.preset]
            return [self.preset] + [_shown(k, v) for k, v in acc.as_dict().items() if v != getattr(base, k)]
        if self.fused:
            base = Accumulator()
            return ["fused"] + [_shown(k, v) for k, v in acc.as_dict().items()
                                if k not in ("mode", "accumulate") and v != getattr(base, k)]
        parts = [acc.mode]
        if acc.mode == "aligned":
            parts += [f"f{acc.frac_bits}", f"w{acc.width}" if acc.width else "wnone", acc.shift_rounding, acc.overflow]
        if acc.output != "fp32" or acc.output_rounding != "rne":
            parts += [acc.output, acc.output_rounding]
        if acc.ftz:
            parts.append("ftz")
        return parts

    def _suffixes(self) -> list[str]:
        flags = (self.c_input and not self.fused, self.steps, self.unit_scales, not self.exhaustive_pairs)
        return [name for name, on in zip(("c", "steps", "unit_scales", "no_pairs"), flags) if on]

    def _block_fields(self) -> list[Field]:
        fields = []
        for side, fmt in (("a", self.fa), ("b", self.fb)):
            fields.append(Field(f"{side}_scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code"))
            if fmt.subblocks:
                fields.append(Field(f"{side}_sub", fmt.subblocks * fmt.subscale_bits,
                                    description="sub-scale j at bits [j*d2, (j+1)*d2)"))
            fields.append(Field(f"{side}_elems", fmt.block_size * fmt.element.width,
                                description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)"))
            if fmt.tensor_scale is not None and self.tensor_scales:
                fields.append(Field(f"{side}_tensor_scale", 32, description="fp32 bits of the tensor scale"))
        return fields

    @property
    def step_count(self) -> int:
        """Fused steps per vector (a last partial step counts)."""
        return self.acc.step_count(self.fa.block_size, self.vector_blocks)

    def _add_steps_field(self) -> None:
        if self.steps:
            out = storage_format(self.acc)
            self.outputs.append(Field("steps", out.width * self.step_count, description=(
                f"D of every fused step ({out.name} bits), step j at bits [j*{out.width}, (j+1)*{out.width})")))

    def params(self) -> dict:
        params = {"block_a": format_param(self.fa), "block_b": format_param(self.fb), "accumulator": self.acc.as_dict()}
        optional = {"preset": self.preset, "c_input": self.c_input, "steps": self.steps}
        optional["unit_scales"] = self.unit_scales
        chosen = {k: v for k, v in optional.items() if v}
        if not self.exhaustive_pairs:
            chosen["exhaustive_pairs"] = False
        return {**params, **chosen}

    def describe(self) -> dict:
        return {"block_a": jsonable(self.fa.describe()), "block_b": jsonable(self.fb.describe())}

    # stimulus ------------------------------------------------------------------------------
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
            return rng.choice(_finite_codes(s))
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

    def reachable_classes(self) -> frozenset[str]:
        """The classes this suite's configuration reaches at least MIN_CLASS_VECTORS times: those
        its structured stimulus builds (:func:`.dot_stimulus.reachable_classes`)."""
        return dot_stimulus.reachable_classes(self)

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

    def random_run(self, rng: np.random.Generator, first: int, n: int) -> list[dict]:
        """``n`` random vectors beyond the catalogue drawn at once with NumPy (see
        :func:`mxsim.golden.compute.pipeline.vectors`), from the distribution of :meth:`random_inputs`.
        Each of a vector's ``vector_blocks`` block pairs (:meth:`_np_side`): block a "normal" (6 in 9),
        "max", "small" or "special", block b "normal", "max" or "small"; scales 2^-8 .. 2^8 (E8M0),
        any finite code of another scale format, the code of 1 with ``unit_scales``; sub-scales
        uniform; NVFP4 tensor scales (suites with tensor-scale fields) m / 2^s, one per vector.
        With an accumulator input, then a C per vector as :func:`.accumulator_input.add_c` draws it
        (a kind by the weights of ``C_KINDS``, its bits from a :class:`random.Random` seeded by
        ``rng``), aimed at the first step's D with C = +0 of the whole run computed in one
        :meth:`first_step_values` call (the reference vector by vector where that gives None:
        separate accumulation)."""
        count = n * self.vector_blocks
        a = self._np_side(self.fa, rng, n, rng.choice(["normal"] * 6 + ["max", "small", "special"], size=count))
        b = self._np_side(self.fb, rng, n, rng.choice(["normal", "max", "small"], size=count))
        columns = {**{f"a_{k}": v for k, v in a.items()}, **{f"b_{k}": v for k, v in b.items()}}
        names = list(columns)
        rows = [dict(zip(names, values)) for values in zip(*columns.values())]
        if not self.has_c:
            return rows
        return accumulator_input.add_c_each(self, rows, random.Random(int(rng.integers(0, 1 << 63))))

    def _np_side(self, fmt, rng: np.random.Generator, n: int, kinds: np.ndarray) -> dict:
        """One operand's fields of ``n`` vectors of ``vector_blocks`` blocks each: block i (of
        ``len(kinds)`` = n * vector_blocks, vector by vector) drawn as ``_codes(fmt, ., kinds[i])``
        draws it (the same code sets and odds), its scale as :meth:`_scale` (:meth:`_np_scales`),
        its sub-scales uniform and the vector's tensor scale as :meth:`_side` draws them; block j of
        a vector at bits [j*bits, (j+1)*bits) of each field, as :meth:`_join` packs them."""
        k, e, blocks = fmt.block_size, fmt.element, self.vector_blocks
        count = n * blocks
        sets = _np_code_sets(e)
        codes = sets["finite"][rng.integers(0, len(sets["finite"]), size=(count, k))]
        anything = rng.random((count, k)) >= 0.97
        codes = np.where(anything & (kinds == "normal")[:, None], rng.integers(0, 1 << e.width, size=(count, k)), codes)
        for name in ("max", "small"):
            rows = kinds == name
            codes[rows] = sets[name][rng.integers(0, len(sets[name]), size=(int(rows.sum()), k))]
        rows = np.flatnonzero(kinds == "special")
        if len(sets["special"]) and len(rows):
            specials = sets["special"][rng.integers(0, len(sets["special"]), size=len(rows))]  # drawn first
            codes[rows, rng.integers(0, k, size=len(rows))] = specials
        scales = self._np_scales(fmt, rng, count).reshape(n, blocks)
        side = {"scale": pack_items(scales, fmt.scale_storage_bits),
                "elems": pack_items(codes.reshape(n, blocks * k), e.width)}
        if fmt.subblocks:
            subs = rng.integers(0, 1 << fmt.subscale_bits, size=(n, blocks * fmt.subblocks))
            side["sub"] = pack_items(subs, fmt.subscale_bits)
        if fmt.tensor_scale is not None and self.tensor_scales:  # m / 2^s, m a 24-bit significand, s in 20 .. 40
            m, shift = rng.integers(1 << 23, 1 << 24, size=n), rng.integers(20, 41, size=n)  # fp32 exponent 23 - s
            side["tensor_scale"] = ((150 - shift) << 23 | (m & 0x7FFFFF)).tolist()
        return side

    def _np_scales(self, fmt, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` scale codes drawn as :meth:`_scale` (kind "normal") draws one: the code of 1
        with unit scales (no draw), 2^-8 .. 2^8 uniform (E8M0), else a finite code uniform."""
        s = fmt.scale
        if self.unit_scales:
            return np.full(count, encode(1, s), dtype=np.int64)
        if s.name != "e8m0":
            finite = _np_codes(tuple(_finite_codes(s)))
            return finite[rng.integers(0, len(finite), size=count)]
        return 127 + rng.integers(-8, 9, size=count)

    def _random_block(self, rng: random.Random) -> dict:
        """Two blocks: a of mostly normal codes (or max, small, with an Inf/NaN), b normal, max or
        small; scales 2^+-8 (E8M0), any finite UE4M3."""
        fa, fb = self.fa, self.fb
        kind = rng.choice(["normal"] * 6 + ["max", "small", "special"])
        a = self._side(fa, self._codes(fa, rng, kind), self._scale(fa, rng), rng)
        b = self._side(fb, self._codes(fb, rng, rng.choice(["normal", "max", "small"])), self._scale(fb, rng), rng)
        return self._row(a, b)

    # expected values -----------------------------------------------------------------------
    def _blocks(self, inputs: dict):
        blocks, scales = [], []
        for side, fmt in (("a", self.fa), ("b", self.fb)):
            codes = unpack_word(inputs[f"{side}_elems"], fmt.element.width, fmt.block_size)
            subs = tuple(unpack_word(inputs[f"{side}_sub"], fmt.subscale_bits, fmt.subblocks)) if fmt.subblocks else ()
            blocks.append(QuantizedBlock(inputs[f"{side}_scale"], subs, tuple(codes)))
            ts = inputs.get(f"{side}_tensor_scale")
            scales.append(None if ts is None else fp32_value(ts).magnitude)
        return blocks, scales

    def _vector_blocks(self, inputs: dict):
        """(blocks_a, blocks_b, tensor_scale_a, tensor_scale_b) of a vector."""
        (a, b), (ta, tb) = self._blocks(inputs)
        return [a], [b], ta, tb

    def reference_codes(self, inputs: dict, c: Exact, first_steps: int | None = None) -> tuple[int, ...]:
        """The reference's output codes of a vector's blocks with accumulator input ``c``: every
        fused step's D (``first_steps``: only the first that many; the reference's steps, as
        :meth:`compute` takes them), or the one result of separate accumulation (for aiming stimulus)."""
        blocks_a, blocks_b, ta, tb = self._vector_blocks(inputs)
        if self.fused:
            details = fused_step_details(blocks_a, blocks_b, self.fa, self.fb, self.acc, c, first_steps)
            return tuple(step.code for step in details)
        g = ref_dot.dot_general(blocks_a, blocks_b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb,
                                c=c)
        return g.steps or (g.code,)

    def first_step_codes(self, rows: list[dict]) -> list[int] | None:
        """``reference_codes(row, +0)[0]`` of every vector of ``rows`` at once, for aiming C
        (:mod:`..stimulus.accumulator`): a fused suite's first step's D with C = +0 from the fast path
        (:func:`mxsim.fast.fused.dot_general_steps`, bit for bit the reference's; it hands the
        configurations it does not model to the reference itself). None for separate accumulation,
        or a batch the fast path refuses: the caller asks the reference vector by vector."""
        codes = self._first_steps(rows)
        return None if codes is None else codes.astype(np.int64).tolist()

    def first_step_values(self, rows: list[dict]) -> list[Exact] | None:
        """:meth:`first_step_codes` decoded: the exact value of each vector's first step's D with
        C = +0 (:func:`.fused_batch.exact_outputs`); None where that gives None."""
        codes = self._first_steps(rows)
        return None if codes is None else exact_outputs(codes, self.acc)

    def _first_steps(self, rows: list[dict]) -> np.ndarray | None:
        """The first step's D codes of :meth:`first_step_codes` as an array, from the blocks the
        first step reads alone (the first ceil(step / k) of each vector's blocks: the step's D with
        C = +0 depends on its own products only)."""
        if not self.fused or not rows:
            return None
        k = self.fa.block_size
        n, count = min(self.vector_blocks, -(-self.acc.effective_step(k) // k)), len(rows)
        inputs = {f.name: [row[f.name] for row in rows] for f in self.block_fields}
        try:
            (sa, ua, ca), (sb, ub, cb) = [self._first_blocks(inputs, side, fmt, n)
                                          for side, fmt in (("a", self.fa), ("b", self.fb))]
            _, steps = dot_general_steps(Operand(self.fa, sa, ua, ca, None), Operand(self.fb, sb, ub, cb, None),
                                         self.acc, (count,), (count,), n, keep_steps=True)
        except ValueError:
            return None
        return steps[:, 0]

    def _first_blocks(self, inputs: dict, side: str, fmt, n: int):
        """:meth:`_operand_arrays` of the first ``n`` of each vector's ``vector_blocks`` blocks."""
        scales, subs, codes = self._operand_arrays(inputs, side, fmt, self.vector_blocks)
        if n == self.vector_blocks:
            return scales, subs, codes
        count = len(scales) // self.vector_blocks

        def first(array):
            return None if array is None else array.reshape(count, self.vector_blocks, *array.shape[1:])[:, :n].reshape(
                count * n, *array.shape[1:])

        return first(scales), first(subs), first(codes)

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

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference vector by vector, then the output
        roundings' classes of all at once (the record the fast path fills too, :mod:`..coverage.rounding_record`)."""
        if self.fused:
            return [self._fused_vector(inputs) for inputs in rows]
        return with_rounding_classes([self._reference_vector(inputs) for inputs in rows], self.acc)

    def _fused_vector(self, inputs: dict):
        (a, b), _ = self._blocks(inputs)
        return self._fused([a], [b], float_value(inputs["c"], self.c_format))

    def _reference_vector(self, inputs: dict):
        """(outputs, the classes but the output rounding's, [the rounding's record row]) of one
        vector of separate accumulation."""
        (a, b), (ta, tb) = self._blocks(inputs)
        r = ref_dot.dot(a, b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb)
        out = {"acc": r.accumulator, "lsb": r.lsb_exponent, "anchor": r.anchor, "result": r.code}
        classes = self._classes(a, b, r)
        roundings = block_dot_rows([(a, b, r)], self.fa, self.fb, ta is not None or tb is not None)
        if self.has_c:
            c = float_value(inputs["c"], self.c_format)
            with_c = ref_dot.dot(a, b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb, c=c)
            out["result"] = with_c.code
            classes |= c_classes(c, r.exact)
        return out, classes, roundings

    def _fused(self, blocks_a, blocks_b, c: Exact):
        """Outputs and classes of a fused vector (the reference's steps; no tensor scales)."""
        details = fused_step_details(blocks_a, blocks_b, self.fa, self.fb, self.acc, c)
        out = {"result": fused_result([step.code for step in details], c, self.acc, self.fa.block_size, len(blocks_a))}
        if self.steps:
            out["steps"] = pack_word([step.code for step in details], storage_format(self.acc).width)
        classes = fused_classes(details, self.acc, c, out["result"])
        for a, b in zip(blocks_a, blocks_b):
            classes |= element_classes(a, b, self.fa, self.fb)
        return out, classes

    def _classes(self, a, b, r) -> set:
        """The classes of one block Dot ``r`` but its output rounding's (:meth:`rounding_rows`)."""
        out = self.out_format
        prods = ref_dot.block_products(a.codes, a.subscales, self.fa, b.codes, b.subscales, self.fb)
        classes = element_classes(a, b, self.fa, self.fb, prods)
        finite_products = any(kind == "finite" and magnitude for _, magnitude, _, kind in prods)
        if r.value.is_nan:
            classes.add("nan")
        if r.value.is_inf:
            classes.add("inf")
        if r.value.is_zero:
            classes.add("negative_zero" if r.value.sign else "zero")
            if finite_products and r.exact.is_zero:
                classes.add("cancellation")
        if r.value.is_finite and is_subnormal_code(r.code, out):
            classes.add("subnormal_output")
        if r.value.is_inf and r.exact.is_finite:
            classes.add("overflow")
        if self.acc.mode == "aligned" and finite_products:
            unbounded, unbounded_lsb, _ = ref_dot.block_register(prods, self.fa, self.fb, self.unbounded_acc)
            if unbounded != r.accumulator:
                classes.add("acc_overflow")
            exact, exact_lsb, _ = ref_dot.block_register(prods, self.fa, self.fb, self.exact_acc)
            low = min(unbounded_lsb, exact_lsb)  # the two values on a common grid 2^low
            if unbounded << (unbounded_lsb - low) != exact << (exact_lsb - low):
                classes.add("shift_inexact")
        return classes

    # expected values of many vectors at once (mxsim.golden.kinds.batch) ---------------------------
    @property
    def fast_path_applies(self) -> bool:
        """Whether the fast path models this suite: fused accumulation (every preset and setting,
        :mod:`.fused_batch`), or separate accumulation with an accumulator the fast path models
        (:func:`~mxsim.golden.kinds.batch.fast_dot_models`) and no accumulator input C (the fast path
        computes the blocks' Dot alone; a C of separate accumulation goes through the reference)."""
        if self.fused:
            return True
        return fast_dot_models(self.acc) and not self.has_c

    def compute_batch(self, inputs: dict):
        """``compute`` of N vectors with the fast path: (outputs, flags), see
        :mod:`mxsim.golden.kinds.batch`. The configurations the fast path does not model
        (:attr:`fast_path_applies` false: separate accumulation with an accumulator input C,
        output_overflow other than inf, nan_bits, fp32_e8m13) and any batch with an invalid vector
        (the reference then raises its own error) go vector by vector through ``compute``. Fused
        suites: :func:`.fused_batch.compute_fused_batch`."""
        if not self.fast_path_applies:
            return compute_each(self, inputs)
        if self.fused:
            return compute_fused_batch(self, inputs)
        try:
            return self._batch(inputs)
        except ValueError:
            return compute_each(self, inputs)

    def _operand_arrays(self, inputs: dict, side: str, fmt, blocks: int):
        """(scales (N*blocks,), sub-scales (N*blocks, subblocks) or None, codes (N*blocks, k)) of
        one side, with ``blocks`` blocks per vector."""
        k = fmt.block_size
        scales = unpack_items(inputs[f"{side}_scale"], fmt.scale_storage_bits, blocks).reshape(-1)
        subs = None
        if fmt.subblocks:
            subs = unpack_items(inputs[f"{side}_sub"], fmt.subscale_bits, blocks * fmt.subblocks).reshape(-1, fmt.subblocks)
        codes = unpack_items(inputs[f"{side}_elems"], fmt.element.width, blocks * k).reshape(-1, k)
        return scales, subs, codes

    def _tensor_scale_groups(self, inputs: dict, n: int):
        """[((tensor_scale_a, tensor_scale_b), vector indices)]: NVFP4 vectors grouped by their pair
        of tensor scales (each group is one fast call); one group of every vector otherwise."""
        names = [f"{side}_tensor_scale" for side in "ab"]
        if not any(name in inputs for name in names):
            return [((None, None), slice(0, n))]
        groups: dict = {}
        for i in range(n):
            key = tuple(int(inputs[name][i]) if name in inputs else None for name in names)
            groups.setdefault(key, []).append(i)
        return [(tuple(None if w is None else fp32_value(w).magnitude for w in key), np.array(rows))
                for key, rows in groups.items()]

    def _group_operands(self, sides, group, blocks: int = 1) -> list[Operand]:
        """The fast path's operands a and b of one group of :meth:`_tensor_scale_groups` (vectors of
        ``blocks`` blocks)."""
        (ts_a, ts_b), rows = group
        if isinstance(rows, slice):
            picked = slice(rows.start * blocks, rows.stop * blocks)
        else:
            picked = (rows[:, None] * blocks + np.arange(blocks)).reshape(-1)
        return [Operand(fmt, scales[picked], None if subs is None else subs[picked], codes[picked], ts)
                for (scales, subs, codes), fmt, ts in zip(sides, (self.fa, self.fb), (ts_a, ts_b))]

    def _block_dots(self, sides, groups, acc: Accumulator, blocks: int = 1) -> BlockDots:
        """fast.dot.dot_blocks over every vector's blocks, group by group, in vector order."""
        parts = []
        for group in groups:
            op_a, op_b = self._group_operands(sides, group, blocks)
            parts.append((group[1], dot_blocks(op_a, op_b, acc)))
        if len(parts) == 1:
            return parts[0][1]
        vectors = sum(len(rows) for rows, _ in parts)
        merged = merged_block_dots(parts, vectors, blocks)
        return BlockDots(**{name: getattr(merged, name).reshape(-1) for name in BlockDots.__dataclass_fields__})

    def _batch(self, inputs: dict):
        n = len(inputs["a_scale"])
        sides = [self._operand_arrays(inputs, side, fmt, 1) for side, fmt in (("a", self.fa), ("b", self.fb))]
        groups = self._tensor_scale_groups(inputs, n)
        r = self._block_dots(sides, groups, self.acc)
        out = {"acc": r.accumulator.tolist(), "lsb": r.lsb_exponent.tolist(), "anchor": r.anchor.tolist(),
               "result": r.codes.tolist()}
        flags = self._batch_flags(sides, groups, r)
        return out, flags.tolist()

    def _batch_flags(self, sides, groups, r: BlockDots) -> np.ndarray:
        """The classes of :meth:`_classes`, vector by vector, as flag words."""
        (scales_a, _, ca), (scales_b, _, cb) = sides
        ta, tb = code_table(self.fa.element), code_table(self.fb.element)
        value = FloatBits.of(r.codes, self.out_format)
        exact_finite = r.special == FINITE
        flags = np.zeros(len(r.codes), dtype=np.int64)

        def add(name: str, mask) -> None:
            flags[mask] |= bit(name)

        finite_products = ta.nonzero[ca] & tb.nonzero[cb]
        any_finite_product = finite_products.any(axis=1)
        add("nan", ta.nan[ca].any(axis=1) | tb.nan[cb].any(axis=1) | value.nan)
        add("inf", ta.inf[ca].any(axis=1) | tb.inf[cb].any(axis=1) | value.inf)
        add("all_zero", ta.zero[ca].all(axis=1) & tb.zero[cb].all(axis=1))
        add("zero", value.zero & ~value.negative)
        add("negative_zero", value.zero & value.negative)
        add("cancellation", value.zero & any_finite_product & exact_finite & (r.significand == 0))
        negative = ta.negative[ca] ^ tb.negative[cb]
        add("mixed_signs", (finite_products & negative).any(axis=1) & (finite_products & ~negative).any(axis=1))
        add_operand_classes(add, ((self.fa, scales_a, ta, ca), (self.fb, scales_b, tb, cb)))
        add("subnormal_product", (finite_products & (ta.subnormal[ca] | tb.subnormal[cb])).any(axis=1))
        add("subnormal_output", value.subnormal)
        add("overflow", value.inf & exact_finite)
        add("inf_a", ta.inf[ca].any(axis=1))
        add("inf_b", tb.inf[cb].any(axis=1))
        flags |= rounding_flags(self, scales_a, scales_b, r)
        if self.acc.mode == "aligned":
            unbounded = self._block_dots(sides, groups, self.unbounded_acc)
            exact = self._block_dots(sides, groups, self.exact_acc)
            add("acc_overflow", any_finite_product & (unbounded.accumulator != r.accumulator))
            differ = dyadic_differ(unbounded.accumulator, unbounded.lsb_exponent, exact.accumulator, exact.lsb_exponent)
            add("shift_inexact", any_finite_product & differ)
        return flags


def rounding_flags(suite, scales_a, scales_b, r: BlockDots) -> np.ndarray:
    """The flags of :func:`.accumulator_classes.block_rounding_classes` of every block of a batch,
    all at once (:class:`..coverage.rounding_record.OutputRoundings` of the fast path's values)."""
    tensor = any(fmt.tensor_scale is not None for fmt in (suite.fa, suite.fb)) and suite.tensor_scales
    return OutputRoundings.from_block_dots(r, block_lows(r.lsb_exponent, scales_a, scales_b, suite.fa, suite.fb, tensor),
                                           FINITE).flags(suite.acc)


def merged_block_dots(parts, count: int, n: int) -> BlockDots:
    """One :class:`BlockDots` of shape (count, n) from the groups' (rows, BlockDots) in any order
    (rows: a slice or an index array of vectors; each BlockDots holds its vectors' n blocks in order)."""
    if len(parts) == 1 and isinstance(parts[0][0], slice):
        return parts[0][1]
    fields = {}
    for name in BlockDots.__dataclass_fields__:
        arrays = [getattr(dots, name) for _, dots in parts]
        dtype = object if any(a.dtype == object for a in arrays) else arrays[0].dtype
        merged = np.empty((count, n), dtype=dtype)
        for (rows, _), a in zip(parts, arrays):
            merged[rows] = a.reshape(-1, n)
        fields[name] = merged
    return BlockDots(**fields)
