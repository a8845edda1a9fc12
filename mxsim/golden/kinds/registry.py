"""The registry of golden suite kinds: :data:`KINDS`, each kind's name -> its suite class.

A folder per kind (``decode/``, ``encode/``, ``quantize/``, ``pack/``, ``dot/``, ``dotgeneral/``,
``dequantize/``); shared parts, used by several kinds, in ``suite``, ``fields``, ``layout``,
``params``, ``format_spec``, ``batch`` (the fast path's helpers) and ``fused_batch`` (fused dot and
dotgeneral suites on the fast path).

Each suite is generic in the TestFloat sense: it knows a format and the contract's options, not
the device under test. Stimulus = exhaustive enumerations where the space is small, a directed
corner-case catalogue, and seeded random vectors weighted toward those corners. Expected values
come from the integer-only reference model (:mod:`mxsim.ref`) and nothing else.

Kinds (bit layouts: a block word holds element i at bits [i*w, (i+1)*w), element 0 in the least
significant bits; fp32 inputs of a block likewise at [32*i, 32*i + 32)):

* ``decode``: ``code`` -> ``value`` (fp32 bits of the exact element value);
* ``encode``: ``x`` (fp32 bits) -> ``code``, for one rounding and overflow mode;
* ``quantize``: ``x`` (k fp32 values; NVFP4 also ``tensor_scale``) -> ``scale``, ``scale_exp``
  (E8M0 families: the unbiased exponent), ``subscales`` (two-level formats), ``codes``;
* ``pack``: one block (``scale``, ``subscales``, ``codes``) -> ``stream``, its byte image;
* ``dot``: two blocks (``*_scale``, ``*_sub``, ``*_elems``; NVFP4 ``*_tensor_scale``) ->
  ``acc`` (the register), ``lsb``, ``anchor``, ``result`` (output-format bits);
* ``dotgeneral``: two vectors of n blocks -> ``result`` and every block's rounded Dot;
* ``dequantize``: one block (``scale``, ``subscales``, NVFP4 ``tensor_scale``, ``codes``) ->
  ``values``, the float32 / float16 / bfloat16 word of element i at bits [i*W, (i+1)*W), under one
  set of DequantizeOptions and scale encoding.

Every suite ends with ``flags``: the corner classes of :mod:`mxsim.golden.coverage.catalogue`.

A new kind is one folder and one entry: ``mxsim/golden/kinds/<kind>/`` (``__init__.py`` exporting
the suite class; ``description.py``, the :class:`.suite.Suite` subclass: fields, params, layouts,
explain hooks, ``example_params``; as the kind needs them ``stimulus.py``, ``expected.py`` and
``classes.py``, mixins the description's class inherits) and its class entered in :data:`KINDS`
below. What the generic machinery asks of it is listed in the base class's docstring
(``field_layouts`` and ``example_params`` at least), and tests/golden/test_kind_matrix.py then runs its
``example_params`` through generate, stream, verify, check, check --explain, merge and Dask.
"""

from .decode import DecodeSuite
from .dequantize import DequantizeSuite
from .dot import DotSuite
from .dotgeneral import DotGeneralSuite
from .encode import EncodeSuite
from .pack import PackSuite
from .quantize import QuantizeSuite
from .suite import Suite
from .params import check_params

__all__ = [
    "Suite", "DecodeSuite", "EncodeSuite", "QuantizeSuite", "PackSuite", "DotSuite", "DotGeneralSuite", "DequantizeSuite",
    "suite_from_spec", "KINDS",
]

KINDS = {
    "decode": DecodeSuite,
    "encode": EncodeSuite,
    "quantize": QuantizeSuite,
    "pack": PackSuite,
    "dot": DotSuite,
    "dotgeneral": DotGeneralSuite,
    "dequantize": DequantizeSuite,
}


def suite_from_spec(kind: str, **params) -> Suite:
    """Build a suite from its manifest ``params`` (or the same keywords)."""
    if kind not in KINDS:
        raise ValueError(f"suite kind={kind!r} is not allowed; expected one of: {', '.join(KINDS)}")
    check_params(kind, KINDS[kind], params)
    return KINDS[kind](**params)
