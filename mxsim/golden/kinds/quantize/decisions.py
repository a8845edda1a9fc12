"""The rounding-decision classes of ``quantize`` elements, of one vector or a chunk (docs/numerics.md section 3.3).
Every finite nonzero element as the quantizer reads it, against the divisor it uses (2^E,
2^(E - tau), NVFP4's s_t * scale or its fp32 factor), through :mod:`...coverage.rounding`."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from ....ref.block import element_divisor, to_fp32
from ...coverage.rounding import decision_flags, fp32_resolution, grid_interval
from ...values import decode
from ..batch import bit


class QuantizeDecisions:
    """``_decision_flags`` and ``_divisors`` of a quantize suite (needs ``self.fmt``, ``self.opts``
    and ``self._grids``)."""

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


@lru_cache(maxsize=None)
def _code_magnitudes(element) -> tuple[float, ...]:
    """The magnitude of every code of a narrow element (0 for NaN and Inf codes), exact in binary64."""
    values = (decode(code, element) for code in range(1 << element.width))
    return tuple(float(v.magnitude) if v.is_finite else 0.0 for v in values)
