"""No module outside reference/ names a private of it (an ``_name`` reached on something imported from
reference/): the positive controls once patched ``registry._RULES``, ``rewrite._clone``,
``plans._recompute`` and ``recompute._first``, so renaming a private function broke a control and only
the slow pytester tests noticed. Controls go through the seams reference offers (``reference.seams``).
Read statically, like test_layering.py: every file of the checkout but reference/'s own."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFLECTION = ("getattr", "setattr", "delattr", "hasattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _reference_names(tree: ast.AST) -> set[str]:
    """The local names a module binds to reference/ or to something imported from it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names
                         if alias.name.split(".")[0] == "reference")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "reference":
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def privates_named(source: str) -> list[str]:
    """Each place ``source`` names a private of reference/, as ``line: expression``."""
    tree = ast.parse(source)
    names, found = _reference_names(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "reference":
            found += [(node, f"from {node.module} import {a.name}") for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr) and _root(node) in names:
            found.append((node, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in REFLECTION
              and len(node.args) >= 2 and _root(node.args[0]) in names and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _private(node.args[1].value)):
            found.append((node, ast.unparse(node)))
    return [f"{node.lineno}: {text}" for node, text in sorted(found, key=lambda f: (f[0].lineno, f[0].col_offset))]


def test_no_module_outside_reference_names_a_private_of_it():
    found = [f"{path.relative_to(REPO)}:{place}" for path in sorted(REPO.rglob("*.py"))
             if path.relative_to(REPO).parts[0] not in ("reference", ".git", ".tox")
             for place in privates_named(path.read_text())]
    assert not found, "\n".join(found)


def test_the_checker_sees_each_way_of_naming_a_private():
    source = """
import reference.recompute as recompute
from reference.autodiff import registry
from reference.nested_io.schema import Constant
from reference.recompute.rewrite import _clone
import reference

def patch(saved):
    registry._RULES[("", "Where")] = saved
    setattr(recompute, "_first", saved)
    return Constant._key, reference.recompute.plans._recompute, registry.rule_for, Constant.__eq__, other._hidden
"""
    assert privates_named(source) == [
        "5: from reference.recompute.rewrite import _clone", "9: registry._RULES", "10: setattr(recompute, '_first', saved)",
        "11: Constant._key", "11: reference.recompute.plans._recompute"]
