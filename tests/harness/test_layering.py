"""The import graph keeps the layers of docs/architecture.md ("Layout"): the reference pipeline stands
alone, strategies only generate values, the contract oracle shares nothing with the reference."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


GRAPH = {_module_name(path): _imports(path) for top in ("ortcheck", "reference") for path in (REPO / top).rglob("*.py")}


def _reachable(start: str) -> set[str]:
    """Every project module ``start`` imports, directly or through other project modules."""
    seen, todo = set(), [start]
    while todo:
        for name in GRAPH.get(todo.pop(), ()):
            if name in GRAPH and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_graph_was_read():
    assert "reference.module.wrapper" in GRAPH and "ortcheck.strategies.nested_io" in GRAPH
    assert "reference.nested_io" in GRAPH["reference.module.wrapper"]


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _under(m, "reference")))
def test_reference_imports_nothing_from_the_harness(module):
    assert not [name for name in GRAPH[module] if _under(name, "ortcheck")]


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _under(m, "ortcheck.strategies")))
def test_strategies_only_generate_values(module):
    forbidden = ("ortcheck.impls", "ortcheck.checks", "ortcheck.stateful", "reference")
    reached = _reachable(module) | {name for name in GRAPH[module] if _under(name, "reference")}
    assert not [name for name in reached if any(_under(name, package) for package in forbidden)]


def test_the_transition_contract_shares_nothing_with_the_reference():
    assert not [name for name in _reachable("ortcheck.stateful.contract") | GRAPH["ortcheck.stateful.contract"]
                if _under(name, "reference")]
