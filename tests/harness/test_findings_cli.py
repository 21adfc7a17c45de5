"""`ortcheck findings`: every manifest finding listed, filtered by implementation, and docs/findings.md
kept equal to the command's Markdown output."""
import json
from pathlib import Path

import pytest

from ortcheck import cli, impls
from ortcheck.findings import listing, manifest

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "ortcheck" / "impls" / "manifests"
DOC = REPO / "docs" / "findings.md"


def ortcheck(capsys, *args) -> str:
    assert cli.main(["findings", *args]) == 0
    return capsys.readouterr().out


def test_docs_findings_md_is_up_to_date(capsys):
    assert DOC.read_text() == ortcheck(capsys, "--format", "md"), (
        f"docs/findings.md is stale: regenerate it with `{listing.COMMAND}` (from the repository root) and commit it")


def test_json_lists_every_finding_of_every_manifest(capsys):
    listed = json.loads(ortcheck(capsys, "--format", "json"))
    loaded = {path.stem: manifest.load(path) for path in sorted(MANIFESTS.glob("*.toml"))}
    assert set(loaded) <= set(impls.names()), "a manifest no registered implementation reads"
    assert len(listed) == sum(map(len, loaded.values())) > 0
    for name, entries in loaded.items():
        mine = [item for item in listed if item["implementation"] == name]
        assert [(item["tests"], item["reason"], item["reproduction"], item["examples"]) for item in mine] == [
            (list(f.patterns), f.reason, f.reproduction, list(f.examples)) for f in entries]   # manifest order
        assert [item["condition"] for item in mine] == [None if f.condition is None else str(f.condition) for f in entries]
        assert [(item["failure"], item["every_draw"], item["factor"]) for item in mine] == [
            (str(f.failure), f.every_draw, f.factor) for f in entries]
    assert all(set(item) == {"implementation", "tests", "condition", "reason", "failure", "every_draw", "factor",
                             "reproduction", "examples"} for item in listed)
    assert all(item["failure"] for item in listed), "every entry says what its failure looks like"
    assert [item["implementation"] for item in listed] == sorted((item["implementation"] for item in listed),
                                                                 key=impls.names().index)


@pytest.mark.parametrize("args, expected", [
    (["--impl", "bitsandbytes"], {"bitsandbytes"}),
    (["--impl", "bitsandbytes,reference"], {"reference", "bitsandbytes"}),
    (["--impl", "reference", "--impl", "bitsandbytes"], {"reference", "bitsandbytes"}),
    (["--impl", "eager"], {"eager"}),   # torch 2.4.1 without a channel_shuffle derivative
])
def test_impl_filters(capsys, args, expected):
    assert {item["implementation"] for item in json.loads(ortcheck(capsys, "--format", "json", *args))} == expected


def test_impl_filter_keeps_only_those_sections(capsys):
    text = ortcheck(capsys, "--impl", "bitsandbytes,eager")
    assert "## bitsandbytes" in text and "## eager" in text and "## reference" not in text and "## ortmodule" not in text
    assert text.index("## eager") < text.index("## bitsandbytes")   # registry order, not the order asked


@pytest.mark.parametrize("value", ["nope", "reference,nope", ""])
def test_an_unknown_implementation_is_an_error_naming_the_valid_ones(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["findings", "--impl", value])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert ("unknown implementation" in error or not value) and f"valid: {', '.join(impls.names())}" in error


def test_markdown_holds_each_reason_condition_and_reproduction(capsys):
    text = ortcheck(capsys)
    assert text.startswith("# Known findings\n") and listing.COMMAND in text and "do not edit by hand" in text
    assert str(REPO) not in text
    for name in impls.names():
        path = impls.get(name).manifest_path()
        assert f"## {name}\n" in text
        for finding in manifest.load(path):
            assert finding.reason in text
            assert f"- when: {finding.condition or 'always'}" in text
            assert all(line in text for line in finding.reproduction.splitlines())
            assert all(f"`{pattern}`" in text for pattern in finding.patterns)
