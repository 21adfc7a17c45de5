"""The autodiff stage (docs/architecture.md): reverse-mode gradients over ONNX graphs.

``build_gradient_graphs(model, requires_grad)`` returns a forward graph that also outputs the
activations backward needs, and a backward graph from output gradients to input gradients. One rule
per op type lives in ``rules/op_<optype>.py``; an op on a differentiable path without a rule raises
``UnsupportedOpError`` naming the op and the node.
"""
from reference.autodiff.builder import GradientGraphs, build_gradient_graphs
from reference.autodiff.errors import UnsupportedOpError
from reference.autodiff.registry import gradient_rule, supported_ops

__all__ = ["GradientGraphs", "UnsupportedOpError", "build_gradient_graphs", "gradient_rule", "supported_ops"]
