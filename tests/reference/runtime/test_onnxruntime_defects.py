"""onnxruntime defects the reference works around, each as a standalone graph: a strict expected
failure, so the run says when an onnxruntime upgrade fixes one and its workaround can go."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from reference.runtime import threads


def _run(model, feeds, level):
    options = threads.configure(ort.SessionOptions())
    options.graph_optimization_level = level
    options.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.xfail(strict=True, raises=Exception,
                   reason="onnxruntime's transpose optimizer (basic level) permutes a Pad's pads as if they covered "
                          "every axis, ignoring its axes input: 'indices element out of data bounds' in the Gather it "
                          "adds. The reference's gradient rules pad every axis (rules/common.py, pad_on_axes)")
def test_transpose_optimizer_honours_the_axes_input_of_pad():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Pad", ["t", "pads", "", "axes"], ["p"]),
             helper.make_node("Transpose", ["p"], ["y"], perm=[1, 0, 2])]
    graph = helper.make_graph(nodes, "pad_between_transposes",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b", "c"]),
                               helper.make_tensor_value_info("pads", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([2], np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32),
             "pads": np.array([1, 0], np.int64)}
    unoptimized = _run(model, feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    assert unoptimized.shape == (2, 3, 5)
    np.testing.assert_array_equal(_run(model, feeds, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)[0], unoptimized)
