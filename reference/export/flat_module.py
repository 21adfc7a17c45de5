"""The user's module seen through flat tensors: what the exporter traces.

Tracing sees only positional tensors, so the non-tensor parts of the inputs come from the input
schema (they are baked into the graph, which is why a changed constant forces a re-export) and the
non-tensor parts of the outputs are recorded in the output schema while tracing (sizes the module
returns as Python numbers become graph outputs: :mod:`reference.export.traced_numbers`).

Buffers forward writes (in place, or by assigning a new tensor) are returned after the outputs, so
their updated values become graph outputs the wrapper writes back after each call; ``written``
names them in that order. BatchNorm and InstanceNorm run through :mod:`reference.export.norms`,
which makes their running-statistic writes visible to the trace; RNN, LSTM and GRU through
:mod:`reference.export.recurrent`, unrolled over the traced length. Values the trace turned into
Python control flow (:mod:`reference.export.data_guards`) are returned last, as guards. What
forward computes under ``no_grad`` stays gradient-free (:mod:`reference.export.grad_regions`).
"""
from __future__ import annotations

import torch

from reference import nested_io
from reference.export import data_guards
from reference.export.grad_regions import gradient_free_regions
from reference.export.norms import traceable_norms
from reference.export.zero_fill import differentiable_zero_fill
from reference.export.scalar_dims import scalars_as_vectors
from reference.export.recurrent import unrolled_recurrences
from reference.export.traced_numbers import marked


class FlatModule(torch.nn.Module):
    def __init__(self, module: torch.nn.Module, input_schema: nested_io.Schema):
        super().__init__()
        self.module = module
        self.input_schema = input_schema
        self.output_schema: nested_io.Schema | None = None
        self.written: tuple[str, ...] = ()
        self.guards: data_guards.DataGuards | None = None  # values the trace baked into control flow

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args, kwargs = nested_io.unflatten(tensors, self.input_schema)
        before = {name: (id(b), b._version) for name, b in self.module.named_buffers()}
        norms = traceable_norms(self.module)
        with gradient_free_regions(self.module), norms, differentiable_zero_fill(), scalars_as_vectors(), \
                unrolled_recurrences() as recurrences, data_guards.collected(norms.read_elsewhere()) as self.guards:
            outputs, self.output_schema = nested_io.flatten(marked(self.module(*args, **kwargs)))
        for length in recurrences.lengths:
            self.guards.add(length, data_guards.LENGTH)
        after = dict(self.module.named_buffers())
        self.written = tuple(name for name, (identity, version) in before.items()
                             if name in after and (id(after[name]), after[name]._version) != (identity, version))
        return (*outputs, *(after[name] for name in self.written), *self.guards.tensors)
