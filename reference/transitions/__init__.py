"""The transitions stage (docs/architecture.md): the one place that decides, per forward call, what must be rebuilt."""
from reference.transitions.state_machine import REASONS, GraphState, Graphs, Transition, decide

__all__ = ["GraphState", "Graphs", "Transition", "decide", "REASONS"]
