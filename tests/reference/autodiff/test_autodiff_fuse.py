"""The backward-graph rewrites (reference/autodiff/fuse), each on a hand-built float64 graph: it
removes the kernels it is for, leaves what it must not touch, and computes the same values
(bit for bit where the rewrite claims so, else within float64 rounding of numpy's result); then
attention and Linear gradients in float64 through the whole builder, fused."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from hypothesis import given, settings, strategies as st
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from reference.autodiff.fuse import REWRITES, fuse
from reference.autodiff.fuse.biased_products import fold_biases_into_products
from reference.autodiff.fuse.common_subexpressions import share_common_subexpressions
from reference.autodiff.fuse.graph import SAME_SHAPE_SUM
from reference.autodiff.fuse.summed_products import accumulate_products_in_gemm
from reference.autodiff.fuse.scaled_products import fold_scales_into_products
from reference.autodiff.fuse.transposed_operands import fold_transposed_operands
from reference.autodiff.fuse.transposed_results import fold_transposed_results
from reference.runtime import threads

F64 = TensorProto.DOUBLE


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


def model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F64, s) for n, s in inputs.items()],
                              [onnx.ValueInfoProto(name=n) for n in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(v, dtype=np.float64), k)
                                           for k, v in dict(initializers).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def run(proto, feeds):
    options = threads.configure(ort.SessionOptions())  # the process's pool once the reference made one
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def ops(proto):
    return sorted(n.op_type for n in proto.graph.node)


def values(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def test_common_subexpressions_merge_identical_nodes_bit_for_bit():
    proto = model([node("Flatten", ["x"], ["f1"], axis=2), node("Flatten", ["x"], ["f2"], axis=2),
                   node("Flatten", ["x"], ["f3"], axis=1),  # another attribute: kept
                   node("Exp", ["f1"], ["e1"]), node("Exp", ["f2"], ["e2"]),  # equal once f1 and f2 are one
                   node("Add", ["e1", "e2"], ["s"]), node("ReduceSum", ["f3"], ["r"]), node("Mul", ["s", "r"], ["y"]),
                   node("Exp", ["f1"], ["out2"])],  # a graph output keeps its producer
                  {"x": [2, 3, 4]}, ["y", "out2"])
    fused = share_common_subexpressions(proto)
    assert ops(fused) == ["Add", "Exp", "Exp", "Flatten", "Flatten", "Mul", "ReduceSum"]
    (x,) = values([2, 3, 4])
    for got, want in zip(run(fused, {"x": x}), run(proto, {"x": x})):
        np.testing.assert_array_equal(got, want)


def test_common_subexpressions_never_merge_random_nodes():
    proto = model([node("RandomNormalLike", ["x"], ["a"]), node("RandomNormalLike", ["x"], ["b"]),
                   node("Sub", ["a", "b"], ["y"])], {"x": [3]}, ["y"])
    assert ops(share_common_subexpressions(proto)) == ["RandomNormalLike", "RandomNormalLike", "Sub"]


@pytest.mark.parametrize("shapes, perms, product", [
    (([3, 4, 5], [3, 4, 2]), ([0, 2, 1], None), "FusedMatMul"),   # A transposed, batched
    (([6, 5], [3, 4, 5]), (None, [0, 2, 1]), "FusedMatMul"),      # B transposed, broadcast batch
    (([2, 3, 5, 4], [2, 3, 6, 5]), ([0, 1, 3, 2], [0, 1, 3, 2]), "FusedMatMul"),  # both
    (([5, 4], [6, 5]), ([1, 0], [1, 0]), "Gemm"),                   # 2-D: a plain Gemm
    (([4, 5], [6, 5]), (None, []), "Gemm"),                         # the default perm of a 2-D Transpose
])
def test_transposed_operands_fold_into_the_product(shapes, perms, product):
    nodes, names = [], []
    for name, perm in zip("ab", perms):
        if perm is None:
            names.append(name)
            continue
        nodes.append(node("Transpose", [name], [f"{name}t"], **({"perm": perm} if perm else {})))
        names.append(f"{name}t")
    proto = model(nodes + [node("MatMul", names, ["y"])], dict(zip("ab", shapes)), ["y"])
    fused = fold_transposed_operands(proto)
    assert ops(fused) == [product]
    a, b = values(*shapes)
    want = np.matmul(*(np.swapaxes(v, -1, -2) if p is not None else v for v, p in zip((a, b), perms)))
    np.testing.assert_allclose(run(fused, {"a": a, "b": b})[0], want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("perm, shapes", [
    ([0, 2, 1, 3], ([2, 3, 5, 4], [2, 3, 4, 6])),  # not the last two axes
    ([1, 0], ([5], [5, 6])),                        # a 1-D operand promotes: not rewritten
])
def test_transposed_operands_leave_other_transposes(perm, shapes):
    proto = model([node("Transpose", ["b"], ["bt"], perm=perm), node("MatMul", ["a", "bt"], ["y"])],
                  dict(zip("ab", shapes)), ["y"])
    assert ops(fold_transposed_operands(proto)) == ["MatMul", "Transpose"]


def test_transposed_operands_keep_a_transpose_other_nodes_read():
    proto = model([node("Transpose", ["a"], ["at"], perm=[0, 2, 1]), node("MatMul", ["at", "b"], ["y"]),
                   node("Exp", ["at"], ["z"])], {"a": [3, 4, 5], "b": [3, 4, 2]}, ["y", "z"])
    fused = fold_transposed_operands(proto)
    assert ops(fused) == ["Exp", "FusedMatMul", "Transpose"]
    a, b = values([3, 4, 5], [3, 4, 2])
    for got, want in zip(run(fused, {"a": a, "b": b}), run(proto, {"a": a, "b": b})):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("product, perm, shapes, left", [
    (node("Gemm", ["a", "b"], ["p"], transA=1), [1, 0], ([5, 4], [5, 6]), ["Gemm"]),  # a Linear's dW
    (node("Gemm", ["a", "b"], ["p"], transB=1, alpha=0.5), [1, 0], ([4, 5], [6, 5]), ["Gemm"]),
    (node("MatMul", ["a", "b"], ["p"]), [0, 2, 1], ([3, 4, 5], [5, 6]), ["FusedMatMul"]),
    (node("MatMul", ["a", "b"], ["p"]), [0, 3, 1, 2], ([2, 3, 5, 4], [2, 3, 4, 6]), ["FusedMatMul", "Transpose"]),
])
def test_transposed_results_swap_the_operands(product, perm, shapes, left):
    proto = model([product, node("Transpose", ["p"], ["y"], perm=perm)], dict(zip("ab", shapes)), ["y"])
    fused = fold_transposed_results(proto)
    assert ops(fused) == left
    a, b = values(*shapes)
    np.testing.assert_allclose(run(fused, {"a": a, "b": b})[0], run(proto, {"a": a, "b": b})[0],
                               rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("nodes, reason", [
    ([node("MatMul", ["a", "b"], ["p"]), node("Transpose", ["p"], ["y"], perm=[1, 0, 2, 3])], "keeps the last axis"),
    ([node("MatMul", ["a", "b"], ["p"]), node("Transpose", ["p"], ["y"], perm=[0, 2, 3, 1])], "strided either way"),
    ([node("MatMul", ["a", "b"], ["p"]), node("Transpose", ["p"], ["y"], perm=[0, 1, 3, 2]),
      node("Exp", ["p"], ["z"])], "the product is read elsewhere"),
])
def test_transposed_results_leave_what_does_not_pay(nodes, reason):
    proto = model(nodes, {"a": [2, 3, 5, 4], "b": [2, 3, 4, 6]}, [n.output[0] for n in nodes[1:]])
    assert ops(fold_transposed_results(proto)) == ops(proto), reason


def test_scales_fold_into_products_bit_for_bit():
    """The attention gradient's ``Div(g, 8)`` read by two products, one of whose results is then
    halved, and a scale that is no power of two (kept)."""
    proto = model([node("Div", ["g", "eight"], ["gs"]),
                   node("MatMul", ["gs", "k"], ["dq"]),
                   node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]), node("MatMul", ["qt", "gs"], ["dk"]),
                   node("Mul", ["dk", "half"], ["dk_half"]),
                   node("Mul", ["three", "dq"], ["dq_three"])],
                  {"g": [3, 4, 4], "k": [3, 4, 5], "q": [3, 4, 6]}, ["dq_three", "dk_half"],
                  {"eight": 8.0, "half": [0.5], "three": 3.0})
    fused = fold_scales_into_products(fold_transposed_operands(proto))
    assert ops(fused) == ["FusedMatMul", "FusedMatMul", "Mul"]
    alphas = sorted(a.f for n in fused.graph.node for a in n.attribute if a.name == "alpha")
    assert alphas == [0.0625, 0.125]  # 1/8 and 1/8 · 1/2
    g, k, q = values([3, 4, 4], [3, 4, 5], [3, 4, 6])
    feeds = {"g": g, "k": k, "q": q}
    for got, want in zip(run(fused, feeds), run(proto, feeds)):
        np.testing.assert_array_equal(got, want)


def test_scales_stay_where_something_else_reads_them():
    proto = model([node("Mul", ["g", "quarter"], ["gs"]), node("MatMul", ["gs", "k"], ["y"]),
                   node("Exp", ["gs"], ["z"])], {"g": [3, 4], "k": [4, 5]}, ["y", "z"], {"quarter": 0.25})
    assert ops(fold_scales_into_products(proto)) == ops(proto)


def test_scales_never_fold_into_a_gemm_that_adds_a_bias():
    proto = model([node("Gemm", ["x", "w", "b"], ["y"]), node("Mul", ["y", "half"], ["out"])],
                  {"x": [3, 4], "w": [4, 5], "b": [5]}, ["out"], {"half": 0.5})
    assert ops(fold_scales_into_products(proto)) == ["Gemm", "Mul"]


@pytest.mark.parametrize("x_shape, transposed, outputs, fused", [
    ([6, 4], False, ["z"], ["Exp", "Gemm"]),
    ([2, 3, 4], True, ["z"], ["Concat", "Constant", "Exp", "Flatten", "Gemm", "Reshape", "Shape"]),
    ([2, 3, 4], False, ["z", "m"], None),  # the unbiased product is read by the caller too
    ([2, 3, 4], True, ["z", "y"], None),   # a stashed result of rank 3 would be copied out of the Reshape
    ([6, 4], True, ["z", "y"], ["Exp", "Gemm"]),  # a stashed 2-D result is the Gemm's own
])
def test_biases_fold_into_products(x_shape, transposed, outputs, fused):
    w_shape = [5, 4] if transposed else [4, 5]
    product = (node("FusedMatMul", ["x", "w"], ["m"], domain="com.microsoft", transB=1, alpha=1.0) if transposed
               else node("MatMul", ["x", "w"], ["m"]))
    proto = model([product, node("Add", ["b", "m"], ["y"]), node("Exp", ["y"], ["z"])],
                  {"x": x_shape, "w": w_shape, "b": [5]}, outputs)
    proto.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    folded = fold_biases_into_products(proto)
    assert ops(folded) == (fused or ops(proto))
    x, w, b = values(x_shape, w_shape, [5])
    got, want = run(folded, {"x": x, "w": w, "b": b})[0], np.exp(x @ (w.T if transposed else w) + b)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_biases_stay_when_they_are_not_one_per_output_column():
    proto = model([node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["y"])],
                  {"x": [6, 4], "w": [4, 5], "b": [6, 1]}, ["y"])
    assert ops(fold_biases_into_products(proto)) == ["Add", "MatMul"]


@pytest.mark.parametrize("x_shape, marked, extra, fused", [
    ([2, 3, 4], True, False, ["Concat", "Constant", "Flatten", "Flatten", "Flatten", "Gemm", "Gemm", "Gemm", "Reshape",
                              "Shape"]),
    ([6, 4], True, True, ["Gemm", "Gemm", "Gemm", "Sum"]),  # a summand that is no product stays in a Sum
    ([2, 3, 4], False, False, None),  # a Sum the builder did not mark may broadcast: kept
])
def test_summed_products_accumulate_in_one_gemm_chain(x_shape, marked, extra, fused):
    """The gradient of a value read by three Linear layers (attention's query, key and value)."""
    products = [node("MatMul", [f"dy{k}", f"w{k}"], [f"p{k}"]) for k in range(3)]
    summands = [f"p{k}" for k in range(3)] + (["other"] if extra else [])
    total = node("Sum", summands, ["dx"], doc_string=SAME_SHAPE_SUM if marked else None)
    shapes = {**{f"dy{k}": [*x_shape[:-1], 5] for k in range(3)}, **{f"w{k}": [5, 4] for k in range(3)}}
    if extra:
        shapes["other"] = x_shape
    proto = model([*products, total], shapes, ["dx"])
    folded = accumulate_products_in_gemm(proto)
    assert ops(folded) == (fused or ops(proto))
    feeds = dict(zip(shapes, values(*shapes.values())))
    want = sum(feeds[f"dy{k}"] @ feeds[f"w{k}"] for k in range(3)) + (feeds["other"] if extra else 0)
    np.testing.assert_allclose(run(folded, feeds)[0], want, rtol=1e-14, atol=1e-14)


def test_the_loop_runs_every_rewrite_and_refuses_unknown_names():
    assert list(REWRITES) == ["common_subexpressions", "transposed_operands", "transposed_results", "scaled_products",
                              "summed_products", "biased_products"]
    with pytest.raises(ValueError, match="unknown rewrites"):
        fuse(model([], {}, []), skip=["no_such_rewrite"])


def test_the_loop_runs_only_the_rewrites_whose_ops_the_graph_holds(monkeypatch):
    called = []
    for name, function in REWRITES.items():
        monkeypatch.setitem(REWRITES, name, lambda proto, name=name, function=function: called.append(name) or
                            function(proto))
    fuse(model([node("Exp", ["x"], ["e"]), node("Add", ["e", "x"], ["y"])], {"x": [2, 2]}, ["y"]))
    assert called == ["common_subexpressions"]
    called.clear()
    fuse(model([node("MatMul", ["x", "x"], ["p"]), node("Add", ["p", "x"], ["y"])], {"x": [2, 2]}, ["y"]))
    assert called == ["common_subexpressions", "transposed_operands", "biased_products"]


_SQUARE = 3  # every drawn value is [_SQUARE, _SQUARE], so any op reads any values
# What each rewrite matches, as nodes reading two earlier values a, b and writing ``out`` (through
# ``out/...`` in between), and plain ops that none match.
_MOTIFS = {
    "product": lambda a, b, out: [node("MatMul", [a, b], [out])],
    "transposed operand": lambda a, b, out: [node("Transpose", [a], [f"{out}/t"], perm=[1, 0]),
                                             node("MatMul", [f"{out}/t", b], [out])],
    "transposed result": lambda a, b, out: [node("Gemm", [a, b], [f"{out}/p"]),
                                            node("Transpose", [f"{out}/p"], [out], perm=[1, 0])],
    "scaled": lambda a, b, out: [node("MatMul", [a, b], [f"{out}/p"]), node("Div", [f"{out}/p", "two"], [out])],
    "biased": lambda a, b, out: [node("MatMul", [a, b], [f"{out}/p"]), node("Add", [f"{out}/p", "b"], [out])],
    "summed": lambda a, b, out: [node("MatMul", [a, "w"], [f"{out}/p"]), node("MatMul", [b, "w"], [f"{out}/q"]),
                                 node("Sum", [f"{out}/p", f"{out}/q"], [out], doc_string=SAME_SHAPE_SUM)],
    "not a power of two": lambda a, b, out: [node("Mul", [a, "three"], [out])],
    "elementwise": lambda a, b, out: [node("Add", [a, b], [f"{out}/s"]), node("Exp", [f"{out}/s"], [out])],
}


@st.composite
def _graphs(draw):
    """Small graphs of some of the motifs, each reading values written before it."""
    values, nodes = ["x", "w"], []
    for k, motif in enumerate(draw(st.lists(st.sampled_from(sorted(_MOTIFS)), min_size=1, max_size=4))):
        nodes += _MOTIFS[motif](draw(st.sampled_from(values)), draw(st.sampled_from(values)), f"v{k}")
        values.append(f"v{k}")
    return _square_model(nodes, draw(st.lists(st.sampled_from(values[2:]), min_size=1, max_size=2, unique=True)))


def _square_model(nodes, outputs):
    return model(nodes, {"x": [_SQUARE, _SQUARE], "w": [_SQUARE, _SQUARE]}, outputs,
                 {"two": 2.0, "three": 3.0, "b": np.ones(_SQUARE)})


def _assert_fused_as_by_every_rewrite(proto):
    every = proto
    for function in REWRITES.values():
        every = function(every)
    assert fuse(proto).SerializeToString(deterministic=True) == every.SerializeToString(deterministic=True)


@settings(deadline=None)
@given(_graphs())
def test_skipping_a_rewrite_whose_ops_are_absent_changes_no_graph(proto):
    """What the loop skips would have matched nothing: the result is the one of running them all."""
    _assert_fused_as_by_every_rewrite(proto)


@pytest.mark.parametrize("motif", sorted(_MOTIFS))
def test_each_motif_alone_is_fused_as_by_every_rewrite(motif):
    """Each motif without the others' ops, where a rewrite's needs too narrow would skip it."""
    _assert_fused_as_by_every_rewrite(_square_model(_MOTIFS[motif]("x", "w", "y"), ["y"]))


def attention(q, k, v):
    return F.softmax(q @ k.transpose(-1, -2) / 8, dim=-1) @ v


@pytest.mark.parametrize("fn, args, wrt, absent, forward_absent", [
    (attention, [torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3)], (0, 1, 2), {"Transpose", "Div"},
     {"Div"}),  # the forward graph keeps the transposes it stashes for backward
    (lambda x, w: F.linear(x, w).transpose(-1, -2), [torch.randn(2, 5, 4, dtype=torch.float64),
                                                      torch.randn(6, 4, dtype=torch.float64)], (0, 1), {"MatMul"},
     set()),
    (lambda x, w, b: F.linear(x, w, b).exp(), [torch.randn(2, 5, 4, dtype=torch.float64),
                                               torch.randn(6, 4, dtype=torch.float64),
                                               torch.randn(6, dtype=torch.float64)], (0, 1, 2), {"Transpose"},
     {"Transpose", "MatMul", "Add"}),
    (lambda x, a, b: F.linear(x, a) * F.linear(x, b), [torch.randn(2, 5, 4, dtype=torch.float64),
                                                        torch.randn(6, 4, dtype=torch.float64),
                                                        torch.randn(6, 4, dtype=torch.float64)], (0, 1, 2),
     {"Sum", "MatMul"}, {"Transpose"}),
], ids=["attention", "linear_transposed", "linear_biased", "read_by_two_linears"])
def test_fused_gradients_in_float64(fn, args, wrt, absent, forward_absent, harness):
    """Through the whole builder: the gradients hold against autograd at float64 tolerances and
    neither graph has the kernels the rewrites fold away (the forward graph is fused too)."""
    torch.manual_seed(0)
    runner = harness.check_gradients(fn, args, wrt_args=wrt, dynamic=False)  # static: no batch reductions between
    backward_ops = set(harness.op_types(runner.graphs.backward))
    forward_ops = set(harness.op_types(runner.graphs.forward))
    assert {"FusedMatMul", "Gemm"} & backward_ops and not absent & backward_ops, backward_ops
    assert not forward_absent & forward_ops, forward_ops
