"""The kinds of golden suite: their fields, their stimulus, and their expected values.

Each suite is generic in the TestFloat sense: it knows a format and the contract's options, not
the device under test. Stimulus = exhaustive enumerations where the space is small, a directed
corner-case catalogue, and seeded random vectors weighted toward those corners. Expected values
come from the integer-only reference model (:mod:`mxsim.ref`) and nothing else.

Kinds (bit layouts: a block word holds element i at bits [i*w, (i+1)*w), element 0 in the least
significant bits; fp32 inputs of a block likewise at [32*i, 32*i + 32)):

* ``decode``: ``code`` -> ``value`` (fp32 bits of the exact element value);
* ``encode``: ``x`` (fp32 bits) -> ``code``, for one rounding and overflow mode;
* ``quantize``: ``x`` (k fp32 values; NVFP4 also ``tensor_scale``) -> ``scale``, ``scale_exp``
  (E8M0 families: the unbiased exponent), ``subscales`` (two-level formats), ``codes``;
* ``pack``: one block (``scale``, ``subscales``, ``codes``) -> ``stream``, its byte image;
* ``dot``: two blocks (``*_scale``, ``*_sub``, ``*_elems``; NVFP4 ``*_tensor_scale``) ->
  ``acc`` (the register), ``lsb``, ``anchor``, ``result`` (output-format bits);
* ``dotgeneral``: two vectors of n blocks -> ``result`` and every block's rounded Dot.

Every suite ends with ``flags``: the corner classes of :mod:`mxsim.golden.classes`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from ..accumulator import Accumulator
from ..block_policy import QuantizeOptions
from ..formats import get_format
from ..formats.element import negated_code
from ..ref import dot as ref_dot
from ..ref.block import QuantizedBlock, nvfp4_tensor_scale, quantize_block
from ..ref.decode import decode as _decode
from ..ref.decode import finite_magnitudes
from ..ref.encode import encode
from ..ref.exact import Exact, floor_log2
from ..ref.scale import E8M0_MIN
from .fields import Field
from .params import check_params

__all__ = [
    "Suite", "DecodeSuite", "EncodeSuite", "QuantizeSuite", "PackSuite", "DotSuite", "DotGeneralSuite",
    "suite_from_spec", "KINDS",
]

ORIGINS = ("exhaustive", "directed", "random")
FP32 = "fp32"


@lru_cache(maxsize=1 << 16)
def _decode_cached(code: int, fmt) -> Exact:
    return _decode(code, fmt)


def decode(code: int, fmt) -> Exact:
    """The reference decoder, memoized (golden suites decode the same few codes many times)."""
    return _decode_cached(code, get_format(fmt, kind="element"))


def _fp32_bits(x: Exact) -> int:
    return encode(x, FP32, "rne", "ieee")


def _fp32_value(bits: int) -> Exact:
    return decode(bits, FP32)


def _kind_classes(x: Exact) -> set:
    """nan, inf, zero or negative_zero, as the value is."""
    if x.is_nan:
        return {"nan"}
    if x.is_inf:
        return {"inf"}
    if x.is_zero:
        return {"negative_zero" if x.sign else "zero"}
    return set()


def _is_subnormal_code(code: int, fmt) -> bool:
    return fmt.kind == "float" and fmt.subnormals and 0 < (code & ~fmt.sign_mask) < (1 << fmt.mantissa_bits)


class Suite:
    """Base: ``inputs`` and ``outputs`` fields (``flags`` last), ``params`` for the manifest,
    ``stimulus(rng, level)`` -> [(inputs, origin)], ``compute(inputs)`` -> (outputs, classes)."""

    kind = ""
    inputs: list[Field]
    outputs: list[Field]

    @property
    def fields(self) -> list[Field]:
        return self.inputs + self.outputs + [Field("flags", 32, description="corner classes (mxsim.golden.classes)")]

    def params(self) -> dict:
        raise NotImplementedError

    def describe(self) -> dict:
        return {}


# --- element decode --------------------------------------------------------------------------
@dataclass
class DecodeSuite(Suite):
    """Every code of an element format -> the fp32 bits of its value (NaN: 0x7FC00000 with the
    code's sign)."""

    element: str
    kind = "decode"

    def __post_init__(self):
        self.fmt = get_format(self.element, kind="element")
        self.name = self.fmt.name
        self.inputs = [Field("code", self.fmt.width, description=f"{self.fmt.name} code")]
        self.outputs = [Field("value", 32, description="fp32 bits of the exact value")]

    def params(self) -> dict:
        return {"element": self.fmt.name}

    def describe(self) -> dict:
        return {"element": self.fmt.describe()}

    def stimulus(self, rng: random.Random, level: int):
        return [({"code": c}, "exhaustive") for c in range(1 << self.fmt.width)]

    def compute(self, inputs: dict):
        code = inputs["code"]
        x = decode(code, self.fmt)
        value = _fp32_bits(x)
        if x.is_finite and _fp32_value(value).magnitude != x.magnitude:
            raise ValueError(f"{self.fmt.name} code {code:#x} is not exactly an fp32 value")
        classes = _kind_classes(x)
        if x.is_finite and x.magnitude and x.magnitude == self.fmt.max_normal:
            classes.add("max")
        if _is_subnormal_code(code, self.fmt):
            classes.add("subnormal_input")
        if self.fmt.kind == "int" and self.fmt.encoding == "twos_complement" and code == self.fmt.sign_mask:
            classes.add("int8_neg2")
        return {"value": value}, classes


# --- element encode --------------------------------------------------------------------------
@dataclass
class EncodeSuite(Suite):
    """fp32 inputs -> element codes for one rounding and overflow mode."""

    element: str
    rounding: str = "rne"
    overflow: str = "saturate"
    kind = "encode"

    def __post_init__(self):
        self.fmt = get_format(self.element, kind="element")
        if self.rounding == "stochastic" or self.overflow == "error":
            raise ValueError(
                f"rounding={self.rounding!r}, overflow={self.overflow!r}: encode suites take rounding "
                "rne|rna|rtz|rup|rdn and overflow saturate|ieee"
            )
        encode(0 if self.fmt.kind == "int" or self.fmt.subnormals else 1, self.fmt, self.rounding, self.overflow)
        self.name = f"{self.fmt.name}-{self.rounding}-{self.overflow}"
        self.inputs = [Field("x", 32, description="fp32 bits of the input")]
        self.outputs = [Field("code", self.fmt.width, description=f"{self.fmt.name} code")]

    def params(self) -> dict:
        return {"element": self.fmt.name, "rounding": self.rounding, "overflow": self.overflow}

    def describe(self) -> dict:
        return {"element": self.fmt.describe()}

    def _directed(self) -> list[Fraction | Exact]:
        values = finite_magnitudes(self.fmt)
        out: list = [Exact(0), Exact(1), Exact.inf(0), Exact.inf(1)]
        if getattr(self.fmt, "has_nan", False):  # elsewhere NaN is a block-level matter
            out.append(Exact.nan(0))
        ulp = Fraction(1, 1 << 149)
        for lo, hi in zip(values, values[1:]):
            mid = (lo + hi) / 2
            out += [lo, mid, hi]
            step = Fraction(2) ** (floor_log2(mid) - 23) if mid else ulp
            out += [mid - step, mid + step]
        top = values[-1]
        top_step = (values[-1] - values[-2]) if len(values) > 1 else top
        out += [top + top_step / 2, top + top_step, 2 * top, Fraction(2) ** 127, Fraction(1, 1 << 149), Fraction(1, 1 << 126)]
        return out

    def stimulus(self, rng: random.Random, level: int):
        rows = []
        seen = set()
        for v in self._directed():
            for sign in (0, 1):
                x = v if isinstance(v, Exact) else Exact(sign, v)
                bits = _fp32_bits(x)
                if _fp32_value(bits).is_finite and x.is_finite and _fp32_value(bits).magnitude != x.magnitude:
                    continue  # not an fp32 value (e.g. a midpoint below fp32 resolution)
                if bits not in seen:
                    seen.add(bits)
                    rows.append(({"x": bits}, "directed"))
        span = max(floor_log2(finite_magnitudes(self.fmt)[-1]), 0) + 2
        low = floor_log2(finite_magnitudes(self.fmt)[1]) - 2 if len(finite_magnitudes(self.fmt)) > 1 else -10
        for _ in range(1000 * level):
            exponent = rng.randint(max(low, -149), min(span, 127))
            sig = rng.getrandbits(24) | (1 << 23)
            x = Exact(rng.getrandbits(1), Fraction(sig, 1 << 23) * Fraction(2) ** exponent)
            rows.append(({"x": _fp32_bits(x)}, "random"))
        return rows

    def compute(self, inputs: dict):
        x = _fp32_value(inputs["x"])
        code = encode(x, self.fmt, self.rounding, self.overflow)
        classes = _kind_classes(x)
        if x.is_finite and not x.is_zero:
            if x.magnitude < Fraction(1, 1 << 126):
                classes.add("subnormal_input")
            if x.magnitude > self.fmt.max_normal:
                classes.add("overflow")
            y = decode(code, self.fmt)
            if y.is_finite and y.magnitude == self.fmt.max_normal and x.magnitude > self.fmt.max_normal:
                classes.add("saturation")
            if y.is_finite and y.magnitude == self.fmt.max_normal:
                classes.add("max")
            lo = decode(encode(x, self.fmt, "rtz", "saturate"), self.fmt)
            hi = decode(encode(x, self.fmt, "rna", "saturate"), self.fmt)
            if lo.magnitude != hi.magnitude and x.magnitude * 2 == lo.magnitude + hi.magnitude:
                classes.add("tie")
            if y.is_finite and y.magnitude and floor_log2(y.magnitude) > floor_log2(x.magnitude):
                classes.add("carry")
            if _is_subnormal_code(code, self.fmt):
                classes.add("subnormal_output")
            if y.is_zero:
                classes.add("negative_zero" if y.sign else "zero")
        if self.fmt.kind == "int" and self.fmt.encoding == "twos_complement" and code == self.fmt.sign_mask:
            classes.add("int8_neg2")
        return {"code": code}, classes


# --- block quantize --------------------------------------------------------------------------
def _pack(values, width: int) -> int:
    word = 0
    for i, v in enumerate(values):
        word |= v << (i * width)
    return word


def _unpack(word: int, width: int, count: int) -> list[int]:
    mask = (1 << width) - 1
    return [(word >> (i * width)) & mask for i in range(count)]


@dataclass
class QuantizeSuite(Suite):
    """k fp32 inputs -> a block's scale (code and unbiased exponent), sub-scales and codes."""

    block: str
    options: dict = field(default_factory=dict)
    kind = "quantize"

    def __post_init__(self):
        self.fmt = get_format(self.block, kind="block")
        self.opts = QuantizeOptions.from_kwargs(**self.options)
        self.opts.check_format(self.fmt)
        if self.opts.rounding == "stochastic":
            raise ValueError("quantize suites take a deterministic rounding (not stochastic)")
        changed = {k: v for k, v in self.opts.as_dict().items() if v != getattr(QuantizeOptions(), k)}
        self.name = "-".join([self.fmt.name] + [f"{k}={v}" for k, v in sorted(changed.items())])
        k, fmt = self.fmt.block_size, self.fmt
        self.inputs = [Field("x", 32 * k, description=f"{k} fp32 inputs, element i at bits [32i, 32i+32)")]
        if fmt.tensor_scale is not None:
            self.inputs.append(Field("tensor_scale", 32, description="fp32 bits of the tensor scale s_t"))
        self.outputs = [Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code")]
        if fmt.scale.name == "e8m0":
            self.outputs.append(Field("scale_exp", 16, True, "unbiased scale exponent (code - 127; -128 for NaN)"))
        if fmt.subblocks:
            self.outputs.append(
                Field("subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)")
            )
        self.outputs.append(
            Field("codes", k * fmt.element.width, description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)")
        )

    def params(self) -> dict:
        return {"block": self.fmt.name, "options": self.opts.as_dict()}

    def describe(self) -> dict:
        return {"block": _jsonable(self.fmt.describe()), "element": _jsonable(self.fmt.element.describe())}

    def _block_values(self, rng: random.Random, kind: str) -> list[Exact]:
        k = self.fmt.block_size

        def gauss(scale_exp: int) -> Exact:
            # integer draws only (no libm), so that every platform makes the same vectors: a
            # random 24-bit significand at a bell-shaped exponent around scale_exp
            exponent = scale_exp + rng.randint(-3, 0) + rng.randint(-3, 1)
            return Exact(rng.getrandbits(1), Fraction(rng.getrandbits(23) | (1 << 23), 1 << 23) * Fraction(2) ** exponent)

        if kind == "all_zero":
            return [Exact(rng.getrandbits(1)) for _ in range(k)]
        if kind == "outlier":
            xs = [gauss(-8) for _ in range(k)]
            xs[rng.randrange(k)] = Exact(rng.getrandbits(1), Fraction(rng.randint(1, 1 << 20)))
            return xs
        if kind == "nan":
            xs = [gauss(0) for _ in range(k)]
            xs[rng.randrange(k)] = Exact.nan()
            return xs
        if kind == "inf":
            xs = [gauss(0) for _ in range(k)]
            xs[rng.randrange(k)] = Exact.inf(rng.getrandbits(1))
            return xs
        if kind == "tiny":
            return [Exact(rng.getrandbits(1), Fraction(rng.randint(0, 1 << 23), 1 << 149)) for _ in range(k)]
        if kind == "huge":
            return [Exact(rng.getrandbits(1), Fraction(rng.randint(1 << 23, (1 << 24) - 1)) * Fraction(2) ** 104) for _ in range(k)]
        if kind == "grid":  # values on and between the element grid at a random scale: ties, carries
            values = finite_magnitudes(self.fmt.element)
            shift = Fraction(2) ** rng.randint(-20, 20)
            xs = []
            for _ in range(k):
                i = rng.randrange(len(values) - 1)
                v = rng.choice([values[i], values[i + 1], (values[i] + values[i + 1]) / 2])
                xs.append(Exact(rng.getrandbits(1), v * shift))
            xs[0] = Exact(0, values[-1] * shift)  # fix the scale at amax = max_normal * shift
            return xs
        spread = rng.randint(0, 40)
        return [gauss(rng.randint(-spread, spread) // 4 + rng.randint(-30, 30) * (kind == "wide")) for _ in range(k)]

    def stimulus(self, rng: random.Random, level: int):
        rows = []
        directed = ["all_zero", "outlier", "nan", "inf", "tiny", "huge"] * 2 + ["grid"] * 20
        for kind in directed:
            rows.append((self._inputs(self._block_values(rng, kind)), "directed"))
        for i in range(100 * level):
            rows.append((self._inputs(self._block_values(rng, "wide" if i % 2 else "normal")), "random"))
        return rows

    def _inputs(self, xs: list[Exact]) -> dict:
        bits = [_fp32_bits(x) for x in xs]
        inputs = {"x": _pack(bits, 32)}
        if self.fmt.tensor_scale is not None:
            values = [_fp32_value(b) for b in bits]
            amax = max((v.magnitude for v in values if v.is_finite), default=Fraction(0))
            inputs["tensor_scale"] = _fp32_bits(Exact(0, nvfp4_tensor_scale(amax, self.opts)))
        return inputs

    def compute(self, inputs: dict):
        k, fmt = self.fmt.block_size, self.fmt
        xs = [_fp32_value(b) for b in _unpack(inputs["x"], 32, k)]
        tensor_scale = _fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        block = quantize_block(xs, fmt, self.opts, tensor_scale=tensor_scale)
        out = {"scale": block.scale, "codes": _pack(block.codes, fmt.element.width)}
        scale = decode(block.scale, fmt.scale)
        if fmt.scale.name == "e8m0":
            out["scale_exp"] = -128 if scale.is_nan else block.scale + E8M0_MIN
        if fmt.subblocks:
            out["subscales"] = _pack(block.subscales, fmt.subscale_bits)
        classes = set()
        if any(x.is_nan for x in xs):
            classes.add("nan")
        if any(x.is_inf for x in xs):
            classes.add("inf")
        if all(x.is_zero for x in xs):
            classes.add("all_zero")
        if any(x.is_finite and 0 < x.magnitude < Fraction(1, 1 << 126) for x in xs):
            classes.add("subnormal_input")
        if scale.is_nan:
            classes.add("scale_nan")
        elif fmt.scale.name == "e8m0":
            if block.scale == 0:
                classes.add("scale_min")
            if block.scale == 0xFE:
                classes.add("scale_max")
            finite = [x.magnitude for x in xs if x.is_finite and x.magnitude]
            if finite and fmt.element.kind == "float" and not (E8M0_MIN <= floor_log2(max(finite)) - fmt.element.emax <= 127):
                classes.add("scale_clamp")
        for code in block.codes:
            y = decode(code, fmt.element)
            if y.is_finite and y.magnitude == fmt.element.max_normal:
                classes.add("max")
            if _is_subnormal_code(code, fmt.element):
                classes.add("subnormal_output")
            if fmt.element.kind == "int" and fmt.element.encoding == "twos_complement" and code == fmt.element.sign_mask:
                classes.add("int8_neg2")
        return out, classes


# --- block dot -------------------------------------------------------------------------------
def register_bits(fmt_a, fmt_b, acc: Accumulator) -> int:
    """Bits of the ``acc`` field: W for a bounded aligned register; else a width that holds every
    value the register can take (:func:`mxsim.ref.dot.register_limit`; contract 5.1 for exact)."""
    if acc.mode == "aligned" and acc.width is not None:
        return acc.width
    return ref_dot.register_limit(fmt_a, fmt_b, acc).bit_length() + 1


def _jsonable(d: dict) -> dict:
    return {k: (str(v) if isinstance(v, Fraction) else v) for k, v in d.items()}


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
        return {"block_a": _jsonable(self.fa.describe()), "block_b": _jsonable(self.fb.describe())}

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
        side = {"scale": scale, "elems": _pack(codes, fmt.element.width)}
        if fmt.subblocks:
            side["sub"] = rng.getrandbits(fmt.subblocks * fmt.subscale_bits)
        if fmt.tensor_scale is not None:
            side["tensor_scale"] = _fp32_bits(Exact(0, Fraction(rng.randint(1 << 23, (1 << 24) - 1), 1 << rng.randint(20, 40))))
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
            codes = _unpack(inputs[f"{side}_elems"], fmt.element.width, fmt.block_size)
            subs = tuple(_unpack(inputs[f"{side}_sub"], fmt.subscale_bits, fmt.subblocks)) if fmt.subblocks else ()
            blocks.append(QuantizedBlock(inputs[f"{side}_scale"], subs, tuple(codes)))
            ts = inputs.get(f"{side}_tensor_scale")
            scales.append(None if ts is None else _fp32_value(ts).magnitude)
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
            for code in blk.codes:
                y = decode(code, fmt.element)
                if y.is_finite and y.magnitude == fmt.element.max_normal:
                    classes.add("max")
                if fmt.element.kind == "int" and fmt.element.encoding == "twos_complement" and code == fmt.element.sign_mask:
                    classes.add("int8_neg2")
        if any(_is_subnormal_code(ca, self.fa.element) or _is_subnormal_code(cb, self.fb.element)
               for ca, cb, x, y in zip(a.codes, b.codes, terms_a, terms_b) if x.significand and y.significand):
            classes.add("subnormal_product")
        if r.value.is_finite and _is_subnormal_code(r.code, out):
            classes.add("subnormal_output")
        if r.value.is_inf and r.exact.is_finite:
            classes.add("overflow")
        if self.acc.mode == "aligned" and finite_products:
            unbounded = ref_dot.dot(a, b, self.fa, self.fb, Accumulator(mode="aligned", frac_bits=self.acc.frac_bits,
                                    shift_rounding=self.acc.shift_rounding), tensor_scale_a=ta, tensor_scale_b=tb)
            if unbounded.accumulator != r.accumulator:
                classes.add("acc_overflow")
            exact = ref_dot.dot(a, b, self.fa, self.fb, Accumulator(), tensor_scale_a=ta, tensor_scale_b=tb)
            if unbounded.accumulator * Fraction(2) ** unbounded.lsb_exponent != exact.accumulator * Fraction(2) ** exact.lsb_exponent:
                classes.add("shift_inexact")
        return classes


@dataclass
class PackSuite(Suite):
    """One block (scale, sub-scales, codes) -> its byte-stream image ``[scale][sub-scales]
    [e0]...[e(k-1)]`` in one element-stream layout (contract 3.2; mxsim.ref.pack): byte j of the
    stream at bits [8j, 8j+8) of the ``stream`` field."""

    block: str
    element_stream: str = "lsb"
    kind = "pack"

    def __post_init__(self):
        from ..ref.pack import ELEMENT_STREAMS, packed_nbytes

        self.fmt = get_format(self.block, kind="block")
        if self.element_stream not in ELEMENT_STREAMS:
            raise ValueError(f"element_stream={self.element_stream!r} is not allowed; expected one of: {', '.join(ELEMENT_STREAMS)}")
        fmt = self.fmt
        self.name = f"{fmt.name}-{self.element_stream}"
        self.nbytes = packed_nbytes(fmt, 1, self.element_stream, "interleaved")
        self.inputs = [Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code")]
        if fmt.subblocks:
            self.inputs.append(Field("subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)"))
        self.inputs.append(Field("codes", fmt.block_size * fmt.element.width, description="codes, element i at bits [i*w, (i+1)*w)"))
        self.outputs = [Field("stream", 8 * self.nbytes, description=f"the block's {self.nbytes} bytes, byte j at bits [8j, 8j+8)")]

    def params(self) -> dict:
        return {"block": self.fmt.name, "element_stream": self.element_stream}

    def describe(self) -> dict:
        return {"block": _jsonable(self.fmt.describe()), "scale_placement": "interleaved"}

    def stimulus(self, rng: random.Random, level: int):
        fmt = self.fmt
        rows = []
        k, w = fmt.block_size, fmt.element.width
        patterns = [[0] * k, [(1 << w) - 1] * k, [i % (1 << w) for i in range(k)], [1 << (i % w) for i in range(k)]]
        for codes in patterns:
            rows.append((self._inputs(codes, 0, 0), "directed"))
            rows.append((self._inputs(codes, (1 << fmt.scale.width) - 1, (1 << (fmt.subblocks * fmt.subscale_bits)) - 1), "directed"))
        for _ in range(100 * level):
            codes = [rng.getrandbits(w) for _ in range(k)]
            rows.append((self._inputs(codes, rng.getrandbits(fmt.scale.width), rng.getrandbits(fmt.subblocks * fmt.subscale_bits)), "random"))
        return rows

    def _inputs(self, codes, scale, subscales) -> dict:
        inputs = {"scale": scale, "codes": _pack(codes, self.fmt.element.width)}
        if self.fmt.subblocks:
            inputs["subscales"] = subscales
        return inputs

    def compute(self, inputs: dict):
        import numpy as np

        from ..ref.pack import pack_blocks

        fmt = self.fmt
        codes = np.array([_unpack(inputs["codes"], fmt.element.width, fmt.block_size)], dtype=np.int64)
        subs = None
        if fmt.subblocks:
            subs = np.array([_unpack(inputs["subscales"], fmt.subscale_bits, fmt.subblocks)], dtype=np.int64)
        data = pack_blocks(fmt, np.array([inputs["scale"]]), subs, codes, self.element_stream, "interleaved")
        classes = set()
        if decode(inputs["scale"], fmt.scale).is_nan:
            classes.add("scale_nan")
        if all(c == 0 for c in codes[0]):
            classes.add("all_zero")
        return {"stream": int.from_bytes(data, "little")}, classes


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
        singles = DotSuite.stimulus(self, rng, 1)
        singles = [row for row, origin in singles if origin != "exhaustive"]
        n = self.n_blocks
        rows = []
        for start in range(0, len(singles) - n + 1, n):
            rows.append((self._join(singles[start : start + n]), "directed" if start < 64 else "random"))
        for _ in range(8):  # cancellation across blocks: block 1 is block 0 with a negated b side
            first = dict(rng.choice(singles))
            other = dict(first)
            other["b_elems"] = _pack([c ^ self.fb.element.sign_mask for c in _unpack(first["b_elems"], self.fb.element.width, self.fb.block_size)], self.fb.element.width) if self.fb.element.kind == "float" else first["b_elems"]
            rows.append((self._join([first, other] + [rng.choice(singles) for _ in range(n - 2)]), "directed"))
        return rows[: 60 * level + 8] if level == 1 else rows

    def _join(self, blocks: list[dict]) -> dict:
        joined = {}
        for f in self.single:
            if f.name.endswith("tensor_scale"):
                joined[f.name] = blocks[0][f.name]
            else:
                joined[f.name] = _pack([b[f.name] for b in blocks], f.bits)
        return joined

    def compute(self, inputs: dict):
        n = self.n_blocks
        per_block = [
            {f.name: (inputs[f.name] if f.name.endswith("tensor_scale") else _unpack(inputs[f.name], f.bits, n)[j]) for f in self.single}
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
        elif _is_subnormal_code(g.code, out):
            classes.add("subnormal_output")
        if len({b.value.sign for b in g.blocks if b.value.is_finite and not b.value.is_zero}) == 2:
            classes.add("mixed_signs")
        return {"result": g.code, "block_results": _pack([b.code for b in g.blocks], out.width)}, classes


KINDS = {
    "decode": DecodeSuite,
    "encode": EncodeSuite,
    "quantize": QuantizeSuite,
    "pack": PackSuite,
    "dot": DotSuite,
    "dotgeneral": DotGeneralSuite,
}


def suite_from_spec(kind: str, **params) -> Suite:
    """Build a suite from its manifest ``params`` (or the same keywords)."""
    if kind not in KINDS:
        raise ValueError(f"suite kind={kind!r} is not allowed; expected one of: {', '.join(KINDS)}")
    check_params(kind, KINDS[kind], params)
    return KINDS[kind](**params)
