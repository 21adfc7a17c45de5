"""Gradient accumulation: a value read by several nodes receives one contribution per read."""
from __future__ import annotations

from reference.autodiff.context import GradientContext
from reference.autodiff.fuse.graph import SAME_SHAPE_SUM


class GradientSums:
    def __init__(self, ctx: GradientContext):
        self._ctx = ctx
        self._parts: dict[str, list[str]] = {}
        self._totals: dict[str, str] = {}

    def add(self, value: str, grad: str) -> None:
        if value in self._totals:
            raise AssertionError(f"gradient of '{value}' grew after it was used")
        self._parts.setdefault(value, []).append(grad)

    def total(self, value: str) -> str:
        """All contributions to ``value``'s gradient, summed once (a single variadic Sum)."""
        if value not in self._totals:
            parts = self._parts[value]
            self._totals[value] = (parts[0] if len(parts) == 1
                                   else self._ctx.op("Sum", *parts, doc_string=SAME_SHAPE_SUM))
        return self._totals[value]
