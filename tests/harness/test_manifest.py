"""Manifests: globs or lists of globs, optional known failing examples, clear errors for the rest."""
import textwrap

import pytest

from ortcheck.manifest import ManifestError, first_match, load


def _write(tmp_path, body):
    path = tmp_path / "impl.toml"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_finding_may_list_several_globs_and_known_failing_examples(tmp_path):
    findings = load(_write(tmp_path, """
        [[finding]]
        test = ["suites/t.py::test_a[[]x-add-*]", "suites/t.py::test_a[[]x-mul-*]"]
        reason = "0-d float64 computed in float32"
        reproduction = "..."
        examples = ["OpCase(op='add')", "OpCase(op='mul')"]
    """))
    finding = first_match(findings, "suites/t.py::test_a[x-mul-float64-scalar]")
    assert finding is not None and finding.examples == ("OpCase(op='add')", "OpCase(op='mul')")
    assert first_match(findings, "suites/t.py::test_a[x-sub-float64-scalar]") is None


@pytest.mark.parametrize("field, message", [
    ('test = []', "test must be a glob or a non-empty list of globs"),
    ('test = 3', "test must be a glob or a non-empty list of globs, got int"),
    ('test = "t"\nexamples = "OpCase()"', "examples must be a list of non-empty strings"),
    ('test = "t"\nexample = ["x"]', "unknown ['example']"),
])
def test_malformed_fields_are_named(tmp_path, field, message):
    path = _write(tmp_path, f'[[finding]]\n{field}\nreason = "r"\nreproduction = "p"\n')
    with pytest.raises(ManifestError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load(path)
