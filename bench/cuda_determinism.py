"""Which of onnxruntime's CUDA kernels give different bits from run to run on the same inputs, with
``use_deterministic_compute`` on and torch's provider options.

Each case is one node (or a small graph) the reference's gradient graphs emit, on inputs where
parallel kernels meet collisions (repeated indices, long reductions). It runs ``--runs`` times in
one session and again in a fresh session; a case whose outputs differ in any bit names the kernel
a recompute level can move. The reference's deterministic forms (``reference.runtime.kernel_forms
.deterministic``) run beside the kernels they replace. The last case trains an embedding through
the reference under torch's deterministic mode and compares the weight's gradient across runs.

    python bench/cuda_determinism.py [--runs 5] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from reference.runtime import cuda, kernel_forms, session as ref_session

F, I = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs, outputs=("y",), initializers=()):
    graph = helper.make_graph(nodes, "case", [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
                              [helper.make_tensor_value_info(n, F, None) for n in outputs], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def cases(rng):
    ints = lambda values: helper.make_tensor(f"c{len(values)}_{values[0]}", I, [len(values)], values)  # noqa: E731
    ids = rng.integers(0, 64, size=(16, 512))
    scatter = model([helper.make_node("Unsqueeze", ["ids", "last"], ["pos"]),
                     helper.make_node("ScatterND", ["data", "pos", "upd"], ["y"], reduction="add")],
                    [("data", F), ("ids", I), ("upd", F)], initializers=[helper.make_tensor("last", I, [1], [-1])])
    scatter_feed = {"data": np.zeros((64, 256), np.float32), "ids": ids,
                    "upd": rng.standard_normal((16, 512, 256)).astype(np.float32)}
    yield "ScatterND(add) embedding gradient", scatter, scatter_feed
    yield "ScatterND(add) as one-hot product (deterministic form)", kernel_forms.deterministic(scatter), scatter_feed
    elements_ids = rng.integers(0, 32, size=(256, 1024))
    yield "ScatterElements(add) axis 1 (GatherElements, Pad, MaxPool gradients)", model(
        [helper.make_node("ScatterElements", ["data", "ids", "upd"], ["y"], axis=1, reduction="add")],
        [("data", F), ("ids", I), ("upd", F)]), {
        "data": np.zeros((256, 32), np.float32), "ids": elements_ids,
        "upd": rng.standard_normal((256, 1024)).astype(np.float32)}
    maxpool_ids = rng.integers(0, 4096, size=(1 << 16,))
    yield "ScatterElements(add) axis 0, flat (MaxPool gradient)", model(
        [helper.make_node("ScatterElements", ["data", "ids", "upd"], ["y"], axis=0, reduction="add")],
        [("data", F), ("ids", I), ("upd", F)]), {
        "data": np.zeros((4096,), np.float32), "ids": maxpool_ids, "upd": rng.standard_normal(1 << 16).astype(np.float32)}
    big = rng.standard_normal((8192, 512)).astype(np.float32)
    for axes, name in (([0], "axis 0 (bias gradients)"), ([1], "last axis"), ([0, 1], "everything (loss)")):
        yield f"ReduceSum {name}", model([helper.make_node("ReduceSum", ["x", f"c{len(axes)}_{axes[0]}"], ["y"], keepdims=0)],
                                          [("x", F)], initializers=[ints(axes)]), {"x": big}
    yield "MatMul [512,8192]x[8192,512] (weight gradients)", model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", F), ("b", F)]), {
        "a": rng.standard_normal((512, 8192)).astype(np.float32), "b": rng.standard_normal((8192, 512)).astype(np.float32)}
    for dtype, elem in ((np.float64, TensorProto.DOUBLE), (np.float32, F)):
        yield f"MatMul {np.dtype(dtype).name} [64,8192]x[8192,256] (the one-hot product's shape)", _matmul(elem), {
            "a": (rng.random((64, 8192)) < 0.02).astype(dtype), "b": rng.standard_normal((8192, 256)).astype(dtype)}
    yield "Gemm transA (weight gradients)", model(
        [helper.make_node("Gemm", ["a", "b"], ["y"], transA=1)], [("a", F), ("b", F)]), {
        "a": rng.standard_normal((8192, 512)).astype(np.float32), "b": rng.standard_normal((8192, 512)).astype(np.float32)}
    yield "LayerNormalization", model(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], [("x", F), ("g", F), ("b", F)]), {
        "x": big, "g": np.ones(512, np.float32), "b": np.zeros(512, np.float32)}
    yield "Softmax", model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [("x", F)]), {"x": big}
    yield "CumSum", model([helper.make_node("CumSum", ["x", "c1_1"], ["y"])], [("x", F)], initializers=[ints([1])]), {"x": big}
    image = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)
    yield "ConvTranspose (convolution input gradient)", model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [("x", F), ("w", F)]), {
        "x": image, "w": rng.standard_normal((64, 32, 3, 3)).astype(np.float32)}
    yield "Conv", model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [("x", F), ("w", F)]), {
        "x": image, "w": rng.standard_normal((32, 64, 3, 3)).astype(np.float32)}


def _matmul(elem):
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "case",
                              [helper.make_tensor_value_info(n, elem, None) for n in ("a", "b")],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def session_for(proto) -> ort.InferenceSession:
    flags = cuda.TorchFlags(False, False, True, 0, torch.cuda.current_stream().cuda_stream)
    options = ref_session.session_options()
    options.use_deterministic_compute = True
    provider = {**cuda.provider_options(flags), "has_user_compute_stream": "0"}
    provider.pop("user_compute_stream")
    return ort.InferenceSession(proto.SerializeToString(), options, providers=["CUDAExecutionProvider"],
                                provider_options=[provider], disabled_optimizers=ref_session.STASH_DEPENDENT_FUSIONS)


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units of the last place of the outputs' own dtype."""
    view = np.int64 if a.dtype == np.float64 else np.int32
    a, b = (x.astype(np.float64 if view is np.int64 else np.float32).view(view).astype(np.int64) for x in (a, b))
    return int(np.abs(a - b).max()) if a.size else 0


def embedding_case(runs: int) -> dict:
    """An embedding trained through the reference under torch's deterministic mode: the gradient's bits."""
    from reference import Options, ReferenceModule

    grads = []
    torch.use_deterministic_algorithms(True)
    try:
        for _ in range(runs):
            torch.manual_seed(0)
            module = torch.nn.Sequential(torch.nn.Embedding(64, 256), torch.nn.Linear(256, 8)).cuda()
            ids = torch.randint(0, 64, (16, 512), device="cuda", generator=torch.Generator("cuda").manual_seed(1))
            ReferenceModule(module, Options(device="cuda"))(ids).square().sum().backward()
            grads.append(module[0].weight.grad.cpu().numpy())
    finally:
        torch.use_deterministic_algorithms(False)
    worst = max(ulps(grads[0], g) for g in grads[1:])
    return {"case": "reference: Embedding gradient under torch's deterministic mode", "varies": worst > 0, "max_ulp": worst}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name, proto, feed in cases(rng):
        try:
            outputs = [session_for(proto).run(None, feed)[0] for _ in range(2)]
            first = session_for(proto)
            outputs += [first.run(None, feed)[0] for _ in range(args.runs)]
            worst = max(ulps(outputs[0], out) for out in outputs[1:])
            rows.append({"case": name, "varies": worst > 0, "max_ulp": worst})
        except Exception as error:  # noqa: BLE001 - a refused kernel is a row too
            rows.append({"case": name, "error": str(error).splitlines()[0][:200]})
    rows.append(embedding_case(args.runs))
    for row in rows:
        verdict = row.get("error") or ("VARIES, up to %d ulp" % row["max_ulp"] if row["varies"] else "same bits")
        print(f"{row['case']:70s} {verdict}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"device": torch.cuda.get_device_name(), "onnxruntime": ort.__version__, "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
