"""The reference's sessions on a GPU (``--device cuda``): torch's stream and numbers, a bounded
number of providers, and no host round-trip (reference/runtime/cuda.py, pool.py)."""
import pytest
import torch
from onnx import TensorProto, helper

from reference.runtime import Session, pool

pytestmark = pytest.mark.gpu


def matmul_model(name: str = "matmul"):
    """A MatMul graph; Sessions over one graph share a session, so a new ``name`` makes another."""
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)  # noqa: E731
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], name, [value("a"), value("b")], [value("y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def test_float32_products_are_float32_not_tf32_under_torchs_defaults():
    generator = torch.Generator(device="cuda").manual_seed(0)
    a, b = (torch.randn(512, 512, device="cuda", generator=generator) for _ in range(2))
    (y,) = Session(matmul_model(), "cuda").run([a, b])
    truth = a.double() @ b.double()
    error = (y.double() - truth).abs().max().item()
    eager = ((a @ b).double() - truth).abs().max().item()
    assert error <= 8 * eager, f"error {error:.3g} vs eager's {eager:.3g}: TF32 (about 1e-3 relative)?"


def test_sessions_run_on_torchs_current_stream():
    session = Session(matmul_model(), "cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        a = torch.randn(256, 256, device="cuda")
        (y,) = session.run([a, a])
        options = session.inference_session.get_provider_options()["CUDAExecutionProvider"]
        assert int(options["user_compute_stream"]) == stream.cuda_stream
        torch.testing.assert_close(y, a @ a, rtol=1e-5, atol=1e-4)  # ordered on one stream, no sync needed


def test_hundreds_of_sessions_stay_within_the_providers_bound():
    sessions = [Session(matmul_model(f"matmul{i}"), "cuda") for i in range(pool.limit("cuda") + 44)]
    assert pool.live("cuda") <= pool.limit("cuda")
    a = torch.eye(4, device="cuda")
    for session in sessions[:3] + sessions[-3:]:
        (y,) = session.run([a, a])
        assert y.device.type == "cuda" and torch.equal(y, a)


def test_runs_on_torchs_default_stream_are_ordered_with_torchs_kernels():
    """torch's legacy default stream (handle 0) is "no stream" to the provider: the reference then
    computes on a side stream ordered by events. A chain of runs whose inputs torch frees and whose
    outputs torch reads at once must give torch's numbers (the first GPU run read NaN here)."""
    assert torch.cuda.current_stream().cuda_stream == 0
    session = Session(matmul_model(), "cuda")
    w = torch.linalg.qr(torch.randn(256, 256, device="cuda"))[0]  # orthogonal: the chain neither grows nor fades
    x = torch.randn(256, 256, device="cuda")
    y = x.clone()
    for _ in range(50):
        (out,) = session.run([x.clone(), w])  # the clone is freed as soon as run returns
        x = out * 1.0 + 0.0  # read on torch's stream right away
        y = (y @ w) * 1.0 + 0.0
    torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-4)


def test_an_empty_reduction_that_drops_its_axis_runs():
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)  # noqa: E731
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    graph = helper.make_graph([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], "sum",
                              [value("x")], [value("y")], [axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)
    (y,) = Session(model, "cuda").run([torch.zeros(0, 3, device="cuda")])
    assert torch.equal(y, torch.zeros(3, device="cuda"))


def test_an_embeddings_gradient_has_the_same_bits_every_run_under_torchs_deterministic_mode():
    """onnxruntime's CUDA ScatterND adds colliding rows with atomics; under torch's deterministic mode
    the reference's CUDA graphs sum them as a one-hot product (kernel_forms/deterministic_scatter.py)."""
    from reference import Options, ReferenceModule

    def gradient():
        torch.manual_seed(0)
        module = torch.nn.Sequential(torch.nn.Embedding(64, 256), torch.nn.Linear(256, 8)).cuda()
        ids = torch.randint(0, 64, (16, 512), device="cuda", generator=torch.Generator("cuda").manual_seed(1))
        ReferenceModule(module, Options(device="cuda"))(ids).square().sum().backward()
        return module[0].weight.grad.clone()

    torch.use_deterministic_algorithms(True)
    try:
        first = gradient()
        for _ in range(3):
            assert torch.equal(gradient(), first)
    finally:
        torch.use_deterministic_algorithms(False)
