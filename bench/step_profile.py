"""Where a steady-state training step of the reference goes, phase by phase.

Same model and step as ``step_time.py`` (Bloom-like LM 4x256, batch 8x128, SGD). The first step
exports and one more warms up; neither is timed. The pipeline's own functions are wrapped from this
process only (nothing in ``reference/`` changes): input flatten, the transition checks, the state
lookup, each session run split into onnxruntime's run and the DLPack feeding around it, the
gradient hand-over, output unflatten and the user's loss and optimizer; what is left is Python and
autograd overhead. Eager steps are interleaved with the reference's, so noise hits both alike; the
ratio depends on the CPU, which is printed first. ``--torch-profiler`` adds one profiled step,
with the phases as labelled ranges (onnxruntime's kernels are invisible to torch's profiler).

    python bench/step_profile.py [--steps 5] [--torch-profiler] [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import inspect
import json
import os
import statistics
import sys
import time
from collections import defaultdict

import torch

import step_time
from step_time import BATCH, CONFIG, make_step
from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.models.bloom import build_bloom, example_input_ids


class Phases:
    """Seconds and calls per wrapped function, summed while ``active``. A name may hold ``{dir}``:
    ``fwd`` or ``bwd``, whichever of the runner's forward/backward the call is inside."""

    def __init__(self):
        self.seconds, self.calls = defaultdict(float), defaultdict(int)
        self.active = self.profiling = False
        self.direction = "other"

    def timed(self, name: str, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not self.active:
                return fn(*args, **kwargs)
            key = name.format(dir=self.direction)
            label = torch.profiler.record_function(key) if self.profiling else contextlib.nullcontext()
            started = time.perf_counter()
            try:
                with label:
                    return fn(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - started
                self.calls[key] += 1
        return wrapper

    def inside(self, direction: str, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            outer, self.direction = self.direction, direction
            try:
                return fn(*args, **kwargs)
            finally:
                self.direction = outer
        return wrapper


class _TimedSess:
    """onnxruntime's C session behind ``Session``, with its run timed (the rest delegates)."""

    def __init__(self, inner, phases: Phases):
        self._inner = inner
        self.run_with_ortvaluevector = phases.timed("ort run {dir}", inner.run_with_ortvaluevector)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def instrument(phases: Phases) -> None:
    """Wrap the pipeline's per-call functions where their callers look them up."""
    import reference.nested_io
    from reference.grads.at_end import OrtGraphFunction
    from reference.module import compiled, wrapper
    from reference.runtime import runner, session
    from reference.transitions import GraphState, Graphs

    def patch(owner, attribute, name):
        original = inspect.getattr_static(owner, attribute)
        if isinstance(original, (staticmethod, classmethod)):
            setattr(owner, attribute, type(original)(phases.timed(name, original.__func__)))
        else:
            setattr(owner, attribute, phases.timed(name, original))

    patch(reference.nested_io, "flatten", "flatten")
    patch(reference.nested_io, "unflatten", "unflatten")
    patch(wrapper, "refuse_hooks_inside", "hook check")
    patch(wrapper, "structure", "structure")
    patch(wrapper.ReferenceModule, "forward", "module forward")
    patch(wrapper.ReferenceModule, "_prepare", "prepare")
    patch(wrapper.ReferenceModule, "_state_tensors", "state tensors")
    patch(wrapper.ReferenceModule, "_write_buffers", "write buffers")
    patch(GraphState, "of_call", "GraphState.of_call")
    patch(Graphs, "step", "Graphs.step")
    patch(compiled, "run", "compiled run")
    patch(OrtGraphFunction, "forward", "Function.forward")
    patch(OrtGraphFunction, "backward", "Function.backward")
    runner.TrainingRunner.forward = phases.inside("fwd", runner.TrainingRunner.forward)
    runner.TrainingRunner.backward = phases.inside("bwd", runner.TrainingRunner.backward)
    patch(runner.TrainingRunner, "backward_feed", "backward feed")
    patch(session, "to_ort", "to_ort {dir}")
    patch(session, "from_ort", "from_ort {dir}")
    run = phases.timed("session run {dir}", session.Session.run)

    def session_run(self, inputs):
        live = self.inference_session
        if not isinstance(live._sess, _TimedSess):
            live._sess = _TimedSess(live._sess, phases)
        return run(self, inputs)

    session.Session.run = session_run
    # the user's part of the step (make_step looks causal_lm_loss up in step_time's globals)
    patch(step_time, "causal_lm_loss", "loss forward")
    patch(torch.autograd, "backward", "loss.backward")
    patch(torch.optim.SGD, "step", "optimizer step")
    patch(torch.optim.SGD, "zero_grad", "zero_grad")


def table(seconds: dict[str, float], steps: int, total: float) -> list[tuple[str, float]]:
    """(phase, seconds per step) rows that add up to ``total``; indented rows are parts of the row above."""
    s = {key: value / steps for key, value in seconds.items()}
    g = lambda key: s.get(key, 0.0)  # noqa: E731
    feed = {d: g(f"session run {d}") - g(f"ort run {d}") for d in ("fwd", "bwd")}
    prepare = g("prepare")
    rows = [
        ("(a) input flatten + schema (nested_io.flatten)", g("flatten")),
        ("(b) transition decision (hook check + _prepare)", g("hook check") + prepare),
        ("    refuse_hooks_inside (walks named_modules)", g("hook check")),
        ("    structure() fingerprint", g("structure")),
        ("    GraphState.of_call", g("GraphState.of_call")),
        ("    Graphs.step (decide)", g("Graphs.step")),
        ("    rest of _prepare (named_parameters, _device)",
         prepare - g("structure") - g("GraphState.of_call") - g("Graphs.step")),
        ("(c) parameter/state lookup (_state_tensors)", g("state tensors")),
        ("(d) forward session: onnxruntime run", g("ort run fwd")),
        ("(d') forward feeding: torch <-> OrtValue", feed["fwd"]),
        ("    to_ort (DLPack in)", g("to_ort fwd")),
        ("    from_ort (DLPack out)", g("from_ort fwd")),
        ("(d'') forward hand-over (Function.apply, save_for_backward)", g("compiled run") - g("session run fwd")),
        ("(e) backward session: onnxruntime run", g("ort run bwd")),
        ("(e') backward feeding: torch <-> OrtValue", feed["bwd"]),
        ("    to_ort (DLPack in)", g("to_ort bwd")),
        ("    from_ort (DLPack out)", g("from_ort bwd")),
        ("(f) gradient hand-over (Function.backward outside the run)",
         g("Function.backward") - g("session run bwd")),
        ("    backward_feed (inputs by name)", g("backward feed")),
        ("(g) output unflatten + buffer write-back", g("unflatten") + g("write buffers")),
        ("(h) user's part: loss, its backward, optimizer (eager torch)",
         g("loss forward") + g("loss.backward") - g("Function.backward") + g("optimizer step") + g("zero_grad")),
        ("    loss forward (cross-entropy)", g("loss forward")),
        ("    loss backward + autograd engine (outside our node)", g("loss.backward") - g("Function.backward")),
        ("    zero_grad + SGD step", g("optimizer step") + g("zero_grad")),
    ]
    accounted = sum(value for name, value in rows if not name.startswith(" "))
    rows.append(("(i) other: Module.__call__, Python and autograd overhead", total - accounted))
    return rows


def cpu_description() -> dict[str, str | bool]:
    model, flags = "unknown", ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = value
    return {"model": model, "avx512f": "avx512f" in flags.split(), "cores": os.cpu_count(),
            "load_average": os.getloadavg()[0],
            "torch_capability": torch.backends.cpu.get_cpu_capability()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steady steps of each")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch and onnxruntime intra-op threads")
    parser.add_argument("--torch-profiler", action="store_true", help="profile one more reference step")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cpu = cpu_description()
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores, avx512f: {'yes' if cpu['avx512f'] else 'no'}); "
          f"torch {torch.__version__} CPU capability {cpu['torch_capability']}; {args.threads} threads; "
          f"load average {os.getloadavg()[0]:.1f} (other processes on these cores slow torch's spinning threads most)")

    phases = Phases()
    instrument(phases)  # before the optimizers exist: torch wraps SGD.step when one is made
    base = build_bloom(CONFIG, seed=0)
    input_ids = example_input_ids(CONFIG, seed=0, batch=BATCH)
    reference = impls.get("reference").wrap(copy.deepcopy(base), Options())
    steps = {"eager": make_step(impls.get("eager").wrap(copy.deepcopy(base), Options()), input_ids),
             "reference": make_step(reference, input_ids)}
    first = {name: step() for name, step in steps.items()}  # the reference exports here
    for step in steps.values():
        step()  # warm-up
    exports = reference.counters().exports
    times = {name: [] for name in steps}
    for _ in range(args.steps):
        times["eager"].append(steps["eager"]())
        phases.active = True
        times["reference"].append(steps["reference"]())
        phases.active = False
    if reference.counters().exports != exports:
        raise SystemExit("the reference exported again during the timed steps: they are not steady state")

    total = statistics.fmean(times["reference"])
    eager = statistics.fmean(times["eager"])
    rows = table(phases.seconds, args.steps, total)
    print(f"\nBloom-like LM {CONFIG.num_layers}x{CONFIG.hidden_size}, batch {BATCH}x{CONFIG.max_seq_len}, SGD; "
          f"mean of {args.steps} steady steps each, interleaved (first step: reference {first['reference']:.2f} s "
          f"incl. export, eager {first['eager']:.2f} s)\n")
    print("| phase | ms per step | % of reference step |")
    print("|---|---:|---:|")
    for name, value in rows:
        shown = name if not name.startswith(" ") else "&nbsp;&nbsp;&nbsp;&nbsp;" + name.strip()
        print(f"| {shown} | {value * 1e3:.2f} | {100 * value / total:.1f} |")
    print(f"| **reference step** | **{total * 1e3:.2f}** | 100.0 |")
    print(f"| eager step | {eager * 1e3:.2f} | {100 * eager / total:.1f} |")
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"\nreference / eager: {total / eager:.2f}x (means), {medians['reference'] / medians['eager']:.2f}x (medians: "
          f"{medians['reference'] * 1e3:.1f} ms vs {medians['eager'] * 1e3:.1f} ms)")
    pipeline = sum(v for n, v in rows if n[:3] in {"(a)", "(b)", "(c)", "(f)", "(g)"} or n.startswith("(d'") or
                   n.startswith("(e'"))
    print(f"pipeline bookkeeping outside onnxruntime's runs ((a)-(c), feeding, hand-overs, (g)): {pipeline * 1e3:.2f} ms "
          f"({100 * pipeline / total:.1f}%); calls per step: "
          + ", ".join(f"{k} {phases.calls[k] // args.steps}" for k in ("to_ort fwd", "from_ort fwd", "to_ort bwd",
                                                                       "from_ort bwd")))

    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        phases.active = phases.profiling = True
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            steps["reference"]()
        phases.active = phases.profiling = False
        print("\ntorch.profiler, one reference step, top 15 by self CPU time (phase labels are the wrapped functions):\n")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))

    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"config": vars(args), "cpu": cpu,
                       "phases_ms": {name.strip(): value * 1e3 for name, value in rows},
                       "reference_step_ms": total * 1e3, "eager_step_ms": eager * 1e3, "ratio_to_eager": total / eager,
                       "median_ms": {k: v * 1e3 for k, v in medians.items()},
                       "first_step_s": first, "raw_seconds_per_step": {k: v / args.steps for k, v in phases.seconds.items()},
                       "calls_per_step": {k: v / args.steps for k, v in phases.calls.items()}}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
