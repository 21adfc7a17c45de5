"""Recompute configs drawn from the plans an implementation reports for a model.

Plans are given as plain ``(name, strategy, freq)`` triples (strategies import no implementation).
Each entry's count is one of -1 (all), 0, 1 and more than exist; a plan may appear twice, where the
later entry must win. Simplest first: one entry, count -1.
"""
from __future__ import annotations

from typing import Sequence

from hypothesis import strategies as st

PlanSummary = tuple[str, int, int]  # name, strategy, freq


def counts(freq: int) -> st.SearchStrategy[int]:
    return st.sampled_from((-1, 0, 1, freq + 1))


def config_entries(plans: Sequence[PlanSummary]) -> st.SearchStrategy[str]:
    """One ``"<plan>:<strategy>:<count>"`` entry for one of ``plans``."""
    if not plans:
        raise ValueError("no plans to draw recompute config entries from")
    return st.sampled_from(list(plans)).flatmap(
        lambda plan: counts(plan[2]).map(lambda count: f"{plan[0]}:{plan[1]}:{count}"))


def recompute_configs(plans: Sequence[PlanSummary], max_entries: int = 4) -> st.SearchStrategy[tuple[str, ...]]:
    """Non-empty configs over ``plans``: subsets with drawn counts, possibly naming a plan twice."""
    return st.lists(config_entries(plans), min_size=1, max_size=max_entries).map(tuple)


def expected_applied(config: Sequence[str], plans: Sequence[PlanSummary]) -> dict[tuple[str, int], int]:
    """What a correct optimizer applies for ``config``: per (plan, strategy), the last entry's count,
    capped at the plan's frequency (-1: all of them)."""
    freq = {(name, strategy): n for name, strategy, n in plans}
    last: dict[str, tuple[int, int]] = {}
    for entry in config:
        name, strategy, count = entry.rsplit(":", 2)
        last[name] = (int(strategy), int(count))
    return {(name, strategy): freq[(name, strategy)] if count == -1 else min(count, freq[(name, strategy)])
            for name, (strategy, count) in last.items() if strategy != 0}
