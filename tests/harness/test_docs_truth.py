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


SUITE_LISTS = {  # file -> the block generated in it, one line per suite
    "README.md": lambda name, summary, checks: f"- `{name}`: {summary}",
    "docs/suites.md": lambda name, summary, checks: f"| `suites/{name}.py` | {checks} |",
}
_HEADERS = {"README.md": "", "docs/suites.md": "| suite | property |\n|---|---|\n"}
_BEGIN = "<!-- suites: generated from each suite's docstring by `python tests/harness/test_docs_truth.py` -->\n"
_END = "<!-- /suites -->"


def suite_declarations() -> list[tuple[str, str, str | None]]:
    """(suite, property, checks) per suite: its docstring's first paragraph states the property, the
    paragraph starting "Checks:" what it draws and judges. The suite is the one place both are written."""
    import ast

    found = []
    for path in sorted((REPO / "suites").glob("test_*.py")):
        paragraphs = [" ".join(p.split()) for p in (ast.get_docstring(ast.parse(path.read_text())) or "").split("\n\n")]
        checks = next((p.removeprefix("Checks: ") for p in paragraphs if p.startswith("Checks: ")), None)
        found.append((path.stem, paragraphs[0].removeprefix("Property: ").replace("``", "`"), checks))
    return found


def with_suite_list(file: str) -> str:
    """``file`` with its generated block rewritten from the suites' docstrings."""
    text = (REPO / file).read_text()
    before, _, rest = text.partition(_BEGIN)
    _, _, after = rest.partition(_END)
    lines = [SUITE_LISTS[file](*declared) for declared in suite_declarations()]
    return before + _BEGIN + _HEADERS[file] + "\n".join(lines) + "\n" + _END + after


def test_every_suite_states_its_property_and_what_it_checks():
    """A new suite cannot land without both paragraphs; README and docs/suites.md list it from them."""
    vague = [name for name, summary, checks in suite_declarations() if not summary or not checks]
    assert not vague, f"suites whose docstring lacks a property line or a 'Checks:' paragraph: {vague}"


@pytest.mark.parametrize("file", SUITE_LISTS)
def test_the_suite_lists_are_generated_from_the_suites(file):
    text = (REPO / file).read_text()
    assert _BEGIN in text and _END in text, f"{file}: the generated suite list's markers are missing"
    assert text == with_suite_list(file), f"{file} is stale: run python tests/harness/test_docs_truth.py"


def test_the_architecture_table_lists_exactly_the_implementations_that_ship():
    from ortcheck import impls

    shipped = [name for name in impls.names() if type(impls.get(name)).__module__.startswith("ortcheck.impls.")]
    text = (REPO / "docs" / "architecture.md").read_text()
    table = text[text.index("The implementations that ship"):].split("\n\n")[1]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == shipped


if __name__ == "__main__":
    for name in SUITE_LISTS:
        (REPO / name).write_text(with_suite_list(name))
