"""Cutting the backward graph: where the cuts fall, what each stage reads, hands on, delivers and
frees, on hand-built graphs whose answer is known."""
from onnx import TensorProto, helper

from reference.export.reads import reads
from reference.runtime.cuts import plan


def graph(nodes, inputs, outputs):
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)  # noqa: E731
    return helper.make_graph(nodes, "g", [value(n) for n in inputs], [value(n) for n in outputs])


def node(op, inputs, output):
    return helper.make_node(op, inputs, [output])


def test_a_cut_follows_each_completed_gradient_and_values_are_freed_after_their_last_reader():
    g = graph([node("Neg", ["dy"], "w2_grad"),        # stage 0
               node("Mul", ["dy", "a"], "t"),
               node("Relu", ["t"], "w1_grad"),        # stage 1
               node("Add", ["t", "a"], "dx")],        # the tail
              ["dy", "a"], ["w2_grad", "w1_grad", "dx"])
    stages = plan(g, ["w1_grad", "w2_grad"])
    assert [[n.output[0] for n in s.nodes] for s in stages] == [["w2_grad"], ["t", "w1_grad"], ["dx"]]
    assert [s.delivers for s in stages] == [["w2_grad"], ["w1_grad"], []]
    assert [s.inputs for s in stages] == [["dy"], ["a", "dy"], ["a", "t"]]
    assert stages[1].outputs == ["t", "w1_grad"]         # t crosses into the tail
    assert stages[1].drops == ["dy"] and stages[2].drops == ["a", "t"]
    assert [s.handed_over for s in stages] == [["w2_grad"], ["w1_grad"], []]
    assert "dx" not in stages[2].drops                    # the caller reads the inputs' gradient


def test_a_gradient_passed_through_from_an_input_is_delivered_before_any_node_runs():
    g = graph([node("Neg", ["dy"], "w_grad")], ["dy"], ["dy", "w_grad"])
    stages = plan(g, ["dy", "w_grad"])
    assert [s.delivers for s in stages] == [["dy"], ["w_grad"], []]
    assert not stages[0].nodes and stages[0].handed_over == []  # stage 1 still reads it


def test_a_gradient_a_later_stage_reads_stays_live_until_then():
    g = graph([node("Neg", ["dy"], "b_grad"), node("Mul", ["b_grad", "dy"], "w_grad")],
              ["dy"], ["b_grad", "w_grad"])
    stages = plan(g, ["b_grad", "w_grad"])
    assert stages[0].handed_over == [] and "b_grad" in stages[1].drops


def test_names_a_subgraph_reads_from_outside_count_as_reads():
    body = helper.make_graph([node("Neg", ["outer"], "y")], "body", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    if_node = helper.make_node("If", ["cond"], ["z"], then_branch=body, else_branch=body)
    assert reads(if_node) == ["cond", "outer"]  # once, in first-read order
