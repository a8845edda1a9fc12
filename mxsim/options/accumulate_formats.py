"""Which block formats an accumulator takes: the fused settings checked against a pair of block formats.

:func:`check_block_format` (what :meth:`mxsim.options.accumulate.Accumulator.check_block_format`
runs) refuses fused settings that mean nothing for the formats' block size, scales or elements,
with a ValueError naming the setting and what is allowed (docs/numerics.md section 4.1). The
functions read an Accumulator's fields and import nothing from :mod:`mxsim.options.accumulate`.
"""

from __future__ import annotations

from ..formats import get_format

__all__ = ["check_block_format"]


def check_block_format(acc, fmt_a, fmt_b) -> None:
    """Refuse fused settings that mean nothing for a pair of block formats (same block size):
    a ``step`` that neither divides nor is a multiple of the block size, a ``term_size`` that
    does not divide the block size and the step, ``anchor="fixed"`` with a step that spans
    scale blocks, product terms with scales that carry a significand (UE4M3)."""
    if acc.accumulate != "fused":
        return
    _check_elements(acc, fmt_a, fmt_b)
    k = fmt_a.block_size
    step = acc.effective_step(k)
    _check_promotion(acc, k)
    if step > k and step % k:
        raise ValueError(
            f"step={step} is not allowed for block size {k}: a step larger than a block must be a multiple of it"
        )
    if acc.anchor == "fixed" and step > k:
        raise ValueError(
            f"step={step} is not allowed with anchor='fixed' and block size {k}: the fixed grid 2^(XA+XB-F) "
            "needs every step inside one scale block"
        )
    if acc.step_terms == "block":
        size = acc.effective_term_size(k)
        if k % size or step % size:
            raise ValueError(
                f"term_size={size} is not allowed with block size {k} and step={step}: it must divide both"
            )
    else:
        for fmt in (fmt_a, fmt_b):
            if fmt.scale.kind == "float" and fmt.scale.mantissa_bits:
                raise ValueError(
                    f"step_terms='product' is not allowed for {fmt.name!r}: its {fmt.scale.name} scales carry a "
                    "significand; use step_terms='block'"
                )


def _check_interleave(acc, fmt_a, fmt_b) -> None:
    """Refuse ``interleave_steps`` whose group of steps does not lie inside a scale block (the
    products are dealt within each block, which keeps their scales), or with sub-block formats."""
    if acc.interleave_steps == 1:
        return
    k = fmt_a.block_size
    group = acc.effective_step(k) * acc.interleave_steps
    if k % group or acc.effective_step(k) % acc.interleave_run:
        raise ValueError(
            f"interleave_steps={acc.interleave_steps} with step={acc.effective_step(k)} and "
            f"interleave_run={acc.interleave_run} is not allowed for block size {k}: the steps dealt together "
            "must fill a divisor of the block, each step taking whole runs"
        )
    for fmt in (fmt_a, fmt_b):
        if fmt.subblocks:
            raise ValueError(
                f"interleave_steps={acc.interleave_steps} is not allowed for {fmt.name!r} (sub-blocks)"
            )


def _check_conversion(acc, fmt_a, fmt_b) -> None:
    """Refuse ``convert_elements`` for elements the target format does not hold exactly."""
    if acc.convert_elements is None:
        return
    target = get_format(acc.convert_elements, kind="float")
    for fmt in (fmt_a, fmt_b):
        e = fmt.element
        exact = (
            e.kind == "float" and e.mantissa_bits <= target.mantissa_bits
            and e.emin - e.mantissa_bits >= target.emin - target.mantissa_bits and e.max_normal <= target.max_normal
        )
        if not exact:
            raise ValueError(
                f"convert_elements={acc.convert_elements!r} is not allowed for {e.name!r} elements: "
                f"{acc.convert_elements} does not hold all of their values exactly"
            )


def _check_promotion(acc, block_size: int) -> None:
    """Refuse a ``promote_every`` that would cut a step: N must be a multiple of the step, or of
    the block size where steps restart at every block (a step that neither divides the block
    nor is a multiple of it, MXDOTP's FP6 steps of 11)."""
    n = acc.promote_every
    if n is None:
        return
    k, step = block_size, acc.effective_step(block_size)
    if step >= k or k % step == 0:
        unit, what = step, f"step={step}"
    else:
        unit, what = k, f"block size {k} (steps of {step} restart at every block)"
    if n % unit:
        raise ValueError(
            f"promote_every={n} is not allowed with {what}: a promotion must not cut a step; expected a multiple "
            f"of {unit} ({', '.join(str(unit * i) for i in (1, 2, 4))}, ...) or None"
        )


def _check_elements(acc, fmt_a, fmt_b) -> None:
    """Refuse element formats the unit does not take (``elements``, ``mixed_elements``)."""
    _check_interleave(acc, fmt_a, fmt_b)
    _check_conversion(acc, fmt_a, fmt_b)
    if acc.elements is None:
        return
    names = (fmt_a.element.name, fmt_b.element.name)
    for side, name in zip("ab", names):
        if name not in acc.elements:
            raise ValueError(
                f"operand {side} has {name!r} elements, which this unit does not take; it accepts element formats: "
                f"{', '.join(acc.elements)}" + ("" if acc.mixed_elements else " (a and b of the same format)")
            )
    if not acc.mixed_elements and names[0] != names[1]:
        raise ValueError(
            f"operands with {names[0]!r} and {names[1]!r} elements are not allowed: this unit takes a and b of "
            f"the same element format (one of: {', '.join(acc.elements)})"
        )
