"""Golden test vectors for RTL verification (conventions.md section 3.2).

A *suite* is a directory: one ``<field>.hex`` file per field ($readmemh-readable, fixed-width
hex, one vector per line, all files aligned by line) and a ``manifest.json`` that records the
format, every contract option, the field layout, seed, level, mxsim version, vector count,
coverage per corner class and the SHA-256 of every file.

* :mod:`.fields`: the hex encoding of one field;
* :mod:`.classes`: the catalogue of corner classes (the ``flags`` field);
* :mod:`.suites`: what each kind of suite holds, how its stimulus is chosen, and how its expected
  values are computed (always with the integer-only reference model);
* :mod:`.params`: the parameters each kind takes (derived from the suite classes);
* :mod:`.limits`: how large a suite may be (checked before anything is allocated);
* :mod:`.files`: writing suites (atomically, optionally as shards; the root's ``index.json``)
  and verifying them;
* :mod:`.canonical`: the suite collection committed under ``golden/``.
"""

from .canonical import CANONICAL_SUITES, generate_canonical
from .files import generate, generate_suites
from .verify import verify
from .suites import suite_from_spec

__all__ = ["generate", "generate_suites", "verify", "suite_from_spec", "CANONICAL_SUITES", "generate_canonical"]
