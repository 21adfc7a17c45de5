"""docs/opinfo.md states what the manifests enforce on this torch, and the table counts every op once."""
from pathlib import Path

import torch

from ortcheck.report import opinfo_coverage
from ortcheck.strategies import opinfo

DOC = Path(__file__).resolve().parents[2] / "docs" / "opinfo.md"


def test_the_section_of_this_torch_is_current():
    names = ["reference", "eager"] if torch.__version__.startswith("2.13") else ["ortmodule", "eager"]
    assert opinfo_coverage.section(names) in DOC.read_text(), (
        f"docs/opinfo.md is stale: regenerate its torch {torch.__version__} section with "
        f"python -m ortcheck.report.opinfo_coverage --impl {','.join(names)}")


def test_every_in_scope_op_has_exactly_one_status():
    statuses = opinfo_coverage.statuses("reference")
    assert set(statuses) == set(opinfo.ids()) | set(opinfo.EXCLUDED)
    assert set(statuses.values()) <= set(opinfo_coverage.KINDS)


def test_a_finding_counts_by_its_reasons_opening_words():
    from ortcheck.findings.manifest import Finding

    def kind(reason):
        return opinfo_coverage.kind(Finding("t", reason, "r", "s"))

    assert [kind("SILENTLY WRONG: x"), kind("CRASH: x"), kind("refused at export"), kind("LOUD: x")] == [
        "silently wrong", "crash", "refused by name", "failing loudly"]
    assert opinfo_coverage.kind(None) == "passing"
