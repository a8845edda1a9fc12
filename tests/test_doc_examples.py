"""The shell examples of the documentation run, and show what mxsim prints (issue 32, item 14).

Every ```bash and ```console block of README.md and docs/**/*.md says ``<!-- run -->`` or
``<!-- no-run: REASON -->`` (tests/doc_examples.py has the conventions). The runnable blocks of
each page run in order in a fresh directory, with the page's smaller counts; a console block's
output must be what the command printed. The README's blocks run in tests/test_readme.py.
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
                    "'{\"element\": \"fp4_e2m1\"}' --count 1\n# mxsim golden stream ...\n0 00000000 0000000000000000\n```\n")
    with pytest.raises(AssertionError, match="printed"):
        doc_examples.run_page(page, workdir)
    _page(tmp_path, "<!-- run\nexit: 3\n-->\n```bash\ntrue\n(exit 3)\n```\n")
    assert doc_examples.run_page(page, workdir) == 1
