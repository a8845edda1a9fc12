"""Golden test vectors for RTL verification (docs/numerics.md section 3.2).

A *suite* is a directory: one ``<field>.hex`` file per field ($readmemh-readable, fixed-width
hex, one vector per line, all files aligned by line) and a ``manifest.json`` that records the
format, every contract option, the field layout, seed, level, mxsim version, vector count,
coverage per corner class and the SHA-256 of every file.

The subpackages are layers in the order the data flows; each imports only from those before it
(tests/project/test_package_layers.py checks it):

1. :mod:`.values`: what every layer shares: the memoized reference decoder, fp32 bits, the codes
   of a format by what they hold, block words;
2. :mod:`.coverage`: the corner classes each vector sets in its ``flags``, and what a suite must
   reach (:data:`~.coverage.reach.MIN_CLASS_VECTORS` vectors in each reachable class);
3. :mod:`.stimulus`: what the vectors draw (contract section 3.3): significand patterns,
   exponent boundaries, the values next to every rounding point, aimed accumulators, then random;
4. :mod:`.kinds`: the suite kinds (decode, encode, quantize, dequantize, pack, dot, dotgeneral),
   their parameters and fields, what each field packs and the configurations ``check --explain``
   tries (the layers above ask the kind, never switch on its name), and how each computes its
   expected values;
5. :mod:`.compute`: expected values at scale: the vector stream a chunk at a time, the reference
   model's cross-check of the fast path, size limits;
6. :mod:`.storage`: suites on disk: writing (atomically, optionally as shards), verifying, merging
   shards, streaming lines to a testbench;
7. :mod:`.device`: a device's results against a suite: checking, explaining mismatches by the
   configuration that reproduces them, decomposing vectors, identifying a quantizer.

On top of them: :mod:`.canonical`, the collection committed under ``golden/``, and :mod:`.cluster`,
generate, verify and check on Dask distributed (the extra ``mxsim[dist]``).
"""

from .canonical import CANONICAL_SUITES, generate_canonical
from .storage.files import generate, generate_suites
from .storage.verify import verify
from .kinds.registry import suite_from_spec

__all__ = ["generate", "generate_suites", "verify", "suite_from_spec", "CANONICAL_SUITES", "generate_canonical"]
