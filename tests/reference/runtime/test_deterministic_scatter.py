"""Under torch's deterministic mode, CUDA graphs get ``ScatterND(add)`` over the first axis as a
one-hot product summed in float64 (reference/runtime/kernel_forms/deterministic_scatter.py): checked
here on the CPU against the exact sums, with repeated, negative and absent ids, any trailing shape
and dtype, and left alone where the indices address more than the first axis."""
import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from reference.runtime import kernel_forms, threads
from reference.runtime.kernel_forms.deterministic_scatter import scatter_add_as_products

DTYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}


def embedding_grad_model(dtype, rank: int, depth: int = 1):
    """zeros-or-data ScatterND(add) of updates at Unsqueeze(ids, -1), as the Gather gradient builds it."""
    elem = DTYPES[dtype]
    inputs = [helper.make_tensor_value_info("data", elem, [None] * rank),
              helper.make_tensor_value_info("ids", TensorProto.INT64, [None, None] if depth == 1 else [None, depth]),
              helper.make_tensor_value_info("updates", elem, None)]
    nodes = [helper.make_node("ScatterND", ["data", "positions", "updates"], ["y"], reduction="add")]
    if depth == 1:
        nodes.insert(0, helper.make_node("Unsqueeze", ["ids", "last"], ["positions"]))
    else:
        nodes.insert(0, helper.make_node("Identity", ["ids"], ["positions"]))
    graph = helper.make_graph(nodes, "scatter", inputs, [helper.make_tensor_value_info("y", elem, None)],
                              [helper.make_tensor("last", TensorProto.INT64, [1], [-1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def run(model, **feeds):
    options = threads.configure(ort.SessionOptions())
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def exact(data, ids, updates):
    """The float64 sum of data and every update per row, rounded once to the dtype (exact for the
    few float32 and float16 terms drawn here)."""
    total = data.astype(np.float64).copy()
    np.add.at(total, ids % data.shape[0], updates.astype(np.float64))
    return total.astype(data.dtype)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 7), tail=st.lists(st.integers(0, 3), max_size=2), lookups=st.tuples(st.integers(0, 3), st.integers(0, 5)),
       dtype=st.sampled_from(sorted(DTYPES, key=str)), zero_data=st.booleans(), negative=st.booleans(), seed=st.integers(0, 2**16))
def test_first_axis_scatter_add_is_the_exact_sum_rounded_once(rows, tail, lookups, dtype, zero_data, negative, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(-rows if negative else 0, rows, size=lookups)
    data = np.zeros([rows, *tail], dtype) if zero_data else rng.standard_normal([rows, *tail]).astype(dtype)
    updates = rng.standard_normal([*lookups, *tail]).astype(dtype)
    model = embedding_grad_model(dtype, 1 + len(tail))
    rewritten = scatter_add_as_products(model)
    assert "ScatterND" not in {node.op_type for node in rewritten.graph.node}
    assert "MatMul" in {node.op_type for node in rewritten.graph.node}
    got = run(rewritten, data=data, ids=ids, updates=updates)
    assert got.dtype == data.dtype and got.shape == data.shape
    if dtype is np.float64:  # summed in its own precision: the order of the sums shows in the last bits
        np.testing.assert_allclose(got, exact(data, ids, updates), rtol=1e-14, atol=1e-14)
    else:
        np.testing.assert_array_equal(got, exact(data, ids, updates))


def test_the_rewritten_graph_gives_the_same_bits_every_run():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 5, size=(64, 16))  # many collisions per row
    updates = rng.standard_normal((64, 16, 8)).astype(np.float32)
    data = np.zeros((5, 8), np.float32)
    model = scatter_add_as_products(embedding_grad_model(np.float32, 2))
    first = run(model, data=data, ids=ids, updates=updates)
    for _ in range(3):
        assert run(model, data=data, ids=ids, updates=updates).tobytes() == first.tobytes()


def test_indices_addressing_more_than_the_first_axis_are_left_alone():
    model = embedding_grad_model(np.float32, 2, depth=2)
    assert scatter_add_as_products(model) is model


def test_only_the_deterministic_forms_rewrite_it():
    model = embedding_grad_model(np.float32, 2)
    assert "ScatterND" in {node.op_type for node in kernel_forms.for_device(model, "cuda").graph.node}
    assert "ScatterND" not in {node.op_type for node in kernel_forms.deterministic(model).graph.node}


@pytest.mark.parametrize("reduction", ["none", "mul", "max"])
def test_other_reductions_are_left_alone(reduction):
    model = embedding_grad_model(np.float32, 2)
    for attribute in model.graph.node[1].attribute:
        attribute.s = reduction.encode()
    assert scatter_add_as_products(model) is model


def test_a_session_builds_its_cuda_providers_from_the_deterministic_form_only_under_deterministic_mode():
    import onnx

    from reference.runtime import Session
    from reference.runtime.cuda import TorchFlags

    session = Session(embedding_grad_model(np.float32, 2))  # on the CPU: the form is chosen per provider flags
    ops = lambda deterministic: {node.op_type for node in onnx.ModelProto.FromString(  # noqa: E731
        session.cuda_model(TorchFlags(False, False, deterministic, 0, 1))).graph.node}
    assert "ScatterND" in ops(False)
    assert "ScatterND" not in ops(True) and "MatMul" in ops(True)
