"""A strategy for dot-product datapath configurations (:class:`mxsim.Accumulator`)."""

from __future__ import annotations

from hypothesis import strategies as st

from ..options.accumulate import MAX_FRAC_BITS, MAX_WIDTH, PRESETS, Accumulator
from ..options.spec import choices_of

__all__ = ["accumulators"]

# The strategy draws section 4's configurations (separate accumulation, its three IEEE outputs);
# the fused steps of section 4.1 and their fp32_e8m13 output are not drawn (yet).
_SEPARATE_CHOICES = {"output": ("fp32", "bf16", "fp16")}


def accumulators(
    *,
    modes=None,
    frac_bits: tuple[int, int] = (0, 40),
    widths: tuple[int, int] = (2, 80),
    presets: bool = True,
) -> st.SearchStrategy[Accumulator]:
    """Valid :class:`mxsim.Accumulator` configurations.

    ``modes``: a subset of ``('exact', 'aligned', 'fp32_sequential')`` (default all). For
    ``aligned``, F is drawn from ``frac_bits`` and W from ``widths`` or None (unbounded); narrow
    registers saturate or wrap, which is the point. Every other field (shift rounding, overflow,
    output format and rounding, ftz, across_blocks) is drawn from its allowed values. With
    ``presets``, the named presets (:data:`mxsim.options.accumulate.PRESETS`) of those modes are drawn too.
    """
    allowed = choices_of(Accumulator, "mode")
    modes = allowed if modes is None else tuple(modes)
    if not modes or any(m not in allowed for m in modes):
        raise ValueError(f"modes={modes!r} is not allowed; expected a non-empty subset of {', '.join(allowed)}")
    for name, pair, low, high in (("frac_bits", frac_bits, 0, MAX_FRAC_BITS), ("widths", widths, 2, MAX_WIDTH)):
        if not (
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(isinstance(v, int) for v in pair)
            and low <= pair[0] <= pair[1] <= high
        ):
            raise ValueError(
                f"{name}={pair!r} is not allowed; expected a pair of integers (lo, hi) with {low} <= lo <= hi <= {high}"
            )
    common = {
        name: st.sampled_from(_SEPARATE_CHOICES.get(name) or choices_of(Accumulator, name))
        for name in ("output", "output_rounding", "across_blocks")
    }
    common["ftz"] = st.booleans()
    options = []
    for mode in modes:
        fields = dict(common)
        if mode == "aligned":
            fields.update(
                frac_bits=st.integers(*frac_bits),
                width=st.one_of(st.none(), st.integers(*widths)),
                shift_rounding=st.sampled_from(choices_of(Accumulator, "shift_rounding")),
                overflow=st.sampled_from(choices_of(Accumulator, "overflow")),
            )
        options.append(st.builds(Accumulator, mode=st.just(mode), **fields))
    named = [p for p in PRESETS.values() if p.mode in modes and p.accumulate == "separate"]
    if presets and named:
        options.append(st.sampled_from(named))
    return st.one_of(options)
