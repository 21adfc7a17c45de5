"""On CUDA, float64 Softmax, LogSoftmax, LayerNormalization and SoftmaxCrossEntropyLoss become the ops
they are defined by (reference/runtime/kernel_forms/double_normalizers.py): onnxruntime's CUDA
kernels compute them at float32 accuracy. Checked here on the CPU against float64 torch, with every
attribute the exporter writes, and left alone where they do not apply."""
import numpy as np
import onnxruntime as ort
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from reference.runtime import threads
from reference.runtime.kernel_forms.double_normalizers import DOUBLE_FORMS, double_normalizers_decomposed

D, I = TensorProto.DOUBLE, TensorProto.INT64


def model(node, inputs, outputs, elem=D, opset=18, initializers=()):
    graph = helper.make_graph([node], "case", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, elem, None) for n in outputs], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run(proto, **feeds):
    session = ort.InferenceSession(proto.SerializeToString(), threads.configure(ort.SessionOptions()),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def decomposed(proto):
    rewritten = double_normalizers_decomposed(proto)
    assert not {n.op_type for n in rewritten.graph.node} & set(DOUBLE_FORMS)
    return rewritten


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=4e-16)


shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, data=st.data(), log=st.booleans(), seed=st.integers(0, 2**16))
def test_softmax_and_log_softmax_match_float64_torch(shape, data, log, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).standard_normal(shape) * 30
    op = "LogSoftmax" if log else "Softmax"
    proto = model(helper.make_node(op, ["x"], ["y"], axis=axis), [("x", D, [None] * len(shape))], ["y"])
    (got,) = run(decomposed(proto), x=x)
    want = (torch.log_softmax if log else torch.softmax)(torch.from_numpy(x), axis).numpy()
    assert got.shape == want.shape
    close(got, want)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(), bias=st.booleans(),
       epsilon=st.sampled_from([1e-5, 1e-12, 0.1]), seed=st.integers(0, 2**16))
def test_layer_norm_matches_float64_torch(shape, data, bias, epsilon, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3 + 100  # a dominant mean: where float32 statistics lose most
    normalized = shape[axis % len(shape):]
    scale, b = rng.standard_normal(normalized), rng.standard_normal(normalized)
    inputs = [("x", D, [None] * len(shape)), ("scale", D, None)] + ([("b", D, None)] if bias else [])
    node = helper.make_node("LayerNormalization", [i[0] for i in inputs], ["y"], axis=axis, epsilon=epsilon)
    (got,) = run(decomposed(model(node, inputs, ["y"])), x=x, scale=scale, **({"b": b} if bias else {}))
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), normalized, torch.from_numpy(scale),
                                          torch.from_numpy(b) if bias else None, epsilon).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 1])
@pytest.mark.parametrize("log_prob", [False, True])
def test_cross_entropy_matches_float64_torch(reduction, weighted, ignore_index, log_prob):
    rng = np.random.default_rng(0)
    scores, labels, weights = rng.standard_normal((6, 4, 3)) * 10, rng.integers(0, 4, (6, 3)), rng.random(4)
    inputs = [("scores", D, [None] * 3), ("labels", I, None)] + ([("weights", D, None)] if weighted else [])
    attrs = {"reduction": reduction} | ({"ignore_index": ignore_index} if ignore_index is not None else {})
    outputs = ["loss", "log_prob"] if log_prob else ["loss"]
    node = helper.make_node("SoftmaxCrossEntropyLoss", [i[0] for i in inputs], outputs, **attrs)
    got = run(decomposed(model(node, inputs, outputs)), scores=scores, labels=labels,
              **({"weights": weights} if weighted else {}))
    want = torch.nn.functional.cross_entropy(
        torch.from_numpy(scores), torch.from_numpy(labels), torch.from_numpy(weights) if weighted else None,
        ignore_index=-100 if ignore_index is None else ignore_index, reduction=reduction).numpy()
    close(got[0], want)
    if log_prob:
        close(got[1], torch.log_softmax(torch.from_numpy(scores), 1).numpy())


def test_float32_nodes_and_layer_norm_statistics_outputs_are_left_alone():
    softmax32 = model(helper.make_node("Softmax", ["x"], ["y"]), [("x", TensorProto.FLOAT, [None, None])], ["y"],
                      elem=TensorProto.FLOAT)
    assert double_normalizers_decomposed(softmax32) is softmax32
    with_stats = model(helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"]), [("x", D, [None, 3]), ("s", D, [3])],
                       ["y", "mean"])
    assert [n.op_type for n in double_normalizers_decomposed(with_stats).graph.node] == ["LayerNormalization"]


def test_models_before_opset_18_are_left_alone():
    softmax = model(helper.make_node("Softmax", ["x"], ["y"]), [("x", D, [None, None])], ["y"], opset=17)
    assert double_normalizers_decomposed(softmax) is softmax
