"""Fused multiply-accumulate steps and the accumulator input C in the fast path and the tensor API
(mxsim.fast.fused, mxsim.fast.output, mxsim.dot(..., c=...), ``mxsim dot --c``).

Oracles (expected values never come from the code under test):

* ``fused_oracle``: the fused-step definition (docs/numerics.md section 4.1 as resolved by the fused-step
  specification) written here from scratch with Fractions: element and scale values from the
  reference decoder, exponents, anchors, cuts, specials and the output rounding all computed here;
* the reference model (``mxsim.ref.dot.dot_general(..., c=...)``), compared field by field: every
  step's output code and the result, and for separate accumulation every block's fields;
* hand-worked cases with their expected bits derived in the comments.

Hypothesis runs are derandomized (fixed examples, no database) and bounded.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mxsim
from mxsim import Accumulator, MXTensor
from mxsim.options.accumulate import PRESETS
from mxsim.cli import main
from mxsim.fast import fused, fused_kernel
from mxsim.fast.dot import Operand
from mxsim.fast.output import FINITE, NAN, NEG_INF, POS_INF, round_output
from mxsim.fileformat import save
from mxsim.formats import get_format
from mxsim.ref import decode
from mxsim.ref import dot as ref_dot
from mxsim.ref.exact import Exact
from mxsim.ref.output import fp32_bits
from mxsim.ref.output import round_output as ref_round_output


def _settings(n: int):
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


AGREEMENTS = Counter()  # rows (or values) compared against each oracle; printed at teardown


def teardown_module(module):
    print("\nfused fast-path agreements:", dict(AGREEMENTS))


TWO = Fraction(2)
# output: (exponent bits, fraction bits, bias, shift of the code into its stored word)
OUTPUTS = {"fp32": (8, 23, 127, 0), "bf16": (8, 7, 127, 0), "fp16": (5, 10, 15, 0), "fp32_e8m13": (8, 13, 127, 10)}
CANONICAL_NAN = {"fp32": 0x7FC00000, "bf16": 0x7FC0, "fp16": 0x7E00, "fp32_e8m13": 0x7FC00000}
NAN_PATTERNS = {"fp32": 0x7FFFFFFF, "fp32_e8m13": 0xFFC00001, "bf16": 0xFF81, "fp16": 0x7C01}
ROUNDINGS = ("rne", "rna", "rtz", "rup", "rdn")
# fp32 words of C: zeros, subnormals, NaNs, infinities, huge, tiny, ordinary values
C_WORDS = [
    0x00000000,
    0x80000000,
    0x00000001,
    0x807FFFFF,
    0x7FC00000,
    0xFFC00001,
    0x7F800000,
    0xFF800000,
    0x7F7FFFFF,
    0xFF7FFFFF,
    0x00800000,
    0x3F800000,
    0xBF800001,
    0x72000000,
    0x0D800000,
    0x4B000001,
]


# --- the independent oracle ------------------------------------------------------------------------
def floor_log2(q: Fraction) -> int:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n << max(-e, 0)) >= (d << max(e, 0)) else e - 1


def round_word(negative: bool, magnitude: Fraction, acc: Accumulator) -> int:
    """The stored output word of a finite value, by the definitions of the contract."""
    ebits, mbits, bias, shift = OUTPUTS[acc.output]
    emin, emax = 1 - bias, (1 << ebits) - 2 - bias
    sign = int(negative) << (ebits + mbits)
    if magnitude == 0:
        return sign << shift
    e = max(floor_log2(magnitude), emin)
    units = magnitude / TWO ** (e - mbits)
    n = units.numerator // units.denominator
    rem = units - n
    up = {
        "rtz": False,
        "rup": rem > 0 and not negative,
        "rdn": rem > 0 and negative,
        "rne": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1),
        "rna": rem >= Fraction(1, 2),
    }
    rounded = (n + up[acc.output_rounding]) * TWO ** (e - mbits)
    if rounded > (2 - TWO**-mbits) * TWO**emax:
        toward_zero = acc.output_rounding == "rtz" or acc.output_rounding == ("rup" if negative else "rdn")
        largest = acc.output_overflow == "saturate" or (acc.output_overflow == "ieee" and toward_zero)
        body = (((1 << ebits) - 2) << mbits | ((1 << mbits) - 1)) if largest else ((1 << ebits) - 1) << mbits
        return (sign | body) << shift
    if rounded < TWO**emin:
        field, fraction = 0, rounded / TWO ** (emin - mbits)
    else:
        top = floor_log2(rounded)
        field, fraction = top + bias, rounded / TWO ** (top - mbits) - (1 << mbits)
    if acc.ftz and field == 0:
        fraction = 0
    return (sign | field << mbits | int(fraction)) << shift


def special_word(kind: str, negative: bool, acc: Accumulator) -> int:
    ebits, mbits, _, shift = OUTPUTS[acc.output]
    if kind == "nan":
        return CANONICAL_NAN[acc.output] if acc.nan_bits is None else acc.nan_bits
    return ((int(negative) << (ebits + mbits)) | (((1 << ebits) - 1) << mbits)) << shift


def word_value(word: int, acc: Accumulator):
    """(kind, negative, magnitude) of a stored output word, read by NumPy's IEEE types."""
    if acc.output == "bf16":
        x = np.array([word << 16], np.uint32).view(np.float32)[0]
    elif acc.output == "fp16":
        x = np.array([word], np.uint16).view(np.float16)[0]
    else:
        x = np.array([word], np.uint32).view(np.float32)[0]
    return value_parts(x)


def value_parts(x):
    if np.isnan(x):
        return "nan", False, Fraction(0)
    negative = bool(np.signbit(x))
    if np.isinf(x):
        return "inf", negative, Fraction(0)
    return "finite", negative, abs(Fraction(float(x)))


def element_exponent(value: Fraction, element) -> int:
    """E of an element (conventions 4): floats floor(log2 |x|) down to emin, integers 0."""
    if element.kind != "float" or value == 0:
        return element.emin if element.kind == "float" else 0
    return max(floor_log2(abs(value)), element.emin)


def oracle_products(fmt, codes_a, codes_b, fmt_b, scales_a, scales_b, acc=None):
    """Per product: (kind, negative, value incl. scales, anchor exponent, counts, block). With
    ``acc``: integer elements read as their plain code (int_elements="integer": value q, exponent
    E + f) and a zero element reading with ``zero_exponent`` (then every finite product counts)."""
    k = fmt.block_size
    out = []
    for p, (ca, cb) in enumerate(zip(codes_a, codes_b)):
        xa, xb = decode(int(ca), fmt.element), decode(int(cb), fmt_b.element)
        sa, sb = scales_a[p // k], scales_b[p // k]
        negative = bool(xa.sign ^ xb.sign)
        zero = (xa.is_finite and xa.magnitude == 0) or (xb.is_finite and xb.magnitude == 0)
        raise_a = raise_b = 0
        if acc is not None and acc.int_elements == "integer":
            raise_a = fmt.element.frac_bits if fmt.element.kind == "int" else 0
            raise_b = fmt_b.element.frac_bits if fmt_b.element.kind == "int" else 0
        if xa.is_nan or xb.is_nan or ((xa.is_inf or xb.is_inf) and zero):
            out.append(("nan", negative, Fraction(0), 0, False, p // k))
            continue
        if xa.is_inf or xb.is_inf:
            out.append(("inf", negative, Fraction(0), 0, False, p // k))
            continue
        value = xa.magnitude * xb.magnitude * sa[1] * sb[1] * (-1 if negative else 1) * TWO ** (raise_a + raise_b)
        zero_read = None if acc is None else acc.zero_exponent
        ea = element_exponent(xa.magnitude, fmt.element) if zero_read is None or xa.magnitude else zero_read
        eb = element_exponent(xb.magnitude, fmt_b.element) if zero_read is None or xb.magnitude else zero_read
        exponent = ea + eb + raise_a + raise_b + sa[2] + sb[2]
        out.append(("finite", negative, value, exponent, not zero or zero_read is not None, p // k))
    return out


def oracle_scale(code: int, scale_fmt):
    """(nan, value, X): X = max(floor(log2 scale), emin) (the emin for a zero scale)."""
    x = decode(int(code), scale_fmt)
    if x.is_nan:
        return True, Fraction(0), 0
    return False, x.magnitude, max(floor_log2(x.magnitude), scale_fmt.emin) if x.magnitude else scale_fmt.emin


def cut(value: Fraction, lsb: int, acc: Accumulator, rounding: str | None = None) -> int:
    """The value in units of 2^lsb cut by ``rounding`` (default shift_rounding): truncate toward
    zero, rne, floor toward minus infinity."""
    rounding = rounding or acc.shift_rounding
    units = value / TWO**lsb
    if rounding == "floor":
        return units.numerator // units.denominator
    units = abs(units)
    n = units.numerator // units.denominator
    rem = units - n
    if rounding == "rne" and (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2)):
        n += 1
    return -n if value < 0 else n


def oracle_step_ranges(k: int, n_products: int, step: int) -> list[tuple[int, int]]:
    """Steps of ``step`` products in order; a step that does not divide the block (and is smaller)
    restarts at every block, its last step partial (MXDOTP FP6: 11 + 11 + 10 of 32)."""
    if step >= k or k % step == 0:
        return [(f, min(f + step, n_products)) for f in range(0, n_products, step)]
    return [(j + f, j + min(f + step, k)) for j in range(0, n_products, k) for f in range(0, k, step)]


def fused_oracle(fmt_a, fmt_b, codes_a, scales_a, codes_b, scales_b, acc: Accumulator, c_word: int) -> list[int]:
    """Every step's stored output word of one fused DotGeneral row."""
    k = fmt_a.block_size
    sa = [oracle_scale(s, fmt_a.scale) for s in scales_a]
    sb = [oracle_scale(s, fmt_b.scale) for s in scales_b]
    products = oracle_products(fmt_a, codes_a, codes_b, fmt_b, sa, sb, acc)
    step = acc.effective_step(k)
    size = acc.effective_term_size(k) if acc.step_terms == "block" else 1
    c = value_parts(np.array([c_word], np.uint32).view(np.float32)[0])
    words = []
    for first, last in oracle_step_ranges(k, len(products), step):
        part = products[first:last]
        blocks = {p[5] for p in part}
        kinds = [(p[0], p[1]) for p in part] + [(c[0], c[1])]
        inf_signs = {neg for kind, neg in kinds if kind == "inf"}
        if any(kind == "nan" for kind, _ in kinds) or any(sa[i][0] or sb[i][0] for i in blocks) or len(inf_signs) == 2:
            words.append(special_word("nan", False, acc))
        elif inf_signs:
            words.append(special_word("inf", inf_signs.pop(), acc))
        else:
            words.append(finite_step(part, sa, sb, size, c, acc))
        c = word_value(words[-1], acc)
    return words


def finite_step(part, sa, sb, size, c, acc: Accumulator) -> int:
    c_value = -c[2] if c[1] else c[2]
    e_c = max(floor_log2(c[2]), -126) if c[2] else acc.effective_c_zero_exponent
    if acc.step_terms == "block":
        groups = [part[i : i + size] for i in range(0, len(part), size)]
        terms = [(sum(p[2] for p in g), sa[g[0][5]][2] + sb[g[0][5]][2], any(p[4] for p in g)) for g in groups]
    else:
        terms = [(p[2], p[3], p[4]) for p in part]
    if acc.sum_frac_bits is not None:
        products, total = late_join(terms, c_value, e_c, acc)
    elif acc.anchor == "max":
        lsb = max([e_c] + [e for _, e, counts in terms if counts]) - acc.frac_bits
        products = sum(cut(v, lsb, acc) for v, _, _ in terms) * TWO**lsb
        total = products + cut(c_value, lsb, acc) * TWO**lsb
    else:
        block = part[0][5]
        lsb = sa[block][2] + sb[block][2] - acc.frac_bits
        if acc.bypass is not None and (e_c - 23) - lsb > acc.bypass:
            return round_word(c[1], c[2], acc)  # D = C, -0 included
        products = sum(cut(v, lsb, acc) for v, _, _ in terms) * TWO**lsb
        total = c_value + products
        # MXDOTP (contract 6.1): C is passed on only where its LSB lies more than 24 bits below the grid
        if acc.zero_product_sum == "pass_c_outside_window" and (e_c - 23) - lsb >= -24:
            return round_word(total < 0, abs(total), acc)
    if acc.zero_product_sum != "add" and products == 0:
        return round_word(c[1], c[2], acc)  # D = C, -0 included
    return round_word(total < 0, abs(total), acc)


def late_join(terms, c_value: Fraction, e_c: int, acc: Accumulator) -> tuple[Fraction, Fraction]:
    """(product sum S, exact total) when C joins after the products (contract 6.1, CDNA3): the
    terms dealt into ``partial_sums`` interleaved sums, each cut on its own largest exponent e_h,
    the sums cut to 2^(E - F) with ``sum_rounding``; E' = max(E, e_C); S cut to 2^(E' - sum_frac_bits)
    and C to 2^(E' - c_frac_bits) with ``sum_rounding``, C dropped below E' - c_drop."""
    n, f = acc.partial_sums, acc.frac_bits
    halves = [(h, [e for _, e, counts in terms[h::n] if counts]) for h in range(n)]
    halves = [(sum(cut(v, max(es) - f, acc) for v, _, _ in terms[h::n]) * TWO ** (max(es) - f), max(es))
              for h, es in halves if es]
    if halves:
        e = max(e_h for _, e_h in halves)
        s = sum(cut(v, e - f, acc, acc.sum_rounding) for v, _ in halves) * TWO ** (e - f)
        joint = max(e, e_c)
    else:
        s, joint = Fraction(0), e_c
    total = cut(s, joint - acc.sum_frac_bits, acc, acc.sum_rounding) * TWO ** (joint - acc.sum_frac_bits)
    if acc.c_drop is None or e_c >= joint - acc.c_drop:
        total += cut(c_value, joint - acc.c_frac_bits, acc, acc.sum_rounding) * TWO ** (joint - acc.c_frac_bits)
    return s, total


# --- data and runners ------------------------------------------------------------------------------
SCALE_UNITY = {"e8m0": 127, "ue4m3": 0x38}
SCALE_EDGES = {"e8m0": [0x00, 0x01, 0x7F, 0xFE, 0xFF], "ue4m3": [0x00, 0x01, 0x38, 0x7E, 0x7F]}


def random_codes(rng, fmt, shape, p_zero, p_special, p_top):
    """Element codes: uniform, then zeros, specials and the largest magnitudes mixed in."""
    element = fmt.element
    values = [decode(code, element) for code in range(1 << element.width)]
    codes = rng.integers(0, 1 << element.width, size=shape)
    finite = np.array([v.is_finite for v in values])
    codes = np.where(finite[codes], codes, 0)  # specials only where asked for
    zero = [c for c, v in enumerate(values) if v.is_finite and v.magnitude == 0]
    top_value = max(v.magnitude for v in values if v.is_finite)
    top = [c for c, v in enumerate(values) if v.is_finite and v.magnitude == top_value]
    special = [c for c, v in enumerate(values) if not v.is_finite]
    for p, choices in ((p_zero, zero), (p_top, top), (p_special, special)):
        if choices and p:
            codes = np.where(rng.random(shape) < p, rng.choice(choices, size=shape), codes)
    return codes.astype(np.uint8 if element.width <= 8 else np.uint16)


def random_tensor(rng, name, rows, n_blocks, *, p_zero=0.2, p_special=0.0, p_top=0.1, spread=3, p_edge=0.0):
    fmt = get_format(name, kind="block")
    k = fmt.block_size
    codes = random_codes(rng, fmt, (rows, n_blocks * k), p_zero, p_special, p_top)
    step = 1 if fmt.scale.name == "e8m0" else 8
    scales = SCALE_UNITY[fmt.scale.name] + step * rng.integers(-spread, spread + 1, size=(rows, n_blocks))
    scales = np.clip(scales, 0, (1 << fmt.scale.width) - 1)
    scales = np.where(
        rng.random(scales.shape) < p_edge, rng.choice(SCALE_EDGES[fmt.scale.name], size=scales.shape), scales
    )
    subscales = None
    if fmt.subblocks:
        subscales = rng.integers(0, 1 << fmt.subscale_bits, size=(rows, n_blocks, fmt.subblocks))
    return MXTensor.from_codes(scales.astype(np.uint8), codes, name, subscales=subscales)


def random_c(rng, rows, p_special):
    words = (
        rng.standard_normal(rows).astype(np.float32)
        * np.float32(2.0) ** rng.integers(-8, 9, size=rows).astype(np.float32)
    ).view(np.uint32)
    return np.where(rng.random(rows) < p_special, rng.choice(C_WORDS, size=rows), words).astype(np.uint32)


def fast_steps(a: MXTensor, b: MXTensor, acc: Accumulator, c_words):
    """(result words, step words) of mxsim.dot with details, c given as float32."""
    c = None if c_words is None else np.asarray(c_words, np.uint32).view(np.float32)
    got = mxsim.dot(a, b, acc, c=c, details=True)
    plain = mxsim.dot(a, b, acc, c=c)
    assert np.array_equal(plain.view(np.uint8), got.values.view(np.uint8))
    return got.bits, got.steps


def row_blocks(t: MXTensor, r: int):
    return [
        Operand(
            t.fmt,
            t.scales[r],
            None if t.subscales is None else t.subscales[r],
            t.codes[r].reshape(-1, t.fmt.block_size),
        ).block(j)
        for j in range(t.scales.shape[-1])
    ]


def check_against_reference(a: MXTensor, b: MXTensor, acc: Accumulator, c_words) -> None:
    """mxsim.dot == ref.dot_general on every row: the result, every step, and (separate) every
    block's code, register, lsb exponent and anchor."""
    c = None if c_words is None else np.asarray(c_words, np.uint32).view(np.float32)
    got = mxsim.dot(a, b, acc, c=c, details=True)
    for r in range(a.codes.shape[0]):
        c_ref = None if c_words is None else fp32_bits(int(c_words[r]))
        want = ref_dot.dot_general(row_blocks(a, r), row_blocks(b, r), a.fmt, b.fmt, acc, c=c_ref)
        context = f"row {r}, c={None if c_words is None else hex(int(c_words[r]))}: {a.fmt.name} x {b.fmt.name}, {acc}"
        assert int(got.bits[r]) == want.code, context
        assert tuple(int(s) for s in got.steps[r]) == want.steps, context
        for j, block in enumerate(want.blocks):
            fields = (
                int(got.block_bits[r, j]),
                int(got.accumulator[r, j]),
                int(got.lsb_exponent[r, j]),
                int(got.anchor[r, j]),
            )
            assert fields == (block.code, block.accumulator, block.lsb_exponent, block.anchor), (context, j)
        AGREEMENTS["reference rows"] += 1


def check_against_oracle(a: MXTensor, b: MXTensor, acc: Accumulator, c_words) -> None:
    bits, steps = fast_steps(a, b, acc, c_words)
    for r in range(a.codes.shape[0]):
        want = fused_oracle(
            a.fmt,
            b.fmt,
            a.codes[r],
            a.scales[r],
            b.codes[r],
            b.scales[r],
            acc,
            0 if c_words is None else int(c_words[r]),
        )
        context = f"row {r}: {a.fmt.name} x {b.fmt.name}, {acc}, c={None if c_words is None else hex(int(c_words[r]))}"
        assert [int(s) for s in steps[r]] == want, context
        assert int(bits[r]) == want[-1], context
        AGREEMENTS["oracle rows"] += 1


# --- hand-worked cases -----------------------------------------------------------------------------
def e4m3_tensor(values, scale_codes, block=32):
    """An MXFP8 E4M3 tensor of one row from exact element values (each an E4M3 value)."""
    codes = np.array([mxsim.encode(np.float64(v), "fp8_e4m3") for v in values], np.uint8)[None, :]
    return MXTensor.from_codes(np.array([scale_codes], np.uint8), codes, "mxfp8_e4m3")


def ones_and_zeros(n_ones, total=32, value=1.0):
    return [value] * n_ones + [0.0] * (total - n_ones)


def as_c(word):
    return np.array([word], np.uint32).view(np.float32)


def result_word(a, b, acc, c_word):
    return int(mxsim.dot(a, b, acc, c=as_c(c_word), details=True).bits[0])


def test_bypass_returns_c_unchanged():
    """MXDOTP (steps of 8): the first step adds 8 products 1 * 1 (scales 1: X = 0, grid
    g = -34), the other three add zeros. C = 2^100: its LSB 2^77 lies 77 + 34 = 111 > 70 bits
    above the grid, so D = C (0x71800000), even under rup (where 2^100 + 8 would give 2^100 +
    2^77). C = 2^40 (LSB 2^17, 51 bits above) is not bypassed: under rup 2^40 + 8 rounds up to
    2^40 + 2^17 (0x53800001), and the zero steps keep that."""
    a = b = e4m3_tensor(ones_and_zeros(8), [127])
    acc = Accumulator.preset("mxdotp_fp8")
    assert result_word(a, b, acc, 0x71800000) == 0x71800000
    assert result_word(a, b, replace_acc(acc, output_rounding="rup"), 0x71800000) == 0x71800000
    assert result_word(a, b, replace_acc(acc, output_rounding="rup"), 0x53800000) == 0x53800001
    # a zero C counts with exponent -127 (LSB 2^-150): scales 2^-127 * 2^-127 put the grid at
    # 2^(-254 - 34) = 2^-288, 138 bits below: D = C, and -0 stays -0
    tiny = e4m3_tensor(ones_and_zeros(32), [0])
    assert result_word(tiny, tiny, acc, 0x80000000) == 0x80000000
    assert result_word(tiny, tiny, acc, 0x00000000) == 0x00000000
    # a subnormal C counts with exponent -126 (LSB 2^-149): scales 2^-100 * 2^-100 put the grid at
    # 2^-234, 85 bits below, so D = C = 24 * 2^-149 (0x00000018) under rup too, where C + 8 * 2^-200
    # (the first step's products) would round up to 0x00000019
    small = e4m3_tensor(ones_and_zeros(8), [27])
    assert result_word(small, small, replace_acc(acc, output_rounding="rup"), 0x00000018) == 0x00000018
    assert result_word(small, small, replace_acc(acc, output_rounding="rup", bypass=None), 0x00000018) == 0x00000019


def replace_acc(acc, **changes):
    from dataclasses import replace

    return replace(acc, **changes)


def test_c_dominates_under_anchor_max():
    """Hopper wgmma (F = 13): C = 2^20 puts the anchor at 20 and the grid at 2^7; 32 products of
    1 * 1.875 (each below 2^7) are truncated to 0, so D = C = 0x49800000 (rtz, 13 fraction bits).
    With C = 2^10 (grid 2^-3) the products add exactly: 2^10 + 32 * 1.875 = 1084 = 0x44878000."""
    a = e4m3_tensor(ones_and_zeros(32), [127])
    b = e4m3_tensor(ones_and_zeros(32, value=1.875), [127])
    acc = Accumulator.preset("hopper_fp8_wgmma")
    assert result_word(a, b, acc, 0x49800000) == 0x49800000
    assert result_word(a, b, acc, 0x44800000) == np.float32(1084.0).view(np.uint32)


@pytest.mark.parametrize("preset", ["hopper_fp8_wgmma", "blackwell_mxf8f6f4", "mxdotp_fp8"])
def test_c_that_cancels_the_products_gives_plus_zero(preset):
    """The first step's products 1 * 1.5 sum to 1.5 * step (exact on every grid here); C =
    -1.5 * step cancels them: +0, not -0 (the integer adder has no sign of zero). With C = -0
    and zero products: +0 too, except for MXDOTP, whose zero product sum passes C through (-0 stays
    -0; contract 4.1 zero_product_sum="pass_c", 6.1)."""
    acc = Accumulator.preset(preset)
    step = acc.effective_step(32)  # the first step's products cancel C; later steps add zeros
    a = e4m3_tensor(ones_and_zeros(step), [127])
    b = e4m3_tensor(ones_and_zeros(step, value=1.5), [127])
    assert result_word(a, b, acc, int(np.float32(-1.5 * step).view(np.uint32))) == 0
    zero = e4m3_tensor(ones_and_zeros(0), [127])
    assert result_word(zero, zero, acc, 0x80000000) == (0x80000000 if preset == "mxdotp_fp8" else 0)


def test_fused_truncation_differs_from_separate_fp32_add():
    """C = 1, one product 1.5 * 2^-24 (E4M3 elements 1.5 * 2^-6 and 2^-18 via a scale of 2^-12):
    Blackwell mxf8f6f4 (F = 25) holds 1 + 1.5 * 2^-24 on the grid 2^-25 exactly and rounds toward
    zero: 1.0 (0x3F800000). Separate accumulation rounds the block (1.5 * 2^-24, exact) and adds it
    in fp32 nearest-even: 1 + 1.5 * 2^-24 is above the midpoint 1 + 2^-24, so 1 + 2^-23."""
    a = e4m3_tensor([1.5 * 2.0**-6] + [0.0] * 31, [127 - 12])
    b = e4m3_tensor([1.0] + [0.0] * 31, [127 - 6])
    assert result_word(a, b, Accumulator.preset("blackwell_mxf8f6f4"), 0x3F800000) == 0x3F800000
    assert result_word(a, b, Accumulator(), 0x3F800000) == 0x3F800001


@pytest.mark.parametrize(
    "rounding,negative,expected",
    [
        ("rtz", False, 0x7F7FFFFF),
        ("rup", False, 0x7F800000),
        ("rdn", False, 0x7F7FFFFF),
        ("rtz", True, 0xFF7FFFFF),
        ("rup", True, 0xFF7FFFFF),
        ("rdn", True, 0xFF800000),
        ("rne", False, 0x7F800000),
        ("rna", True, 0xFF800000),
    ],
)
def test_ieee_overflow(rounding, negative, expected):
    """MXDOTP with output_overflow='ieee': C = +-max fp32 ((2 - 2^-23) * 2^127); products 32 *
    (2^8 * 2^8) with scales 2^50 * 2^50 add 2^121 of the same sign: |V| > 2^128, so every rounding
    overflows; toward zero for its sign (rtz; rup of a negative; rdn of a positive) gives +-max,
    otherwise +-Inf. (C's LSB 2^104 lies 104 - (100 - 34) = 38 bits above the grid: no bypass.)"""
    sign = -1.0 if negative else 1.0
    a = e4m3_tensor(ones_and_zeros(32, value=256.0 * sign), [177])
    b = e4m3_tensor(ones_and_zeros(32, value=256.0), [177])
    acc = Accumulator.preset("mxdotp_fp8", output_rounding=rounding)
    c = 0xFF7FFFFF if negative else 0x7F7FFFFF
    assert result_word(a, b, acc, c) == expected
    assert result_word(a, b, replace_acc(acc, output_overflow="inf"), c) == (0xFF800000 if negative else 0x7F800000)
    assert result_word(a, b, replace_acc(acc, output_overflow="saturate"), c) == (
        0xFF7FFFFF if negative else 0x7F7FFFFF
    )


def test_fp32_e8m13_output():
    """Hopper wgmma (F = 13, fp32_e8m13, rtz): 1 + 2^-13 + 2^-14 (products 1, 2^-13 and 2^-14 on
    the grid 2^-13 of anchor 0: the last is truncated) is 1 + 2^-13 = fp32 word 0x3F800400 (13
    fraction bits, the low 10 zero). C = 3 * 2^-140 alone (no products): it rounds toward zero
    to e8m13's subnormal step 2^-139: word 0x00000400. The largest e8m13 value is (2 - 2^-13) *
    2^127 = 0x7F7FFC00: C = max fp32 with no products gives it under rtz."""
    a = e4m3_tensor([1.0, 2.0**-7, 2.0**-7] + [0.0] * 29, [127])
    b = e4m3_tensor([1.0, 2.0**-6, 2.0**-7] + [0.0] * 29, [127])
    acc = Accumulator.preset("hopper_fp8_wgmma")
    assert result_word(a, b, acc, 0) == 0x3F800400
    zero = e4m3_tensor([0.0] * 32, [127])
    three = np.float32(3 * 2.0**-140).view(np.uint32)
    assert result_word(zero, zero, acc, int(three)) == 0x00000400
    assert result_word(zero, zero, acc, 0x7F7FFFFF) == 0x7F7FFC00


def test_no_products_give_c_rounded():
    """K = 0: the result is C rounded to the output (bf16 rtz of 1 + 2^-8 + 2^-20: 0x3F80; -0
    stays -0), or +0 without C; a NaN C gives the NaN pattern (bf16's canonical 0x7FC0, or the
    preset's 0x7FFFFFFF for fp32)."""
    a = MXTensor.from_codes(np.zeros((1, 0), np.uint8), np.zeros((1, 0), np.uint8), "mxfp8_e4m3", shape=(1, 0))
    acc = Accumulator.preset("blackwell_mxf8f6f4", output="bf16", nan_bits=None)
    c = np.float32(1 + 2.0**-8 + 2.0**-20)
    got = mxsim.dot(a, a, acc, c=np.array([c]), details=True)
    assert int(got.bits[0]) == 0x3F80 and got.steps.shape == (1, 0) and got.steps.dtype == np.uint16
    assert int(mxsim.dot(a, a, acc, details=True).bits[0]) == 0
    assert int(mxsim.dot(a, a, acc, c=as_c(0x80000000), details=True).bits[0]) == 0x8000
    assert int(mxsim.dot(a, a, acc, c=as_c(0xFFC00000), details=True).bits[0]) == 0x7FC0
    nan = mxsim.dot(a, a, Accumulator.preset("blackwell_mxf8f6f4"), c=as_c(0xFFC00000), details=True)
    assert int(nan.bits[0]) == 0x7FFFFFFF


def test_separate_accumulation_with_c():
    """Separate accumulation: the fp32 sum starts at C. Two blocks of 32 products 1 * 1 (32
    each) with C = 2^25: 2^25 + 32 and + 32 again are exact in fp32 (ulp 4): 33554496. With
    across_blocks='exact', C = 2^-149: 64 + 2^-149 rounds once to 64 (0x42800000). A NaN C gives
    NaN (nan_bits when set); C = -Inf gives -Inf. C = -0 with zero products: the fp32 sum starts
    at -0 and adds the blocks' +0: +0. Without blocks the sum is C itself, -0 included."""
    a = b = e4m3_tensor(ones_and_zeros(32) * 2, [127, 127])
    assert (
        result_word(a, b, Accumulator(), int(np.float32(2.0**25).view(np.uint32))) == 0x4C000010
    )  # 2^25 + 64 = 2^25 * (1 + 16 * 2^-23)
    assert result_word(a, b, Accumulator(across_blocks="exact"), 1) == 0x42800000
    assert result_word(a, b, Accumulator(), 0xFFC00000) == 0x7FC00000
    assert result_word(a, b, Accumulator(nan_bits=0x7FFFFFFF), 0x7FC00000) == 0x7FFFFFFF
    assert result_word(a, b, Accumulator(nan_bits=0x7FFFFFFF), 0xFF800000) == 0xFF800000
    zero = e4m3_tensor([0.0] * 64, [127, 127])
    assert result_word(zero, zero, Accumulator(), 0x80000000) == 0
    empty = MXTensor.from_codes(np.zeros((1, 0), np.uint8), np.zeros((1, 0), np.uint8), "mxfp8_e4m3", shape=(1, 0))
    assert int(mxsim.dot(empty, empty, Accumulator(), c=as_c(0x80000000)).view(np.uint32)[0]) == 0x80000000


def test_separate_output_overflow():
    """output_overflow applies to separate accumulation: one block of 32 products 448 * 448 with
    scales 2^127 * 2^100 is far beyond fp32: inf -> +Inf, saturate -> max, ieee with rtz -> max."""
    a = e4m3_tensor([448.0] * 32, [254])
    b = e4m3_tensor([448.0] * 32, [227])
    assert result_word(a, b, Accumulator(), 0) == 0x7F800000
    assert result_word(a, b, Accumulator(output_overflow="saturate"), 0) == 0x7F7FFFFF
    assert result_word(a, b, Accumulator(output_overflow="ieee", output_rounding="rtz"), 0) == 0x7F7FFFFF
    assert result_word(a, b, Accumulator(output_overflow="ieee", output_rounding="rup"), 0) == 0x7F800000


@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["mxfp4_e2m1", "mxfp6_e2m3"]),
    st.sampled_from(ROUNDINGS),
    st.sampled_from(list(OUTPUTS)),
    st.integers(1, 3),
)
@_settings(60)
def test_anchor_max_with_enough_fraction_bits_rounds_once(seed, name, rounding, output, n_blocks):
    """anchor='max' with F >= the span of the exponents plus the fraction bits: one step (step =
    n_blocks * 32) equals round_once(C + the exact sum of the products). Elements of E2M1/E2M3
    (exponents 0..2, LSBs down to 2^-3), scales 2^-3..2^3: product exponents at most 10, LSBs at
    least 2^-12; C: an integer below 2^23 times 2^-29..2^-16, so |C| < 2^7 with its LSB at least
    2^-29. The anchor is at most 10, the grid 2^(anchor - 40) at most 2^-30: no cut is inexact."""
    rng = np.random.default_rng(seed)
    a = random_tensor(rng, name, 2, n_blocks)
    b = random_tensor(rng, name, 2, n_blocks)
    c = (rng.integers(-(2**23), 2**23, size=2) * 2.0 ** rng.integers(-29, -15, size=2)).astype(np.float32)
    acc = Accumulator(
        mode="aligned", frac_bits=40, accumulate="fused", step=32 * n_blocks, output=output, output_rounding=rounding
    )
    bits, _ = fast_steps(a, b, acc, c.view(np.uint32))
    for r in range(2):
        exact = Fraction(float(c[r]))
        for j in range(n_blocks):
            scale = TWO ** (int(a.scales[r, j]) - 127 + int(b.scales[r, j]) - 127)
            for i in range(32 * j, 32 * (j + 1)):
                exact += (
                    decode(int(a.codes[r, i]), a.fmt.element).value
                    * decode(int(b.codes[r, i]), b.fmt.element).value
                    * scale
                )
        assert int(bits[r]) == round_word(exact < 0, abs(exact), acc)
        AGREEMENTS["round-once rows"] += 1


# --- differential: fast == independent oracle ------------------------------------------------------
ORACLE_PAIRS = [
    ("mxfp8_e4m3", "mxfp8_e4m3"),
    ("mxfp8_e5m2", "mxfp8_e5m2"),
    ("mxfp8_e4m3", "mxfp8_e5m2"),
    ("mxfp4_e2m1", "mxfp4_e2m1"),
    ("mxfp6_e3m2", "mxfp6_e2m3"),
    ("mxint8", "mxint8"),
    ("mxfp4_e2m1", "mxfp8_e4m3"),
    ("nvfp4", "nvfp4"),
]
REFERENCE_PAIRS = ORACLE_PAIRS + [("mx9", "mx6"), ("mx4", "mx9"), ("msfp16", "msfp12"), ("mxint8", "mxfp8_e5m2")]


@st.composite
def fused_accumulators(draw, fmt_a, fmt_b):
    """Any valid fused configuration for the pair: steps dividing a block or spanning 2 or 4,
    both anchors (bypass with 'fixed'), product or block terms, every output, rounding, overflow,
    ftz, NaN pattern and zero-C exponent."""
    k = fmt_a.block_size
    divisors = [d for d in range(1, k + 1) if k % d == 0]
    anchor = draw(st.sampled_from(["max", "fixed"]))
    step = draw(st.sampled_from(divisors + ([2 * k, 4 * k] if anchor == "max" else [])))
    significand_scales = fmt_a.scale.mantissa_bits or fmt_b.scale.mantissa_bits
    terms = "block" if significand_scales else draw(st.sampled_from(["product", "block"]))
    kw = {}
    if terms == "block":
        kw["term_size"] = draw(st.sampled_from([d for d in divisors if step % d == 0]))
    if anchor == "fixed":
        kw["bypass"] = draw(st.sampled_from([None, 0, 10, 40, 70]))
    output = draw(st.sampled_from(list(OUTPUTS)))
    return Accumulator(
        mode="aligned",
        frac_bits=draw(st.integers(0, 44)),
        accumulate="fused",
        step=step,
        step_terms=terms,
        anchor=anchor,
        shift_rounding=draw(st.sampled_from(["truncate", "rne"])),
        output=output,
        output_rounding=draw(st.sampled_from(ROUNDINGS)),
        output_overflow=draw(st.sampled_from(["inf", "ieee", "saturate"])),
        ftz=draw(st.booleans()),
        nan_bits=draw(st.sampled_from([None, NAN_PATTERNS[output]])),
        c_zero_exponent=draw(st.sampled_from([None, -127, -150, 20])),
        **kw,
    )


@st.composite
def fused_cases(draw, pairs):
    name_a, name_b = draw(st.sampled_from(pairs))
    fmt_a, fmt_b = get_format(name_a), get_format(name_b)
    acc = draw(fused_accumulators(fmt_a, fmt_b))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows, n_blocks = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    knobs = {
        "p_zero": draw(st.sampled_from([0.0, 0.3, 0.95])),
        "p_special": draw(st.sampled_from([0.0, 0.0, 0.02])),
        "p_top": draw(st.sampled_from([0.0, 0.2, 1.0])),
        "spread": draw(st.sampled_from([0, 3, 40])),
        "p_edge": draw(st.sampled_from([0.0, 0.0, 0.1])),
    }
    a = random_tensor(rng, name_a, rows, n_blocks, **knobs)
    b = random_tensor(rng, name_b, rows, n_blocks, **knobs)
    c = draw(st.one_of(st.none(), st.just(random_c(rng, rows, draw(st.sampled_from([0.0, 0.5, 1.0]))))))
    return a, b, acc, c


@given(fused_cases(ORACLE_PAIRS))
@_settings(100)
def test_fast_equals_oracle(case):
    check_against_oracle(*case)


# --- differential: fast == reference ---------------------------------------------------------------
@given(fused_cases(REFERENCE_PAIRS))
@_settings(100)
def test_fast_equals_reference_random_configurations(case):
    check_against_reference(*case)


FUSED_PRESETS = [name for name, acc in PRESETS.items() if acc.accumulate == "fused"]


def _accepts(preset: str, pair) -> bool:
    try:
        Accumulator.preset(preset).check_block_format(get_format(pair[0]), get_format(pair[1]))
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "preset,pair", [(p, pair) for p in FUSED_PRESETS for pair in REFERENCE_PAIRS if _accepts(p, pair)]
)
def test_fast_equals_reference_presets(preset, pair):
    """Every fused preset on every pair it accepts (the others are refused, as tested elsewhere),
    with each rounding mode, C of every class."""
    acc = Accumulator.preset(preset)
    rng = np.random.default_rng(sum(map(ord, preset + "".join(pair))))
    for rounding in ROUNDINGS:
        a = random_tensor(rng, pair[0], 3, 3, p_special=0.01, spread=4, p_edge=0.05)
        b = random_tensor(rng, pair[1], 3, 3, p_special=0.01, spread=4, p_edge=0.05)
        check_against_reference(a, b, replace_acc(acc, output_rounding=rounding), random_c(rng, 3, 0.5))


@pytest.mark.parametrize(
    "acc",
    [
        Accumulator.preset("blackwell_mxf8f6f4", step=8),  # 8 of 32
        Accumulator.preset("blackwell_mxf8f6f4", step=64),  # 64 over 2 blocks, partial last step
        Accumulator.preset("blackwell_mxf8f6f4", step=128),  # over 4 blocks
        Accumulator.preset("blackwell_mxf4nvf4", term_size=16, step=32, elements=None),  # terms of 16 in a 32-block
        Accumulator.preset("mxdotp_fp8", step=32, bypass=None),
        Accumulator.preset("hopper_fp8_wgmma", shift_rounding="rne", output="fp16", ftz=True, nan_bits=0x7E01),
    ],
    ids=["8of32", "64over2", "128over4", "terms16", "fixed32", "rne_fp16_ftz"],
)
@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp8_e5m2"])
def test_fast_equals_reference_steps_and_terms(acc, name):
    """Steps that divide a block or span several (with a partial last step: 5 blocks), block
    terms of 16 in a 32-block, E5M2's 70-bit fixed-grid sums, C of every class."""
    rng = np.random.default_rng(7)
    a = random_tensor(rng, name, 4, 5, p_top=0.3, spread=6, p_special=0.01)
    b = random_tensor(rng, name, 4, 5, p_top=0.3, spread=6, p_special=0.01)
    check_against_reference(a, b, acc, np.array(C_WORDS[:4], np.uint32))
    check_against_reference(a, b, acc, random_c(rng, 4, 0.0))


# (a, b, the largest step): a step's sum of products on the grid must be exact in float64, so
# E4M3 x E5M2 (q of 18 and 32 bits: products below 2^50) take steps of at most 8
FLOAT_STEP_PAIRS = [
    ("mxfp8_e4m3", "mxfp8_e4m3", 32),
    ("mxfp8_e4m3", "mxfp8_e5m2", 8),
    ("mxfp4_e2m1", "mxfp4_e2m1", 32),
    ("mxfp6_e3m2", "mxfp4_e2m1", 32),
    ("mxfp6_e2m3", "mxfp8_e4m3", 32),
    ("mxint8", "mxint8", 32),
    ("mxint8", "mxfp8_e4m3", 32),
]


def _uncut_frac_bits(element) -> int:
    """The smallest F whose grid holds every product exactly: fa + fb - emin_a - emin_b, with
    emin the subnormals' exponent of a float element (1 - bias) and 0 for an integer element."""
    return element.frac_bits if element.kind == "int" else element.mantissa_bits - (1 - element.bias)


@st.composite
def float_step_cases(draw):
    """Configurations of anchor='fixed' that the float64 steps take (fp32 output without ftz,
    rne/rtz/rup/rdn, product terms, F at least the pair's smallest), on long rows (C passes
    through many steps), scales far apart (C below the grid, bypass, cancellation, overflow) and
    C of every class, including values the first step's products cancel."""
    name_a, name_b, largest_step = draw(st.sampled_from(FLOAT_STEP_PAIRS))
    fmt_a, fmt_b = get_format(name_a), get_format(name_b)
    k = fmt_a.block_size
    smallest_f = _uncut_frac_bits(fmt_a.element) + _uncut_frac_bits(fmt_b.element)
    acc = Accumulator(
        mode="aligned",
        frac_bits=draw(st.integers(smallest_f, min(smallest_f + 8, 34))),
        accumulate="fused",
        step=draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if k % d == 0 and d <= largest_step])),
        anchor="fixed",
        bypass=draw(st.sampled_from([None, 0, 10, 40, 70])),
        output_rounding=draw(st.sampled_from(["rne", "rtz", "rup", "rdn"])),
        output_overflow=draw(st.sampled_from(["inf", "ieee", "saturate"])),
        nan_bits=draw(st.sampled_from([None, 0x7FFFFFFF])),
        c_zero_exponent=draw(st.sampled_from([None, -127, -150, 20])),
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    knobs = {
        "p_zero": draw(st.sampled_from([0.0, 0.3, 0.95])),
        "p_special": draw(st.sampled_from([0.0, 0.0, 0.01])),
        "p_top": draw(st.sampled_from([0.0, 0.5, 1.0])),
        "spread": draw(st.sampled_from([0, 3, 40, 127])),
    }
    rows, n_blocks = 6, draw(st.integers(1, 5))
    a = random_tensor(rng, name_a, rows, n_blocks, **knobs)
    b = random_tensor(rng, name_b, rows, n_blocks, **knobs)
    c = random_c(rng, rows, draw(st.sampled_from([0.0, 0.5])))
    exact = mxsim.dot(a, b, Accumulator(), c=None)  # C = -(the whole dot) cancels it up to rounding
    c = np.where(rng.random(rows) < 0.3, (-exact).astype(np.float32).view(np.uint32), c).astype(np.uint32)
    return a, b, acc, c


@given(float_step_cases())
@_settings(120)
def test_float_steps_equal_the_reference(case):
    """The float64 steps of anchor='fixed' (and the integer step for the lanes they leave) give
    the reference's every step and result."""
    a, b, acc, c = case
    kernel = fused_kernel.FusedKernel(a.fmt, b.fmt, acc, a.codes.shape[1] // a.fmt.block_size)
    assert kernel.grid_integers is not None  # the route under test
    check_against_reference(a, b, acc, c)


@pytest.mark.parametrize(
    "rounding,c_word,second,expected",
    [
        # V = 2^-30 + 2^-54 + 2^-106: float64 gives the fp32 midpoint 2^-30 + 2^-54 (2^-106 is far
        # below its ulp 2^-82), but V is above it: nearest-even rounds up to 2^-30 + 2^-53
        ("rne", 0x0A800000, 2.0**-8, 0x30800001),
        # V = 2^-30 - 2^-106: float64 gives 2^-30, an fp32 value, but V is below it: toward zero and
        # down give the fp32 below 2^-30, 2^-30 - 2^-54 (0x307FFFFF); up gives 2^-30
        ("rtz", 0x8A800000, 0.0, 0x307FFFFF),
        ("rdn", 0x8A800000, 0.0, 0x307FFFFF),
        ("rup", 0x8A800000, 0.0, 0x30800000),
    ],
)
def test_float_steps_round_the_exact_sum_once(rounding, c_word, second, expected):
    """MXDOTP, scales 2^-19 * 2^-19 (X = -38, grid 2^-72): products 16 * 16 = 2^8 (2^-30 with the
    scales) and, for the first case, 2^-8 * 2^-8 = 2^-16 (2^-54); C = +-2^-106 (word 0x0A800000)
    lies below the float64 precision of the sum: its sign must still decide the rounding."""
    a = b = e4m3_tensor([16.0, second] + [0.0] * 30, [108])
    acc = Accumulator.preset("mxdotp_fp8", output_rounding=rounding)
    assert fused_kernel.FusedKernel(a.fmt, b.fmt, acc, 1).grid_integers is not None
    assert result_word(a, b, acc, c_word) == expected


def test_fixed_anchor_lanes_beyond_the_wide_integers_use_the_reference(monkeypatch):
    """anchor='fixed' without bypass: C = 2^100 lies 120 bits above the grid of scales 1 and
    E5M2 sums; C = 2^-149 far below the grid of scales 2^60: both need more than 100 bits, so
    their rows are recomputed by the reference (and counted), the others not."""
    calls = []
    original = fused._by_reference
    monkeypatch.setattr(fused, "_by_reference", lambda rows, *args: calls.append(list(rows)) or original(rows, *args))
    rng = np.random.default_rng(3)
    a = random_tensor(rng, "mxfp8_e5m2", 3, 2, p_zero=0.0, spread=0)
    b = random_tensor(rng, "mxfp8_e5m2", 3, 2, p_zero=0.0, spread=0)
    a.scales[1] = 187  # 2^60
    acc = Accumulator(mode="aligned", frac_bits=34, accumulate="fused", step=8, anchor="fixed")
    check_against_reference(a, b, acc, np.array([0x71800000, 0x00000001, 0x3F800000], np.uint32))
    assert [int(r) for r in calls[0]] == [0, 1]


@pytest.mark.parametrize("route", ["max", "fixed", "reference"])
def test_chunk_and_tile_edges(monkeypatch, route):
    """Rows in chunks of 3 (on two threads) and tiles of a few blocks, so that C passes between
    tiles and chunks: equal to the reference and to one big chunk."""
    acc = {
        "max": Accumulator.preset("blackwell_mxf8f6f4", step=64),
        "fixed": Accumulator.preset("mxdotp_fp8"),
        "reference": Accumulator.preset("blackwell_mxf8f6f4", frac_bits=60),
    }[route]
    rng = np.random.default_rng(11)
    a = random_tensor(rng, "mxfp8_e4m3", 14, 5, p_special=0.005)
    b = random_tensor(rng, "mxfp8_e4m3", 14, 5, p_special=0.005)
    c = random_c(rng, 14, 0.3)
    whole = fast_steps(a, b, acc, c)
    monkeypatch.setattr(fused, "ROW_CHUNK", 3)
    monkeypatch.setattr(fused_kernel, "CHUNK_PRODUCTS", 3 * 64)
    monkeypatch.setattr(mxsim.fast.chunks, "_THREADS", 2)
    pieces = fast_steps(a, b, acc, c)
    assert all(np.array_equal(x, y) for x, y in zip(whole, pieces))
    check_against_reference(a, b, acc, c)


@pytest.mark.parametrize("across", ["fp32", "exact"])
def test_separate_with_c_equals_reference(across):
    rng = np.random.default_rng(5)
    for name, output in (("mxfp8_e4m3", "fp32"), ("mxfp4_e2m1", "bf16"), ("mx9", "fp16"), ("mxfp8_e5m2", "fp32_e8m13")):
        a = random_tensor(rng, name, 6, 3, p_special=0.01, p_edge=0.05)
        b = random_tensor(rng, name, 6, 3, p_special=0.01, p_edge=0.05)
        for overflow in ("inf", "ieee", "saturate"):
            acc = Accumulator(
                across_blocks=across,
                output=output,
                output_rounding=str(rng.choice(ROUNDINGS)),
                output_overflow=overflow,
                nan_bits=NAN_PATTERNS[output] if overflow == "ieee" else None,
            )
            check_against_reference(a, b, acc, np.array(C_WORDS[:6], np.uint32))
            check_against_reference(a, b, acc, None)


# --- output rounding: fast == reference on single values -------------------------------------------
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_round_output_equals_reference(output):
    """mxsim.fast.output.round_output against mxsim.ref.output.round_output on values near every
    boundary (ties, binade edges, the largest finite value, subnormals, 62-bit magnitudes), for
    every rounding, overflow rule, ftz and NaN pattern."""
    rng = np.random.default_rng(len(output))
    n = 400
    bits = rng.integers(1, 62, size=n)
    magnitude = rng.integers(0, 2**61, size=n) >> (61 - bits)
    magnitude[:40] = (1 << rng.integers(1, 60, size=40)) + rng.integers(-1, 2, size=40)  # near powers of two
    exponent = rng.integers(-200, 140, size=n) - bits
    exponent[40:80] = 128 - bits[40:80] + rng.integers(-2, 2, size=40)  # around the overflow threshold
    negative = rng.random(n) < 0.5
    special = np.where(rng.random(n) < 0.05, rng.choice([POS_INF, NEG_INF, NAN], size=n), FINITE).astype(np.int8)
    for rounding in ROUNDINGS:
        for overflow in ("inf", "ieee", "saturate"):
            for ftz in (False, True):
                acc = Accumulator(
                    output=output,
                    output_rounding=rounding,
                    output_overflow=overflow,
                    ftz=ftz,
                    nan_bits=NAN_PATTERNS[output] if ftz else None,
                )
                got = round_output(negative, magnitude, exponent, special, acc)
                for i in range(n):
                    if special[i] == NAN:
                        x = Exact.nan()
                    elif special[i] != FINITE:
                        x = Exact.inf(int(special[i] == NEG_INF))
                    else:
                        x = Exact(int(negative[i]), Fraction(int(magnitude[i])) * TWO ** int(exponent[i]))
                    assert int(got[i]) == ref_round_output(x, acc), (i, x, acc)
                AGREEMENTS["rounded values"] += n


# --- the tensor API and the command line -----------------------------------------------------------
def gemm_tensors():
    rng = np.random.default_rng(2)
    a = mxsim.quantize(rng.standard_normal((3, 1, 64)).astype(np.float32), "mxfp8_e4m3")
    b = mxsim.quantize(rng.standard_normal((2, 64)).astype(np.float32), "mxfp8_e4m3")
    return a, b


def test_c_broadcasts_and_any_byte_order():
    a, b = gemm_tensors()
    acc = Accumulator.preset("hopper_fp8_wgmma")
    c = np.array([[1.5, -2.25]], np.float32)
    native = mxsim.dot(a, b, acc, c=c, details=True)
    swapped = mxsim.dot(a, b, acc, c=c.astype(">f4"), details=True)
    full = mxsim.dot(a, b, acc, c=np.broadcast_to(c, (3, 2)).copy(), details=True)
    assert native.bits.shape == (3, 2) and native.steps.shape == (3, 2, 2) and native.steps.dtype == np.uint32
    for other in (swapped, full):
        assert np.array_equal(native.bits, other.bits) and np.array_equal(native.steps, other.steps)
    assert np.array_equal(native.steps[..., -1], native.bits)
    scalar = mxsim.dot(a, b, acc, c=np.float32(0.0), details=True)
    assert np.array_equal(scalar.bits, mxsim.dot(a, b, acc, details=True).bits)


@pytest.mark.parametrize(
    "c,message",
    [
        (np.zeros((3, 2)), "c must be a float32 array"),
        (np.zeros((3, 2), np.float16), "c must be a float32 array"),
        ([1.0, 2.0], "c must be a float32 array"),
        (np.zeros((4, 2), np.float32), "c of shape \\(4, 2\\) does not broadcast to the result shape \\(3, 2\\)"),
        (np.zeros((1, 3, 2), np.float32), "does not broadcast"),
    ],
)
def test_c_is_validated(c, message):
    a, b = gemm_tensors()
    for acc in (Accumulator(), Accumulator.preset("blackwell_mxf8f6f4")):
        with pytest.raises(ValueError, match=message):
            mxsim.dot(a, b, acc, c=c)


def test_fused_refuses_a_tensor_scale():
    x = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
    a = mxsim.quantize(x, "nvfp4")
    assert a.tensor_scale is not None
    with pytest.raises(ValueError, match="tensor scale.*nvfp4_tensor_scale='none'"):
        mxsim.dot(a, a, "blackwell_mxf4nvf4")
    mxsim.dot(a, a)  # separate accumulation keeps it
    plain = mxsim.quantize(x, "nvfp4", nvfp4_tensor_scale="none")
    check_against_reference(
        plain, plain, Accumulator.preset("blackwell_mxf4nvf4"), np.array([0, 0x3F800000], np.uint32)
    )


def test_separate_details_have_no_steps_and_c_none_is_unchanged():
    a, b = gemm_tensors()
    got = mxsim.dot(a, b, Accumulator(), details=True)
    assert got.steps.shape == (3, 2, 0) and got.steps.dtype == np.uint32
    assert np.array_equal(mxsim.dot(a, b).view(np.uint32), got.bits)
    rows_a = MXTensor.from_codes(a.scales[:2, 0], a.codes[:2, 0], a.fmt)
    check_against_reference(rows_a, b, Accumulator(), None)
    check_against_reference(rows_a, b, Accumulator(), np.array([0x80000000, 0x7F800000], np.uint32))


def test_fused_details_blocks_are_the_separate_block_dots():
    """DotResult's per-block arrays under fused steps are the block Dots of the same accumulator
    with separate accumulation (documented choice)."""
    a, b = gemm_tensors()
    fused_result = mxsim.dot(a, b, Accumulator.preset("mxdotp_fp8"), details=True)
    separate = mxsim.dot(
        a, b, Accumulator(mode="aligned", frac_bits=34, output_overflow="ieee"), details=True
    )
    for field in ("block_bits", "accumulator", "lsb_exponent", "anchor"):
        assert np.array_equal(getattr(fused_result, field), getattr(separate, field)), field
    assert fused_result.steps.shape == (3, 2, 8)


def test_cli_dot_with_c_and_fused_flags(tmp_path, capsys):
    a, b = gemm_tensors()
    save(a, tmp_path / "a.mx")
    save(b, tmp_path / "b.mx")
    c = np.array([[0.5], [-1.0], [np.inf]], np.float32)
    np.save(tmp_path / "c.npy", c)
    args = [
        "dot",
        tmp_path / "a.mx",
        tmp_path / "b.mx",
        tmp_path / "out.npy",
        "--preset",
        "blackwell_mxf8f6f4",
        "--step",
        "16",
        "--nan-bits",
        "0x7FC00001",
        "--c",
        tmp_path / "c.npy",
        "--details",
        tmp_path / "d.npz",
    ]
    assert main([str(x) for x in args]) == 0
    capsys.readouterr()
    acc = Accumulator.preset("blackwell_mxf8f6f4", step=16, nan_bits=0x7FC00001)
    want = mxsim.dot(a, b, acc, c=c, details=True)
    assert np.array_equal(np.load(tmp_path / "out.npy").view(np.uint32), want.bits)
    with np.load(tmp_path / "d.npz") as d:
        assert np.array_equal(d["steps"], want.steps) and d["steps"].shape == (3, 2, 4)
    assert main([str(x) for x in args[:4]] + ["--c", str(tmp_path / "missing.npy")]) != 0
