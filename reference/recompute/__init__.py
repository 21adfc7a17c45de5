"""The recompute stage (docs/architecture.md, "Recompute"): the memory optimizer.

``optimize(graphs, level, entries, sizes)`` takes the autodiff stage's forward/backward pair and
returns a pair that recomputes in backward what the chosen plans cover, with the report of every
plan. Levels: 0 applies the config only; 1 every strategy-1 plan, layer-wise (transformer layer
inputs stay stashed) and ignoring the config; 2 also the strategy-2 (compromise) plans.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from reference.autodiff import GradientGraphs
from reference.recompute import config as config_stage
from reference.recompute import report as report_stage
from reference.recompute.config import Entry, RecomputeConfigError
from reference.recompute.graph import ForwardFacts
from reference.recompute.plans import COMPROMISE, RECOMPUTE, Plan, find_plans, layer_inputs
from reference.recompute.report import MemoryReport, PlanRow
from reference.recompute.rewrite import apply
from reference.seams import Seam

LEVELS = (0, 1, 2)
# Fault injection (reference.seams): occurrences a plan applies fewer than its count asks for.
APPLIED_SHORT_BY = Seam("occurrences applied fewer than asked", 0)

__all__ = ["LEVELS", "MemoryReport", "PlanRow", "RecomputeConfigError", "optimize", "find_plans"]


def optimize(graphs: GradientGraphs, level: int = 0, entries: Sequence[Entry] = (),
             sizes: Mapping[str, int] = {}) -> tuple[GradientGraphs, MemoryReport]:
    """Recompute what ``level`` and the config's parsed ``entries`` (``config.load``: the wrapper's
    ``Options`` parse them once, when built) select; ``sizes`` (dimension name -> size on the batch
    the graph is built for) turns the report's symbolic savings into bytes."""
    if level not in LEVELS:
        raise RecomputeConfigError(f"memory optimization level must be one of {LEVELS}, got {level!r}")
    facts = ForwardFacts(graphs)
    boundaries = layer_inputs(facts) if level >= 1 else set()
    plans = find_plans(facts, level, boundaries)
    requested = _requested(plans, level, entries)
    applied = {plan.key: _first(plan, requested[plan.key]) for plan in plans if plan.key in requested}
    occurrences = [o for done in applied.values() for o in done]
    optimized = apply(facts, occurrences)
    kept = set(optimized.stashed) - set(graphs.stashed)
    kept -= {leaf for o in occurrences if o.strategy == COMPROMISE for leaf in o.kept_leaves}
    report = report_stage.build(facts, plans, applied, requested, sizes, level, tuple(map(str, entries)),
                                boundaries, kept)
    return optimized, report


def _requested(plans: list[Plan], level: int, entries) -> dict[tuple[str, int], int]:
    if level == 0:
        return config_stage.resolve(entries, plans)
    strategies = {RECOMPUTE} if level == 1 else {RECOMPUTE, COMPROMISE}
    return {plan.key: -1 for plan in plans if plan.strategy in strategies}


def _first(plan: Plan, count: int):
    wanted = len(plan.occurrences) if count == -1 else count
    return list(plan.occurrences[: max(0, wanted - APPLIED_SHORT_BY.value)])
