"""The house's rules, read from the code's own imports (issue 28; docs/architecture.md).

Every ``import`` and ``from ... import`` in ``xaytune/``, at module level or inside a
function, is an arrow from its module to the module it names (``from pkg import name``
points at ``pkg.name`` when that is a module, else at ``pkg``). On that graph:

- no import circle between modules;
- no arrow from a room to a higher one (the order is ``ROOMS`` below); the spec's facade
  ``xaytune.core.harness_comparison`` is the one module allowed to point up, and nothing
  inside xaytune may import it;
- a ``_private`` module is imported only from inside the package that holds it;
- no module over 500 lines.

The walk is static (``ast``), so a lazy import inside a function counts like any other.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "xaytune"
MAX_LINES = 500

# Low to high: a room imports only rooms before it (and itself).
ROOMS = (
    "core",
    "comparison",
    "plugins",
    "suites",
    "models",
    "harness",
    "evaluation",
    "report",
    "experiment",
    "audit",
    "release",
    "viewer",
    "app",
    "surface",  # the public concept modules: xaytune.tool, .loop, .scorer, .model, ...
    "entry",  # the ``python -m`` modules: xaytune.verify, .share, .sign, .view, ...
)
ENTRY = frozenset({"__main__", "compare", "console", "share", "sign", "verify", "view"})
# Spec paths kept as re-exports of a higher room: they may point up; nothing imports them.
FACADES = frozenset({"xaytune.core.harness_comparison"})


@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _target(module: str, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    is_package = modules()[module].name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def arrows_of(module: str) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every xaytune import in ``module``."""
    known = modules()
    tree = ast.parse(known[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "xaytune":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, node)
            if target is None or target.split(".")[0] != "xaytune":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                yield (full if full in known else target), node.lineno


@cache
def graph() -> dict[str, frozenset[str]]:
    return {m: frozenset(t for t, _ in arrows_of(m)) for m in modules()}


def room_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "surface"  # the package itself: the version and the lazy ``xaytune.run``
    if parts[1] in ROOMS:
        return parts[1]
    if parts[1] == "conf":
        return "app"
    return "entry" if parts[1] in ENTRY else "surface"


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
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


def test_no_import_circle():
    assert cycles(graph()) == []


def test_no_room_imports_a_higher_one():
    rank = {room: position for position, room in enumerate(ROOMS)}
    upward = [
        f"{module} -> {target}"
        for module, targets in graph().items()
        if module not in FACADES
        for target in targets
        if target in modules() and rank[room_of(target)] > rank[room_of(module)]
    ]
    assert upward == []


def test_the_evidence_room_needs_only_the_spec_of_the_harness_around_it():
    """``xaytune.harness.evidence`` writes and verifies what a run did; it must not reach
    the runner, the loop or the tools (they sit on top of it)."""
    reaching = sorted(
        f"{module} -> {target}"
        for module, targets in graph().items()
        if module.startswith("xaytune.harness.evidence")
        for target in targets
        if target.startswith("xaytune.harness.")
        and not target.startswith(("xaytune.harness.evidence", "xaytune.harness.spec"))
    )
    assert reaching == []


def test_nothing_inside_imports_a_facade():
    users = [f"{m} -> {t}" for m, ts in graph().items() for t in ts if t in FACADES]
    assert users == []


def test_a_private_module_is_imported_only_from_its_own_package():
    reaching = []
    for module in modules():
        for target, line in arrows_of(module):
            parts = target.split(".")
            for position, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:position])
                    if module != owner and not module.startswith(owner + "."):
                        reaching.append(f"{module}:{line} -> {target}")
                    break
    assert reaching == []


def test_no_module_over_500_lines():
    long = {
        module: count
        for module, path in modules().items()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


# -- the rules catch what they are for ---------------------------------------------------


def test_the_circle_finder_finds_a_circle_and_only_a_circle():
    edges = {
        "a": frozenset({"b"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a"}),
        "d": frozenset({"a"}),
    }
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_rooms_are_read_from_the_module_path():
    assert room_of("xaytune.harness.evidence.store") == "harness"
    assert room_of("xaytune.experiment.tree.cache") == "experiment"
    assert room_of("xaytune.verify") == "entry"
    assert room_of("xaytune.tool") == "surface"
    assert room_of("xaytune") == "surface"


def test_a_lazy_import_inside_a_function_is_an_arrow(tmp_path, monkeypatch):
    """The walk reads imports inside functions, relative imports and ``from pkg import mod``."""
    package = tmp_path / "xaytune"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "_hidden.py").write_text("")
    (package / "low" / "deep.py").write_text(
        "def f():\n    from xaytune.app import main\n    from . import _hidden\n"
    )
    (package / "app").mkdir()
    (package / "app" / "__init__.py").write_text("")
    (package / "app" / "main.py").write_text("from xaytune.low import deep\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    modules.cache_clear()
    graph.cache_clear()
    try:
        assert graph()["xaytune.low.deep"] == {"xaytune.app.main", "xaytune.low._hidden"}
        assert cycles(graph()) == [["xaytune.app.main", "xaytune.low.deep"]]
    finally:
        modules.cache_clear()
        graph.cache_clear()


def third_party_imports(module: str) -> Iterator[tuple[str, int]]:
    """(top-level package, line) of every non-xaytune absolute import in ``module``."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0], node.lineno


def test_hydra_is_known_to_the_app_alone():
    """Below app an experiment runs from a plain dict (``xaytune.run``); only audit may read
    a ``.hydra/config.yaml`` it finds in a tree, with omegaconf."""
    allowed = {"hydra": {"app"}, "omegaconf": {"app", "audit"}}
    reaching = [
        f"{module}:{line} imports {package}"
        for module in modules()
        for package, line in third_party_imports(module)
        if package in allowed and room_of(module) not in allowed[package]
    ]
    assert reaching == []
