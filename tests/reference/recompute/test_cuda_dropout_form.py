"""A Dropout the memory optimizer recomputes from its mask computes, on CUDA, in the CUDA kernel's
order: ``T(float(x) * mask * (1.0f / (1.0f - ratio)))`` (reference/runtime/kernel_forms/cuda_dropout.py;
onnxruntime 1.31's dropout_impl.cu). Checked on the CPU: the form is the recompute clone's own graph
rewritten, its values equal that arithmetic in numpy bit for bit, and it leaves other graphs alone."""
import numpy as np
import onnxruntime
import pytest

from reference.recompute import optimize
from reference.recompute.config import load
from reference.runtime import threads
from reference.runtime.kernel_forms import for_device
from reference.runtime.kernel_forms.cuda_dropout import recomputed_dropout_as_cuda


def test_the_recompute_clones_of_a_bloom_with_dropout_get_the_cuda_arithmetic(bloom):
    optimized, _ = optimize(bloom.graphs, 0, load(["Dropout+:1:-1"]), bloom.sizes)
    backward = optimized.backward
    clones = [n.name for n in backward.graph.node if n.name.endswith("/Mask")]
    assert clones, "the plan recomputes the Dropouts"
    cuda = for_device(backward, "cuda")
    names = {n.name for n in cuda.graph.node}
    assert not names & set(clones) and all(f"{name}__cuda_scale" in names for name in clones)
    assert recomputed_dropout_as_cuda(bloom.graphs.backward) is bloom.graphs.backward  # nothing recomputed


@pytest.mark.parametrize("dtype, ratio", [(np.float32, 0.1), (np.float32, 0.5), (np.float64, 0.1), (np.float64, 0.3)])
def test_the_form_computes_the_kernels_arithmetic_bit_for_bit(dtype, ratio):
    from onnx import TensorProto, helper, numpy_helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    keep = np.array(np.float32(1.0) - np.float32(ratio), dtype=dtype)  # as reference.recompute.rewrite writes it
    nodes = [helper.make_node("Constant", [], ["keep"], value=numpy_helper.from_array(keep)),
             helper.make_node("Cast", ["mask"], ["kept"], to=elem),
             helper.make_node("Div", ["x", "keep"], ["scaled"], name="d_recompute/Scale"),
             helper.make_node("Mul", ["scaled", "kept"], ["y"], name="d_recompute/Mask")]
    graph = helper.make_graph(nodes, "clone", [helper.make_tensor_value_info("x", elem, None),
                                               helper.make_tensor_value_info("mask", TensorProto.BOOL, None)],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = recomputed_dropout_as_cuda(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8))
    rng = np.random.default_rng(0)
    x, mask = rng.standard_normal(4096).astype(dtype), rng.random(4096) > ratio
    session = onnxruntime.InferenceSession(model.SerializeToString(), threads.configure(onnxruntime.SessionOptions()),
                                           providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x, "mask": mask})
    scale = np.float32(1.0) / (np.float32(1.0) - np.float32(ratio))
    expected = ((x.astype(np.float32) * mask.astype(np.float32)) * scale).astype(dtype)
    assert y.dtype == dtype and y.tobytes() == expected.tobytes()
    if ratio != 0.5:  # 1 / 0.5 is exact: both orders agree there
        assert (x / keep * mask).tobytes() != expected.tobytes(), "the CPU kernel's order differs: the form has work to do"
