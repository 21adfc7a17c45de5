"""Positive controls: implementations broken on purpose, one defect each, proving every property can fail.

Outside the ``ortcheck`` package (not shipped): only the harness's own tests, ``bench/`` and users
who want to try the harness on a known-bad pipeline load them. Each control declares the tests that
must catch it (``caught_by``) and reaches the reference only through the seams it offers for fault
injection (``reference.seams``). tests/harness/test_plugin.py runs every declaration, so proving a
new property can fail is one ``caught_by`` entry on a control here (or a new control in the module
of its family: every module of this package is read).
"""
from __future__ import annotations

import importlib
import pkgutil

from controls.base import Control, name_of


def _found() -> dict[str, type[Control]]:
    found = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name == "base":  # what controls are, none itself
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Control) and value.__module__ == module.__name__
                    and not value.__name__.startswith("_")):
                found[value.name] = value
    return dict(sorted(found.items()))


CONTROLS: dict[str, type[Control]] = _found()


def get(name: str) -> type[Control]:
    """The control called ``name``; a clear error lists the valid names otherwise."""
    try:
        return CONTROLS[name]
    except KeyError:
        raise ValueError(f"unknown control {name!r}; valid: {', '.join(CONTROLS)}") from None


def register() -> None:
    """Make every control an implementation ``--impl`` accepts, under its name."""
    from ortcheck import impls

    for name, cls in CONTROLS.items():
        impls.register(name, cls)


def catches() -> list[tuple[str, str]]:
    """(control, test id) for every test that must fail against that control."""
    return [(name, test) for name, cls in CONTROLS.items() for test in cls.caught_by]


__all__ = ["CONTROLS", "Control", "catches", "get", "name_of", "register"]
