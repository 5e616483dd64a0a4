"""The import graph: no cycles, and data flows one way (docs/architecture.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(module: str, path: Path, *, lazily: bool = True) -> Iterator[str]:
    """Every module `module` imports, at any depth of its code (with `lazily` false,
    only what it imports when it is loaded: its top level)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree) if lazily else tree.body:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def graph(package: str) -> dict[str, set[str]]:
    mods = modules(package)
    return {m: {t for t in imported(m, p) if t in mods and t != m} for m, p in mods.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    return next((c for n in sorted(edges) if n not in state and (c := visit(n))), None)


@pytest.mark.parametrize("package", ["daemon", "relaytui"])
def test_no_import_cycles(package: str) -> None:
    assert cycle(graph(package)) is None


def test_the_tui_never_imports_the_daemon() -> None:
    for module, path in modules("relaytui").items():
        assert not [t for t in imported(module, path) if t.split(".")[0] == "daemon"], module


# Modules that show things with Textual; the rest of relaytui reads, parses and watches.
UI = ("textual", "relaytui.app", "relaytui.commands", "relaytui.keys", "relaytui.messages",
      "relaytui.screens", "relaytui.widgets")


def is_ui(module: str) -> bool:
    return any(module == ui or module.startswith(ui + ".") for ui in UI)


def test_what_is_not_ui_imports_no_textual() -> None:
    """Not even through a screen or a widget: the scripting CLI shares these modules
    with the TUI and must load no Textual. A function may import the UI when it runs
    (`relay` with no command opens the TUI)."""
    for module, path in modules("relaytui").items():
        if not is_ui(module):
            ui = [t for t in imported(module, path, lazily=False) if is_ui(t)]
            assert not ui, f"{module} imports {ui}"


@pytest.mark.parametrize(("layer", "never"), [
    ("daemon.domain", ("store", "dialects", "actors", "api", "upstream", "outbound",
                       "executors", "runtime")),
    ("daemon.store", ("dialects", "actors", "api", "upstream", "outbound", "executors")),
    ("daemon.dialects", ("actors", "api", "upstream", "executors", "runtime")),
    ("daemon.actors", ("api", "runtime")),
])
def test_data_flows_one_way(layer: str, never: tuple[str, ...]) -> None:
    edges = graph("daemon")
    for module in (m for m in edges if m == layer or m.startswith(layer + ".")):
        wrong = {t for t in edges[module] if t.split(".")[1] in never}
        assert not wrong, f"{module} imports {sorted(wrong)}"


def test_only_the_wiring_imports_the_api() -> None:
    users = {m for m, targets in graph("daemon").items()
             if any(t.startswith("daemon.api") for t in targets) and not m.startswith("daemon.api")}
    assert users == {"daemon.runtime"}


def test_the_cycle_finder_finds_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
