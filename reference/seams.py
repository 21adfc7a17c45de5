"""Fault injection: the points where the pipeline can be made wrong on purpose.

They exist for the harness's positive controls (``controls/``, outside this package), which break
one stage and show that the property about it fails. A control used to patch private functions by
name, so renaming one broke it silently; now each stage declares its seam beside the code that
reads it, and renaming that code means editing the seam too. Nothing in the pipeline overrides a
seam: each holds its default, the right behaviour, unless a control is inside :meth:`Seam.overridden`.
"""
from __future__ import annotations

import contextlib
from typing import Generic, Iterator, TypeVar

T = TypeVar("T")
_ALL: list["Seam"] = []


class Seam(Generic[T]):
    """One fault-injection point: the stage that owns it reads :attr:`value`."""

    def __init__(self, name: str, default: T):
        self.name, self.default, self.value = name, default, default
        _ALL.append(self)

    @contextlib.contextmanager
    def overridden(self, value: T) -> Iterator[None]:
        """``value`` in force inside the block (fault injection only), the previous one after."""
        saved, self.value = self.value, value
        try:
            yield
        finally:
            self.value = saved

    def __repr__(self) -> str:
        return f"Seam({self.name!r}, {self.value!r})"


def any_overridden() -> bool:
    """Whether a fault is injected now: what is built then is built afresh and not remembered
    (:mod:`reference.autodiff.model_cache`), so a control never hides behind a good build."""
    return any(seam.value is not seam.default for seam in _ALL)
