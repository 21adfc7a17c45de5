"""Each of onnxruntime's basic-level fusions in reference.runtime.session.STASH_DEPENDENT_FUSIONS
applies or not depending on whether the value it fuses away is a graph output (a stashed value):
shown on a graph made for it, once with that value as an output and once without. With onnxruntime's
defaults the optimized graphs differ; with the reference's session options they are the same
graph, so what the memory optimizer stashes decides no rounding (recompute stays bitwise)."""
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from reference.runtime.session import STASH_DEPENDENT_FUSIONS, session_options

F = TensorProto.FLOAT
_RNG = np.random.default_rng(0)


def _const(name, shape):
    return numpy_helper.from_array(_RNG.standard_normal(shape).astype(np.float32), name)


def _scalar(name, value):
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


n = helper.make_node
# name: (nodes, graph inputs {name: shape}, initializers, the value the fusion removes, output)
PATTERNS = {
    "DivMulFusion": ([n("Div", ["one", "x"], ["r"]), n("Mul", ["y", "r"], ["out"])],
                     {"x": [4, 8], "y": [4, 8]}, [_scalar("one", 1.0)], "r"),
    "MatMulAddFusion": ([n("MatMul", ["x", "w"], ["m"]), n("Add", ["m", "b"], ["out"])],
                        {"x": [4, 8], "w": [8, 5], "b": [5]}, [], "m"),
    "GemmSumFusion": ([n("Gemm", ["x", "w"], ["m"]), n("Sum", ["m", "b"], ["out"])],
                      {"x": [4, 8], "w": [8, 5], "b": [4, 5]}, [], "m"),
    "ConvAddFusion": ([n("Conv", ["x", "w"], ["c"]), n("Add", ["c", "b"], ["out"])],
                      {"x": [1, 2, 6, 6]}, [_const("w", [3, 2, 3, 3]), _const("b", [1, 3, 1, 1])], "c"),
    "ConvMulFusion": ([n("Conv", ["x", "w"], ["c"]), n("Mul", ["c", "s"], ["out"])],
                      {"x": [1, 2, 6, 6]}, [_const("w", [3, 2, 3, 3]), _const("s", [3, 1, 1])], "c"),
    "ConvBNFusion": ([n("Conv", ["x", "w"], ["c"]),
                      n("BatchNormalization", ["c", "g", "b", "mu", "var"], ["out"])],
                     {"x": [1, 2, 6, 6]}, [_const("w", [3, 2, 3, 3]), _const("g", [3]), _const("b", [3]),
                                           _const("mu", [3]), numpy_helper.from_array(np.ones(3, np.float32), "var")],
                     "c"),
    "MatMul_BatchNormalization_Fusion": ([n("MatMul", ["x", "w"], ["m"]),
                        n("BatchNormalization", ["m", "g", "b", "mu", "var"], ["out"])],
                       {"x": [4, 8]}, [_const("w", [8, 3]), _const("g", [3]), _const("b", [3]), _const("mu", [3]),
                                       numpy_helper.from_array(np.ones(3, np.float32), "var")], "m"),
    "GeluFusionL1": ([n("Div", ["x", "sqrt2"], ["d"]), n("Erf", ["d"], ["e"]), n("Add", ["e", "one"], ["p"]),
                    n("Mul", ["x", "p"], ["xp"]), n("Mul", ["xp", "half"], ["out"])],
                   {"x": [4, 8]}, [_scalar("sqrt2", math.sqrt(2)), _scalar("one", 1.0), _scalar("half", 0.5)], "e"),
    "LayerNormFusionL1": ([n("ReduceMean", ["x", "axes"], ["mean"]), n("Sub", ["x", "mean"], ["centered"]),
                         n("Pow", ["centered", "two"], ["sq"]), n("ReduceMean", ["sq", "axes"], ["var"]),
                         n("Add", ["var", "eps"], ["ve"]), n("Sqrt", ["ve"], ["std"]),
                         n("Div", ["centered", "std"], ["normed"]), n("Mul", ["normed", "g"], ["scaled"]),
                         n("Add", ["scaled", "b"], ["out"])],
                        {"x": [4, 8]}, [numpy_helper.from_array(np.array([-1], np.int64), "axes"), _scalar("two", 2.0),
                                        _scalar("eps", 1e-5), _const("g", [8]), _const("b", [8])], "std"),
}


def _model(name: str, stashed: bool) -> onnx.ModelProto:
    nodes, inputs, initializers, removed = PATTERNS[name]
    outputs = ["out", removed] if stashed else ["out"]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, F, s) for k, s in inputs.items()],
                              [helper.make_tensor_value_info(o, F, None) for o in outputs], initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def _optimized(model: onnx.ModelProto, folder, disabled) -> tuple[list[str], np.ndarray]:
    options = session_options()
    options.optimized_model_filepath = str(folder / f"{model.graph.name}-{len(model.graph.output)}.onnx")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=disabled)
    feeds = {value.name: np.random.default_rng(1).standard_normal(
        [d.dim_value for d in value.type.tensor_type.shape.dim]).astype(np.float32) for value in model.graph.input}
    ops = sorted(node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node)
    return ops, session.run(["out"], feeds)[0]


def test_the_table_covers_every_disabled_fusion():
    assert set(PATTERNS) == set(STASH_DEPENDENT_FUSIONS)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_stash_decides_the_fusion_unless_it_is_disabled(name, tmp_path):
    free, _ = _optimized(_model(name, stashed=False), tmp_path, ())
    kept, _ = _optimized(_model(name, stashed=True), tmp_path, ())
    assert len(free) < len(kept), f"{name} no longer fuses here: {free} vs {kept}"

    free, free_out = _optimized(_model(name, stashed=False), tmp_path, STASH_DEPENDENT_FUSIONS)
    kept, kept_out = _optimized(_model(name, stashed=True), tmp_path, STASH_DEPENDENT_FUSIONS)
    assert free == kept
    np.testing.assert_array_equal(free_out, kept_out)
