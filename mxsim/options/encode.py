"""Element-encoding options of the numerics contract (docs/numerics.md section 1), shared by the
reference model and the fast path: their definitions, their validation, and what overflow produces.

Rounding modes (applied to the magnitude of the exact value on the format's grid):

* ``rne``: nearest, ties to the even integer significand (for a 0-mantissa-bit format such as
  E8M0 the significand of a tie is 1 or 2, so ties go up);
* ``rna``: nearest, ties away from zero;
* ``rtz``: toward zero; ``rup``: toward +inf; ``rdn``: toward -inf;
* ``stochastic``: with caller-supplied random bits r of ``rand_width`` R bits,
  magnitude = floor(|x| / ulp + r / 2^R): the same bits always give the same code.

Overflow (the rounded magnitude exceeds the largest finite value, or the input is +-Inf):

* ``saturate``: +-max finite (the default, and what MX conversion requires);
* ``ieee``: a finite value rounded toward zero for its sign (``rtz``; ``rup`` for negatives;
  ``rdn`` for positives) gives +-max finite, as IEEE 754 directed rounding does; otherwise, and
  always for an infinite input, +-Inf where the format has Inf, else NaN where it has NaN, else
  +-max finite;
* ``error``: raise :class:`OverflowError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import Choice, Data, Flag, IntRange, option, options_of

from ..formats import FORMATS

__all__ = [
    "ROUNDING_MODES",
    "OVERFLOW_MODES",
    "SOURCE_TYPES",
    "MAX_RAND_WIDTH",
    "EncodeOptions",
    "allows_most_negative_code",
    "check_encode_options",
    "check_int8_allow_neg2",
    "refuse_inapplicable",
    "rounds_toward_zero",
    "overflow_code",
    "saturation_code",
]

ROUNDING_MODES = ("rne", "rna", "rtz", "rup", "rdn", "stochastic")
OVERFLOW_MODES = ("saturate", "ieee", "error")
SOURCE_TYPES = ("fp32", "fp16", "bf16", "fp64", "fp8_e4m3", "fp8_e5m2")  # bit-pattern input types (section 1)
MAX_RAND_WIDTH = 32


@dataclass(frozen=True)
class EncodeOptions:
    """The options of :func:`mxsim.encode` / :func:`mxsim.ref.encode` (keyword arguments there)."""

    rounding: str = option("rne", ROUNDING_MODES, "element rounding of the exact magnitude; `stochastic` needs `rand_bits`", "1")
    overflow: str = option(
        "saturate", OVERFLOW_MODES,
        "`saturate`: ±max finite; `ieee`: Inf, else NaN, else ±max (directed roundings toward zero give ±max); "
        "`error`: raise `OverflowError`", "1",
    )
    rand_bits: object = option(
        None, Data("integers in [0, 2^rand_width), one per element"),
        "stochastic rounding's caller-supplied random integers, one per element", "1", cli=False,
    )
    rand_width: int = option(
        32, IntRange(1, MAX_RAND_WIDTH),
        "bits R of each random word; the R bits sit directly below the result's last bit", "1",
    )
    int8_allow_neg2: bool = option(
        False, Flag(), "let MXINT8 encode produce 0x80 (-2.0); otherwise -max is 0x81 (-127/64)", "1"
    )
    source: str | None = option(
        None, Choice(SOURCE_TYPES, "a float, bfloat16 or float8 array needs none"),
        "the type of unsigned-integer bit patterns (`fp32` uint32, `fp16`/`bf16` uint16, `fp8_e4m3`/`fp8_e5m2` "
        "uint8, `fp64` uint64)", "1",
    )


def refuse_inapplicable(option: str, value, fmt, applies, default) -> None:
    """ValueError if ``option`` has a value other than its ``default`` for a format it does not
    apply to (``applies(fmt)`` is false), naming the option, the format and the catalogue formats
    it applies to. An option left at its default is harmless anywhere and passes."""
    if value == default or applies(fmt):
        return
    kinds = ("block",) if fmt.kind == "block" else ("float", "int")
    where = [name for name, f in FORMATS.items() if f.kind in kinds and applies(f)]
    raise ValueError(
        f"{option}={value!r} is not allowed for format {fmt.name!r}: the option applies to {', '.join(where)} "
        f"only (other formats accept just its default, {default!r})"
    )


def allows_most_negative_code(fmt) -> bool:
    """Whether ``int8_allow_neg2`` applies: two's-complement integer elements (MXINT8's int8), the
    only ones with a most negative code that has no positive twin. Block formats: their element."""
    element = fmt.element if fmt.kind == "block" else fmt
    return element.kind == "int" and element.encoding == "twos_complement"


def check_int8_allow_neg2(fmt, int8_allow_neg2) -> None:
    """ValueError unless ``int8_allow_neg2`` is a bool, and False for formats without a
    two's-complement integer element (see :func:`refuse_inapplicable`)."""
    if not isinstance(int8_allow_neg2, bool):
        raise ValueError(f"int8_allow_neg2={int8_allow_neg2!r} is not allowed; expected True or False")
    refuse_inapplicable("int8_allow_neg2", int8_allow_neg2, fmt, allows_most_negative_code, False)


def check_encode_options(rounding: str, overflow: str, rand_bits, rand_width: int) -> None:
    """Validate the element-encoding options (the random bits themselves are checked where read)."""
    by_name = {o.name: o for o in options_of(EncodeOptions)}
    by_name["rounding"].check(rounding)
    by_name["overflow"].check(overflow)
    if rounding == "stochastic":
        if rand_bits is None:
            raise ValueError("rounding='stochastic' needs rand_bits (caller-supplied random integers)")
        by_name["rand_width"].check(rand_width)
    elif rand_bits is not None:
        raise ValueError(f"rand_bits is only used with rounding='stochastic', not rounding={rounding!r}")


def saturation_code(fmt, negative: bool, int8_allow_neg2: bool = False) -> int:
    """The code of the largest finite magnitude with the given sign.

    Two's-complement integers: +max is q = 2^(bits-1) - 1; -max is -(2^(bits-1) - 1) unless
    ``int8_allow_neg2`` admits the most negative code -2^(bits-1) (0x80 for MXINT8).
    """
    if fmt.kind == "int":
        if not negative:
            return fmt.max_int
        if fmt.encoding == "sign_magnitude":
            return fmt.sign_mask | fmt.max_int
        most_negative = -(1 << (fmt.bits - 1)) if int8_allow_neg2 else -fmt.max_int
        return most_negative & ((1 << fmt.bits) - 1)
    return fmt.max_code | (fmt.sign_mask if negative else 0)


def rounds_toward_zero(rounding: str, negative: bool) -> bool:
    """Whether ``rounding`` moves a value of this sign toward zero (rtz; rup of a negative; rdn of
    a positive): where IEEE 754 overflow gives +-max finite instead of +-Inf."""
    return rounding == "rtz" or (rounding == "rup" and negative) or (rounding == "rdn" and not negative)


def overflow_code(
    fmt,
    negative: bool,
    overflow: str,
    rounding: str,
    infinite_input: bool = False,
    int8_allow_neg2: bool = False,
    value_text: str = "",
) -> int:
    """The code an overflowing value encodes to (see the module docstring), or OverflowError."""
    if overflow == "error":
        sign = "-" if negative else "+"
        what = f"{sign}inf" if infinite_input else (value_text or "value")
        raise OverflowError(
            f"{what} overflows format {fmt.name!r} (largest finite magnitude {fmt.max_normal}) under overflow='error'"
        )
    if overflow == "ieee" and (infinite_input or not rounds_toward_zero(rounding, negative)):
        if fmt.has_inf:
            return fmt.inf_code(negative)
        if fmt.has_nan:
            return fmt.nan_code(negative)
    return saturation_code(fmt, negative, int8_allow_neg2)
