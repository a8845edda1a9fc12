"""Identify the quantizer that made an MX tensor from its source (``mxsim identify``).

Given the source values and a quantized tensor (scale bytes and element codes, blocks along the
last axis of the codes, as :class:`mxsim.MXTensor` holds them; optionally the sub-scales of
MX9/MX6/MX4 and the NVFP4 tensor scale), :func:`identify` quantizes the source under candidate
configurations and counts, for each, the blocks whose scale byte and element codes (and
sub-scales, when given) it reproduces (codes of blocks whose scale is the NaN code 0xFF are not
compared: libraries write anything there). A candidate whose tensor scale differs from a given
one reproduces no block (every block is scaled by it). The candidates are those of ``check --explain``
(:mod:`.explain`): first every block profile that has the format and mxsim's defaults; then, if
none explains every block, every single option change (each allowed value of each
:class:`mxsim.QuantizeOptions` option, :func:`.explain._values`) on top of the defaults and of the
best profile. A candidate the options layer refuses for the format, or whose quantize raises on
this source (a profile that has no MX encoding for some block, float32-only arithmetic given
float64 values), is listed with its error and explains nothing.

The answer is every candidate that explains the most blocks, not one winner: a tensor that
several configurations reproduce whole (Brevitas' MXFP8, say, which the defaults and other
profiles also give on many sources) is reported as "indistinguishable here: ..." with all of
them, a profile before the defaults before option sets. An option set (the defaults, or a
profile plus changes) whose QuantizeOptions for the format equal a profile's is not tried
apart: the profile names it (shown "profile P (= defaults)" where they are the defaults).

Inputs are checked as :meth:`mxsim.MXTensor.from_codes` checks them: scale bytes, element codes
and sub-scales must be integer arrays within their field's width (codes given as floats are
refused, not truncated); ``budget`` must be a positive number of seconds.

The search stops between candidates when ``budget`` seconds are spent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...fast.decode import check_codes
from ...options import QuantizeOptions
from ...options.profiles import PROFILES, resolve_quantize
from ...options.spec import options_of
from .explain import _values

__all__ = ["Candidate", "IdentifyReport", "check_budget", "identify", "identify_lines"]


@dataclass
class Candidate:
    """One configuration tried: ``profile`` (or None for the defaults), the option ``changes`` on
    top of it, the blocks it ``explained`` of ``blocks``, or the ``error`` that stopped it.
    ``options``: the QuantizeOptions it quantizes with for the format (None where the options
    layer refused it); ``equals``: ``"defaults"`` where a profile's options are the defaults."""

    profile: str | None
    changes: dict
    explained: int = 0
    blocks: int = 0
    error: str | None = None
    options: QuantizeOptions | None = None
    equals: str | None = None

    @property
    def label(self) -> str:
        parts = [f"profile {self.profile}" if self.profile else "defaults"]
        parts += [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in self.changes.items()]
        return " + ".join(parts) + (f" (= {self.equals})" if self.equals else "")

    @property
    def share(self) -> float:
        return self.explained / self.blocks if self.blocks else 0.0

    def score(self) -> tuple:
        """Blocks explained first; among equals, a profile before the defaults before option sets
        (fewer changes first): the order they are shown in, never a verdict between them."""
        kind = 2 if self.changes else 0 if self.profile is not None else 1
        return (-self.explained, kind, len(self.changes))


@dataclass
class IdentifyReport:
    """Every candidate tried (best first), the number of blocks, and what the budget left out."""

    blocks: int
    results: list = field(default_factory=list)
    not_tried: int = 0

    @property
    def best(self) -> list:
        """Every candidate that explains the most blocks (none if no candidate explains a block):
        all of them, since the source does not tell them apart (a profile first, then the
        defaults, then option sets; an option set whose options equal a profile's is not tried
        apart from it: the profile names it)."""
        if not self.results or self.results[0].explained == 0:
            return []
        return [r for r in self.results if r.explained == self.results[0].explained]


def _resolved(fmt, candidate: Candidate) -> QuantizeOptions | None:
    """The QuantizeOptions ``candidate`` quantizes ``fmt`` with, or None where the options layer refuses it."""
    try:
        options = resolve_quantize(candidate.profile, dict(candidate.changes), fmt)[1]
        options.check_format(fmt)
    except ValueError:
        return None
    return options


def _evaluate(source, scales, codes, fmt, axis, candidate: Candidate, subscales=None, tensor_scale=None) -> Candidate:
    from ...tensor import quantize  # the tensor layer (blocks, padding, axis) above the golden package's own

    try:
        t = quantize(source, fmt, axis, profile=candidate.profile, **candidate.changes)
    except ValueError as err:
        candidate.error = str(err).split("\n")[0]
        return candidate
    if tensor_scale is not None and t.tensor_scale != tensor_scale:
        candidate.error = f"tensor scale {float(t.tensor_scale)!r}, the tensor's {float(tensor_scale)!r}"
        return candidate
    got_scales = np.asarray(t.scales).reshape(-1)
    got_codes = np.asarray(t.codes).reshape(len(got_scales), -1)
    same = (got_scales == scales) & (np.all(got_codes == codes, axis=1) | (scales == 0xFF))
    if subscales is not None:
        same &= np.all(np.asarray(t.subscales).reshape(len(got_scales), -1) == subscales, axis=1) | (scales == 0xFF)
    candidate.explained = int(same.sum())
    return candidate


def _changes(base: QuantizeOptions) -> list[dict]:
    """Every single option change of ``base`` (see :func:`.explain._values`)."""
    out = []
    for definition in options_of(QuantizeOptions):
        if not definition.cli:
            continue
        for value in _values(definition, getattr(base, definition.name)):
            out.append({definition.name: value})
    return out


def identify(
    source, scales, codes, fmt, axis: int = -1, budget: float = 60.0, *, subscales=None, tensor_scale=None
) -> IdentifyReport:
    """Which profile and options reproduce ``scales`` / ``codes`` from ``source`` (see the module
    docstring). ``scales``: one scale byte per block, ``codes`` the element codes with the blocks
    along their last axis, as :func:`mxsim.quantize` of ``source`` along ``axis`` lays them out
    (ValueError if their number of blocks differs). ``subscales`` (formats with sub-blocks: one
    per sub-block of each block) and ``tensor_scale`` (NVFP4), when given, must be reproduced too."""
    from fractions import Fraction

    from ...formats import get_format

    fmt = get_format(fmt, kind="block")
    check_budget(budget)
    check_codes("scales", np.asarray(scales), fmt.scale.width)  # integers of their width, as from_codes takes them
    check_codes("codes", np.asarray(codes), fmt.element.width)
    scales = np.asarray(scales).reshape(-1).astype(np.int64)
    codes = np.asarray(codes).reshape(len(scales), -1).astype(np.int64) if np.asarray(codes).size else None
    if codes is None or codes.shape[1] != fmt.block_size:
        raise ValueError(
            f"codes hold {np.asarray(codes).size} element codes for {len(scales)} scales; expected "
            f"{fmt.block_size} per scale ({fmt.name})"
        )
    if subscales is not None:
        if not fmt.subblocks or np.asarray(subscales).size != len(scales) * fmt.subblocks:
            raise ValueError(
                f"subscales hold {np.asarray(subscales).size} values for {len(scales)} blocks; expected "
                f"{fmt.subblocks} per block ({fmt.name} has {fmt.subblocks} sub-blocks)"
            )
        check_codes("subscales", np.asarray(subscales), fmt.subscale_bits)
        subscales = np.asarray(subscales).reshape(len(scales), fmt.subblocks).astype(np.int64)
    if tensor_scale is not None:
        if fmt.tensor_scale is None:
            raise ValueError(f"tensor_scale is given, but {fmt.name!r} has no tensor scale")
        tensor_scale = Fraction(tensor_scale)
    _check_blocks(source, fmt, axis, len(scales))
    deadline = time.monotonic() + budget
    report = IdentifyReport(blocks=len(scales))
    queue = [Candidate(name, {}) for name, p in PROFILES.items() if p.kind == "block" and fmt.name in p.formats]
    queue.append(Candidate(None, {}))
    first_round, popped = len(queue), 0
    tried = []
    while queue:
        if time.monotonic() > deadline:
            report.not_tried = len(queue)
            break
        candidate = queue.pop(0)
        popped += 1
        candidate.blocks = len(scales)
        candidate.options = _resolved(fmt, candidate)
        twin = next((c for c in tried if candidate.options is not None and c.options == candidate.options), None)
        option_set = candidate.profile is None or candidate.changes  # not a profile as it stands
        if twin is not None and option_set:
            # the QuantizeOptions of a configuration tried already (a profile is tried first): that one names it
            if twin.profile is not None and not twin.changes and candidate.profile is None and not candidate.changes:
                twin.equals = "defaults"
        else:
            tried.append(_evaluate(source, scales, codes, fmt, axis, candidate, subscales, tensor_scale))
        if popped == first_round and max(c.explained for c in tried) < len(scales):
            profiles = sorted((c for c in tried if c.profile and not c.error), key=Candidate.score)
            bases = [None] + ([profiles[0].profile] if profiles else [])
            for base in bases:
                options = QuantizeOptions() if base is None else PROFILES[base].quantize_options(fmt)
                queue += [Candidate(base, change) for change in _changes(options)]
    report.results = sorted(tried, key=Candidate.score)
    return report


def check_budget(budget, name: str = "budget") -> None:
    """ValueError naming ``name`` unless ``budget`` is a positive number of seconds (not a bool,
    not NaN): a budget of 0 would try no candidate and report that none reproduces the tensor."""
    number = isinstance(budget, (int, float, np.integer, np.floating)) and not isinstance(budget, (bool, np.bool_))
    if not (number and budget > 0):
        raise ValueError(f"{name}={budget!r} is not allowed; expected a positive number of seconds")


def _check_blocks(source, fmt, axis, blocks: int) -> None:
    """ValueError unless the source has as many blocks along ``axis`` as there are scales."""
    shape = np.shape(source)
    if not shape:
        raise ValueError("source must be an array, got a scalar")
    axis %= len(shape)
    others = shape[:axis] + shape[axis + 1 :]
    n = int(np.prod(others, dtype=np.int64)) * -(-shape[axis] // fmt.block_size)
    if n != blocks:
        raise ValueError(f"the source has {n} blocks of {fmt.block_size} along axis {axis}; the tensor has {blocks}")


def identify_lines(report: IdentifyReport, top: int = 8) -> list[str]:
    """The report as text: the best candidates with their share of blocks, then the next ones."""
    lines = []
    best = report.best
    if best:
        share = f"{best[0].explained} of {report.blocks} blocks ({100 * best[0].share:.1f} %)"
        if len(best) == 1:
            lines.append(f"identified: {best[0].label} reproduces {share}")
        else:
            lines.append(f"identified: indistinguishable here: {', '.join(c.label for c in best)}; each reproduces "
                         f"{share}")
            lines.append(f"  (these {len(best)} configurations give the same scales and codes on this source; a source "
                         "with other blocks may tell them apart)")
    else:
        lines.append(f"no candidate reproduces any of the {report.blocks} blocks")
    lines.append("candidates (blocks explained):")
    for c in report.results[:top]:
        what = f"error: {c.error}" if c.error else f"{c.explained} / {c.blocks} ({100 * c.share:.1f} %)"
        lines.append(f"  {c.label}: {what}")
    if report.not_tried:
        lines.append(f"budget spent: {report.not_tried} candidate(s) not tried")
    return lines
