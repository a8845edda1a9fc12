"""What a ``dot`` or ``dotgeneral`` suite tells the reports: its field layouts and explain presets.
The hooks of :class:`..suite.Suite`: what each field packs (:mod:`..layout`) and the accumulator
presets ``check --explain`` tries."""

from __future__ import annotations

from ....options.accumulate import PRESETS
from ....ref.output import storage_format
from ..layout import Layout, block_layouts, code_layout, plain_layout

__all__ = ["DotReports"]


class DotReports:
    """Mixed into DotSuite (and so DotGeneralSuite)."""

    example_params = {"block_a": "mxfp4_e2m1"}  # the dot kind's (Suite.example_params)

    def field_layouts(self) -> dict[str, Layout]:
        """Both operands' fields (``a_scale``, ``a_sub``, ``a_elems``, ``a_tensor_scale``; ``b_``
        likewise; ``n_blocks`` blocks each for DotGeneral, block j's values at [j*k, (j+1)*k)),
        ``result``, ``block_results`` and the fused ``steps`` (step 0 lowest) as codes of the
        output format (fp32_e8m13 is stored as fp32), ``c`` a word of the unit's C format
        (``Accumulator.c_storage``: fp32, fp16 or bf16), and the register
        ``acc``, its ``lsb`` exponent and ``anchor`` as signed integers."""
        n = getattr(self, "n_blocks", 1)
        out = {**block_layouts("a_", self.fa, n), **block_layouts("b_", self.fb, n)}
        result = storage_format(self.acc)
        out["result"] = code_layout(result)
        out["block_results"] = code_layout(result, n)
        out["c"] = code_layout(self.c_format)  # the accumulator input, in the unit's C format (fp32, bf16 or fp16)
        if self.fused:
            out["steps"] = code_layout(result, self.step_count)
        for name in ("acc", "lsb", "anchor"):
            out[name] = plain_layout(next((f.bits for f in self.outputs if f.name == name), 16), signed=True)
        return out

    def explain_bundles(self, params: dict) -> list[tuple[str, str]]:
        """Every accumulator preset (:data:`mxsim.options.PRESETS`)."""
        return [("preset", name) for name in PRESETS]

    def with_bundle(self, params: dict, key: str, name: str) -> dict:
        """``params`` with the preset's accumulator options."""
        if key != "preset":
            raise ValueError(f"suite kind {self.kind!r} takes no {key} bundle")
        return {**params, "accumulator": PRESETS[name].as_dict()}
