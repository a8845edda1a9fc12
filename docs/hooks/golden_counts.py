"""MkDocs hook: figures and examples of the canonical suite, read from ``golden/`` at build time.

* ``<!-- golden-index:suites -->``, ``<!-- golden-index:vectors -->``, ``<!-- golden-index:size -->``:
  replaced with the number of suites ``golden/index.json`` lists, the sum of their vector counts
  (with thousands separators), or the size of the files under ``golden/`` in MB (10^6 bytes, one
  decimal).
* ``<!-- golden-manifest-example: KIND/SUITE -->`` before a ```json block: the block is an abridged
  manifest; every value it shows is replaced by the committed manifest's value at the same place
  (a string ``"..."`` and a key ``"..."`` stand for what is left out and stay; a list shows its
  first items). A key the manifest lacks fails the build, naming it.

So the figures on the site are those of the committed suite, whenever it is regenerated
(``mxsim golden generate golden``), and the example on GitHub's view of the page is the one last
written by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
PLACEHOLDER = re.compile(r"<!--\s*golden-index:([a-z]+)\s*-->")
MANIFEST_EXAMPLE = re.compile(r"(<!--\s*golden-manifest-example:\s*(\S+)\s*-->\s*\n```json\n)(.*?)(\n```)", re.S)
ELIDED = "..."


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


def current(shown, actual, where: str = "manifest"):
    """``shown`` (an abridged manifest, or part of one) with every value it shows taken from
    ``actual``: dict keys in ``shown``'s order, "..." kept, the first len(shown) list items."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            raise ValueError(f"{where}: the example shows an object, the manifest has {actual!r}")
        missing = [key for key in shown if key != ELIDED and key not in actual]
        if missing:
            raise ValueError(f"{where}: the manifest has no {missing}; it has {sorted(actual)}")
        return {key: value if key == ELIDED else current(value, actual[key], f"{where}.{key}")
                for key, value in shown.items()}
    if isinstance(shown, list) and isinstance(actual, list):
        return [current(item, actual[i], f"{where}[{i}]") for i, item in enumerate(shown[:len(actual)])]
    if shown == ELIDED or (isinstance(shown, str) and ELIDED in shown and isinstance(actual, str)):
        return shown
    return actual


def manifest_example(suite: str, shown_json: str, golden: Path = GOLDEN) -> str:
    """The abridged manifest ``shown_json`` with the values of ``golden/SUITE/manifest.json``, one
    top-level key a line."""
    path = golden / suite / "manifest.json"
    if not path.is_file():
        raise ValueError(f"<!-- golden-manifest-example: {suite} -->: no {path}")
    example = current(json.loads(shown_json), json.loads(path.read_text()), suite)
    return "{\n" + ",\n".join(f" {json.dumps(key)}: {json.dumps(value)}" for key, value in example.items()) + "\n}"


def expand_examples(markdown: str, golden: Path = GOLDEN) -> str:
    return MANIFEST_EXAMPLE.sub(lambda m: m.group(1) + manifest_example(m.group(2), m.group(3), golden) + m.group(4),
                                markdown)


def on_page_markdown(markdown: str, page=None, config=None, files=None, **kwargs) -> str:
    """MkDocs event: expand the page's golden-index placeholders and manifest examples."""
    return expand(expand_examples(markdown))
