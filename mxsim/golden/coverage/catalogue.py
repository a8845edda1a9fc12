"""The catalogue of corner classes. Every vector's ``flags`` field has bit i set when it
exercises class i; the manifest counts vectors per class. Classes are computed from each
vector's content by the suite (not from how it was chosen), except ``exhaustive``, ``directed``
and ``random``, which say where the stimulus came from."""

from __future__ import annotations

__all__ = ["CLASSES", "FLAGS_BITS", "flag_bits", "class_names", "ORIGIN_MASK"]

FLAGS_BITS = 64  # the width of the flags field (int64 arrays hold bits 0..62)

CLASSES: dict[str, str] = {
    "exhaustive": "part of an exhaustive enumeration (every code, or every code pair)",
    "directed": "a directed corner case from the catalogue",
    "random": "seeded random stimulus",
    "zero": "a zero input, element or result",
    "negative_zero": "a -0 input or result",
    "max": "a largest-magnitude finite element or result",
    "overflow": "an input or exact result beyond the largest finite output",
    "saturation": "a value clamped to the largest finite magnitude",
    "tie": "an exact tie for the rounding (midpoint between two representable values)",
    "subnormal_input": "a subnormal input (fp32 subnormal, or a subnormal element code)",
    "subnormal_output": "a subnormal result code",
    "carry": "rounding carried into the next binade",
    "nan": "a NaN input, element or result",
    "inf": "an Inf input, element or result",
    "scale_min": "a block scale at its lower clamp scale_min (E8M0 0x00 = 2^-127; int8_exponent 0x80 = 2^-128)",
    "scale_max": "a block scale 2^127 (E8M0 0xFE; int8_exponent 0x7F)",
    "scale_nan": "a NaN scale code (E8M0 0xFF, UE4M3 0x7F)",
    "scale_clamp": "the block scale was clamped to the scale format's range",
    "int8_neg2": "the MXINT8 code 0x80 (-2.0)",
    "all_zero": "a block of zeros only",
    "cancellation": "nonzero products that sum to exactly zero",
    "subnormal_product": "a product with a subnormal element",
    "shift_inexact": "the aligned register dropped product bits (truncate and rne can differ)",
    "acc_overflow": "the aligned register overflowed its width (saturated or wrapped)",
    "mixed_signs": "products of both signs",
    # the accumulator input C (contract 4.1); new classes go last, so older flags keep their bits
    "c_nan": "the accumulator input C is NaN",
    "c_bypass": "a nonzero C dominates a fused step: D = C although a product is nonzero (anchor='fixed': the "
                "bypass; anchor='max': C is the anchor and every product bit is cut below its grid)",
    "c_cancellation": "C and nonzero products cancel: |C + products| (exact) is 0 or at most 2^-8 |C|",
    "c_zero_tiny": "a zero C decides a fused step with tiny products: the bypass (anchor='fixed'), or C's zero "
                   "exponent is the anchor and product bits are cut (anchor='max')",
    # rounding decisions (docs/numerics.md section 3.3; mxsim.golden.coverage.rounding)
    "exact": "a nonzero finite value the rounding keeps exactly (on the output grid)",
    "below_half": "an inexact rounding below the midpoint (guard bit clear)",
    "above_half": "an inexact rounding above the midpoint (guard bit and a sticky bit set)",
    "near_tie_top": "guard bit set and only the top sticky bit (the bit below the guard): 3/4 of the way",
    "near_tie_bottom": "guard bit set and only the bottom sticky bit: one input LSB above the midpoint",
    "near_tie_below": "guard bit clear and every sticky bit set: one input LSB below the midpoint",
    "subnormal_near_tie": "a near-tie (top, bottom or below) in a subnormal band of the output",
    "increment": "an inexact rounding that increased the magnitude (away from zero)",
    "truncate": "an inexact rounding that decreased the magnitude (toward zero)",
    "zero_result_sign": "a negative nonzero value whose result has magnitude zero (the sign of zero is checked)",
    # dots (docs/numerics.md section 3.3 (3), (5); mxsim.golden.stimulus.dot)
    "c_below_window": "a nonzero C of a fused step lies wholly below the step's grid LSB (|C| < 2^grid) while "
                      "products are nonzero: cut away (anchor='max') or kept as sticky bits only (anchor='fixed')",
    "inf_a": "an Inf element in operand a",
    "inf_b": "an Inf element in operand b",
    # near-ties per band (docs/numerics.md section 3.3 (1); mxsim.golden.coverage.rounding): the normal range, the zero
    # band [0, s) under the smallest subnormal s, and the three lowest subnormal binades [s, 2s), [2s, 4s),
    # [4s, 8s) (every subnormal band of an MX element format; the lowest ones of fp32/fp16/bf16)
    "near_tie_top_normal": "near_tie_top in the normal range",
    "near_tie_bottom_normal": "near_tie_bottom in the normal range",
    "near_tie_top_zero_band": "near_tie_top below the smallest subnormal s (3s/4: rounds to s)",
    "near_tie_bottom_zero_band": "near_tie_bottom below the smallest subnormal s (s/2 + one input LSB)",
    "near_tie_top_sub1": "near_tie_top in the lowest subnormal binade [s, 2s)",
    "near_tie_bottom_sub1": "near_tie_bottom in the lowest subnormal binade [s, 2s)",
    "near_tie_top_sub2": "near_tie_top in the subnormal binade [2s, 4s)",
    "near_tie_bottom_sub2": "near_tie_bottom in the subnormal binade [2s, 4s)",
    "near_tie_top_sub3": "near_tie_top in the subnormal binade [4s, 8s)",
    "near_tie_bottom_sub3": "near_tie_bottom in the subnormal binade [4s, 8s)",
}
_BITS = {name: i for i, name in enumerate(CLASSES)}
_NAMES = {i: name for name, i in _BITS.items()}
assert len(CLASSES) < FLAGS_BITS, "more classes than the flags field holds"


def flag_bits(names) -> int:
    """The flags word of a set of class names."""
    value = 0
    for name in names:
        value |= 1 << _BITS[name]
    return value


def class_names(flags: int) -> list[str]:
    """The class names of a flags word, in bit order (bits without a class are passed over)."""
    names, flags = [], int(flags)
    while flags:
        lowest = flags & -flags
        name = _NAMES.get(lowest.bit_length() - 1)
        if name is not None:
            names.append(name)
        flags ^= lowest
    return names

ORIGIN_MASK = flag_bits(["exhaustive", "directed", "random"])


def kind_classes(x) -> set:
    """nan, inf, zero or negative_zero, as the value is."""
    if x.is_nan:
        return {"nan"}
    if x.is_inf:
        return {"inf"}
    if x.is_zero:
        return {"negative_zero" if x.sign else "zero"}
    return set()
