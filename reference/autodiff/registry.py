"""Where gradient rules are registered and looked up, keyed by (domain, op type)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import onnx

from reference.autodiff.errors import UnsupportedOpError

if TYPE_CHECKING:
    from reference.autodiff.context import GradientContext
    from reference.autodiff.grad_node import GradNode

# A rule returns {input index: gradient value name} for every input the node wants.
Rule = Callable[["GradientContext", "GradNode"], dict[int, str]]

_RULES: dict[tuple[str, str], Rule] = {}
_NON_DIFFERENTIABLE: set[tuple[str, str]] = set()


def _key(op_type: str, domain: str) -> tuple[str, str]:
    return ("" if domain == "ai.onnx" else domain, op_type)


def gradient_rule(op_type: str, domain: str = "") -> Callable[[Rule], Rule]:
    """Register the decorated function as the gradient rule of ``op_type``."""

    def register(rule: Rule) -> Rule:
        key = _key(op_type, domain)
        if key in _RULES or key in _NON_DIFFERENTIABLE:
            raise ValueError(f"op {op_type!r} already registered")
        _RULES[key] = rule
        return rule

    return register


def non_differentiable(*op_types: str, domain: str = "") -> None:
    """Ops whose outputs carry no gradient (shapes, comparisons, integer maths, random draws)."""
    for op_type in op_types:
        key = _key(op_type, domain)
        if key in _RULES:
            raise ValueError(f"op {op_type!r} already has a gradient rule")
        _NON_DIFFERENTIABLE.add(key)


def is_non_differentiable(node: onnx.NodeProto) -> bool:
    return _key(node.op_type, node.domain) in _NON_DIFFERENTIABLE


def supported_ops() -> list[str]:
    return sorted(op if not domain else f"{domain}.{op}" for domain, op in _RULES)


def rule_for(node: onnx.NodeProto, node_name: str) -> Rule:
    rule = _RULES.get(_key(node.op_type, node.domain))
    if rule is None:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        raise UnsupportedOpError(op, node_name, supported_ops())
    return rule
