"""The documentation site.

1. ``mkdocs build --strict`` succeeds, and the value tables the build generates agree, code by
   code, with values computed here from the OCP definitions (not with mxsim); the numerics page
   lists every option of the code; the comparison page shows the outputs the examples produce.
2. Every example of the comparison page (docs/hooks/comparison_examples.py) gives the documented
   outputs with the installed ml_dtypes, torch, gfloat, torchao and mxsim.
3. The QSNR figure script writes an SVG and a table, byte-reproducibly for equal arguments, and
   the committed table is what the script computes.
4. The ``pycon`` examples of the quick start, the custom-format, testing and interop pages run as doctests;
   the README's python snippets run, and its links resolve inside the repository.

The command-line page is each command's ``--help``; the API page opens with quantize, encode, dot.
"""

from __future__ import annotations

import dataclasses
import doctest
import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


comparison_examples = load_module("comparison_examples", DOCS / "hooks" / "comparison_examples.py")
golden_counts = load_module("golden_counts", DOCS / "hooks" / "golden_counts.py")

# --------------------------------------------------------------------------------------------------
# 1. The site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text()


def section(text: str, anchor: str) -> str:
    """The HTML from the heading with id ``anchor`` to the next heading of level 2 or 3."""
    start = text.index(f'id="{anchor}"')
    end = re.search(r"<h[23][ >]", text[start:])
    return text[start: start + end.start()] if end else text[start:]


def table_rows(fragment: str) -> list[list[str]]:
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", fragment, re.DOTALL):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return [r for r in rows if r]


def code_rows(fragment: str) -> dict[int, list[str]]:
    """Rows of a value table (first cell a hex code, e.g. 0x7E) keyed by code."""
    return {int(r[0], 16): r for r in table_rows(fragment) if re.fullmatch(r"0x[0-9A-F]+", r[0]) and len(r) >= 6}


def ocp_float_value(code: int, e: int, m: int, bias: int, specials: str):
    """The OCP definition (formats-and-datapath.md 0.2): subnormals at E = 0, specials by name."""
    sign, field, mant = code >> (e + m), (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
    if specials == "ieee" and field == (1 << e) - 1:
        return "NaN" if mant else ("-Inf" if sign else "+Inf")
    if specials == "fn" and field == (1 << e) - 1 and mant == (1 << m) - 1:
        return "NaN"
    if field == 0:
        value = Fraction(mant, 1 << m) * Fraction(2) ** (1 - bias)
    else:
        value = (1 + Fraction(mant, 1 << m)) * Fraction(2) ** (field - bias)
    return (sign, value)


def shown_value(cell: str):
    """The exact value a table cell starts with, as (sign, magnitude): '0.5 = 2^-1' -> (0, 1/2),
    '-0' -> (1, 0), '7 × 2^-16 ≈ 0.000106812' -> (0, 7/65536), '2^-127 ≈ ...' -> (0, 2^-127)."""
    if cell in ("NaN", "+Inf", "-Inf"):
        return cell
    exact = cell.split(" ≈ ")[0].split(" = ")[0]
    sign = int(exact.startswith("-"))
    factor, _, exponent = exact.lstrip("-").partition("2^")
    if exponent:
        magnitude = Fraction(factor.rstrip(" ×") or 1) * Fraction(2) ** int(exponent)
    else:
        magnitude = Fraction(factor)
    return (sign, magnitude)


@pytest.mark.parametrize(
    "page_name, anchor, params, n_codes, expected",
    [
        ("formats/mxfp4", "every-code", (2, 1, 1, "none"), 16,
         {0x7: ("6", "max normal"), 0x1: ("0.5", "subnormal"), 0x8: ("-0", "zero"), 0xF: ("-6", "max normal")}),
        ("formats/mxfp8", "fp8_e4m3", (4, 3, 7, "fn"), 128,
         {0x7E: ("448", "max normal"), 0x7F: ("NaN", "NaN"), 0x01: ("0.001953125", "subnormal"),
          0x08: ("0.015625", "min normal")}),
        ("formats/mxfp8", "fp8_e5m2", (5, 2, 15, "ieee"), 128,
         {0x7C: ("+Inf", "Inf"), 0x7B: ("57344", "max normal"), 0x7E: ("NaN", "NaN (canonical)")}),
        ("formats/mxfp6", "fp6_e3m2", (3, 2, 3, "none"), 64, {0x1F: ("28", "max normal")}),
        ("formats/mxfp6", "fp6_e2m3", (2, 3, 1, "none"), 64, {0x1F: ("7.5", "max normal")}),
    ],
)
def test_generated_value_tables_match_the_definition(site, page_name, anchor, params, n_codes, expected):
    rows = code_rows(section(page(site, page_name), anchor))
    assert sorted(rows) == list(range(n_codes))
    value_column = 5  # code, bits, S, E, M, value, significand form, class
    for code, row in rows.items():
        assert shown_value(row[value_column]) == ocp_float_value(code, *params), (code, row)
    for code, (value, kind) in expected.items():
        assert rows[code][value_column].split(" ")[0] == value and rows[code][-1] == kind, rows[code]


def test_generated_tables_elsewhere(site):
    # The E4M3 spec table states max normal 448 at 0x7E; E8M0 has no zero and 0xFF is NaN.
    assert "448 (0x7E)" in page(site, "formats/mxfp8")
    e8m0 = code_rows(section(page(site, "formats/scales"), "e8m0"))
    assert sorted(e8m0) == list(range(256))
    assert e8m0[0xFF][4] == "NaN" and e8m0[0x7F][4] == "1" and e8m0[0x00][4].startswith("2^-127")
    assert all(shown_value(e8m0[c][4]) == (0, Fraction(2) ** (c - 127)) for c in range(255))
    # MXINT8: 0x80 decodes to -2.0 (shown on the grid), the spec table names it.
    assert "-2 (0x80)" in page(site, "formats/mxint8")


def test_numerics_page_lists_every_option(site):
    from mxsim import Accumulator, DequantizeOptions, QuantizeOptions

    text = page(site, "numerics")
    for options in (QuantizeOptions, DequantizeOptions, Accumulator):
        for field in dataclasses.fields(options):
            assert f"<code>{field.name}</code>" in text, field.name
    for name in ("rounding", "overflow", "rand_bits", "rand_width", "int8_allow_neg2", "element_stream",
                 "scale_placement"):
        assert f"<code>{name}</code>" in text, name


def test_comparison_page_shows_the_example_outputs(site):
    text = html.unescape(re.sub(r"<[^>]+>", "", page(site, "comparison")))
    for example in comparison_examples.EXAMPLES:
        for output in (example.library_output, example.mxsim_output):
            assert output in text, (example.id, output)


def test_canonical_suite_counts_come_from_the_index(site):
    """The golden-vectors page states the committed suite's size as golden/index.json has it
    (the mkdocs hook reads the file when the site is built: regenerating golden/ keeps it true)."""
    suites = json.loads((ROOT / "golden" / "index.json").read_text())["suites"]
    vectors = sum(entry["count"] for entry in suites.values())
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page(site, "golden-vectors"))).split())
    assert f"lists it ({len(suites):,} suites, {vectors:,} vectors, " in text
    assert "golden-index" not in text


def test_golden_counts_hook_on_a_made_up_index(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"suites": {"a/x": {"count": 3}, "b/y": {"count": 1234}}}))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.hex").write_bytes(b"0" * (2_500_000 - (tmp_path / "index.json").stat().st_size))
    page_text = "(<!-- golden-index:suites --> suites, <!--golden-index:vectors--> vectors, <!-- golden-index:size -->)"
    assert golden_counts.expand(page_text, tmp_path) == "(2 suites, 1,237 vectors, 2.5 MB)"
    assert golden_counts.expand("no placeholder", tmp_path / "absent") == "no placeholder"
    with pytest.raises(ValueError, match="golden-index:bytes.*expected one of"):
        golden_counts.expand("<!-- golden-index:bytes -->", tmp_path)


def test_manifest_example_shows_the_committed_manifest(site):
    """The golden-vectors page's manifest example, as built, holds the committed manifest's values."""
    text = page(site, "golden-vectors")
    block = next(b for b in code_blocks(section(text, "the-manifest")) if b.lstrip().startswith("{"))
    shown = json.loads(block)
    actual = json.loads((ROOT / "golden" / "dot" / shown["suite"] / "manifest.json").read_text())
    assert shown["kind"] == "dot" and shown["count"] == actual["count"] == actual["stimulus"]["catalogue"]
    assert shown["coverage"] == {name: actual["coverage"][name] for name in shown["coverage"]}
    assert shown["fields"][0] == {**actual["fields"][0], "description": "..."}
    assert shown["reference_check"]["vectors"] == actual["reference_check"]["vectors"]
    assert shown["files"]["acc.hex"] == actual["files"]["acc.hex"]


def test_manifest_example_hook_on_a_made_up_manifest(tmp_path):
    (tmp_path / "dot" / "s").mkdir(parents=True)
    manifest = {"kind": "dot", "count": 7, "coverage": {"nan": 2, "zero": 5}, "fields": [{"name": "a", "bits": 8}],
                "rule": "long text", "seed": "mxsim:0:dot:s"}
    (tmp_path / "dot" / "s" / "manifest.json").write_text(json.dumps(manifest))
    shown = '{"kind": "dot", "count": 3, "coverage": {"nan": 1}, "fields": [{"name": "x"}], "rule": "...", ' \
            '"seed": "mxsim:...:s", "...": "..."}'
    page_text = f"<!-- golden-manifest-example: dot/s -->\n```json\n{shown}\n```\n"
    expanded = golden_counts.expand_examples(page_text, tmp_path)
    body = json.loads(expanded.split("```json\n")[1].split("\n```")[0])
    assert body == {"kind": "dot", "count": 7, "coverage": {"nan": 2}, "fields": [{"name": "a"}], "rule": "...",
                    "seed": "mxsim:...:s", "...": "..."}
    with pytest.raises(ValueError, match=r"dot/s\.coverage: the manifest has no \['inf'\]"):
        golden_counts.expand_examples(page_text.replace('{"nan": 1}', '{"inf": 1}'), tmp_path)
    with pytest.raises(ValueError, match="no .*manifest.json"):
        golden_counts.expand_examples(page_text.replace("dot/s", "dot/t"), tmp_path)


def test_datapath_page_has_the_diagram(site):
    text = page(site, "datapath")
    assert 'class="mermaid"' in text and "W-bit register" in text and "across blocks" in text


def code_blocks(fragment: str) -> list[str]:
    """The text of every <pre> block of an HTML fragment, tags removed."""
    return [html.unescape(re.sub(r"<[^>]+>", "", block)) for block in re.findall(r"<pre.*?</pre>", fragment, re.S)]


def test_cli_page_is_every_commands_help(site, capsys, monkeypatch):
    """Each section of the command-line page is exactly what `mxsim ... --help` prints at 100
    columns (argparse reads COLUMNS), and every command and subcommand has its section."""
    from mxsim.cli import main

    text = page(site, "cli")
    anchors = re.findall(r'<h2 id="(mxsim[a-z-]*)"', text)
    required = ["mxsim", "mxsim-info", "mxsim-quantize", "mxsim-dequantize", "mxsim-dot", "mxsim-golden",
                "mxsim-golden-generate", "mxsim-golden-verify"]
    assert set(required) <= set(anchors) and len(anchors) == len(set(anchors))
    monkeypatch.setenv("COLUMNS", "102")
    for anchor in anchors:
        with pytest.raises(SystemExit):
            main(anchor.split("-")[1:] + ["--help"])
        shown = code_blocks(section(text, anchor))
        assert shown == [capsys.readouterr().out.rstrip() + "\n"], anchor
    assert 'href="cli/"' in (site / "index.html").read_text()  # the home page links the reference


def test_api_page_opens_with_quantize_encode_dot(site):
    text = page(site, "api/mxsim")
    documented = re.findall(r'<h[23] id="(mxsim\.[A-Za-z_.]+)"', text)
    top = [name for name in documented if name.count(".") == 1 or name.startswith("mxsim.fast.")]
    assert top[:4] == ["mxsim.quantize", "mxsim.fast.encode.encode", "mxsim.fast.decode.decode", "mxsim.dot"], top
    assert top.index("mxsim.ROUNDING_MODES") > top.index("mxsim.get_format") > top.index("mxsim.load")


# --------------------------------------------------------------------------------------------------
# 2. The comparison examples, run


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("example", comparison_examples.EXAMPLES, ids=lambda e: e.id)
def test_comparison_example(example):
    assert example.run() == example.expected()


def test_microxcaling_rows_are_marked_not_run():
    for example in comparison_examples.EXAMPLES:
        assert (example.library == "microxcaling") == (example.source != "run")


# --------------------------------------------------------------------------------------------------
# 3. The QSNR figure


qsnr = load_module("qsnr_benchmark", ROOT / "benchmarks" / "qsnr.py")


def test_qsnr_figure_is_written_and_reproducible(tmp_path):
    outputs = []
    for run in ("a", "b"):
        rows = qsnr.compute(1 << 12, seed=3)
        svg, table = qsnr.write_figure(rows, 1 << 12, 3, tmp_path / run)
        outputs.append((svg.read_bytes(), table.read_text()))
    svg_bytes, table_text = outputs[0]
    assert svg_bytes.startswith(b"<?xml") and b"<svg" in svg_bytes and b"mx9" in svg_bytes
    assert outputs[0] == outputs[1]
    assert "| `mx9` | 9 |" in table_text


def test_committed_qsnr_table_is_current():
    committed = (DOCS / "img" / "qsnr-table.md").read_text()
    assert (DOCS / "img" / "qsnr.svg").read_bytes().startswith(b"<?xml")
    n = int(re.search(r"([\d,]+) values", committed).group(1).replace(",", ""))
    seed = int(re.search(r"seed (\d+)", committed).group(1))
    assert qsnr.markdown_table(qsnr.compute(n, seed), n, seed) == committed


def test_qsnr_commentary_quotes_the_table():
    """The differences quoted in the prose of qsnr.md are those of the committed table."""
    rows = re.findall(r"^\| `([^`]+)`[^|]* \| [\d.]+ \| ([\d.]+) \| ([\d.]+) \|$", (DOCS / "img" / "qsnr-table.md").read_text(), re.M)
    gauss = {name: float(g) for name, g, _ in rows}
    heavy = {name: float(t) for name, _, t in rows}
    text = (DOCS / "qsnr.md").read_text()
    assert f"by about {gauss['mx9'] - gauss['msfp16']:.2f} dB" in text
    assert f"({gauss['mx9'] - gauss['fp8_e4m3']:.2f} dB here against the per-tensor baseline)" in text
    above = sorted(round(gauss[name] - gauss["mxfp8_e4m3"]) for name in ("mxint8", "msfp16"))
    assert f"sit {above[0]} to {above[1]} dB" in text
    assert f"MXINT8 loses about {round(gauss['mxint8'] - heavy['mxint8'])} dB" in text
    assert gauss["mxfp8_e5m2"] == gauss["mxfp6_e3m2"] and "score the same" in text


# --------------------------------------------------------------------------------------------------
# 4. Doctests of the pages


def test_readme_python_examples_run(tmp_path, monkeypatch):
    """The README's python snippets run in order, in one namespace (each continues the one before),
    with nothing undefined; the one that shows a CheckFailure in comments raises exactly that."""
    from mxsim.strategies import CheckFailure

    monkeypatch.chdir(tmp_path)  # a snippet saves w.mxt
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert len(blocks) >= 4
    namespace = {}
    for i, block in enumerate(blocks):
        code = compile(block, f"README.md python block {i}", "exec")
        shown = re.search(r"^# CheckFailure: (.*(?:\n#   .*)*)", block, re.M)
        if shown is None:
            exec(code, namespace)
            continue
        with pytest.raises(CheckFailure) as failure:
            exec(code, namespace)
        assert str(failure.value) == shown.group(1).replace("\n# ", "\n")


def test_readme_links_and_opening():
    """Relative links point into the repository; the opening says to make a virtual environment
    before the first pip install."""
    text = (ROOT / "README.md").read_text()
    links = [target for target in re.findall(r"\]\(([^)#]+)", text) if "://" not in target]
    assert links
    for target in links:
        path = (ROOT / target).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), target
    assert "conventions.md" not in text
    assert text.index("python3 -m venv .venv && . .venv/bin/activate") < text.index("pip install -e .")


def test_pages_cite_the_contract_page_not_conventions_md():
    """Readers have docs/numerics.md, not the project's reference notes (issue 32, item 17)."""
    citing = [path.relative_to(ROOT).as_posix() for path in sorted(DOCS.rglob("*.md"))
              if path.name != "numerics.md" and "conventions.md" in path.read_text()]
    assert not citing, citing


@pytest.mark.parametrize("name", ["index.md", "formats/custom.md", "testing.md", "interop.md"])
def test_page_examples_run(name):
    text = (DOCS / name).read_text()
    blocks = re.findall(r"```pycon\n(.*?)```", text, re.DOTALL)
    assert blocks
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"{name}[{i}]", name, 0)
        runner.run(test)
    assert runner.failures == 0
