"""Expected-failure manifests: one TOML file per implementation, each entry a known finding.

An entry is ``[[finding]]`` with ``test`` (a glob over pytest node ids, or a list of them),
``reason`` (one line),
``reproduction`` (minimal code), what the failure looks like (``raises`` and/or ``match``,
:mod:`ortcheck.findings.failures`: a test failing otherwise is a FAIL, not this finding) and optionally ``examples``: known failing inputs, as Python
expressions a suite evaluates and runs before drawing its own (``manifest_examples`` fixture), so
the finding fails on every run whatever the seed, and ``when``: the machine or stack the finding
holds on (``ortcheck.findings.conditions``; elsewhere the entry is inactive and the test must pass),
``every_draw = true``: the property fails on every draw, so the entry needs no examples
(``ortcheck findings --check`` runs its first draw), and ``factor``: for a numeric finding (an error
beyond the oracle's bound), the error / bound its examples measured where it was recorded.
Entries become strict xfails: an unexpected pass fails the run, and an entry that matches no
collected test is reported.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import tomllib
from pathlib import Path

from ortcheck.findings.conditions import Condition
from ortcheck.findings.failures import FailurePattern
from ortcheck.machine import Machine

_FIELDS = {"test", "reason", "reproduction"}
_OPTIONAL = {"examples", "when", "raises", "match", "every_draw", "factor"}


class ManifestError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Finding:
    test: str | tuple[str, ...]
    reason: str
    reproduction: str
    source: str
    examples: tuple[str, ...] = ()
    condition: Condition | None = None
    failure: FailurePattern = FailurePattern()  # (constructed in code: accepts any failure)
    every_draw: bool = False
    factor: float | None = None

    def active_on(self, machine: Machine) -> bool:
        return self.condition is None or self.condition.holds(machine)

    @property
    def label(self) -> str:
        """How a report names the finding: its reason, and the machines it holds on."""
        return self.reason if self.condition is None else f"{self.reason} (where: {self.condition})"

    @property
    def patterns(self) -> tuple[str, ...]:
        return (self.test,) if isinstance(self.test, str) else self.test

    def matches(self, nodeid: str) -> bool:
        return any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in self.patterns)


def load(path: Path) -> list[Finding]:
    """Parse and validate one manifest; a missing file means no known findings."""
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ManifestError(f"{path}: not valid TOML: {error}") from None
    unknown_tables = set(data) - {"finding"}
    if unknown_tables:
        raise ManifestError(f"{path}: unknown top-level keys {sorted(unknown_tables)}; expected [[finding]] entries")
    findings = []
    for index, entry in enumerate(data.get("finding", [])):
        where = f"{path}: finding #{index + 1}"
        missing, unknown = _FIELDS - set(entry), set(entry) - _FIELDS - _OPTIONAL
        if missing or unknown:
            raise ManifestError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}; fields are "
                                f"{sorted(_FIELDS)}, optionally {sorted(_OPTIONAL)}")
        empty = [name for name in sorted(_FIELDS) if not str(entry[name]).strip()]
        if empty:
            raise ManifestError(f"{where}: empty {empty}")
        test = entry["test"]
        if isinstance(test, list):
            if not test or not all(isinstance(t, str) and t.strip() for t in test):
                raise ManifestError(f"{where}: test must be a glob or a non-empty list of globs")
            test = tuple(test)
        elif not isinstance(test, str):
            raise ManifestError(f"{where}: test must be a glob or a non-empty list of globs, got {type(test).__name__}")
        examples = entry.get("examples", [])
        if not isinstance(examples, list) or not all(isinstance(e, str) and e.strip() for e in examples):
            raise ManifestError(f"{where}: examples must be a list of non-empty strings (Python expressions)")
        try:
            condition = Condition.parse(entry["when"]) if "when" in entry else None
            failure = FailurePattern.parse(entry)
        except ValueError as error:
            raise ManifestError(f"{where}: {error}") from None
        every_draw, factor = entry.get("every_draw", False), entry.get("factor")
        if not isinstance(every_draw, bool):
            raise ManifestError(f"{where}: every_draw must be true or false")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0):
            raise ManifestError(f"{where}: factor must be a positive number (error / bound)")
        findings.append(Finding(test, entry["reason"].strip(), entry["reproduction"].strip(), where,
                                tuple(e.strip() for e in examples), condition, failure, every_draw,
                                None if factor is None else float(factor)))
    return findings


def first_match(findings: list[Finding], nodeid: str) -> Finding | None:
    return next((finding for finding in findings if finding.matches(nodeid)), None)
