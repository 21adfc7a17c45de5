"""What users copy from the README and docs/ is checked against the code: the names and call
signatures it quotes exist, the manifest example parses, and no text points outside the repository
or at the project's issue numbers (a reader of the repository has neither)."""
import importlib
import inspect
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
_NOT_OURS = {".git", ".tox", ".venv", "venv", "node_modules", ".gpu-stage", "build", "dist", "site-packages", "report"}
_TEXT_FILES = [p for pattern in ("*.md", "*.py", "*.toml", "*.ini", "*.cfg", ".ci/*") for p in REPO.glob(f"**/{pattern}")
               if not _NOT_OURS & set(p.relative_to(REPO).parts)]


def _resolve(dotted: str):
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            value = getattr(value, attribute)
        return value
    raise ImportError(dotted)


@pytest.mark.parametrize("dotted", sorted(set(re.findall(r"`((?:ortcheck|reference)\.[A-Za-z_][\w.]*)", README))))
def test_every_module_and_name_the_readme_quotes_exists(dotted):
    _resolve(dotted.rstrip("."))


def test_the_calls_the_readme_quotes_have_the_signatures_it_shows():
    import ortcheck.checks as checks
    import ortcheck.profiles as profiles

    quoted = re.findall(r"`(?:[\w.]+\.)?(\w+)\(([\w, ]*)\)`", README)
    checked = 0
    for name, arguments in quoted:
        function = getattr(checks, name, None) or getattr(profiles, name, None)
        if not callable(function) or not arguments:
            continue
        names = [a.strip() for a in arguments.split(",")]
        parameters = list(inspect.signature(function).parameters)
        assert parameters[:len(names)] == names or len(names) == 1 and len(parameters) >= 1, (name, names, parameters)
        checked += 1
    assert checked >= 2, quoted


def test_the_manifest_example_in_docs_parses(tmp_path):
    from ortcheck.findings.manifest import load

    text = (REPO / "docs" / "plugin.md").read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "mine.toml").write_text(example)
    (finding,) = load(tmp_path / "mine.toml")
    assert finding.reason


def test_no_text_points_outside_the_repository_or_at_issue_numbers():
    outside, issues = [], []
    for path in _TEXT_FILES:
        if path.name == Path(__file__).name:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            where = f"{path.relative_to(REPO)}:{number}"
            if "../shared" in line:
                outside.append(where)
            if re.search(r"\b[Ii]ssue #?\d+|\(#\d{2,}\)", line):
                issues.append(where)
    assert not outside, f"paths outside the repository: {outside}"
    assert not issues, f"issue numbers (say what it is about instead): {issues}"


def test_every_suite_is_listed_in_the_readme_and_docs_suites_and_says_its_property():
    """A new suite cannot land without its line in both lists and a docstring stating its property;
    a removed one cannot stay listed."""
    import ast

    on_disk = {path.stem for path in (REPO / "suites").glob("test_*.py")}
    table = set(re.findall(r"^\| `suites/(test_\w+)\.py` \|", (REPO / "docs" / "suites.md").read_text(), re.M))
    in_readme = set(re.findall(r"`(test_\w+)`", README)) & (on_disk | table)
    assert table == on_disk, f"docs/suites.md: missing {sorted(on_disk - table)}, stale {sorted(table - on_disk)}"
    assert in_readme == on_disk, f"README: missing {sorted(on_disk - in_readme)}"
    silent = [name for name in sorted(on_disk)
              if not ast.get_docstring(ast.parse((REPO / "suites" / f"{name}.py").read_text()))]
    assert not silent, f"suites without a docstring stating their property: {silent}"
