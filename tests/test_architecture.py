"""The package's shape: imports point one way (no cycles), populations never import engines, and
the public entry points dispatch through the engine registry."""

from __future__ import annotations

import ast
from pathlib import Path

import faircert

PACKAGE_ROOT = Path(faircert.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE_ROOT.rglob("*.py")}


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def import_graph() -> dict[str, set[str]]:
    """Edges from each faircert module to the faircert modules it imports explicitly, at module level
    or inside functions (a lazy import is still a dependency)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("faircert") and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _top_level_exempt(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    # The package's own __init__ re-exports the API; modules never import it, so it is a root.
    return {k: {t for t in v if t != "faircert"} for k, v in graph.items()}


def test_no_import_cycles():
    assert _cycles(_top_level_exempt(import_graph())) == []


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_lower_layers_never_import_higher_ones():
    graph = import_graph()
    lower_to_forbidden = {
        "faircert.population": (
            "faircert.engines",
            "faircert.api",
            "faircert.cli",
            "faircert.commands",
            "faircert.report",
        ),
        "faircert.models": (
            "faircert.engines",
            "faircert.population",
            "faircert.api",
            "faircert.cli",
            "faircert.commands",
            "faircert.report",
        ),
        "faircert.engines": ("faircert.api", "faircert.cli", "faircert.commands", "faircert.report"),
        "faircert.results": ("faircert.engines", "faircert.api", "faircert.cli", "faircert.commands"),
    }
    bad = sorted(
        (src, dst)
        for src, dsts in graph.items()
        for low, banned in lower_to_forbidden.items()
        if src == low or src.startswith(low + ".")
        for dst in dsts
        if dst.startswith(banned)
    )
    assert bad == []
