"""The reference's shortcuts against plain definitions: fp32_add's integer path against IEEE float32
addition (NumPy) and against the exact sum rounded once; the decoder's kept values (bounded, the
same values) against a fresh decode."""

from __future__ import annotations

import importlib
import random
from fractions import Fraction

import numpy as np
import pytest

from mxsim.formats import get_format
from mxsim.ref.stored_block import to_fp32
from mxsim.ref.decode import decode
from mxsim.ref.exact import Exact
from mxsim.ref.output import fp32_add, fp32_add_dyadic

FP32 = get_format("fp32")
decode_module = importlib.import_module("mxsim.ref.decode")  # the module (mxsim.ref exports the function)


def _fp32_words(rng: random.Random, n: int) -> list[int]:
    """Random fp32 bit patterns weighted toward zeros, subnormals, the largest values and close exponents."""
    words = []
    for _ in range(n):
        kind = rng.randrange(6)
        sign = rng.getrandbits(1) << 31
        if kind == 0:
            words.append(sign | rng.choice([0, 1, 0x7FFFFF, 0x800000, 0x7F7FFFFF]))
        elif kind == 1:
            words.append(sign | rng.randrange(1, 1 << 23))
        elif kind == 2:
            words.append(sign | rng.randrange(0xFE - 3, 0xFF) << 23 | rng.getrandbits(23))
        else:
            words.append(sign | rng.randrange(120, 135) << 23 | rng.getrandbits(23))
    return words


def test_fp32_add_of_fp32_values_is_ieee_float32_addition():
    """Every sum of two fp32 values, signs of zero and overflow to Inf included, is NumPy's float32 sum."""
    rng = random.Random(20261126)
    xs, ys = _fp32_words(rng, 20000), _fp32_words(rng, 20000)
    with np.errstate(over="ignore"):
        expected = (np.array(xs, np.uint32).view(np.float32) + np.array(ys, np.uint32).view(np.float32)).view(np.uint32)
    for x, y, want in zip(xs, ys, expected.tolist()):
        got = fp32_add(decode(x, FP32), decode(y, FP32))
        assert got == decode(want, FP32), (hex(x), hex(y))


def test_fp32_add_of_an_exact_term_rounds_the_exact_sum_once():
    """A term with more bits than fp32 (a product, dyadic or not) is added exactly and the sum rounded once."""
    rng = random.Random(7)
    for _ in range(5000):
        x = decode(rng.choice(_fp32_words(rng, 1)), FP32)
        if not x.is_finite:
            continue
        denominator = 1 << rng.randrange(0, 200) if rng.random() < 0.8 else rng.choice([3, 5, 7 << 40])
        y = Exact(rng.getrandbits(1), Fraction(rng.getrandbits(rng.randrange(1, 60)), denominator))
        total = x.value + y.value
        want = Exact(int(x.sign and y.sign and x.is_zero and y.is_zero)) if total == 0 else to_fp32(total)
        assert fp32_add(x, y) == want, (x, y)


def test_fp32_add_dyadic_is_the_exact_sum_rounded_once():
    """The integer core (sign, n, e) = (-1)^sign * n * 2^e: the exact sum rounded once to fp32 (to_fp32 of
    the Fraction), an exact zero +0 unless both are -0, +-Inf past the largest value; operands from
    2^-200 to beyond 2^128 and sums of at most 24 bits at the edges (2^-149, 2^128) included."""
    rng = random.Random(11)
    cases = [((0, 1, -149), (0, 1, -149)), ((0, 1, -150), (0, 0, 0)), ((0, 3, -151), (1, 0, 5)),
             ((0, 1, 127), (0, 1, 127)), ((0, (1 << 24) - 1, 104), (0, 1, 104)), ((0, (1 << 23) + 1, 105), (0, 0, 0)),
             ((0, 1, 104), (0, (1 << 24) - 2, 104)), ((1, 0, 0), (1, 0, 9)), ((1, 0, 0), (0, 0, 0)),
             ((0, 5, 3), (1, 5, 3))]
    for _ in range(20000):
        cases.append(tuple((rng.getrandbits(1), rng.getrandbits(rng.randrange(0, 31)), rng.randrange(-200, 131))
                           for _ in range(2)))
    for x, y in cases:
        total = sum(Fraction(-n if s else n) * Fraction(2) ** e for s, n, e in (x, y))
        sign, n, e = fp32_add_dyadic(x, y)
        if total == 0:
            assert (sign, n) == (int(x[0] and y[0] and not x[1] and not y[1]), 0), (x, y)
            continue
        want = to_fp32(total)
        if want.is_inf:
            assert (sign, n) == (want.sign, None), (x, y)
        else:
            assert Exact(sign, Fraction(n) * Fraction(2) ** e) == want, (x, y)


def test_decode_keeps_a_bounded_number_of_wide_values_and_they_are_the_decoded_ones():
    """More distinct fp32 codes than the decoder keeps: its store stays within the bound, and
    every value (read a first and a second time) is the rule's."""
    rng = random.Random(3)
    codes = [rng.getrandbits(32) for _ in range(decode_module._RECENT_HELD + 1000)]
    for code in codes[:3000] + codes + codes[-3000:]:
        assert decode(code, FP32) == decode_module._decode_code(code, FP32)
    kept = decode_module._TABLES[id(FP32)][1]
    assert len(kept) <= decode_module._RECENT_HELD


def test_a_format_from_another_process_hashes_as_the_same_format_here():
    """Formats keep their hash once computed; a format pickled by a process with another string
    hash seed is equal to ours and finds our dict entries (its kept hash is not pickled)."""
    import os
    import pickle
    import subprocess
    import sys

    here = get_format("mxfp8_e4m3")
    table = {here: "ours", here.element: "element"}
    script = ("import pickle, sys; from mxsim.formats import get_format; f = get_format('mxfp8_e4m3'); "
              "hash(f); hash(f.element); sys.stdout.buffer.write(pickle.dumps(f))")
    for seed in ("1", "2"):
        blob = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        there = pickle.loads(blob)
        assert there == here and hash(there) == hash(here)
        assert table[there] == "ours" and table[there.element] == "element"


def test_the_fused_step_record_built_fast_is_the_dataclass():
    """ref.fused builds its FusedStep records without the frozen dataclass's __init__: each equals
    FusedStep(...) of the same fields, field for field, and stays frozen."""
    import dataclasses

    import pytest

    from mxsim.ref.fused import FusedStep, _fused_step

    c = Exact(1, Fraction(3, 8))
    cases = [dict(special=True), dict(nonzero=True, products=(5, -2), cut_products=(1, 0), c_exponent=-2,
                                      grid=-20, total=(7, -3)),
             dict(anchor=4, grid=-21, bypass=True)]
    for given in cases:
        fast, plain = _fused_step(0x3F800000, c, **given), FusedStep(0x3F800000, c, **given)
        assert fast == plain and dataclasses.asdict(fast) == dataclasses.asdict(plain)
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.code = 0


def test_the_adder_steps_hold_every_field_of_the_dataclass():
    """The adder's path builds each FusedStep from a dict of its fields (ref.fused._step_of): on
    steps of every route (fixed anchor with bypass, max anchor, C joined late, block terms), every
    field is there, the step equals FusedStep(...) of the same fields, and it stays frozen."""
    import dataclasses

    import pytest

    from mxsim.options import Accumulator
    from mxsim.ref.block import QuantizedBlock
    from mxsim.ref.fused import FusedStep, fused_step_details

    names = {f.name for f in dataclasses.fields(FusedStep)}
    rng = random.Random(9)
    seen = set()
    for preset, block in [("mxdotp_fp8", "mxfp8_e4m3"), ("blackwell_mxf8f6f4", "mxfp8_e4m3"),
                          ("cdna3_fp8_mfma", None), ("blackwell_mxf4nvf4", "nvfp4")]:
        acc = Accumulator.resolve(preset)
        fmt = get_format(block) if block else get_format("mxfp8_e4m3")
        if preset == "cdna3_fp8_mfma":
            from mxsim.formats import BlockFormat
            fmt = BlockFormat("mx_fp8_e4m3fnuz", get_format("fp8_e4m3fnuz"), 32, get_format("e8m0"))
        for _ in range(40):
            blocks = [[QuantizedBlock(rng.choice([120, 127, 130]), (), tuple(rng.randrange(1 << fmt.element.width)
                                                                            for _ in range(fmt.block_size)))
                       for _ in range(2)] for _ in range(2)]
            if fmt.scale.name != "e8m0":
                blocks = [[QuantizedBlock(rng.randrange(1, 0x7F), (), b.codes) for b in side] for side in blocks]
            c = Exact(rng.randrange(2), Fraction(rng.randrange(1, 1 << 24), 1 << rng.randrange(0, 60)))
            if rng.random() < 0.3:  # a C far above the products (MXDOTP's bypass)
                c = Exact(rng.randrange(2), Fraction(rng.randrange(1 << 23, 1 << 24) << rng.randrange(20, 60)))
            for step in fused_step_details(blocks[0], blocks[1], fmt, fmt, acc, c):
                assert set(step.__dict__) == names
                assert step == FusedStep(**{name: getattr(step, name) for name in names})
                with pytest.raises(dataclasses.FrozenInstanceError):
                    step.code = 0
                seen.add((preset, "special" if step.special else "bypass" if step.bypass else
                          "passed" if step.total is None else "rounded"))
    assert {(preset, "rounded") for preset in ("mxdotp_fp8", "blackwell_mxf8f6f4", "cdna3_fp8_mfma",
                                               "blackwell_mxf4nvf4")} <= seen, seen
    assert {("mxdotp_fp8", "bypass"), ("mxdotp_fp8", "special")} <= seen, seen


def test_block_products_keeps_recent_calls_only_for_the_same_immutable_arguments():
    """block_products returns a recent call's products again for the same tuple and format objects, and the
    products of the definition (products of the blocks' terms) for anything else: other codes, other sub-scales,
    other formats, a list of codes changed in place between two calls; and its checks' error for an equal tuple
    holding a bool."""
    from mxsim.ref.terms import block_products, block_terms, products

    def definition(codes_a, subs_a, fmt_a, codes_b, subs_b, fmt_b):
        return tuple(products(block_terms(codes_a, subs_a, fmt_a), block_terms(codes_b, subs_b, fmt_b)))

    rng = random.Random(5)
    e4m3, e5m2, mx9 = get_format("mxfp8_e4m3"), get_format("mxfp8_e5m2"), get_format("mx9")
    a, b = tuple(rng.randrange(256) for _ in range(32)), tuple(rng.randrange(256) for _ in range(32))
    first = block_products(a, (), e4m3, b, (), e4m3)
    assert first == definition(a, (), e4m3, b, (), e4m3)
    assert block_products(a, (), e4m3, b, (), e4m3) is first  # kept
    assert block_products(a, (), e5m2, b, (), e4m3) == definition(a, (), e5m2, b, (), e4m3)  # another format
    assert block_products(a, (), e4m3, b, (), e4m3) == first
    b2 = b[:-1] + ((b[-1] + 1) % 256,)
    assert block_products(a, (), e4m3, b2, (), e4m3) == definition(a, (), e4m3, b2, (), e4m3) != first
    codes = list(a)
    assert block_products(codes, (), e4m3, b, (), e4m3) == first
    codes[0] = (codes[0] + 1) % 256  # changed in place: never the kept products
    assert block_products(codes, (), e4m3, b, (), e4m3) == definition(tuple(codes), (), e4m3, b, (), e4m3)
    m9a, m9b = tuple(rng.randrange(128) for _ in range(16)), tuple(rng.randrange(128) for _ in range(16))
    for subs in [(0,) * 8, (1, 0, 1, 0, 1, 0, 1, 0), (1,) * 8]:
        assert block_products(m9a, subs, mx9, m9b, (0,) * 8, mx9) == definition(m9a, subs, mx9, m9b, (0,) * 8, mx9)
    for _ in range(40):  # more calls than are kept, then the first again: recomputed, the same products
        c = tuple(rng.randrange(256) for _ in range(32))
        assert block_products(c, (), e4m3, b, (), e5m2) == definition(c, (), e4m3, b, (), e5m2)
    assert block_products(a, (), e4m3, b, (), e4m3) == first
    with pytest.raises(ValueError, match="code"):  # an unhashable code is refused by the checks, not by the keeping
        block_products(a[:-1] + ([1],), (), e4m3, b, (), e4m3)
    ones = (1,) * 32
    assert block_products(ones, (), e4m3, b, (), e4m3) == definition(ones, (), e4m3, b, (), e4m3)
    with pytest.raises(ValueError, match="code True"):  # equal to the kept (1, ...), but a bool is no code
        block_products((True,) * 32, (), e4m3, b, (), e4m3)


def _dyadic_pairs(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """Random (n, x) pairs, many of them not reduced (trailing zero bits in n) and some zero."""
    pairs = []
    for _ in range(n):
        m = rng.choice([0, 1, -1, rng.randrange(-2**40, 2**40), rng.randrange(-255, 256) << rng.randrange(0, 30)])
        pairs.append((m, rng.randrange(-160, 60)))
    return pairs


def test_a_fused_steps_dyadic_sums_are_the_fractions_they_stand_for():
    """ref.fused keeps a step's sums as dyadic pairs (n, x) = n * 2^x: dyadic_sum and dyadic_equal
    against the same values as Fractions, on 4,000 random pairs (unreduced ones included: (2, 0)
    and (1, 1) are equal, which comparing the pairs themselves would miss)."""
    from mxsim.ref.fused import dyadic_equal, dyadic_sum

    def value(pair):
        n, x = pair
        return Fraction(n) * Fraction(2) ** x

    rng = random.Random(41)
    pairs = _dyadic_pairs(rng, 4000)
    for a, b in zip(pairs, pairs[1:] + pairs[:1]):
        assert value(dyadic_sum(a, b)) == value(a) + value(b)
        assert dyadic_equal(a, b) == (value(a) == value(b))
        assert dyadic_equal(a, (a[0] << 3, a[1] - 3)) and dyadic_equal((0, 5), (0, -7))
    assert dyadic_equal((2, 0), (1, 1)) and not dyadic_equal((3, 0), (1, 1)) and not dyadic_equal((1, 0), (-1, 0))


def test_rounding_a_sum_from_its_integers_is_round_output_of_its_value():
    """round_finite_output (what a fused step rounds its dyadic total with) gives round_output of the
    same value, for ratios that are not reduced, across output formats, roundings and overflow
    rules, ftz and both signs of zero."""
    from mxsim.options import Accumulator
    from mxsim.ref.output import round_finite_output, round_output

    rng = random.Random(43)
    accumulators = [Accumulator(output=o, output_rounding=r, output_overflow=v, ftz=f)
                    for o in ("fp32", "bf16", "fp16", "fp32_e8m13")
                    for r in ("rne", "rtz", "rup", "rdn", "rna")
                    for v in ("inf", "ieee", "saturate")
                    for f in (False, True)]
    for n, x in _dyadic_pairs(rng, 3000):
        acc = rng.choice(accumulators)
        negative, magnitude = n < 0 or (n == 0 and rng.random() < 0.5), abs(n)
        common = 1 << rng.randrange(0, 5)  # a factor in both terms: the ratio is not reduced
        numerator, denominator = (magnitude << x, 1) if x >= 0 else (magnitude, 1 << -x)
        value = Exact(int(negative), Fraction(numerator, denominator))
        assert round_finite_output(negative, numerator * common, denominator * common, acc) == round_output(value, acc)


def test_read_back_is_decode_without_its_cache():
    """ref.decode.read_back (a fused step's D read back as the next C) gives decode's value for
    every kind of code of the output formats: zeros of both signs, subnormals, normals, the
    largest finite values, Inf and NaN; and it leaves decode's cache of recent codes as it was."""
    from mxsim.ref.decode import read_back

    rng = random.Random(11)
    for name in ("fp32", "bf16", "fp16"):
        fmt = get_format(name)
        top = fmt.inf_code()
        special = [0, fmt.sign_mask, 1, fmt.sign_mask | 1, top - 1, top, fmt.sign_mask | top, top | 1,
                   (1 << fmt.width) - 1, 1 << fmt.mantissa_bits, (1 << fmt.mantissa_bits) - 1]
        codes = special + [rng.getrandbits(fmt.width) for _ in range(2000)]
        for code in codes:
            assert read_back(code, fmt) == decode(code, fmt), (name, hex(code))
        tables = importlib.import_module("mxsim.ref.decode")._TABLES

        def kept_counts():
            return {key: len(kept) for key, (_, kept) in tables.items() if isinstance(kept, dict)}

        before = kept_counts()
        for _ in range(200):
            read_back(rng.getrandbits(fmt.width), fmt)
        assert kept_counts() == before
