"""The import graph of bot/ and cogs/, read from the source (AST): no cycles, bot/ never imports
cogs/, and the layers only point one way. An import inside a function counts as much as one at
the top of a module; only imports under `if TYPE_CHECKING:` are left out (they never run)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "cogs")


def _module_names(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(name: str, path: Path) -> set[str]:
    """Every dotted name `name`'s module imports (what `import` and `from … import` name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """module → the modules of `packages` it imports (a name resolves to its longest module
    prefix, so `from bot.store import Store` is an edge to `bot.store`)."""
    modules = _module_names(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for target in _imported(name, path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return "; ".join(edges)


def _in(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def test_no_import_cycles() -> None:
    graph = import_graph(ROOT)
    assert [_describe(graph, c) for c in cycles(graph)] == []


def test_bot_never_imports_cogs() -> None:
    graph = import_graph(ROOT)
    offenders = [
        f"{a} -> {b}"
        for a, targets in graph.items()
        if _in(a, "bot")
        for b in targets
        if _in(b, "cogs")
    ]
    assert offenders == []


# (importer layer, imported layer) pairs that would run the dependencies backwards.
FORBIDDEN = [
    ("bot.services", "bot.render"),  # services compute; render draws
    ("bot.services", "bot.llm"),  # services take writers; wiring binds the LLM's
    ("bot.llm", "bot.services"),
    ("bot.outbox", "bot.services"),  # the outbox posts payloads; it composes nothing
    ("bot.outbox", "bot.digests"),
    ("bot.narrative", "bot.store"),  # the narrative package is pure
    ("bot.narrative", "bot.services"),
    ("bot.narrative", "bot.llm"),
    ("bot.narrative", "bot.render"),
    ("bot.render", "bot.store"),
    ("bot.render", "bot.llm"),
    ("bot.runtime", "bot.wiring"),  # wiring builds the runtime, never the other way round
    ("bot.incidents", "bot.services"),  # the engine is domain; services read it, not back
    ("bot.incidents", "bot.llm"),
    ("bot.store", "bot.incidents"),  # repositories know the domain models only
    ("bot.store", "bot.services"),
    ("bot.models", "bot.store"),
    ("bot.analysis", "bot.services"),
    ("bot.sources", "bot.services"),
]


def test_layers_point_one_way() -> None:
    graph = import_graph(ROOT)
    offenders = [
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        for low, high in FORBIDDEN
        if _in(a, low) and _in(b, high)
    ]
    assert offenders == []


def test_the_graph_sees_function_level_cycles_but_not_type_checking(tmp_path: Path) -> None:
    """The checker itself: a cycle closed by an import inside a function is found; one closed
    only under `if TYPE_CHECKING:` is not."""
    pkg = tmp_path / "bot"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from bot.sub.b import thing\n")
    (pkg / "sub" / "b.py").write_text("def thing():\n    from bot import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nfrom .d import x\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.c import y\nx = 1\n"
    )
    graph = import_graph(tmp_path, ["bot"])
    assert graph["bot.c"] == {"bot.d"} and graph["bot.d"] == set()
    assert cycles(graph) == [["bot.a", "bot.sub.b"]]
