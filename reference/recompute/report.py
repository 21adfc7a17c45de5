"""The memory optimizer's report: one row per plan, like ORTModule's table (onnxruntime#17481), plus detail.

``Max Saving (Bytes)`` is evaluated on the sizes of the batch the graph was built on;
``Saving Symbolic (Bytes)`` is the simplified sympy expression in the graph's dimension names.
Savings are what a plan stops stashing; a plan's *kept leaves* (small values it stashes in place
of what it recomputes) are listed apart, so the bytes really saved are savings minus kept leaves.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import sympy

from reference.recompute.graph import ForwardFacts
from reference.recompute.plans import COMPROMISE, Occurrence, Plan


@dataclasses.dataclass(frozen=True)
class StashedOutput:
    name: str
    shape: str                 # symbolic, e.g. "[input_0_dim0, 4, input_0_dim1, input_0_dim1]"
    bytes_per_element: int
    saved_percent: float       # 100 for recompute; 100 * (1 - input bytes / output bytes) for compromise


@dataclasses.dataclass(frozen=True)
class PlanRow:
    name: str
    strategy: int
    enabled: bool
    requested: int             # count asked for (-1: all; 0 when off)
    freq: int                  # occurrences found
    applied: int               # occurrences applied
    max_saving: int | None     # bytes, all occurrences, first batch's sizes (None: sizes unknown)
    saving_symbolic: str
    applied_saving: int | None  # bytes of the applied occurrences
    outputs: tuple[StashedOutput, ...]

    @property
    def config(self) -> str:
        return f"{self.name}:{self.strategy}:{self.requested if self.enabled else -1}"


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    level: int
    config: tuple[str, ...]
    plans: tuple[PlanRow, ...]   # sorted by max saving, largest first
    layer_inputs: tuple[str, ...]
    kept_leaf_bytes: int         # stashed in addition by the applied plans (static sizes)

    def table(self) -> str:
        """The plan table as Markdown."""
        lines = [f"Memory optimizer: level {self.level}, config {list(self.config)}",
                 "", "| Plan | Status | Configs | Freq | Applied | Max Saving (Bytes) | Saving Symbolic (Bytes) |",
                 "|---|---|---|---:|---:|---:|---|"]
        for k, row in enumerate(self.plans):
            lines.append(f"| {k} | {'ON' if row.enabled else 'OFF'} | `{row.config}` | {row.freq} | {row.applied} | "
                         f"{'?' if row.max_saving is None else row.max_saving} | `{row.saving_symbolic}` |")
        if not self.plans:
            lines.append("| - | - | (no recomputable plan) | 0 | 0 | 0 | `0` |")
        return "\n".join(lines)

    def detail(self) -> str:
        lines = []
        for row in self.plans:
            lines.append(f"- `{row.name}` (strategy {row.strategy}):")
            lines += [f"  - `{o.name}` {o.shape} x {o.bytes_per_element} B, {o.saved_percent:.0f}% saved" for o in row.outputs]
        return "\n".join(lines)


def build(facts: ForwardFacts, plans: list[Plan], applied: Mapping[tuple[str, int], list[Occurrence]],
          requested: Mapping[tuple[str, int], int], sizes: Mapping[str, int], level: int, config: tuple[str, ...],
          layer_inputs: set[str], kept_leaves: set[str]) -> MemoryReport:
    symbols = {sympy.Symbol(name, positive=True, integer=True): size for name, size in sizes.items()}

    def concrete(expr: sympy.Expr) -> int | None:
        value = sympy.sympify(expr).subs(symbols)
        return int(value) if value.is_number else None

    rows = []
    for plan in plans:
        done = applied.get(plan.key, [])
        outputs = []
        for occurrence in plan.occurrences[:1]:  # one representative: every occurrence has the same shape kinds
            for name in occurrence.outputs:
                percent = 100.0
                if plan.strategy == COMPROMISE:
                    percent = 100.0 * (1 - facts.itemsize(occurrence.kept_leaves[0]) / facts.itemsize(name))
                outputs.append(StashedOutput(name, "[" + ", ".join(map(str, facts.dims(name))) + "]",
                                             facts.itemsize(name), percent))
        applied_total = sum((o.saving for o in done), sympy.Integer(0))
        rows.append(PlanRow(plan.name, plan.strategy, bool(done) or plan.key in requested,
                            requested.get(plan.key, 0), len(plan.occurrences), len(done),
                            concrete(plan.saving), str(plan.saving), concrete(applied_total), tuple(outputs)))
    rows.sort(key=lambda row: (-(row.max_saving or 0), row.name, row.strategy))
    leaf_bytes = sum(int(facts.nbytes(name)) for name in kept_leaves)
    return MemoryReport(level, config, tuple(rows), tuple(sorted(layer_inputs)), leaf_bytes)
