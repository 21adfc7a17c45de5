"""The user's module seen through flat tensors: what the exporter traces.

Tracing sees only positional tensors, so the non-tensor parts of the inputs come from the input
schema (they are baked into the graph, which is why a changed constant forces a re-export) and the
non-tensor parts of the outputs are recorded in the output schema while tracing.
"""
from __future__ import annotations

import torch

from reference import nested_io


class FlatModule(torch.nn.Module):
    def __init__(self, module: torch.nn.Module, input_schema: nested_io.Schema):
        super().__init__()
        self.module = module
        self.input_schema = input_schema
        self.output_schema: nested_io.Schema | None = None

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args, kwargs = nested_io.unflatten(tensors, self.input_schema)
        outputs, self.output_schema = nested_io.flatten(self.module(*args, **kwargs))
        return tuple(outputs)
