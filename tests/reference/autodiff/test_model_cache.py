"""The per-graph memo of shape inference: one computation per graph, another for any edit."""
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
