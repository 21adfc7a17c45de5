"""The import graph keeps the layers of docs/architecture.md ("Layout"): every import points down or
sideways, never up. Read statically from the sources (every ``import``, lazy ones included), so an
upward arrow fails here even where it happens not to form a cycle at run time
(``test_imports.py`` catches those by importing each module alone)."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOPS = ("ortcheck", "reference", "suites", "tests", "bench", "controls")

# Layers, lowest first; a module imports its own layer and those below. A package's modules share its layer.
ORTCHECK_LAYERS = (
    ("ortcheck.nested", "ortcheck.machine"),
    ("ortcheck.models",),
    ("ortcheck.strategies",),
    ("ortcheck.checks",),
    ("ortcheck.impls",),
    ("ortcheck.stateful",),
    ("ortcheck.convergence",),
    ("ortcheck.usercheck",),
    ("ortcheck.cli", "ortcheck.run", "ortcheck.golden_cli", "ortcheck.pytest_plugin", "ortcheck.report",
     "ortcheck.delivery_modes", "ortcheck.profiles", "ortcheck.manifest", "ortcheck.conditions",
     "ortcheck.envsetup", "ortcheck.heap", "ortcheck.fpenv", "ortcheck.threadbudget", "ortcheck.seed",
     "ortcheck.timebound", "ortcheck.watchdog", "ortcheck.failures", "ortcheck"),
)
# The pipeline's stages in import order: pipeline order, except that the bnb4 codec sits below
# autodiff, whose MatMulBnb4 rule reads its code book.
REFERENCE_LAYERS = (
    ("reference.nested_io", "reference.seams"), ("reference.transitions",), ("reference.export",), ("reference.bnb4",),
    ("reference.autodiff",), ("reference.recompute",), ("reference.runtime",), ("reference.grads",),
    ("reference.module", "reference.options"), ("reference",),
)
# Among the top-level folders (all above ortcheck and reference): which must not import which.
FORBIDDEN = {
    "ortcheck": {"suites", "tests", "bench", "controls"},
    "reference": {"ortcheck", "suites", "tests", "bench", "controls"},   # standalone
    "suites": {"tests", "bench", "reference", "controls"},   # reach an implementation only through the contract
    "controls": {"suites", "tests", "bench"},                # positive controls: implementations, beside the product
    "bench": {"tests", "suites"},
    "tests": {"bench"},
}
REFERENCE_GATE = "ortcheck.impls"  # the one ortcheck layer that may import reference/: its adapter


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {_module_name(path): path for top in TOPS for path in (REPO / top).rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """The project modules ``path`` imports (relative imports resolved; ``from p import name`` is an
    import of ``p.name`` where that is a module, else of ``p``)."""
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
            found.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in FILES else module for alias in node.names)
    return {name for name in found if name in FILES}


GRAPH = {name: _imports(path) for name, path in FILES.items()}


def layer_of(module: str) -> tuple[str, int] | None:
    """(family, rank) of a module of ortcheck/ or reference/ (a package root only by its exact name),
    None where the tables don't place it."""
    for family, layers in (("ortcheck", ORTCHECK_LAYERS), ("reference", REFERENCE_LAYERS)):
        for rank, prefixes in enumerate(layers):
            if any(module == prefix or (prefix not in TOPS and _under(module, prefix)) for prefix in prefixes):
                return family, rank
    return None


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import in ``graph`` (module -> modules it imports) that breaks the layering."""
    found = []
    for module, targets in sorted(graph.items()):
        top = module.split(".")[0]
        for target in sorted(targets):
            target_top = target.split(".")[0]
            if target_top in FORBIDDEN.get(top, ()):
                found.append(f"{module} imports {target}: {top}/ must not import {target_top}/")
            elif top == "ortcheck" and target_top == "reference" and not _under(module, REFERENCE_GATE):
                found.append(f"{module} imports {target}: only {REFERENCE_GATE} may import reference/")
            elif top == target_top and top in ("ortcheck", "reference"):
                placed, target_placed = layer_of(module), layer_of(target)  # unplaced: test_every_module_has_a_layer
                if placed and target_placed and target_placed[1] > placed[1]:
                    found.append(f"{module} imports {target}: upwards, layer {target_placed[1]} above {placed[1]}")
    return found


def test_the_graph_was_read():
    assert "reference.module.wrapper" in GRAPH and "ortcheck.strategies.nested_io" in GRAPH and "suites.test_ddp" in GRAPH
    assert {"reference.nested_io", "reference.module.compiled"} <= GRAPH["reference.module.wrapper"]
    assert "reference.grads" in GRAPH["reference.module.compiled"]
    assert "reference.runtime.stages" in GRAPH["reference.runtime.staged"]   # from-import of a module
    assert "ortcheck.impls.base" in GRAPH["ortcheck.convergence.runner"]


def test_every_module_has_a_layer():
    assert not [name for name in GRAPH if name.split(".")[0] in ("ortcheck", "reference") and layer_of(name) is None]


def test_no_import_breaks_the_layers():
    found = violations(GRAPH)
    assert not found, "\n".join(found)


def test_the_transition_contract_shares_nothing_with_the_reference():
    """Stricter than the layers (stateful may reach impls, impls may reach reference): the contract
    predicting the counters must not reach the reference even indirectly."""
    seen, todo = set(), ["ortcheck.stateful.contract"]
    while todo:
        for name in GRAPH[todo.pop()] - seen:
            seen.add(name)
            todo.append(name)
    assert not [name for name in seen if _under(name, "reference")]


@pytest.mark.parametrize("module, target", [
    ("reference.runtime.staged", "reference.grads.stages"),           # the grads <-> runtime cycle
    ("ortcheck.checks.ddp", "ortcheck.impls"),                        # an oracle knowing the contract
    ("ortcheck.convergence.data_parallel", "ortcheck.pytest_plugin"),  # `ortcheck golden` loading the plugin
    ("bench.shrink_time", "tests.harness.mutants"),                   # bench reaching into tests/
    ("ortcheck.impls", "controls.gradients"),                         # the product shipping a broken implementation
    ("ortcheck.strategies.nested_io", "reference.nested_io"),         # a strategy sharing the reference's walk
    ("reference.autodiff.registry", "ortcheck.checks"),               # the reference importing the harness
    ("suites.test_ddp", "reference.module"),                          # a suite going around the contract
])
def test_arrows_that_broke_the_order_are_caught(module, target):
    graph = {**GRAPH, module: GRAPH.get(module, set()) | {target}}
    assert [v for v in violations(graph) if v.startswith(f"{module} imports {target}:")]


def test_the_checker_on_a_hand_built_graph():
    graph = {
        "ortcheck.checks.a": {"ortcheck.nested", "ortcheck.checks.b", "ortcheck.strategies"},  # down, sideways
        "ortcheck.models.m": {"ortcheck.strategies.s"},                                        # up
        "ortcheck.impls.i": {"reference.module"},                                              # the gate
        "ortcheck.stateful.s": {"reference.transitions"},                                      # past the gate
        "reference.grads.g": {"reference.runtime", "reference.module.wrapper"},                # down, up
        "reference.bnb4.q": {"ortcheck.models"},                                               # leaves reference
        "bench.b": {"ortcheck.impls", "tests.harness"},
        "tests.t": {"reference.grads", "ortcheck.cli", "suites.s"},
    }
    assert violations(graph) == [
        "bench.b imports tests.harness: bench/ must not import tests/",
        "ortcheck.models.m imports ortcheck.strategies.s: upwards, layer 2 above 1",
        "ortcheck.stateful.s imports reference.transitions: only ortcheck.impls may import reference/",
        "reference.bnb4.q imports ortcheck.models: reference/ must not import ortcheck/",
        "reference.grads.g imports reference.module.wrapper: upwards, layer 8 above 7",
    ]
