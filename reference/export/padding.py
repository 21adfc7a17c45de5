"""``nn.Embedding(padding_idx=...)`` survives export: the exporter turns an embedding into a plain
Gather and drops ``padding_idx``, whose row torch never gives a gradient. We record, per Gather an
embedding's weight feeds, its padding index in the model's metadata (``PADDING_KEY``, JSON
{node name: index}); the Gather gradient rule reads it and drops that row's gradient."""
from __future__ import annotations

import json

import onnx
import torch

PADDING_KEY = "reference.embedding_padding_idx"


def record_embedding_padding(model: onnx.ModelProto, module: torch.nn.Module, prefix: str = "module.") -> None:
    """A Gather reading a padded embedding's weight, as the graph input ``prefix + <its key in
    named_parameters()>`` (tied weights are found by identity), is that embedding's lookup."""
    keys = {id(p): prefix + key for key, p in module.named_parameters()}
    padding = {keys[id(sub.weight)]: sub.padding_idx for sub in module.modules()
               if isinstance(sub, torch.nn.Embedding) and sub.padding_idx is not None and id(sub.weight) in keys}
    found = {node.name: padding[node.input[0]] for node in model.graph.node
             if node.op_type == "Gather" and node.input[0] in padding}
    if found:
        model.metadata_props.append(onnx.StringStringEntryProto(key=PADDING_KEY, value=json.dumps(found)))


def padding_of(model: onnx.ModelProto, node_name: str) -> int | None:
    entry = next((e.value for e in model.metadata_props if e.key == PADDING_KEY), None)
    return None if entry is None else json.loads(entry).get(node_name)
