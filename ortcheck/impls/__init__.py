"""Registry of implementations behind the contract (see :mod:`ortcheck.impls.base`)."""
from __future__ import annotations

import importlib

from ortcheck.impls.base import Capability, Implementation, Observations, Options

# name -> "module:attribute"; imported lazily so a missing backend never breaks the others.
_REGISTRY = {
    "eager": "ortcheck.impls.eager:EagerImpl",
    "reference": "ortcheck.impls.reference:ReferenceImpl",
    "ortmodule": "ortcheck.impls.ortmodule:OrtModuleImpl",
}
DEFAULT = "reference"


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Implementation:
    """The implementation called ``name``; a clear error lists the valid names otherwise."""
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown implementation {name!r}; valid: {', '.join(names())}") from None
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)()


def register(name: str, target: str) -> None:
    """Add a user implementation, given as ``"package.module:ClassName"``."""
    _REGISTRY[name] = target


__all__ = ["Capability", "Implementation", "Observations", "Options", "get", "names", "register", "DEFAULT"]
