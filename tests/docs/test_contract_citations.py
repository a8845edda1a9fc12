"""Every citation of the numerics contract resolves (issue 23, item 16).

The contract lives in the repository, in docs/numerics.md, with the section numbers the code
cites. Every "contract section N", "contract N", "conventions.md N" (and lists such as "sections
2 and 2.1" or "sections 1 to 4") and every bare "section N" in the package's sources, the
documentation pages and every ``--help`` text must name a section heading of docs/numerics.md. A
bare "section N" of another document says whose: "OCP section 6.3", "spec section 5.3",
"reference notes, section 2.2", "report section 3.3", "verification-flow.md), section 4"; those
are passed over.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"\d+(?:\.\d+)?"
_LIST = rf"({NUMBER}(?:(?:\s*,\s*|\s+and\s+|\s+to\s+|\s*-\s*){NUMBER})*)"
CONTRACT = re.compile(
    rf"(?:contract|conventions\.md|numerics\.md)\)?,?\s+(?:§\s*|sections?\s+)?{_LIST}", re.IGNORECASE
)
BARE = re.compile(rf"(\S+)\s+(?:sections?|§)\s+{_LIST}", re.IGNORECASE)
OTHERS = {"ocp", "spec", "mx", "v1.0", "notes", "report", "paper", "elements", "ieee", "754", "standard", "p3109",
          "tosa", "contract", "conventions.md", "docs/numerics.md"}  # the last three: counted by CONTRACT
HEADING = re.compile(rf"^#{{2,4}}\s+({NUMBER})\.?\s", re.MULTILINE)


def contract_sections() -> set[str]:
    return set(HEADING.findall((ROOT / "docs" / "numerics.md").read_text()))


def citations(text: str) -> list[tuple[str, str]]:
    """(section number, the text around it) of every contract citation in ``text``."""
    found = []
    for pattern, bare in ((CONTRACT, False), (BARE, True)):
        for match in pattern.finditer(text):
            if bare:
                word = match.group(1).lower().strip("`(),;:")
                if word in OTHERS or word.endswith(".md"):
                    continue  # another document's section, or counted by CONTRACT
            numbers = re.findall(NUMBER, match.group(match.lastindex))
            around = text[max(0, match.start() - 40): match.end() + 10].replace("\n", " ")
            found += [(number, around) for number in numbers]
    return found


def _help_texts() -> dict[str, str]:
    from mxsim.cli import build_parser

    texts, stack = {}, [("mxsim", build_parser())]
    while stack:
        name, parser = stack.pop()
        texts[name] = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack += [(f"{name} {sub}", subparser) for sub, subparser in action.choices.items()]
    return texts


def _sources() -> dict[str, str]:
    files = sorted((ROOT / "mxsim").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    return {str(path.relative_to(ROOT)): path.read_text() for path in files}


def test_the_contract_page_has_every_section_the_code_is_built_on():
    sections = contract_sections()
    # the sections other parts of mxsim are written against (issue 23: 1's FNUZ and P3109 layouts,
    # 3.3 stimulus, 4.1 fused steps, 6.1 and 6.2 profiles)
    assert {"1", "2", "2.1", "2.2", "2.3", "3", "3.1", "3.2", "3.3", "4", "4.1", "5", "6", "6.1", "6.2"} <= sections
    text = (ROOT / "docs" / "numerics.md").read_text()
    for rule in ("fnuz", "p3109", "zero_product_sum", "shift_rounding=\"floor\"", "Stimulus that finds bugs",
                 "Facts of software quantizers"):
        assert rule in text, rule


def test_the_citation_finder_finds_and_passes_over():
    found = citations("see contract section 4.1; conventions.md sections 2 and 2.1")
    assert [n for n, _ in found] == ["4.1", "2", "2.1"]
    assert [n for n, _ in citations("(contract 6.1) and (conventions.md, section 3)")] == ["6.1", "3"]
    assert [n for n, _ in citations("the section 2.3 options; sections 1 to 4")] == ["2.3", "1", "4"]
    assert citations("OCP section 6.3, spec section 5.3, reference notes, section 2.2, report section 3.3") == []


def test_every_contract_citation_resolves():
    sections = contract_sections()
    texts = {**_sources(), **{f"`{name} --help`": text for name, text in _help_texts().items()}}
    unresolved = [f"{where}: section {number} ({around!r})" for where, text in texts.items()
                  for number, around in citations(text) if number not in sections]
    assert not unresolved, "\n".join(unresolved)
    assert sum(len(citations(text)) for text in texts.values()) > 50  # the finder does find them


def test_the_code_cites_the_contract_users_have():
    """Code, RTL, tools, benchmarks and manifests cite docs/numerics.md, the contract a user of the
    repository has; the steering copy (conventions.md) is not shipped (issue 32 item 17, 33 item 6)."""
    roots = ("mxsim", "rtl", "tools", "benchmarks")
    citing = sorted(str(path.relative_to(ROOT)) for root in roots for path in (ROOT / root).rglob("*")
                    if path.is_file() and path.suffix in (".py", ".v", ".sv", ".vh", ".md")
                    and "conventions.md" in path.read_text())
    assert not citing, f"cite docs/numerics.md sections instead of conventions.md in: {citing}"
    manifest = json.loads(next((ROOT / "golden").rglob("manifest.json")).read_text())
    assert "conventions.md" not in json.dumps(manifest)


def test_a_numerics_md_citation_is_read_as_a_contract_citation():
    assert [n for n, _ in citations("see docs/numerics.md section 4.1 and docs/numerics.md sections 2 and 2.1")] == [
        "4.1", "2", "2.1"]
