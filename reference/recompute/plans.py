"""Find what can be recomputed: occurrences traced bottom-up from stashed values, clustered into plans.

An *occurrence* is one forward node whose stashed outputs backward could recompute instead of
reading, with the subgraph that recomputes them. Tracing walks up from that node through the
allow-list (only the inputs each op's rule traces) and stops at what backward can read anyway:
graph inputs, constants, values stashed anyway, and (level >= 1) transformer layer inputs. An
input it cannot stop at nor trace through ends the occurrence, unless it is a small statically
shaped value (a *kept leaf*), which the plan stashes instead. Occurrences whose subgraphs spell the
same op types in topological order (``Reshape+Where+Softmax+``) form one *plan*.

Strategy 1 recomputes the subgraph; strategy 2 (compromise) exists where a stashed value is a
Cast of a smaller input: it stashes the input and recomputes only the Cast.
"""
from __future__ import annotations

import dataclasses
import functools

import onnx
import sympy

from reference.recompute import allow_list
from reference.recompute.graph import ForwardFacts
from reference.seams import Seam

RECOMPUTE, COMPROMISE = 1, 2
STRATEGIES = {0: "none", RECOMPUTE: "recompute", COMPROMISE: "recompute with compromise"}
# Fault injection (reference.seams): bytes added to each recompute occurrence's claimed saving.
SAVING_OVERSTATED_BY = Seam("bytes each recompute occurrence over-claims", 0)


@dataclasses.dataclass(frozen=True)
class Occurrence:
    node: onnx.NodeProto           # the forward node whose stashed outputs are recomputed
    outputs: tuple[str, ...]       # those outputs
    subgraph: tuple[onnx.NodeProto, ...]  # forward nodes to clone, in topological order
    kept_leaves: tuple[str, ...]   # values the plan stashes in place of the outputs
    strategy: int
    saving: sympy.Expr             # bytes no longer stashed (kept leaves not subtracted)

    @property
    def name(self) -> str:
        return "".join(f"{node.op_type}+" for node in self.subgraph)


@dataclasses.dataclass(frozen=True)
class Plan:
    name: str
    strategy: int
    occurrences: tuple[Occurrence, ...]  # in topological order

    @property
    def key(self) -> tuple[str, int]:
        return self.name, self.strategy

    @functools.cached_property
    def saving(self) -> sympy.Expr:
        """The occurrences' savings summed, expanded to one canonical polynomial (``simplify`` would
        factor it for display, at ~40 ms a plan: a tenth of a recompute build; the bytes are the same)."""
        return sympy.expand(sum((o.saving for o in self.occurrences), sympy.Integer(0)))


def find_plans(facts: ForwardFacts, level: int, boundaries: set[str] | None = None) -> list[Plan]:
    """Every plan of the forward graph at ``level`` (plans at level 0 use the base allow-list).
    ``boundaries``: the layer inputs tracing stops at (default: :func:`layer_inputs` from level 1)."""
    if boundaries is None:
        boundaries = layer_inputs(facts) if level >= 1 else set()
    occurrences = []
    for node in facts.nodes:
        if any(name in boundaries for name in node.output):
            continue
        # compromise is the fallback where the whole subgraph cannot be recomputed
        occurrence = _recompute(facts, node, level, boundaries) or _compromise(facts, node)
        if occurrence is not None:
            occurrences.append(occurrence)
    clusters: dict[tuple[str, int], list[Occurrence]] = {}
    for occurrence in occurrences:
        clusters.setdefault((occurrence.name, occurrence.strategy), []).append(occurrence)
    return [Plan(name, strategy, tuple(found)) for (name, strategy), found in clusters.items()]


def layer_inputs(facts: ForwardFacts) -> set[str]:
    """Inputs of pre-LN transformer layers: a LayerNormalization's input read by exactly that
    LayerNormalization and a residual Add, with a Softmax on the way from one to the other."""
    found = set()
    for norm in facts.nodes:
        if norm.op_type not in ("LayerNormalization", "SimplifiedLayerNormalization"):
            continue
        x = norm.input[0]
        readers = [n for n in facts.consumers.get(x, []) if n.op_type != "Shape"]  # shape reads keep no data
        adds = [n for n in readers if n.op_type == "Add" and n is not norm]
        if len(readers) == 2 and len(adds) == 1 and _softmax_between(facts, norm, adds[0]):
            found.add(x)
    return found


def _softmax_between(facts: ForwardFacts, start: onnx.NodeProto, residual: onnx.NodeProto) -> bool:
    seen, stack, softmax = set(), [start], False
    limit = facts.order[id(residual)]
    reaches = False
    while stack:
        node = stack.pop()
        if id(node) in seen or facts.order[id(node)] > limit:
            continue
        seen.add(id(node))
        if node is residual:
            reaches = True
            continue
        softmax |= node.op_type == "Softmax"
        stack += [reader for name in node.output for reader in facts.consumers.get(name, [])]
    return reaches and softmax


def _recompute(facts: ForwardFacts, node: onnx.NodeProto, level: int, boundaries: set[str]) -> Occurrence | None:
    rule = allow_list.rule(node.op_type, node.domain, level)
    if rule is None:
        return None
    outputs = _stashed_outputs(facts, node, rule)
    if not outputs:
        return None
    subgraph, leaves, stack = {id(node): node}, {}, [node]
    while stack:
        current = stack.pop()
        current_rule = allow_list.rule(current.op_type, current.domain, level)
        if current.op_type == "Dropout" and not _mask_stashed(facts, current):
            return None  # recomputing it would draw a new mask
        traced = allow_list.traced(current_rule, len(current.input))
        for i, name in enumerate(current.input):
            if not name or facts.is_free(name) or name in facts.stashed or name in boundaries:
                continue
            producer = facts.producer[name]
            if i in traced and allow_list.rule(producer.op_type, producer.domain, level) is not None:
                if id(producer) not in subgraph:
                    subgraph[id(producer)] = producer
                    stack.append(producer)
            elif facts.is_small_static(name, allow_list.KEPT_LEAF_MAX_ELEMENTS):
                leaves[name] = None
            else:
                return None
    ordered = tuple(sorted(subgraph.values(), key=lambda n: facts.order[id(n)]))
    saving = sum((facts.nbytes(name) for name in outputs), sympy.Integer(0)) + SAVING_OVERSTATED_BY.value
    return Occurrence(node, outputs, ordered, tuple(leaves), RECOMPUTE, saving)


def _compromise(facts: ForwardFacts, node: onnx.NodeProto) -> Occurrence | None:
    if node.op_type != "Cast" or node.domain or node.output[0] not in facts.stashed:
        return None
    source, target = node.input[0], node.output[0]
    if facts.is_free(source) or facts.itemsize(source) >= facts.itemsize(target):
        return None
    saving = facts.nbytes(target) - facts.nbytes(source)  # ratio 1 - input bytes / output bytes
    return Occurrence(node, (target,), (node,), (source,), COMPROMISE, saving)


def _stashed_outputs(facts: ForwardFacts, node: onnx.NodeProto, rule: allow_list.Recomputable) -> tuple[str, ...]:
    indices = range(len(node.output)) if rule.outputs is None else rule.outputs
    return tuple(node.output[i] for i in indices if i < len(node.output) and node.output[i] in facts.stashed)


def _mask_stashed(facts: ForwardFacts, dropout: onnx.NodeProto) -> bool:
    """Whether backward can rebuild the output from the forward's mask (and a constant ratio)."""
    ratio = dropout.input[1] if len(dropout.input) > 1 else ""
    constant_ratio = not ratio or facts.constant(ratio) is not None or ratio in facts.initializers
    return constant_ratio and len(dropout.output) > 1 and dropout.output[1] in facts.stashed
