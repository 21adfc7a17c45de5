"""What one of the reference's CUDA sessions costs the GPU: device memory per provider, build time,
and whether the shared arena registered. The GPU nightly plans its workers from
this (``ortcheck.envsetup.gpu_plan``).

Each variant runs in a fresh process (cuBLAS reads ``CUBLAS_WORKSPACE_CONFIG`` once per process):
the device's used memory is read (``nvidia-smi``) before CUDA starts, after torch's context and a
first kernel (one test process), then after N sessions were built and run once (their handles and
workspaces exist only after a first run), for N in ``--sessions``; per provider is the slope.

    python bench/cuda_providers.py [--sessions 2,8,20] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

VARIANTS = {  # name: environment for the child
    "default": {},
    "cublas_16x8": {"CUBLAS_WORKSPACE_CONFIG": ":16:8"},       # torch's smallest deterministic workspace
    "cublas_4096x8": {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"},   # what the convergence runs pin
}


def device_used_mib() -> int:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def graphs():
    """A product and a convolution with its gradient-free forward: what touches cuBLAS and cuDNN."""
    from onnx import TensorProto, helper

    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)  # noqa: E731
    nodes = [helper.make_node("MatMul", ["a", "b"], ["p"]), helper.make_node("Relu", ["p"], ["y"]),
             helper.make_node("Conv", ["x", "w"], ["z"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "probe", [value("a"), value("b"), value("x"), value("w")], [value("y"), value("z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def child(counts: list[int]) -> dict:
    before_cuda = device_used_mib()
    import torch

    from reference.runtime import Session, cuda, pool

    inputs = [torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda"),
              torch.randn(2, 8, 16, 16, device="cuda"), torch.randn(8, 8, 3, 3, device="cuda")]
    torch.cuda.synchronize()
    process = device_used_mib()
    pool.LIMITS["cuda"] = max(counts) + 1
    sessions, points, builds = [], [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for count in counts:
            while len(sessions) < count:
                started = time.perf_counter()
                session = Session(graphs(), "cuda")
                session.run(inputs)
                torch.cuda.synchronize()
                builds.append(time.perf_counter() - started)
                sessions.append(session)
            torch.cuda.synchronize()
            points.append((count, device_used_mib() - torch.cuda.memory_reserved() / 2**20))
    slope = (points[-1][1] - points[0][1]) / max(1, points[-1][0] - points[0][0])
    free, total = torch.cuda.mem_get_info()
    return {
        "device": torch.cuda.get_device_name(), "cores": len(os.sched_getaffinity(0)),
        "free": free + int(points[-1][1] - process) * 2**20,  # as the job will find it, without these sessions
        "total": total, "per_provider": int(slope * 2**20), "per_process": int((process - before_cuda) * 2**20),
        "points_mib": points, "build_seconds_median": sorted(builds)[len(builds) // 2],
        "shared_arena": cuda.shared_arena_registered(), "warnings": sorted({str(w.message)[:300] for w in caught}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="2,8,20")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", help="write the measurements here (gpu_plan reads them)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    counts = sorted({int(n) for n in args.sessions.split(",")})
    if args.child:
        print(json.dumps(child(counts)))
        return 0
    results = {}
    for name in args.variants.split(","):
        run = subprocess.run([sys.executable, __file__, "--child", "--sessions", args.sessions],
                             env={**os.environ, **VARIANTS[name]}, capture_output=True, text=True)
        if run.returncode:
            print(f"{name}: failed\n{run.stderr[-3000:]}", file=sys.stderr)
            continue
        results[name] = json.loads(run.stdout.strip().splitlines()[-1])
        r = results[name]
        print(f"{name:14s} {r['per_provider'] / 2**20:7.1f} MiB/provider  {r['per_process'] / 2**20:6.0f} MiB/process  "
              f"build {r['build_seconds_median'] * 1e3:6.1f} ms  shared arena {r['shared_arena']}  "
              f"points {r['points_mib']}  {r['warnings']}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"variants": results}, handle, indent=1)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
