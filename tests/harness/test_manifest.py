"""Manifests: globs or lists of globs, optional known failing examples, clear errors for the rest."""
import textwrap

import pytest

from ortcheck.machine import Machine
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
    ('test = "t"\nwhen = {}', "when must be a non-empty table of conditions"),
    ('test = "t"\nwhen = { cpu = ["avx2"] }', "when: unknown condition ['cpu']; conditions are ['cpu_capability', "),
    ('test = "t"\nwhen = { cpu_flags = "avx2" }', "cpu_flags must be a non-empty list of names"),
    ('test = "t"\nwhen = { versions = { torch = "2.4" } }', "versions.torch: '2.4' is not a version specifier"),
])
def test_malformed_fields_are_named(tmp_path, field, message):
    path = _write(tmp_path, f'[[finding]]\n{field}\nreason = "r"\nreproduction = "p"\n')
    with pytest.raises(ManifestError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load(path)


AVX512_BF16 = Machine(frozenset({"avx2", "avx512f", "avx512_bf16"}), "AVX512", "cpu")
AVX2_ONLY = Machine(frozenset({"avx2"}), "AVX2", "cpu")


@pytest.mark.parametrize("when, on_avx512, on_avx2", [
    ('{ cpu_flags = ["avx512f", "avx512_bf16"] }', True, False),
    ('{ cpu_flags_absent = ["avx512f"] }', False, True),
    ('{ cpu_capability = ["AVX2", "DEFAULT"] }', False, True),
    ('{ device = ["cuda"] }', False, False),
    ('{ cpu_flags = ["avx2"], device = ["cpu"] }', True, True),
    ('{ versions = { pytest = ">=8" } }', True, True),
    ('{ versions = { pytest = ">=8", no-such-distribution = ">=0" } }', False, False),
])
def test_a_condition_holds_where_every_term_does(tmp_path, when, on_avx512, on_avx2):
    [finding] = load(_write(tmp_path, f'[[finding]]\ntest = "t"\nreason = "r"\nreproduction = "p"\nwhen = {when}\n'))
    assert (finding.active_on(AVX512_BF16), finding.active_on(AVX2_ONLY)) == (on_avx512, on_avx2)
    assert "(where: " in finding.label


def test_a_finding_without_condition_holds_everywhere_and_reads_as_its_reason(tmp_path):
    [finding] = load(_write(tmp_path, '[[finding]]\ntest = "t"\nreason = "r"\nreproduction = "p"\n'))
    assert finding.active_on(AVX2_ONLY) and finding.label == "r"
