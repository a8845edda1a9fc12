"""The shell examples of the documentation run, and show what mxsim prints (issue 32, item 14).

Every ```bash and ```console block of README.md and docs/**/*.md says ``<!-- run -->`` or
``<!-- no-run: REASON -->`` (tests/doc_examples.py has the conventions). The runnable blocks of
each page run in order in a fresh directory, with the page's smaller counts; a console block's
output must be what the command printed. The README's blocks run in tests/docs/test_readme.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import doc_examples

DOC_PAGES = [page for page in doc_examples.pages() if page.name != "README.md" and doc_examples.runnable(page)]


def test_every_shell_block_says_whether_it_runs():
    unmarked = doc_examples.unmarked_shell_blocks()
    assert not unmarked, (f"shell blocks without '<!-- run -->' or '<!-- no-run: REASON -->' on the line before: "
                          f"{unmarked}")


def test_the_pages_with_commands_have_runnable_blocks():
    pages = {page.as_posix() for page in DOC_PAGES}
    assert {"docs/index.md", "docs/golden-vectors.md", "docs/verification-flow.md", "docs/cluster.md",
            "docs/datapath.md"} <= pages, pages


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda page: page.as_posix())
def test_page_examples_run(page: Path, tmp_path):
    workdir = tmp_path / "page"
    workdir.mkdir()
    assert doc_examples.run_page(page, workdir) == len(doc_examples.runnable(page)) > 0


# --- the runner's own rules, on hand-made blocks ------------------------------------------------


def test_console_session_splits_commands_and_output():
    text = "$ echo a \\\n  b\na b\n$ true\n$ printf 'x\\ny\\n'\nx\n...\n"
    assert doc_examples.console_session(text) == [("echo a \n  b", ["a b"]), ("true", []),
                                                  ("printf 'x\\ny\\n'", ["x", "..."])]
    with pytest.raises(AssertionError, match="must start with"):
        doc_examples.console_session("output before any command\n$ true\n")


@pytest.mark.parametrize("shown, printed, matches", [
    (["a", "b"], ["a", "b"], True),
    (["a", "b"], ["a", "c"], False),
    (["a"], ["a", "b"], False),                       # a line printed but not shown
    (["a", "b"], ["a"], False),                       # a line shown but not printed
    (["a", "..."], ["a", "b", "c"], True),
    (["a", "...", "d"], ["a", "b", "c", "d"], True),
    (["a", "...", "d"], ["a", "b", "c"], False),
    (["...", "x"], ["x"], True),                      # ... may stand for no line
    (["abc ..."], ["abc def"], True),
    (["abc ..."], ["abd def"], False),
    (["a  "], ["a"], True),                            # trailing blanks aside
    (["a", ""], ["a"], True),                          # a trailing empty shown line
])
def test_output_matching(shown, printed, matches):
    assert doc_examples.output_matches(shown, printed) is matches


def _page(tmp_path: Path, text: str) -> Path:
    """A page under a temporary ROOT (the runner reads pages relative to it)."""
    (tmp_path / "page.md").write_text(text)
    return Path("page.md")


def test_markers_are_parsed_and_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(doc_examples, "ROOT", tmp_path)
    page = _page(tmp_path, "intro\n\n<!-- run\nsetup: touch a\nreplace: 1000 => 3\nexit: 1\n-->\n```bash\nseq 1000\n"
                           "```\n\n<!-- no-run: a synopsis -->\n```bash\nmxsim x [--y]\n```\n\n```console\n$ ls\n```\n")
    run, skipped, unmarked = doc_examples.examples(page)
    assert (run.marker, run.setup, run.replace, run.exit, run.script()) == ("run", ["touch a"], [("1000", "3")], 1,
                                                                            "seq 3\n")
    assert (skipped.marker, skipped.reason) == ("no-run", "a synopsis")
    assert unmarked.marker is None and unmarked.line == 17
    _page(tmp_path, "<!-- no-run -->\n```bash\nls\n```\n")
    with pytest.raises(AssertionError, match="needs a reason"):
        doc_examples.examples(page)
    _page(tmp_path, "<!-- run\nsetpu: ls\n-->\n```bash\nls\n```\n")
    with pytest.raises(AssertionError, match="expected one of"):
        doc_examples.examples(page)
    _page(tmp_path, "<!-- run\nreplace: absent => there\n-->\n```bash\nls\n```\n")
    with pytest.raises(AssertionError, match="finds no"):
        doc_examples.examples(page)[0].script()


def test_a_failing_or_misprinting_example_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(doc_examples, "ROOT", tmp_path)
    workdir = tmp_path / "work"
    workdir.mkdir()
    page = _page(tmp_path, "<!-- run -->\n```bash\ntrue\nfalse\ntrue\n```\n")
    with pytest.raises(AssertionError, match="exit 1, expected 0"):
        doc_examples.run_page(page, workdir)
    _page(tmp_path, "<!-- run -->\n```console\n$ mxsim golden stream --suite decode --params "
                    "'{\"element\": \"fp4_e2m1\"}' --count 1\n# mxsim golden stream ...\n"
                    "0 00000000 0000000000000000\n```\n")
    with pytest.raises(AssertionError, match="printed"):
        doc_examples.run_page(page, workdir)
    _page(tmp_path, "<!-- run\nexit: 3\n-->\n```bash\ntrue\n(exit 3)\n```\n")
    assert doc_examples.run_page(page, workdir) == 1


# --- the speed table of docs/verification-flow.md -----------------------------------------------

def _load_speed_table_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_speed_table",
                                                  doc_examples.ROOT / "benchmarks" / "update_speed_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


speed = _load_speed_table_script()
ROW_KEYS = ["generate-dot", "generate-quantize", "verify-sample", "verify-dot", "verify-quantize", "check",
            "batch-dot", "batch-quantize"]


def assert_well_formed_speed_section(text: str) -> None:
    """The section between the markers: the date, machine and command line, the table of the
    eight measured commands (numbers and units in every cell) and the per-minute table."""
    import re

    assert text.count(speed.BEGIN) == 1 and text.count(speed.END) == 1, "the speed-table markers, once each"
    body = text[text.index(speed.BEGIN) + len(speed.BEGIN):text.index(speed.END)].strip().splitlines()
    assert re.fullmatch(r"Measured on \d{4}-\d\d-\d\d \d\d:\d\d UTC, .+ cores, load average [\d.]+ at the start, "
                        r"with `python benchmarks/update_speed_table\.py[^`]*` \(.*\):", body[0]), body[0]
    rows = [line for line in body if line.startswith("| ")]
    assert rows[0] == speed.HEADER and body[body.index(speed.HEADER) + 1] == "|---|---|---|---|---|---|"
    measured = [line.split(" | ") for line in rows[1:rows.index(speed.COMPARISON_HEADER)]]
    assert len(measured) == len(ROW_KEYS), measured
    for what, vectors, wall, cpu, rate, peak in measured:
        assert what.startswith("| ") and len(what) > 10, what
        assert re.fullmatch(r"[\d,]+( lines| results)?", vectors), vectors
        assert re.fullmatch(r"\d+\.\d s", wall) and re.fullmatch(r"\d+\.\d s", cpu), (wall, cpu)
        assert re.fullmatch(r"[\d,]+( lines| results)?", rate), rate
        assert re.fullmatch(r"\d+ MiB \|", peak), peak
    comparison = rows[rows.index(speed.COMPARISON_HEADER) + 1:]
    assert [row.split(" | ")[-1] for row in comparison] == ["`testfloat_gen` |", "`testfloat_ver` |",
                                                             "none (SoftFloat is the single source) |"]
    assert all(re.search(r"\d", row) for row in comparison), comparison


def test_the_speed_table_is_there_and_well_formed():
    """Its figures are whatever the script measured; its form is checked here."""
    assert_well_formed_speed_section(speed.DOC.read_text())


def test_the_speed_table_script_writes_a_well_formed_section():
    import datetime

    rows = []
    for i, key in enumerate(ROW_KEYS):
        unit = {"verify-sample": "lines", "check": "results"}.get(key, "vectors")
        row = {"key": key, "vectors": 1000 * (i + 1), "unit": unit, "wall": 1.25 + i, "cpu": 1.0 + i,
               "peak": 64 * 2**20}
        if key.startswith("generate"):
            row["reference_check"] = {"reference_checked": 12, "catalogue_checked": 10, "sample_checked": 2}
        rows.append(row)
    when = datetime.datetime(2026, 11, 28, 23, 5, tzinfo=datetime.timezone.utc)
    section = speed.section(rows, 1000, 500, ["--count", "1000"], when, "a CPU, 2 cores, load average 0.5 at the start")
    assert_well_formed_speed_section(section)
    lines = section.splitlines()
    assert lines[1].startswith("Measured on 2026-11-28 23:05 UTC, a CPU, 2 cores")
    # the first row: 1,000 vectors in 1.0 s of CPU (1.2 s wall), 64 MiB; check is (6000/6) / (4000/4) = 1 times faster
    assert lines[5] == ("| `generate --count 1000`, `dot` MXFP8 E4M3 aligned F=13 W=24 (the reference recomputed 12: "
                        "10 catalogue + 2 sampled) | 1,000 | 1.2 s | 1.0 s | 1,000 | 64 MiB |")
    assert "`check` is about 1 times faster" in section
    page = f"before\n{speed.BEGIN}\nold\n{speed.END}\nafter\n"
    assert speed.replace_section(page, section) == f"before\n{section}\nafter\n"
    with pytest.raises(ValueError, match="markers"):
        speed.replace_section("no markers here", section)
