"""Gradient graphs of small models for the recompute stage's own tests (built once per module)."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from reference import nested_io
from reference.autodiff import GradientGraphs, build_gradient_graphs
from reference.export import export_module


@dataclasses.dataclass
class Built:
    graphs: GradientGraphs
    tensors: list[torch.Tensor]
    state: list[torch.Tensor]
    graph_inputs: list[str]
    sizes: dict[str, int]


def build(module: torch.nn.Module, *inputs: torch.Tensor) -> Built:
    tensors, schema = nested_io.flatten((inputs, {}))
    exported = export_module(module, tensors, schema, training=True)
    graphs = build_gradient_graphs(exported.model, list(exported.state_names))
    params = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    sizes = {f"{name}_dim{d}": n for name, t in zip(exported.input_names, tensors) for d, n in enumerate(t.shape)}
    return Built(graphs, list(tensors), [params[k] for k in exported.state_keys],
                 [*exported.input_names, *exported.state_names], sizes)


@pytest.fixture(scope="module")
def bloom():
    """A 2-layer Bloom-like LM with dropout 0.1 (pre-LN layers, attention, GELU MLP)."""
    from ortcheck.models.bloom import BloomConfig, build_bloom, example_input_ids

    config = BloomConfig(num_layers=2, dropout=0.1)
    return build(build_bloom(config, seed=0), example_input_ids(config, seed=0, batch=2))
