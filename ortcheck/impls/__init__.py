"""Registry of implementations behind the contract (see :mod:`ortcheck.impls.base`)."""
from __future__ import annotations

import importlib
import importlib.metadata

from ortcheck.impls.base import (DEVICES, Capability, Implementation, MemoryPlan, MemoryPlans, Observations, Options,
                                 UnsupportedOptionError)

# name -> "module:attribute" (imported lazily, so a missing backend never breaks the others)
# or an Implementation subclass registered by a user.
_REGISTRY: dict[str, str | type[Implementation]] = {
    "eager": "ortcheck.impls.eager:EagerImpl",
    "reference": "ortcheck.impls.reference:ReferenceImpl",
    "ortmodule": "ortcheck.impls.ortmodule:OrtModuleImpl",
    "bitsandbytes": "ortcheck.impls.bitsandbytes:BitsandbytesImpl",
}
DEFAULT = "reference"
# What a fresh process running the built-in implementations imports (missing ones are skipped): a
# rank server (``ortcheck.checks.ddp``) imports them once, not every rank.
RANK_PRELOAD = ("onnxruntime.training.ortmodule", "bitsandbytes", "reference.module.wrapper", __name__)
ENTRY_POINT_GROUP = "ortcheck.impls"


def _load_entry_points() -> None:
    """Implementations other packages declare under the ``ortcheck.impls`` entry-point group."""
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        _REGISTRY.setdefault(entry_point.name, entry_point.value)


def names() -> list[str]:
    return list(_REGISTRY)


_load_entry_points()


def select(spec: str) -> list[str]:
    """The implementations an ``--impl`` value names, in its order: comma-separated names, ``all`` (every
    registered one), ``available`` (those that can run here), ``-NAME`` leaving one out (``available,-eager``).
    So a tox command or a CI job names no list a new implementation would have to be added to."""
    chosen: list[str] = []
    for part in filter(None, (part.strip() for part in spec.split(","))):
        drop = part.startswith("-")
        word = part.removeprefix("-")
        if word == "all":
            named = names()
        elif word == "available":
            named = [name for name in names() if get(name).unavailable_reason() is None]
        elif word in _REGISTRY:
            named = [word]
        else:
            raise ValueError(f"unknown implementation {word!r}; valid: {', '.join(names())}, all, available, -NAME")
        chosen = [name for name in chosen if name not in named] if drop else chosen + [n for n in named if n not in chosen]
    if not chosen:
        raise ValueError(f"no implementation selected by {spec!r}; valid: {', '.join(names())}, all, available, -NAME")
    return chosen


def get(name: str) -> Implementation:
    """The implementation called ``name``; a clear error lists the valid names otherwise."""
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown implementation {name!r}; valid: {', '.join(names())}") from None
    if isinstance(target, str):
        module_name, attribute = target.split(":")
        target = getattr(importlib.import_module(module_name), attribute)
    return target()


def register(name: str, target: "str | type[Implementation]") -> None:
    """Add an implementation: a class, or ``"package.module:ClassName"`` to import on first use."""
    if not isinstance(target, str) and not (isinstance(target, type) and issubclass(target, Implementation)):
        raise TypeError(f"register({name!r}, ...) needs an Implementation subclass or 'module:Class', got {target!r}")
    _REGISTRY[name] = target


__all__ = ["Capability", "DEVICES", "Implementation", "MemoryPlan", "MemoryPlans", "Observations", "Options", "UnsupportedOptionError", "get", "names",
           "register", "select", "DEFAULT", "RANK_PRELOAD"]
