"""Property x implementation table of outcomes, rendered as text, Markdown and JSON."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ortcheck.report.collector import SEVERITY, Outcome

_SYMBOL = {"pass": "pass", "refused": "refused", "fail": "FAIL", "error": "ERROR", "expected-fail": "xfail",
           "skip": "skip", "n/a": "n/a"}


@dataclasses.dataclass
class ConformanceMatrix:
    cells: dict[tuple[str, str], Outcome]

    @classmethod
    def from_outcomes(cls, outcomes: list[Outcome]) -> "ConformanceMatrix":
        cells: dict[tuple[str, str], Outcome] = {}
        for outcome in outcomes:
            key = (outcome.property, outcome.impl)
            current = cells.get(key)
            if current is None or SEVERITY.index(outcome.status) < SEVERITY.index(current.status):
                cells[key] = outcome
        return cls(cells)

    @classmethod
    def from_outcomes_by_family(cls, outcomes: list[Outcome]) -> "ConformanceMatrix":
        """Like :meth:`from_outcomes`, but a property family (one test function over its parameters)
        whose cells don't apply to an implementation shows once, as ``family[*]``, for that implementation."""
        matrix = cls.from_outcomes(outcomes)
        families: dict[tuple[str, str], list[Outcome]] = {}
        for (prop, impl), outcome in matrix.cells.items():
            families.setdefault((_family(prop), impl), []).append(outcome)
        cells = {}
        for (family, impl), members in families.items():
            if len(members) > 1 and all(m.status == "n/a" and m.detail == members[0].detail for m in members):
                cells[(f"{family}[*]", impl)] = dataclasses.replace(members[0], property=f"{family}[*]")
            else:
                cells.update(((m.property, impl), m) for m in members)
        return cls(cells)

    @property
    def properties(self) -> list[str]:
        return sorted({p for p, _ in self.cells})

    @property
    def impls(self) -> list[str]:
        return sorted({i for _, i in self.cells})

    @property
    def ok(self) -> bool:
        return bool(self.cells) and not any(o.status in ("fail", "error") for o in self.cells.values())

    def counts(self) -> dict[str, int]:
        return {status: sum(o.status == status for o in self.cells.values()) for status in SEVERITY}

    def counts_by_impl(self) -> dict[str, dict[str, int]]:
        return {impl: {status: sum(o.status == status for o in self.cells.values() if o.impl == impl)
                       for status in SEVERITY} for impl in self.impls}

    def rows(self) -> list[list[str]]:
        return [[prop] + [self._cell(prop, impl) for impl in self.impls] for prop in self.properties]

    def _cell(self, prop: str, impl: str) -> str:
        outcome = self.cells.get((prop, impl))
        return "-" if outcome is None else _SYMBOL[outcome.status]

    def notes(self) -> list[str]:
        """One line per non-passing cell: why it failed, was expected to, or was skipped."""
        return [f"{_SYMBOL[o.status]} {o.impl} {o.property}: {o.detail}"
                for o in sorted(self.cells.values(), key=lambda o: (o.impl, o.property)) if o.status != "pass"]

    def to_text(self) -> str:
        header = ["property"] + self.impls
        widths = [max(len(str(row[i])) for row in [header] + self.rows()) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in [header] + self.rows()]
        return "\n".join(lines + [""] + self.notes())

    def to_markdown(self, grouped: bool = False) -> str:
        """One table; ``grouped``: one per suite file, under its name, rows named within it."""
        header = ["property"] + self.impls

        def table(rows: list[list[str]]) -> list[str]:
            return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                    *(f"| `{row[0]}` | " + " | ".join(row[1:]) + " |" for row in rows)]

        if grouped:
            suites: dict[str, list[list[str]]] = {}
            for row in self.rows():
                suite, _, name = row[0].partition("::")
                suites.setdefault(suite, []).append([name or suite, *row[1:]])
            lines = [line for suite, rows in suites.items() for line in (f"### `{suite}`", "", *table(rows), "")]
        else:
            lines = table(self.rows())
        notes = [f"- {note}" for note in self.notes()]
        return "\n".join(lines + ([""] + notes if notes else []))

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "counts": self.counts(),
            "impls": self.impls,
            "cells": [dataclasses.asdict(o) for o in sorted(self.cells.values(), key=lambda o: (o.property, o.impl))],
        }


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _family(prop: str) -> str:
    return prop.split("[", 1)[0]
