"""Hypothesis strategies and ready-made property checks for testing your own MX implementation.

Strategies (each a ``hypothesis.strategies.SearchStrategy``):

* :func:`element_codes` -- codes of an element or scale format, class by class
  (:data:`CODE_CLASSES`: zeros, subnormals, normals, +-max, MXINT8 -2, NaN, Inf);
* :func:`boundary_values` -- fp32/fp64/bf16/fp16 values at and around a format's decision
  points (:data:`BOUNDARY_KINDS`: ties, the subnormal boundary, underflow, the overflow
  thresholds, Inf, NaN); :func:`carrier_values` -- any value of such a type;
* :func:`block_values` -- one block of input values (:data:`VALUE_BLOCK_KINDS`: random with a
  chosen dynamic range, all-zero, single outlier, NaN/Inf, amax on a scale-rule boundary,
  carrier subnormals);
* :func:`block_codes` -- one encoded block (:data:`CODE_BLOCK_KINDS`);
* :func:`accumulators` -- dot-product datapath configurations.

Checks (run hypothesis against the reference, raise :class:`CheckFailure` with the shrunk
counterexample, codes in hex and binary; return a :class:`CheckReport`):
:func:`check_element_encoder`, :func:`check_element_decoder`, :func:`check_block_quantizer`,
:func:`check_dot`.

Example::

    from mxsim.strategies import check_element_encoder
    check_element_encoder(my_fp8_encoder, "fp8_e4m3", rounding="rne", overflow="saturate")
"""

from .accumulators import accumulators
from .blocks import CODE_BLOCK_KINDS, VALUE_BLOCK_KINDS, block_codes, block_values
from .checks import (
    CheckFailure,
    CheckReport,
    check_block_quantizer,
    check_dot,
    check_element_decoder,
    check_element_encoder,
)
from .elements import (
    BOUNDARY_KINDS,
    CODE_CLASSES,
    BoundaryValue,
    boundary_values,
    carrier_values,
    code_class,
    decision_points,
    element_codes,
    labelled_boundary_values,
)

__all__ = [
    "BOUNDARY_KINDS",
    "CODE_BLOCK_KINDS",
    "CODE_CLASSES",
    "VALUE_BLOCK_KINDS",
    "BoundaryValue",
    "CheckFailure",
    "CheckReport",
    "accumulators",
    "block_codes",
    "block_values",
    "boundary_values",
    "carrier_values",
    "check_block_quantizer",
    "check_dot",
    "check_element_decoder",
    "check_element_encoder",
    "code_class",
    "decision_points",
    "element_codes",
    "labelled_boundary_values",
]
