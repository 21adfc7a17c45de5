"""What the exporter drops of an ``nn.Embedding``, kept for the Gather gradient rule.

The exporter turns an embedding into a plain Gather and drops ``padding_idx`` (whose row torch
never gives a gradient) and ``scale_grad_by_freq`` (torch divides each row's gradient by how often
the batch looks it up; the exporter refuses it in training mode, our symbolic below exports the
plain lookup). We record, per Gather an embedding's weight feeds, both in the model's metadata
(``EMBEDDINGS_KEY``, JSON {node name: {"padding_idx": int | None, "scale_grad_by_freq": bool}}).
"""
from __future__ import annotations

import dataclasses
import json

import onnx
import torch

EMBEDDINGS_KEY = "reference.embeddings"


@dataclasses.dataclass(frozen=True)
class EmbeddingOptions:
    padding_idx: int | None = None
    scale_grad_by_freq: bool = False


def record_embeddings(model: onnx.ModelProto, module: torch.nn.Module, prefix: str = "module.") -> None:
    """A Gather reading an embedding's weight, as the graph input ``prefix + <its key in
    named_parameters()>`` (tied weights are found by identity), is that embedding's lookup."""
    keys = {id(p): prefix + key for key, p in module.named_parameters()}
    options = {keys[id(sub.weight)]: EmbeddingOptions(sub.padding_idx, sub.scale_grad_by_freq)
               for sub in module.modules() if isinstance(sub, torch.nn.Embedding) and id(sub.weight) in keys}
    found = {node.name: dataclasses.asdict(options[node.input[0]]) for node in model.graph.node
             if node.op_type == "Gather" and node.input[0] in options and options[node.input[0]] != EmbeddingOptions()}
    if found:
        model.metadata_props.append(onnx.StringStringEntryProto(key=EMBEDDINGS_KEY, value=json.dumps(found)))


def embedding_options(model: onnx.ModelProto, node_name: str) -> EmbeddingOptions:
    entry = next((e.value for e in model.metadata_props if e.key == EMBEDDINGS_KEY), None)
    recorded = None if entry is None else json.loads(entry).get(node_name)
    return EmbeddingOptions(**recorded) if recorded else EmbeddingOptions()


def embedding(g, weight, indices, padding_idx, scale_grad_by_freq, sparse):
    """The lookup alone (a Gather): what it drops is recorded by :func:`record_embeddings`."""
    return g.op("Gather", weight, indices)
