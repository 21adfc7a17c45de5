"""What every positive control is: an implementation broken on purpose that declares what catches it."""
from __future__ import annotations

import re
from typing import ContextManager

from ortcheck.impls import Options
from ortcheck.impls.reference import ReferenceImpl


def name_of(cls: type) -> str:
    """A control's registered name: its class name in snake case (``OneGraphSlot`` -> ``one_graph_slot``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.__name__).lower()


class Control:
    """Mixed in before an implementation class. ``caught_by``: the test ids (run with ``--impl`` set
    to this control) of which each must fail; ``missed_by``: test ids that must pass, where a control
    proves a property is specific; ``run_with``: pytest options those runs need (a crash needs xdist
    to report it). Every concrete control in this package is registered (``controls.CONTROLS``) and
    checked by tests/harness/test_plugin.py; the name follows from the class."""

    caught_by: tuple[str, ...] = ()
    missed_by: tuple[str, ...] = ()
    run_with: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" not in vars(cls):
            cls.name = name_of(cls)


class DuringForward(Control, ReferenceImpl):
    """The reference with a seam of ``reference.seams`` overridden while its forward (and so every
    graph build) runs."""

    def seam(self) -> ContextManager:
        raise NotImplementedError

    def wrap(self, module, options=Options()):
        wrapped = super().wrap(module, options)
        forward = wrapped.forward

        def forward_with_the_fault(*args, **kwargs):
            with self.seam():
                return forward(*args, **kwargs)

        wrapped.__dict__["forward"] = forward_with_the_fault  # past the wrapper's pass-through __setattr__
        return wrapped

