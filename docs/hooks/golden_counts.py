"""MkDocs hook: the canonical suite's size, read from ``golden/index.json`` at build time.

A page writes ``<!-- golden-index:suites -->``, ``<!-- golden-index:vectors -->`` or
``<!-- golden-index:size -->`` where the number goes; the build replaces it with the number of
suites the index lists, the sum of their vector counts (with thousands separators), or the size
of the files under ``golden/`` in MB (10^6 bytes, one decimal). So the figures on the site are
those of the committed suite, whenever it is regenerated (``mxsim golden generate golden``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
PLACEHOLDER = re.compile(r"<!--\s*golden-index:([a-z]+)\s*-->")


def figures(golden: Path = GOLDEN) -> dict[str, str]:
    """The figures a page may ask for, as the text that replaces each placeholder."""
    suites = json.loads((golden / "index.json").read_text())["suites"]
    size = sum(path.stat().st_size for path in golden.rglob("*") if path.is_file())
    return {"suites": f"{len(suites):,}", "vectors": f"{sum(entry['count'] for entry in suites.values()):,}",
            "size": f"{size / 1e6:.1f} MB"}


def expand(markdown: str, golden: Path = GOLDEN) -> str:
    """Replace every placeholder of a page; an unknown name is an error naming the allowed ones."""
    if not PLACEHOLDER.search(markdown):
        return markdown
    known = figures(golden)

    def figure(match: re.Match) -> str:
        if match.group(1) not in known:
            raise ValueError(f"<!-- golden-index:{match.group(1)} -->: expected one of {sorted(known)}")
        return known[match.group(1)]

    return PLACEHOLDER.sub(figure, markdown)


def on_page_markdown(markdown: str, page=None, config=None, files=None, **kwargs) -> str:
    """MkDocs event: expand the page's golden-index placeholders."""
    return expand(markdown)
