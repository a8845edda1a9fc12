"""Text that echoes names and headers from outside (file names, stream headers, manifest values)
made safe to print one line each: control characters escaped.

A file name may hold a newline (then a report line it is echoed in becomes two, the second one
forged: ``MISMATCH ...`` or ``all match``) or an ESC sequence (then the terminal obeys it: colours,
cursor moves, a cleared screen). :func:`escape_controls` writes every C0 and C1 control character
and DEL (Unicode category Cc) and the bidirectional formatting characters (which reorder what a
line shows) as backslash escapes: ``\\n``, ``\\r``, ``\\t``, else ``\\xNN`` or ``\\uNNNN``. Every other
character, backslashes included, is kept as it is.
"""

from __future__ import annotations

import unicodedata

__all__ = ["escape_controls"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def escape_controls(text: str) -> str:
    """``text`` with its control and bidirectional formatting characters escaped (one printed line
    per line of the caller's)."""
    if text.isprintable():  # the common case (no Cc or Cf character): nothing to escape
        return text
    return "".join(_escape(c) if c in _BIDI or unicodedata.category(c) == "Cc" else c for c in text)
