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


# Parts with no imports of their own that any part may use: errors, time, hashing, the one
# sanitiser of untrusted text, Discord's limits, logging set-up, the loop supervisor, the heap's
# freeze, how numbers read to people, the package's version, the one codec of stored JSON.
FOUNDATION = {
    "bot",
    "bot.errors",
    "bot.hashing",
    "bot.heap",
    "bot.jsoncodec",
    "bot.limits",
    "bot.logs",
    "bot.loops",
    "bot.mentions",
    "bot.numbers",
    "bot.timeutil",
}

# Which part may import which (besides FOUNDATION), lowest first. Read a row as "may use".
ALLOWED: dict[str, set[str]] = {
    "bot.environment": set(),
    "bot.flight": set(),
    "bot.runsfile": set(),  # the runs file's shape
    "bot.settings": {"bot.runsfile"},
    "bot.models": {"bot.runsfile"},  # domain dataclasses
    "bot.analysis": {"bot.models", "bot.runsfile"},  # progress, ETA, forecasts: pure
    "bot.narrative": {"bot.enrich", "bot.models"},  # facts, templates, formatting: pure
    "bot.enrich": {"bot.models"},  # the rules: pure
    "bot.store": {"bot.analysis", "bot.models", "bot.runsfile"},  # repositories
    "bot.sources": {
        "bot.analysis",
        "bot.enrich",
        "bot.models",
        "bot.runsfile",
        "bot.settings",
        "bot.store",
    },
    "bot.pipeline": {"bot.enrich", "bot.models", "bot.settings", "bot.sources", "bot.store"},
    # pushes (webhooks, Alertmanager) read into the sources' own shapes
    "bot.hooks": {"bot.models", "bot.runsfile", "bot.settings", "bot.sources", "bot.store"},
    # the incident domain says what happened; `bot.posts` words it
    "bot.incidents": {"bot.analysis", "bot.enrich", "bot.models", "bot.runsfile", "bot.store"},
    # numbers from the store; writers are handed in, never imported
    "bot.services": {
        "bot.analysis",
        "bot.delivery",  # whether the gateway is connected, for the card's Discord freshness
        "bot.incidents",
        "bot.models",
        "bot.narrative",
        "bot.runsfile",
        "bot.store",
    },
    "bot.ask": {"bot.models", "bot.services", "bot.store"},  # takes a writer, like services
    # the LLM's writers: never a service, never the render
    "bot.llm": {
        "bot.enrich",
        "bot.incidents",  # the write-up's facts, which the model words (`bot.llm.writeup`)
        "bot.models",
        "bot.narrative",
        "bot.settings",
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
    "bot.delivery": {"bot.store"},  # whether posts can reach Discord, for /healthz
    "bot.posts": {"bot.incidents", "bot.models", "bot.narrative", "bot.outbox", "bot.render"},
    "bot.digests": {
        "bot.models",
        "bot.narrative",
        "bot.outbox",
        "bot.render",
        "bot.runsfile",
        "bot.services",
        "bot.store",
    },
    # the live status message: when each run's is updated and with what (`status_card`)
    "bot.live": {
        "bot.models",
        "bot.outbox",
        "bot.render",
        "bot.runsfile",
        "bot.services",
        "bot.store",
    },
    "bot.statuspage": {
        "bot.analysis",
        "bot.delivery",
        "bot.models",  # the sources' registration: which a run uses
        "bot.narrative",
        "bot.render",
        "bot.services",
        "bot.store",
    },
    # write-ups as comments on the runs' ops-log issues (GitHub), after detection
    "bot.opslog": {"bot.incidents", "bot.posts", "bot.sources", "bot.store"},
    "bot.webguard": set(),  # the status server's connection cap and timeouts
    "bot.web": {"bot.hooks", "bot.render", "bot.statuspage", "bot.store", "bot.webguard"},
    "bot.runtime": {
        "bot.ask",
        "bot.digests",
        "bot.hooks",
        "bot.incidents",  # the recently resolved incidents whose write-up the model writes
        "bot.llm",
        "bot.models",
        "bot.pipeline",
        "bot.services",
        "bot.settings",
        "bot.sources",
        "bot.store",
    },
    # the composition root: builds every piece and binds the writers
    "bot.wiring": {
        "bot.ask",
        "bot.posts",
        "bot.digests",
        "bot.incidents",
        "bot.llm",
        "bot.models",
        "bot.narrative",
        "bot.opslog",
        "bot.pipeline",
        "bot.runtime",
        "bot.services",
        "bot.settings",
        "bot.sources",
        "bot.store",
    },
    "bot.demo": {
        "bot.models",
        "bot.pipeline",
        "bot.runtime",
        "bot.settings",
        "bot.sources",
        "bot.store",
    },
    # the bot's services, Discord-free: loops kept alive, their bodies, charts, /healthz records
    "bot.scheduler": set(),
    "bot.rounds": {
        "bot.digests",
        "bot.pipeline",
        "bot.render",
        "bot.runsfile",
        "bot.scheduler",
        "bot.settings",
        "bot.store",
    },
    "bot.charting": {"bot.render", "bot.runsfile", "bot.services", "bot.store"},
    "bot.health": {"bot.delivery", "bot.models", "bot.outbox", "bot.runsfile", "bot.store"},
    # the Discord edge (with `cogs`): the only importers of discord
    "bot.app": {
        "bot.charting",
        "bot.digests",
        "bot.flight",
        "bot.health",
        "bot.live",
        "bot.outbox",
        "bot.pipeline",
        "bot.render",
        "bot.rounds",
        "bot.runtime",
        "bot.scheduler",
        "bot.services",
        "bot.settings",
        "bot.store",
    },
    "bot.cli": {
        "bot.app",
        "bot.ask",
        "bot.demo",
        "bot.digests",
        "bot.environment",
        "bot.hooks",
        "bot.incidents",  # the detectors' registry declares `[runs.alerts]` before it is read
        "bot.models",
        "bot.pipeline",
        "bot.posts",  # `incident ID` prints the write-up
        "bot.render",
        "bot.runsfile",
        "bot.runtime",
        "bot.services",
        "bot.settings",
        "bot.sources",
        "bot.statuspage",
        "bot.store",
        "bot.web",
        "bot.wiring",
    },
    "bot.__main__": {"bot.cli"},
    "cogs": {
        "bot.app",
        "bot.ask",
        "bot.posts",
        "bot.digests",
        "bot.incidents",
        "bot.models",
        "bot.render",
        "bot.services",
        "bot.settings",
        "bot.sources",
        "bot.store",
    },
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
