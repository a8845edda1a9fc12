"""The ``encode`` suite kind: fp32 inputs -> element codes, for one rounding and overflow mode."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction

import numpy as np

from ...ref.decode import finite_magnitudes
from ...ref.encode import encode
from ...ref.exact import Exact, floor_log2
from .fields import Field
from .layout import code_layout, fp32_layout
from .format_spec import element_format, format_param
from ..coverage.catalogue import class_names, kind_classes
from ..coverage.reach import MIN_CLASS_VECTORS
from ..coverage.rounding import band_class, decision_flags, format_bands, fp32_resolution, grid_interval, magnitude_grid
from ..stimulus.patterns import exponent_boundaries, grid_intervals, pattern_values, rounding_cases, significand_patterns
from ..values import FP32_INF_BITS, decode, fp32_bits, fp32_float, fp32_value, is_subnormal_code
from ...options import EncodeOptions
from ...options.profiles import PROFILES
from .suite import Suite


# fp32 fraction patterns at the format's exponent boundaries (docs/numerics.md section 3.3): zero, all ones, the
# bottom bit, and in the top seven bits (the kept, guard and top sticky bits of every enumerable
# element) a single 1 at each position and the runs of ones from the top
_PATTERNS = tuple(p for p in significand_patterns(23) if p in (0, 1, (1 << 23) - 1) or (p >> 16 and not p & 0xFFFF))


@dataclass
class EncodeSuite(Suite):
    """fp32 inputs -> element codes for one rounding and overflow mode."""

    element: str
    rounding: str = "rne"
    overflow: str = "saturate"
    kind = "encode"
    example_params = {"element": "fp4_e2m1"}
    explain_options = EncodeOptions  # rounding, overflow: top-level params

    def __post_init__(self):
        self.fmt = element_format(self.element, "element")
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
        return {"element": format_param(self.fmt), "rounding": self.rounding, "overflow": self.overflow}

    def describe(self) -> dict:
        return {"element": self.fmt.describe()}

    def field_layouts(self) -> dict:
        """``x``: the fp32 input word; ``code``: one element code (:mod:`.layout`)."""
        return {"x": fp32_layout(), "code": code_layout(self.fmt)}

    def explain_bundles(self, params: dict) -> list[tuple[str, str]]:
        """Every cast profile (:data:`mxsim.options.profiles.PROFILES`), for ``check --explain``."""
        return [("profile", name) for name, p in PROFILES.items() if p.kind == "cast"]

    def with_bundle(self, params: dict, key: str, name: str) -> dict:
        """``params`` with the cast profile's rounding and overflow."""
        if key != "profile":
            return super().with_bundle(params, key, name)
        return {**params, **{k: v for k, v in PROFILES[name].encode_options().items() if k in params}}

    def _directed(self) -> list[Fraction | Exact]:
        values = finite_magnitudes(self.fmt)
        out: list = [Exact(0), Exact(1), Exact.inf(0), Exact.inf(1)]
        if getattr(self.fmt, "has_nan", False):  # elsewhere NaN is a block-level matter
            out += [Exact.nan(0), Exact.nan(1)]  # both signs: a NaN's code keeps its sign
        ulp = Fraction(1, 1 << 149)
        for lo, hi in zip(values, values[1:]):
            mid = (lo + hi) / 2
            out += [lo, mid, hi]
            step = Fraction(2) ** (floor_log2(mid) - 23) if mid else ulp
            out += [mid - step, mid + step]
        top = values[-1]
        top_step = (values[-1] - values[-2]) if len(values) > 1 else top
        out += [top + top_step / 2, top + top_step, 2 * top, Fraction(2) ** 127, Fraction(1, 1 << 149), Fraction(1, 1 << 126)]
        # every rounding case of the intervals standing for each band (docs/numerics.md section 3.3), then
        # TestFloat's significand patterns at every exponent boundary of the format
        min_normal = Fraction(self._min_normal) if self._min_normal else None
        for lo, hi, _ in grid_intervals(values, min_normal):
            out += [v for _, v in rounding_cases(lo, hi)]
        out += pattern_values(exponent_boundaries(self.fmt), patterns=_PATTERNS)
        return out

    @cached_property
    def _directed_bits(self) -> list[int]:
        """The fp32 bits of the directed values, both signs, each once, in catalogue order."""
        bits_list, seen = [], set()
        for v in self._directed():
            for sign in (0, 1):
                x = v if isinstance(v, Exact) else Exact(sign, v)
                bits = fp32_bits(x)
                if fp32_value(bits).is_finite and x.is_finite and fp32_value(bits).magnitude != x.magnitude:
                    continue  # not an fp32 value (e.g. a midpoint below fp32 resolution)
                if bits not in seen:
                    seen.add(bits)
                    bits_list.append(bits)
        return bits_list

    @cached_property
    def _exponent_range(self) -> tuple[int, int]:
        """(low, high) exponents of the random fp32 values: the format's range, two binades wider."""
        values = finite_magnitudes(self.fmt)
        span = max(floor_log2(values[-1]), 0) + 2
        low = floor_log2(values[1]) - 2 if len(values) > 1 else -10
        return max(low, -149), min(span, 127)

    def stimulus(self, rng: random.Random, level: int):
        for bits in self._directed_bits:
            yield {"x": bits}, "directed"
        for i in range(1000 * level):
            yield self.random_inputs(rng, i), "random"

    def catalogue_size(self, level: int) -> int:
        return len(self._directed_bits) + 1000 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """A random fp32 value with its exponent uniform over the format's range (two binades wider)."""
        exponent = rng.randint(*self._exponent_range)
        sig = rng.getrandbits(24) | (1 << 23)
        x = Exact(rng.getrandbits(1), Fraction(sig, 1 << 23) * Fraction(2) ** exponent)
        return {"x": fp32_bits(x)}

    def compute(self, inputs: dict):
        out, classes, rounded = self._reference_vector(inputs)
        if rounded is not None:
            x, y, negative = rounded
            classes |= set(class_names(int(self._decision_flags(x, y, negative))))
        return out, classes

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference encoder vector by vector, then the
        rounding-decision classes of all of them at once (the same steps on NumPy arrays)."""
        done = [self._reference_vector(inputs) for inputs in rows]
        words = [0] * len(done)
        picked = {False: ([], [], []), True: ([], [], [])}  # per sign: indices, |x|, |y|
        for i, (_, _, rounded) in enumerate(done):
            if rounded is not None:
                where, xs, ys = picked[rounded[2]]
                where.append(i)
                xs.append(rounded[0])
                ys.append(rounded[1])
        for sign, (where, xs, ys) in picked.items():
            if where:
                for i, word in zip(where, self._decision_flags(np.array(xs), np.array(ys), sign).tolist()):
                    words[i] = word
        named = {0: frozenset()}  # flags word -> its class names (a few distinct words recur)
        for word in words:
            if word not in named:
                named[word] = frozenset(class_names(word))
        return [(out, classes | named[word]) for (out, classes, _), word in zip(done, words)]

    def _reference_vector(self, inputs: dict):
        """(outputs, classes but the decision classes, (|x|, |y|, negative) when the decision classes
        apply: the fp32 input x, finite, nonzero and within the format's range, and the value y of
        its code, magnitudes as floats (exact: binary64 holds every fp32 value and every code's value);
        else None). The reference encoder reads x as a Python float (exactly); the input classes are
        :func:`..coverage.catalogue.kind_classes` of x for NaN, Inf and zeros (magnitude bits at or
        above 0x7F800000, or 0), else from the bit fields (below 2^23: subnormal); the output
        classes come from the code (:meth:`_code_classes`)."""
        bits = inputs["x"]
        x = fp32_float(bits)
        code = encode(x, self.fmt, self.rounding, self.overflow)
        magnitude_bits, negative = bits & 0x7FFFFFFF, bits >> 31 == 1
        rounded = None
        if magnitude_bits >= FP32_INF_BITS or not magnitude_bits:  # NaN, Inf, +-0: the classes of the value
            classes = kind_classes(fp32_value(bits))
        else:
            classes = {"subnormal_input"} if magnitude_bits < 1 << 23 else set()
            n, d = abs(x).as_integer_ratio()
            top_n, top_d = self._max_normal_ratio
            over = n * top_d > top_n * d
            if over:
                classes.add("overflow")
            is_max, value_classes, y = self._code_classes(code)
            if is_max and over:
                classes.add("saturation")
            classes |= value_classes
            if not over:
                rounded = (abs(x), y, negative)
        if code == self._neg2_code:
            classes.add("int8_neg2")
        return {"code": code}, classes, rounded

    @cached_property
    def _max_normal_ratio(self) -> tuple[int, int]:
        return self.fmt.max_normal.numerator, self.fmt.max_normal.denominator

    @cached_property
    def _neg2_code(self) -> int | None:
        """The two's-complement code -2^(bits-1) (the ``int8_neg2`` class), None for other formats."""
        twos = self.fmt.kind == "int" and self.fmt.encoding == "twos_complement"
        return self.fmt.sign_mask if twos else None

    def _code_classes(self, code: int) -> tuple[bool, set, float | None]:
        """(whether the code holds +-max_normal, its classes ``max``, ``subnormal_output``, ``zero`` /
        ``negative_zero``, the magnitude of its value as a float (None unless finite)) of a code of a
        finite nonzero input, from the decoded value; kept per code (a code recurs)."""
        known = self._codes_seen.get(code)
        if known is None:
            y = decode(code, self.fmt)
            is_max = y.is_finite and y.magnitude == self.fmt.max_normal
            classes = {"max"} if is_max else set()
            if is_subnormal_code(code, self.fmt):
                classes.add("subnormal_output")
            if y.is_zero:
                classes.add("negative_zero" if y.sign else "zero")
            known = self._codes_seen[code] = (is_max, frozenset(classes), float(y.magnitude) if y.is_finite else None)
        return known

    @cached_property
    def _codes_seen(self) -> dict:
        return {}

    def _decision_flags(self, x, y, negative: bool):
        """The rounding-decision classes (:mod:`..coverage.rounding`) of fp32 inputs of magnitude x
        (within the format's range; x is an fp32 value, so a float holds it exactly) and sign
        ``negative`` rounded to codes of magnitude y: floats (a flags word) or arrays of them (one
        word each), the same steps either way."""
        lo, hi, _ = grid_interval(x, 1.0, magnitude_grid(self.fmt, negative))
        signs = np.full(len(x), negative) if isinstance(x, np.ndarray) else negative
        return decision_flags(x, lo, hi, fp32_resolution(x), y, signs, self._min_normal)

    @cached_property
    def _min_normal(self) -> float:
        """The smallest normal magnitude where the format has subnormals, else 0 (no subnormal band)."""
        return float(self.fmt.min_normal) if self.fmt.kind == "float" and self.fmt.subnormals else 0.0

    def reachable_classes(self) -> frozenset[str]:
        """The rounding-decision classes of fp32 inputs rounded to the element (docs/numerics.md section 3.3):
        every case and both near-ties (fp32 has at least two bits more than any enumerable
        element); ``subnormal_near_tie`` where the element has subnormals and a mantissa bit; ``increment`` and
        ``carry`` except under rtz; ``zero_result_sign`` except under rdn (a negative value rounds
        away from zero, to the smallest subnormal). A format with fewer than MIN_CLASS_VECTORS / 2
        intervals has too few distinct inputs of the one-per-interval cases: those are not required."""
        reachable = {"exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
                     "truncate", "increment", "carry", "zero_result_sign"}
        if self._min_normal and self.fmt.mantissa_bits >= 1:
            # without mantissa bits (binary8p1) the band below the smallest normal is the one interval
            # [0, 2^emin], whose near-ties give 6 distinct inputs (top, bottom, below; both signs)
            reachable.add("subnormal_near_tie")
        for band in format_bands(self.fmt):
            intervals = 1 if band == "zero_band" else 1 << (int(band[3:]) - 1) if band != "normal" else None
            if intervals is None or 2 * intervals >= MIN_CLASS_VECTORS:
                reachable |= {band_class("top", band), band_class("bottom", band)}
        if self.rounding == "rtz":
            reachable -= {"increment", "carry"}
        if self.rounding == "rdn":
            reachable.discard("zero_result_sign")
        if 2 * (len(finite_magnitudes(self.fmt)) - 1) < MIN_CLASS_VECTORS:
            # too few values for MIN_CLASS_VECTORS distinct inputs of a case that one interval reaches
            # once per sign (int3_sm: 3 intervals)
            reachable -= {"exact", "tie", "near_tie_top", "near_tie_bottom", "near_tie_below", "subnormal_near_tie"}
            reachable = {name for name in reachable if not name.startswith(("near_tie_top_", "near_tie_bottom_"))}
        return frozenset(reachable)
