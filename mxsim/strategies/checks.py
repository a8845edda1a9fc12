"""Ready-made property checks: point one at your own implementation and it runs hypothesis
against mxsim's reference model, raising :class:`CheckFailure` with the shrunk counterexample.

* :func:`check_element_encoder`: ``encoder(x) -> code`` for a carrier value x (fp32/fp64/bf16/fp16).
* :func:`check_element_decoder`: ``decoder(code) -> float``, every code of the format.
* :func:`check_block_quantizer`: ``quantizer(values) -> (scale, codes)`` or
  ``(scale, subscales, codes)`` for one block of carrier values.
* :func:`check_dot`: ``dot(a, b) -> output code`` for two :class:`mxsim.ref.QuantizedBlock`.

Each check is reproducible (``seed``; no example database): the same seed, hypothesis version and
set of imported modules give the same inputs (hypothesis also mixes in constants it finds in the
caller's own modules, so importing more of them may change the inputs; a check's verdict on a
correct implementation never depends on them). It returns a :class:`CheckReport`
when the implementation agrees on every input tried. A failure is shrunk for about
``shrink_seconds`` (default 30 s; hypothesis finishes its current shrink pass, a few seconds at
most): the reported input is the smallest failing one found by then. ``shrink_seconds=None``
shrinks to the end: the report then depends only on the seed, never on the machine's speed. Codes in a failure are printed in hex and
binary at the format's width, with their values. Call a check from a plain test function, not
from inside another ``@given`` test.
"""

from __future__ import annotations

import operator
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from ..options import Accumulator, QuantizeOptions
from ..formats import get_format
from ..options.encode import ROUNDING_MODES, check_encode_options, check_int8_allow_neg2
from ..options.spec import check_choice
from ..ref import QuantizedBlock, to_exact
from ..ref import decode as ref_decode
from ..ref import encode as ref_encode
from ..ref.block import quantize_block
from ..ref.stored_block import check_tensor_scale
from ..ref.dot import dot as ref_dot
from ._carriers import get_carrier
from .blocks import block_codes, block_format, block_values
from .elements import BoundaryValue, _element, carrier_values, labelled_boundary_values
from .report import show_code, show_exact, show_value

__all__ = [
    "CheckFailure",
    "CheckReport",
    "check_block_quantizer",
    "check_dot",
    "check_element_decoder",
    "check_element_encoder",
]

NAN_POLICIES = ("exact", "any")


class CheckFailure(AssertionError):
    """An implementation disagrees with mxsim's reference; the message shows the counterexample."""


@dataclass
class CheckReport:
    """What a passing check tried: ``examples`` calls of the implementation (shrinking included),
    ``kinds`` how many inputs of each kind of decision point or block."""

    check: str
    examples: int = 0
    kinds: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        return f"{self.check}: {self.examples} inputs agree with the reference ({kinds})"


def _run(body, strategy, max_examples: int, seed: int, shrink_seconds: float | None) -> None:
    """Run ``body`` on examples of ``strategy``; a :class:`CheckFailure` is shrunk for at most
    ``shrink_seconds``, after which only examples already seen to fail are checked again (so the
    smallest failure found so far is the one reported). ``shrink_seconds=None``: no time budget,
    hypothesis shrinks to its own end, so the reported failure depends only on the seed and the
    implementation, never on the machine's speed (what a test that compares the report needs)."""
    if not isinstance(max_examples, int) or max_examples < 1:
        raise ValueError(f"max_examples={max_examples!r} is not allowed; expected a positive integer")
    if shrink_seconds is None:
        shrink_seconds = float("inf")
    if not isinstance(shrink_seconds, (int, float)) or isinstance(shrink_seconds, bool) or shrink_seconds < 0:
        raise ValueError(
            f"shrink_seconds={shrink_seconds!r} is not allowed; expected a non-negative number or None (no limit)"
        )
    first_failure: list[float] = []
    failing: set[str] = set()

    @settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,  # the CheckFailure message is the report
        suppress_health_check=list(HealthCheck),
        # no explain phase: it re-runs the failure under a tracer, past shrink_seconds
        phases=[phase for phase in Phase if phase is not Phase.explain],
    )
    @hypothesis_seed(seed)
    @given(strategy)
    def property_holds(example):
        key = repr(example)
        if first_failure and time.monotonic() - first_failure[0] > shrink_seconds and key not in failing:
            return
        try:
            body(example)
        except CheckFailure:
            first_failure[:] = first_failure or [time.monotonic()]
            failing.add(key)
            raise

    property_holds()


def _call(fn, *args):
    """(result, None), or (None, the exception) if the implementation raised."""
    try:
        return fn(*args), None
    except Exception as error:  # the user's function may raise anything; it is reported
        return None, error


def _as_code(result):
    try:
        return operator.index(result)
    except TypeError:
        return result


def _same_code(expected: int, got, fmt, nan: str) -> bool:
    if got == expected:
        return True
    if nan == "any" and isinstance(got, int) and 0 <= got < 1 << fmt.width:
        return ref_decode(expected, fmt).is_nan and ref_decode(got, fmt).is_nan
    return False


def _first_of(result, vectorized: bool):
    return np.asarray(result).reshape(-1)[0] if vectorized else result


# --- element encoder ---------------------------------------------------------------------------------
def check_element_encoder(
    encoder,
    fmt,
    rounding: str = "rne",
    overflow: str = "saturate",
    *,
    dtype="float32",
    int8_allow_neg2: bool = False,
    rand_width: int = 32,
    kinds=None,
    ulps: int = 2,
    nan: str = "exact",
    vectorized: bool = False,
    max_examples: int = 1000,
    seed: int = 0,
    shrink_seconds: float | None = 30.0,
) -> CheckReport:
    """Check ``encoder(x) -> code`` against :func:`mxsim.ref.encode` for element or scale format
    ``fmt`` with ``rounding`` and ``overflow`` (see :mod:`mxsim.options.encode`).

    Inputs are carrier values (``dtype``: float32, float64, bfloat16 as float32, float16): half
    drawn near the format's decision points (:func:`mxsim.strategies.boundary_values` with
    ``kinds`` and ``ulps``), half from arbitrary bit patterns (only the former when ``kinds`` is
    given). NaN inputs are drawn only for
    formats with a NaN. With ``rounding='stochastic'`` the encoder is called as
    ``encoder(x, r)`` with a ``rand_width``-bit random word r. Where the reference raises (an
    input the contract rejects: overflow='error', a negative or zero input to E8M0), the encoder
    must raise too. ``nan='any'`` accepts any NaN code where the reference gives NaN (default
    'exact': the contract's canonical NaN with the input's sign). ``vectorized``: the encoder
    takes and returns 1-element arrays.
    """
    element = _element(fmt)
    carrier = get_carrier(dtype)
    check_choice("rounding", rounding, ROUNDING_MODES)
    check_choice("nan", nan, NAN_POLICIES)
    stochastic = rounding == "stochastic"
    check_encode_options(rounding, overflow, 0 if stochastic else None, rand_width)
    check_int8_allow_neg2(element, int8_allow_neg2)
    near = labelled_boundary_values(element, carrier, kinds=kinds, ulps=ulps)
    anywhere = carrier_values(carrier, allow_nan=element.kind == "float" and element.has_nan).map(
        lambda v: BoundaryValue(v, "any", None, 0)
    )
    inputs = st.one_of(near, anywhere) if kinds is None else near
    words = st.integers(0, (1 << rand_width) - 1) if stochastic else st.none()
    report = CheckReport(f"{element.name} encoder ({rounding}, {overflow})")

    def body(example):
        drawn, word = example
        report.examples += 1
        report.kinds[drawn.kind] += 1
        x = np.asarray([drawn.value]) if vectorized else drawn.value
        got, error = _call(encoder, *((x, word) if stochastic else (x,)))
        try:
            expected = ref_encode(
                to_exact(float(drawn.value)),
                element,
                rounding,
                overflow,
                rand_bits=word,
                rand_width=rand_width,
                int8_allow_neg2=int8_allow_neg2,
            )
            rejected = None
        except (ValueError, OverflowError) as reason:
            expected, rejected = None, reason
        got = None if error else _as_code(_first_of(got, vectorized))
        if rejected is not None and error is not None:
            return
        if rejected is None and error is None and _same_code(expected, got, element, nan):
            return
        lines = [
            f"{report.check} disagrees with mxsim's reference",
            f"  input    : {show_value(drawn.value, carrier)}" + _origin(drawn, element),
        ]
        if stochastic:
            lines.append(f"  random   : 0x{word:0{(rand_width + 3) // 4}x} ({rand_width} bits)")
        lines.append(
            f"  expected : {show_code(expected, element)}"
            if rejected is None
            else f"  expected : an exception ({rejected})"
        )
        lines.append(
            f"  got      : {show_code(got, element)}"
            if error is None
            else f"  got      : {type(error).__name__}: {error}"
        )
        raise CheckFailure("\n".join(lines))

    _run(body, st.tuples(inputs, words), max_examples, seed, shrink_seconds)
    return report


def _origin(drawn: BoundaryValue, element) -> str:
    if drawn.point is None:
        return f"   [{drawn.kind}]" if drawn.kind != "any" else ""
    return f"   [{drawn.kind} point {show_exact(to_exact(drawn.point))} of {element.name}, {drawn.offset:+d} ulps]"


# --- element decoder ---------------------------------------------------------------------------------
def check_element_decoder(decoder, fmt, *, vectorized: bool = False) -> CheckReport:
    """Check ``decoder(code) -> float`` on every code of element or scale format ``fmt`` (at most
    16 bits, so the check is exhaustive rather than sampled) against :func:`mxsim.ref.decode`.

    The returned value (any float type) must equal the code's exact value, with the sign of zero
    and of Inf; any NaN is accepted for a NaN code. ``vectorized``: the decoder takes the array
    of all codes (uint16) and returns an array of values.
    """
    element = _element(fmt)
    codes = list(range(1 << element.width))
    if vectorized:
        values, error = _call(decoder, np.arange(len(codes), dtype=np.uint16))
        if error is None:
            values = np.asarray(values).reshape(-1)
            if values.shape != (len(codes),):
                error = ValueError(f"returned {values.shape[0]} values for {len(codes)} codes")
        results = [(v, error) for v in values] if error is None else [(None, error)] * len(codes)
    else:
        results = [_call(decoder, code) for code in codes]
    report = CheckReport(f"{element.name} decoder", examples=len(codes))
    failures = []
    for code, (value, error) in zip(codes, results):
        expected = ref_decode(code, element)
        report.kinds["nan" if expected.is_nan else "inf" if expected.is_inf else "finite"] += 1
        got = None
        if error is None:
            try:
                got = to_exact(float(value))
            except (TypeError, ValueError) as reason:
                error = reason
        if error is None and (got == expected or (expected.is_nan and got.is_nan)):
            continue
        failures.append((code, expected, got, error))
    if failures:
        code, expected, got, error = failures[0]
        shown = f"{type(error).__name__}: {error}" if error else show_exact(got)
        raise CheckFailure(
            f"{report.check} disagrees with mxsim's reference on {len(failures)} of {len(codes)} codes; the first:\n"
            f"  code     : {show_code(code, element)}\n"
            f"  expected : {show_exact(expected)}\n"
            f"  got      : {shown}"
        )
    return report


# --- block quantizer ---------------------------------------------------------------------------------
def _as_block(result, fmt) -> QuantizedBlock:
    if isinstance(result, QuantizedBlock):
        return result
    parts = tuple(result)
    if len(parts) == 2:
        scale, subscales, codes = parts[0], (), parts[1]
    elif len(parts) == 3:
        scale, subscales, codes = parts
    else:
        raise ValueError(f"returned {len(parts)} items; expected (scale, codes) or (scale, subscales, codes)")
    return QuantizedBlock(_as_code(scale), _as_codes(subscales), _as_codes(codes))


def _as_codes(array) -> tuple:
    return tuple(_as_code(c) for c in np.asarray(array).reshape(-1).tolist())


def check_block_quantizer(
    quantizer,
    fmt,
    *,
    dtype="float32",
    kinds=None,
    tensor_scale=None,
    max_examples: int = 300,
    seed: int = 0,
    shrink_seconds: float | None = 30.0,
    **options,
) -> CheckReport:
    """Check ``quantizer(values) -> (scale, codes)`` (or ``(scale, subscales, codes)``, or a
    :class:`mxsim.ref.QuantizedBlock`) against :func:`mxsim.ref.quantize_block` for block format
    ``fmt``. ``values`` is one block: a 1-d array of ``fmt.block_size`` carrier values drawn by
    :func:`mxsim.strategies.block_values` (``kinds``). ``options`` are the
    :class:`mxsim.QuantizeOptions` fields (scale_rule, rounding, inf_policy, ...; stochastic
    rounding is not checked here); ``tensor_scale`` is NVFP4's s_t (default 1; a finite positive
    fp32 value, see :func:`mxsim.ref.stored_block.check_tensor_scale`).
    """
    block_fmt = block_format(fmt)
    opts = QuantizeOptions.from_kwargs(**options)
    opts.check_format(block_fmt)
    if opts.rounding == "stochastic":
        raise ValueError(
            "rounding='stochastic' is not checked by check_block_quantizer; "
            f"expected one of {', '.join(ROUNDING_MODES[:-1])}"
        )
    carrier = get_carrier(dtype)
    scale_tensor = check_tensor_scale(block_fmt, tensor_scale)
    report = CheckReport(
        f"{block_fmt.name} quantizer ({', '.join(f'{k}={v}' for k, v in options.items()) or 'defaults'})"
    )

    def body(values):
        report.examples += 1
        expected = quantize_block(
            [float(v) for v in values], block_fmt, opts, tensor_scale=scale_tensor, source=carrier.format_name
        )
        got, error = _call(quantizer, values.copy())
        if error is None:
            try:
                got = _as_block(got, block_fmt)
            except (TypeError, ValueError) as reason:
                error = reason
        if error is None and got == expected:
            return
        raise CheckFailure(_block_mismatch(report.check, values, carrier, block_fmt, expected, got, error))

    _run(body, block_values(block_fmt, carrier, kinds=kinds), max_examples, seed, shrink_seconds)
    return report


def _block_mismatch(check, values, carrier, fmt, expected: QuantizedBlock, got, error) -> str:
    codes = [carrier.code_from_value(v) for v in values]
    lines = [f"{check} disagrees with mxsim's reference", "  block    :"]
    for row in range(0, len(codes), 8):
        lines.append("    " + " ".join(carrier.hex(c) for c in codes[row : row + 8]))
    if error is not None:
        lines.append(f"  got      : {type(error).__name__}: {error}")
        return "\n".join(lines)
    if got.scale != expected.scale:
        lines += [
            f"  scale expected : {show_code(expected.scale, fmt.scale)}",
            f"  scale got      : {show_code(got.scale, fmt.scale)}",
        ]
    if got.subscales != expected.subscales:
        lines += [f"  subscales expected : {list(expected.subscales)}", f"  subscales got      : {list(got.subscales)}"]
    if len(got.codes) != len(expected.codes):
        lines.append(f"  got {len(got.codes)} element codes; expected {len(expected.codes)}")
    else:
        differ = [i for i, (e, g) in enumerate(zip(expected.codes, got.codes)) if e != g]
        for i in differ[:4]:
            lines.append(
                f"  element {i}: input {show_value(values[i], carrier)}\n"
                f"    expected : {show_code(expected.codes[i], fmt.element)}\n"
                f"    got      : {show_code(got.codes[i], fmt.element)}"
            )
        if len(differ) > 4:
            lines.append(f"  ... {len(differ) - 4} more elements differ")
    return "\n".join(lines)


# --- dot ----------------------------------------------------------------------------------------------
def check_dot(
    dot_fn,
    fmt_a,
    fmt_b=None,
    accumulator: Accumulator | None = None,
    *,
    kinds=None,
    nan: str = "exact",
    max_examples: int = 300,
    seed: int = 0,
    shrink_seconds: float | None = 30.0,
) -> CheckReport:
    """Check ``dot_fn(a, b) -> code`` against :func:`mxsim.ref.dot.dot`: ``a`` and ``b`` are
    :class:`mxsim.ref.QuantizedBlock` blocks of ``fmt_a`` and ``fmt_b`` (default ``fmt_a``),
    drawn by :func:`mxsim.strategies.block_codes` (``kinds``); the result is the output code
    (fp32, bf16 or fp16 bits, as ``accumulator.output`` says) of the datapath ``accumulator``
    (default :class:`mxsim.Accumulator`). ``nan='any'`` accepts any NaN output code.
    """
    accumulator = Accumulator() if accumulator is None else accumulator
    if not isinstance(accumulator, Accumulator):
        raise ValueError(f"accumulator={accumulator!r} is not allowed; expected an mxsim.Accumulator")
    check_choice("nan", nan, NAN_POLICIES)
    fmt_a = block_format(fmt_a, "fmt_a")
    fmt_b = fmt_a if fmt_b is None else block_format(fmt_b, "fmt_b")
    ref_dot(
        *(QuantizedBlock(1, (0,) * f.subblocks, (0,) * f.block_size) for f in (fmt_a, fmt_b)), fmt_a, fmt_b, accumulator
    )
    output = get_format(accumulator.output)
    report = CheckReport(f"{fmt_a.name} x {fmt_b.name} dot ({accumulator})")

    def body(pair):
        a, b = pair
        report.examples += 1
        expected = ref_dot(a, b, fmt_a, fmt_b, accumulator)
        got, error = _call(dot_fn, a, b)
        got = None if error else _as_code(got)
        if error is None and _same_code(expected.code, got, output, nan):
            return
        lines = [f"{report.check} disagrees with mxsim's reference"]
        for name, block, fmt in (("a", a, fmt_a), ("b", b, fmt_b)):
            lines.append(
                f"  {name}: scale {show_code(block.scale, fmt.scale)}"
                + (f", subscales {list(block.subscales)}" if block.subscales else "")
            )
            codes = [f"0x{c:0{(fmt.element.width + 3) // 4}x}" for c in block.codes]
            lines += ["     " + " ".join(codes[i : i + 16]) for i in range(0, len(codes), 16)]
        lines += [
            f"  exact    : {show_exact(expected.exact)} "
            f"(register {expected.accumulator} x 2^{expected.lsb_exponent}, anchor {expected.anchor})",
            f"  expected : {show_code(expected.code, output)}",
            f"  got      : {show_code(got, output)}"
            if error is None
            else f"  got      : {type(error).__name__}: {error}",
        ]
        raise CheckFailure("\n".join(lines))

    _run(
        body,
        st.tuples(block_codes(fmt_a, kinds=kinds), block_codes(fmt_b, kinds=kinds)),
        max_examples,
        seed,
        shrink_seconds,
    )
    return report
