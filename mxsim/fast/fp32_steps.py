"""Vectorized float32 arithmetic of software quantizers, bit-identical to :mod:`mxsim.ref.fp32_steps`
(docs/numerics.md section 6.2).

* :func:`fp32_log2_floor`: floor(log2 x) from frexp, plus one where x reaches the reference's
  integer threshold of its binade (the float32 values below 2^k whose float32 log2 rounds up
  to k), precomputed once per binade as a float64 value (exact: a float32 value);
* :func:`fp32_log2_elements`: microxcaling's element step in NumPy float32 arithmetic, whose
  IEEE operations (x * 2^-E, |a| * 2^(m - pe), v + 0.5, v - 0.5, floor) are those torch performs;
  the binade comes from :func:`fp32_log2_floor`, not from a float log2.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..ref.fp32_steps import log2_half_spacing_bits, log2_rounds_down_threshold, log2_rounds_up_threshold

__all__ = ["fp32_log2_floor", "fp32_log2_ceil", "fp32_log2_elements"]

_LOWEST, _HIGHEST = -148, 128  # binades [2^(k-1), 2^k) of positive float32 values: k = -148 .. 128


@lru_cache(maxsize=None)
def _thresholds() -> np.ndarray:
    """For k = _LOWEST .. _HIGHEST: the smallest x in [2^(k-1), 2^k) whose float32 log2 rounds up
    to k (as float64), or 2^k where none does (k = 0)."""
    table = np.empty(_HIGHEST - _LOWEST + 1)
    for i, k in enumerate(range(_LOWEST, _HIGHEST + 1)):
        j = log2_half_spacing_bits(k)
        q = max(k - 24, -149)
        table[i] = np.ldexp(1.0, k) if j is None else np.ldexp(float(log2_rounds_up_threshold(j, k - q)), q)
    return table


def fp32_log2_floor(x: np.ndarray) -> np.ndarray:
    """floor(RN32(log2 x)) (int64) of positive float32 values held in a float64 array; 2^128 (an
    Inf read as the fp32 all-ones exponent field, inf_policy='exponent_field') gives 128, as the
    reference."""
    e = np.frexp(x)[1].astype(np.int64) - 1
    thresholds = _thresholds()
    index = e + 1 - _LOWEST
    inside = index < len(thresholds)
    return e + (inside & (x >= thresholds[np.minimum(index, len(thresholds) - 1)]))


@lru_cache(maxsize=None)
def _ceil_thresholds() -> np.ndarray:
    """For e = _LOWEST - 1 .. _HIGHEST - 1: the smallest x above 2^e whose float32 log2 exceeds e
    (x below it, above 2^e, has log2 rounding down to e), or 2^e where none does (e = 0)."""
    table = np.empty(_HIGHEST - _LOWEST + 1)
    for i, e in enumerate(range(_LOWEST - 1, _HIGHEST)):
        j = log2_half_spacing_bits(-e)
        q = max(e - 23, -149)
        table[i] = np.ldexp(1.0, e) if j is None else np.ldexp(float(log2_rounds_down_threshold(j, e - q)), q)
    return table


def fp32_log2_ceil(x: np.ndarray) -> np.ndarray:
    """ceil(RN32(log2 x)) (int64) of positive float32 values held in a float64 array (see
    mxsim.ref.fp32_steps.fp32_log2_ceil)."""
    e = np.frexp(x)[1].astype(np.int64) - 1
    power = x == np.ldexp(1.0, e)
    thresholds = _ceil_thresholds()
    rounds_down = x < thresholds[np.clip(e - (_LOWEST - 1), 0, len(thresholds) - 1)]
    return np.where(power | rounds_down, e, e + 1)


def fp32_log2_elements(x: np.ndarray, exponent: np.ndarray, element, rounding: str):
    """(magnitudes (float64), negative quotients (bool)) of microxcaling's element step for float32
    values ``x`` ((n, k), float32) in blocks of scale exponent ``exponent`` ((n,), int), clamped to
    max normal; see :mod:`mxsim.ref.fp32_steps`. Zeros and NaN lanes give 0 (callers set NaN
    codes); an Inf gives max normal. A quotient x * 2^-E that underflows float32 to zero is not
    negative (torch.sign gives 0: a +0 code)."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        quotient = x * np.ldexp(np.float32(1), -exponent.astype(np.int32))[:, None].astype(np.float32)
    a = np.where(np.isfinite(quotient), np.abs(quotient), np.float32(0))
    if element.kind == "float":
        wide = a.astype(np.float64)
        binade = np.zeros(a.shape, dtype=np.int64)
        positive = wide > 0
        binade[positive] = np.maximum(fp32_log2_floor(wide[positive]), element.emin)
        shift = element.mantissa_bits - binade
    else:
        shift = np.full(a.shape, element.frac_bits, dtype=np.int64)
    v = np.ldexp(a, shift.astype(np.int32)).astype(np.float32)  # exact: a power-of-two scaling in range
    if rounding == "rtz":
        r = np.floor(v)
    else:
        r = np.floor(v + np.float32(0.5))
        if rounding == "rne":
            t = v - np.float32(0.5)
            r = r - ((t >= 0) & (np.floor(t) == t) & (np.fmod(t, np.float32(2)) == 0))
    magnitude = np.minimum(np.ldexp(r.astype(np.float64), -shift), float(element.max_normal))
    return np.where(np.isinf(x), float(element.max_normal), magnitude), quotient < 0  # an Inf saturates
