"""The ``dot`` suite kind: two blocks -> the datapath register, its LSB, the anchor and the result."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

from ..options import Accumulator
from ..formats import get_format
from ..formats.element import negated_code
from ..ref import dot as ref_dot
from ..ref.block import QuantizedBlock
from ..ref.encode import encode
from ..ref.exact import Exact, dyadic
from .fields import Field
from .suite import Suite, decode, fp32_bits, fp32_value, is_subnormal_code, max_codes, pack_word, unpack_word, jsonable


def register_bits(fmt_a, fmt_b, acc: Accumulator) -> int:
    """Bits of the ``acc`` field: W for a bounded aligned register; else a width that holds every
    value the register can take (:func:`mxsim.ref.dot.register_limit`; contract 5.1 for exact)."""
    if acc.mode == "aligned" and acc.width is not None:
        return acc.width
    return ref_dot.register_limit(fmt_a, fmt_b, acc).bit_length() + 1



@dataclass
class DotSuite(Suite):
    """Two blocks (scales, sub-scales, elements; NVFP4 tensor scales) -> the register, its LSB
    exponent, the anchor, and the result bits, for one accumulator configuration."""

    block_a: str
    block_b: str | None = None
    accumulator: dict = field(default_factory=dict)
    kind = "dot"

    def __post_init__(self):
        self.fa = get_format(self.block_a, kind="block")
        self.fb = get_format(self.block_b or self.block_a, kind="block")
        ref_dot._check_pair(self.fa, self.fb, 1, 1)
        self.acc = Accumulator.from_kwargs(**self.accumulator)
        acc = self.acc
        if acc.mode == "aligned":  # the references of the acc_overflow and shift_inexact classes
            self.unbounded_acc = Accumulator(mode="aligned", frac_bits=acc.frac_bits, shift_rounding=acc.shift_rounding)
            self.exact_acc = Accumulator()
        parts = [self.fa.name + ("" if self.fb is self.fa else f"x{self.fb.name}"), acc.mode]
        if acc.mode == "aligned":
            parts += [f"f{acc.frac_bits}", f"w{acc.width}" if acc.width else "wnone", acc.shift_rounding, acc.overflow]
        if acc.output != "fp32" or acc.output_rounding != "rne":
            parts += [acc.output, acc.output_rounding]
        if acc.ftz:
            parts.append("ftz")
        self.name = "-".join(parts)
        self.inputs = []
        for side, fmt in (("a", self.fa), ("b", self.fb)):
            self.inputs.append(Field(f"{side}_scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code"))
            if fmt.subblocks:
                self.inputs.append(Field(f"{side}_sub", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)"))
            self.inputs.append(
                Field(f"{side}_elems", fmt.block_size * fmt.element.width, description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)")
            )
            if fmt.tensor_scale is not None:
                self.inputs.append(Field(f"{side}_tensor_scale", 32, description="fp32 bits of the tensor scale"))
        out = get_format(acc.output, kind="float")
        self.outputs = [
            Field("acc", register_bits(self.fa, self.fb, acc), True, "the register: block sum before scales = acc * 2^lsb"),
            Field("lsb", 16, True, "exponent of the register's LSB"),
            Field("anchor", 16, True, "e_max: largest Ea+Eb over products of two finite nonzero elements (0 if none)"),
            Field("result", out.width, description=f"{out.name} bits of the block's Dot"),
        ]

    def params(self) -> dict:
        return {"block_a": self.fa.name, "block_b": self.fb.name, "accumulator": self.acc.as_dict()}

    def describe(self) -> dict:
        return {"block_a": jsonable(self.fa.describe()), "block_b": jsonable(self.fb.describe())}

    # stimulus ------------------------------------------------------------------------------
    def _codes(self, fmt, rng: random.Random, kind: str) -> list[int]:
        k, e = fmt.block_size, fmt.element
        finite = [c for c in range(1 << e.width) if decode(c, e).is_finite]
        if kind == "zero":
            return [rng.choice([0, e.sign_mask]) if decode(e.sign_mask, e).is_zero else 0 for _ in range(k)]
        if kind in ("max", "max_positive"):
            largest = max(decode(x, e).magnitude for x in finite)
            top = [c for c in finite if decode(c, e).magnitude == largest]
            if kind == "max_positive":  # same-sign products: the register overflows a narrow width
                top = [c for c in top if not decode(c, e).sign] or top
            return [rng.choice(top) for _ in range(k)]
        if kind == "small":
            small = sorted(finite, key=lambda c: decode(c, e).magnitude)[: max(4, len(finite) // 8)]
            return [rng.choice(small) for _ in range(k)]
        if kind == "special":
            codes = [rng.choice(finite) for _ in range(k)]
            specials = [c for c in range(1 << e.width) if not decode(c, e).is_finite]
            if specials:
                codes[rng.randrange(k)] = rng.choice(specials)
            return codes
        return [rng.choice(finite) if rng.random() < 0.97 else rng.getrandbits(e.width) for _ in range(k)]

    def _side(self, fmt, codes, scale, rng) -> dict:
        side = {"scale": scale, "elems": pack_word(codes, fmt.element.width)}
        if fmt.subblocks:
            side["sub"] = rng.getrandbits(fmt.subblocks * fmt.subscale_bits)
        if fmt.tensor_scale is not None:
            side["tensor_scale"] = fp32_bits(Exact(0, Fraction(rng.randint(1 << 23, (1 << 24) - 1), 1 << rng.randint(20, 40))))
        return side

    def _row(self, a: dict, b: dict) -> dict:
        return {**{f"a_{k}": v for k, v in a.items()}, **{f"b_{k}": v for k, v in b.items()}}

    def _scale(self, fmt, rng: random.Random, kind: str = "normal") -> int:
        s = fmt.scale
        if s.name != "e8m0":
            return rng.choice([c for c in range(1 << s.width) if decode(c, s).is_finite])
        if kind == "low":  # with a 0x00 partner: results in fp32's subnormal range
            return 127 + rng.randint(-12, 6)
        return {"min": 0, "max": 0xFE, "nan": 0xFF}.get(kind, 127 + rng.randint(-8, 8))

    def _exhaustive(self, rng: random.Random):
        """Every element code pair, 32 (k) pairs per block, unit scales; pairs with an Inf or
        NaN element go into blocks of their own so that the others stay finite."""
        ea, eb, k = self.fa.element, self.fb.element, self.fa.block_size
        if ea is not eb or ea.kind != "float" or ea.width > 8:
            return []  # every pair of FP4, FP6 and FP8 E4M3/E5M2; other pairs get corners and random
        unit_a, unit_b = encode(1, self.fa.scale), encode(1, self.fb.scale)
        pairs = [(ca, cb) for ca in range(1 << ea.width) for cb in range(1 << eb.width)]
        is_finite = [decode(p[0], ea).is_finite and decode(p[1], eb).is_finite for p in pairs]
        finite = [p for p, ok in zip(pairs, is_finite) if ok]
        special = [p for p, ok in zip(pairs, is_finite) if not ok]
        rows = []
        for group in (finite, special):
            for i in range(0, len(group), k):
                chunk = group[i : i + k]
                chunk = chunk + [(0, 0)] * (k - len(chunk))
                a = self._side(self.fa, [p[0] for p in chunk], unit_a, rng)
                b = self._side(self.fb, [p[1] for p in chunk], unit_b, rng)
                if self.fa.subblocks:
                    a["sub"] = 0
                if self.fb.subblocks:
                    b["sub"] = 0
                rows.append((self._row(a, b), "exhaustive"))
        return rows

    def stimulus(self, rng: random.Random, level: int):
        rows = self._exhaustive(rng)
        fa, fb = self.fa, self.fb
        directed = [
            ("zero", "normal", "normal", "normal"), ("max", "max", "normal", "normal"), ("small", "small", "normal", "normal"),
            ("max", "max", "max", "max"), ("small", "small", "min", "min"), ("normal", "normal", "min", "max"),
            ("normal", "normal", "nan", "normal"), ("special", "normal", "normal", "normal"),
            ("normal", "special", "normal", "normal"), ("zero", "zero", "normal", "normal"),
            ("max_positive", "max_positive", "normal", "normal"), ("normal", "normal", "min", "low"),
            ("small", "normal", "min", "low"),
        ]
        for kind_a, kind_b, scale_a, scale_b in directed * 4:
            a = self._side(fa, self._codes(fa, rng, kind_a), self._scale(fa, rng, scale_a), rng)
            b = self._side(fb, self._codes(fb, rng, kind_b), self._scale(fb, rng, scale_b), rng)
            rows.append((self._row(a, b), "directed"))
        for _ in range(8):  # cancellation: b's products against a's negated copy
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
            rows.append((self._row(a, b), "directed"))
        for _ in range(150 * level):
            kind = rng.choice(["normal"] * 6 + ["max", "small", "special"])
            a = self._side(fa, self._codes(fa, rng, kind), self._scale(fa, rng), rng)
            b = self._side(fb, self._codes(fb, rng, rng.choice(["normal", "max", "small"])), self._scale(fb, rng), rng)
            rows.append((self._row(a, b), "random"))
        return rows

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

    def compute(self, inputs: dict):
        (a, b), (ta, tb) = self._blocks(inputs)
        r = ref_dot.dot(a, b, self.fa, self.fb, self.acc, tensor_scale_a=ta, tensor_scale_b=tb)
        out = {"acc": r.accumulator, "lsb": r.lsb_exponent, "anchor": r.anchor, "result": r.code}
        return out, self._classes(a, b, r, ta, tb)

    def _classes(self, a, b, r, ta, tb) -> set:
        classes = set()
        out = get_format(self.acc.output, kind="float")
        terms_a = ref_dot.block_terms(a.codes, a.subscales, self.fa)
        terms_b = ref_dot.block_terms(b.codes, b.subscales, self.fb)
        finite_products = [(x, y) for x, y in zip(terms_a, terms_b) if x.kind == y.kind == "finite" and x.significand and y.significand]
        if any(t.kind == "nan" for t in terms_a + terms_b) or r.value.is_nan:
            classes.add("nan")
        if any(t.kind == "inf" for t in terms_a + terms_b) or r.value.is_inf:
            classes.add("inf")
        if all(t.kind == "finite" and t.significand == 0 for t in terms_a + terms_b):
            classes.add("all_zero")
        if r.value.is_zero:
            classes.add("negative_zero" if r.value.sign else "zero")
            if finite_products and r.exact.is_zero:
                classes.add("cancellation")
        if len({x.sign ^ y.sign for x, y in finite_products}) == 2:
            classes.add("mixed_signs")
        for fmt, blk, terms in ((self.fa, a, terms_a), (self.fb, b, terms_b)):
            scale = decode(blk.scale, fmt.scale)
            if scale.is_nan:
                classes.add("scale_nan")
            elif fmt.scale.name == "e8m0" and blk.scale in (0, 0xFE):
                classes.add("scale_min" if blk.scale == 0 else "scale_max")
            if not max_codes(fmt.element).isdisjoint(blk.codes):
                classes.add("max")
            if fmt.element.kind == "int" and fmt.element.encoding == "twos_complement" and fmt.element.sign_mask in blk.codes:
                classes.add("int8_neg2")
        if any(is_subnormal_code(ca, self.fa.element) or is_subnormal_code(cb, self.fb.element)
               for ca, cb, x, y in zip(a.codes, b.codes, terms_a, terms_b) if x.significand and y.significand):
            classes.add("subnormal_product")
        if r.value.is_finite and is_subnormal_code(r.code, out):
            classes.add("subnormal_output")
        if r.value.is_inf and r.exact.is_finite:
            classes.add("overflow")
        if self.acc.mode == "aligned" and finite_products:
            unbounded = ref_dot.dot(a, b, self.fa, self.fb, self.unbounded_acc, tensor_scale_a=ta, tensor_scale_b=tb)
            if unbounded.accumulator != r.accumulator:
                classes.add("acc_overflow")
            exact = ref_dot.dot(a, b, self.fa, self.fb, self.exact_acc, tensor_scale_a=ta, tensor_scale_b=tb)
            if dyadic(unbounded.accumulator, unbounded.lsb_exponent) != dyadic(exact.accumulator, exact.lsb_exponent):
                classes.add("shift_inexact")
        return classes
