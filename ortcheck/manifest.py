"""Expected-failure manifests: one TOML file per implementation, each entry a known finding.

An entry is ``[[finding]]`` with ``test`` (a glob over pytest node ids), ``reason`` (one line)
and ``reproduction`` (minimal code). Entries become strict xfails: an unexpected pass fails the
run, and an entry that matches no collected test is reported.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import tomllib
from pathlib import Path

_FIELDS = {"test", "reason", "reproduction"}


class ManifestError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Finding:
    test: str
    reason: str
    reproduction: str
    source: str

    def matches(self, nodeid: str) -> bool:
        return fnmatch.fnmatchcase(nodeid, self.test)


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
        missing, unknown = _FIELDS - set(entry), set(entry) - _FIELDS
        if missing or unknown:
            raise ManifestError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}; fields are {sorted(_FIELDS)}")
        empty = [name for name in sorted(_FIELDS) if not str(entry[name]).strip()]
        if empty:
            raise ManifestError(f"{where}: empty {empty}")
        findings.append(Finding(entry["test"], entry["reason"].strip(), entry["reproduction"].strip(), where))
    return findings


def first_match(findings: list[Finding], nodeid: str) -> Finding | None:
    return next((finding for finding in findings if finding.matches(nodeid)), None)
