"""Manifests: globs or lists of globs, optional known failing examples, clear errors for the rest."""
import dataclasses
import re
import textwrap
from pathlib import Path

import pytest

from ortcheck.machine import Machine
from ortcheck.findings.manifest import ManifestError, first_match, load


def _write(tmp_path, body):
    path = tmp_path / "impl.toml"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_finding_may_list_several_globs_and_known_failing_examples(tmp_path):
    findings = load(_write(tmp_path, """
        [[finding]]
        test = ["suites/t.py::test_a[[]x-add-*]", "suites/t.py::test_a[[]x-mul-*]"]
        reason = "0-d float64 computed in float32"
        raises = "AssertionError"
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
    ('test = "t"\nraises = []', "say what the failure looks like: raises"),
    ('test = "t"\nraises = 3', "raises must be an exception class name or a list of them"),
    ('test = "t"\nmatch = "error ("', "match is not a regular expression"),
    ('test = "t"\nraises = "E"\nevery_draw = 1', "every_draw must be true or false"),
    ('test = "t"\nraises = "E"\nfactor = -2', "factor must be a positive number"),
])
def test_malformed_fields_are_named(tmp_path, field, message):
    path = _write(tmp_path, f'[[finding]]\n{field}\nreason = "r"\nreproduction = "p"\n' +
                  ('' if "raises" in field or "match" in field else 'raises = "E"\n'))
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
    [finding] = load(_write(tmp_path, f'[[finding]]\ntest = "t"\nreason = "r"\nreproduction = "p"\nraises = "E"\nwhen = {when}\n'))
    assert (finding.active_on(AVX512_BF16), finding.active_on(AVX2_ONLY)) == (on_avx512, on_avx2)
    assert "(where: " in finding.label


def test_a_profile_condition_holds_only_under_the_profiles_it_names(tmp_path):
    """A finding only the nightly profile's deeper draws reach is inactive at ci depth (the test must
    pass there), active under nightly."""
    [finding] = load(_write(tmp_path, '[[finding]]\ntest = "t"\nreason = "r"\nreproduction = "p"\nraises = "E"\n'
                                      'when = { profiles = ["nightly"] }\n'))
    assert [finding.active_on(dataclasses.replace(AVX2_ONLY, profile=p)) for p in ("dev", "ci", "nightly", None)] == [
        False, False, True, False]
    assert "hypothesis profile nightly" in finding.label


def test_a_finding_without_condition_holds_everywhere_and_reads_as_its_reason(tmp_path):
    [finding] = load(_write(tmp_path, '[[finding]]\ntest = "t"\nreason = "r"\nreproduction = "p"\nraises = "E"\n'))
    assert finding.active_on(AVX2_ONLY) and finding.label == "r"


MANIFESTS = sorted((Path(__file__).resolve().parents[2] / "ortcheck" / "impls" / "manifests").glob("*.toml"))
CPU_TERMS = {"cpu_flags", "cpu_flags_absent", "cpu_capability"}


def _on(machine: Machine, device: str) -> Machine:
    return dataclasses.replace(machine, device=device)


def test_a_cpu_flag_finding_never_matches_a_cuda_run():
    """The H200 host has avx512f too: bitsandbytes' CPU-kernel finding once passed a cuda failure of
    another cause off as expected (the first H200 run, docs/gpu.md)."""
    findings = load(MANIFESTS[[p.stem for p in MANIFESTS].index("bitsandbytes")])
    flagged = [f for f in findings if f.condition and "cpu_flags" in dict(f.condition.terms)]
    assert flagged, "the bitsandbytes manifest has no CPU-flag finding left to check"
    assert all(f.active_on(_on(AVX512_BF16, "cpu")) for f in flagged)
    assert not any(f.active_on(_on(AVX512_BF16, "cuda")) for f in flagged)


@pytest.mark.parametrize("path", MANIFESTS, ids=[p.stem for p in MANIFESTS])
def test_every_cpu_kernel_finding_holds_only_on_the_cpu_device(path):
    """A finding about a CPU kernel or CPU flag (its condition names CPU features, or its reason says
    CPU) says nothing about a cuda run, where the test must pass or fail for a cause of its own."""
    for finding in load(path):
        terms = dict(finding.condition.terms) if finding.condition else {}
        if CPU_TERMS & set(terms) or re.search(r"\bCPU\b", finding.reason):
            assert terms.get("device") == ("cpu",), f"{finding.source}: a CPU finding without when.device = [\"cpu\"]"
