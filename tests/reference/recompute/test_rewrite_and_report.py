"""Applying plans: backward reads recomputed values equal to the stashed ones bit for bit, the
stash shrinks by exactly what the report claims, and the report's numbers are the graph's."""
import onnx
import onnxruntime
import pytest
import sympy
import torch

from reference.recompute import optimize
from reference.recompute.config import load
from reference.grads import OrtGraphFunction
from reference.runtime import TrainingRunner
from tests.reference.recompute.conftest import build


def run(built, graphs):
    onnxruntime.set_seed(7)  # the same dropout masks in every run
    runner = TrainingRunner(graphs, built.graph_inputs, "cpu")
    (logits,) = OrtGraphFunction.apply(runner, *built.tensors, *built.state)
    grads = torch.autograd.grad(logits.square().mean(), built.state)
    _, stash = runner.forward([*built.tensors, *built.state])
    return logits, grads, sum(t.numel() * t.element_size() for t in stash), graphs


@pytest.mark.parametrize("level, config", [(0, ["Gelu+:1:-1", "Dropout+:1:1"]), (1, ()), (2, ())])
def test_recompute_changes_no_bit_and_saves_what_the_report_claims(bloom, level, config):
    logits, grads, stashed_bytes, _ = run(bloom, bloom.graphs)
    optimized, report = optimize(bloom.graphs, level, load(config), bloom.sizes)
    logits2, grads2, stashed_bytes2, _ = run(bloom, optimized)
    assert torch.equal(logits, logits2) and all(torch.equal(a, b) for a, b in zip(grads, grads2))
    claimed = sum(row.applied_saving for row in report.plans) - report.kept_leaf_bytes
    assert claimed > 0 and stashed_bytes - stashed_bytes2 == claimed


def test_recomputed_nodes_are_named_after_their_forward_nodes(bloom):
    optimized, _ = optimize(bloom.graphs, 0, load(["Gelu+:1:-1"]), bloom.sizes)
    recomputed = [node for node in optimized.backward.graph.node if node.name.endswith("_recompute")]
    assert [node.op_type for node in recomputed] == ["Gelu", "Gelu"]
    assert not any("Gelu_output_0" in name for name in optimized.stashed)
    # the forward graph computes what it did and only outputs less
    assert [n.name for n in optimized.forward.graph.node] == [n.name for n in bloom.graphs.forward.graph.node]


def test_the_report_is_sorted_by_saving_with_symbolic_and_concrete_bytes(bloom):
    _, report = optimize(bloom.graphs, 1, (), bloom.sizes)
    savings = [row.max_saving for row in report.plans]
    assert savings == sorted(savings, reverse=True)
    gelu = next(row for row in report.plans if row.name == "Gelu+")
    batch, seq = bloom.tensors[0].shape
    assert sympy.sympify(gelu.saving_symbolic) == sympy.sympify("1024*input_0_dim0*input_0_dim1")
    assert gelu.max_saving == 2 * batch * seq * 128 * 4  # two layers' GELU outputs, [batch, seq, 128] float32
    table = report.table()
    assert "| Plan | Status | Configs | Freq | Applied | Max Saving (Bytes) | Saving Symbolic (Bytes) |" in table
    assert "| ON | `Gelu+:1:-1` | 2 | 2 | 32768 | `1024*input_0_dim0*input_0_dim1` |" in table
    assert "[input_0_dim0, input_0_dim1, 128] x 4 B, 100% saved" in report.detail()


def test_level_0_without_config_applies_nothing_and_shows_every_plan_off(bloom):
    optimized, report = optimize(bloom.graphs, 0, (), bloom.sizes)
    assert optimized is bloom.graphs and report.plans and not any(row.enabled for row in report.plans)


def test_a_recomputed_fused_product_brings_its_domain_into_backward():
    """A Linear on a rank-3 input exports as MatMul, fused in forward into com.microsoft's FusedMatMul;
    GELU's backward reads its input, so level 1 recomputes the product there, where no
    com.microsoft op was before. The clone needs that domain's import, or
    the graph is invalid (ONNX's shape inference refused it under autocast: the transitions property,
    ``Forward(rank=3), Step(), SetMemoryOptimizer(level=1), Forward(dtype='float16')``)."""
    torch.manual_seed(0)
    model = build(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.GELU()), torch.randn(2, 5, 4))
    optimized, _ = optimize(model.graphs, 1, (), model.sizes)
    backward = optimized.backward
    recomputed = [node for node in backward.graph.node if node.name.endswith("_recompute")]
    assert any(node.domain == "com.microsoft" for node in recomputed), [n.op_type for n in recomputed]
    imported = {entry.domain for entry in backward.opset_import}
    assert {node.domain for node in backward.graph.node} <= imported | {""}
    onnx.shape_inference.infer_shapes(backward, strict_mode=True)
    (logits, grads, *_), (logits2, grads2, *_) = run(model, model.graphs), run(model, optimized)
    assert torch.equal(logits, logits2) and all(torch.equal(a, b) for a, b in zip(grads, grads2))
