"""Where onnxruntime's part of a reference training step goes, op type by op type, beside eager's
aten ops, with the time of everything but matrix products side by side; and each matrix
product of the step timed alone in onnxruntime (MLAS) and torch.

Same model and step as ``step_time.py`` (Bloom-like LM 4x256, batch 8x128, SGD). onnxruntime's own
profiler times every kernel of the reference's forward and backward sessions (switched on from this
process: nothing in ``reference/`` changes); torch's profiler times eager's. The matrix products are
then timed alone, interleaved, per shape the step runs, so the last table says whether the step's
largest part can be faster in onnxruntime at all. Ratios depend on the CPU, printed first.

    python bench/op_time.py [--steps 3] [--threads 1] [--json out.json]
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import statistics
import tempfile
import time
import warnings
from collections import Counter, defaultdict

import numpy as np
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

from step_profile import cpu_description
from step_time import BATCH, CONFIG, make_step
from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.models.bloom import build_bloom, example_input_ids
import reference.runtime.session as session_module
from reference.runtime.runner import TrainingRunner

MATMULS = {"MatMul", "Gemm", "FusedMatMul", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}


def reference_kernels(steps: int, folder: str) -> tuple[dict[str, Counter], Counter]:
    """Per session ("forward"/"backward"): ms per step by op type; and the MatMul input shapes seen."""
    plain = session_module.session_options

    def profiled(arena: bool = True):
        options = plain(arena)
        options.enable_profiling, options.profile_file_prefix = True, os.path.join(folder, "ort")
        return options

    session_module.session_options = profiled
    try:
        model = impls.get("reference").wrap(copy.deepcopy(build_bloom(CONFIG, seed=0)), Options())
        step = make_step(model, example_input_ids(CONFIG, seed=0, batch=BATCH))
        step(), step()  # export and warm-up: profiled too, dropped below by counting only the last runs
        for _ in range(steps):
            step()
    finally:
        session_module.session_options = plain
    with warnings.catch_warnings():  # isinstance on every live object touches deprecated torch aliases
        warnings.simplefilter("ignore")
        (runner,) = [obj for obj in gc.get_objects() if isinstance(obj, TrainingRunner)]
    per_session, shapes = {}, Counter()
    for name, session in (("forward", runner.forward_session), ("backward", runner.backward_session)):
        path = session.inference_session.end_profiling()
        with open(path) as handle:
            events = json.load(handle)
        runs = [e for e in events if e.get("name") == "model_run"][-steps:]
        start = runs[0]["ts"]
        totals = Counter()
        for event in events:
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] >= start:
                op = event["args"]["op_name"]
                totals[op] += event["dur"] / 1000 / steps
                if op == "MatMul":
                    dims = tuple(tuple(next(iter(s.values()))) for s in event["args"]["input_type_shape"])
                    shapes[dims] += 1
        per_session[name] = totals
    for shape in shapes:
        shapes[shape] //= steps
    return per_session, shapes


def eager_ops(steps: int) -> Counter:
    step = make_step(copy.deepcopy(build_bloom(CONFIG, seed=0)), example_input_ids(CONFIG, seed=0, batch=BATCH))
    step(), step()
    with torch.profiler.profile() as profiler:
        for _ in range(steps):
            step()
    return Counter({row.key: row.self_cpu_time_total / 1000 / steps for row in profiler.key_averages()})


def matmul_session(a_shape, b_shape) -> ort.InferenceSession:
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in (("A", a_shape), ("B", b_shape))]
    output = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["Y"])], "matmul", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    options = session_module.session_options()
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def matmul_alone(shapes: Counter, repeats: int = 20) -> list[dict]:
    rows = []
    for (a_shape, b_shape), count in shapes.most_common():
        a, b = (np.random.default_rng(0).standard_normal(s, dtype=np.float32) for s in (a_shape, b_shape))
        session, ta, tb = matmul_session(a_shape, b_shape), torch.from_numpy(a), torch.from_numpy(b)
        times = defaultdict(list)
        for _ in range(repeats):
            started = time.perf_counter()
            torch.matmul(ta, tb)
            times["torch"].append(time.perf_counter() - started)
            started = time.perf_counter()
            session.run(None, {"A": a, "B": b})
            times["onnxruntime"].append(time.perf_counter() - started)
        ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
        rows.append({"a": a_shape, "b": b_shape, "per_step": count, **ms, "ratio": ms["onnxruntime"] / ms["torch"]})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch and onnxruntime intra-op threads")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_description()}; {args.threads} thread(s), {args.steps} profiled steps each")
    with tempfile.TemporaryDirectory() as folder:
        sessions, shapes = reference_kernels(args.steps, folder)
    eager = eager_ops(args.steps)
    split = {name: (sum(v for k, v in ops.items() if k in MATMULS), sum(v for k, v in ops.items() if k not in MATMULS))
             for name, ops in {**sessions, "eager": Counter({k: v for k, v in eager.items() if k.startswith("aten::")})}.items()}
    for name, ops in sessions.items():
        print(f"\nreference {name} session, ms per step by op type (kernel time):")
        for op, ms in ops.most_common(12):
            print(f"  {op:<22} {ms:8.2f}")
    print("\neager, ms per step by aten op (self CPU time):")
    for op, ms in Counter({k: v for k, v in eager.items() if k.startswith("aten::")}).most_common(12):
        print(f"  {op:<30} {ms:8.2f}")
    print(f"\n{'':<10} {'matmul ms':>10} {'other ms':>10}")
    for name, (products, rest) in split.items():
        print(f"{name:<10} {products:>10.2f} {rest:>10.2f}")
    ours = split["forward"][1] + split["backward"][1]
    print(f"\nnon-product kernels: reference {ours:.2f} ms (forward {split['forward'][1]:.2f} + backward "
          f"{split['backward'][1]:.2f}), eager {split['eager'][1]:.2f} ms: {ours / split['eager'][1]:.2f}x eager")
    rows = matmul_alone(shapes)
    print("\neach MatMul shape of the step alone, onnxruntime vs torch (median of 20):")
    for row in rows:
        print(f"  {str(row['a']):<18} x {str(row['b']):<18} x{row['per_step']:<3} torch {row['torch']:7.3f} ms  "
              f"onnxruntime {row['onnxruntime']:7.3f} ms  {row['ratio']:.2f}x")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"config": vars(args), "cpu": cpu_description(), "sessions": sessions, "eager": eager,
                       "split": split, "matmul_alone": rows}, handle, indent=2, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
