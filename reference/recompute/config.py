"""The recompute config: entries ``"<plan>:<strategy>:<count>"``, given as a list or a JSON file.

Strategy 0 turns a plan off, 1 recomputes, 2 recomputes with compromise; count -1 applies every
occurrence, N the first N in topological order. A later entry for the same plan wins. Every
malformed entry is refused with an error naming it: a config that silently applies nothing would
make a recompute check pass without recomputing anything.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Iterable, Sequence

from reference.recompute.plans import STRATEGIES, Plan


class RecomputeConfigError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Entry:
    plan: str
    strategy: int
    count: int  # -1: all

    def __str__(self) -> str:
        return f"{self.plan}:{self.strategy}:{self.count}"


def load(config: Sequence[str] | str | os.PathLike | None) -> tuple[Entry, ...]:
    """Parse a list of entries, or a path to a JSON file holding one (what ORTModule 1.19.2 reads)."""
    if config is None:
        return ()
    if isinstance(config, (str, os.PathLike)):
        config = _read_json_list(config)
    return tuple(parse_entry(entry) for entry in config)


def parse_entry(entry: str) -> Entry:
    if not isinstance(entry, str):
        raise RecomputeConfigError(f"recompute config entry {entry!r} is not a string '<plan>:<strategy>:<count>'")
    fields = entry.split(":")
    if len(fields) != 3:
        raise RecomputeConfigError(
            f"recompute config entry {entry!r} has {len(fields)} field(s); expected 3: '<plan>:<strategy>:<count>'")
    plan, strategy, count = fields
    if not plan:
        raise RecomputeConfigError(f"recompute config entry {entry!r} names no plan")
    try:
        strategy_value = int(strategy)
    except ValueError:
        strategy_value = None
    if strategy_value not in STRATEGIES:
        valid = ", ".join(f"{k} ({v})" for k, v in STRATEGIES.items())
        raise RecomputeConfigError(f"recompute config entry {entry!r} has unknown strategy {strategy!r}; valid: {valid}")
    try:
        count_value = int(count)
    except ValueError:
        raise RecomputeConfigError(f"recompute config entry {entry!r} has a count {count!r} that is not an integer") from None
    if count_value < -1:
        raise RecomputeConfigError(f"recompute config entry {entry!r} has count {count_value} < -1 (-1 means all)")
    return Entry(plan, strategy_value, count_value)


def resolve(entries: Iterable[Entry], plans: Sequence[Plan]) -> dict[tuple[str, int], int]:
    """Requested count per plan key (name, strategy); a plan that matches nothing is an error."""
    names = {plan.name for plan in plans}
    keys = {plan.key for plan in plans}
    requested: dict[str, tuple[int, int]] = {}
    for entry in entries:  # a later entry for the same plan wins
        if entry.plan not in names:
            raise RecomputeConfigError(
                f"recompute config entry '{entry}' matches no plan of this graph; plans: "
                f"{', '.join(sorted(f'{k[0]}:{k[1]}' for k in keys)) or 'none'}")
        requested[entry.plan] = (entry.strategy, entry.count)
    result = {}
    for name, (strategy, count) in requested.items():
        if strategy == 0:
            continue
        if (name, strategy) not in keys:
            offered = sorted(k[1] for k in keys if k[0] == name)
            raise RecomputeConfigError(
                f"recompute config entry '{name}:{strategy}:{count}': plan {name} has no strategy {strategy} "
                f"({STRATEGIES[strategy]}); it offers: {', '.join(map(str, offered))}")
        result[(name, strategy)] = count
    return result


def _read_json_list(path: str | os.PathLike) -> list:
    try:
        with open(path) as handle:
            value = json.load(handle)
    except OSError as error:
        raise RecomputeConfigError(f"cannot read recompute config file {os.fspath(path)!r}: {error}") from None
    except json.JSONDecodeError as error:
        raise RecomputeConfigError(f"recompute config file {os.fspath(path)!r} is not JSON: {error}") from None
    if not isinstance(value, list):
        raise RecomputeConfigError(
            f"recompute config file {os.fspath(path)!r} holds a {type(value).__name__}; expected a JSON list of "
            "'<plan>:<strategy>:<count>' strings")
    return value
