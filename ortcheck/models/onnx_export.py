"""The export every ORTModule-style pipeline performs, for checking what a model exports to.

TorchScript exporter, training mode, no constant folding, batch and sequence as dynamic axes:
the same call the pipelines make, so an op type seen here is an op type they must handle.
"""
from __future__ import annotations

import io
import warnings
from typing import Sequence

import onnx
import torch

AXIS_NAMES = ("batch", "sequence")


def export_training_graph(module: torch.nn.Module, inputs: Sequence[torch.Tensor],
                          dynamic: Sequence[str] = AXIS_NAMES) -> onnx.ModelProto:
    """Export ``module(*inputs)`` with the leading axes of every input and of the output dynamic,
    named by ``dynamic`` (``("batch",)`` for inputs without a sequence axis)."""
    input_names = [f"input_{i}" for i in range(len(inputs))]
    axes = dict(enumerate(dynamic))
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
        torch.onnx.export(module, tuple(t.detach() for t in inputs), buffer, dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=input_names, output_names=["output"],
                          dynamic_axes={name: axes for name in [*input_names, "output"]})
    return onnx.load_model_from_string(buffer.getvalue())


def op_types(model: onnx.ModelProto) -> list[str]:
    """The distinct op types of the main graph, sorted."""
    return sorted({node.op_type for node in model.graph.node})



def run_exported(model: onnx.ModelProto, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """The output of an :func:`export_training_graph` graph under onnxruntime (CPU inference)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {f"input_{i}": t.detach().cpu().numpy() for i, t in enumerate(inputs)}
    return torch.from_numpy(session.run(["output"], feeds)[0])
