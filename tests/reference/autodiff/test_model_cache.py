"""The per-graph memo: shape inference and gradient graphs computed once per graph, again for any edit;
gradient graphs copied to each caller and built afresh while a fault is injected."""
import onnx
import pytest
from onnx import TensorProto, helper

from reference.autodiff.model_cache import per_graph


def _relu_model(name: str = "y") -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], [name])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])])
    return helper.make_model(graph)


def test_the_same_graph_is_computed_once_and_an_edited_one_again():
    calls = []

    @per_graph
    def outputs(model, suffix=""):
        calls.append(model.graph.output[0].name)
        return [value.name + suffix for value in model.graph.output]

    assert outputs(_relu_model()) == ["y"]
    assert outputs(_relu_model()) == ["y"]  # an equal graph, another object
    assert outputs(_relu_model("z")) == ["z"]
    assert outputs(_relu_model(), suffix="!") == ["y!"]  # other arguments are part of the key
    assert calls == ["y", "z", "y"]


def test_a_failure_is_not_remembered():
    attempts = []

    @per_graph
    def flaky(model):
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first time")
        return "ok"

    with pytest.raises(RuntimeError):
        flaky(_relu_model())
    assert flaky(_relu_model()) == "ok"
    assert len(attempts) == 2


def test_it_forgets_the_oldest_graph_beyond_its_bound(monkeypatch):
    import reference.autodiff.model_cache as model_cache

    monkeypatch.setattr(model_cache, "MAX_GRAPHS", 2)
    calls = []

    @per_graph
    def name(model):
        calls.append(model.graph.output[0].name)
        return calls[-1]

    for value in ("a", "b", "c", "a"):
        name(_relu_model(value))
    assert calls == ["a", "b", "c", "a"]  # "a" was forgotten when "c" came


def test_each_caller_gets_its_own_copy_and_nothing_is_remembered_while_unless_holds():
    calls, injected = [], []

    @per_graph(copy=list, unless=lambda: bool(injected))
    def names(model):
        calls.append(1)
        return [value.name for value in model.graph.output]

    first = names(_relu_model())
    first.append("edited by its caller")
    assert names(_relu_model()) == ["y"] and len(calls) == 1
    injected.append(True)
    assert names(_relu_model()) == ["y"] and len(calls) == 2  # computed afresh
    injected.clear()
    assert names(_relu_model()) == ["y"] and len(calls) == 2  # and the fresh one was not remembered


def _mul_model() -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in ("x", "w")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_gradient_graphs_are_built_once_per_graph_and_copied_to_each_caller():
    from reference.autodiff import build_gradient_graphs

    first = build_gradient_graphs(_mul_model(), ["x", "w"])
    second = build_gradient_graphs(_mul_model(), ["x", "w"])
    assert first.backward.SerializeToString() == second.backward.SerializeToString()
    assert first.forward is not second.forward and first.input_grads is not second.input_grads
    first.backward.graph.node.pop()  # a caller editing its graphs (the memory optimizer rewrites them)
    third = build_gradient_graphs(_mul_model(), ["x", "w"])
    assert third.backward.SerializeToString() == second.backward.SerializeToString()
    assert list(build_gradient_graphs(_mul_model(), ["x"]).input_grads) == ["x"]  # other inputs: another build


def test_a_fault_injected_after_a_good_build_is_built_with_the_fault():
    """A control overriding a seam must see its fault, not a good build remembered before it."""
    from reference.autodiff import build_gradient_graphs, registry

    build_gradient_graphs(_mul_model(), ["x", "w"])

    def broken(ctx, node):
        raise RuntimeError("the injected rule ran")

    with registry.rule_replaced("Mul", broken), pytest.raises(RuntimeError, match="the injected rule ran"):
        build_gradient_graphs(_mul_model(), ["x", "w"])
    build_gradient_graphs(_mul_model(), ["x", "w"])  # the good build again after the block
