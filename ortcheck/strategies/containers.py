"""Container types the nested-I/O strategy builds, defined at module level so they pickle and repr."""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple


class Pair(NamedTuple):
    first: Any
    second: Any


class Triple(NamedTuple):
    x: Any
    y: Any
    z: Any


@dataclasses.dataclass
class Record:
    value: Any
    extra: Any


@dataclasses.dataclass(frozen=True)
class FrozenRecord:
    value: Any


class ModelOutputLike(collections.OrderedDict):
    """Like transformers' ``ModelOutput``: an OrderedDict subclass with attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
