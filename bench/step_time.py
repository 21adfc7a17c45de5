"""Training step time of a Bloom-like causal LM: eager vs each implementation, as ratios in one run.

Shape: 4 layers, hidden 256, 4 heads, vocab 1000, batch 8 x sequence 128, SGD.
Steps of all implementations are interleaved round by round, so machine noise hits them alike;
the ratios, not the seconds, are the result. Target: reference <= 1.2x eager steady state and
first step (export + gradient build + sessions) <= 1.8 s.

    python bench/step_time.py [--impl reference,ortmodule] [--rounds 5] [--steps 4] [--device cuda] [--json out.json]
                              [--beside PYTHON]

On CUDA each step ends with a synchronization, so a step's time includes its kernels; ``--kernels``
then profiles a few more steps of each (torch's profiler sees onnxruntime's kernels too, through
CUPTI) and prints the kernels launched and their GPU time per step beside the wall time: a step
far longer than its kernels is bound by launches and host work, not by the GPU.
``--model bloom_lm_large`` takes that convergence case's shape and batch instead. The reference
and the real ORTModule need different stacks: ``--beside PYTHON`` (in ort119: the modern env's
interpreter) then measures the reference there right after, same settings, each against its own
stack's eager, and prints both ratios side by side (``tox -e bench-ort119`` does).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.convergence.cases import bloom_lm_large as large
from ortcheck.models.bloom import BloomConfig, build_bloom, causal_lm_loss, example_input_ids

CONFIG = BloomConfig(vocab_size=1000, hidden_size=256, num_heads=4, num_layers=4, max_seq_len=128)
BATCH = 8


def make_step(model: torch.nn.Module, input_ids: torch.Tensor):
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    synchronize = torch.cuda.synchronize if input_ids.is_cuda else (lambda: None)

    def step() -> float:
        synchronize()
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = causal_lm_loss(model(input_ids), input_ids)
        loss.backward()
        optimizer.step()
        synchronize()
        return time.perf_counter() - started

    return step


def measure(names: list[str], rounds: int, steps: int, device: str = "cpu", config: BloomConfig = CONFIG,
            batch: int = BATCH, kernels: bool = False) -> dict[str, dict[str, float]]:
    base = build_bloom(config, seed=0).to(device)
    input_ids = example_input_ids(config, seed=0, batch=batch).to(device)
    runners, first = {}, {}
    for name in names:
        model = impls.get(name).wrap(copy.deepcopy(base), Options(device=device))
        runners[name] = make_step(model, input_ids)
        first[name] = runners[name]()  # export, gradient build and sessions happen here
        runners[name]()  # one warm-up step
    times = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            times[name] += [runners[name]() for _ in range(steps)]
    results = {name: {"first_step_s": first[name], "median_step_s": statistics.median(times[name])} for name in names}
    if kernels:
        for name in names:
            results[name].update(kernel_time(runners[name], steps))
    return results


def kernel_time(step, steps: int) -> dict[str, float]:
    """GPU kernels per step: how many, their summed device time, beside the steps' wall time."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        wall = sum(step() for _ in range(steps))
    device_events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.device_time for e in device_events) / 1e6  # microseconds
    return {"kernels_per_step": len(device_events) / steps, "kernel_s_per_step": busy / steps,
            "profiled_wall_s_per_step": wall / steps}


def child_peak_rss(script: str, *argv: str) -> int:
    """Peak RSS of ``script --child ARGV...`` run in a fresh process (the peak is per process); the
    child prints it as its last line."""
    out = subprocess.run([sys.executable, script, "--child", *argv], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def write_json(path: str | None, args: argparse.Namespace, results: dict) -> None:
    if path:
        with open(path, "w") as handle:
            json.dump({"config": vars(args), "results": results}, handle, indent=2, default=str)


def one_impl_arguments(description: str, argv=None) -> argparse.Namespace:
    """``--impl NAME --rounds --steps --json`` of the one-implementation benchmarks, checked."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    check_impl(parser, args.impl)
    return args


def check_impl(parser: argparse.ArgumentParser, name: str) -> None:
    """A parser error unless ``name`` is a registered implementation available here."""
    if name not in impls.names():
        parser.error(f"unknown implementation {name!r}; valid: {', '.join(impls.names())}")
    if (reason := impls.get(name).unavailable_reason()) is not None:
        parser.error(f"{name} is unavailable here: {reason}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference,ortmodule", help="comma-separated; eager is always measured")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4, help="steps per implementation per round")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch and onnxruntime intra-op threads")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--model", default="bench", choices=("bench", "bloom_lm_large"))
    parser.add_argument("--kernels", action="store_true", help="CUDA: also profile kernels per step")
    parser.add_argument("--beside", metavar="PYTHON", help="also measure the reference with this interpreter")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    wanted = [name for name in args.impl.split(",") if name and name != "eager"]
    for name in wanted:
        if name not in impls.names():
            parser.error(f"unknown implementation {name!r}; valid: {', '.join(impls.names())}")
    available = [n for n in wanted if impls.get(n).unavailable_reason() is None]
    for name in set(wanted) - set(available):
        print(f"skipping {name}: {impls.get(name).unavailable_reason()}")
    config, batch = (CONFIG, BATCH) if args.model == "bench" else (large.CONFIG, large.BATCH)
    results = measure(["eager", *available], args.rounds, args.steps, args.device, config, batch,
                      args.kernels and args.device == "cuda")
    eager = results["eager"]["median_step_s"]
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU {torch.backends.cpu.get_cpu_capability()}"
    print(f"Bloom-like LM {config.num_layers}x{config.hidden_size}, batch {batch}x{config.max_seq_len}, "
          f"torch {torch.__version__}, {where}, {args.threads} threads, {args.rounds}x{args.steps} steps each")
    print(f"{'impl':<10} {'median step':>12} {'ratio':>7} {'first step':>11}")
    for name, row in results.items():
        row["ratio_to_eager"] = row["median_step_s"] / eager
        print(f"{name:<10} {row['median_step_s']:>11.3f}s {row['ratio_to_eager']:>6.2f}x {row['first_step_s']:>10.2f}s"
              + (f"  {row['kernels_per_step']:.0f} kernels, {row['kernel_s_per_step'] * 1e3:.2f} ms of kernels in "
                 f"{row['profiled_wall_s_per_step'] * 1e3:.2f} ms profiled" if "kernels_per_step" in row else ""))
    if args.beside:
        results["beside"] = beside(args)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"config": vars(args), "torch": torch.__version__, "results": results}, handle, indent=2)
    return 0


def beside(args: argparse.Namespace) -> dict:
    """The reference's ratio measured by ``args.beside`` with the same settings, printed beside ours."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "beside.json")
        subprocess.run([args.beside, __file__, "--impl", "reference", "--rounds", str(args.rounds), "--steps",
                        str(args.steps), "--threads", str(args.threads), "--device", args.device, "--model", args.model,
                        "--json", path],
                       check=True, stdout=subprocess.DEVNULL)
        with open(path) as handle:
            theirs = json.load(handle)
    print(f"\nbeside it, {args.beside} (torch {theirs['torch']}), measured right after:")
    for name, row in theirs["results"].items():
        print(f"{name:<10} {row['median_step_s']:>11.3f}s {row['ratio_to_eager']:>6.2f}x {row['first_step_s']:>10.2f}s")
    return theirs


if __name__ == "__main__":
    sys.exit(main())
