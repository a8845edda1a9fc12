"""The integer reference dot-product datapath (mxsim.ref.dot) and its configuration (mxsim.options.accumulate).

Binding contract: docs/numerics.md section 4; exact accumulator widths: formats-and-datapath.md 5.1.

Every expected value here comes from an independent source, never from mxsim's codecs:

* element and scale codes are decoded by the test-local decoders below, written from the format
  definitions (formats-and-datapath.md section 0.2, 2.2, 3.1) and checked code by code against
  ml_dtypes;
* dot products are summed with exact Fractions;
* output bits come from the test-local integer-only rounding ``ieee_bits`` (checked against known
  bit patterns and against NumPy / ml_dtypes casts), or were derived by hand in comments.

mxsim is only used to build inputs (QuantizedBlock, quantize_block) and as the code under test.

Sections: 0 oracle self-checks, 1 exact mode and specials, 2 aligned mode by hand, 3 aligned ==
exact property, 4 error versus frac_bits, 5 exact widths, 6 fp32_sequential, 7 DotGeneral across
blocks, 8 output options, 9 Accumulator validation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mxsim.options.accumulate import Accumulator
from mxsim.ref.block import quantize_block
from mxsim.ref.stored_block import QuantizedBlock
from mxsim.ref.dot import dot, dot_general, product_lsb

TWO = Fraction(2)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ================================================================================================
# Test-local oracle: formats from their definitions
# ================================================================================================

# Float element types (formats-and-datapath.md 0.2): exponent bits, mantissa bits, bias, specials.
FLOAT_ELEMENTS = {
    "e4m3": (4, 3, 7, "fn"),  # no Inf; S.1111.111 is NaN
    "e5m2": (5, 2, 15, "ieee"),  # S.11111.00 is Inf, S.11111.{01,10,11} NaN
    "e3m2": (3, 2, 3, None),
    "e2m3": (2, 3, 1, None),
    "e2m1": (2, 1, 1, None),
}
# Sign-magnitude elements "smM": 1 sign bit + M magnitude bits, value (-1)^s * mag * 2^-(M-1) * 2^-tau.
# "int8": two's complement q, value q / 64 (0x80 = -2).


@dataclass(frozen=True)
class Fmt:
    element: str
    k: int  # block size
    scale: str  # "e8m0" or "ue4m3"
    subblock: int = 0  # elements per microexponent (0: none)


BLOCKS = {
    "mxfp8_e4m3": Fmt("e4m3", 32, "e8m0"),
    "mxfp8_e5m2": Fmt("e5m2", 32, "e8m0"),
    "mxfp6_e3m2": Fmt("e3m2", 32, "e8m0"),
    "mxfp6_e2m3": Fmt("e2m3", 32, "e8m0"),
    "mxfp4_e2m1": Fmt("e2m1", 32, "e8m0"),
    "mxint8": Fmt("int8", 32, "e8m0"),
    "mx9": Fmt("sm7", 16, "e8m0", 2),
    "mx6": Fmt("sm4", 16, "e8m0", 2),
    "mx4": Fmt("sm2", 16, "e8m0", 2),
    "msfp16": Fmt("sm7", 16, "e8m0"),
    "msfp12": Fmt("sm3", 16, "e8m0"),
    "nvfp4": Fmt("e2m1", 16, "ue4m3"),
}

# Exponent of each format's smallest element LSB, by hand: E_min - f - (largest tau).
# E5M2 2^-16, E4M3 2^-9, E3M2 2^-4, E2M3 2^-3, E2M1 2^-1, INT8 2^-6 (section 5.1 table);
# MX9 0 - 6 - 1, MX6 0 - 3 - 1, MX4 0 - 1 - 1; MSFP16 0 - 6, MSFP12 0 - 2 (no tau); NVFP4 = E2M1.
ELEMENT_LSB = {
    "mxfp8_e5m2": -16,
    "mxfp8_e4m3": -9,
    "mxfp6_e3m2": -4,
    "mxfp6_e2m3": -3,
    "mxfp4_e2m1": -1,
    "mxint8": -6,
    "mx9": -7,
    "mx6": -4,
    "mx4": -2,
    "msfp16": -6,
    "msfp12": -2,
    "nvfp4": -1,
}

OCP = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"]
B16 = ["mx9", "mx6", "mx4", "msfp16", "msfp12"]
PAIRS = [(a, b) for a in OCP for b in OCP] + [(a, b) for a in B16 for b in B16] + [("nvfp4", "nvfp4")]

NAN = "nan"  # special values of the oracle: NAN, ("inf", sign); finite values are Fractions


def is_inf(x) -> bool:
    return isinstance(x, tuple)


def floor_log2(q: Fraction) -> int:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n << max(-e, 0)) >= (d << max(e, 0)) else e - 1


def code_bits(element: str) -> int:
    if element in FLOAT_ELEMENTS:
        e, m, _, _ = FLOAT_ELEMENTS[element]
        return 1 + e + m
    return 8 if element == "int8" else 1 + int(element[2:])


def frac_bits(element: str) -> int:
    """f of docs/numerics.md section 4: mantissa bits, 6 for INT8, m - 1 for sign-magnitude."""
    if element in FLOAT_ELEMENTS:
        return FLOAT_ELEMENTS[element][1]
    return 6 if element == "int8" else int(element[2:]) - 1


def decode_element(element: str, code: int, tau: int = 0):
    if element in FLOAT_ELEMENTS:
        e, m, bias, specials = FLOAT_ELEMENTS[element]
        sign = (code >> (e + m)) & 1
        field, mant = (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
        if specials == "fn" and field == (1 << e) - 1 and mant == (1 << m) - 1:
            return NAN
        if specials == "ieee" and field == (1 << e) - 1:
            return NAN if mant else ("inf", sign)
        if field == 0:
            magnitude = Fraction(mant, 1 << m) * TWO ** (1 - bias)
        else:
            magnitude = (1 + Fraction(mant, 1 << m)) * TWO ** (field - bias)
        return -magnitude if sign else magnitude
    if element == "int8":
        return Fraction(code - 256 if code >= 128 else code, 64)
    m = int(element[2:])
    magnitude = Fraction(code & ((1 << m) - 1), 1 << (m - 1)) / TWO**tau
    return -magnitude if code >> m else magnitude


def element_exponent(element: str, value: Fraction, tau: int = 0) -> int:
    """E of docs/numerics.md section 4 for a nonzero finite element (tau already in ``value``)."""
    if element in FLOAT_ELEMENTS:
        return max(floor_log2(abs(value)), 1 - FLOAT_ELEMENTS[element][2])
    return -tau


def decode_scale(kind: str, code: int):
    if kind == "e8m0":  # 2^(code - 127), 0xFF is NaN
        return NAN if code == 0xFF else TWO ** (code - 127)
    assert 0 <= code <= 0x7F  # UE4M3: E4M3 with the sign bit 0
    return decode_element("e4m3", code)


def elements(name: str, block: QuantizedBlock) -> list:
    fmt = BLOCKS[name]
    return [
        decode_element(fmt.element, c, block.subscales[i // fmt.subblock] if fmt.subblock else 0)
        for i, c in enumerate(block.codes)
    ]


def exponents(name: str, block: QuantizedBlock) -> list:
    fmt = BLOCKS[name]
    taus = [block.subscales[i // fmt.subblock] if fmt.subblock else 0 for i in range(fmt.k)]
    return [
        element_exponent(fmt.element, v, t) if isinstance(v, Fraction) and v else None
        for v, t in zip(elements(name, block), taus)
    ]


def sign_of(x) -> int:
    return x[1] if is_inf(x) else int(x < 0)


def mul(x, y):
    """IEEE-style product of two decoded elements."""
    if x == NAN or y == NAN:
        return NAN
    if is_inf(x) or is_inf(y):
        if (not is_inf(x) and x == 0) or (not is_inf(y) and y == 0):
            return NAN  # Inf x 0
        return ("inf", sign_of(x) ^ sign_of(y))
    return x * y


def exact_sum(values):
    """Sum by the contract's special rules: NaN wins, Inf + -Inf is NaN, else Inf keeps its sign."""
    if any(v == NAN for v in values):
        return NAN
    signs = {v[1] for v in values if is_inf(v)}
    if len(signs) == 2:
        return NAN
    if signs:
        return ("inf", signs.pop())
    return sum(values, Fraction(0))


def scale_factor(name: str, block: QuantizedBlock, tensor_scale=None):
    s = decode_scale(BLOCKS[name].scale, block.scale)
    return s if s == NAN else s * (1 if tensor_scale is None else Fraction(tensor_scale))


def unscaled_sum(name_a, a, name_b, b):
    return exact_sum([mul(x, y) for x, y in zip(elements(name_a, a), elements(name_b, b))])


def block_value(name_a, a, name_b, b, ts_a=None, ts_b=None):
    """OCP Dot(A, B) = X_A * X_B * sum P_A,i * P_B,i, exactly, with the contract's specials."""
    fa, fb = scale_factor(name_a, a, ts_a), scale_factor(name_b, b, ts_b)
    if NAN in (fa, fb):
        return NAN
    total = unscaled_sum(name_a, a, name_b, b)
    return total if not isinstance(total, Fraction) else total * fa * fb


def anchor_of(name_a, a, name_b, b) -> int:
    es = [ea + eb for ea, eb in zip(exponents(name_a, a), exponents(name_b, b)) if ea is not None and eb is not None]
    return max(es) if es else 0


# ================================================================================================
# Test-local oracle: exact rational -> IEEE binary32 / bf16 / fp16 bits (integers only)
# ================================================================================================

IEEE = {"fp32": (8, 23), "bf16": (8, 7), "fp16": (5, 10)}
CANONICAL_NAN = {"fp32": 0x7FC00000, "bf16": 0x7FC0, "fp16": 0x7E00}
ROUNDINGS = ["rne", "rna", "rtz", "rup", "rdn"]


def ieee_bits(x, out: str = "fp32", mode: str = "rne", ftz: bool = False) -> int:
    """x (Fraction, NAN or ("inf", s)) rounded to ``out``: subnormals kept (unless ftz: a result that
    rounds to a subnormal becomes a zero of its sign), a rounding that (with unbounded exponent)
    exceeds the largest finite value gives +-Inf in every mode, NaN is the canonical quiet NaN."""
    ebits, mbits = IEEE[out]
    sign_bit, inf_bits = 1 << (ebits + mbits), ((1 << ebits) - 1) << mbits
    if x == NAN:
        return CANONICAL_NAN[out]
    if is_inf(x):
        return inf_bits | (sign_bit if x[1] else 0)
    negative, a = x < 0, abs(Fraction(x))
    if a == 0:
        return 0
    bias = (1 << (ebits - 1)) - 1
    emin, emax = 1 - bias, bias
    q = max(floor_log2(a), emin) - mbits  # exponent of the ulp of a's binade (or of the subnormals)
    scaled = a / TWO**q
    n = scaled.numerator // scaled.denominator
    rest = scaled - n
    up = {
        "rtz": False,
        "rup": rest > 0 and not negative,
        "rdn": rest > 0 and negative,
        "rna": rest >= Fraction(1, 2),
        "rne": rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1),
    }[mode]
    n += up
    if n * TWO**q >= TWO ** (emax + 1):  # beyond the largest finite value
        return inf_bits | (sign_bit if negative else 0)
    code = ((q - emin + mbits) << mbits) + n  # q = emin - mbits: code = n (subnormal or min normal)
    if ftz and 0 < code < (1 << mbits):
        code = 0
    return code | (sign_bit if negative else 0)


def ieee_value(bits: int, out: str = "fp32"):
    ebits, mbits = IEEE[out]
    sign = bits >> (ebits + mbits) & 1
    field, mant = (bits >> mbits) & ((1 << ebits) - 1), bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    if field == (1 << ebits) - 1:
        return NAN if mant else ("inf", sign)
    mag = (
        Fraction(mant, 1 << mbits) * TWO ** (1 - bias)
        if field == 0
        else (1 + Fraction(mant, 1 << mbits)) * TWO ** (field - bias)
    )
    return -mag if sign else mag


def round_to(x, out="fp32", mode="rne", ftz=False):
    """The value of x after rounding to ``out`` (a zero result as Fraction(0))."""
    return ieee_value(ieee_bits(x, out, mode, ftz), out)


def fp32_add(x, y):
    """IEEE binary32 addition, nearest-even, of two oracle values (NaN, Inf rules as IEEE)."""
    if x == NAN or y == NAN or (is_inf(x) and is_inf(y) and x != y):
        return NAN
    if is_inf(x) or is_inf(y):
        return x if is_inf(x) else y
    return round_to(x + y)


# ================================================================================================
# Inputs
# ================================================================================================


def block(scale: int, codes, k: int, subscales=()) -> QuantizedBlock:
    """A block from its leading codes, padded with zero codes to k elements."""
    codes = tuple(codes) + (0,) * (k - len(codes))
    return QuantizedBlock(scale, tuple(subscales), codes)


def e4(scale_a, codes_a, scale_b, codes_b):
    return block(scale_a, codes_a, 32), block(scale_b, codes_b, 32)


def random_code(rng, element, finite=True, zero_prob=0.15):
    if rng.random() < zero_prob:
        return 0
    while True:
        code = rng.randrange(1 << code_bits(element))
        if not finite or isinstance(decode_element(element, code), Fraction):
            return code


def random_block(rng, name, scales=None, finite=True, zero_prob=0.15) -> QuantizedBlock:
    fmt = BLOCKS[name]
    if scales is not None:
        scale = rng.choice(scales)
    else:
        scale = rng.randint(117, 137) if fmt.scale == "e8m0" else rng.randint(0x01, 0x7E)
    subscales = tuple(rng.randrange(2) for _ in range(fmt.k // fmt.subblock)) if fmt.subblock else ()
    return QuantizedBlock(
        scale, subscales, tuple(random_code(rng, fmt.element, finite, zero_prob) for _ in range(fmt.k))
    )


def fp32_fraction(x: float) -> Fraction:
    return Fraction(float(np.float32(x)))


ALIGNED_WIDE = Accumulator(mode="aligned", frac_bits=8, width=24)
MODES = {
    "exact": Accumulator(),
    "aligned": ALIGNED_WIDE,
    "fp32_sequential": Accumulator(mode="fp32_sequential"),
}


# ================================================================================================
# 0. The oracle itself
# ================================================================================================

ML_DTYPES = {
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e2m1": ml_dtypes.float4_e2m1fn,
}


@pytest.mark.parametrize("element", sorted(ML_DTYPES))
def test_oracle_float_decoder_matches_ml_dtypes(element):
    n = 1 << code_bits(element)
    theirs = np.arange(n, dtype=np.uint8).view(ML_DTYPES[element]).astype(np.float64)
    for code in range(n):
        mine, other = decode_element(element, code), float(theirs[code])
        if mine == NAN:
            assert np.isnan(other), hex(code)
        elif is_inf(mine):
            assert other == (-np.inf if mine[1] else np.inf), hex(code)
        else:
            assert mine == Fraction(other), hex(code)


def test_oracle_integer_and_scale_decoders():
    assert [decode_element("int8", c) for c in (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC0)] == [
        0,
        Fraction(1, 64),
        Fraction(127, 64),
        -2,
        Fraction(-1, 64),
        -1,
    ]
    # MX9 element 0x40 = +64/64, 0xC0 = -64/64, halved by tau = 1; MX4 0b111 = -3/2
    assert decode_element("sm7", 0x40) == 1 and decode_element("sm7", 0xC0, 1) == Fraction(-1, 2)
    assert decode_element("sm2", 0b111) == Fraction(-3, 2) and decode_element("sm2", 0b100) == 0
    e8m0 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    for code in range(255):
        assert decode_scale("e8m0", code) == Fraction(float(e8m0[code]))
    assert decode_scale("e8m0", 0xFF) == NAN and decode_scale("ue4m3", 0x7F) == NAN
    assert decode_scale("ue4m3", 0x7E) == 448 and decode_scale("ue4m3", 0x01) == TWO**-9


def test_oracle_ieee_bits_known_values():
    assert ieee_bits(Fraction(1)) == 0x3F800000
    assert ieee_bits(Fraction(-2)) == 0xC0000000
    assert ieee_bits(TWO**-149) == 0x00000001  # smallest subnormal
    assert ieee_bits(TWO**-127) == 0x00400000  # E8M0 code 0 as fp32 (reference 1.2)
    assert ieee_bits(TWO**-150) == 0x00000000  # tie between 0 and 2^-149: even
    assert ieee_bits(-(TWO**-150)) == 0x80000000
    assert ieee_bits(3 * TWO**-150) == 0x00000002  # tie between 1 and 2 ulps: even
    fp32_max = (2 - TWO**-23) * TWO**127
    assert ieee_bits(fp32_max) == 0x7F7FFFFF
    assert ieee_bits(fp32_max + TWO**103) == 0x7F800000  # halfway to 2^128: tie to even = overflow
    assert ieee_bits(fp32_max + TWO**103, mode="rtz") == 0x7F7FFFFF
    assert ieee_bits(1 + TWO**-24) == 0x3F800000  # tie, even
    assert ieee_bits(1 + 3 * TWO**-24) == 0x3F800002  # tie, even (up)
    assert ieee_bits(1 + TWO**-24, mode="rna") == 0x3F800001
    assert ieee_bits(Fraction(1), "bf16") == 0x3F80 and ieee_bits(Fraction(1), "fp16") == 0x3C00
    assert ieee_bits(Fraction(65504), "fp16") == 0x7BFF and ieee_bits(Fraction(65520), "fp16") == 0x7C00
    assert ieee_bits(TWO**-24, "fp16") == 0x0001 and ieee_bits(TWO**-15, "fp16", ftz=True) == 0
    assert ieee_bits(-(TWO**-127), ftz=True) == 0x80000000
    assert (
        ieee_bits(1 + 3 * TWO**-25, mode="rdn") == 0x3F800000
        and ieee_bits(-(1 + 3 * TWO**-25), mode="rdn") == 0xBF800001
    )


@given(st.integers(-(1 << 53) + 1, (1 << 53) - 1), st.integers(-220, 160))
@SETTINGS
def test_oracle_ieee_bits_match_numpy_casts(m, e):
    x = Fraction(m) * TWO**e
    xf = float(x)  # exact in float64, so NumPy's float64 -> fp32 / fp16 casts round once (RNE)
    with np.errstate(over="ignore"):
        assert ieee_bits(x, "fp32") == int(np.array(xf, np.float32).view(np.uint32))
        assert ieee_bits(x, "fp16") == int(np.array(xf, np.float16).view(np.uint16))
    # bf16: from a value exact in fp32, so ml_dtypes' fp32 -> bf16 cast is the only rounding
    y = Fraction(m >> 29) * TWO ** max(min(e, 100), -100)
    assert ieee_bits(y, "bf16") == int(np.array(float(y), np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))


# ================================================================================================
# 1. exact mode: one rounding of the exact rational Dot
# ================================================================================================


def check_exact(name_a, a, name_b, b, r, ts_a=None, ts_b=None):
    expected = block_value(name_a, a, name_b, b, ts_a, ts_b)
    assert r.code == ieee_bits(expected), (r.code, expected)
    if isinstance(expected, Fraction):
        assert r.exact.value == expected
        unscaled = unscaled_sum(name_a, a, name_b, b)
        assert Fraction(r.accumulator) * TWO**r.lsb_exponent == unscaled
        assert r.lsb_exponent == ELEMENT_LSB[name_a] + ELEMENT_LSB[name_b] == product_lsb(name_a, name_b)
        assert r.anchor == anchor_of(name_a, a, name_b, b)


@pytest.mark.parametrize("name_a, name_b", PAIRS)
def test_exact_random_blocks(name_a, name_b):
    rng = random.Random(f"{name_a}x{name_b}")
    exact_across = Accumulator(across_blocks="exact")
    for _ in range(10):
        a, b = random_block(rng, name_a), random_block(rng, name_b)
        check_exact(name_a, a, name_b, b, dot(a, b, name_a, name_b))
    for _ in range(3):  # DotGeneral, summed exactly and rounded once
        n = rng.randint(1, 4)
        blocks_a = [random_block(rng, name_a) for _ in range(n)]
        blocks_b = [random_block(rng, name_b) for _ in range(n)]
        total = sum(block_value(name_a, a, name_b, b) for a, b in zip(blocks_a, blocks_b))
        assert dot_general(blocks_a, blocks_b, name_a, name_b, exact_across).code == ieee_bits(total)


@pytest.mark.parametrize(
    "name_a, name_b", [p for p in PAIRS if p[0] == p[1]] + [("mxfp8_e4m3", "mxfp8_e5m2"), ("mx9", "mx6")]
)
def test_exact_quantized_blocks(name_a, name_b):
    """Realistic blocks from quantize_block (only the inputs come from mxsim)."""
    rng = random.Random(name_a + name_b)
    for _ in range(6):
        xs = [rng.gauss(0, 1) * 2 ** rng.randint(-3, 3) for _ in range(BLOCKS[name_a].k)]
        ys = [rng.gauss(0, 1) for _ in range(BLOCKS[name_b].k)]
        a, b = quantize_block(xs, name_a), quantize_block(ys, name_b)
        check_exact(name_a, a, name_b, b, dot(a, b, name_a, name_b))


def test_exact_nvfp4_tensor_scales():
    rng = random.Random(4)
    exact_across = Accumulator(across_blocks="exact")
    for _ in range(20):
        ts_a, ts_b = fp32_fraction(rng.uniform(1e-4, 4)), fp32_fraction(2 ** rng.uniform(-20, 20))
        a, b = random_block(rng, "nvfp4"), random_block(rng, "nvfp4")
        r = dot(a, b, "nvfp4", tensor_scale_a=ts_a, tensor_scale_b=ts_b)
        check_exact("nvfp4", a, "nvfp4", b, r, ts_a, ts_b)
    # realistic: quantized with a tensor scale, DotGeneral of 3 blocks
    xs = [rng.gauss(0, 100) for _ in range(48)]
    ts = fp32_fraction(max(abs(x) for x in xs) / 2688)
    blocks_a = [quantize_block(xs[i : i + 16], "nvfp4", tensor_scale=ts) for i in range(0, 48, 16)]
    blocks_b = [random_block(rng, "nvfp4") for _ in range(3)]
    total = sum(block_value("nvfp4", a, "nvfp4", b, ts, 3) for a, b in zip(blocks_a, blocks_b))
    r = dot_general(blocks_a, blocks_b, "nvfp4", "nvfp4", exact_across, tensor_scale_a=ts, tensor_scale_b=3)
    assert r.code == ieee_bits(total)


# Negative zero codes (sign bit only) and +1.0 codes per element type.
NEG_ZERO = {
    "e4m3": 0x80,
    "e5m2": 0x80,
    "e3m2": 0x20,
    "e2m3": 0x20,
    "e2m1": 0x8,
    "sm7": 0x80,
    "sm4": 0x10,
    "sm2": 0x4,
    "sm3": 0x8,
}
ONE = {
    "e4m3": 0x38,
    "e5m2": 0x3C,
    "e3m2": 0x0C,
    "e2m3": 0x08,
    "e2m1": 0x2,
    "int8": 0x40,
    "sm7": 0x40,
    "sm4": 0x08,
    "sm2": 0x2,
    "sm3": 0x4,
}
MINUS_ONE = {
    "e4m3": 0xB8,
    "e5m2": 0xBC,
    "e3m2": 0x2C,
    "e2m3": 0x28,
    "e2m1": 0xA,
    "int8": 0xC0,
    "sm7": 0xC0,
    "sm4": 0x18,
    "sm2": 0x6,
    "sm3": 0xC,
}


def test_oracle_one_codes():
    for element, code in ONE.items():
        assert decode_element(element, code) == 1 and decode_element(element, MINUS_ONE[element]) == -1
    for element, code in NEG_ZERO.items():
        assert decode_element(element, code) == 0


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", OCP + B16 + ["nvfp4"])
def test_zero_sum_is_positive_zero(name, mode):
    fmt, acc = BLOCKS[name], MODES[mode]
    big = 0xFE if fmt.scale == "e8m0" else 0x7E
    subscales = (0,) * (fmt.k // fmt.subblock) if fmt.subblock else ()
    ones = QuantizedBlock(big, subscales, (ONE[fmt.element],) * fmt.k)
    cases = [  # exact cancellation: +1*1 - 1*1 ...
        QuantizedBlock(big, subscales, (ONE[fmt.element], MINUS_ONE[fmt.element]) * (fmt.k // 2)),
        QuantizedBlock(big, subscales, (0,) * fmt.k),  # all zero
    ]
    if fmt.element in NEG_ZERO:  # every product a negative zero
        cases.append(QuantizedBlock(big, subscales, (NEG_ZERO[fmt.element],) * fmt.k))
    for a in cases:
        r = dot(a, ones, name, name, acc)
        assert r.code == 0x00000000 and r.value.sign == 0 and not r.value.magnitude
        assert r.accumulator == 0
    # ... and a DotGeneral whose block sums cancel exactly (fp32 and exact across blocks)
    unit = 127 if fmt.scale == "e8m0" else 0x38
    ones, neg = (QuantizedBlock(unit, subscales, (c[fmt.element],) * fmt.k) for c in (ONE, MINUS_ONE))
    for across in ("fp32", "exact"):
        acc2 = Accumulator(**{**acc.as_dict(), "across_blocks": across})
        assert dot_general([ones, neg], [ones, ones], name, name, acc2).code == 0x00000000
    assert dot_general([], [], name, name, acc).code == 0x00000000


# Max-magnitude finite codes per element type.
MAX_CODE = {
    "e4m3": 0x7E,
    "e5m2": 0x7B,
    "e3m2": 0x1F,
    "e2m3": 0x1F,
    "e2m1": 0x7,
    "int8": 0x80,
    "sm7": 0x7F,
    "sm4": 0x0F,
    "sm2": 0x3,
    "sm3": 0x7,
}


@pytest.mark.parametrize("name", OCP + B16 + ["nvfp4"])
def test_exact_max_magnitude_elements(name):
    fmt = BLOCKS[name]
    top = MAX_CODE[fmt.element]
    sub = (0,) * (fmt.k // fmt.subblock) if fmt.subblock else ()
    neg = top ^ (1 << (code_bits(fmt.element) - 1)) if fmt.element != "int8" else 0x7F
    scales = (127, 0xFE, 0x00) if fmt.scale == "e8m0" else (0x38, 0x7E, 0x01)
    for sa in scales:
        for sb in scales:
            for codes_b in [(top,) * fmt.k, (neg,) * fmt.k, (top, neg) * (fmt.k // 2)]:
                a, b = QuantizedBlock(sa, sub, (top,) * fmt.k), QuantizedBlock(sb, sub, codes_b)
                check_exact(name, a, name, b, dot(a, b, name))
    # hand check: 32 * 448 * 448 = 6422528 = 0x620000 * 1 -> 1.53125 * 2^22 -> 0x4AC40000
    a = QuantizedBlock(127, (), (0x7E,) * 32)
    assert dot(a, a, "mxfp8_e4m3").code == 0x4AC40000
    assert dot(QuantizedBlock(0xFE, (), (0x7E,) * 32), a, "mxfp8_e4m3").code == 0x7F800000  # 6422528 * 2^127
    assert dot(QuantizedBlock(0xFE, (), (0xFE,) * 32), a, "mxfp8_e4m3").code == 0xFF800000


def test_exact_subnormal_elements_and_results():
    # E4M3 0x01 = 2^-9 (smallest subnormal); 0x03 = 3 * 2^-9
    cases = [
        # (scale_a, codes_a, scale_b, codes_b, expected fp32 bits derived by hand)
        (0x00, [0x38], 0x7F, [0x38], 0x00400000),  # 2^-127 = 2^22 * 2^-149
        (0x00, [0x01], 123, [0x01], 0x00000001),  # 2^-18 * 2^-127 * 2^-4 = 2^-149
        (0x00, [0x01], 122, [0x01], 0x00000000),  # 2^-150: tie between 0 and 2^-149 -> even 0 (+0)
        (0x00, [0x81], 122, [0x01], 0x80000000),  # -2^-150 rounds to -0: a nonzero sum keeps its sign
        (0x00, [0x01], 122, [0x03], 0x00000002),  # 3 * 2^-150: tie between 1 and 2 ulps -> 2
        (0x00, [0x01] * 32, 0x00, [0x01] * 32, 0x00000000),  # 2^-13 * 2^-254 underflows to +0
        (127, [0x01] * 32, 127, [0x01] * 32, 0x39000000),  # 32 * 2^-18 = 2^-13 -> field 114 = 0x72
        (0x01, [0x08], 0x7F, [0x07], 0x00000700),  # 2^-6 * 0.875 * 2^-6 * 2^-126 = 0.875 * 2^-138 = 1792 * 2^-149
    ]
    for sa, ca, sb, cb, bits in cases:
        a, b = e4(sa, ca, sb, cb)
        r = dot(a, b, "mxfp8_e4m3")
        assert r.code == bits, (hex(r.code), hex(bits))
        check_exact("mxfp8_e4m3", a, "mxfp8_e4m3", b, r)
    # random subnormal elements (exponent field 0) and scales that land near fp32's subnormals
    rng = random.Random(11)
    for name in OCP:
        fmt = BLOCKS[name]
        if fmt.element == "int8":
            continue
        e, m = FLOAT_ELEMENTS[fmt.element][:2]
        for _ in range(8):
            codes_a = tuple(rng.randrange(1 << m) | (rng.randrange(2) << (e + m)) for _ in range(32))
            a = QuantizedBlock(rng.choice([0, 1, 2, 30]), (), codes_a)
            b = random_block(rng, name, scales=[0, 1, 5, 127])
            check_exact(name, a, name, b, dot(a, b, name))


@pytest.mark.parametrize(
    "name_a, name_b",
    [
        ("mxfp8_e4m3", "mxfp8_e4m3"),
        ("mxfp8_e5m2", "mxfp8_e5m2"),
        ("mxfp8_e4m3", "mxfp8_e5m2"),
        ("mxfp4_e2m1", "mxfp6_e2m3"),
        ("mxint8", "mxint8"),
        ("mx9", "mx4"),
        ("msfp12", "msfp16"),
    ],
)
def test_exact_extreme_scales(name_a, name_b):
    """Scale codes 0x00 and 0xFE (and neighbours): fp32 underflow to subnormals/zero and overflow to Inf."""
    rng = random.Random(name_a + name_b + "extreme")
    # scale pairs whose product 2^(XA + XB) lies at the ends of fp32's range
    scale_pairs = [
        (0x00, 0x00),
        (0x00, 0x01),
        (0x00, 0x7F),
        (0x01, 0x70),
        (0x02, 0x68),
        (0x00, 0x60),
        (0xFE, 0xFE),
        (0xFE, 0x7F),
        (0xFD, 0x82),
        (0xFE, 0x70),
        (0xF0, 0x8F),
        (0x00, 0xFE),
    ]
    seen = set()
    for sa, sb in scale_pairs:
        for _ in range(4):
            a, b = random_block(rng, name_a, [sa]), random_block(rng, name_b, [sb])
            r = dot(a, b, name_a, name_b)
            check_exact(name_a, a, name_b, b, r)
            magnitude = r.code & 0x7FFFFFFF
            seen.add("inf" if magnitude == 0x7F800000 else "sub" if 0 < magnitude < 0x00800000 else "other")
    assert {"inf", "sub"} <= seen  # the sample reached both ends


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp4_e2m1", "mxint8", "mx9", "msfp12", "nvfp4"])
def test_nan_scale(name, mode):
    fmt = BLOCKS[name]
    nan_scale, one_scale = (0xFF, 127) if fmt.scale == "e8m0" else (0x7F, 0x38)  # E8M0 / UE4M3 NaN
    sub = (0,) * (fmt.k // fmt.subblock) if fmt.subblock else ()
    ones = QuantizedBlock(one_scale, sub, (ONE[fmt.element],) * fmt.k)
    nan_ones = QuantizedBlock(nan_scale, sub, ones.codes)
    nan_zeros = QuantizedBlock(nan_scale, sub, (0,) * fmt.k)  # a NaN scale wins even over zero elements
    for a, b in [(nan_ones, ones), (ones, nan_ones), (nan_zeros, nan_zeros), (nan_zeros, ones)]:
        assert block_value(name, a, name, b) == NAN
        assert dot(a, b, name, name, MODES[mode]).code == 0x7FC00000
        assert dot_general([ones, a], [ones, b], name, name, MODES[mode]).code == 0x7FC00000


@pytest.mark.parametrize("mode", sorted(MODES))
def test_nan_scale_beats_special_elements(mode):
    # a NaN scale gives NaN even when the elements alone would give +-Inf (E5M2 0x7C = +Inf)
    inf_nan_scale, one = block(0xFF, [0x7C], 32), block(127, [0x3C], 32)
    for a, b in [(inf_nan_scale, one), (one, inf_nan_scale), (block(127, [0xFC], 32), block(0xFF, [0x3C], 32))]:
        assert dot(a, b, "mxfp8_e5m2", accumulator=MODES[mode]).code == 0x7FC00000


# Specials, by hand: (codes_a, codes_b, expected) with E4M3 or E5M2 elements at scale 1.
# E5M2: 0x7C +Inf, 0xFC -Inf, 0x7D/0x7E/0x7F/0xFD/0xFE/0xFF NaN, 0x3C 1.0, 0xBC -1.0, 0x7B 57344
SPECIAL_CASES = [
    ("mxfp8_e5m2", [0x7C], [0x3C], 0x7F800000),  # Inf * 1 = +Inf
    ("mxfp8_e5m2", [0xFC], [0x3C], 0xFF800000),  # -Inf * 1
    ("mxfp8_e5m2", [0x7C], [0xBC], 0xFF800000),  # Inf * -1: sign of the product
    ("mxfp8_e5m2", [0xFC, 0x7B], [0xBC, 0xFB], 0x7F800000),  # -Inf * -1 + (-huge): still +Inf
    ("mxfp8_e5m2", [0xFC], [0xFC], 0x7F800000),  # -Inf * -Inf = +Inf
    ("mxfp8_e5m2", [0xFC, 0xFC], [0xFC, 0x7C], 0x7FC00000),  # (+Inf) + (-Inf) from Inf * Inf products
    ("mxfp8_e5m2", [0x7C], [0x00], 0x7FC00000),  # Inf * 0 = NaN
    ("mxfp8_e5m2", [0x80], [0xFC], 0x7FC00000),  # -0 * -Inf = NaN
    ("mxfp8_e5m2", [0x3C, 0x7C], [0x3C, 0x80], 0x7FC00000),  # Inf * -0 beside a finite product
    ("mxfp8_e5m2", [0x7C, 0x7C], [0x3C, 0xBC], 0x7FC00000),  # +Inf and -Inf in one block
    ("mxfp8_e5m2", [0x7C, 0xFC], [0x3C, 0x3C], 0x7FC00000),
    ("mxfp8_e5m2", [0x7C, 0x7C], [0x3C, 0x7C], 0x7F800000),  # two +Inf products
    ("mxfp8_e5m2", [0x7D], [0x3C], 0x7FC00000),
    ("mxfp8_e5m2", [0x7E], [0x00], 0x7FC00000),  # NaN * 0
    ("mxfp8_e5m2", [0x7F, 0x7C], [0x3C, 0x3C], 0x7FC00000),  # NaN beats Inf
    ("mxfp8_e5m2", [0xFD], [0x3C], 0x7FC00000),  # negative NaNs give the canonical (positive) NaN
    ("mxfp8_e5m2", [0xFE], [0x3C], 0x7FC00000),
    ("mxfp8_e5m2", [0xFF], [0x3C], 0x7FC00000),
    ("mxfp8_e4m3", [0x7F], [0x38], 0x7FC00000),  # E4M3 NaN
    ("mxfp8_e4m3", [0x38, 0xFF], [0x38, 0x00], 0x7FC00000),  # -NaN * 0
]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", range(len(SPECIAL_CASES)))
def test_special_elements(case, mode):
    name, ca, cb, bits = SPECIAL_CASES[case]
    a, b = block(127, ca, 32), block(127, cb, 32)
    assert ieee_bits(block_value(name, a, name, b)) == bits  # the hand bits agree with the oracle
    assert dot(a, b, name, name, MODES[mode]).code == bits


@pytest.mark.parametrize("mode", sorted(MODES))
def test_special_elements_mixed_e4m3_e5m2_and_random(mode):
    # E5M2 Inf times E4M3 finite, in both operand orders
    a, b = block(127, [0x38, 0x7E], 32), block(127, [0xFC, 0x7B], 32)
    assert dot(a, b, "mxfp8_e4m3", "mxfp8_e5m2", MODES[mode]).code == 0xFF800000
    assert dot(b, a, "mxfp8_e5m2", "mxfp8_e4m3", MODES[mode]).code == 0xFF800000
    assert dot(block(127, [0x7F], 32), b, "mxfp8_e4m3", "mxfp8_e5m2", MODES[mode]).code == 0x7FC00000
    # random blocks with a few specials at random places
    rng = random.Random("specials" + mode)
    for name_a, name_b in [("mxfp8_e5m2", "mxfp8_e5m2"), ("mxfp8_e4m3", "mxfp8_e5m2"), ("mxfp8_e4m3", "mxfp8_e4m3")]:
        specials = [0x7C, 0xFC, 0x7F, 0xFF, 0x7E] if name_a == "mxfp8_e5m2" else [0x7F, 0xFF]
        for _ in range(25):
            a, b = random_block(rng, name_a), random_block(rng, name_b)
            codes = list(a.codes)
            for _ in range(rng.randint(1, 3)):
                codes[rng.randrange(32)] = rng.choice(specials)
            a = QuantizedBlock(a.scale, (), tuple(codes))
            assert dot(a, b, name_a, name_b, MODES[mode]).code == ieee_bits(block_value(name_a, a, name_b, b))


def test_special_blocks_across_blocks():
    one = block(127, [0x3C], 32)
    pinf, ninf, nan = block(127, [0x7C], 32), block(127, [0xFC], 32), block(127, [0x7D], 32)
    for across in ("fp32", "exact"):
        acc = Accumulator(across_blocks=across)
        assert dot_general([pinf, one], [one, one], "mxfp8_e5m2", accumulator=acc).code == 0x7F800000
        assert dot_general([pinf, ninf], [one, one], "mxfp8_e5m2", accumulator=acc).code == 0x7FC00000
        assert dot_general([one, nan], [one, one], "mxfp8_e5m2", accumulator=acc).code == 0x7FC00000
        assert dot_general([ninf, one], [one, one], "mxfp8_e5m2", accumulator=acc).code == 0xFF800000


# ================================================================================================
# 2. aligned mode, by hand (MXFP8 E4M3, scales 1, b = 1.0 where a is nonzero)
# ================================================================================================
# E4M3 codes: 1.0 = 0 0111 000 = 0x38; 0.5 = 0x30; 0.25 = 0x28; 0.4375 = 1.75*2^-2 = 0 0101 110 = 0x2E;
# 0.375 = 1.5*2^-2 = 0x2C; 0.625 = 1.25*2^-1 = 0 0110 010 = 0x32; negatives set bit 7.
# Every product has an element of exponent 0 and one of exponent <= 0, so the anchor is 0 and, with
# F = 2, the register LSB weighs 2^-2: 1.0 is 4 LSBs.

ALIGNED_HAND = [
    # codes_a, exact fp32, truncate (register, bits), rne (register, bits)
    # 1 + 0.4375: 0.4375 = 1.75 LSBs -> trunc 1, rne 2; 4+1 = 5 -> 1.25, 4+2 = 6 -> 1.5
    ([0x38, 0x2E], 0x3FB80000, (5, 0x3FA00000), (6, 0x3FC00000)),
    # 1 - 0.4375: -1.75 LSBs -> trunc (magnitude toward zero) -1, rne -2; 3 -> 0.75, 2 -> 0.5
    # (flooring would give -2 and 0.5: truncation is toward zero, not toward -Inf)
    ([0x38, 0xAE], 0x3F100000, (3, 0x3F400000), (2, 0x3F000000)),
    # 1 + 0.375: 1.5 LSBs, a tie: trunc 1 -> 1.25, rne to even 2 -> 1.5
    ([0x38, 0x2C], 0x3FB00000, (5, 0x3FA00000), (6, 0x3FC00000)),
    # 1 + 0.625: 2.5 LSBs, a tie: trunc 2, rne to even 2 -> both 1.5
    ([0x38, 0x32], 0x3FD00000, (6, 0x3FC00000), (6, 0x3FC00000)),
]


@pytest.mark.parametrize("case", range(len(ALIGNED_HAND)))
def test_aligned_truncate_vs_rne(case):
    codes_a, exact_bits, (reg_t, bits_t), (reg_r, bits_r) = ALIGNED_HAND[case]
    a, b = e4(127, codes_a, 127, [0x38] * len(codes_a))
    assert ieee_bits(block_value("mxfp8_e4m3", a, "mxfp8_e4m3", b)) == exact_bits
    assert dot(a, b, "mxfp8_e4m3").code == exact_bits
    for rounding, reg, bits in (("truncate", reg_t, bits_t), ("rne", reg_r, bits_r)):
        r = dot(a, b, "mxfp8_e4m3", accumulator=Accumulator(mode="aligned", frac_bits=2, shift_rounding=rounding))
        assert (r.code, r.accumulator, r.lsb_exponent, r.anchor) == (bits, reg, -2, 0), rounding
    # the scales multiply the register exactly: a scaled by 2^3, b by 2^-1 -> x4
    a4 = QuantizedBlock(130, (), a.codes)
    b4 = QuantizedBlock(126, (), b.codes)
    r = dot(a4, b4, "mxfp8_e4m3", accumulator=Accumulator(mode="aligned", frac_bits=2))
    assert r.accumulator == reg_t and r.exact.value == 4 * reg_t * Fraction(1, 4)


ALIGNED_OVERFLOW = [
    # F = 2, W = 4: register range [-8, 7]; 1.0 = 4 LSBs
    # codes_a, exact bits, saturate (register, bits), wrap (register, bits)
    # 4 + 4 = 8: saturates to 7 (1.75), wraps to -8 (-2.0); exact 2.0
    ([0x38, 0x38], 0x40000000, (7, 0x3FE00000), (-8, 0xC0000000)),
    # 4, 8 -> 7 | -8, then -4: saturate 3 (0.75); wrap -12 -> 4 (1.0) = exact again
    ([0x38, 0x38, 0xB8], 0x3F800000, (3, 0x3F400000), (4, 0x3F800000)),
    # -4, -8, -12 -> saturate -8 (-2.0); wrap +4 (1.0); exact -3.0
    ([0xB8, 0xB8, 0xB8], 0xC0400000, (-8, 0xC0000000), (4, 0x3F800000)),
]


@pytest.mark.parametrize("case", range(len(ALIGNED_OVERFLOW)))
def test_aligned_saturate_vs_wrap(case):
    codes_a, exact_bits, (reg_s, bits_s), (reg_w, bits_w) = ALIGNED_OVERFLOW[case]
    a, b = e4(127, codes_a, 127, [0x38] * len(codes_a))
    assert dot(a, b, "mxfp8_e4m3").code == exact_bits == ieee_bits(block_value("mxfp8_e4m3", a, "mxfp8_e4m3", b))
    for overflow, reg, bits in (("saturate", reg_s, bits_s), ("wrap", reg_w, bits_w)):
        acc = Accumulator(mode="aligned", frac_bits=2, width=4, overflow=overflow)
        r = dot(a, b, "mxfp8_e4m3", accumulator=acc)
        assert (r.code, r.accumulator, r.lsb_exponent, r.anchor) == (bits, reg, -2, 0), overflow
        # one more bit (range [-16, 15]) holds every partial sum: exact
        wide = dot(a, b, "mxfp8_e4m3", accumulator=Accumulator(mode="aligned", frac_bits=2, width=5, overflow=overflow))
        assert wide.code == exact_bits


ANCHOR_CASES = [
    # name_a, block a, name_b, block b, anchor, register with F = 6 (truncate), exact value
    # 448 (E = 8) meets a zero: it does not set the anchor; 1 * 1 has e = 0
    ("mxfp8_e4m3", block(127, [0x7E, 0x38], 32), "mxfp8_e4m3", block(127, [0x00, 0x38], 32), 0, 64, Fraction(1)),
    ("mxfp8_e4m3", block(127, [0x7E, 0x38], 32), "mxfp8_e4m3", block(127, [0x80, 0x38], 32), 0, 64, Fraction(1)),
    # 0.25 * 0.5 (e = -3) and 0.5 * 0.5 (e = -2): anchor -2; 0.125 + 0.25 on the grid 2^-8: 32 + 64
    ("mxfp8_e4m3", block(127, [0x28, 0x30], 32), "mxfp8_e4m3", block(127, [0x30, 0x30], 32), -2, 96, Fraction(3, 8)),
    # subnormal 2^-9 * 2^-9: subnormals use E = -6, so the anchor is -12, not -18; 2^-18 = 1 LSB of 2^-18
    ("mxfp8_e4m3", block(127, [0x01], 32), "mxfp8_e4m3", block(127, [0x01], 32), -12, 1, TWO**-18),
    # all zero: anchor 0, register 0
    ("mxfp8_e4m3", block(127, [], 32), "mxfp8_e4m3", block(127, [0x38], 32), 0, 0, Fraction(0)),
    # MXINT8: E = 0 for every element, even 1/64: anchor 0; 1/64 * 1/64 = 2^-12 < 2^-6: truncated to 0
    ("mxint8", block(127, [0x01], 32), "mxint8", block(127, [0x01], 32), 0, 0, Fraction(0)),
    # MX9, both pairs' tau = 1: E = -1 each, anchor -2; 1.0/2 * 1.0/2 = 1/4 = 2^-2 -> 64 LSBs of 2^-8
    ("mx9", block(127, [0x40], 16, (1,) * 8), "mx9", block(127, [0x40], 16, (1,) * 8), -2, 64, Fraction(1, 4)),
    # E5M2 57344 (E = 15) x E4M3 448 (E = 8): anchor 23; product 3.0625 * 2^23 = 196 * 2^-6 LSBs of 2^17
    ("mxfp8_e5m2", block(127, [0x7B], 32), "mxfp8_e4m3", block(127, [0x7E], 32), 23, 196, Fraction(57344 * 448)),
]


@pytest.mark.parametrize("case", range(len(ANCHOR_CASES)))
def test_aligned_anchor_and_register_fields(case):
    name_a, a, name_b, b, anchor, register, value = ANCHOR_CASES[case]
    assert anchor_of(name_a, a, name_b, b) == anchor
    r = dot(a, b, name_a, name_b, Accumulator(mode="aligned", frac_bits=6))
    assert (r.anchor, r.lsb_exponent, r.accumulator) == (anchor, anchor - 6, register)
    assert r.exact.value == value == register * TWO ** (anchor - 6)
    assert dot(a, b, name_a, name_b).anchor == anchor  # exact mode reports the same anchor
    assert dot(a, b, name_a, name_b, Accumulator(mode="fp32_sequential")).anchor == anchor


# ================================================================================================
# 3. aligned == exact when F covers the products' exponent span
# ================================================================================================


@given(
    st.sampled_from(PAIRS),
    st.integers(0, 2**32),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from(["truncate", "rne"]),
)
@SETTINGS
def test_aligned_equals_exact_with_enough_frac_bits(pair, seed, slack, bounded, shift_rounding):
    name_a, name_b = pair
    rng = random.Random(seed)
    a, b = random_block(rng, name_a, zero_prob=rng.choice([0, 0.3, 0.8])), random_block(rng, name_b)
    es = [ea + eb for ea, eb in zip(exponents(name_a, a), exponents(name_b, b)) if ea is not None and eb is not None]
    fa, fb = frac_bits(BLOCKS[name_a].element), frac_bits(BLOCKS[name_b].element)
    frac = fa + fb + (max(es) - min(es) if es else 0) + slack
    # |product| / 2^e_max <= 4, so 32 of them stay below 2^7 register units of 2^e_max
    width = frac + 10 + slack if bounded else None
    acc = Accumulator(
        mode="aligned",
        frac_bits=frac,
        width=width,
        shift_rounding=shift_rounding,
        overflow=rng.choice(["saturate", "wrap"]),
    )
    r = dot(a, b, name_a, name_b, acc)
    exact = dot(a, b, name_a, name_b)
    expected = block_value(name_a, a, name_b, b)
    assert r.code == exact.code == ieee_bits(expected)
    assert r.exact.value == expected
    assert r.anchor == anchor_of(name_a, a, name_b, b) and r.lsb_exponent == r.anchor - frac
    assert r.accumulator * TWO**r.lsb_exponent == exact.accumulator * TWO**exact.lsb_exponent


# ================================================================================================
# 4. Does the error against exact shrink as F grows?
# ================================================================================================


def aligned_error(a, b, frac, name_a="mxfp8_e4m3", name_b="mxfp8_e4m3", rounding="truncate"):
    r = dot(a, b, name_a, name_b, Accumulator(mode="aligned", frac_bits=frac, shift_rounding=rounding))
    return abs(r.exact.value - block_value(name_a, a, name_b, b)), r


def test_error_can_grow_with_frac_bits_truncate_mixed_signs():
    """Counterexample to "the error never grows with F" (truncate, mixed signs).

    Products +1, +0.5, -0.375 (E4M3 0x38, 0x30, 0xAC times 1.0), anchor 0, exact sum 1.125.
    F = 0 (LSB 1): 1 + trunc(0.5) + trunc(-0.375) = 1 + 0 + 0 = 1; error 0.125: the two dropped
    parts (+0.5 and -0.375) cancel each other.
    F = 1 (LSB 0.5): 2 + 1 + trunc(-0.75) = 3 -> 1.5; error 0.375: +0.5 is now exact, so nothing
    offsets the -0.375 that is still dropped.
    """
    a, b = e4(127, [0x38, 0x30, 0xAC], 127, [0x38] * 3)
    assert block_value("mxfp8_e4m3", a, "mxfp8_e4m3", b) == Fraction(9, 8)
    err0, r0 = aligned_error(a, b, 0)
    err1, r1 = aligned_error(a, b, 1)
    assert (r0.accumulator, r0.code, err0) == (1, 0x3F800000, Fraction(1, 8))
    assert (r1.accumulator, r1.code, err1) == (3, 0x3FC00000, Fraction(3, 8))
    assert err1 > err0
    # fa + fb + (e_max - e_min) = 3 + 3 + 2 = 8 guarantees exactness; F = 3 already holds 0.375 = 3 * 2^-3
    assert aligned_error(a, b, 3)[0] == 0 and aligned_error(a, b, 8)[0] == 0


def test_error_can_grow_with_frac_bits_rne_same_sign():
    """With rne the error can grow even when all products have the same sign.

    Products 1 + 0.625 + 0.25 (0x38, 0x32, 0x28 times 1.0) = 1.875, anchor 0.
    F = 0: 1 + rne(0.625) + rne(0.25) = 1 + 1 + 0 = 2; error 0.125 (the two roundings cancel).
    F = 1: 2 + rne(1.25) + rne(0.5) = 2 + 1 + 0 (tie to even) = 3 -> 1.5; error 0.375.
    """
    a, b = e4(127, [0x38, 0x32, 0x28], 127, [0x38] * 3)
    err0, r0 = aligned_error(a, b, 0, rounding="rne")
    err1, r1 = aligned_error(a, b, 1, rounding="rne")
    assert (r0.accumulator, err0, r1.accumulator, err1) == (2, Fraction(1, 8), 3, Fraction(3, 8))


def negate_code(element, code):
    if element == "int8":
        return (-(code - 256 if code >= 128 else code)) & 0xFF
    return code ^ (1 << (code_bits(element) - 1))


def nonnegative_block(rng, name, zero_prob=0.2):
    fmt = BLOCKS[name]
    blk = random_block(rng, name, zero_prob=zero_prob)
    codes = tuple(c if decode_element(fmt.element, c) >= 0 else negate_code(fmt.element, c) for c in blk.codes)
    if fmt.element == "int8":
        codes = tuple(min(c, 0x7F) for c in codes)  # 0x80 (-2) has no positive twin
    return QuantizedBlock(blk.scale, blk.subscales, codes)


def exact_frac_bits(name_a, a, name_b, b) -> int:
    """fa + fb + (e_max - e_min): the F from which aligned mode is exact (section 3)."""
    es = [ea + eb for ea, eb in zip(exponents(name_a, a), exponents(name_b, b)) if ea is not None and eb is not None]
    return frac_bits(BLOCKS[name_a].element) + frac_bits(BLOCKS[name_b].element) + (max(es) - min(es) if es else 0)


@given(st.sampled_from(PAIRS), st.integers(0, 2**32), st.booleans(), st.booleans())
@SETTINGS
def test_error_never_grows_truncate_same_sign(pair, seed, negate_a, negate_b):
    """Truncation of a nonnegative value to a grid 2^-F is nondecreasing in F (the coarse grid is part
    of the fine one), so with all products of one sign the sum's magnitude only grows toward exact."""
    name_a, name_b = pair
    rng = random.Random(seed)
    a, b = nonnegative_block(rng, name_a), nonnegative_block(rng, name_b)
    if negate_a:
        a = QuantizedBlock(a.scale, a.subscales, tuple(negate_code(BLOCKS[name_a].element, c) for c in a.codes))
    if negate_b:
        b = QuantizedBlock(b.scale, b.subscales, tuple(negate_code(BLOCKS[name_b].element, c) for c in b.codes))
    previous = None
    for frac in range(exact_frac_bits(name_a, a, name_b, b) + 2):
        err, _ = aligned_error(a, b, frac, name_a, name_b)
        assert previous is None or err <= previous, frac
        previous = err
    assert previous == 0


@given(st.sampled_from(PAIRS), st.integers(0, 2**32), st.sampled_from(["truncate", "rne"]))
@SETTINGS
def test_error_bound(pair, seed, rounding):
    """|error| <= n * 2^(anchor - F) (truncate) or n * 2^(anchor - F - 1) (rne), times the scales,
    for n nonzero products (<= block size), mixed signs, no overflow."""
    name_a, name_b = pair
    rng = random.Random(seed)
    a, b = random_block(rng, name_a), random_block(rng, name_b)
    scale = scale_factor(name_a, a) * scale_factor(name_b, b)
    n = sum(1 for x, y in zip(elements(name_a, a), elements(name_b, b)) if x * y)
    anchor = anchor_of(name_a, a, name_b, b)
    for frac in range(0, 16, 3):
        err, r = aligned_error(a, b, frac, name_a, name_b, rounding)
        assert r.anchor == anchor
        unit = TWO ** (anchor - frac) * scale * (1 if rounding == "truncate" else Fraction(1, 2))
        assert err <= n * unit, (frac, err, n * unit)
        assert n <= BLOCKS[name_a].k


LARGEST_POWER_OF_TWO = {
    "e4m3": 0x78,
    "e5m2": 0x78,
    "e3m2": 0x1C,
    "e2m3": 0x18,
    "e2m1": 0x6,
    "int8": 0x40,
    "sm7": 0x40,
    "sm4": 0x08,
    "sm2": 0x2,
    "sm3": 0x4,
}


def test_oracle_largest_powers_of_two():
    # E4M3 256 = 2^8 (E = emax), E5M2 32768 = 2^15, E3M2 16, E2M3 4, E2M1 4, integers 1.0
    expected = {
        "e4m3": 256,
        "e5m2": 32768,
        "e3m2": 16,
        "e2m3": 4,
        "e2m1": 4,
        "int8": 1,
        "sm7": 1,
        "sm4": 1,
        "sm2": 1,
        "sm3": 1,
    }
    assert {k: decode_element(k, c) for k, c in LARGEST_POWER_OF_TWO.items()} == expected


@given(st.sampled_from(PAIRS), st.integers(0, 2**32), st.sampled_from(["truncate", "rne"]), st.booleans())
@SETTINGS
def test_product_placement_error_never_grows(pair, seed, rounding, with_anchor):
    """One product at a time: either alone in its block, or below an anchor product that is an exact
    power of two (placed exactly at every F >= 0), so the block's error is this product's placement
    error. Both roundings pick from nested grids, so it never grows with F."""
    name_a, name_b = pair
    fmt_a, fmt_b = BLOCKS[name_a], BLOCKS[name_b]
    rng = random.Random(seed)
    i = rng.randrange(2, fmt_a.k)
    ca = cb = 0
    while not (decode_element(fmt_a.element, ca) and decode_element(fmt_b.element, cb)):
        ca, cb = random_code(rng, fmt_a.element, zero_prob=0), random_code(rng, fmt_b.element, zero_prob=0)

    def make(name, code):
        fmt = BLOCKS[name]
        codes = [0] * fmt.k
        codes[i] = code
        if with_anchor:
            codes[0] = LARGEST_POWER_OF_TWO[fmt.element]
        sub = (0,) + tuple(rng.randrange(2) for _ in range(fmt.k // fmt.subblock - 1)) if fmt.subblock else ()
        return QuantizedBlock(127 if fmt.scale == "e8m0" else 0x38, sub, tuple(codes))

    a, b = make(name_a, ca), make(name_b, cb)
    anchor = anchor_of(name_a, a, name_b, b)
    previous = None
    for frac in range(exact_frac_bits(name_a, a, name_b, b) + 2):
        err, _r = aligned_error(a, b, frac, name_a, name_b, rounding)
        assert previous is None or err <= previous, frac
        assert err <= TWO ** (anchor - frac) / (1 if rounding == "truncate" else 2)
        previous = err
    assert previous == 0


# ================================================================================================
# 5. Exact accumulator widths (formats-and-datapath.md 5.1; 2.4 for the microexponent formats)
# ================================================================================================

WIDTHS = [
    # name, max code (worst case: max magnitude, same-sign products), signed width, anchor, product LSB
    ("mxfp8_e4m3", 0x7E, 42, 16, -18),  # 32 * (448 * 2^9)^2 = 32 * 229376^2
    ("mxfp8_e5m2", 0x7B, 70, 30, -32),
    ("mxfp6_e3m2", 0x1F, 24, 8, -8),
    ("mxfp6_e2m3", 0x1F, 18, 4, -6),
    ("mxfp4_e2m1", 0x7, 14, 4, -2),
    ("mxint8", 0x80, 21, 0, -12),  # (-2) * (-2) = +4 = 2^14 LSBs; 32 of them = 2^19
    ("mx9", 0x7F, 21, 0, -14),  # section 2.4: 127^2 << 2 (tau = 0 on the grid of tau = 1+1), 16 terms
    ("mx6", 0x0F, 15, 0, -8),
    ("mx4", 0x03, 11, 0, -4),
]


@pytest.mark.parametrize("name, top, width, anchor, lsb", WIDTHS)
def test_exact_accumulator_width(name, top, width, anchor, lsb):
    fmt = BLOCKS[name]
    sub = (0,) * (fmt.k // fmt.subblock) if fmt.subblock else ()
    a = QuantizedBlock(127, sub, (top,) * fmt.k)
    r = dot(a, a, name)
    expected = block_value(name, a, name, a)
    assert r.exact.value == expected and r.code == ieee_bits(expected)
    assert (r.anchor, r.lsb_exponent) == (anchor, lsb) and lsb == product_lsb(name, name)
    assert r.accumulator > 0 and r.accumulator.bit_length() + 1 == width
    if fmt.element != "int8":  # all products negative: the same width
        neg = QuantizedBlock(127, sub, (negate_code(fmt.element, top),) * fmt.k)
        rn = dot(neg, a, name)
        assert rn.accumulator == -r.accumulator and (-rn.accumulator).bit_length() + 1 == width
    frac = anchor - lsb  # the aligned register's grid is the fixed product grid
    for overflow in ("saturate", "wrap"):
        fits = dot(a, a, name, accumulator=Accumulator(mode="aligned", frac_bits=frac, width=width, overflow=overflow))
        assert (fits.code, fits.accumulator, fits.lsb_exponent) == (r.code, r.accumulator, lsb)
        short = dot(
            a, a, name, accumulator=Accumulator(mode="aligned", frac_bits=frac, width=width - 1, overflow=overflow)
        )
        assert short.accumulator != r.accumulator and short.code != r.code
        bound = 1 << (width - 2)
        assert -bound <= short.accumulator < bound
        if overflow == "saturate":
            assert short.accumulator == bound - 1


# ================================================================================================
# 6. fp32_sequential: a chain of fp32 additions of the exact products, in index order
# ================================================================================================
# E5M2: 2^12 = 0 11011 00 = 0x6C (field 27 = 12 + 15); 1.0 = 0x3C.


def fp32_chain(name_a, a, name_b, b):
    total = Fraction(0)
    for x, y in zip(elements(name_a, a), elements(name_b, b)):
        total = round_to(total + x * y)
    return total


SEQUENTIAL = Accumulator(mode="fp32_sequential")


def test_fp32_sequential_order_matters():
    # 2^24 + 1 -> tie between 2^24 and 2^24 + 2 -> even 2^24; + 1 again -> 2^24. Exact: 2^24 + 2.
    a, b = block(127, [0x6C, 0x3C, 0x3C], 32), block(127, [0x6C, 0x3C, 0x3C], 32)
    r = dot(a, b, "mxfp8_e5m2", accumulator=SEQUENTIAL)
    assert r.code == 0x4B800000 == ieee_bits(fp32_chain("mxfp8_e5m2", a, "mxfp8_e5m2", b))  # 2^24
    assert (r.accumulator, r.lsb_exponent) == (1 << 23, 1)  # the fp32 register: 2^23 ulps of 2
    assert dot(a, b, "mxfp8_e5m2").code == 0x4B800001  # exact: 2^24 + 2 (ulp 2 at 2^24)
    # the other order: 1 + 1 = 2, then 2^24 + 2 is exact
    a2, b2 = block(127, [0x3C, 0x3C, 0x6C], 32), block(127, [0x3C, 0x3C, 0x6C], 32)
    assert dot(a2, b2, "mxfp8_e5m2", accumulator=SEQUENTIAL).code == 0x4B800001
    # the fp32 sum is scaled afterwards, exactly: 2^24 * 2^3 = 2^27 -> field 154 = 0x9A -> 0x4D000000
    a3 = QuantizedBlock(130, (), a.codes)
    assert dot(a3, b, "mxfp8_e5m2", accumulator=SEQUENTIAL).code == 0x4D000000


@pytest.mark.parametrize(
    "name_a, name_b",
    [
        ("mxfp8_e5m2", "mxfp8_e5m2"),
        ("mxfp8_e4m3", "mxfp8_e5m2"),
        ("mxfp8_e4m3", "mxfp8_e4m3"),
        ("mxint8", "mxint8"),
        ("mxfp6_e3m2", "mxfp4_e2m1"),
        ("mx9", "mx9"),
        ("nvfp4", "nvfp4"),
    ],
)
def test_fp32_sequential_random(name_a, name_b):
    rng = random.Random("seq" + name_a + name_b)
    differs = 0
    for _ in range(30):
        a, b = random_block(rng, name_a), random_block(rng, name_b)
        chain = fp32_chain(name_a, a, name_b, b)
        expected = ieee_bits(chain * scale_factor(name_a, a) * scale_factor(name_b, b))
        assert dot(a, b, name_a, name_b, SEQUENTIAL).code == expected
        differs += expected != ieee_bits(block_value(name_a, a, name_b, b))
    if name_a == name_b == "mxfp8_e5m2":
        assert differs  # the chain's roundings show in this sample


# ================================================================================================
# 7. DotGeneral: across_blocks fp32 (per-block rounding, fp32 adds in block order) vs exact
# ================================================================================================


def test_across_blocks_fp32_vs_exact_by_hand():
    # blocks 2^24, 1, 1 (E5M2 2^12 * 2^12 and 1 * 1): fp32 across: 2^24 + 1 -> 2^24 (tie, even),
    # + 1 -> 2^24 = 0x4B800000; exact across: 2^24 + 2 = 0x4B800001
    big, one = block(127, [0x6C], 32), block(127, [0x3C], 32)
    blocks = [big, one, one]
    assert dot_general(blocks, blocks, "mxfp8_e5m2").code == 0x4B800000
    assert dot_general(blocks, blocks, "mxfp8_e5m2", accumulator=Accumulator(across_blocks="exact")).code == 0x4B800001
    # block 1 = 1 + 2^-30 (E5M2 2^-15 = 0 00000 10 = 0x02, a subnormal), rounded per block to 1.0;
    # block 2 = -1: fp32 across gives +0; exact across gives 2^-30 = field 97 -> 0x30800000
    a = [block(127, [0x3C, 0x02], 32), block(127, [0xBC], 32)]
    b = [block(127, [0x3C, 0x02], 32), block(127, [0x3C], 32)]
    assert dot_general(a, b, "mxfp8_e5m2").code == 0x00000000
    assert dot_general(a, b, "mxfp8_e5m2", accumulator=Accumulator(across_blocks="exact")).code == 0x30800000


def test_across_blocks_fp32_rounds_each_block_to_the_output_format():
    # fp16 output. Block 1 = 1 + 2^-11 (E5M2 2^-6 = 0x24, 2^-5 = 0x28): half an fp16 ulp at 1, a tie,
    # rounds to 1.0. Block 2 = 2^-11 (fp16-exact). fp32 sum 1 + 2^-11, to fp16: the same tie -> 1.0
    # (0x3C00). Exact across: 1 + 2^-10 = 0x3C01. (Rounding the blocks only to fp32 would give 0x3C01.)
    a = [block(127, [0x3C, 0x24], 32), block(127, [0x24], 32)]
    b = [block(127, [0x3C, 0x28], 32), block(127, [0x28], 32)]
    fp16 = Accumulator(output="fp16")
    assert dot_general(a, b, "mxfp8_e5m2", accumulator=fp16).code == 0x3C00
    assert dot_general(a, b, "mxfp8_e5m2", accumulator=Accumulator(output="fp16", across_blocks="exact")).code == 0x3C01


@pytest.mark.parametrize("out", sorted(IEEE))
@pytest.mark.parametrize(
    "name_a, name_b", [("mxfp8_e5m2", "mxfp8_e5m2"), ("mxfp8_e4m3", "mxfp6_e2m3"), ("mx9", "mx6"), ("mxint8", "mxint8")]
)
def test_across_blocks_random(name_a, name_b, out):
    rng = random.Random("across" + name_a + name_b + out)
    differs = 0
    for _ in range(12):
        n = rng.randint(1, 6)
        scales = list(range(100, 140))
        blocks_a = [random_block(rng, name_a, scales) for _ in range(n)]
        blocks_b = [random_block(rng, name_b, scales) for _ in range(n)]
        values = [block_value(name_a, a, name_b, b) for a, b in zip(blocks_a, blocks_b)]
        total = round_to(values[0], out)
        for v in values[1:]:
            total = fp32_add(total, round_to(v, out))
        expected_fp32 = ieee_bits(total, out)
        expected_exact = ieee_bits(sum(values), out)
        assert dot_general(blocks_a, blocks_b, name_a, name_b, Accumulator(output=out)).code == expected_fp32
        assert (
            dot_general(blocks_a, blocks_b, name_a, name_b, Accumulator(output=out, across_blocks="exact")).code
            == expected_exact
        )
        differs += expected_fp32 != expected_exact
    if out == "fp32" and name_a == "mxfp8_e5m2":
        assert differs


# ================================================================================================
# 8. Output options: bf16 / fp16, rounding modes, ftz, overflow, NaN
# ================================================================================================


@pytest.mark.parametrize("mode", ROUNDINGS)
@pytest.mark.parametrize("out", sorted(IEEE))
def test_output_formats_and_roundings_random(out, mode):
    rng = random.Random("out" + out + mode)
    acc = Accumulator(output=out, output_rounding=mode)
    for name_a, name_b in [("mxfp8_e5m2", "mxfp8_e5m2"), ("mxfp8_e4m3", "mxfp8_e4m3"), ("mx9", "mx9")]:
        for _ in range(12):
            a, b = random_block(rng, name_a, list(range(100, 150))), random_block(rng, name_b, list(range(100, 150)))
            assert dot(a, b, name_a, name_b, acc).code == ieee_bits(block_value(name_a, a, name_b, b), out, mode)


# E5M2: 0x0E = 0 00011 10 = 1.5 * 2^-12, 0x0C = 2^-12. 1*1 + 1.5*2^-24 = 1 + 0.75 ulp (fp32 ulp at 1 = 2^-23).
ROUNDING_HAND = [
    # codes_a, codes_b, {mode: bits}
    (
        [0x3C, 0x0E],
        [0x3C, 0x0C],
        {"rne": 0x3F800001, "rna": 0x3F800001, "rtz": 0x3F800000, "rup": 0x3F800001, "rdn": 0x3F800000},
    ),
    (
        [0xBC, 0x8E],
        [0x3C, 0x0C],
        {"rne": 0xBF800001, "rna": 0xBF800001, "rtz": 0xBF800000, "rup": 0xBF800000, "rdn": 0xBF800001},
    ),
    # 1 + 2^-24: exactly half an ulp: rne to even (1.0), rna away
    (
        [0x3C, 0x0C],
        [0x3C, 0x0C],
        {"rne": 0x3F800000, "rna": 0x3F800001, "rtz": 0x3F800000, "rup": 0x3F800001, "rdn": 0x3F800000},
    ),
]


@pytest.mark.parametrize("mode", ROUNDINGS)
@pytest.mark.parametrize("case", range(len(ROUNDING_HAND)))
def test_output_rounding_by_hand(case, mode):
    ca, cb, bits = ROUNDING_HAND[case]
    a, b = block(127, ca, 32), block(127, cb, 32)
    assert ieee_bits(block_value("mxfp8_e5m2", a, "mxfp8_e5m2", b), mode=mode) == bits[mode]
    assert dot(a, b, "mxfp8_e5m2", accumulator=Accumulator(output_rounding=mode)).code == bits[mode]


def test_ftz():
    one = [0x38]
    # 2^-127: fp32 subnormal 0x00400000; ftz flushes it to +0, and -2^-127 to -0
    a, b = e4(0x00, one, 0x7F, one)
    assert dot(a, b, "mxfp8_e4m3").code == 0x00400000
    assert dot(a, b, "mxfp8_e4m3", accumulator=Accumulator(ftz=True)).code == 0x00000000
    an, _ = e4(0x00, [0xB8], 0x7F, one)
    assert dot(an, b, "mxfp8_e4m3", accumulator=Accumulator(ftz=True)).code == 0x80000000
    # bf16: 2^-127 is subnormal there too (0x0040); fp16: 2^-15 is subnormal (0x0200)
    assert dot(a, b, "mxfp8_e4m3", accumulator=Accumulator(output="bf16")).code == 0x0040
    assert dot(a, b, "mxfp8_e4m3", accumulator=Accumulator(output="bf16", ftz=True)).code == 0x0000
    assert dot(an, b, "mxfp8_e4m3", accumulator=Accumulator(output="bf16", ftz=True)).code == 0x8000
    c, d = e4(112, one, 0x7F, one)
    assert dot(c, d, "mxfp8_e4m3", accumulator=Accumulator(output="fp16")).code == 0x0200
    assert dot(c, d, "mxfp8_e4m3", accumulator=Accumulator(output="fp16", ftz=True)).code == 0x0000
    # (1 - 2^-25) * 2^-126 (E5M2 1*1 - 2^-13 * 2^-12; 0x88 = 1 00010 00 = -2^-13; scale 0x01 = 2^-126):
    # rne rounds it up to the smallest normal 2^-126, which ftz keeps; rtz gives the largest subnormal
    # 0x007FFFFF, which ftz flushes: ftz looks at the rounded result
    a, b = block(0x01, [0x3C, 0x88], 32), block(0x7F, [0x3C, 0x0C], 32)
    assert block_value("mxfp8_e5m2", a, "mxfp8_e5m2", b) == TWO**-126 - TWO**-151
    assert dot(a, b, "mxfp8_e5m2", accumulator=Accumulator(ftz=True)).code == 0x00800000
    assert dot(a, b, "mxfp8_e5m2", accumulator=Accumulator(output_rounding="rtz")).code == 0x007FFFFF
    assert dot(a, b, "mxfp8_e5m2", accumulator=Accumulator(output_rounding="rtz", ftz=True)).code == 0x00000000
    # DotGeneral: 2^-127 + 2^-127. Across fp32, each block is flushed before the sum: +0. Across
    # exact, the sum 2^-126 is normal and stays. 2^-127 + 2^-128 (E4M3 0.5 = 0x30) is subnormal: flushed.
    x, y = e4(0x00, one, 0x7F, one)
    half, _ = e4(0x00, [0x30], 0x7F, one)
    assert dot_general([x, x], [y, y], "mxfp8_e4m3", accumulator=Accumulator(ftz=True)).code == 0
    assert (
        dot_general([x, x], [y, y], "mxfp8_e4m3", accumulator=Accumulator(ftz=True, across_blocks="exact")).code
        == 0x00800000
    )
    assert (
        dot_general([x, half], [y, y], "mxfp8_e4m3", accumulator=Accumulator(across_blocks="exact")).code == 0x00600000
    )
    assert (
        dot_general([x, half], [y, y], "mxfp8_e4m3", accumulator=Accumulator(ftz=True, across_blocks="exact")).code == 0
    )


OVERFLOW_CASES = [
    # output, scale_a (E4M3 1.0 * 1.0, scale_b = 2^1 or 2^0), positive Inf bits
    ("fp32", 0xFE, 0x80, 0x7F800000),  # 2^127 * 2^1 = 2^128
    ("bf16", 0xFE, 0x80, 0x7F80),
    ("fp16", 143, 0x7F, 0x7C00),  # 2^16 > 65504
]


@pytest.mark.parametrize("mode", ROUNDINGS)
@pytest.mark.parametrize("out, sa, sb, inf_bits", OVERFLOW_CASES)
def test_overflow_is_inf_in_every_rounding_mode(out, sa, sb, inf_bits, mode):
    sign = {"fp32": 0x80000000, "bf16": 0x8000, "fp16": 0x8000}[out]
    acc = Accumulator(output=out, output_rounding=mode)
    for ca, bits in (([0x38], inf_bits), ([0xB8], inf_bits | sign)):
        a, b = e4(sa, ca, sb, [0x38])
        assert dot(a, b, "mxfp8_e4m3", accumulator=acc).code == bits
        assert dot_general([a], [b], "mxfp8_e4m3", accumulator=acc).code == bits
        assert (
            dot_general(
                [a], [b], "mxfp8_e4m3", accumulator=Accumulator(output=out, output_rounding=mode, across_blocks="exact")
            ).code
            == bits
        )


@pytest.mark.parametrize("mode", ROUNDINGS)
def test_overflow_boundary_fp16(mode):
    """Just above fp16's max 65504 (ulp 32): overflow means the rounding with unbounded exponent
    exceeds the max (IEEE's definition), so rtz/rdn keep 65504 where they round down.
    E5M2: 2^16 = 2^8 * 2^8 (0x5C = 0 10111 00), -24 = -1.5 * 2^4 (0xCE), -16 (0xCC), 1.0 = 0x3C."""
    # 65512 = 65504 + 8: rne/rna/rtz/rdn -> 65504 (0x7BFF); rup -> 65536 -> Inf (0x7C00)
    # 65520 = 65504 + 16, a tie: rne -> 65536 (even) -> Inf; rna -> Inf; rup -> Inf; rtz/rdn -> 65504
    expected = {
        65512: {"rne": 0x7BFF, "rna": 0x7BFF, "rtz": 0x7BFF, "rup": 0x7C00, "rdn": 0x7BFF},
        65520: {"rne": 0x7C00, "rna": 0x7C00, "rtz": 0x7BFF, "rup": 0x7C00, "rdn": 0x7BFF},
    }
    for value, code in ((65512, 0xCE), (65520, 0xCC)):
        a, b = block(127, [0x5C, code], 32), block(127, [0x5C, 0x3C], 32)
        assert block_value("mxfp8_e5m2", a, "mxfp8_e5m2", b) == value
        assert ieee_bits(Fraction(value), "fp16", mode) == expected[value][mode]
        r = dot(a, b, "mxfp8_e5m2", accumulator=Accumulator(output="fp16", output_rounding=mode))
        assert r.code == expected[value][mode]


@pytest.mark.parametrize("out", sorted(IEEE))
def test_nan_output_is_canonical(out):
    for mode in MODES.values():
        acc = Accumulator(**{**mode.as_dict(), "output": out})
        for a, b in [e4(0xFF, [0x38], 127, [0x38]), e4(127, [0xFF], 127, [0x38]), e4(127, [0x7F], 127, [0xB8])]:
            assert dot(a, b, "mxfp8_e4m3", accumulator=acc).code == CANONICAL_NAN[out]
            assert dot_general([a], [b], "mxfp8_e4m3", accumulator=acc).code == CANONICAL_NAN[out]
        inf = block(127, [0xFC], 32)
        assert dot(inf, block(127, [0x3C], 32), "mxfp8_e5m2", accumulator=acc).code == ieee_bits(("inf", 1), out)


# ================================================================================================
# 9. Accumulator validation
# ================================================================================================

BAD_ACCUMULATORS = [
    # kwargs, words the message must contain
    ({"mode": "fixed"}, ["mode", "'fixed'", "exact", "aligned", "fp32_sequential"]),
    ({"mode": None}, ["mode", "exact", "aligned", "fp32_sequential"]),
    ({"mode": "aligned"}, ["frac_bits", "aligned", "integer", "4096"]),
    ({"mode": "aligned", "frac_bits": -1}, ["frac_bits", "-1", "[0, 4096]"]),
    ({"mode": "aligned", "frac_bits": 4097}, ["frac_bits", "4097", "[0, 4096]"]),
    ({"mode": "aligned", "frac_bits": 2.0}, ["frac_bits", "2.0", "integer"]),
    ({"mode": "aligned", "frac_bits": True}, ["frac_bits", "True", "integer"]),
    ({"mode": "aligned", "frac_bits": 4, "width": 1}, ["width", "1", "[2, 8192]", "None"]),
    ({"mode": "aligned", "frac_bits": 4, "width": 0}, ["width", "[2, 8192]"]),
    ({"mode": "aligned", "frac_bits": 4, "width": 8193}, ["width", "8193", "[2, 8192]"]),
    ({"mode": "aligned", "frac_bits": 4, "width": 24.0}, ["width", "24.0"]),
    ({"frac_bits": 13}, ["frac_bits", "aligned", "'exact'"]),
    ({"width": 24}, ["width", "aligned", "'exact'"]),
    ({"mode": "fp32_sequential", "frac_bits": 13}, ["frac_bits", "aligned", "fp32_sequential"]),
    ({"shift_rounding": "ceil"}, ["shift_rounding", "'ceil'", "truncate", "rne", "floor"]),
    ({"overflow": "clamp"}, ["overflow", "'clamp'", "saturate", "wrap"]),
    ({"output": "fp64"}, ["output", "'fp64'", "fp32", "bf16", "fp16"]),
    ({"output_rounding": "stochastic"}, ["output_rounding", "stochastic", "rne", "rna", "rtz", "rup", "rdn"]),
    ({"output_rounding": "RNE"}, ["output_rounding", "rne"]),
    ({"across_blocks": "tree"}, ["across_blocks", "'tree'", "fp32", "exact"]),
    ({"ftz": "yes"}, ["ftz", "'yes'", "True", "False"]),
    ({"ftz": 1}, ["ftz", "True", "False"]),
]


@pytest.mark.parametrize("case", range(len(BAD_ACCUMULATORS)))
def test_accumulator_validation(case):
    kwargs, words = BAD_ACCUMULATORS[case]
    with pytest.raises(ValueError) as info:
        Accumulator(**kwargs)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_accumulator_valid_configurations_and_presets():
    assert Accumulator() == Accumulator(
        mode="exact",
        frac_bits=None,
        width=None,
        shift_rounding="truncate",
        overflow="saturate",
        output="fp32",
        output_rounding="rne",
        ftz=False,
        across_blocks="fp32",
    )
    Accumulator(mode="aligned", frac_bits=0, width=2)
    Accumulator(mode="aligned", frac_bits=4096, width=8192)
    assert Accumulator.preset("exact").across_blocks == "exact"
    assert Accumulator.preset("fp32_fma").mode == "fp32_sequential"
    hopper = Accumulator.preset("hopper_fp8_like", width=None)
    assert (hopper.mode, hopper.frac_bits, hopper.width) == ("aligned", 13, None)
    with pytest.raises(ValueError, match="preset.*fp32_per_block"):
        Accumulator.preset("h100")
    with pytest.raises(ValueError, match="frac_bits"):
        Accumulator.preset("fp32_per_block", frac_bits=3)  # overrides are validated too
    with pytest.raises(ValueError, match="bogus.*known options"):
        Accumulator.from_kwargs(mode="exact", bogus=1)


def test_dot_rejects_mismatched_operands():
    e4m3 = block(127, [0x38], 32)
    with pytest.raises(ValueError, match="block size"):
        dot(e4m3, block(127, [0x40], 16, (0,) * 8), "mxfp8_e4m3", "mx9")
    with pytest.raises(ValueError, match="codes"):
        dot(QuantizedBlock(127, (), (0x38,) * 31), e4m3, "mxfp8_e4m3")
    with pytest.raises(ValueError, match="sub-scales"):
        dot(block(127, [0x40], 16, (0,) * 7), block(127, [0x40], 16, (0,) * 8), "mx9")
    with pytest.raises(ValueError, match="blocks"):
        dot_general([e4m3, e4m3], [e4m3], "mxfp8_e4m3")


@pytest.mark.parametrize("tau_a, tau_b", [(2, 0), (-1, 0), (2, 2)])
def test_dot_rejects_out_of_range_subscales(tau_a, tau_b):
    a = block(127, [0x40] * 16, 16, (tau_a,) * 8)
    b = block(127, [0x40] * 16, 16, (tau_b,) * 8)
    with pytest.raises(ValueError, match="(?i)sub-?scale|tau|microexponent"):
        dot(a, b, "mx9")


@pytest.mark.parametrize("tensor_scale", [Fraction(-1), float("nan"), float("inf"), Fraction(1, 3), 0])
def test_dot_rejects_bad_tensor_scales(tensor_scale):
    b = QuantizedBlock(0x38, (), (0x2,) * 16)
    with pytest.raises(ValueError, match="tensor_scale"):
        dot(b, b, "nvfp4", tensor_scale_a=tensor_scale)


def test_dot_rejects_a_tensor_scale_for_formats_without_one():
    e4m3 = QuantizedBlock(127, (), (0x38,) * 32)
    with pytest.raises(ValueError, match="no tensor scale"):
        dot(e4m3, e4m3, "mxfp8_e4m3", tensor_scale_b=Fraction(2))


# --- the aligned register's sum with no width (BlockDot.unbounded) -----------------------------------
@pytest.mark.parametrize("overflow,register", [("wrap", -2), ("saturate", 1)])
def test_unbounded_is_the_cut_products_sum_with_no_width_hand_worked(overflow, register):
    """Two products 4.0 * 1.0 (E4M3 0x48, 0x38) on the grid 2^(anchor - F) = 2^2 with F = 0: q = 1 each.
    A 2-bit register holds -2 .. 1: 1, then 2 wraps to -2 (or saturates at 1); the sum with no width is 2."""
    codes_a, codes_b = (0x48, 0x48) + (0,) * 30, (0x38, 0x38) + (0,) * 30
    acc = Accumulator(mode="aligned", frac_bits=0, width=2, overflow=overflow)
    r = dot(QuantizedBlock(127, (), codes_a), QuantizedBlock(127, (), codes_b), "mxfp8_e4m3", accumulator=acc)
    assert (r.accumulator, r.unbounded, r.lsb_exponent) == (register, 2, 2)
    unbounded = dot(QuantizedBlock(127, (), codes_a), QuantizedBlock(127, (), codes_b), "mxfp8_e4m3",
                    accumulator=Accumulator(mode="aligned", frac_bits=0))
    assert unbounded.accumulator == unbounded.unbounded == 2


def test_unbounded_is_only_reported_in_aligned_mode():
    block = QuantizedBlock(127, (), (0x38,) * 32)
    for acc in (Accumulator(), Accumulator(mode="fp32_sequential")):
        assert dot(block, block, "mxfp8_e4m3", accumulator=acc).unbounded is None


@pytest.mark.parametrize("width", [20, 21, 22, 24])
def test_register_may_overflow_is_never_false_where_a_block_overflows(width):
    """MXFP8 E4M3, F = 13: 32 products 448 * 448 = 3.0625 * 2^16 on the grid 2^(16 - 13) are q = 25,088
    each, 802,816 in all: a 20-bit register (to 2^19 - 1) overflows; the bound register_limit =
    32 * ((floor(15 * 15 / 2^6) + 1) * 2^13) + 32 = 1,048,608 says it may up to W = 21 and not from 22."""
    from mxsim.ref.dot import register_may_overflow

    acc = Accumulator(mode="aligned", frac_bits=13, width=width)
    largest = QuantizedBlock(127, (), (0x7E,) * 32)  # 448
    r = dot(largest, largest, "mxfp8_e4m3", accumulator=acc)
    assert r.unbounded == 32 * 25_088
    assert register_may_overflow("mxfp8_e4m3", "mxfp8_e4m3", acc) == (width <= 21)
    assert (r.accumulator != r.unbounded) == (width == 20)
