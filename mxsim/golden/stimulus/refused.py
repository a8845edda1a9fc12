"""Catalogue blocks a quantize suite's options give no MX encoding (docs/numerics.md section 6.2).

Some options make quantize refuse a block rather than encode it (:attr:`mxsim.QuantizeOptions.refuses_blocks`:
``nan_blocks='error'``, ``inf_policy='error'``, ``scale_value_min='1e-10'``, ``scale_underflow='fp32_pow'``,
and compressed-tensors' NVFP4 ``nvfp4_arith='fp32_reciprocal'`` on NaN or Inf): the profiles
brevitas_0_13, quark_0_13 (and _floor/_ceil) and compressed_tensors_0_20 on the catalogue's NaN, Inf,
all-zero, tiny and low-scale blocks. Such a suite's catalogue leaves those blocks out: each is
replaced by a block drawn next from the catalogue's own generator as :meth:`random_inputs` draws
an ordinary one, with origin ``random`` (so the catalogue keeps its length, which never depends
on the draws), and the manifest counts what was left out, per option
(:func:`left_out_record`; a manifest has the key only when something was left out).

A decision layout (the block maximum with the rounding points below it) whose maximum is itself
refused makes no blocks; those are counted apart, once per layout.
"""

from __future__ import annotations

import random
import struct
from collections import Counter

from ...ref.block import quantize_block
from ...ref.refusals import NoMXEncoding
from ..values import fp32_value

__all__ = ["MAX_REDRAWS", "LEFT_OUT_RULE", "refusal", "accepted", "left_out_record"]

MAX_REDRAWS = 64  # replacement draws of one left-out block before the suite gives up (an ordinary draw is accepted)

LEFT_OUT_RULE = (
    "catalogue blocks these options give no MX encoding (docs/numerics.md section 6.2) are left out, counted per "
    "option in 'blocks'; each is replaced by the block drawn next from the catalogue's generator as an ordinary "
    "random block (origin random), so the catalogue keeps its length; 'decision_layouts' counts decision layouts whose block maximum "
    "is refused, which make no blocks (mxsim.golden.stimulus.refused)"
)


def refusal(fmt, options, inputs: dict) -> str | None:
    """The option (``"nan_blocks='error'"``, ...) under which the reference refuses the block of a
    quantize vector's ``inputs`` (``x``: k fp32 words, element i at bits [32i, 32i+32); NVFP4 also
    ``tensor_scale``), or None where it has an MX encoding."""
    k = fmt.block_size
    xs = struct.unpack(f"<{k}f", inputs["x"].to_bytes(4 * k, "little"))  # fp32 -> binary64: exact
    tensor_scale = fp32_value(inputs["tensor_scale"]).magnitude if "tensor_scale" in inputs else None
    try:
        quantize_block(xs, fmt, options, tensor_scale=tensor_scale)
    except NoMXEncoding as refused:
        return refused.option
    return None


def accepted(suite, inputs: dict, rng: random.Random, left_out: Counter) -> dict:
    """``inputs`` if ``suite`` (a quantize suite) encodes its block, else the first of the blocks
    drawn next by ``suite.random_inputs(rng, 0)`` that it encodes; every block passed over is
    counted in ``left_out`` under the option that refuses it. ValueError after
    :data:`MAX_REDRAWS` refused replacements."""
    for _ in range(MAX_REDRAWS + 1):
        reason = refusal(suite.fmt, suite.opts, inputs)
        if reason is None:
            return inputs
        left_out[reason] += 1
        inputs = suite.random_inputs(rng, 0)
    raise ValueError(
        f"suite {suite.name!r}: {MAX_REDRAWS} random blocks in a row have no MX encoding under its options "
        f"({', '.join(sorted(left_out))}); these options refuse ordinary blocks, choose others"
    )


def left_out_record(blocks: Counter, layouts: Counter) -> dict:
    """The manifest's ``left_out`` entry: ``blocks`` and ``decision_layouts`` counts per option (each
    only when nonzero) and the rule; {} when nothing was left out."""
    record = {}
    if blocks:
        record["blocks"] = dict(sorted(blocks.items()))
    if layouts:
        record["decision_layouts"] = dict(sorted(layouts.items()))
    if record:
        record["rule"] = LEFT_OUT_RULE
    return record
