"""A graph that calls custom autograd Functions runs piece by piece (``reference.export.segments``).

Each graph piece gets its own gradient graphs and sessions and runs as an autograd node of its own
(``reference.grads``); each Function runs in torch, with the tensors the pieces before it made.
torch's autograd chains them, so in backward the Function's own ``backward`` runs between the
pieces' backward graphs, and ``ctx.save_for_backward``, ``needs_input_grad``,
``mark_non_differentiable`` and ``mark_dirty`` behave as in eager: it is eager, for that call.

A piece asks for the gradients of its float inputs that may depend on what requires grad
(graph inputs asked for, and anything a piece or a Function computed from them): a superset,
where a value turns out constant its gradient is simply absent.
"""
from __future__ import annotations

from typing import Sequence

import torch

from reference import grads
from reference.autodiff import build_gradient_graphs
from reference.autodiff.forward import FLOAT_TYPES
from reference.export.segments import CallPiece, Piece
from reference.runtime import TrainingRunner


class PieceRunner:
    def __init__(self, pieces: Sequence[Piece], graph_inputs: Sequence[str], output_names: Sequence[str],
                 wanted: Sequence[str], device: str, staged: Sequence[str] = ()):
        self.graph_inputs, self.output_names = list(graph_inputs), list(output_names)
        self.steps: list[tuple[Piece, TrainingRunner | None]] = []
        active = set(wanted)
        for piece in pieces:
            if isinstance(piece, CallPiece):
                self.steps.append((piece, None))
                if active.intersection(piece.inputs):
                    active.update(piece.outputs)
                continue
            floats = {v.name for v in piece.model.graph.input if v.type.tensor_type.elem_type in FLOAT_TYPES}
            asked = [name for name in piece.inputs if name in active and name in floats]
            graphs = build_gradient_graphs(piece.model, asked)
            self.steps.append((piece, TrainingRunner(graphs, piece.inputs, device,
                                                     [name for name in staged if name in piece.inputs])))
            if asked:
                active.update(piece.outputs)

    def run(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        values = dict(zip(self.graph_inputs, tensors))
        for piece, runner in self.steps:
            given = [values[name] for name in piece.inputs]
            made = piece.call(*given) if isinstance(piece, CallPiece) else grads.run(runner, given)
            values.update(zip(piece.outputs, made))
        return [values[name] for name in self.output_names]
