"""Where gradient rules are registered and looked up, keyed by (domain, op type) and opset.

A rule serves its op from the opset it names (``since``) until the next rule registered for that
op: where an op's semantics change between opsets (an attribute becoming an input), its rule for
the new opset is registered beside the old one and the model's opset picks.
"""
from __future__ import annotations

import bisect
import contextlib
from typing import TYPE_CHECKING, Callable, Iterator

import onnx

from reference.autodiff.errors import UnsupportedOpError
from reference.seams import Seam

if TYPE_CHECKING:
    from reference.autodiff.context import GradientContext
    from reference.autodiff.grad_node import GradNode
    from reference.autodiff.samples import Sample

# A rule returns {input index: gradient value name} for every input the node wants.
Rule = Callable[["GradientContext", "GradNode"], dict[int, str]]

_RULES: dict[tuple[str, str], list[tuple[int, Rule]]] = {}  # sorted by since
_NON_DIFFERENTIABLE: set[tuple[str, str]] = set()
_SAMPLES: dict[tuple[str, str], tuple["Sample", ...]] = {}  # each rule's own test inputs (reference.autodiff.samples)
# Fault injection (reference.seams): rules served instead of the registered ones, at every opset.
REPLACED_RULES: Seam[dict[tuple[str, str], Rule]] = Seam("replaced gradient rules", {})


def _key(op_type: str, domain: str) -> tuple[str, str]:
    return ("" if domain == "ai.onnx" else domain, op_type)


def gradient_rule(op_type: str, domain: str = "", since: int = 1,
                  samples: tuple["Sample", ...] = ()) -> Callable[[Rule], Rule]:
    """Register the decorated function as the gradient rule of ``op_type`` from opset ``since`` on,
    with the ``samples`` it is tested on (added to those of the op's other opsets)."""

    def register(rule: Rule) -> Rule:
        key = _key(op_type, domain)
        versions = _RULES.setdefault(key, [])
        if key in _NON_DIFFERENTIABLE or any(existing == since for existing, _ in versions):
            raise ValueError(f"op {op_type!r} already registered (since opset {since})")
        bisect.insort(versions, (since, rule), key=lambda entry: entry[0])
        _SAMPLES[key] = _SAMPLES.get(key, ()) + tuple(samples)
        return rule

    return register


def generation() -> int:
    """Grows with every registration: what is built from the rules is remembered under it."""
    return sum(map(len, _RULES.values())) + len(_NON_DIFFERENTIABLE)


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


def samples_of(op_type: str) -> tuple["Sample", ...]:
    """The samples registered with ``op_type``'s rules; ``op_type`` as ``supported_ops()`` names it."""
    domain, _, op = op_type.rpartition(".")
    return _SAMPLES.get((domain, op), ())


@contextlib.contextmanager
def rule_replaced(op_type: str, rule: Rule, domain: str = "") -> Iterator[None]:
    """``rule`` serves ``op_type`` inside the block, whatever the opset. Fault injection only
    (reference.seams): the positive controls' wrong gradient rules."""
    with REPLACED_RULES.overridden({**REPLACED_RULES.value, _key(op_type, domain): rule}):
        yield


def rule_for(node: onnx.NodeProto, node_name: str, opset: int) -> Rule:
    """The rule for ``node`` in a model importing its domain at ``opset``."""
    replaced = REPLACED_RULES.value.get(_key(node.op_type, node.domain))
    if replaced is not None:
        return replaced
    versions = [rule for since, rule in _RULES.get(_key(node.op_type, node.domain), []) if since <= opset]
    if not versions:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        raise UnsupportedOpError(op, node_name, supported_ops())
    return versions[-1]
