"""Fresh value and node names that never collide with the forward graph's."""
from __future__ import annotations

from typing import Iterable


class UniqueNames:
    def __init__(self, taken: Iterable[str] = ()):
        self._taken = set(taken)

    def fresh(self, base: str) -> str:
        """``base`` itself when free, else ``base_<k>`` for the first free k."""
        name, k = base, 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name
