"""Controls of the transition suite: pipelines whose outputs and gradients stay right while they
export too often or too rarely, so only the counters the transition contract predicts can tell."""
from __future__ import annotations

import dataclasses

from ortcheck.impls import Options
from ortcheck.impls.reference import ReferenceImpl
from reference.transitions import Graphs, decide

from controls.base import Control, DuringForward


def _case(impl: str, family: str) -> str:
    return f"suites/test_transitions.py::test_transitions[{impl}-{family}]"


def _pattern(impl: str, pattern: str) -> str:
    return f"suites/test_forward_patterns.py::test_forward_patterns_train_like_eager[{impl}-{pattern}]"


class ReexportsOnNewSizes(DuringForward):
    """Keys every graph by its input sizes, as if sizes were in the schema: it re-exports whenever
    an input size changes."""
    caught_by = (_case("reexports_on_new_sizes", "sizes"), _pattern("reexports_on_new_sizes", "detached"))

    def seam(self):
        from reference.module.wrapper import SIZES_IN_EVERY_KEY

        return SIZES_IN_EVERY_KEY.overridden(True)


@dataclasses.dataclass(frozen=True)
class _OneSlot(Graphs):
    """Both modes share the train slot: every train/eval switch looks like a mode change."""

    def built_for(self, training):
        return self.train

    def step(self, current, grad_enabled=True):
        transition = decide(self.train, current, grad_enabled)
        return transition, (dataclasses.replace(self, train=current) if transition.new_sessions else self)


class UnguardedSizeReads(DuringForward):
    """Bakes a size its forward read into Python (``if x.shape[0] > 2``, ``range(x.shape[0])``) at
    the traced value and reuses the graph at other sizes: the outputs of the other branch."""
    caught_by = (_pattern("unguarded_size_reads", "size_branch"), _pattern("unguarded_size_reads", "size_loop"))

    def seam(self):
        from reference.export.data_guards import SIZE_READS_GUARDED

        return SIZE_READS_GUARDED.overridden(False)


class OneGraphSlot(Control, ReferenceImpl):
    """Keeps one graph for both modes, so alternating train/eval re-exports on every switch. Only a
    contract that does not ask the reference can tell."""
    caught_by = (_case("one_graph_slot", "modes"),)

    def wrap(self, module, options=Options()):
        from reference.module.wrapper import START_GRAPHS

        with START_GRAPHS.overridden(_OneSlot()):
            return super().wrap(module, options)


class NumberBlindSchema(DuringForward):
    """Compares Python int/float inputs by type alone, as ORTModule's schema does: a changed number
    runs the graph traced with the old one baked in."""
    caught_by = (_case("number_blind_schema", "number_values"),)

    def seam(self):
        from reference.nested_io.schema import NUMBERS_BY_TYPE

        return NUMBERS_BY_TYPE.overridden(True)


class IgnoresNewMemoryOptions(Control, ReferenceImpl):
    """Accepts a change of memory-optimizer options and silently keeps the old gradient graphs."""
    caught_by = (_case("ignores_new_memory_options", "recompute"),)

    def reconfigure(self, wrapped, options):
        self.check_options(options)
