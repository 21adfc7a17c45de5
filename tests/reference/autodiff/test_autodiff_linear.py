"""MatMul (plain, batched, broadcast, vector) and Gemm rules against PyTorch autograd."""
import pytest
import torch
from onnx import TensorProto, helper

from reference.autodiff import build_gradient_graphs

r = torch.randn


def test_linear_layer_on_3d_input_uses_one_gemm_for_the_weight(harness):
    runner = harness.check_gradients(torch.nn.Linear(4, 5), [r(2, 3, 4)], more_args=[[r(1, 7, 4)]])
    assert harness.op_types(runner.graphs.backward).count("Gemm") == 1
    assert "ReduceSum" in harness.op_types(runner.graphs.backward)  # the bias only


def test_linear_layer_on_2d_input_is_gemm(harness):
    runner = harness.check_gradients(torch.nn.Linear(4, 5), [r(3, 4)], more_args=[[r(6, 4)]])
    assert "Gemm" in harness.op_types(runner.graphs.forward)


MATMUL = {
    "matrix": ([r(3, 4), r(4, 5)], [r(2, 4), r(4, 3)]),
    "batched": ([r(2, 3, 4), r(2, 4, 5)], [r(3, 2, 4), r(3, 4, 1)]),
    "broadcast_batch": ([r(2, 1, 3, 4), r(5, 4, 2)], [r(1, 3, 2, 4), r(1, 4, 2)]),
    "matrix_times_batch": ([r(3, 4), r(2, 4, 5)], [r(1, 4), r(3, 4, 2)]),
    "vector_times_matrix": ([r(4), r(2, 4, 5)], [r(3), r(1, 3, 2)]),
    "matrix_times_vector": ([r(2, 3, 4), r(4)], [r(1, 2, 3), r(3)]),
    "vector_dot": ([r(4), r(4)], [r(7), r(7)]),
}


@pytest.mark.parametrize("case", MATMUL, ids=str)
def test_matmul(case, harness):
    args, more = MATMUL[case]
    harness.check_gradients(torch.matmul, args, wrt_args=(0, 1), more_args=[more])


def test_bloom_attention_baddbmm_with_float32_softmax(harness):
    def attention(alibi, q, k, v):
        scores = alibi.baddbmm(batch1=q, batch2=k, beta=1.0, alpha=0.5)
        return torch.bmm(torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype), v)

    harness.check_gradients(attention, [r(4, 1, 3), r(4, 3, 5), r(4, 5, 3), r(4, 3, 2)], wrt_args=(0, 1, 2, 3),
                            more_args=[[r(2, 1, 6), r(2, 6, 1), r(2, 1, 6), r(2, 6, 3)]])


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (2.0, 0.5)])
@pytest.mark.parametrize("bias_shape", [(5,), (3, 5), (3, 1), (1, 5), ()], ids=str)
def test_addmm_is_gemm(alpha, beta, bias_shape, harness):
    def addmm(c, a, b):
        return torch.addmm(c, a, b, alpha=alpha, beta=beta)

    runner = harness.check_gradients(addmm, [r(bias_shape), r(3, 4), r(4, 5)], wrt_args=(0, 1, 2))
    assert "Gemm" in harness.op_types(runner.graphs.forward)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_transpose_flags(trans_a, trans_b, harness):
    """torch emits Gemm with transB only; the other flag combinations are built by hand."""
    shapes = {"A": (4, 3) if trans_a else (3, 4), "B": (5, 4) if trans_b else (4, 5), "C": (5,)}
    model = harness.make_model(
        [helper.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=1.5, beta=0.5, transA=trans_a, transB=trans_b)],
        [(name, TensorProto.FLOAT, shape) for name, shape in shapes.items()], [("Y", TensorProto.FLOAT, None)],
    )
    tensors = {name: r(shape).requires_grad_() for name, shape in shapes.items()}
    a = tensors["A"].t() if trans_a else tensors["A"]
    b = tensors["B"].t() if trans_b else tensors["B"]
    y = 1.5 * a @ b + 0.5 * tensors["C"]
    dy = torch.randn_like(y)
    expected = torch.autograd.grad(y, list(tensors.values()), dy)
    graphs = build_gradient_graphs(model, list(shapes))
    feeds = {name: t.detach().numpy() for name, t in tensors.items()}
    _, grads = harness.run_gradient_graphs(graphs, feeds, [dy.numpy()])
    for name, want in zip(tensors, expected):
        torch.testing.assert_close(torch.from_numpy(grads[name]), want)
