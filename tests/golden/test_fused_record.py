"""The fused steps' classes of many vectors at once (``mxsim.golden.coverage.rounding_record``, issue 33 item 3):
hand-built steps of four vectors in one record, each class worked out from its definition
(docs/numerics.md section 4.1; the module docstring lists them), each vector's own steps only."""

from __future__ import annotations

from fractions import Fraction

import pytest

from mxsim.golden.coverage.catalogue import class_names
from mxsim.golden.coverage.rounding_record import fused_flag_words
from mxsim.options import Accumulator
from mxsim.ref.exact import Exact
from mxsim.ref.fused import FusedStep

ACC = Accumulator(mode="aligned", frac_bits=20, accumulate="fused")  # fp32 output, rne
ONE, PLUS_ZERO = Exact(0, Fraction(1)), Exact(0)

VECTORS = [
    # C = 1 and P = -1: C + P = 0 is within 2^-8 |C| (c_cancellation); that step's D = +0 is not the last D;
    # the next step adds 1 exactly to +0 (an exact rounding)
    ((FusedStep(0x00000000, ONE, nonzero=True, products=(-1, 0), cut_products=(-1, 0), grid=-20, total=(0, -20)),
      FusedStep(0x3F800000, PLUS_ZERO, nonzero=True, products=(1, 0), cut_products=(1, 0), c_exponent=-126,
                grid=-20, total=(1, 0))),
     {"c_cancellation", "exact"}),
    # a NaN C: a special step, classed by its D alone
    ((FusedStep(0x7FC00000, Exact.nan(), special=True),), {"c_nan", "nan"}),
    # C = 1 bypasses products 3 * 2^-30 cut to 0 on the grid 2^-20: D = C, no total to round
    ((FusedStep(0x3F800000, ONE, nonzero=True, products=(3, -30), cut_products=(0, -20), grid=-20, bypass=True),),
     {"shift_inexact", "c_bypass"}),
    # fp32 max + half an ulp from a zero C, rounded to a finite D (saturation): overflow, no rounding class
    ((FusedStep(0x7F7FFFFF, PLUS_ZERO, nonzero=True, products=((1 << 25) - 1, 103),
                cut_products=((1 << 25) - 1, 103), c_exponent=-126, grid=103, total=((1 << 25) - 1, 103)),),
     {"overflow", "saturation"}),
    # C = 2^-30 below the grid 2^-20 joins 1 exactly (anchor fixed: the lowest bit C's LSB 2^-53): 1 + 2^-30
    # rounds down to 1 (below half, nothing near a tie)
    ((FusedStep(0x3F800000, Exact(0, Fraction(1, 1 << 30)), nonzero=True, products=(1, 0), cut_products=(1, 0),
                c_exponent=-30, grid=-20, total=((1 << 30) + 1, -30)),),
     {"c_below_window", "below_half", "truncate"}),
    # anchor "max" set by a zero C (e_C = -126): products 3 * 2^-200 cut to 0 on the grid 2^-146, C lost
    ((FusedStep(0x00000000, PLUS_ZERO, nonzero=True, products=(3, -200), cut_products=(0, -146), c_exponent=-126,
                anchor=-126, grid=-146, total=(0, -146)),),
     {"c_zero_tiny", "shift_inexact", "zero"}),
    # products -2^-40 cut to 0 on the grid 2^-20 pass C = -0 on (no total): the last D is -0
    ((FusedStep(0x80000000, Exact(1), nonzero=True, products=(-1, -40), cut_products=(0, -20), c_exponent=-126,
                grid=-20),),
     {"negative_zero", "shift_inexact"}),
]


def test_each_vector_gets_its_own_steps_classes():
    words = fused_flag_words([(steps, steps[0].c, steps[-1].code) for steps, _ in VECTORS], ACC)
    assert [set(class_names(word)) for word in words] == [expected for _, expected in VECTORS]


def test_one_vector_alone_gets_the_same_classes():
    for steps, expected in VECTORS:
        assert set(class_names(fused_flag_words([(steps, steps[0].c, steps[-1].code)], ACC)[0])) == expected


def test_no_vectors_no_words():
    assert fused_flag_words([], ACC) == []


def test_the_fast_paths_record_holds_wide_totals_as_python_integers(monkeypatch):
    """A fixed anchor without a bypass joins C exactly: a C far above the grid makes totals int64 cannot
    hold; the fast path's record carries them as Python integers and classes them as the reference does."""
    import random

    from mxsim.golden.compute import pipeline
    from mxsim.golden.compute.crosscheck import reference_expected
    from mxsim.golden.kinds import fused_batch
    from mxsim.golden.kinds.registry import suite_from_spec

    suite = suite_from_spec("dot", block_a="mxfp8_e4m3", steps=True, accumulator={
        "accumulate": "fused", "mode": "aligned", "frac_bits": 20, "step": 8, "anchor": "fixed"})
    assert fused_batch.models(suite.acc) and suite.acc.bypass is None
    rows = [row for row, _ in pipeline.vectors(suite, 0, 1, pipeline.plan(suite, 1))][:300]
    rng = random.Random("test_fused_record:wide totals")
    for row in rows[::2]:  # |C| in [2^23, 2^128): 40 to 150 bits above the grid of unit scales
        row["c"] = rng.getrandbits(1) << 31 | rng.randint(150, 254) << 23 | rng.getrandbits(23)
    inputs = {f.name: [row[f.name] for row in rows] for f in suite.inputs}
    kinds = []
    original = fused_batch._StepClasses._totals
    monkeypatch.setattr(fused_batch._StepClasses, "_totals",
                        lambda self, *a: kinds.append(original(self, *a).magnitude.dtype) or original(self, *a))
    fast_outputs, fast_flags = suite.compute_batch(inputs)
    ref_outputs, ref_flags = reference_expected(suite, inputs)
    assert object in kinds
    assert [int(f) for f in fast_flags] == ref_flags
    assert [int(r) for r in fast_outputs["result"]] == ref_outputs["result"]


@pytest.mark.parametrize("names", [("mxfp8_e4m3", "mxfp8_e4m3"), ("mxfp8_e5m2", "mxfp4_e2m1"), ("mxint8", "mxint8"),
                                   ("mx9", "mx9"), ("nvfp4", "nvfp4"), ("mxfp6_e3m2", "mxfp6_e2m3")])
def test_block_pair_classes_in_bulk_are_the_per_pair_rule(names):
    """The reference's fused vectors take their element classes in bulk (fused_batch.element_flags); the
    per-pair rule (coverage.accumulator.element_classes, which separate accumulation keeps) gives the same
    classes on seeded random block pairs with every code class drawn often (zeros, NaN, Inf, max, edge scales)."""
    import random

    import numpy as np

    from mxsim.formats import get_format
    from mxsim.golden.coverage.accumulator import element_classes
    from mxsim.golden.coverage.catalogue import flag_bits
    from mxsim.golden.kinds.fused_batch import element_flags
    from mxsim.ref.block import QuantizedBlock

    fa, fb = (get_format(name, kind="block") for name in names)
    rng = random.Random(f"test_fused_record:{names}")

    def block(fmt):
        k, width = fmt.block_size, fmt.element.width
        few = [rng.randrange(1 << width) for _ in range(3)]  # a few codes repeated: all-zero and max blocks occur
        codes = tuple(rng.choice(few) if rng.random() < 0.5 else rng.randrange(1 << width) for _ in range(k))
        if rng.random() < 0.2:
            codes = (0,) * k
        scale = rng.choice([0, 0xFE, 0xFF, rng.randrange(1 << fmt.scale.width)]) % (1 << fmt.scale.width)
        subs = tuple(rng.randrange(1 << fmt.subscale_bits) for _ in range(fmt.subblocks)) if fmt.subblocks else ()
        return QuantizedBlock(scale, subs, codes)

    pairs = [(block(fa), block(fb)) for _ in range(600)]
    words = element_flags(fa, fb, np.array([a.scale for a, _ in pairs]), np.array([a.codes for a, _ in pairs]),
                          np.array([b.scale for _, b in pairs]), np.array([b.codes for _, b in pairs]))
    expected = [flag_bits(element_classes(a, b, fa, fb)) for a, b in pairs]
    assert words.tolist() == expected
    assert len(set(expected)) > 5  # many different class sets were drawn
