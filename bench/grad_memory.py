"""Gradient delivery memory: peak memory of training with gradients delivered at the end of the
backward (default) and as the backward produces them (``Options(mem_efficient_grad=True)``),
through one implementation, with eager PyTorch beside them.

The model is the Bloom-like LM shaped so that gradients, not activations, dominate backward: 2 layers,
hidden 512, vocab 8192 (10.5 M parameters, 42 MB of float32 gradients), batch 2 x 32 tokens. Each
step accumulates 2 micro-batches, so the second backward adds into existing ``.grad``: delivered at
the end, a whole second set of gradients is alive at once; delivered as produced, one stage's.
Each mode runs in a fresh process (the peak is per process) with glibc's mmap threshold fixed at
64 KiB, so large buffers go back to the system when freed and RSS follows what is alive. The result
is each mode's steady-state peak RSS (after a first step that exports and builds) above the RSS it
had before that first step (model, inputs, libraries), and its ratio to the default mode's. It
counts what onnxruntime's memory pools keep between runs, which is memory the mode really holds.

    python bench/grad_memory.py [--impl reference|ortmodule] [--steps 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import torch

from step_time import check_impl, write_json
from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.models.bloom import BloomConfig, build_bloom, causal_lm_loss, example_input_ids

CONFIG = BloomConfig(vocab_size=8192, hidden_size=512, num_heads=8, num_layers=2, max_seq_len=32)
BATCH, MICRO_BATCHES = 2, 2
MODES = {"eager": ("eager", False), "default": (None, False), "mem_efficient": (None, True)}


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmHWM:"))


def child(impl_name: str, mem_efficient: bool, steps: int) -> None:
    """Train ``steps`` steps of accumulated micro-batches; print the peak RSS above the start."""
    model = build_bloom(CONFIG, seed=0)
    inputs = [example_input_ids(CONFIG, seed=k, batch=BATCH) for k in range(MICRO_BATCHES)]
    wrapped = impls.get(impl_name).wrap(model, Options(mem_efficient_grad=mem_efficient))
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad(set_to_none=True)
        for ids in inputs:
            causal_lm_loss(wrapped(ids), ids).backward()
        optimizer.step()

    start = rss_bytes()
    step()  # export, gradient build, sessions: their transient peak is not what is measured
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # the peak RSS restarts from the current RSS
    for _ in range(steps):
        step()
    print(peak_rss_bytes() - start)


def peak_above_start(impl_name: str, mem_efficient: bool, steps: int) -> int | str:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(64 * 1024)}
    out = subprocess.run([sys.executable, __file__, "--child", impl_name, str(int(mem_efficient)), str(steps)],
                         capture_output=True, text=True, env=env)
    if out.returncode:  # the exception's own line, not the tail of its message
        lines = out.stderr.strip().splitlines()
        return next((line for line in reversed(lines) if re.match(r"^[\w.]+(Error|Exception): ", line)), lines[-1])
    return int(out.stdout.strip().splitlines()[-1].split()[0])


def main(argv=None) -> int:
    if argv is None and sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], bool(int(sys.argv[3])), int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    check_impl(parser, args.impl)
    results = {mode: peak_above_start(name or args.impl, mem_efficient, args.steps)
               for mode, (name, mem_efficient) in MODES.items()}
    params = sum(p.numel() * p.element_size() for p in build_bloom(CONFIG, seed=0).parameters())
    print(f"{args.impl}: Bloom-like LM {CONFIG.num_layers}x{CONFIG.hidden_size}, vocab {CONFIG.vocab_size}, "
          f"batch {BATCH}x{CONFIG.max_seq_len}, {MICRO_BATCHES} micro-batches per step, gradients "
          f"{params / 2**20:.1f} MiB, torch {torch.__version__}, CPU {torch.backends.cpu.get_cpu_capability()}")
    print(f"{'mode':<14} {'peak above start':>17} {'ratio to default':>17}")
    for mode, peak in results.items():
        if isinstance(peak, str):
            print(f"{mode:<14} n/a: {peak}")
            continue
        base = results["default"]
        ratio = f"{peak / base:.2f}x" if isinstance(base, int) else "n/a"
        print(f"{mode:<14} {peak / 2**20:>13.1f} MiB {ratio:>17}")
    write_json(args.json, args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
