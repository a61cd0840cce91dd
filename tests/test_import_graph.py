"""The import graph of bot/ and cogs/, read from the source (AST), between modules and between
parts. A part is a subpackage of `bot` (`bot.store`), a top-level module of it (`bot.cli`), the
package `bot` itself, or `cogs`. Every import counts, wherever it stands: inside a function as
much as at the top of a module, and under `if TYPE_CHECKING:` too (an annotation is a
dependency of the code's meaning).

The rules: no cycle between modules; no cycle between parts; each part imports only the parts
`ALLOWED` names for it (an allow-list: a new part, or a new edge between parts, is a decision
written down here, and the allow-list itself has no cycle)."""

from __future__ import annotations

import ast
import functools
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


def _imported(name: str, path: Path) -> set[str]:
    """Every dotted name `name`'s module imports (what `import` and `from … import` name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(node: ast.AST) -> None:
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


@functools.cache
def _graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def part_of(module: str) -> str:
    """`bot.store.events` → `bot.store`; `bot.cli` → `bot.cli`; `bot` → `bot`; `cogs.x` → `cogs`."""
    names = module.split(".")
    if names[0] != "bot":
        return names[0]
    return ".".join(names[:2])


def part_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = parts.setdefault(part_of(module), set())
        edges.update(part_of(t) for t in targets)
    for part, edges in parts.items():
        edges.discard(part)
    return parts


# Parts with no imports of their own that any part may use: the package itself (its version) and
# `bot.core` (errors, time, hashing, the one codec of stored JSON, Discord's limits, the one
# sanitiser of untrusted text, how numbers read to people, logging set-up, the loop supervisor,
# the heap's freeze, single flight).
FOUNDATION = {"bot", "bot.core"}

# Which part may import which (besides FOUNDATION), lowest first. Read a row as "may use".
ALLOWED: dict[str, set[str]] = {
    "bot.config": set(),  # the environment and the runs file's shape
    "bot.models": {"bot.config"},  # domain dataclasses
    "bot.analysis": {"bot.config", "bot.models"},  # progress, ETA, forecasts: pure
    "bot.enrich": {"bot.models"},  # the rules: pure
    "bot.narrative": {"bot.enrich", "bot.models"},  # facts, templates, formatting: pure
    "bot.store": {"bot.analysis", "bot.config", "bot.models"},  # repositories
    "bot.sources": {"bot.analysis", "bot.config", "bot.enrich", "bot.models", "bot.store"},
    # pushes (webhooks, Alertmanager) read into the sources' own shapes
    "bot.hooks": {"bot.config", "bot.models", "bot.sources", "bot.store"},
    # the incident domain says what happened; `bot.posts` words it
    "bot.incidents": {"bot.analysis", "bot.config", "bot.enrich", "bot.models", "bot.store"},
    # numbers from the store; writers are handed in, never imported
    "bot.services": {
        "bot.analysis",
        "bot.config",
        "bot.incidents",
        "bot.models",
        "bot.narrative",
        "bot.store",
    },
    "bot.ask": {"bot.models", "bot.services", "bot.store"},  # takes a writer, like services
    # the LLM's writers: never a service, never the render
    "bot.llm": {
        "bot.config",
        "bot.enrich",
        "bot.incidents",  # the write-up's facts, which the model words (`bot.llm.writeup`)
        "bot.models",
        "bot.narrative",
        "bot.store",
    },
    # cards, text, JSON, charts, pages from what the services computed
    "bot.render": {
        "bot.analysis",
        "bot.ask",
        "bot.incidents",
        "bot.models",
        "bot.narrative",
        "bot.services",
    },
    "bot.outbox": {"bot.models", "bot.render", "bot.store"},  # posts payloads, composes nothing
    "bot.posts": {"bot.incidents", "bot.models", "bot.narrative", "bot.outbox", "bot.render"},
    # what the bot produces on its own schedule, Discord-free: digests, the live status message,
    # charts, the status page's data, the ops logs on GitHub
    "bot.outputs": {
        "bot.analysis",
        "bot.config",
        "bot.incidents",
        "bot.models",
        "bot.narrative",
        "bot.outbox",
        "bot.posts",
        "bot.render",
        "bot.services",
        "bot.sources",
        "bot.store",
    },
    # the status server, its guard, and what the bot records for /healthz
    "bot.web": {
        "bot.config",
        "bot.hooks",
        "bot.models",
        "bot.outbox",
        "bot.outputs",
        "bot.render",
        "bot.services",
        "bot.store",
    },
    # a running process: the data flow, the runtime, the loops, the composition root, the demo
    "bot.process": {
        "bot.ask",
        "bot.config",
        "bot.enrich",
        "bot.hooks",
        "bot.incidents",
        "bot.llm",
        "bot.models",
        "bot.narrative",
        "bot.outputs",
        "bot.posts",
        "bot.render",
        "bot.services",
        "bot.sources",
        "bot.store",
    },
    # the Discord edge (with `cogs`): the only importers of discord
    "bot.app": {
        "bot.config",
        "bot.outbox",
        "bot.outputs",
        "bot.process",
        "bot.render",
        "bot.services",
        "bot.store",
        "bot.web",
    },
    "bot.cli": {
        "bot.app",
        "bot.ask",
        "bot.config",
        "bot.hooks",
        "bot.incidents",  # the detectors' registry declares `[runs.alerts]` before it is read
        "bot.models",
        "bot.outputs",
        "bot.posts",  # `incident ID` prints the write-up
        "bot.process",
        "bot.render",
        "bot.services",
        "bot.sources",
        "bot.store",
        "bot.web",
    },
    "bot.__main__": {"bot.cli"},
    "cogs": {
        "bot.app",
        "bot.ask",
        "bot.config",
        "bot.incidents",
        "bot.models",
        "bot.outputs",
        "bot.posts",
        "bot.render",
        "bot.services",
        "bot.sources",
        "bot.store",
    },
}

# Modules inside a part that stay at its bottom: they import nothing of `bot` but FOUNDATION.
BOTTOM = {
    "bot.config.environment",
    "bot.config.runsfile",
    "bot.process.scheduler",
    "bot.web.guard",
}


def test_no_import_cycles() -> None:
    graph = _graph()
    assert [_describe(graph, c) for c in cycles(graph)] == []


def test_no_cycles_between_parts() -> None:
    parts = part_graph(_graph())
    assert [_describe(parts, c) for c in cycles(parts)] == []


def test_every_part_is_on_the_allow_list() -> None:
    parts = part_graph(_graph())
    assert sorted(set(parts) - set(ALLOWED) - FOUNDATION) == []


def test_parts_import_only_what_the_allow_list_names() -> None:
    graph = _graph()
    offenders = sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if part_of(a) != part_of(b)
        if part_of(b) not in FOUNDATION | ALLOWED.get(part_of(a), set())
    )
    assert offenders == []


def test_foundation_parts_import_no_other_part() -> None:
    parts = part_graph(_graph())
    assert {p: sorted(parts[p]) for p in FOUNDATION if parts.get(p)} == {}


def test_bottom_modules_import_only_the_foundation() -> None:
    graph = _graph()
    assert {m: sorted(t for t in graph[m] if part_of(t) not in FOUNDATION) for m in BOTTOM} == {
        m: [] for m in BOTTOM
    }


def test_the_allow_list_itself_has_no_cycle() -> None:
    """So no later edit of `ALLOWED` can permit a cycle between parts."""
    assert cycles(ALLOWED) == []
    assert not FOUNDATION & set(ALLOWED)


def test_bot_never_imports_cogs() -> None:
    assert all("cogs" not in edges for part, edges in ALLOWED.items() if part != "cogs")
    graph = _graph()
    assert [
        f"{a} -> {b}"
        for a, bs in graph.items()
        if part_of(a) != "cogs"
        for b in bs
        if part_of(b) == "cogs"
    ] == []


def test_the_graph_sees_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    """The checker itself: a cycle closed by an import inside a function is found, and so is
    one closed under `if TYPE_CHECKING:`; parts are the subpackages and top-level modules."""
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
    assert graph["bot.c"] == {"bot.d"} and graph["bot.d"] == {"bot.c"}
    assert cycles(graph) == [["bot.a", "bot.sub.b"], ["bot.c", "bot.d"]]
    parts = part_graph(graph)
    assert parts["bot.a"] == {"bot.sub"} and parts["bot.sub"] == {"bot", "bot.a"}
    assert cycles(parts) == [["bot.a", "bot.sub"], ["bot.c", "bot.d"]]
