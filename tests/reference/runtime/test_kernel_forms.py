"""The forms onnxruntime's kernels compute right (reference/runtime/kernel_forms/): Sigmoid built
from Exp everywhere; on CUDA reductions keep their axes then squeeze, Gelu gets an axis around it,
Sum becomes Adds, checked on the CPU to give bitwise the same numbers as the graphs they replace."""
import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from reference.runtime import threads
from reference.runtime.kernel_forms import for_cuda, for_device
from reference.runtime.kernel_forms.exact_sigmoid import exact_sigmoid
from reference.runtime.kernel_forms.kept_axes import REDUCTIONS, keep_reduced_axes


def reduction_model(op: str, rank: int, axes: list[int] | None, opset: int):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None] * rank)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inputs, initializers, attributes = ["x"], [], {"keepdims": 0}
    axes_as_input = op == "ReduceSum" and opset >= 13 or opset >= 18
    if axes is not None and axes_as_input:
        inputs.append("axes")
        initializers.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
    elif axes is not None:
        attributes["axes"] = axes
    graph = helper.make_graph([helper.make_node(op, inputs, ["y"], **attributes)], "reduce", [x], [y], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run(model, x):
    options = threads.configure(ort.SessionOptions())  # the process's pool once the reference made one
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(REDUCTIONS)), shape=st.lists(st.integers(0, 3), min_size=1, max_size=3),
       data=st.data(), opset=st.sampled_from([18, 20]), seed=st.integers(0, 2**16))
def test_rewritten_reductions_give_bitwise_the_same_values_and_shapes(op, shape, data, opset, seed):
    rank = len(shape)
    # non-negative axes: 1.31.1's CPU kernels mis-shape keepdims=1 over a negative axis of an empty
    # input ({1, 0, 0} for [0, -1] of a [0, 0, 0] input), a CPU defect the CUDA-only rewrite never meets
    axes = data.draw(st.none() | st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    if op in ("ReduceMax", "ReduceMin") and 0 in shape:
        return  # no identity: an error on every path
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    model = reduction_model(op, rank, axes, opset)
    rewritten = keep_reduced_axes(model)
    assert not any(a.name == "keepdims" and a.i == 0 for node in rewritten.graph.node for a in node.attribute)
    expected, got = run(model, x), run(rewritten, x)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceL2"])
def test_axes_given_as_an_attribute_as_in_opsets_before_18(op):
    """(Not with empty inputs: 1.31.1's CPU kernels mis-shape keepdims=1 over negative attribute axes there.)"""
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    model = reduction_model(op, 3, [0, -1], 17)
    np.testing.assert_array_equal(run(keep_reduced_axes(model), x), run(model, x))


def test_reductions_keeping_dims_or_reducing_nothing_are_left_alone():
    model = reduction_model("ReduceSum", 2, [0], 20)
    model.graph.node[0].attribute[0].i = 1
    assert keep_reduced_axes(model).graph.node == model.graph.node


def single_op_model(op: str, inputs: int, rank: int, **attributes):
    names = [f"x{i}" for i in range(inputs)]
    values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None] * rank) for n in names]
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attributes)], op.lower(), values,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def run_all(model, feeds):
    options = threads.configure(ort.SessionOptions())
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 4)], ids=str)
def test_gelu_of_any_rank_gives_bitwise_the_same_values(shape, approximate):
    model = single_op_model("Gelu", 1, len(shape), approximate=approximate)
    rewritten = for_cuda(model)
    assert [n.op_type for n in rewritten.graph.node] == ["Unsqueeze", "Gelu", "Squeeze"]
    x = {"x0": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    (expected,), (got,) = run_all(model, x), run_all(rewritten, x)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("inputs", [1, 2, 3, 5])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 3)], ids=str)
def test_sum_becomes_adds_in_input_order_bitwise(inputs, shape):
    model = single_op_model("Sum", inputs, len(shape))
    rewritten = for_cuda(model)
    assert "Sum" not in [n.op_type for n in rewritten.graph.node]
    rng = np.random.default_rng(1)
    feeds = {f"x{i}": (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 4)).astype(np.float32) for i in range(inputs)}
    (expected,), (got,) = run_all(model, feeds), run_all(rewritten, feeds)
    np.testing.assert_array_equal(got, expected)


def gradient_build(module, *args):
    """``module``'s forward and backward graphs as the reference builds them, each with the feeds one
    training call gives it."""
    from reference import nested_io
    from reference.autodiff import build_gradient_graphs
    from reference.export import export_module
    from reference.runtime import TrainingRunner

    tensors, schema = nested_io.flatten((args, {}))
    exported = export_module(module, tensors, schema, training=True)
    state = dict(module.named_parameters())
    graphs = build_gradient_graphs(exported.model, exported.state_names)
    inputs = [*tensors, *(state[key].detach() for key in exported.state_keys)]
    runner = TrainingRunner(graphs, [*exported.input_names, *exported.state_names], "cpu")
    outputs, stashed = runner.forward(inputs)
    backward = runner.backward_feed(inputs, stashed, [torch_ones_like(o) for o in outputs])
    forward = dict(zip([*exported.input_names, *exported.state_names], inputs))
    return [(model, {v.name: feeds[v.name].numpy() for v in model.graph.input})
            for model, feeds in ((graphs.forward, forward), (graphs.backward, backward))]


def torch_ones_like(tensor):
    import torch

    return torch.ones_like(tensor)


def ops(model) -> set[str]:
    return {n.op_type for n in model.graph.node}


def test_a_training_graph_computes_bitwise_the_same_after_every_cuda_form():
    """A reference gradient build (GELU, LayerNorm, broadcasts, gradient sums): its forward and
    backward graphs run on the CPU before and after the rewrites give the same bits."""
    import torch

    class Residual(torch.nn.Module):  # h read twice: its gradient is a Sum
        def __init__(self):
            super().__init__()
            self.inner, self.norm, self.outer = torch.nn.Linear(4, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, 2)

        def forward(self, x):
            h = self.inner(x)
            return self.outer(self.norm(torch.nn.functional.gelu(h) + h)).sum(0)

    torch.manual_seed(0)
    build = gradient_build(Residual(), torch.randn(3, 4))
    assert {"Gelu", "Sum"} <= ops(build[0][0]) | ops(build[1][0])  # the rewrites have work to do here
    for model, feeds in build:
        assert "Sum" not in ops(for_cuda(model))
        for expected, got in zip(run_all(model, feeds), run_all(for_cuda(model), feeds)):
            np.testing.assert_array_equal(got, expected)


def test_a_float64_training_graph_computes_the_same_after_the_float64_forms():
    """float64 embeddings, LayerNorm, softmax and cross-entropy through the CUDA forms (one-hot
    products, decomposed normalizers): forward and backward as the CPU kernels compute them, to
    float64 rounding and the LayerNorm epsilon's (the kernel adds the attribute's float32 1e-5, the
    form the double eager adds: 2.5e-13 relatively)."""
    import torch

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.norm, self.head = torch.nn.Embedding(7, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, 5)

        def forward(self, ids, labels):
            h = self.norm(self.embed(ids))
            return torch.nn.functional.cross_entropy(self.head(h).flatten(0, 1), labels) + h.softmax(-1)[..., 0].sum()

    torch.manual_seed(0)
    module = Classifier().double()
    build = gradient_build(module, torch.randint(0, 7, (3, 4)), torch.randint(0, 5, (12,)))
    before = ops(build[0][0]) | ops(build[1][0])
    assert {"LayerNormalization", "Softmax", "SoftmaxCrossEntropyLoss", "ScatterND"} <= before
    for model, feeds in build:
        rewritten = for_device(model, "cuda")
        assert not ops(rewritten) & {"LayerNormalization", "Softmax", "SoftmaxCrossEntropyLoss", "ScatterND"}
        for expected, got in zip(run_all(model, feeds), run_all(rewritten, feeds)):
            np.testing.assert_allclose(got, expected, rtol=2e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_sigmoid_from_exp_is_relatively_accurate_where_the_kernel_is_not(dtype):
    """onnxruntime's Sigmoid is 2.7e-4 off relatively at x = -9 and 0.0 below about -16.6 (float32);
    the rewrite keeps every value within a few ulp of float64's, infinities and NaN included."""
    numpy_dtype = np.float32 if dtype == TensorProto.FLOAT else np.float64
    graph = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])], "sigmoid",
                              [helper.make_tensor_value_info("x", dtype, [None])],
                              [helper.make_tensor_value_info("y", dtype, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    rewritten = exact_sigmoid(model)
    assert "Sigmoid" not in {node.op_type for node in rewritten.graph.node}
    x = np.concatenate([np.linspace(-80, 80, 20001), [-np.inf, np.inf, 0.0, -0.0]]).astype(numpy_dtype)
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    eps = np.finfo(numpy_dtype).eps
    relative = lambda y: np.abs(y[:-4].astype(np.float64) - exact[:-4]) / exact[:-4] / eps  # noqa: E731
    assert relative(run(model, x)).max() > 1000  # the kernel as it is: the reason for the rewrite
    y = run(rewritten, x)
    assert relative(y).max() < 16
    assert list(y[-4:]) == [0.0, 1.0, 0.5, 0.5]
    assert np.isnan(run(rewritten, np.array([np.nan], dtype=numpy_dtype)))[0]


def _half_model(elem_type: int):
    """x (float32) -> half -> x*x + x -> MatMul with itself transposed -> float32: each op's result in
    the half type, as a graph traced under autocast holds them."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=elem_type),
             helper.make_node("Mul", ["h", "h"], ["square"]),
             helper.make_node("Add", ["square", "h"], ["sum"]),
             helper.make_node("Transpose", ["sum"], ["sum_t"]),
             helper.make_node("MatMul", ["sum", "sum_t"], ["product"]),
             helper.make_node("Cast", ["product"], ["y"], to=TensorProto.FLOAT)]
    return helper.make_model(helper.make_graph(nodes, "half", [x], [y]), opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_ops_round_after_every_op_as_torchs_cpu_kernels(dtype):
    """Bitwise torch's CPU result (float32 compute, rounding to the half type after every op), and
    the overflow to inf GradScaler relies on, which onnxruntime's own float16 fallback drops."""
    import torch

    half = getattr(torch, dtype)
    x = np.array([[300.0, 1.0001, -2.5], [0.3, 1e-3, 7.0]], np.float32)
    model = _half_model(TensorProto.FLOAT16 if dtype == "float16" else TensorProto.BFLOAT16)
    h = torch.from_numpy(x).to(half)
    s = h * h + h
    want = (s @ s.T).float().numpy()
    got = run(for_device(model, "cpu"), x)
    assert np.array_equal(got, want, equal_nan=True), f"{got} != {want}"
    if dtype == "float16":
        assert np.isinf(want).any()  # 300**2 + 300 overflows float16's products: the case that matters


def _half_operands(model) -> list[str]:
    from reference.runtime.kernel_forms.nodes import tensor_types

    types = {name: t.elem_type for name, t in tensor_types(model).items()}
    return [n.op_type for n in model.graph.node if n.op_type != "Cast"
            and any(types.get(name) in (TensorProto.FLOAT16, TensorProto.BFLOAT16) for name in n.input)]


def test_cuda_graphs_compute_bfloat16_in_float32_and_leave_float16_to_the_provider():
    """onnxruntime's CUDA provider lacks bfloat16 comparisons and reductions and ONNX's Einsum and
    NegativeLogLikelihoodLoss admit no bfloat16: on CUDA no node but a Cast reads a bfloat16 value,
    with torch's numbers (run here on the CPU); float16 graphs keep their nodes (the provider has the
    kernels, tensor cores included)."""
    import torch

    bfloat16, float16 = _half_model(TensorProto.BFLOAT16), _half_model(TensorProto.FLOAT16)
    assert _half_operands(bfloat16) and not _half_operands(for_cuda(bfloat16))
    assert _half_operands(for_cuda(float16)) == _half_operands(float16)
    x = np.array([[300.0, 1.0001, -2.5], [0.3, 1e-3, 7.0]], np.float32)
    h = torch.from_numpy(x).to(torch.bfloat16)
    s = h * h + h
    assert np.array_equal(run(for_cuda(bfloat16), x), (s @ s.T).float().numpy())
