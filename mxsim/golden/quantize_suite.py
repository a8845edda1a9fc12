"""The ``quantize`` suite kind: a block of fp32 inputs -> scale, sub-scales and element codes."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from itertools import repeat

import numpy as np

from ..fast.block import quantize_blocks
from ..options import QuantizeOptions
from ..ref.block import nvfp4_tensor_scale, quantize_block
from ..ref.decode import finite_magnitudes
from ..ref.exact import Exact
from ..ref.scale import E8M0_MAX, byte_exponent
from .batch import bit, code_table, compute_each, pack_items, unpack_items
from .fields import Field
from .format_spec import block_format, format_param
from .rounding_classes import magnitude_grid, rounding_class_arrays, rounding_classes
from .suite import Suite, decode, fp32_bits, fp32_value, max_codes, pack_word, subnormal_codes, jsonable
from .suite import profile_options

FP32_INF_BITS = 0x7F800000


def _fp32_floor_log2(magnitude_bits: int) -> int:
    """floor(log2 x) of a positive finite fp32 magnitude given by its bits."""
    field = magnitude_bits >> 23
    return field - 127 if field else magnitude_bits.bit_length() - 1 - 149


@dataclass
class QuantizeSuite(Suite):
    """k fp32 inputs -> a block's scale (code and unbiased exponent), sub-scales and codes."""

    block: str
    options: dict = field(default_factory=dict)
    profile: str | None = None
    kind = "quantize"
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
        # tie, carry and saturation come from q = |x| / 2^(E - tau): E8M0-style scales, inputs read
        # exactly, the default divisor (NVFP4's q = |x| / (s_t * scale) is not dyadic: not classed)
        self.rounding_classed = (
            self.fmt.scale.name == "e8m0"
            and self.opts.min_scale_divisor == "scale"
            and self.opts.subnormal_inputs == "exact"
            and not self.opts.flush_subnormal_inputs
        )
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

    def _block_values(self, rng: random.Random, kind: str) -> list[Exact]:
        k = self.fmt.block_size

        def gauss(scale_exp: int) -> Exact:
            # integer draws only (no libm), so that every platform makes the same vectors: a
            # random 24-bit significand at a bell-shaped exponent around scale_exp
            exponent = scale_exp + rng.randint(-3, 0) + rng.randint(-3, 1)
            return Exact(rng.getrandbits(1), Fraction(rng.getrandbits(23) | (1 << 23), 1 << 23) * Fraction(2) ** exponent)

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
        for kind in self._DIRECTED:
            yield self._inputs(self._block_values(rng, kind)), "directed"
        for i in range(100 * level):
            yield self.random_inputs(rng, i), "random"

    def catalogue_size(self, level: int) -> int:
        return len(self._DIRECTED) + 100 * level

    def random_inputs(self, rng: random.Random, index: int) -> dict:
        """A block of varied dynamic range; every other one (odd ``index``) spread 2^+-30 wider."""
        return self._inputs(self._block_values(rng, "wide" if index % 2 else "normal"))

    def random_run(self, rng: np.random.Generator, first: int, n: int) -> list[dict]:
        """``n`` random vectors beyond the catalogue drawn at once with NumPy (see
        :func:`mxsim.golden.pipeline.vectors`), from the distribution of :meth:`random_inputs`
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
        if self.fmt.tensor_scale is not None:
            for row, block in zip(rows, words):
                largest = int((block & 0x7FFFFFFF).max())  # every value is finite: the bits order like the values
                amax = fp32_value(largest).magnitude
                row["tensor_scale"] = fp32_bits(Exact(0, nvfp4_tensor_scale(amax, self.opts)))
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
        if self.rounding_classed and exponent is not None:
            classes |= self._rounding_classes(xs, exponent, block)
        return out, classes

    def _rounding_classes(self, xs, exponent: int, block) -> set:
        """tie, carry, saturation of the block's finite nonzero inputs (:mod:`.rounding_classes`)."""
        fmt = self.fmt
        if fmt.subblocks:  # q = |x| * 2^(tau_j - E) for the elements of sub-block j
            shifts = [tau - exponent for tau in block.subscales for _ in range(fmt.subblock_size)]
        else:
            shifts = repeat(-exponent)
        magnitudes = _code_magnitudes(fmt.element)
        return rounding_classes(xs, shifts, [magnitudes[code] for code in block.codes], self._grids)

    # expected values of many vectors at once (mxsim.golden.batch) ---------------------------
    def compute_batch(self, inputs: dict):
        """``compute`` of N vectors with the fast quantizer (:func:`mxsim.fast.block.quantize_blocks`
        on the float32 inputs): (outputs, flags), see :mod:`mxsim.golden.batch`. NVFP4 vectors are
        quantized in groups of equal tensor scale. A batch with an invalid vector (a tensor scale
        that is not positive and finite) goes vector by vector through ``compute``, which raises
        the reference's error."""
        try:
            return self._batch(inputs)
        except (ValueError, ZeroDivisionError):
            return compute_each(self, inputs)

    def _tensor_scale_groups(self, inputs: dict, n: int):
        if "tensor_scale" not in inputs:
            return [(None, slice(0, n))]
        groups: dict = {}
        for i, word in enumerate(inputs["tensor_scale"]):
            groups.setdefault(int(word), []).append(i)
        result = []
        for word, rows in groups.items():
            value = fp32_value(word)
            if not value.is_finite or value.sign or not value.magnitude:
                raise ValueError(f"tensor_scale bits {word:#010x} are not a positive finite fp32 value")
            result.append((value.magnitude, np.array(rows)))
        return result

    def _batch(self, inputs: dict):
        k, fmt = self.fmt.block_size, self.fmt
        n = len(inputs["x"])
        bits = unpack_items(inputs["x"], 32, k).astype(np.uint32)
        scales = np.zeros(n, dtype=np.int64)
        subscales = np.zeros((n, fmt.subblocks), dtype=np.int64)
        codes = np.zeros((n, k), dtype=np.int64)
        for tensor_scale, rows in self._tensor_scale_groups(inputs, n):
            s, sub, c = quantize_blocks(bits[rows].view(np.float32), fmt, self.opts, tensor_scale=tensor_scale)
            scales[rows], codes[rows] = s, c
            if sub is not None:
                subscales[rows] = sub
        # int8_exponent has no NaN scale (its 0xFF is 2^-1)
        scale_nan = code_table(fmt.scale).nan[scales] & (self.opts.scale_encoding == "e8m0")
        exponent = byte_exponent(scales, self.opts.scale_encoding)
        out = {"scale": scales.tolist(), "codes": pack_items(codes, fmt.element.width)}
        if fmt.scale.name == "e8m0":
            out["scale_exp"] = np.where(scale_nan, -128, exponent).tolist()
        if fmt.subblocks:
            out["subscales"] = pack_items(subscales, fmt.subscale_bits)
        return out, self._batch_flags(bits, exponent, scale_nan, codes, subscales).tolist()

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
        if self.rounding_classed:
            self._batch_rounding_flags(flags, bits, exponent, scale_nan, codes, subscales)
        return flags

    def _batch_rounding_flags(self, flags, bits, exponent, scale_nan, codes, subscales) -> None:
        """:meth:`_rounding_classes` of every vector: q = |x| * 2^(tau - E) is exact in float64
        (fp32 inputs, |E - tau| < 2^9), so is each grid midpoint of these narrow elements."""
        fmt = self.fmt
        with np.errstate(invalid="ignore"):  # signalling NaN inputs (masked out below)
            x = bits.view(np.float32).astype(np.float64)
        taus = np.repeat(subscales, fmt.subblock_size, axis=1) if fmt.subblocks else 0
        shift = (np.asarray(exponent, dtype=np.int64)[:, None] - taus).astype(np.int32)
        valid = ~np.asarray(scale_nan)[:, None] & np.isfinite(x) & (x != 0)
        q = np.ldexp(np.abs(np.where(valid, x, 1.0)), -shift)
        result = np.array(_code_magnitudes(fmt.element))[codes]
        for negative in (False, True):
            rows, cols = np.nonzero(valid & ((x < 0) == negative))
            tie, carry, saturation = rounding_class_arrays(q[rows, cols], self._grids[negative], result[rows, cols])
            for name, hit in (("tie", tie), ("carry", carry), ("saturation", saturation)):
                flags[rows[hit]] |= bit(name)


@lru_cache(maxsize=None)
def _code_magnitudes(element) -> tuple[float, ...]:
    """The magnitude of every code of a narrow element (0 for NaN and Inf codes), exact in binary64."""
    values = (decode(code, element) for code in range(1 << element.width))
    return tuple(float(v.magnitude) if v.is_finite else 0.0 for v in values)
