"""Dequantization options of the numerics contract (docs/numerics.md section 3.1): MX -> float.

Every output value is element * scale (times s_t for NVFP4), computed exactly and rounded once,
nearest-even, to the output type. :class:`DequantizeOptions` names the choices real designs make
beyond that; the defaults are the contract's. A design may make them differently per output type
(pulp-platform iDMA v0.7.0 flushes and saturates its FP32 output, while its FP16 output keeps the
defaults), so the options are chosen **per output type**: pass one :class:`DequantizeOptions`, or a
mapping ``{output type: DequantizeOptions}`` such as :data:`IDMA_DEQUANTIZE`, and
:func:`options_for` picks the entry of the output being produced.

Output types (:data:`OUTPUTS`; NumPy / ml_dtypes spellings and short names are accepted):

* ``float32`` (IEEE binary32), ``float16`` (binary16), ``bfloat16`` (8 exponent, 7 mantissa bits);
* ``float64``: exact for every MX value, so ``dequant_overflow`` and ``dequant_ftz`` never act;
  ``dequant_nan`` does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from types import MappingProxyType
from typing import Mapping

import numpy as np

from .spec import Flag, option, options_from_kwargs, options_of, validate_fields

__all__ = [
    "DequantizeOptions",
    "OUTPUTS",
    "IDMA_DEQUANTIZE",
    "output_name",
    "per_output",
    "options_for",
]

# output type -> the mxsim float format of its bits
OUTPUTS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}
_OUTPUT_ALIASES = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp64": "float64"}


@dataclass(frozen=True)
class DequantizeOptions:
    """How one output type is produced from MX codes (docs/numerics.md section 3.1).

    * ``dequant_overflow``: ``inf`` (default: a finite value beyond the output's largest finite
      magnitude after rounding gives +-Inf) | ``saturate`` (it gives +-largest finite). An Inf
      element (MXFP8 E5M2) stays +-Inf under both, as in iDMA's RTL.
    * ``dequant_ftz``: False (default: subnormal results are kept) | True (a result that is
      subnormal after rounding becomes a zero of its sign; a value that rounds up to the smallest
      normal stays normal).
    * ``dequant_nan``: ``keep_sign`` (default: a NaN element gives the output's quiet NaN with the
      element's sign bit) | ``canonical`` (every NaN is the positive quiet NaN: 0x7FC00000, 0x7E00,
      0x7FC0, 0x7FF8000000000000). A NaN scale (E8M0 0xFF, UE4M3 0x7F) gives the positive quiet
      NaN for every element of its block under both: the scale has no sign.

    -0 elements give -0; zero times any finite scale is a zero of the element's sign.
    """

    dequant_overflow: str = option(
        "inf", ("inf", "saturate"),
        "a finite value beyond the output's largest finite magnitude after rounding: `inf` gives ±Inf, `saturate` "
        "±max finite (an Inf element stays ±Inf)", "3.1",
    )
    dequant_ftz: bool = option(False, Flag(), "a result that is subnormal after rounding becomes a zero of its sign", "3.1")
    dequant_nan: str = option(
        "keep_sign", ("keep_sign", "canonical"),
        "`keep_sign`: a NaN element gives the output's quiet NaN with the element's sign; `canonical`: always +qNaN "
        "(0x7FC00000, 0x7E00, 0x7FC0); a NaN scale gives +qNaN for its whole block under both", "3.1",
    )

    def __post_init__(self) -> None:
        validate_fields(self)

    @classmethod
    def from_kwargs(cls, **kwargs) -> "DequantizeOptions":
        """Build from keyword options, naming any unknown option and listing the known ones."""
        return options_from_kwargs(cls, kwargs, "dequantize ")

    @property
    def is_default(self) -> bool:
        return self == DequantizeOptions()

    def as_dict(self) -> dict:
        return asdict(self)


def output_name(dtype) -> str:
    """The output type's name in :data:`OUTPUTS` from a name (``"float16"``, ``"fp16"``,
    ``"bf16"``, ...), a NumPy dtype or type, or ml_dtypes' bfloat16; ValueError otherwise (None
    too: NumPy would read it as float64, which is not the default output float32)."""
    if dtype is None:
        raise ValueError(f"dtype=None is not allowed; expected one of: {', '.join(OUTPUTS)}")
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        name = _OUTPUT_ALIASES.get(key, key)
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
    if name not in OUTPUTS:
        raise ValueError(f"dtype={dtype!r} is not allowed; expected one of: {', '.join(OUTPUTS)}")
    return name


def per_output(mapping: Mapping) -> Mapping[str, DequantizeOptions]:
    """A read-only ``{output name: DequantizeOptions}`` from a mapping whose keys are anything
    :func:`output_name` reads and whose values are DequantizeOptions or dicts of their fields."""
    fields = {o.name for o in options_of(DequantizeOptions)}
    result = {}
    for key, value in mapping.items():
        if key in fields:
            raise ValueError(
                f"{key!r} is a DequantizeOptions field, not an output type: per-output options map output types "
                "(float32, float16, bfloat16, float64) to DequantizeOptions; pass fields as keywords or as "
                "DequantizeOptions"
            )
        name = output_name(key)
        if name in result:
            raise ValueError(f"output type {name!r} is given twice in the per-output options")
        if isinstance(value, Mapping):
            value = DequantizeOptions.from_kwargs(**value)
        if not isinstance(value, DequantizeOptions):
            raise ValueError(f"options for {name!r} must be DequantizeOptions or a dict, got {type(value).__name__}")
        result[name] = value
    return MappingProxyType(result)


def options_for(output, options=None, **overrides) -> DequantizeOptions:
    """The DequantizeOptions an output type is produced with.

    ``options``: None (the defaults), one DequantizeOptions (for whatever output is asked), or a
    per-output mapping (see :func:`per_output`; an output type it does not name gets the
    defaults). ``overrides``: DequantizeOptions fields that replace the chosen entry's."""
    name = output_name(output)
    if options is None:
        chosen = DequantizeOptions()
    elif isinstance(options, DequantizeOptions):
        chosen = options
    elif isinstance(options, Mapping):
        chosen = per_output(options).get(name, DequantizeOptions())
    else:
        raise ValueError(
            "options must be DequantizeOptions or a mapping output type -> DequantizeOptions, "
            f"got {type(options).__name__}"
        )
    if overrides:
        DequantizeOptions.from_kwargs(**overrides)  # names unknown fields
        chosen = replace(chosen, **overrides)
    return chosen


#: pulp-platform iDMA v0.7.0's dequantizer (MXFP8 E5M2 -> FP32 or FP16; docs/numerics.md section 6.1): the
#: FP32 output flushes subnormals, saturates and gives 0x7FC00000 for every NaN; the FP16 output
#: keeps the defaults except the canonical NaN 0x7E00. (Its scale bytes are int8 exponents:
#: ``scale_encoding="int8_exponent"``.)
IDMA_DEQUANTIZE = per_output(
    {
        "float32": DequantizeOptions(dequant_overflow="saturate", dequant_ftz=True, dequant_nan="canonical"),
        "float16": DequantizeOptions(dequant_nan="canonical"),
    }
)
