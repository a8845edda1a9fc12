"""The package's layers stay visible: no import cycle between mxsim's modules (function-local
imports included), and the integer-only reference imports nothing above it.

The import graph is read from the source with :mod:`ast`, so it covers every import statement,
wherever it stands, whether or not it runs at import time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mxsim"
ABOVE_THE_REFERENCE = (
    "mxsim.fast", "mxsim.tensor", "mxsim.tensor_dot", "mxsim.tensor_pack", "mxsim.fileformat", "mxsim.golden",
    "mxsim.cli", "mxsim.strategies", "mxsim.interop",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the mxsim modules it imports (``from pkg import name`` counts as pkg.name where
    that is a module, else as pkg)."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                for alias in node.names:
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as a path that returns to its start, or None (iterative DFS)."""
    colour = dict.fromkeys(graph, 0)  # 0 new, 1 on the stack, 2 done
    for root in sorted(graph):
        if colour[root]:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour[child] == 1:
                return path[path.index(child):] + [child]
            elif colour[child] == 0:
                colour[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


GRAPH = _imports(_modules())


def _is_package_init_edge(importer: str, imported: str) -> bool:
    """A package's __init__ importing its own submodules is how it exposes them, not a layer
    edge: ``mxsim.ref`` -> ``mxsim.ref.dot`` is fine; ``mxsim.ref.dot`` -> ``mxsim.ref`` (the
    __init__) would re-enter it and is kept."""
    return imported.startswith(importer + ".")


def test_the_import_graph_has_no_cycle():
    graph = {m: {t for t in targets if not _is_package_init_edge(m, t)} for m, targets in GRAPH.items()}
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph))}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m == "mxsim.ref" or m.startswith("mxsim.ref.")))
def test_the_reference_imports_nothing_above_it(module):
    above = sorted(t for t in GRAPH[module] if t == "mxsim" or t.startswith(ABOVE_THE_REFERENCE))
    assert not above, f"{module} imports {above}: the reference model must sit below them"


def test_the_checker_sees_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


GOLDEN_LAYERS = ("values", "coverage", "stimulus", "kinds", "compute", "storage", "device")
"""mxsim.golden's subpackages in the order the data flows (its package docstring); on top of them the
modules that drive them all (canonical, cluster) and the package's __init__."""
GOLDEN_ON_TOP = ("canonical", "cluster")


def _golden_layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["mxsim", "golden"] and len(parts) > 2 else None


def test_golden_has_only_its_layers_and_the_modules_on_top():
    top = {_golden_layer(m) for m in GRAPH if _golden_layer(m)}
    assert top == set(GOLDEN_LAYERS) | set(GOLDEN_ON_TOP), (
        f"mxsim/golden/ holds {sorted(top - set(GOLDEN_LAYERS) - set(GOLDEN_ON_TOP))} beside its layers "
        f"{GOLDEN_LAYERS} and {GOLDEN_ON_TOP}: put each module in the layer of what it does")


def _imports_from_later_layers(module: str, targets: set[str]) -> list[str]:
    rank = GOLDEN_LAYERS.index(_golden_layer(module))
    return sorted(t for t in targets if t == "mxsim.golden"
                  or _golden_layer(t) in GOLDEN_ON_TOP or _golden_layer(t) in GOLDEN_LAYERS[rank + 1:])


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _golden_layer(m) in GOLDEN_LAYERS))
def test_each_golden_layer_imports_only_the_layers_before_it(module):
    later = _imports_from_later_layers(module, GRAPH[module])
    assert not later, f"{module} imports {later}, which come after its layer in {GOLDEN_LAYERS}"


def test_the_layer_rule_sees_a_planted_upward_import():
    targets = {"mxsim.golden.device.check", "mxsim.golden.cluster", "mxsim.golden.values", "mxsim.ref.dot"}
    assert _imports_from_later_layers("mxsim.golden.values", targets) == [
        "mxsim.golden.cluster", "mxsim.golden.device.check"]
    assert _imports_from_later_layers("mxsim.golden.device.check", targets) == ["mxsim.golden.cluster"]


def test_every_public_name_resolves_and_the_golden_commands_leave_the_tensor_modules_unloaded():
    """mxsim's array API is imported on first use: every name of ``mxsim.__all__`` still resolves
    (and is the object its module defines), an unknown name is an AttributeError, and a fresh
    process that imports the command line (what ``mxsim golden generate`` runs) does not load the
    tensor, tensor-file and tensor-dot modules."""
    import subprocess
    import sys

    import mxsim
    import mxsim.fileformat
    import mxsim.tensor_dot

    assert all(getattr(mxsim, name) is not None for name in mxsim.__all__)
    assert mxsim.dot is mxsim.tensor_dot.dot and mxsim.load is mxsim.fileformat.load
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mxsim.no_such_name  # noqa: B018
    code = ("import sys, mxsim.cli; print(sorted(m for m in ('mxsim.tensor', 'mxsim.fileformat', 'mxsim.tensor_dot', "
            "'mxsim.tensor_pack') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"importing mxsim.cli loads {loaded}"


def _subpackage(module: str) -> str:
    """The first level below mxsim a module belongs to (``mxsim.ref.block`` -> ``mxsim.ref``)."""
    return ".".join(module.split(".")[:2])


def _private_imports_across_subpackages(modules: dict[str, Path]) -> list[str]:
    """``module: target.name`` for every private name (one leading underscore) a module imports from
    another of mxsim's subpackages: shared helpers are public, private ones stay home."""
    found = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(name, path.name == "__init__.py", node)
            if not target.startswith("mxsim") or _subpackage(target) == _subpackage(name):
                continue
            found += [f"{name}: {target}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
        found += _private_attributes_of_imported_modules(name, path, modules)
    return found


def _private_attributes_of_imported_modules(name: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """``module: target._name`` for every ``alias._name`` read where ``alias`` is a module of another
    subpackage bound by ``from pkg import module [as alias]`` or ``import pkg.module as alias``."""
    tree = ast.parse(path.read_text(), str(path))
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve(name, path.name == "__init__.py", node)
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            bound.update({alias.asname: alias.name for alias in node.names if alias.asname and alias.name in modules})
    return [f"{name}: {bound[node.value.id]}.{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
            and node.attr.startswith("_") and not node.attr.startswith("__")
            and _subpackage(bound[node.value.id]) != _subpackage(name)]


def test_no_private_name_crosses_a_subpackage():
    found = _private_imports_across_subpackages(_modules())
    assert not found, f"private names imported from another subpackage (make them public): {found}"


def test_the_private_import_rule_sees_a_planted_import(tmp_path):
    package = tmp_path / "mxsim"
    (package / "ref").mkdir(parents=True)
    (package / "golden").mkdir()
    (package / "ref" / "block.py").write_text("def _helper():\n    pass\n")
    (package / "golden" / "kinds.py").write_text(
        "from ..ref.block import _helper\nfrom .kinds import _same\nfrom ..ref import block as b\nb._other()\n")
    modules = {"mxsim.ref.block": package / "ref" / "block.py", "mxsim.golden.kinds": package / "golden" / "kinds.py"}
    assert _private_imports_across_subpackages(modules) == [
        "mxsim.golden.kinds: mxsim.ref.block._helper", "mxsim.golden.kinds: mxsim.ref.block._other"]


def test_the_formats_import_nothing_from_the_options():
    """Formats are the bottom layer: the options (which name formats) sit on them, never under them."""
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if _subpackage(m) == "mxsim.formats"
                    for t in targets if t.startswith("mxsim.") and _subpackage(t) not in ("mxsim.formats",))
    assert not upward, f"mxsim.formats imports from above it: {upward}"


def test_no_module_of_the_package_is_over_600_lines():
    """Rooms by seam (issue 33 item 5): a module past 600 lines is split along a seam."""
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 600}
    assert not long, f"split these along a seam: {long}"
