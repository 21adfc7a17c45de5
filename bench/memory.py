"""Recompute on the Bloom-like LM (4 layers, hidden 256, batch 8 x 128): what each memory-optimizer
level keeps between forward and backward, its peak RSS and its step time, as ratios to level 0.

Kept bytes are the tensors saved for backward themselves (``ortcheck.checks.kept``: parameters and
inputs left out), so they exist only where the implementation hands its stash to torch (reference;
ORTModule keeps it inside onnxruntime and shows n/a). Step times interleave the levels round by
round in one process; peak RSS comes from one child process per level (the peak is per process).
Targets: level 1 keeps at most the layer inputs (L x batch x seq x hidden x 4 bytes)
plus what the allow-list cannot recompute, +10%; a level-1 step costs at most 1.35x level 0.

    python bench/memory.py [--impl reference|ortmodule] [--rounds 3] [--steps 2] [--json out.json]
"""
from __future__ import annotations

import copy
import resource
import statistics
import sys

import torch

from step_time import BATCH, CONFIG, child_peak_rss, make_step, one_impl_arguments, write_json
from ortcheck import impls
from ortcheck.checks import kept_tensors
from ortcheck.impls import Capability, Options
from ortcheck.models.bloom import build_bloom, causal_lm_loss, example_input_ids

LEVELS = (0, 1, 2)


def kept_bytes(impl, model, input_ids) -> tuple[int, object]:
    with kept_tensors([*model.parameters(), input_ids]) as kept:
        logits = model(input_ids)
    loss = causal_lm_loss(logits, input_ids)
    # the loss's own saved tensors (logits for cross-entropy) are the same at every level
    loss.backward()
    return kept.nbytes, impl.memory_plans(model)


def measure(impl_name: str, rounds: int, steps: int) -> dict:
    impl = impls.get(impl_name)
    base = build_bloom(CONFIG, seed=0)
    input_ids = example_input_ids(CONFIG, seed=0, batch=BATCH)
    models = {level: impl.wrap(copy.deepcopy(base), Options(memory_opt_level=level)) for level in LEVELS}
    results = {}
    for level, model in models.items():
        nbytes, plans = kept_bytes(impl, model, input_ids)
        results[level] = {"kept_bytes": nbytes if Capability.KEPT_TENSORS_VISIBLE in impl.capabilities() else None,
                          "plans": plans.table if plans else None}
    runners = {level: make_step(model, input_ids) for level, model in models.items()}
    times = {level: [] for level in LEVELS}
    for _ in range(rounds):
        for level in LEVELS:
            times[level] += [runners[level]() for _ in range(steps)]
    for level in LEVELS:
        results[level]["median_step_s"] = statistics.median(times[level])
        results[level]["peak_rss_bytes"] = peak_rss(impl_name, level)
    return results


def peak_rss(impl_name: str, level: int) -> int:
    """Peak RSS of a fresh process that wraps the model at ``level`` and trains two steps."""
    return child_peak_rss(__file__, impl_name, str(level))


def child(impl_name: str, level: int) -> None:
    model = impls.get(impl_name).wrap(build_bloom(CONFIG, seed=0), Options(memory_opt_level=level))
    step = make_step(model, example_input_ids(CONFIG, seed=0, batch=BATCH))
    step(), step()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def input_ids_shape() -> tuple[int, int]:
    return BATCH, CONFIG.max_seq_len


def reference_stash_by_op(shape) -> dict[str, int]:
    """What the reference still stashes at level 1, in bytes per producing op type (largest first)."""
    from reference.module import compiled as compile_stage
    from reference.recompute import optimize
    from reference.recompute.graph import ForwardFacts

    model = impls.get("reference").wrap(build_bloom(CONFIG, seed=0), Options(memory_opt_level=1))
    input_ids = example_input_ids(CONFIG, seed=0, batch=shape[0])
    causal_lm_loss(model(input_ids), input_ids).backward()
    built: compile_stage.Compiled = model._compiled[True]
    optimized, _ = optimize(built.gradient_graphs, 1, (), built.sizes)
    facts = ForwardFacts(optimized)
    found: dict[str, int] = {}
    for name in optimized.stashed:
        producer = facts.producer.get(name)
        op = producer.op_type if producer is not None else "input"
        size = facts.nbytes(name).subs({s: built.sizes[str(s)] for s in facts.nbytes(name).free_symbols})
        found[op] = found.get(op, 0) + int(size)
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def main(argv=None) -> int:
    if argv is None and sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]))
        return 0
    args = one_impl_arguments(__doc__.splitlines()[0], argv)
    results = measure(args.impl, args.rounds, args.steps)
    layer_inputs = CONFIG.num_layers * BATCH * CONFIG.max_seq_len * CONFIG.hidden_size * 4
    print(f"{args.impl}: Bloom-like LM {CONFIG.num_layers}x{CONFIG.hidden_size}, batch {BATCH}x{CONFIG.max_seq_len}, "
          f"torch {torch.__version__}, CPU {torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads")
    print(f"{'level':<6} {'kept':>12} {'ratio':>7} {'peak RSS':>12} {'ratio':>7} {'step':>8} {'ratio':>7}")
    base = results[0]
    for level, row in results.items():
        kept = "n/a" if row["kept_bytes"] is None else f"{row['kept_bytes'] / 2**20:.1f} MiB"
        kept_ratio = "" if row["kept_bytes"] is None else f"{row['kept_bytes'] / base['kept_bytes']:.2f}x"
        print(f"{level:<6} {kept:>12} {kept_ratio:>7} {row['peak_rss_bytes'] / 2**20:>8.0f} MiB "
              f"{row['peak_rss_bytes'] / base['peak_rss_bytes']:>6.2f}x {row['median_step_s']:>7.3f}s "
              f"{row['median_step_s'] / base['median_step_s']:>6.2f}x")
    if results[1]["kept_bytes"] is not None:
        rest = results[1]["kept_bytes"] - layer_inputs
        print(f"level 1 keeps {results[1]['kept_bytes'] / 2**20:.1f} MiB: layer inputs {layer_inputs / 2**20:.1f} MiB "
              f"(L x batch x seq x hidden x 4) + {rest / 2**20:.1f} MiB the allow-list cannot recompute "
              f"(the loss's saved logits and what the plans leave stashed)")
        if args.impl == "reference":
            print("  still stashed at level 1, by producing op: " + ", ".join(
                f"{op} {nbytes / 2**20:.1f} MiB" for op, nbytes in reference_stash_by_op(input_ids_shape()).items()))
    print("level 1 plans:\n" + (results[1]["plans"] or "n/a"))
    write_json(args.json, args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
