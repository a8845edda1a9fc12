"""What a ``dot`` suite is: two block formats, an accumulator and its options, fields, name and parameters.
The accumulator is a preset with overrides; the options are the accumulator input, fused steps and
unit scales; the fields are both operands' blocks and C -> the register, its LSB, the anchor, the
result and the steps."""

from __future__ import annotations

from dataclasses import dataclass, field

from ....options import Accumulator
from ....options.accumulate import PRESETS, output_float_format
from ....ref import dot as ref_dot
from ....ref.output import storage_format
from ..fields import Field, c_field
from ..format_spec import block_format, format_param
from ..suite import Suite, jsonable
from .classes import DotClasses
from .expected import DotExpected
from .fast_batch import DotFastBatch
from .first_steps import DotFirstSteps
from .random_run import DotRandomRun
from .reports import DotReports
from .stimulus import DotStimulus


def register_bits(fmt_a, fmt_b, acc: Accumulator) -> int:
    """Bits of the ``acc`` field: W for a bounded aligned register; else a width that holds every
    value the register can take (:func:`mxsim.ref.dot.register_limit`; formats-and-datapath.md 5.1 for exact)."""
    if acc.mode == "aligned" and acc.width is not None:
        return acc.width
    return ref_dot.register_limit(fmt_a, fmt_b, acc).bit_length() + 1


def _shown(name: str, value) -> str:
    return f"{name}={value:#x}" if name == "nan_bits" and value is not None else f"{name}={value}"


def _check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is not allowed; expected true or false")


@dataclass
class DotSuite(DotStimulus, DotRandomRun, DotFirstSteps, DotExpected, DotFastBatch, DotClasses, DotReports, Suite):
    """Two blocks (scales, sub-scales, elements; NVFP4 tensor scales) -> the register, its LSB
    exponent, the anchor, and the result bits, for one accumulator configuration.

    ``preset``: an :data:`~mxsim.options.accumulate.PRESETS` name, ``accumulator`` then overrides its
    fields. ``c_input``: add the accumulator input ``c`` (fp32 bits; always there with a fused
    accumulator). ``steps`` (fused only): add every step's D, step j at bits [j*w, (j+1)*w).
    ``unit_scales``: every scale code encodes 1 (units without block scales, e.g. Hopper FP8).
    ``exhaustive_pairs`` (default true): the catalogue starts with every element code pair; false
    leaves them out (a suite that repeats a configuration in another rounding mode: the pairs are
    exact products, the structured and directed vectors are what the mode changes).
    A fused suite has no register fields and no tensor scales (the fused adder takes none)."""

    block_a: str | dict
    block_b: str | dict | None = None
    accumulator: dict = field(default_factory=dict)
    preset: str | None = None
    c_input: bool = False
    steps: bool = False
    unit_scales: bool = False
    exhaustive_pairs: bool = True
    kind = "dot"
    nested_options = {"accumulator": Accumulator}  # the dict field -> the options class of its keys
    vector_blocks = 1  # block pairs per vector

    def __post_init__(self):
        self.fa = block_format(self.block_a, "block_a")
        self.fb = self.fa if self.block_b is None else block_format(self.block_b, "block_b")
        ref_dot.check_pair(self.fa, self.fb, 1, 1)
        for name in ("c_input", "steps", "unit_scales", "exhaustive_pairs"):
            _check_flag(name, getattr(self, name))
        self.acc = Accumulator.resolve(self.preset, **self.accumulator)
        self.fused = self.acc.accumulate == "fused"
        if self.steps and not self.fused:
            raise ValueError("steps=true needs a fused accumulator (accumulate='fused', or a fused preset such as "
                             "mxdotp_fp8): the separate datapath has no steps")
        self.acc.check_block_format(self.fa, self.fb)
        if self.acc.mode == "aligned":  # the references of the acc_overflow and shift_inexact classes
            self.unbounded_acc = Accumulator(mode="aligned", frac_bits=self.acc.frac_bits,
                                             shift_rounding=self.acc.shift_rounding)
            self.exact_acc = Accumulator()
        self.has_c, self.c_format = self.c_input or self.fused, output_float_format(self.acc.c_storage)
        self.tensor_scales = not self.fused
        self.name = "-".join([self._pair()] + self._label() + self._suffixes())
        self.block_fields = self._block_fields()  # the fields of one block pair (c excluded)
        self.inputs = list(self.block_fields)
        if self.has_c:
            self.inputs.append(c_field(self.c_format))
        out = self.out_format = storage_format(self.acc)
        if self.fused:
            self.outputs = [Field("result", out.width, description=f"{out.name} bits of D, the last step's output")]
        else:
            self.outputs = [
                Field("acc", register_bits(self.fa, self.fb, self.acc), True,
                      "the register: block sum before scales = acc * 2^lsb"),
                Field("lsb", 16, True, "exponent of the register's LSB"),
                Field("anchor", 16, True,
                      "e_max: largest Ea+Eb over products of two finite nonzero elements (0 if none)"),
                Field("result", out.width,
                      description=f"{out.name} bits of the block's Dot" + (" + C" if self.has_c else "")),
            ]
        self._add_steps_field()

    def _pair(self) -> str:
        return self.fa.name + ("" if self.fb == self.fa else f"x{self.fb.name}")

    def _label(self) -> list[str]:
        """The accumulator part of the suite name."""
        acc = self.acc
        if self.preset is not None:
            base = PRESETS[self.preset]
            return [self.preset] + [_shown(k, v) for k, v in acc.as_dict().items() if v != getattr(base, k)]
        if self.fused:
            base = Accumulator()
            return ["fused"] + [_shown(k, v) for k, v in acc.as_dict().items()
                                if k not in ("mode", "accumulate") and v != getattr(base, k)]
        parts = [acc.mode]
        if acc.mode == "aligned":
            parts += [f"f{acc.frac_bits}", f"w{acc.width}" if acc.width else "wnone", acc.shift_rounding, acc.overflow]
        if acc.output != "fp32" or acc.output_rounding != "rne":
            parts += [acc.output, acc.output_rounding]
        if acc.ftz:
            parts.append("ftz")
        return parts

    def _suffixes(self) -> list[str]:
        flags = (self.c_input and not self.fused, self.steps, self.unit_scales, not self.exhaustive_pairs)
        return [name for name, on in zip(("c", "steps", "unit_scales", "no_pairs"), flags) if on]

    def _block_fields(self) -> list[Field]:
        fields = []
        for side, fmt in (("a", self.fa), ("b", self.fb)):
            fields.append(Field(f"{side}_scale", fmt.scale_storage_bits, description=f"{fmt.scale.name} scale code"))
            if fmt.subblocks:
                fields.append(Field(f"{side}_sub", fmt.subblocks * fmt.subscale_bits,
                                    description="sub-scale j at bits [j*d2, (j+1)*d2)"))
            fields.append(Field(f"{side}_elems", fmt.block_size * fmt.element.width,
                                description=f"{fmt.element.name} codes, element i at bits [i*w, (i+1)*w)"))
            if fmt.tensor_scale is not None and self.tensor_scales:
                fields.append(Field(f"{side}_tensor_scale", 32, description="fp32 bits of the tensor scale"))
        return fields

    @property
    def step_count(self) -> int:
        """Fused steps per vector (a last partial step counts)."""
        return self.acc.step_count(self.fa.block_size, self.vector_blocks)

    def _add_steps_field(self) -> None:
        if self.steps:
            out = storage_format(self.acc)
            self.outputs.append(Field("steps", out.width * self.step_count, description=(
                f"D of every fused step ({out.name} bits), step j at bits [j*{out.width}, (j+1)*{out.width})")))

    def params(self) -> dict:
        params = {"block_a": format_param(self.fa), "block_b": format_param(self.fb), "accumulator": self.acc.as_dict()}
        optional = {"preset": self.preset, "c_input": self.c_input, "steps": self.steps}
        optional["unit_scales"] = self.unit_scales
        chosen = {k: v for k, v in optional.items() if v}
        if not self.exhaustive_pairs:
            chosen["exhaustive_pairs"] = False
        return {**params, **chosen}

    def describe(self) -> dict:
        return {"block_a": jsonable(self.fa.describe()), "block_b": jsonable(self.fb.describe())}
