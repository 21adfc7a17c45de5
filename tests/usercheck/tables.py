"""What a zoo test expects of ``ortcheck check``: per check, a status and a pattern its detail
matches; everything passes (n/a for recompute in eager) except where a recorded finding says
otherwise. ``findings`` rows: (a test id the implementation's manifest entry covers, the detail
pattern, the models, the checks)."""
import re

from ortcheck.findings import manifest
from ortcheck.usercheck.checks import CHECKS
from ortcheck.usercheck.result import FAIL, NA, PASS

Row = tuple[str, str, tuple[str, ...], tuple[str, ...]]


def expected(impl_name: str, model: str, findings: dict[str, list[Row]]) -> dict[str, tuple[str, str]]:
    table = {check: (PASS, "") for check in CHECKS}
    if impl_name == "eager":
        table["recompute levels"] = (NA, "eager has no memory optimizer")
    for _, detail, models, checks in findings.get(impl_name, ()):
        if model in models:
            table.update({check: (FAIL, detail) for check in checks})
    return table


def differences(result, table: dict[str, tuple[str, str]]) -> list[str]:
    return [f"{o.check} {o.status}: {o.detail}" for o in result.outcomes
            if o.status != table[o.check][0] or not re.search(table[o.check][1], o.detail)]


def assert_findings_recorded(impl, rows: list[Row], models: list[str]) -> None:
    """Each row names a finding the implementation's manifest records, and models and checks that exist."""
    findings = manifest.load(impl.manifest_path())
    for test, _, row_models, checks in rows:
        assert manifest.first_match(findings, test) is not None, f"no {impl.name} finding covers {test}"
        assert set(row_models) <= set(models) and set(checks) <= set(CHECKS), (row_models, checks)
