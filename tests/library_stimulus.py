"""Blocks of every corner class for the software-quantizer oracles (tests/options/test_library_profiles.py).

Each class is drawn with a fixed seed, as float32 (n, k) arrays; the classes are those of issue
21 / docs/numerics.md section 6.2: Gaussian, wide range, zeros and -0, fp32 subnormals, ties and near-ties,
maxima just below powers of two, saturation gaps, NaN/Inf.
"""

from __future__ import annotations

import numpy as np

CLASSES = ("gaussian", "wide", "zeros", "subnormal", "ties", "below_pow2", "saturation", "specials")


def _nudge(x: np.ndarray, rng, steps: int = 2) -> np.ndarray:
    """x moved by -steps .. +steps float32 ulps (the bit pattern), keeping the sign."""
    bits = np.abs(x).astype(np.float32).view(np.int32).astype(np.int64)
    bits = np.clip(bits + rng.integers(-steps, steps + 1, size=x.shape), 0, 0x7F7FFFFF).astype(np.int32)
    return np.copysign(bits.view(np.float32), x).astype(np.float32)


def blocks(element_grid, k: int, n: int, cls: str, seed: int) -> np.ndarray:
    """n float32 blocks of k values of class ``cls``. ``element_grid``: the element values
    (positive, sorted) of the format, from which ties (midpoints) and maxima are drawn."""
    rng = np.random.default_rng([seed, CLASSES.index(cls)])
    grid = np.asarray(element_grid, dtype=np.float64)
    top = grid[-1]
    scale = np.ldexp(1.0, rng.integers(-20, 21, size=(n, 1)))
    signs = np.where(rng.random((n, k)) < 0.5, -1.0, 1.0)
    if cls == "gaussian":
        x = rng.standard_normal((n, k)) * np.ldexp(1.0, rng.integers(-8, 9, size=(n, 1)))
    elif cls == "wide":
        x = signs * np.ldexp(rng.random((n, k)) + 0.5, rng.integers(-140, 127, size=(n, k)))
    elif cls == "zeros":
        x = np.where(rng.random((n, k)) < 0.7, signs * 0.0, rng.standard_normal((n, k)) * 1e-3)
        x[: n // 4] = signs[: n // 4] * 0.0  # all-zero blocks with -0
    elif cls == "subnormal":
        x = signs * rng.integers(0, 1 << 23, size=(n, k)) * 2.0**-149
        x[n // 2 :] *= rng.random((n - n // 2, 1)) < 0.5  # some blocks mix in larger values
        x[n // 2 :, 0] = np.ldexp(1.0, rng.integers(-126, -100, size=n - n // 2))
    elif cls == "ties":
        mids = (grid[1:] + grid[:-1]) / 2
        x = signs * mids[rng.integers(0, len(mids), size=(n, k))]
        x[:, 0] = top  # the maximum fixes E at the element's top binade
        x = x * scale
        x = np.where(rng.random((n, k)) < 0.5, _nudge(x.astype(np.float32), rng, 1), x)
    elif cls == "below_pow2":  # the block maximum a few float32 steps below 2^j (2^-148 .. 2^127)
        powers = np.ldexp(1.0, rng.integers(-148, 128, size=n)).astype(np.float32)
        below = (powers.view(np.int32) - rng.integers(1, 60, size=n).astype(np.int32)).view(np.float32)
        x = rng.standard_normal((n, k)) * 0.1 * below[:, None].astype(np.float64)
        x[:, 0] = below
        x[:, 1:3] = signs[:, 1:3] * _nudge(np.repeat(below[:, None], 2, axis=1), rng, 40)
    elif cls == "saturation":
        x = signs * grid[rng.integers(0, len(grid), size=(n, k))]
        gap = top + (2.0 ** np.floor(np.log2(top)) * 2 - top) * rng.random(n)
        x[:, 0] = gap
        x = x * scale
    elif cls == "specials":
        x = rng.standard_normal((n, k))
        which = rng.integers(0, 3, size=n)
        pos = rng.integers(0, k, size=n)
        x[np.arange(n), pos] = np.choose(which, [np.nan, np.inf, -np.inf])
    else:
        raise ValueError(f"cls={cls!r} is not allowed; expected one of: {', '.join(CLASSES)}")
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float32)
