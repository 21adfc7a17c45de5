"""Every arrow of the code keeps the one table of layers, docs/layers.toml: folders use only the folders
the table lets them, modules their own layer and those below, never one above. Read statically from
the sources, so an upward arrow fails here even where it happens not to form a cycle at run time
(``test_imports.py`` catches those by importing each module alone). An arrow is an ``import`` (lazy
ones included), a module loaded by path or by ``importlib`` with a literal name, or a string literal
naming a dotted module of the project (a forkserver preload, a registry entry).

docs/architecture.md's "Layout" is generated from the table: ``python tests/harness/test_layering.py``
rewrites it, and a test fails while they disagree."""
from __future__ import annotations

import ast
import functools
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "layers.toml"
ARCHITECTURE = REPO / "docs" / "architecture.md"
BEGIN, END = "<!-- layout: generated from docs/layers.toml -->", "<!-- end of the generated layout -->"
# Calls that load a module, and which argument names it: by path, or by name.
PATH_LOADERS = {"spec_from_file_location": 1, "SourceFileLoader": 1, "run_path": 0}
NAME_LOADERS = {"import_module": 0, "__import__": 0}
LINE = 110  # characters of the generated layout's lines
HOW = {"import": "imports", "path": "loads by path", "importlib": "imports by name", "string": "names"}


def read_table(path: Path = TABLE) -> dict:
    return tomllib.loads(path.read_text())


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files(root: Path, table: dict) -> dict[str, Path]:
    return {_module_name(path, root): path for folder in table["folder"] for path in (root / folder["name"]).rglob("*.py")}


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _strings(node: ast.AST) -> list[str]:
    """The string literals in ``node``, in source order (``REPO / "suites" / "x.py"``: suites, x.py)."""
    found = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [n.value for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def _called(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _argument(node: ast.Call, index: int) -> ast.AST | None:
    return node.args[index] if len(node.args) > index else None


def arrows(path: Path, root: Path, files: dict[str, Path], by_file: dict[tuple, str] | None = None) -> dict[str, str]:
    """The project modules ``path`` uses, each with how (a key of ``HOW``; an import wins over the rest).
    Relative imports resolved; ``from p import name`` uses ``p.name`` where that is a module, else ``p``.
    ``by_file``: :func:`_by_file` of ``files``, when the caller reads many paths."""
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    by_file = _by_file(root, files) if by_file is None else by_file
    found: dict[str, str] = {}

    def add(name: str, how: str) -> None:
        if name in files and (found.get(name) is None or list(HOW).index(how) < list(HOW).index(found[name])):
            found[name] = how

    tree = ast.parse(path.read_text())
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, "import")
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            for alias in node.names:
                add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in files else module, "import")
        elif isinstance(node, ast.Call) and _called(node) in PATH_LOADERS:
            where = _argument(node, PATH_LOADERS[_called(node)])
            parts = tuple(part for text in (_strings(where) if where else ()) for part in text.split("/") if part)
            for file_parts, name in by_file.items():
                if parts and file_parts[-len(parts):] == parts:
                    add(name, "path")
        elif isinstance(node, ast.Call) and _called(node) in NAME_LOADERS:
            named = _argument(node, NAME_LOADERS[_called(node)])
            if isinstance(named, ast.Constant) and isinstance(named.value, str):
                add(named.value, "importlib")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            name = node.value.split(":")[0]
            if "." in name:
                add(name, "string")
    return found


def _by_file(root: Path, files: dict[str, Path]) -> dict[tuple, str]:
    """A module file's path parts under ``root`` -> its module name."""
    return {file.relative_to(root).parts: name for name, file in files.items()}


def read_graph(root: Path = REPO, table: dict | None = None) -> dict[str, dict[str, str]]:
    """module -> {module it uses: how} for every Python file of the table's folders under ``root``."""
    table = read_table() if table is None else table
    files = module_files(root, table)
    by_file = _by_file(root, files)
    return {name: {t: how for t, how in arrows(path, root, files, by_file).items() if t != name}
            for name, path in files.items()}


def _split(entry: str, table: dict) -> bool:
    """Whether the table lists modules of ``entry`` apart: then the entry places its __init__.py only."""
    entries = [e for folder in table["folder"] for layer in folder.get("layer", []) for e in layer["modules"]]
    return any(other != entry and _under(other, entry) for other in entries)


def layer_of(module: str, table: dict) -> tuple[int, str, bool] | None:
    """(rank from the bottom, the table's entry placing it, whether its layer stands alone), None where
    the table doesn't place it. A folder's own name, and a package some of whose modules the table lists
    apart, place only their __init__.py."""
    for folder in table["folder"]:
        layers = folder.get("layer", [])
        for rank, layer in enumerate(reversed(layers)):
            for entry in layer["modules"]:
                whole = entry != folder["name"] and not _split(entry, table)
                if module == entry or (whole and _under(module, entry)):
                    return rank, entry, layer.get("alone", False)
    return None


def violations(graph: dict[str, dict[str, str] | set[str]], table: dict | None = None) -> list[str]:
    """Every arrow of ``graph`` (module -> modules it uses, with how; a set means imports) that breaks the table."""
    table = read_table() if table is None else table
    folders = {folder["name"]: folder for folder in table["folder"]}
    excepted = {(e["module"], e["how"]) for e in table.get("exception", [])}
    found = []
    for module, targets in sorted(graph.items()):
        top = module.split(".")[0]
        folder = folders.get(top, {})
        uses = targets.items() if isinstance(targets, dict) else ((target, "import") for target in targets)
        for target, how in sorted(uses):
            target_top = target.split(".")[0]
            arrow = f"{module} {HOW[how]} {target}"
            if (module, how) in excepted or target_top not in folders:
                continue
            gate = folder.get("gates", {}).get(target_top)
            if target_top != top and target_top not in folder.get("imports", ()):
                allowed = ", ".join(f"{name}/" for name in folder.get("imports", ())) or "nothing else"
                found.append(f"{arrow}: {top}/ must not use {target_top}/ (it may use {allowed})")
            elif gate and not _under(module, gate):
                found.append(f"{arrow}: only {gate} may use {target_top}/")
            elif target_top == top and folder.get("layer"):
                placed, target_placed = layer_of(module, table), layer_of(target, table)
                if not placed or not target_placed:
                    continue  # unplaced: test_every_module_has_a_layer
                if target_placed[0] > placed[0]:
                    found.append(f"{arrow}: upwards, from layer {placed[1]} to {target_placed[1]}, which is above it")
                elif placed[2] and target_placed[1] != placed[1]:
                    found.append(f"{arrow}: {placed[1]} stands alone and uses nothing else of {top}/")
    return found


def render_layout(table: dict, files: dict[str, Path]) -> str:
    """The code block of docs/architecture.md's "Layout": the table, top down."""
    rows = []
    for folder in table["folder"]:
        uses = ", ".join(f"{name}/" for name in folder["imports"])
        gates = "".join(f"; {name}/ only through {gate.split('.', 1)[1]}/" for name, gate in folder.get("gates", {}).items())
        rows.append((f"{folder['name']}/", f"{folder['what']} (uses {uses or 'nothing else'}{gates})"))
        for layer in folder.get("layer", []):
            names = ", ".join(_shown(entry, table, files) for entry in layer["modules"])
            alone = f"; {'each uses' if len(layer['modules']) > 1 else 'uses'} nothing else of {folder['name']}/"
            rows.append((f"  {names}", layer["what"] + (alone if layer.get("alone") else "")))
    width = max(len(left) for left, _ in rows if len(left) <= 36) + 2
    lines = []
    for left, what in rows:
        lines += [left] if len(left) >= width else []
        wrapped = textwrap.wrap(what, LINE - width) or [""]
        lines += [(left if len(left) < width else "").ljust(width) + wrapped[0], *(" " * width + more for more in wrapped[1:])]
    return "```\n" + "\n".join(lines) + "\n```"


def _shown(entry: str, table: dict, files: dict[str, Path]) -> str:
    """The entry's path under its folder: a package with a slash, one placing its __init__.py only as that."""
    path = "/".join(entry.split(".")[1:])
    if "." not in entry or _split(entry, table):
        return f"{path}/__init__.py".lstrip("/")
    return f"{path}/" if entry in files and files[entry].name == "__init__.py" else f"{path}.py"


def documented_layout(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise AssertionError(f"docs/architecture.md lacks the markers of the generated layout: {BEGIN} ... {END}")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


TABLE_DATA = read_table()
FILES = module_files(REPO, TABLE_DATA)


@functools.cache
def graph() -> dict[str, dict[str, str]]:
    """The checkout's graph, read on first use: every source file parsed (not at collection, in every worker)."""
    return read_graph(REPO, TABLE_DATA)


def test_the_graph_was_read():
    assert "reference.module.wrapper" in graph() and "ortcheck.strategies.nested_io" in graph() and "suites.test_ddp" in graph()
    assert {"reference.nested_io", "reference.module.compiled"} <= set(graph()["reference.module.wrapper"])
    assert "reference.grads" in graph()["reference.module.compiled"]
    assert "reference.runtime.cuts" in graph()["reference.runtime.staged_backward"]   # from-import of a module
    assert "ortcheck.impls.base" in graph()["ortcheck.convergence.runner"]
    assert graph()["ortcheck.impls"]["ortcheck.impls.eager"] == "string"       # the registry's "module:Class"
    assert graph()["ortcheck.impls"]["reference.module.wrapper"] == "string"   # the rank servers' preload


def test_every_module_has_a_layer():
    layered = {folder["name"] for folder in TABLE_DATA["folder"] if folder.get("layer")}
    assert not [name for name in graph() if name.split(".")[0] in layered and layer_of(name, TABLE_DATA) is None]


def test_every_entry_of_the_table_exists():
    entries = [entry for folder in TABLE_DATA["folder"] for layer in folder.get("layer", []) for entry in layer["modules"]]
    assert len(entries) == len(set(entries))
    assert not [entry for entry in entries if entry not in FILES]
    assert not [e["module"] for e in TABLE_DATA.get("exception", []) if e["module"] not in FILES or e["how"] not in HOW]


def test_every_python_folder_is_in_the_table():
    listed = {folder["name"] for folder in TABLE_DATA["folder"]}
    folders = [path for path in REPO.iterdir() if path.is_dir() and not path.name.startswith(".")]
    assert not [path.name for path in folders if path.name not in listed and next(path.rglob("*.py"), None)]


def test_no_arrow_breaks_the_layers():
    found = violations(graph(), TABLE_DATA)
    assert not found, "\n".join(found)


def test_the_transition_contract_shares_nothing_with_the_reference():
    """Stricter than the layers (stateful may reach impls, impls may reach reference): the contract
    predicting the counters must not reach the reference even indirectly."""
    seen, todo = set(), ["ortcheck.stateful.contract"]
    while todo:
        for name in set(graph()[todo.pop()]) - seen:
            seen.add(name)
            todo.append(name)
    assert not [name for name in seen if _under(name, "reference")]


def test_the_architecture_layout_is_the_table():
    expected = render_layout(TABLE_DATA, FILES)
    assert documented_layout(ARCHITECTURE.read_text()) == expected, (
        "docs/architecture.md's layout differs from docs/layers.toml: run `python tests/harness/test_layering.py`")


def test_the_readme_points_to_the_layout_instead_of_copying_it():
    readme = (REPO / "README.md").read_text()
    assert "docs/architecture.md" in readme and "docs/layers.toml" in readme
    packages = [_shown(entry, TABLE_DATA, FILES) for folder in TABLE_DATA["folder"]
                for layer in folder.get("layer", []) for entry in layer["modules"]]
    assert not [line for line in readme.splitlines() if line.startswith("  ") and line.split()[0] in packages]


@pytest.mark.parametrize("module, target", [
    ("reference.runtime.staged_backward", "reference.grads.stages"),           # the grads <-> runtime cycle
    ("ortcheck.checks.ddp", "ortcheck.impls"),                        # an oracle knowing the contract
    ("ortcheck.convergence.data_parallel", "ortcheck.pytest_plugin"),  # `ortcheck golden` loading the plugin
    ("ortcheck.findings.prove", "ortcheck.pytest_plugin"),            # the findings check reading the plugin's constants
    ("ortcheck.findings.manifest", "ortcheck.pytest_plugin.manifests"),  # the product surface, upwards
    ("ortcheck.findings.conditions", "ortcheck.findings.manifest"),
    ("ortcheck.findings.manifest", "ortcheck.findings.listing"),      # a low part of findings/ using a high one
    ("ortcheck.findings", "ortcheck.findings.failures"),             # the package's __init__.py imports nothing
    ("ortcheck.models.hf", "ortcheck.nested"),                        # models/ stands alone
    ("ortcheck.machine", "ortcheck.profiles"),                        # so does each foundation
    ("bench.shrink_time", "suites.test_transitions"),                 # bench reaching into suites/
    ("bench.shrink_time", "tests.harness.conftest"),                  # bench reaching into tests/
    ("ortcheck.impls", "controls.gradients"),                         # the product shipping a broken implementation
    ("ortcheck.strategies.nested_io", "reference.nested_io"),         # a strategy sharing the reference's walk
    ("reference.autodiff.registry", "ortcheck.checks"),               # the reference importing the harness
    ("suites.test_ddp", "reference.module"),                          # a suite going around the contract
])
@pytest.mark.parametrize("how", list(HOW))
def test_arrows_that_broke_the_order_are_caught(module, target, how):
    """Each arrow is judged on its own, as in the whole graph (test_no_arrow_breaks_the_layers): 0.6 s less a case."""
    assert [v for v in violations({module: {target: how}}, TABLE_DATA) if v.startswith(f"{module} {HOW[how]} {target}:")]


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
    assert violations(graph, TABLE_DATA) == [
        "bench.b imports tests.harness: bench/ must not use tests/ (it may use controls/, ortcheck/, reference/)",
        "ortcheck.models.m imports ortcheck.strategies.s: upwards, from layer ortcheck.models to ortcheck.strategies, "
        "which is above it",
        "ortcheck.stateful.s imports reference.transitions: only ortcheck.impls may use reference/",
        "reference.bnb4.q imports ortcheck.models: reference/ must not use ortcheck/ (it may use nothing else)",
        "reference.grads.g imports reference.module.wrapper: upwards, from layer reference.grads to reference.module, "
        "which is above it",
    ]


def test_a_package_listed_in_parts_places_each_part_and_its_init_apart():
    table = {"folder": [{"name": "ortcheck", "imports": [], "layer": [
        {"modules": ["ortcheck.p.high"], "what": ""},
        {"modules": ["ortcheck.mid"], "what": ""},
        {"modules": ["ortcheck.p", "ortcheck.p.low"], "what": "", "alone": True}]}]}
    assert [layer_of(name, table)[:2] for name in ("ortcheck.p.high", "ortcheck.p.low", "ortcheck.p")] == [
        (2, "ortcheck.p.high"), (0, "ortcheck.p.low"), (0, "ortcheck.p")]
    assert layer_of("ortcheck.p.unlisted", table) is None  # each part is listed, or has no layer
    graph = {"ortcheck.p.high": {"ortcheck.mid"}, "ortcheck.mid": {"ortcheck.p.low"},
             "ortcheck.p.low": {"ortcheck.p.high"}, "ortcheck.p": {"ortcheck.p.low"}}
    assert violations(graph, table) == [
        "ortcheck.p imports ortcheck.p.low: ortcheck.p stands alone and uses nothing else of ortcheck/",
        "ortcheck.p.low imports ortcheck.p.high: upwards, from layer ortcheck.p.low to ortcheck.p.high, which is above it",
    ]
    assert [_shown(entry, table, {}) for entry in ("ortcheck.p", "ortcheck.p.low")] == ["p/__init__.py", "p/low.py"]


# A scratch project with the real table: each arrow below goes the wrong way in one of the ways the
# checker reads beyond `import` statements.
SCRATCH = {
    "reference/__init__.py": "",
    "ortcheck/__init__.py": "",
    "ortcheck/nested.py": "",
    "ortcheck/checks/__init__.py": "",
    "ortcheck/impls/__init__.py": "",
    "ortcheck/impls/registry.py": 'ADAPTERS = {"mine": "ortcheck.impls.mine:Mine"}\n',
    "ortcheck/impls/mine.py": "",
    "suites/test_x.py": "",
    "bench/by_path.py": """
        import importlib.util
        from pathlib import Path

        spec = importlib.util.spec_from_file_location("suite", Path(__file__).parents[1] / "suites" / "test_x.py")
    """,
    "bench/by_runpy.py": 'import runpy\nrunpy.run_path("suites/test_x.py")\n',
    "ortcheck/checks/by_importlib.py": 'import importlib\nimpls = importlib.import_module("ortcheck.impls")\n',
    "ortcheck/checks/by_dunder_import.py": '__import__("suites.test_x")\n',
    "ortcheck/checks/preload.py": """
        '''A docstring naming ortcheck.impls is no arrow.'''
        import multiprocessing

        PRELOADED = ["torch", "ortcheck.impls.mine"]
        multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOADED)
    """,
}


@pytest.fixture
def scratch(tmp_path) -> Path:
    for name, text in SCRATCH.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_the_checker_reads_paths_importlib_and_strings(scratch):
    graph = read_graph(scratch, TABLE_DATA)
    assert graph["bench.by_path"] == {"suites.test_x": "path"}
    assert graph["bench.by_runpy"] == {"suites.test_x": "path"}
    assert graph["ortcheck.checks.by_importlib"] == {"ortcheck.impls": "importlib"}
    assert graph["ortcheck.checks.by_dunder_import"] == {"suites.test_x": "importlib"}
    assert graph["ortcheck.checks.preload"] == {"ortcheck.impls.mine": "string"}
    assert graph["ortcheck.impls.registry"] == {"ortcheck.impls.mine": "string"}


def test_the_checker_fails_on_wrong_arrows_not_written_as_imports(scratch):
    assert violations(read_graph(scratch, TABLE_DATA), TABLE_DATA) == [
        "bench.by_path loads by path suites.test_x: bench/ must not use suites/ (it may use controls/, ortcheck/, reference/)",
        "bench.by_runpy loads by path suites.test_x: bench/ must not use suites/ (it may use controls/, ortcheck/, reference/)",
        "ortcheck.checks.by_dunder_import imports by name suites.test_x: ortcheck/ must not use suites/ (it may use reference/)",
        "ortcheck.checks.by_importlib imports by name ortcheck.impls: upwards, from layer ortcheck.checks to "
        "ortcheck.impls, which is above it",
        "ortcheck.checks.preload names ortcheck.impls.mine: upwards, from layer ortcheck.checks to ortcheck.impls, "
        "which is above it",
    ]


def test_an_exception_in_the_table_allows_exactly_its_arrows(scratch):
    table = {**TABLE_DATA, "exception": [{"module": "ortcheck.checks.preload", "how": "string", "why": "shown"}]}
    found = violations(read_graph(scratch, table), table)
    assert not [v for v in found if v.startswith("ortcheck.checks.preload ")]
    assert [v for v in found if v.startswith("ortcheck.checks.by_importlib ")]


def test_the_layout_check_fails_when_docs_and_table_disagree():
    table = read_table()
    table["folder"][-1]["layer"][-1]["what"] = "changed"
    document = f"# x\n\n{BEGIN}\n{render_layout(TABLE_DATA, FILES)}\n{END}\n"
    assert documented_layout(document) == render_layout(TABLE_DATA, FILES)
    assert documented_layout(document) != render_layout(table, FILES)


def write_layout() -> None:
    """Rewrite docs/architecture.md's generated layout from the table."""
    text = ARCHITECTURE.read_text()
    old = documented_layout(text)
    ARCHITECTURE.write_text(text.replace(old, render_layout(TABLE_DATA, FILES), 1))


if __name__ == "__main__":
    write_layout()
    sys.exit(0)
