"""Run the shell and Python examples of the README and the documentation pages (issue 32, item 14).

Every ```bash and ```console block of ``README.md`` and ``docs/**/*.md`` carries a marker, an HTML
comment on the line before it (GitHub and MkDocs show neither):

* ``<!-- run -->``: the block runs, in order with the page's other runnable blocks, in one fresh
  directory per page, ``mxsim`` being ``python -m mxsim.cli`` of this checkout (PYTHONPATH),
  ``python`` this interpreter and ``$MXSIM_CHECKOUT`` the checkout's root (to copy a committed
  suite from). The comment may go on for more lines, each one of:

  - ``setup: COMMAND``: a shell command run first, unseen by the reader (an input file the page
    assumes, say);
  - ``replace: TEXT => SMALLER``: run the block with TEXT replaced (``--count 10000000 => --count
    3000``), so that a page can show a realistic size and the test still runs in seconds;
  - ``exit: N``: the exit status the block must end with (default 0; ``golden check`` exits 1 on a
    mismatch).

* ``<!-- no-run: REASON -->``: the block is not run (it installs packages, needs a cluster or a
  testbench, or takes minutes); the reason is required.

A ```bash block runs as one ``bash -e -o pipefail`` script. A ```console block is a session: each
line starting with ``$ `` is a command (continued by lines ending in a backslash), the lines up to
the next command its output, compared with what the command printed (stdout and stderr): a line
``...`` stands for any number of lines, a line ending in `` ...`` for any line starting with what
comes before. A ```python block marked ``<!-- run -->`` runs as a script in the page's directory.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL_LANGUAGES = ("bash", "console")
RUNNABLE_LANGUAGES = (*SHELL_LANGUAGES, "python")
TIMEOUT_S = 300
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!--\s*(run|no-run)\b(.*)-->", re.S)


@dataclass
class Example:
    """One fenced block of a page: its language, text, line number and marker."""

    page: str
    line: int
    language: str
    text: str
    marker: str | None  # "run", "no-run" or None (unmarked)
    setup: list[str] = field(default_factory=list)
    replace: list[tuple[str, str]] = field(default_factory=list)
    exit: int = 0
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} ({self.language})"

    def script(self) -> str:
        text = self.text
        for old, new in self.replace:
            if old not in text:
                raise AssertionError(f"{self.where}: 'replace: {old} => {new}' finds no {old!r} in the block")
            text = text.replace(old, new)
        return text


def pages() -> list[Path]:
    """README.md and every page under docs/ (relative to the repository root)."""
    return [Path("README.md"), *sorted(p.relative_to(ROOT) for p in (ROOT / "docs").rglob("*.md"))]


def examples(page: Path) -> list[Example]:
    """Every fenced block of ``page`` with its marker parsed."""
    text = (ROOT / page).read_text()
    found = []
    for fence in _FENCE.finditer(text):
        before = text[:fence.start()].rstrip()
        comment = before[before.rfind("<!--"):] if before.endswith("-->") else ""
        marker = _MARKER.fullmatch(comment)
        example = Example(page.as_posix(), text.count("\n", 0, fence.start()) + 1, fence.group(1), fence.group(2),
                          marker.group(1) if marker else None)
        if marker:
            _parse_marker(example, marker.group(2))
        found.append(example)
    return found


def _parse_marker(example: Example, body: str) -> None:
    if example.marker == "no-run":
        example.reason = body.strip().lstrip(":").strip()
        if not example.reason:
            raise AssertionError(f"{example.where}: '<!-- no-run: REASON -->' needs a reason")
        return
    for line in body.strip().splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "setup":
            example.setup.append(value)
        elif key == "replace" and " => " in value:
            old, new = value.split(" => ", 1)
            example.replace.append((old, new))
        elif key == "exit" and value.lstrip("-").isdigit():
            example.exit = int(value)
        else:
            raise AssertionError(f"{example.where}: marker line {line.strip()!r}; expected one of 'setup: COMMAND', "
                                 "'replace: TEXT => SMALLER', 'exit: N'")


def unmarked_shell_blocks() -> list[str]:
    """The shell blocks that say neither run nor no-run (each must say one)."""
    return [e.where for page in pages() for e in examples(page) if e.language in SHELL_LANGUAGES and e.marker is None]


def runnable(page: Path) -> list[Example]:
    return [e for e in examples(page) if e.marker == "run" and e.language in RUNNABLE_LANGUAGES]


def environment(workdir: Path) -> dict[str, str]:
    """The environment of the examples: ``mxsim``, ``python`` and ``python3`` on PATH as this
    checkout's command line and this interpreter; PYTHONPATH the checkout first."""
    shims = workdir.parent / f"{workdir.name}-bin"
    shims.mkdir(exist_ok=True)
    for name, target in (("mxsim", f'"{sys.executable}" -m mxsim.cli'), ("python", f'"{sys.executable}"'),
                         ("python3", f'"{sys.executable}"')):
        shim = shims / name
        shim.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": python_path,
            "COLUMNS": "100", "MXSIM_CHECKOUT": str(ROOT)}


def run_page(page: Path, workdir: Path) -> int:
    """Run the page's runnable blocks in order in ``workdir``; return how many ran. Raises
    AssertionError naming the block, the command and what it printed on any difference."""
    env = environment(workdir)
    blocks = runnable(page)
    for example in blocks:
        for command in example.setup:
            _run(example, command, workdir, env, expected_exit=0)
        if example.language == "bash":
            _run(example, example.script(), workdir, env, expected_exit=example.exit)
        elif example.language == "console":
            for command, expected in console_session(example.script()):
                done = _run(example, command, workdir, env, expected_exit=example.exit)
                assert output_matches(expected, done.stdout.splitlines()), (
                    f"{example.where}: $ {command}\nshown:\n" + "\n".join(expected) + "\nprinted:\n" + done.stdout)
        else:
            script = workdir / f"example-{example.line}.py"
            script.write_text(example.script())
            _run(example, f'python "{script.name}"', workdir, env, expected_exit=example.exit)
    return len(blocks)


def _run(example: Example, command: str, workdir: Path, env: dict, expected_exit: int) -> subprocess.CompletedProcess:
    argv = ["bash", "-e", "-o", "pipefail", "-c", command]
    done = subprocess.run(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == expected_exit, (
        f"{example.where}: exit {done.returncode}, expected {expected_exit}:\n{command}\n---\n{done.stdout[-3000:]}")
    return done


def console_session(text: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, the output lines shown after it) pairs."""
    session: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if not session:
                raise AssertionError(f"a console block must start with '$ COMMAND': {line!r}")
            session[-1][1].append(line)
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + "\n" + lines[i]
        session.append((command, []))
        i += 1
    return session


def output_matches(shown: list[str], printed: list[str]) -> bool:
    """Whether the printed lines are what the shown lines say: a shown line ``...`` stands for any
    number of lines, a shown line ending in `` ...`` for a line starting with the rest; any other
    line must be equal (trailing blanks aside)."""
    shown = [line.rstrip() for line in shown]
    while shown and not shown[-1]:
        shown.pop()
    printed = [line.rstrip() for line in printed]

    def match(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(printed)
        if shown[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(printed) + 1))
        if j == len(printed):
            return False
        if shown[i].endswith(" ..."):
            ok = printed[j].startswith(shown[i][:-4])
        else:
            ok = printed[j] == shown[i]
        return ok and match(i + 1, j + 1)

    return match(0, 0)
