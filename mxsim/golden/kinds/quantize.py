"""The ``quantize`` suite kind: a block of fp32 inputs -> scale, sub-scales and element codes."""

from __future__ import annotations

import itertools
import random
import struct
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np

from ...fast.block import quantize_blocks
from ...fast.nvfp4 import nvfp4_tensor_scales
from ...options import QuantizeOptions
from ...ref.block import element_divisor, nvfp4_tensor_scale, quantize_block, to_fp32
from ...ref.refusals import NoMXEncoding
from ...ref.decode import finite_magnitudes
from ...ref.exact import Exact, dyadic, floor_log2
from ...ref.scale import E8M0_MAX, byte_exponent
from .batch import bit, code_table, compute_each, pack_items, unpack_items
from ..coverage.catalogue import class_names
from .fields import Field
from .layout import block_layouts, fp32_layout, plain_layout
from .format_spec import block_format, format_param
from ..coverage.reach import MIN_CLASS_VECTORS
from ..coverage.rounding import band_class, decision_flags, format_bands, fp32_resolution, grid_interval, magnitude_grid
from ..stimulus.patterns import CASES, both_signs, grid_intervals, rounding_cases
from ..stimulus.refused import accepted, left_out_record
from ..values import FP32_INF_BITS, code_sets, decode, fp32_bits, fp32_value, max_codes, pack_word, subnormal_codes
from .suite import BlockProfileBundles, Suite, jsonable, profile_options

LOW_BAND_COPIES = -(-MIN_CLASS_VECTORS // 2)  # blocks per point of the zero or a subnormal band (both signs: MIN)


def _fp32_floor_log2(magnitude_bits: int) -> int:
    """floor(log2 x) of a positive finite fp32 magnitude given by its bits."""
    field = magnitude_bits >> 23
    return field - 127 if field else magnitude_bits.bit_length() - 1 - 149


@dataclass
class QuantizeSuite(BlockProfileBundles, Suite):
    """k fp32 inputs -> a block's scale (code and unbiased exponent), sub-scales and codes."""

    block: str
    options: dict = field(default_factory=dict)
    profile: str | None = None
    kind = "quantize"
    example_params = {"block": "mxfp4_e2m1"}
    nested_options = {"options": QuantizeOptions}  # the dict field -> the options class of its keys

    def __post_init__(self):
        self.fmt = block_format(self.block, "block")
        self.profile_def, self.opts = profile_options(self.profile, self.fmt, self.options)
        self.opts.check_format(self.fmt)
        if self.opts.rounding == "stochastic":
            raise ValueError("quantize suites take a deterministic rounding (not stochastic)")
        if self.opts.scale_encoding == "int8_exponent" and self.opts.specials == "block":
            raise ValueError(
                "quantize suites with scale_encoding='int8_exponent' need specials='per_element': the stimulus has NaN "
                "blocks, which an int8 exponent cannot mark"
            )
        self._refused_layouts = Counter()  # decision layouts whose maximum has no MX encoding (stimulus.refused)
        self._grids = tuple(magnitude_grid(self.fmt.element, negative, self.opts.int8_allow_neg2) for negative in (False, True))
        baseline = QuantizeOptions() if self.profile_def is None else self.profile_def.quantize_options(self.fmt)
        changed = {k: v for k, v in self.opts.as_dict().items() if v != getattr(baseline, k)}
        tag = [] if self.profile_def is None else [f"profile={self.profile_def.name}"]
        self.name = "-".join([self.fmt.name] + tag + [f"{k}={v}" for k, v in sorted(changed.items())])
        k, fmt = self.fmt.block_size, self.fmt
        self.inputs = [Field("x", 32 * k, description=f"{k} fp32 inputs, element i at bits [32i, 32i+32)")]
        if fmt.tensor_scale is not None:
            self.inputs.append(Field("tensor_scale", 32, description="fp32 bits of the tensor scale s_t"))
        self.outputs = [Field("scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code")]
        if fmt.scale.name == "e8m0":
            self.outputs.append(Field("scale_exp", 16, True, self._scale_exp_description()))
        if fmt.subblocks:
            self.outputs.append(
                Field("subscales", fmt.subblocks * fmt.subscale_bits, description="sub-scale j at bits [j*d2, (j+1)*d2)")
            )
        self.outputs.append(
            Field("codes", k * fmt.element.width, description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)")
        )

    def _scale_exp_description(self) -> str:
        if self.opts.scale_encoding == "e8m0":
            return "unbiased scale exponent (code - 127; -128 for NaN)"
        return "unbiased scale exponent (the code read as an int8; int8_exponent has no NaN scale)"

    def params(self) -> dict:
        out = {"block": format_param(self.fmt), "options": self.opts.as_dict()}
        if self.profile_def is not None:
            out["profile"] = self.profile_def.name
        return out

    def describe(self) -> dict:
        return {"block": jsonable(self.fmt.describe()), "element": jsonable(self.fmt.element.describe())}

    def field_layouts(self) -> dict:
        """The block's fields (``scale`` read under the options' scale encoding, ``subscales``,
        ``codes``, ``tensor_scale``), ``x``: k fp32 words, ``scale_exp``: a signed integer (:mod:`.layout`)."""
        fmt = self.fmt
        out = block_layouts("", fmt, sub="subscales", elems="codes", scale_encoding=self.opts.scale_encoding)
        out["x"] = fp32_layout(fmt.block_size)
        out["scale_exp"] = plain_layout(16, signed=True)
        return out

    def explain_outputs(self, inputs: dict) -> dict | None:
        """The outputs from the NumPy fast path alone (:func:`mxsim.fast.block.quantize_blocks`,
        bit-identical to the reference by its tests; no classes), for ``check --explain``'s many
        candidates: fp32 words -> float32 blocks; ``scale_exp`` as the suite writes it (-128 for
        an E8M0 NaN scale). None for a format with a tensor scale (NVFP4)."""
        fmt, k = self.fmt, self.fmt.block_size
        if fmt.tensor_scale is not None:
            return None
        words = np.array([[(w >> (32 * i)) & 0xFFFFFFFF for i in range(k)] for w in inputs["x"]], dtype=np.uint32)
        scales, subscales, codes = quantize_blocks(words.reshape(-1, k).view(np.float32), fmt, self.opts)
        out = {"scale": [int(s) for s in scales],
               "codes": [pack_word([int(c) for c in row], fmt.element.width) for row in codes]}
        if fmt.scale.name == "e8m0":
            nan = self.opts.scale_encoding == "e8m0"
            out["scale_exp"] = [-128 if nan and s == 0xFF else int(byte_exponent(int(s), self.opts.scale_encoding))
                                for s in scales]
        if fmt.subblocks:
            out["subscales"] = [pack_word([int(t) for t in row], fmt.subscale_bits) for row in subscales]
        return out

    def _block_values(self, rng: random.Random, kind: str) -> list[Exact]:
        k = self.fmt.block_size

        def gauss(scale_exp: int) -> Exact:
            # integer draws only (no libm), so that every platform makes the same vectors: a
            # random 24-bit significand at a bell-shaped exponent around scale_exp
            exponent = scale_exp + rng.randint(-3, 0) + rng.randint(-3, 1)
            sign = rng.getrandbits(1)  # drawn before the significand
            return Exact.trusted(sign, dyadic(rng.getrandbits(23) | (1 << 23), exponent - 23))

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

    _DIRECTED = ["all_zero", "outlier", "nan", "inf", "tiny", "huge"] * 2 + ["grid"] * 20

    def stimulus(self, rng: random.Random, level: int):
        yield from self._catalogue(rng, level, Counter())

    def _catalogue(self, rng: random.Random, level: int, left_out: Counter):
        """The stimulus; under options that refuse blocks, each block without an MX encoding is
        replaced and counted in ``left_out`` (:mod:`..stimulus.refused`)."""
        directed = (self._inputs(self._block_values(rng, kind)) for kind in self._DIRECTED)
        fixed = (self._inputs(values) for values in self._decision_blocks + self._low_scale_blocks)
        drawn = (self.random_inputs(rng, i) for i in range(100 * level))
        for inputs, origin in itertools.chain(zip(directed, itertools.repeat("directed")),
                                              zip(fixed, itertools.repeat("directed")),
                                              zip(drawn, itertools.repeat("random"))):
            if self.opts.refuses_blocks:
                kept = accepted(self, inputs, rng, left_out)
                inputs, origin = kept, (origin if kept is inputs else "random")  # a replacement is a random draw
            yield inputs, origin

    def left_out(self, rng: random.Random, level: int, vectors: int) -> dict:
        """The manifest's ``left_out`` entry for the first ``vectors`` lines of the catalogue drawn
        with ``rng`` (:func:`..stimulus.refused.left_out_record`; {} for options that refuse no block)."""
        if not self.opts.refuses_blocks:
            return {}
        blocks = Counter()
        for _ in itertools.islice(self._catalogue(rng, level, blocks), vectors):
            pass
        return left_out_record(blocks, self._refused_layouts)

    def catalogue_size(self, level: int) -> int:
        return len(self._DIRECTED) + len(self._decision_blocks) + len(self._low_scale_blocks) + 100 * level

    # structured stimulus (docs/numerics.md section 3.3; mxsim.golden.stimulus.patterns) --------------------------
    def _anchors(self) -> list[Exact]:
        """Block maxima that fix the scale: the largest fp32 value below the binade above the
        element's largest magnitude (under the floor rule it saturates, E unchanged), times 2^0
        and times 2^scale_min (E8M0 families: elements reach into fp32's subnormals); NVFP4
        6 * 448 * 2^j for j = 0, -128 (tensor scale 2^j, block scale 448)."""
        if self.fmt.scale.name != "e8m0":
            return [Exact(0, Fraction(6 * 448) * Fraction(2) ** j) for j in (0, -128)]
        above = Fraction(2) ** (floor_log2(finite_magnitudes(self.fmt.element)[-1]) + 1)
        top = above - above / (1 << 24)
        return [Exact(0, top * Fraction(2) ** s) for s in (0, self.opts.scale_min)]

    def _divisor_of(self, values: list[Exact]) -> list[Fraction]:
        """The element divisors D (exact) of the block ``values`` as this suite quantizes it."""
        inputs = self._inputs(values)
        k, fmt = self.fmt.block_size, self.fmt
        xs = [float(v.magnitude) * (-1) ** v.sign for v in values]
        tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        block = quantize_block(xs, fmt, self.opts, tensor_scale=tensor_scale)
        encoding = self.opts.scale_encoding
        exponent = byte_exponent(block.scale, encoding) if fmt.scale.name == "e8m0" else 0
        subscales = np.array([block.subscales], dtype=np.int64).reshape(1, fmt.subblocks)
        tensor_words = np.array([inputs["tensor_scale"]]) if "tensor_scale" in inputs else None
        divisor, factor = self._divisors(np.array([block.scale]), np.array([exponent]), subscales, tensor_words, (1, k))
        if factor is not None:  # fp32_steps: x * factor is rounded to fp32 first; aim at x = point / factor
            finite = 0 < factor[0] < float("inf")
            return [1 / Fraction(float(factor[0])) if finite else Fraction(0)] * k
        return [Fraction(float(d)) for d in divisor[0]]

    @cached_property
    def _decision_blocks(self) -> list[list[Exact]]:
        """Blocks that reach every rounding case (:func:`.stimulus.rounding_cases`) of the
        intervals standing for every band of the element grid (:func:`.stimulus.grid_intervals`),
        against the divisor the quantizer actually uses, with both signs: per anchor
        (:meth:`_anchors`) the block maximum in slot 0, the points (at most the maximum, exact fp32
        values) dealt round-robin into at least MIN_CLASS_VECTORS blocks (so each case is met in
        as many blocks; a point of the zero or a subnormal band in MIN_CLASS_VECTORS / 2 consecutive
        blocks, so that the per-band near-tie classes are met as often), a -0 in the last free slot
        of each. Sub-block formats twice: every
        pair partnered with the maximum (microexponent 0, points in the odd slots), and pairs of
        points alone (microexponent 1)."""
        fmt, k = self.fmt, self.fmt.block_size
        grid = finite_magnitudes(fmt.element)
        min_normal = fmt.element.min_normal if fmt.element.kind == "float" and fmt.element.subnormals else None
        intervals = grid_intervals(grid, min_normal)
        blocks = []
        for amax in self._anchors():
            layouts = [[amax] + [Exact(0)] * (k - 1)]
            if fmt.subblocks:
                layouts.append([amax if i % 2 == 0 else Exact(0) for i in range(k)])
            for pilot in layouts:
                free = [i for i, v in enumerate(pilot) if v.is_zero]
                try:
                    divisors = self._divisor_of(pilot)
                except NoMXEncoding as refused:  # its maximum has no MX encoding: no block of it has one
                    self._refused_layouts[refused.option] += 1
                    continue
                d = divisors[free[-1]]
                if not d:
                    continue
                cases = [case for lo, hi, _ in intervals for case in rounding_cases(lo * d, hi * d)]
                cases.sort(key=lambda case: CASES.index(case[0]))  # a case's points go to different blocks
                points = [v for v in dict.fromkeys(v for _, v in cases) if v <= amax.magnitude and _is_fp32(v)]
                # the zero band and the subnormal bands have one or two intervals each: their points go to
                # MIN_CLASS_VECTORS / 2 consecutive blocks each, so every per-band class meets enough blocks
                low_edge = min_normal * d if min_normal else 0
                copies = [LOW_BAND_COPIES if x.magnitude < low_edge else 1 for x in both_signs(points)]
                signed = [x for x, n in zip(both_signs(points), copies) for _ in range(n)]
                count = max(MIN_CLASS_VECTORS, -(-len(signed) // (len(free) - 1)))
                for b in range(count):
                    block = list(pilot)
                    dealt = signed[b::count]
                    for slot, value in zip(free, dealt + [Exact(1)] * (len(free) - len(dealt))):
                        block[slot] = value
                    blocks.append(block)
        return blocks

    @cached_property
    def _low_scale_blocks(self) -> list[list[Exact]]:
        """E8M0 families: blocks whose shared exponent E = floor(log2 amax) - emax_elem falls 1, 2 and 3
        below the smallest scale exponent (``scale_min``), so the scale clamps there and the elements
        (amax * (k - i) / k, alternating signs) round against the clamped scale (docs/numerics.md section 2);
        amax's significand 1 and 1.5. Found missing by the RTL mutation campaign (rtl/mutate.py)."""
        if self.fmt.scale.name != "e8m0":
            return []
        k = self.fmt.block_size
        emax_elem = floor_log2(finite_magnitudes(self.fmt.element)[-1])
        blocks = []
        for below in (1, 2, 3):
            for significand in (Fraction(1), Fraction(3, 2)):
                amax = significand * Fraction(2) ** (self.opts.scale_min - below + emax_elem)
                blocks.append([Exact(i & 1, amax * Fraction(k - i, k)) for i in range(k)])
        return blocks

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """A block of varied dynamic range; every other one (odd ``index``) spread 2^+-30 wider."""
        return self._inputs(self._block_values(rng, "wide" if index % 2 else "normal"))

    def random_run(self, rng: np.random.Generator, first: int, n: int) -> list[dict]:
        """``n`` random vectors beyond the catalogue drawn at once with NumPy (see
        :func:`mxsim.golden.compute.pipeline.vectors`), from the distribution of :meth:`random_inputs`
        (vector ``first + j`` is "wide" for odd indices): a spread s in 0 .. 40 per block, each
        element a random sign and 24-bit significand at exponent randint(-s, s) // 4 (+ randint(-30,
        30) when wide) + randint(-3, 0) + randint(-3, 1), always a normal fp32 value."""
        k = self.fmt.block_size
        wide = (np.arange(first, first + n) % 2 == 1)[:, None]
        spread = rng.integers(0, 41, size=(n, 1))
        centre = np.floor_divide(rng.integers(-spread, spread + 1, size=(n, k)), 4)
        exponent = centre + wide * rng.integers(-30, 31, size=(n, k)) + rng.integers(-3, 1, size=(n, k)) + rng.integers(-3, 2, size=(n, k))
        words = rng.integers(0, 2, size=(n, k)) << 31 | (exponent + 127) << 23 | rng.integers(0, 1 << 23, size=(n, k))
        rows = [{"x": x} for x in pack_items(words, 32)]
        if self.fmt.tensor_scale is not None:  # every value is finite: the bits order like the values
            largest = (words & 0x7FFFFFFF).max(axis=1).astype(np.uint32).view(np.float32)
            for row, word in zip(rows, nvfp4_tensor_scales(largest, self.opts).view(np.uint32).tolist()):
                row["tensor_scale"] = word
        return rows

    def _inputs(self, xs: list[Exact]) -> dict:
        bits = [fp32_bits(x) for x in xs]
        inputs = {"x": pack_word(bits, 32)}
        if self.fmt.tensor_scale is not None:
            values = [fp32_value(b) for b in bits]
            amax = max((v.magnitude for v in values if v.is_finite), default=Fraction(0))
            inputs["tensor_scale"] = fp32_bits(Exact(0, nvfp4_tensor_scale(amax, self.opts)))
        return inputs

    def compute(self, inputs: dict):
        return self.compute_many([inputs])[0]

    def compute_many(self, rows: list[dict]) -> list[tuple[dict, set]]:
        """``compute`` of every vector of ``rows``: the reference quantizer vector by vector, then
        the rounding-decision classes of all of them at once (:meth:`_decision_flags` on the
        stacked blocks: the same operations per element as for one vector)."""
        done = [self._reference_vector(inputs) for inputs in rows]
        if not done:
            return []
        fmt = self.fmt
        tensor = "tensor_scale" in rows[0]
        flags = self._decision_flags(
            np.array([words for _, _, (words, _, _, _, _) in done], dtype=np.uint32),
            np.array([block.scale for _, _, (_, block, _, _, _) in done]),
            np.array([0 if exponent is None else exponent for _, _, (_, _, exponent, _, _) in done]),
            np.array([scale_nan for _, _, (_, _, _, scale_nan, _) in done]),
            np.array([block.codes for _, _, (_, block, _, _, _) in done], dtype=np.int64),
            np.array([block.subscales if fmt.subblocks else () for _, _, (_, block, _, _, _) in done],
                     dtype=np.int64).reshape(len(done), fmt.subblocks),
            np.array([word for _, _, (_, _, _, _, word) in done]) if tensor else None,
        )
        return [(out, classes | set(class_names(int(word)))) for (out, classes, _), word in zip(done, flags.tolist())]

    def _reference_vector(self, inputs: dict):
        """(outputs, classes but the decision classes, (fp32 words, the reference's QuantizedBlock,
        the scale exponent or None, scale NaN, the tensor scale word or None)) of one vector."""
        k, fmt = self.fmt.block_size, self.fmt
        raw = inputs["x"].to_bytes(4 * k, "little")
        words = struct.unpack(f"<{k}I", raw)
        # the inputs as Python floats: fp32 -> binary64 is exact (NaNs stay NaN), and the reference
        # reads a float exactly (mxsim.ref.to_exact)
        xs = struct.unpack(f"<{k}f", raw)
        tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
        block = quantize_block(xs, fmt, self.opts, tensor_scale=tensor_scale)
        out = {"scale": block.scale, "codes": pack_word(block.codes, fmt.element.width)}
        e8m0_scaled = fmt.scale.name == "e8m0"
        encoding = self.opts.scale_encoding
        # int8_exponent has no NaN scale (its 0xFF is 2^-1), so E = -128 is never ambiguous there
        scale_nan = encoding == "e8m0" and decode(block.scale, fmt.scale).is_nan
        exponent = byte_exponent(block.scale, encoding) if e8m0_scaled and not scale_nan else None
        if e8m0_scaled:
            out["scale_exp"] = -128 if scale_nan else exponent
        if fmt.subblocks:
            out["subscales"] = pack_word(block.subscales, fmt.subscale_bits)
        # input classes from the fp32 bit fields: magnitude bits above 0x7F800000 are NaN, equal
        # to it Inf, below 2^23 (exponent field 0) zero or subnormal
        magnitudes = [w & 0x7FFFFFFF for w in words]
        nonzero = [m for m in magnitudes if m]
        classes = set()
        if max(magnitudes) > FP32_INF_BITS:
            classes.add("nan")
        if FP32_INF_BITS in magnitudes:
            classes.add("inf")
        if not nonzero:
            classes.add("all_zero")
        elif min(nonzero) < 1 << 23:
            classes.add("subnormal_input")
        if scale_nan:
            classes.add("scale_nan")
        elif e8m0_scaled:
            if exponent == self.opts.scale_min:
                classes.add("scale_min")
            if exponent == E8M0_MAX:
                classes.add("scale_max")
            largest = max((m for m in magnitudes if m < FP32_INF_BITS), default=0)  # the bits order like the values
            low = self.opts.scale_min
            if largest and fmt.element.kind == "float" and not (low <= _fp32_floor_log2(largest) - fmt.element.emax <= E8M0_MAX):
                classes.add("scale_clamp")
        if not max_codes(fmt.element).isdisjoint(block.codes):
            classes.add("max")
        if not subnormal_codes(fmt.element).isdisjoint(block.codes):
            classes.add("subnormal_output")
        if fmt.element.kind == "int" and fmt.element.encoding == "twos_complement" and fmt.element.sign_mask in block.codes:
            classes.add("int8_neg2")
        if any(w == 0x80000000 for w in words) or not code_sets(fmt.element)["negative"].isdisjoint(
                set(block.codes) & code_sets(fmt.element)["zero"]):
            classes.add("negative_zero")
        return out, classes, (words, block, exponent, scale_nan, inputs.get("tensor_scale"))

    # expected values of many vectors at once (mxsim.golden.kinds.batch) ---------------------------
    def compute_batch(self, inputs: dict):
        """``compute`` of N vectors with the fast quantizer (:func:`mxsim.fast.block.quantize_blocks`
        on the float32 inputs): (outputs, flags), see :mod:`mxsim.golden.kinds.batch`. NVFP4 vectors,
        each with its own tensor scale, go in one call. A batch with an invalid vector (a tensor scale
        that is not positive and finite) goes vector by vector through ``compute``, which raises
        the reference's error."""
        try:
            return self._batch(inputs)
        except (ValueError, ZeroDivisionError, OverflowError):
            return compute_each(self, inputs)

    def _batch(self, inputs: dict):
        fmt = self.fmt
        bits = unpack_items(inputs["x"], 32, fmt.block_size).astype(np.uint32)
        tensor_scale = None
        if "tensor_scale" in inputs:  # one s_t per vector, all in one fast call (ValueError: not an fp32 s_t)
            tensor_scale = np.asarray(inputs["tensor_scale"], dtype=np.uint32).view(np.float32).astype(np.float64)
        scales, sub, codes = quantize_blocks(bits.view(np.float32), fmt, self.opts, tensor_scale=tensor_scale)
        scales, codes = scales.astype(np.int64), codes.astype(np.int64)
        subscales = np.zeros((len(bits), fmt.subblocks), dtype=np.int64) if sub is None else sub.astype(np.int64)
        # int8_exponent has no NaN scale (its 0xFF is 2^-1)
        scale_nan = code_table(fmt.scale).nan[scales] & (self.opts.scale_encoding == "e8m0")
        exponent = byte_exponent(scales, self.opts.scale_encoding)
        out = {"scale": scales.tolist(), "codes": pack_items(codes, fmt.element.width)}
        if fmt.scale.name == "e8m0":
            out["scale_exp"] = np.where(scale_nan, -128, exponent).tolist()
        if fmt.subblocks:
            out["subscales"] = pack_items(subscales, fmt.subscale_bits)
        flags = self._batch_flags(bits, exponent, scale_nan, codes, subscales)
        tensor_words = np.asarray(inputs["tensor_scale"], dtype=np.int64) if "tensor_scale" in inputs else None
        flags |= self._decision_flags(bits, scales, exponent, scale_nan, codes, subscales, tensor_words)
        return out, flags.tolist()

    def _batch_flags(self, bits: np.ndarray, exponent, scale_nan, codes, subscales) -> np.ndarray:
        """The classes of :meth:`compute`, from the fp32 bit fields of the inputs."""
        fmt = self.fmt
        magnitude = (bits & 0x7FFFFFFF).astype(np.int64)
        field, fraction = magnitude >> 23, magnitude & 0x7FFFFF
        flags = np.zeros(len(bits), dtype=np.int64)
        flags[((field == 0xFF) & (fraction != 0)).any(axis=1)] |= bit("nan")
        flags[((field == 0xFF) & (fraction == 0)).any(axis=1)] |= bit("inf")
        flags[(magnitude == 0).all(axis=1)] |= bit("all_zero")
        flags[((field == 0) & (fraction != 0)).any(axis=1)] |= bit("subnormal_input")
        flags[scale_nan] |= bit("scale_nan")
        if fmt.scale.name == "e8m0":
            flags[~scale_nan & (exponent == self.opts.scale_min)] |= bit("scale_min")
            flags[~scale_nan & (exponent == E8M0_MAX)] |= bit("scale_max")
            if fmt.element.kind == "float":
                # the largest finite magnitude (fp32 magnitude bits order like the values)
                largest = np.where(field < 0xFF, magnitude, 0).max(axis=1)
                top_field, top_fraction = largest >> 23, largest & 0x7FFFFF
                subnormal_log2 = np.frexp(np.maximum(top_fraction, 1).astype(np.float64))[1] - 1 - 149
                log2 = np.where(top_field > 0, top_field - 127, subnormal_log2)
                wanted = log2 - fmt.element.emax
                clamped = (largest > 0) & ((wanted < self.opts.scale_min) | (wanted > E8M0_MAX))
                flags[~scale_nan & clamped] |= bit("scale_clamp")
        table = code_table(fmt.element)
        flags[table.max[codes].any(axis=1)] |= bit("max")
        flags[table.subnormal[codes].any(axis=1)] |= bit("subnormal_output")
        flags[table.neg2[codes].any(axis=1)] |= bit("int8_neg2")
        negative_zero = (bits == 0x80000000).any(axis=1) | (table.zero[codes] & table.negative[codes]).any(axis=1)
        flags[negative_zero] |= bit("negative_zero")
        return flags

    def reachable_classes(self) -> frozenset[str]:
        """The classes every quantize catalogue must hit (docs/numerics.md section 3.3): ``negative_zero`` and
        the rounding decisions of the elements: every case and both near-ties; ``subnormal_near_tie``
        where the element has subnormals; ``increment`` and ``carry`` except under rtz;
        ``zero_result_sign`` except under rdn (a negative element rounds away from zero);
        ``saturation`` under the floor rule (the block maximum may lie above max_normal x 2^E; a
        shared-exponent element may round to 2^m) and for NVFP4 (its UE4M3 scale may round below
        amax / 6 / s_t).
        NVFP4 with ``nvfp4_arith='fp32_steps'`` and an amax tensor scale rounds fp32(x * factor),
        whose factor fp32(2^-j / 448) is inexact, so the ties and near-ties are met only by chance:
        not required there. Per band (:func:`.rounding_classes.format_bands`): both near-ties in the
        normal range, the zero band and every subnormal band of the element.
        """
        reachable = {"negative_zero", "exact", "below_half", "tie", "above_half", "near_tie_top", "near_tie_bottom",
                     "near_tie_below", "truncate", "increment", "carry", "zero_result_sign"}
        element, opts = self.fmt.element, self.opts
        if element.kind == "float" and element.subnormals:
            reachable.add("subnormal_near_tie")
        reachable |= {band_class(kind, band) for band in format_bands(element) for kind in ("top", "bottom")}
        if opts.rounding == "rtz":
            reachable -= {"increment", "carry"}
        if opts.rounding == "rdn":
            reachable.discard("zero_result_sign")
        if opts.scale_rule == "floor" or self.fmt.scale.name != "e8m0":
            reachable.add("saturation")
        if self.fmt.scale.name != "e8m0" and opts.nvfp4_arith == "fp32_steps" and opts.nvfp4_tensor_scale == "amax":
            reachable -= {"exact", "tie", "near_tie_top", "near_tie_bottom", "near_tie_below", "subnormal_near_tie"}
            reachable = {name for name in reachable if not name.startswith(("near_tie_top_", "near_tie_bottom_"))}
        return frozenset(reachable)

    # rounding decisions (docs/numerics.md section 3.3; mxsim.golden.coverage.rounding) --------------------
    def _decision_flags(self, bits, scales, exponent, scale_nan, codes, subscales, tensor_words) -> np.ndarray:
        """The rounding-decision classes of N vectors (an int64 flags word each, the OR over the
        block's elements): each finite nonzero input as the quantizer reads it (``subnormal_inputs``)
        against its element divisor D (:meth:`_divisors`; NVFP4 ``fp32_steps``: the fp32 product
        x * factor against 1), its resolution fp32's last bit (2^-150 for a subnormal read
        ``as_normal``). ``bits``: (N, k) fp32 words; ``tensor_words``: (N,) fp32 words (NVFP4)."""
        fmt, opts = self.fmt, self.opts
        magnitude = (bits & 0x7FFFFFFF).astype(np.int64)
        field, fraction = magnitude >> 23, magnitude & 0x7FFFFF
        x = np.where(field < 0xFF, magnitude, 0).astype(np.uint32).view(np.float32).astype(np.float64)
        subnormal = (field == 0) & (fraction != 0)
        min_exponent = -126
        if opts.subnormal_inputs in ("flush", "flush_plus"):
            x = np.where(subnormal, 0.0, x)
        elif opts.subnormal_inputs == "as_normal":  # (1 + m / 2^23) * 2^-127, last bit 2^-150
            x = np.where(subnormal, np.ldexp((fraction | (1 << 23)).astype(np.float64), -150), x)
            min_exponent = -127
        divisor, factor = self._divisors(scales, exponent, subscales, tensor_words, bits.shape)
        if factor is not None:  # NVFP4 fp32_steps: the element rounds fp32(x * factor), exact product first
            with np.errstate(over="ignore", invalid="ignore"):  # 0 * Inf (masked below)
                x = (x * factor[:, None]).astype(np.float32).astype(np.float64)
            min_exponent = -126
        valid = (x > 0) & np.isfinite(x) & ~np.asarray(scale_nan, dtype=bool)[:, None]
        result = np.array(_code_magnitudes(fmt.element))[codes] * divisor
        negative = bits >> 31 == 1
        min_normal = float(fmt.element.min_normal) if fmt.element.kind == "float" and fmt.element.subnormals else 0.0
        if len(bits) == 1:  # one vector (compute): the same steps element by element on floats (faster)
            word = 0
            for xi, di, ri, sign, ok in zip(*(a[0].tolist() for a in (x, divisor, result, negative, valid))):
                if ok:
                    lo, hi, saturated = grid_interval(xi, di, self._grids[sign])
                    word |= bit("saturation") if saturated else decision_flags(
                        xi, lo * di, hi * di, fp32_resolution(xi, min_exponent), ri, sign, min_normal * di, hi_unit=hi)
            return np.array([word], dtype=np.int64)
        element_flags = np.zeros(bits.shape, dtype=np.int64)
        for sign in (False, True):
            rows, cols = np.nonzero(valid & (negative == sign))
            xs, ds = x[rows, cols], divisor[rows, cols]
            lo, hi, saturated = grid_interval(xs, ds, self._grids[sign])
            word = decision_flags(xs, lo * ds, hi * ds, fp32_resolution(xs, min_exponent), result[rows, cols],
                                  np.full(len(xs), sign), min_normal * ds, hi_unit=hi)
            word = np.where(saturated, bit("saturation"), word)
            element_flags[rows, cols] = word
        return np.bitwise_or.reduce(element_flags, axis=1)

    def _divisors(self, scales, exponent, subscales, tensor_words, shape):
        """((N, k) float64 divisors D of every element, (N,) fp32 factors or None): 2^E (or
        ``min_scale_divisor``'s at E = -127: :func:`mxsim.ref.block.element_divisor`), 2^(E -
        tau_j) with sub-blocks, s_t * scale for NVFP4 (exact in binary64: 24 times 4 bits); under
        ``nvfp4_arith='fp32_steps'`` D = 1 and the factor fp32(fp32(1 / s_t) / scale)."""
        fmt, opts = self.fmt, self.opts
        n, k = shape
        if fmt.scale.name != "e8m0":
            s_t = np.ones(n) if tensor_words is None else tensor_words.astype(np.uint32).view(np.float32).astype(np.float64)
            scale = np.array(_code_magnitudes(fmt.scale))[np.asarray(scales, dtype=np.int64)]
            if opts.nvfp4_arith != "fp32_steps":
                return np.repeat((s_t * scale)[:, None], k, axis=1), None
            factors = {}
            for pair in set(zip(s_t.tolist(), scale.tolist())):
                inverse = to_fp32(1 / Fraction(pair[0]))
                if inverse.is_inf or not pair[1]:  # 1 / s_t beyond fp32: every element saturates (the reference's)
                    factors[pair] = float("inf")
                else:
                    factor = to_fp32(inverse.value / Fraction(pair[1]))
                    factors[pair] = float("inf") if factor.is_inf else float(factor.value)
            factor = np.array([factors[pair] for pair in zip(s_t.tolist(), scale.tolist())])
            return np.ones(shape), factor
        exponent = np.asarray(exponent, dtype=np.int64)
        if fmt.subblocks:
            taus = np.repeat(subscales, fmt.subblock_size, axis=1)
            return np.ldexp(1.0, (exponent[:, None] - taus).astype(np.int32)), None
        table = {e: element_divisor(e, opts) for e in set(exponent.tolist())}
        per_row = np.array([table[e][0] / table[e][1] for e in exponent.tolist()], dtype=np.float64)
        return np.repeat(per_row[:, None], k, axis=1), None


def _is_fp32(v: Fraction) -> bool:
    """Whether fp32 holds the magnitude v exactly."""
    return fp32_value(fp32_bits(Exact(0, v))).magnitude == v


@lru_cache(maxsize=None)
def _code_magnitudes(element) -> tuple[float, ...]:
    """The magnitude of every code of a narrow element (0 for NaN and Inf codes), exact in binary64."""
    values = (decode(code, element) for code in range(1 << element.width))
    return tuple(float(v.magnitude) if v.is_finite else 0.0 for v in values)
