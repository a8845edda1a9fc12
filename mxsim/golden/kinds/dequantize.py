"""The ``dequantize`` suite kind: one block's scale (sub-scales, NVFP4 tensor scale) and codes ->
the output words of one float type, under one set of DequantizeOptions (docs/numerics.md section 3.1)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction

import numpy as np

from ...options import QuantizeOptions
from ...options.dequantize import OUTPUTS, DequantizeOptions, output_name
from ...ref.stored_block import QuantizedBlock, dequantize_block
from ...ref.decode import finite_magnitudes
from ...ref.dequant import is_subnormal_word, output_format, round_to_output
from ...ref.encode import encode
from ...ref.exact import Exact, floor_log2
from ...ref.scale_code import check_scale_encoding, scale_code_exponent
from ..coverage.catalogue import class_names, flag_bits
from ..coverage.reach import MIN_CLASS_VECTORS
from ..coverage.rounding import BAND_CLASSES, decision_flags, ieee_interval
from ..values import code_sets, decode, fp32_bits, fp32_value, pack_word, unpack_word
from .fields import Field
from .layout import block_layouts, code_layout
from .format_spec import block_format, format_param
from .suite import BlockProfileBundles, Suite, jsonable
from .suite import profile_of

__all__ = ["DequantizeSuite", "scale_code_of_exponent"]

SUITE_OUTPUTS = ("float32", "float16", "bfloat16")
EXPONENT_RANGE = {"e8m0": (-127, 127), "int8_exponent": (-128, 127)}


def _last_bit(value: Exact, element) -> Fraction:
    """The weight of the last significand bit of an element value (> 0): 2^(max(floor(log2 v),
    emin) - mantissa_bits) for float elements, the value of code 1 for integer elements."""
    if element.kind != "float":
        return decode(1, element).magnitude
    return Fraction(2) ** (max(floor_log2(value.magnitude), element.emin) - element.mantissa_bits)


def scale_code_of_exponent(exponent: int, encoding: str) -> int:
    """The scale byte of 2^exponent (inverse of mxsim.ref.scale_code.scale_code_exponent)."""
    code = exponent + 127 if encoding == "e8m0" else exponent & 0xFF
    if scale_code_exponent(code, encoding) != exponent:
        raise ValueError(f"2^{exponent} has no {encoding} scale code")
    return code


def _significant_bits(magnitude: Fraction) -> int:
    """The bits from the leading to the trailing 1 of a dyadic magnitude (> 0)."""
    n = magnitude.numerator
    return n.bit_length() - (n & -n).bit_length() + 1


@dataclass
class DequantizeSuite(BlockProfileBundles, Suite):
    """One block (``scale``, ``subscales``, NVFP4 ``tensor_scale``, ``codes``) -> ``values``: the
    output word of element i at bits [i*W, (i+1)*W), W = 32 (float32) or 16 (float16, bfloat16).

    ``output``: float32 | float16 | bfloat16 (or fp32 / fp16 / bf16); ``options``: the fields of
    :class:`mxsim.DequantizeOptions`; ``scale_encoding``: e8m0 | int8_exponent (how the scale byte
    reads, mxsim.ref.scale_code). ``profile``: a profile name (:mod:`mxsim.options.profiles`):
    its DequantizeOptions for ``output`` with ``options`` on top, and its ``scale_encoding`` where
    it sets one (and this one is left at e8m0). Expected words:
    :func:`mxsim.ref.dequant.round_to_output` of :func:`mxsim.ref.stored_block.dequantize_block`."""

    block: str
    output: str = "float32"
    options: dict = field(default_factory=dict)
    scale_encoding: str = "e8m0"
    profile: str | None = None
    kind = "dequantize"
    example_params = {"block": "mxfp4_e2m1"}
    nested_options = {"options": DequantizeOptions}  # the dict field -> the options class of its keys
    explain_options = QuantizeOptions  # scale_encoding, a top-level param

    def __post_init__(self):
        self.fmt = block_format(self.block, "block")
        self.output = output_name(self.output)
        if self.output not in SUITE_OUTPUTS:
            raise ValueError(f"output={self.output!r} is not allowed; expected one of: {', '.join(SUITE_OUTPUTS)}")
        self.profile_def = profile_of(self.profile)
        baseline = DequantizeOptions()
        if self.profile_def is not None:
            baseline = self.profile_def.dequantize_for(self.fmt, self.output)  # kind, format and output checks
            if self.scale_encoding == "e8m0":
                self.scale_encoding = self.profile_def.quantize.get("scale_encoding", "e8m0")
        DequantizeOptions.from_kwargs(**self.options)  # names an unknown field
        self.opts = DequantizeOptions(**{**baseline.as_dict(), **self.options})
        check_scale_encoding(self.scale_encoding, self.fmt.scale)
        self.out = output_format(self.output)
        changed = {k: v for k, v in self.opts.as_dict().items() if v != getattr(baseline, k)}
        if self.scale_encoding != self._profile_scale_encoding():
            changed["scale_encoding"] = self.scale_encoding
        tag = [] if self.profile_def is None else [f"profile={self.profile_def.name}"]
        self.name = "-".join([self.fmt.name, OUTPUTS[self.output]] + tag + [f"{k}={v}" for k, v in sorted(changed.items())])
        fmt, k, w = self.fmt, self.fmt.block_size, self.out.width
        self.inputs = [
            Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code ({self.scale_encoding})")
        ]
        if fmt.subblocks:
            self.inputs.append(
                Field(
                    "subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)"
                )
            )
        if fmt.tensor_scale is not None:
            self.inputs.append(Field("tensor_scale", 32, description="fp32 bits of the tensor scale s_t"))
        self.inputs.append(
            Field(
                "codes",
                k * fmt.element.width,
                description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)",
            )
        )
        self.outputs = [
            Field("values", k * w, description=f"{self.output} words, element i at bits [i*{w}, (i+1)*{w})")
        ]

    def _profile_scale_encoding(self) -> str:
        return "e8m0" if self.profile_def is None else self.profile_def.quantize.get("scale_encoding", "e8m0")

    def params(self) -> dict:
        out = {
            "block": format_param(self.fmt),
            "output": self.output,
            "options": self.opts.as_dict(),
            "scale_encoding": self.scale_encoding,
        }
        if self.profile_def is not None:
            out["profile"] = self.profile_def.name
        return out

    def describe(self) -> dict:
        return {
            "block": jsonable(self.fmt.describe()),
            "element": jsonable(self.fmt.element.describe()),
            "output": jsonable(self.out.describe()),
        }

    def field_layouts(self) -> dict:
        """The block's fields (``scale`` read under the suite's scale encoding, ``subscales``,
        ``tensor_scale``, ``codes``) and ``values``: k words of the output type (:mod:`.layout`)."""
        out = block_layouts("", self.fmt, sub="subscales", elems="codes", scale_encoding=self.scale_encoding)
        out["values"] = code_layout(self.out, self.fmt.block_size)
        return out

    # stimulus ------------------------------------------------------------------------------
    def _exponents(self) -> list[int]:
        """Scale exponents at the output's edges for this element: the largest element crossing
        the output's overflow threshold, elements straddling its smallest normal, the smallest
        element at, half and a quarter of its smallest subnormal; 0; the encoding's extremes."""
        element, out = self.fmt.element, self.out
        top = floor_log2(finite_magnitudes(element)[-1])
        bottom = floor_log2(finite_magnitudes(element)[1])
        over = out.emax - top
        subnormal_floor = out.emin - out.mantissa_bits - bottom
        wanted = [
            0,
            over - 1,
            over,
            over + 1,
            out.emin - top,
            out.emin - top + 2,
            out.emin - bottom,
            subnormal_floor + 1,
            subnormal_floor,
            subnormal_floor - 1,
            subnormal_floor - 2,
        ]
        low, high = EXPONENT_RANGE[self.scale_encoding]
        return sorted({min(max(e, low), high) for e in wanted} | {low, high})

    def _scales(self) -> list[int]:
        """Directed scale codes: the exponents above (E8M0), or UE4M3's edges (NVFP4), then the
        NaN code where the encoding has one."""
        scale = self.fmt.scale
        if scale.name != "e8m0":
            finite = [c for c in range(1 << scale.width) if decode(c, scale).is_finite and decode(c, scale).magnitude]
            return [finite[0], encode(scale.min_normal, scale), encode(1, scale), finite[-1], scale.nan_code()]
        codes = [scale_code_of_exponent(e, self.scale_encoding) for e in self._exponents()]
        return codes + ([0xFF] if self.scale_encoding == "e8m0" else [])

    def _tensor_scales(self) -> list[Fraction]:
        """NVFP4 directed tensor scales: 1, values that put the largest element near the output's
        overflow threshold and the smallest near its subnormal floor (inside fp32's range), and
        ties of the output rounding: (1 + 2^-(m+1)) and (1 + 3 * 2^-(m+1)) times a power of two, and
        2^(emin - m - 2), 2^(emin - m) (elements at scale 1 in the lowest subnormal bands)."""
        out = self.out
        half = Fraction(1, 1 << (out.mantissa_bits + 1))
        largest = 6 * 448
        wanted = [
            Fraction(1),
            Fraction(2) ** (out.emax - 11) * (1 + half),
            Fraction(2) ** (out.emax - 12) * 3,
            Fraction(2) ** (out.emin - out.mantissa_bits + 9),
            1 + half,
            1 + 3 * half,
            Fraction(2) ** (out.emax + 1) / largest,
            # elements times scale 1 in the output's lowest subnormal bands: near-ties there (3.3)
            Fraction(2) ** (out.emin - out.mantissa_bits - 2),
            Fraction(2) ** (out.emin - out.mantissa_bits),
        ]
        return [self._fp32_scale(x) for x in wanted]

    @staticmethod
    def _fp32_scale(x: Fraction) -> Fraction:
        """x rounded to a positive normal-or-subnormal fp32 tensor scale (never 0 or Inf)."""
        bits = fp32_bits(Exact(0, x))
        return fp32_value(min(max(bits, 1), 0x7F7FFFFF)).magnitude

    def _row(self, scale: int, codes: list[int], subscales: int, tensor_scale: Fraction | None) -> dict:
        row = {"scale": scale, "codes": pack_word(codes, self.fmt.element.width)}
        if self.fmt.subblocks:
            row["subscales"] = subscales
        if self.fmt.tensor_scale is not None:
            row["tensor_scale"] = fp32_bits(Exact(0, tensor_scale))
        return row

    def stimulus(self, rng: random.Random, level: int):
        fmt, k = self.fmt, self.fmt.block_size
        w, sub_bits = fmt.element.width, fmt.subblocks * fmt.subscale_bits
        every = list(range(1 << w))  # every code, block after block
        sweeps = [(every + every)[i : i + k] for i in range(0, len(every), k)]
        sweeps = [s + every[: k - len(s)] for s in sweeps]
        tensor_scales = self._tensor_scales() if fmt.tensor_scale is not None else [None]
        rows = []
        for scale in self._scales():
            for tensor_scale in tensor_scales:
                for j, codes in enumerate(sweeps):
                    subscales = (0, (1 << sub_bits) - 1, rng.getrandbits(sub_bits))[j % 3] if sub_bits else 0
                    rows.append((self._row(scale, codes, subscales, tensor_scale), "directed"))
        rows += [(row, "directed") for row in self._subnormal_tie_rows(sweeps)]
        rows += [(self._row(scale, codes, 0, None), "directed") for scale, codes in self._band_rows()]
        directed_scales = self._scales()
        for _ in range(100 * level):
            rows.append((self._random_row(rng, directed_scales, tensor_scales), "random"))
        return rows

    def _subnormal_tie_rows(self, sweeps: list[list[int]]) -> list[dict]:
        """NVFP4: every code at block multipliers s_t * scale = u/2, u/4, u/8 (u the output's
        smallest subnormal), each with three power-of-two UE4M3 scales (the smallest whose s_t is
        an fp32 value), so that the elements 1.5, 3 and 6 land on 3/4 of u: near-ties in the
        output's lowest band (docs/numerics.md section 3.3). Other formats: none (their E8M0 sweeps reach it)."""
        if self.fmt.tensor_scale is None:
            return []
        u = self.out.min_subnormal
        rows = []
        for product in (u / 2, u / 4, u / 8):
            scales = [Fraction(2) ** j for j in range(-9, 9) if product / Fraction(2) ** j >= Fraction(1, 1 << 149)]
            for scale in scales[:3]:
                code = encode(scale, self.fmt.scale)
                rows += [self._row(code, codes, 0, product / scale) for codes in sweeps]
        return rows

    def _single_level(self) -> bool:
        """One power-of-two scale per block (E8M0 or int8 exponents), no sub-scales, no tensor scale."""
        return self.fmt.scale.name == "e8m0" and not self.fmt.subblocks and self.fmt.tensor_scale is None

    @cached_property
    def _rounding_map(self) -> dict[int, dict[int, int]]:
        """Single-level formats: scale exponent X -> {code: its flags word of the classes below}, for
        every X of the encoding and every finite nonzero element code whose value times 2^X lands
        on a subnormal near-tie of the output (any band), or is negative and rounds to magnitude 0
        (``zero_result_sign``), or is a near-tie of the normal range. Exact enumeration; empty for
        other formats."""
        if not self._single_level():
            return {}
        magnitudes = [x.magnitude for x in self._nonzero_elements]
        narrow = max(_significant_bits(m) for m in magnitudes) <= self.out.mantissa_bits + 1
        smallest, largest = min(magnitudes), max(magnitudes)
        low, high = EXPONENT_RANGE[self.scale_encoding]
        found, tiny_hits = {}, None
        for exponent in range(low, high + 1):
            if narrow and smallest * Fraction(2) ** exponent >= self.out.min_normal:
                continue  # every value a normal of the output's precision, or beyond its range: no near-tie, no zero
            # every value below a quarter of the smallest subnormal s: each lies in [0, s) short of any
            # near-tie, rounds (nearest-even) to a zero of its sign, and so has the same classes at every
            # such exponent: those of the first
            tiny = 4 * largest * Fraction(2) ** exponent < self.out.min_subnormal
            if tiny and tiny_hits is not None:
                hits = dict(tiny_hits)
            else:  # narrow: a value at or above the smallest normal is a normal of the output's precision (as above)
                hits = self._rounding_hits(exponent, below_normal_only=narrow)
                tiny_hits = hits if tiny else None
            if hits:
                found[exponent] = hits
        return found

    @cached_property
    def _nonzero_codes(self) -> list[int]:
        element = self.fmt.element
        return [c for c in range(1 << element.width) if decode(c, element).is_finite and decode(c, element).magnitude]

    @cached_property
    def _nonzero_elements(self) -> list[Exact]:
        """The values of :attr:`_nonzero_codes`, in their order."""
        return [decode(c, self.fmt.element) for c in self._nonzero_codes]

    def _rounding_hits(self, exponent: int, below_normal_only: bool = False) -> dict[int, int]:
        """{code: its flags word of :attr:`_rounding_map`'s classes} of the codes that set one at
        2^exponent; ``below_normal_only``: of those whose value there is below the output's smallest
        normal (the map's shortcut for narrow elements)."""
        wanted = flag_bits(["subnormal_near_tie", "zero_result_sign"] + list(BAND_CLASSES))
        multiplier, bottom = Fraction(2) ** exponent, self.out.min_normal
        codes, values = [], []
        for code, element in zip(self._nonzero_codes, self._nonzero_elements):
            x = Exact(element.sign, element.magnitude * multiplier)
            if not (below_normal_only and x.magnitude >= bottom):
                codes.append(code)
                values.append(x)
        words = [round_to_output(x, self.output, self.opts) for x in values]
        flags = self._decision_flag_words(values, words, codes)
        return {c: f & wanted for c, f in zip(codes, flags) if f & wanted}

    def _band_rows(self) -> list[tuple[int, list[int]]]:
        """(scale code, block codes) of the per-band near-tie and underflow stimulus (docs/numerics.md
        3.3 (1), (2)): for every scale exponent X where some element lands on a near-tie of the
        output (:attr:`_rounding_map`; MXFP8 and FP4 values only in its subnormal and zero bands),
        blocks holding every such code of X and the negative
        codes that round to zero there, rotated one lane further in each block; as many blocks at
        X as its rarest class needs for MIN_CLASS_VECTORS in all (a class met at n exponents gets
        ceil(MIN_CLASS_VECTORS / n) blocks at each). If no such X has a negative value rounding to
        zero, the highest X where one does gets MIN_CLASS_VECTORS blocks."""
        zero_sign = flag_bits(["zero_result_sign"])
        k = self.fmt.block_size
        found = self._rounding_map
        at = {x: set(class_names(self._or(hits) & ~zero_sign)) for x, hits in found.items()}
        spread = Counter(name for names in at.values() for name in names)
        blocks = {x: max(-(-MIN_CLASS_VECTORS // spread[name]) for name in names) for x, names in at.items() if names}
        underflowing = [x for x, hits in found.items() if self._or(hits) & zero_sign]
        if underflowing and not any(self._or(found[x]) & zero_sign for x in blocks):
            blocks[max(underflowing)] = MIN_CLASS_VECTORS
        rows = []
        for exponent in sorted(blocks):
            codes = sorted(found[exponent])
            for r in range(blocks[exponent]):
                rows.append((scale_code_of_exponent(exponent, self.scale_encoding),
                             [codes[(i + r) % len(codes)] for i in range(k)]))
        return rows

    @staticmethod
    def _or(hits: dict[int, int]) -> int:
        flags = 0
        for f in hits.values():
            flags |= f
        return flags

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        tensor_scales = self._tensor_scales() if self.fmt.tensor_scale is not None else [None]
        return self._random_row(rng, self._scales(), tensor_scales)

    def _random_row(self, rng: random.Random, directed_scales: list[int], tensor_scales: list) -> dict:
        """A random block: a directed scale (70 %) or any scale code, random element codes and
        sub-scales, one of the directed tensor scales (NVFP4)."""
        fmt = self.fmt
        scale = rng.choice(directed_scales) if rng.random() < 0.7 else rng.getrandbits(fmt.scale.width)
        codes = [rng.getrandbits(fmt.element.width) for _ in range(fmt.block_size)]
        subscales = rng.getrandbits(fmt.subblocks * fmt.subscale_bits)
        return self._row(scale, codes, subscales, rng.choice(tensor_scales))

    # expected values -----------------------------------------------------------------------
    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference dequantizer vector by vector, then
        the rounding-decision classes of all their values at once (:meth:`_decision_flags_of` on the
        stacked rows of :meth:`_decision_rows`: the same operations per value as for one vector)."""
        fmt, k = self.fmt, self.fmt.block_size
        done, picked, owners = [], [], []
        for inputs in rows:
            codes = tuple(unpack_word(inputs["codes"], fmt.element.width, k))
            subscales = ()
            if fmt.subblocks:
                subscales = tuple(unpack_word(inputs["subscales"], fmt.subscale_bits, fmt.subblocks))
            tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
            block = QuantizedBlock(inputs["scale"], subscales, codes)
            values = dequantize_block(block, fmt, tensor_scale, self.scale_encoding)
            words = [round_to_output(x, self.output, self.opts) for x in values]
            vector_rows, _ = self._decision_rows(values, words, block.codes)
            owners += [len(done)] * len(vector_rows)
            picked += vector_rows
            done.append(({"values": pack_word(words, self.out.width)}, self._classes(block, values, words)))
        flags = [0] * len(done)
        for owner, f in zip(owners, self._decision_flags_of(picked).tolist() if picked else ()):
            flags[owner] |= f
        return [(out, classes | set(class_names(f))) for (out, classes), f in zip(done, flags)]

    def _classes(self, block: QuantizedBlock, values: list[Exact], words: list[int]) -> set:
        """The classes of one vector but the rounding decisions (:meth:`_decision_flag_words`): of
        its element codes (from :func:`..values.code_sets`), its scale, and each value and word
        (:meth:`_value_classes`, kept per word where they depend on the word alone)."""
        sets, codes = code_sets(self.fmt.element), set(block.codes)
        classes = {name for name, test in (("nan", "nan"), ("inf", "inf"), ("subnormal_input", "subnormal"),
                                           ("int8_neg2", "neg2")) if not codes.isdisjoint(sets[test])}
        if codes <= sets["zero"]:
            classes.add("all_zero")
        classes |= self._scale_classes(block.scale)
        out, kept = self.out, self._word_classes
        for x, word in zip(values, words):
            finite = x.kind == "finite"
            nonzero = finite and x.magnitude != 0
            if nonzero and not self._is_ieee_word(word):  # saturated or flushed: the exact value decides
                classes |= self._value_classes(x, word, out)
                continue
            key = (finite, nonzero, word)  # (a value that is not finite and nonzero, or has its IEEE word)
            known = kept.get(key)
            if known is None:
                if len(kept) >= 1 << 16:
                    kept.clear()
                known = kept[key] = frozenset(self._value_classes(x, word, out))
            classes |= known
        return classes

    @cached_property
    def _word_classes(self) -> dict:
        """(finite, nonzero, word) -> :meth:`_value_classes` of a value with that word, where the word
        alone decides them: the value is zero or not finite, or the word is its IEEE word
        (:meth:`_is_ieee_word`); at most 2^16 kept."""
        return {}

    def _scale_classes(self, code: int) -> set:
        if self.fmt.scale.name != "e8m0":
            return {"scale_nan"} if decode(code, self.fmt.scale).is_nan else set()
        exponent = scale_code_exponent(code, self.scale_encoding)
        low, high = EXPONENT_RANGE[self.scale_encoding]
        return {None: {"scale_nan"}, low: {"scale_min"}, high: {"scale_max"}}.get(exponent, set())

    def _value_classes(self, x: Exact, word: int, out) -> set:
        """Classes of one element's result: the word's kind (zero, -0, max, Inf), and from the
        exact value: overflow (and saturation), subnormal result (flushed or kept), tie, carry."""
        classes = set()
        magnitude = word & ~out.sign_mask
        if x.is_finite:
            if magnitude == 0:
                classes.add("negative_zero" if word & out.sign_mask else "zero")
            if magnitude == out.max_code:
                classes.add("max")
            if x.magnitude:
                classes |= self._rounding_classes(x, word, out)
        if magnitude == out.inf_code():
            classes.add("inf")
        return classes

    def _rounding_classes(self, x: Exact, word: int, out) -> set:
        """overflow (and saturation) and subnormal_output of a finite nonzero x whose output word is
        ``word``, from its IEEE word (nearest-even, overflowing to Inf: :meth:`_is_ieee_word`)."""
        classes = set()
        ieee = word if self._is_ieee_word(word) else encode(x, out, "rne", "ieee")
        if decode(ieee, out).is_inf:
            classes.add("overflow")
            if self.opts.dequant_overflow == "saturate":
                classes.add("saturation")
            return classes
        if is_subnormal_word(ieee, out):
            classes.add("subnormal_output")
        return classes

    def _is_ieee_word(self, word: int) -> bool:
        """Whether the output word of a finite value is surely its IEEE word, ``encode(x, out, "rne",
        "ieee")``: :func:`mxsim.ref.dequant.round_to_output` (docs/numerics.md section 3.1) changes that word
        only to saturate an overflow to the largest finite (``dequant_overflow='saturate'``) or to
        flush a subnormal to a zero (``dequant_ftz``), so a word that is neither is it."""
        magnitude = word & ~self.out.sign_mask
        if self.opts.dequant_overflow == "saturate" and magnitude == self.out.max_code:
            return False
        return not (self.opts.dequant_ftz and magnitude == 0)

    def _decision_flag_words(self, values: list[Exact], words: list[int], codes) -> list[int]:
        """Each value's flags word of decision classes (:meth:`_decision_rows`, then
        :meth:`_decision_flags_of`); 0 where a value is zero, not finite, overflows, or flushes."""
        picked, where = self._decision_rows(values, words, codes)
        flags = [0] * len(values)
        for i, f in zip(where, self._decision_flags_of(picked).tolist() if picked else ()):
            flags[i] = f
        return flags

    def _decision_rows(self, values: list[Exact], words: list[int], codes) -> tuple[list[tuple], list[int]]:
        """(rows, indices) of the values that are rounding decisions, x the value of element code c:
        a row (|x|, its resolution r, the result's magnitude, negative) in floats, r the element's
        last bit times the block's multiplier (x / element), taken as ``A * num(x) / (B * den(x))``
        (:attr:`_resolution_factors`; Python's integer division is correctly rounded, as ``float``
        of the Fraction r is). Left out: a value that is zero, not finite, overflows, or flushes
        (``dequant_ftz``)."""
        out, factors, ftz = self.out, self._resolution_factors, self.opts.dequant_ftz
        top, bottom = out.max_normal, out.min_normal
        picked, where = [], []
        for i, (x, word, code) in enumerate(zip(values, words, codes)):
            if not x.is_finite:
                continue
            n, d = x.magnitude.numerator, x.magnitude.denominator  # x compared with the bounds in integers
            if not n or n * top.denominator > top.numerator * d:
                continue
            if ftz and n * bottom.denominator < bottom.numerator * d:
                continue
            a, b = factors[code]
            result = decode(word, out).magnitude
            picked.append((n / d, (a * n) / (b * d), result.numerator / result.denominator, bool(x.sign)))
            where.append(i)
        return picked, where

    def _decision_flags_of(self, picked: list[tuple]) -> np.ndarray:
        """The flags word (int64) of each row of :meth:`_decision_rows` (of one vector or many:
        the operations are per row): the output's interval around |x|
        (:func:`..coverage.rounding.ieee_interval`), then :func:`..coverage.rounding.decision_flags`."""
        out = self.out
        magnitude, resolution, result, negative = (np.array(column) for column in zip(*picked))
        lo, hi, _ = ieee_interval(magnitude, out.mantissa_bits, out.emin, float(out.max_normal))
        return decision_flags(magnitude, lo, hi, resolution, result, negative, float(out.min_normal))

    @cached_property
    def _resolution_factors(self) -> dict[int, tuple[int, int]]:
        """Every finite nonzero element code -> (A, B), integers with A / B = (its last bit,
        :func:`_last_bit`) / (its magnitude): the resolution of a value x of that element is
        A * x / B (:meth:`_decision_flag_words`)."""
        factors = {}
        for code, element in zip(self._nonzero_codes, self._nonzero_elements):
            ratio = _last_bit(element, self.fmt.element) / element.magnitude
            factors[code] = (ratio.numerator, ratio.denominator)
        return factors

    def reachable_classes(self) -> frozenset[str]:
        """The rounding decisions of the output (docs/numerics.md section 3.1, 3.3) where some element times
        some scale has its last bit below the output's smallest subnormal (so it rounds) and the
        output keeps its subnormals (no ``dequant_ftz``): every case, both near-ties, in the
        subnormal bands (nearest-even only). Otherwise every value is exact: none required.
        Single-level formats (:meth:`_single_level`) also require the per-band near-tie classes
        (:data:`.rounding_classes.BAND_CLASSES`) that some element times some scale reaches (exact
        enumeration, :attr:`_rounding_map`); their stimulus holds every one (:meth:`_band_rows`).
        Two-level formats (sub-scales, NVFP4's fp32 tensor scale) declare none of those: their
        counts are recorded, not required."""
        out, element = self.out, self.fmt.element
        smallest_bit = min(_last_bit(decode(c, element), element) for c in range(1 << element.width)
                           if decode(c, element).is_finite and decode(c, element).magnitude)
        if self.opts.dequant_ftz or smallest_bit * self._smallest_multiplier() >= out.min_subnormal:
            return frozenset()
        bands = set()
        for hits in self._rounding_map.values():
            for f in hits.values():
                bands |= set(class_names(f)) & set(BAND_CLASSES)
        return frozenset(bands) | frozenset({
            "exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom", "near_tie_below",
            "subnormal_near_tie", "truncate", "increment", "carry", "zero_result_sign"})

    def _smallest_multiplier(self) -> Fraction:
        """The smallest factor a block's scales put on its elements: 2^(lowest exponent of the
        encoding), times 2^-1 for a microexponent (shared-exponent formats: 2^(E - tau)); NVFP4: the
        smallest UE4M3 scale times the smallest fp32 tensor scale 2^-149."""
        if self.fmt.scale.name != "e8m0":
            return min(v.magnitude for c in range(1 << self.fmt.scale.width)
                       if (v := decode(c, self.fmt.scale)).is_finite and v.magnitude) * Fraction(1, 1 << 149)
        low = EXPONENT_RANGE[self.scale_encoding][0] - (1 if self.fmt.subblocks else 0)
        return Fraction(2) ** low
