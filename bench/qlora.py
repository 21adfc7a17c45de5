"""QLoRA against float32 on the Bloom-like LM (4 layers, hidden 256, batch 8 x 128): step time and
peak RSS of the same model with every Linear frozen in NF4 (block 64) plus LoRA adapters (rank 8),
as ratios to the float32 model trained in full, through one implementation and in eager.

Step times interleave the variants round by round in one process; peak RSS comes from one child
process per variant (the peak is per process). A variant that cannot train through the
implementation prints its error instead of numbers.

    python bench/qlora.py [--impl reference|ortmodule|bitsandbytes] [--rounds 3] [--steps 2] [--json out.json]
"""
from __future__ import annotations

import resource
import statistics
import sys

import torch

from step_time import BATCH, CONFIG, child_peak_rss, make_step, one_impl_arguments, write_json
from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.models.bloom import build_bloom, example_input_ids
from ortcheck.models.linear4bit import NF4, quantize_linears

VARIANTS = ("float32", "qlora")
BLOCK_SIZE, RANK = 64, 8


def build(variant: str) -> torch.nn.Module:
    model = build_bloom(CONFIG, seed=0)
    return quantize_linears(model, BLOCK_SIZE, NF4, RANK, 2.0 * RANK) if variant == "qlora" else model


def state_bytes(model: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])


def measure(impl_names: list[str], rounds: int, steps: int) -> dict:
    input_ids = example_input_ids(CONFIG, seed=0, batch=BATCH)
    runners, results = {}, {}
    for name in impl_names:
        for variant in VARIANTS:
            key = f"{name}/{variant}"
            model = build(variant)
            results[key] = {"state_bytes": state_bytes(model)}
            try:
                runners[key] = make_step(impls.get(name).wrap(model, Options()), input_ids)
                runners[key](), runners[key]()  # export, build, warm-up
            except Exception as error:  # an implementation that cannot train the variant: report it
                results[key]["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
                runners.pop(key, None)
    times = {key: [] for key in runners}
    for _ in range(rounds):
        for key, runner in runners.items():
            times[key] += [runner() for _ in range(steps)]
    for key in runners:
        results[key]["median_step_s"] = statistics.median(times[key])
        results[key]["peak_rss_bytes"] = peak_rss(*key.split("/"))
    return results


def peak_rss(impl_name: str, variant: str) -> int:
    return child_peak_rss(__file__, impl_name, variant)


def child(impl_name: str, variant: str) -> None:
    step = make_step(impls.get(impl_name).wrap(build(variant), Options()), example_input_ids(CONFIG, seed=0, batch=BATCH))
    step(), step()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def main(argv=None) -> int:
    if argv is None and sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
        return 0
    args = one_impl_arguments(__doc__.splitlines()[0], argv)
    names = [args.impl] + (["eager"] if args.impl != "eager" else [])
    results = measure(names, args.rounds, args.steps)
    print(f"QLoRA (NF4 block {BLOCK_SIZE}, LoRA rank {RANK}) vs float32: Bloom-like LM {CONFIG.num_layers}x"
          f"{CONFIG.hidden_size}, batch {BATCH}x{CONFIG.max_seq_len}, torch {torch.__version__}, "
          f"CPU {torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads")
    print(f"{'run':<22} {'state':>10} {'ratio':>7} {'peak RSS':>10} {'ratio':>7} {'step':>8} {'ratio':>7}")
    for name in names:
        base = results[f"{name}/float32"]
        for variant in VARIANTS:
            key, row = f"{name}/{variant}", results[f"{name}/{variant}"]
            state = f"{row['state_bytes'] / 2**20:>6.1f} MiB {row['state_bytes'] / base['state_bytes']:>6.2f}x"
            if "error" in row or "error" in base:
                print(f"{key:<22} {state}   n/a: {row.get('error') or base.get('error')}")
                continue
            print(f"{key:<22} {state} {row['peak_rss_bytes'] / 2**20:>6.0f} MiB "
                  f"{row['peak_rss_bytes'] / base['peak_rss_bytes']:>6.2f}x {row['median_step_s']:>7.3f}s "
                  f"{row['median_step_s'] / base['median_step_s']:>6.2f}x")
    write_json(args.json, args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
