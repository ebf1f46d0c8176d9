"""The layer order of docs/architecture.md holds: every import in ``sidecar/`` points down, no circles.

Imports under ``if TYPE_CHECKING:`` and inside functions count like any other: a lower layer that names
a higher one, even only for the type checker, is what this test exists to refuse.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "sidecar"


def layer_table() -> list[list[str]]:
    text = (REPO / "docs" / "architecture.md").read_text()
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md must hold the layer table in a ```layers block"
    return [line.split() for line in block.group(1).strip().splitlines()]


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every ``sidecar`` module this module imports, resolved to a module of the package."""

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            if target == "sidecar" or target.startswith("sidecar."):
                resolved = resolve(target)
                if resolved and resolved != name and resolved != "sidecar":
                    out.add(resolved)
    return out


def rank_of(module: str, table: list[list[str]]) -> tuple[int, str]:
    best: tuple[int, str] | None = None
    for rank, line in enumerate(table):
        for package in line:
            if (module == package or module.startswith(package + ".")) and (
                    best is None or len(package) > len(best[1])):
                best = (rank, package)
    assert best is not None, f"{module} is in no layer of docs/architecture.md"
    return best


def test_every_module_has_a_layer() -> None:
    table = layer_table()
    for module in modules():
        if module != "sidecar":
            rank_of(module, table)


def test_every_import_points_down() -> None:
    table = layer_table()
    known = modules()
    upward: list[str] = []
    for module, path in sorted(known.items()):
        if module == "sidecar":
            continue
        rank, package = rank_of(module, table)
        for target in sorted(imports_of(module, path, known)):
            target_rank, target_package = rank_of(target, table)
            if target_package == package:
                continue
            if target_rank >= rank:
                upward.append(f"{module} (layer {rank}) imports {target} (layer {target_rank})")
    assert upward == [], "imports that do not point down:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    known = modules()
    graph = {m: imports_of(m, p, known) for m, p in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
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
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert circles == [], f"import circles: {circles}"


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a lower module naming a higher one under TYPE_CHECKING is found."""
    fake = tmp_path / "m.py"
    fake.write_text("from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from sidecar.agent.loop import AgentLoop\n")
    known = modules()
    assert imports_of("sidecar.workspace.fake", fake, known) == {"sidecar.agent.loop"}
    table = layer_table()
    assert rank_of("sidecar.agent.loop", table)[0] > rank_of("sidecar.workspace.fake", table)[0]


def test_layer_table_lists_each_package_once() -> None:
    seen: defaultdict[str, int] = defaultdict(int)
    for line in layer_table():
        for package in line:
            seen[package] += 1
    assert [p for p, n in seen.items() if n > 1] == []
