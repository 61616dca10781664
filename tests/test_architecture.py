"""The package's shape: imports point one way (no cycles), populations never import engines, the
public entry points are a thin facade over the input stage (`faircert.requests`) and dispatch
through the engine registry."""

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
            "faircert.requests",
            "faircert.api",
            "faircert.cli",
            "faircert.commands",
            "faircert.report",
        ),
        "faircert.models": (
            "faircert.engines",
            "faircert.requests",
            "faircert.population",
            "faircert.api",
            "faircert.cli",
            "faircert.commands",
            "faircert.report",
        ),
        "faircert.engines": (
            "faircert.requests",
            "faircert.api",
            "faircert.cli",
            "faircert.commands",
            "faircert.report",
        ),
        "faircert.results": (
            "faircert.engines",
            "faircert.requests",
            "faircert.api",
            "faircert.cli",
            "faircert.commands",
        ),
        "faircert.requests": ("faircert.api", "faircert.cli", "faircert.commands", "faircert.report"),
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


# ----- bars on the code's shape: each number may only be lowered ---------------------------------
#: Functions with this many parameters or more (`api.py` included: its entry points take the run's
#: keywords as one `**keywords`, declared once in `requests/keywords.py`).
MANY_PARAMETERS = 10
MOST_WITH_MANY_PARAMETERS = 4
NONE_FROM = 14
#: Named parameters of a public entry point, and lines of the facade.
PUBLIC_PARAMETERS = 12
API_LINES = 300
#: isinstance tests in `engines/` over model IR and population classes. Engines reach their code for
#: each kind through the IRs' and populations' `accept` (see `engines/protocols.py`); those left are a
#: program's Gaussian draw node (named like a population's marginal), the pipeline the empirical
#: engine compiles for the data, and the exact linear engine's guard that the model is a network (the API
#: asks it of tree ensembles too).
TYPE_TESTS_IN_ENGINES = 3


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = function.args
    count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return count - bool(a.args and a.args[0].arg in ("self", "cls"))


def _functions():
    for path in PACKAGE_ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def test_few_functions_take_ten_or_more_parameters():
    many = [
        (f"{p.relative_to(PACKAGE_ROOT)}:{f.lineno} {f.name}", _parameters(f))
        for p, f in _functions()
        if _parameters(f) >= MANY_PARAMETERS
    ]
    assert len(many) <= MOST_WITH_MANY_PARAMETERS, many
    assert all(n < NONE_FROM for _, n in many), many


def test_the_api_is_a_thin_facade_over_the_input_stage():
    """Each entry point names its question's parameters and takes the rest as `**keywords`; it reads
    no input itself (the input stage does), and `verify` answers with one result type."""
    path = PACKAGE_ROOT / "api.py"
    tree = ast.parse(path.read_text())
    assert len(path.read_text().splitlines()) <= API_LINES
    public = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    assert {f.name for f in public} >= {"verify", "audit", "group", "compare", "verify_program"}
    for f in public:
        named = len(f.args.posonlyargs) + len(f.args.args) + len(f.args.kwonlyargs)
        assert named <= PUBLIC_PARAMETERS, (f.name, named)
    returns = {f.name: ast.unparse(f.returns) for f in public if f.returns is not None}
    assert returns["verify"] == "Result" and returns["audit"] == "RowsResult"
    read_here = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in ("data", "domain", "population.resolve")
    }
    assert read_here == set()


def test_no_folder_holds_a_family_of_modules_sharing_a_prefix():
    """Three or more modules named `<prefix>_...` in one folder belong in a package `<prefix>/`."""
    for folder in [PACKAGE_ROOT, *(p for p in PACKAGE_ROOT.rglob("*") if p.is_dir())]:
        names = [p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")]
        names += [p.name for p in folder.iterdir() if (p / "__init__.py").exists()]
        prefixes = [n.split("_")[0] for n in names if "_" in n]
        families = {p for p in prefixes if prefixes.count(p) >= 3}
        assert not families, (folder, families)


def _model_and_population_classes() -> set[str]:
    """The model IRs the registry dispatches on, and every class of `population/` (marginals too)."""
    from faircert.engines import registry

    irs = {registry.NETWORK, registry.TREES, registry.LINEAR, registry.PROGRAM, registry.PIPELINE, registry.BLACKBOX}
    populations = {
        node.name
        for path in (PACKAGE_ROOT / "population").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    }
    return {name.rpartition(".")[2] for name in irs} | populations


def test_engines_test_model_and_population_types_no_more_than_before():
    kinds = _model_and_population_classes()
    tests = 0
    for path in (PACKAGE_ROOT / "engines").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                checked = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                names = {getattr(c, "id", None) or getattr(c, "attr", None) for c in checked}
                tests += bool(names & kinds)
    assert tests <= TYPE_TESTS_IN_ENGINES


def test_engines_take_the_options_of_the_command_that_runs_them():
    untyped = [
        str(p.relative_to(PACKAGE_ROOT))
        for p in (PACKAGE_ROOT / "engines").rglob("*.py")
        if "options: Any" in p.read_text()
    ]
    assert untyped == []


#: `hasattr` in engines/ and requests/: a model's optional `logit`, the guard that a classifier is one
#: of the IRs (two places), and an os feature. Populations answer every question themselves
#: (`population.base.Population`), so none is asked of them.
HASATTR_IN_ENGINES = 4


def test_engines_ask_populations_rather_than_probe_them():
    calls = [
        ast.unparse(node)
        for folder in ("engines", "requests")
        for path in (PACKAGE_ROOT / folder).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hasattr"
    ]
    assert len(calls) <= HASATTR_IN_ENGINES, calls
    assert not [c for c in calls if "pop" in c], calls


#: Flags of a subcommand (argparse actions, -h aside): a family of related knobs is one flag
#: (`--learn KEY=VALUE`, `--budget KEY=VALUE`, ...), its former flags hidden aliases of it.
MOST_FLAGS = 25


def _subcommands():
    import argparse

    from faircert.cli import build_parser

    def walk(parser, name):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    yield from walk(sub, f"{name} {sub_name}".strip())
        yield name, parser

    yield from walk(build_parser(), "")


def test_no_subcommand_has_more_than_25_flags():
    import argparse

    counts = {
        name: sum(not isinstance(a, argparse._HelpAction) for a in parser._actions)
        for name, parser in _subcommands()
        if name
    }
    assert {"verify", "group", "compare", "audit", "program"} <= set(counts)
    assert max(counts.values()) <= MOST_FLAGS, counts


def test_every_result_type_renders_through_one_renderer_found_by_its_type():
    """`report.render` finds a result family's renderer by the result's type; results name the
    report module once (they sit below it) and never a renderer by its class's name."""
    import inspect

    from faircert import results
    from faircert.report.render import families
    from faircert.results.audit import AuditTables
    from faircert.results.base import Verdict
    from faircert.results.explain import ExplainResult
    from faircert.results.rows import RowsResult

    kinds = {c for _, c in inspect.getmembers(results, inspect.isclass) if issubclass(c, Verdict) and c is not Verdict}
    kinds |= {AuditTables, ExplainResult, RowsResult}
    known = families()
    assert kinds <= set(known)
    for renderer in known.values():
        assert callable(renderer.console) and callable(renderer.html) and isinstance(renderer.csv, dict)
    named = [p.name for p in (PACKAGE_ROOT / "results").rglob("*.py") if "faircert.report." in p.read_text()]
    assert named == ["base.py"]
