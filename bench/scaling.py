"""How the reference pipeline's costs grow with the model: export, gradient build, sessions, first
step and steady step of the Bloom-like LM, over depth and over width, with eager's step beside it.

Two sweeps: depth 2..32 at hidden 128 (4 heads), width 128..1024 at depth 2 (heads
max(4, width // 64)); vocab 256, batch 2 x sequence 32, SGD, so the big sizes stay cheap. Each size
gets a fresh ReferenceModule; export (``reference.module.compiled.export``), gradient build
(``build_gradient_graphs``) and session creation (``Session.__init__``) are timed by wrapping them
in this process, the package is not changed. Steady steps of reference and eager interleave. One
thread by default (onnxruntime takes torch's count): on a busy machine two threads' barriers wait
for a descheduled thread, and a 5 ms eager step took 0.9 s. A throwaway size runs first, so the
first real size does not pay the process's one-time costs (imports, first export).
Each phase's growth is the exponent k of a log-log least-squares fit (time ~ size^k): in depth it
must be linear (k <= 1.2, anything worse is a defect); in width the step is expected near
quadratic (parameters grow as width^2). Writes report/scaling/scaling.{png,csv}.

    python bench/scaling.py [--depths 2,4,8,16,32] [--widths 128,256,512,1024] [--batch 2] [--seq 32]
                            [--steps 5] [--threads 1] [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import functools
import gc
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from step_time import make_step, write_json
from ortcheck.models.bloom import BloomConfig, build_bloom, example_input_ids
from reference import ReferenceModule
from reference.module import compiled as compile_stage
from reference.runtime import session as session_module

VOCAB = 256
DEPTH_WIDTH = 128                   # the depth sweep's width (4 heads)
WIDTH_DEPTH = 2                     # the width sweep's depth
LINEAR_LIMIT = 1.2                  # a depth exponent above this is superlinear: a defect
REPORT = Path("report/scaling")
# phase -> (column header, unit scale from seconds); the order of the table and the plot
PHASES = {
    "export_s": ("export s", 1.0),
    "gradient_build_s": ("gradient build s", 1.0),
    "sessions_s": ("sessions s", 1.0),
    "first_step_s": ("first step s", 1.0),
    "step_s": ("step ms", 1e3),
    "eager_step_s": ("eager step ms", 1e3),
}


def heads_for(width: int) -> int:
    return max(4, width // 64)


class PhaseTimer:
    """Wraps the pipeline's export, gradient build and session creation for this process and sums
    the seconds spent in each since the last :meth:`reset`."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def reset(self) -> None:
        self.seconds = {"export_s": 0.0, "gradient_build_s": 0.0, "sessions_s": 0.0, "build_s": 0.0}
        self.calls = dict.fromkeys(self.seconds, 0)

    def timed(self, phase: str, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - started
                self.calls[phase] += 1
        return wrapper

    @contextlib.contextmanager
    def installed(self):
        # the wrapper calls compile_stage.export/build through the module, build calls
        # build_gradient_graphs by the name compiled.py imported, TrainingRunner makes Sessions
        patches = [(compile_stage, "export", "export_s"), (compile_stage, "build", "build_s"),
                   (compile_stage, "build_gradient_graphs", "gradient_build_s"),
                   (session_module.Session, "__init__", "sessions_s")]
        saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        for owner, name, phase in patches:
            setattr(owner, name, self.timed(phase, getattr(owner, name)))
        self.reset()
        try:
            yield self
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)


def measure_size(timer: PhaseTimer, depth: int, width: int, batch: int, seq: int, steps: int) -> dict:
    config = BloomConfig(vocab_size=VOCAB, hidden_size=width, num_heads=heads_for(width), num_layers=depth,
                         max_seq_len=seq)
    base = build_bloom(config, seed=0)
    input_ids = example_input_ids(config, seed=0, batch=batch, seq=seq)
    started = time.perf_counter()
    timer.reset()
    reference_step = make_step(ReferenceModule(copy.deepcopy(base)), input_ids)
    first = reference_step()  # export, gradient build and sessions happen here
    phases = dict(timer.seconds)
    if timer.calls["export_s"] != 1 or timer.calls["build_s"] != 1:
        raise RuntimeError(f"expected one export and one build on the first step, got {timer.calls}")
    eager_step = make_step(copy.deepcopy(base), input_ids)
    reference_step(), eager_step()  # one warm-up step each
    times = {"step_s": [], "eager_step_s": []}
    for _ in range(steps):  # interleaved, so machine noise hits both alike
        times["step_s"].append(reference_step())
        times["eager_step_s"].append(eager_step())
    if timer.calls["export_s"] != 1 or timer.calls["build_s"] != 1:
        raise RuntimeError(f"steady steps exported or built again: {timer.calls}")
    row = {
        "depth": depth, "width": width, "heads": config.num_heads,
        "parameters": sum(p.numel() for p in base.parameters()),
        "export_s": phases["export_s"],
        "gradient_build_s": phases["gradient_build_s"],
        "sessions_s": phases["sessions_s"],
        # the rest of build(): runner bookkeeping (and the memory optimizer, off here)
        "build_other_s": phases["build_s"] - phases["gradient_build_s"] - phases["sessions_s"],
        "first_step_s": first,
        "step_s": statistics.mean(times["step_s"]),
        "eager_step_s": statistics.mean(times["eager_step_s"]),
        "wall_s": time.perf_counter() - started,
    }
    row["ratio"] = row["step_s"] / row["eager_step_s"]
    return row


def exponent(sizes: list[float], values: list[float]) -> float:
    """k of the least-squares fit log(value) = k log(size) + c."""
    xs, ys = [math.log(s) for s in sizes], [math.log(v) for v in values]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def fits(rows: list[dict], key: str) -> dict[str, dict[str, float]]:
    """Per phase: k over the whole sweep and over its upper half (at least 3 sizes; fixed costs
    such as the embedding and head flatten the small sizes and hide a superlinear term)."""
    rows = sorted(rows, key=lambda r: r[key])
    tail = rows[-max(3, len(rows) // 2 + 1):]
    out = {}
    for phase in PHASES:
        out[phase] = {"all": exponent([r[key] for r in rows], [r[phase] for r in rows]),
                      "tail": exponent([r[key] for r in tail], [r[phase] for r in tail])}
    return out


def cpu_lines() -> list[str]:
    model, flags = "unknown", set()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return [f"CPU: {model}, {os.cpu_count()} cores, avx512f {'yes' if 'avx512f' in flags else 'no'}, "
            f"torch capability {torch.backends.cpu.get_cpu_capability()}",
            f"load average (1, 5, 15 min): {load}",
            f"torch {torch.__version__}, {torch.get_num_threads()} threads"]


def table(rows: list[dict]) -> list[str]:
    header = ["sweep", "depth x width (heads)", *(label for label, _ in PHASES.values()), "ratio"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        cells = [row["sweep"], f"{row['depth']} x {row['width']} ({row['heads']})"]
        cells += [f"{row[phase] * scale:.3f}" if scale == 1.0 else f"{row[phase] * scale:.1f}"
                  for phase, (_, scale) in PHASES.items()]
        cells.append(f"{row['ratio']:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def fit_lines(name: str, key: str, found: dict, expect) -> list[str]:
    lines = [f"| phase | k vs {name} (all sizes) | k (upper sizes) | reading |", "|---|---|---|---|"]
    for phase, k in found.items():
        lines.append(f"| {PHASES[phase][0].rsplit(' ', 1)[0]} | {k['all']:.2f} | {k['tail']:.2f} | "
                     f"{expect(phase, k)} |")
    return lines


def superlinear(k: dict) -> bool:
    return round(max(k["all"], k["tail"]), 2) > LINEAR_LIMIT


def depth_reading(phase: str, k: dict) -> str:
    if not superlinear(k):
        return "linear (or better)"
    if phase == "eager_step_s":
        return "superlinear (torch's own step, for comparison)"
    return f"SUPERLINEAR (k {max(k.values()):.2f} > {LINEAR_LIMIT}): defect"


def width_reading(phase: str, k: dict) -> str:
    if k["tail"] <= LINEAR_LIMIT:
        return "at most linear"
    return "about quadratic" if k["tail"] <= 2.3 else "worse than quadratic"


def plot(depth_rows: list[dict], width_rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 5))
    for axis, rows, key, title in ((axes[0], depth_rows, "depth", f"vs depth (width {DEPTH_WIDTH})"),
                                   (axes[1], width_rows, "width", f"vs width (depth {WIDTH_DEPTH})")):
        rows = sorted(rows, key=lambda r: r[key])
        xs = [r[key] for r in rows]
        for phase, (label, _) in PHASES.items():
            axis.plot(xs, [r[phase] for r in rows], marker="o", label=label.rsplit(" ", 1)[0])
        if len(xs) > 1:  # a linear guide through the first step's first point
            axis.plot(xs, [rows[0]["first_step_s"] * x / xs[0] for x in xs], "k:", label="linear guide")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks(xs, [str(x) for x in xs])
        axis.set_xlabel(key)
        axis.set_ylabel("seconds")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("reference pipeline costs of the Bloom-like LM")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_csv(rows: list[dict], path: Path) -> None:
    fields = ["sweep", "depth", "width", "heads", "parameters", "export_s", "gradient_build_s", "sessions_s",
              "build_other_s", "first_step_s", "step_s", "eager_step_s", "ratio", "wall_s"]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def sizes(text: str) -> list[int]:
    return sorted({int(part) for part in text.split(",") if part.strip()})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=sizes, default=[2, 4, 8, 16, 32], help=f"at width {DEPTH_WIDTH}")
    parser.add_argument("--widths", type=sizes, default=[128, 256, 512, 1024], help=f"at depth {WIDTH_DEPTH}")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5, help="steady steps per size (after one warm-up)")
    parser.add_argument("--out", default=str(REPORT), help="folder of the plot and the CSV")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--threads", type=int, default=1, help="torch and onnxruntime intra-op threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    for width in args.widths:
        if width % heads_for(width):
            parser.error(f"width {width} is not divisible by its {heads_for(width)} heads")

    print("\n".join(cpu_lines()), flush=True)
    print(f"Bloom-like LM, vocab {VOCAB}, batch {args.batch} x seq {args.seq}, SGD, {args.steps} steady steps "
          f"per size (mean), eager interleaved\n")
    rows, measured = [], {}
    with PhaseTimer().installed() as timer:
        measure_size(timer, 1, 64, args.batch, args.seq, 1)  # warm-up, not reported
        for sweep, depth, width in [*(("depth", d, DEPTH_WIDTH) for d in args.depths),
                                    *(("width", WIDTH_DEPTH, w) for w in args.widths)]:
            if (depth, width) not in measured:  # depth 2 x width 128 is in both sweeps: measured once
                gc.collect()
                measured[depth, width] = measure_size(timer, depth, width, args.batch, args.seq, args.steps)
                print(f"  measured {depth} x {width} in {measured[depth, width]['wall_s']:.1f} s", file=sys.stderr,
                      flush=True)
            rows.append({"sweep": sweep, **measured[depth, width]})
    print("\n".join(table(rows)))
    depth_rows = [r for r in rows if r["sweep"] == "depth"]
    width_rows = [r for r in rows if r["sweep"] == "width"]
    found = {}
    if len(depth_rows) > 1:
        found["depth"] = fits(depth_rows, "depth")
        print("\nGrowth with depth (time ~ depth^k; linear means k <= %.1f):\n" % LINEAR_LIMIT)
        print("\n".join(fit_lines("depth", "depth", found["depth"], depth_reading)))
        bad = [PHASES[p][0] for p, k in found["depth"].items() if p != "eager_step_s" and superlinear(k)]
        print(f"\nDepth: {'DEFECT, superlinear in ' + ', '.join(bad) if bad else 'every pipeline phase linear or better'}.")
    if len(width_rows) > 1:
        found["width"] = fits(width_rows, "width")
        print("\nGrowth with width (time ~ width^k; parameters grow as width^2):\n")
        print("\n".join(fit_lines("width", "width", found["width"], width_reading)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "scaling.csv")
    if depth_rows and width_rows:
        plot(depth_rows, width_rows, out / "scaling.png")
    print(f"\nwrote {out / 'scaling.csv'}" + (f" and {out / 'scaling.png'}" if depth_rows and width_rows else ""))
    write_json(args.json, args, {"rows": rows, "exponents": found, "cpu": cpu_lines()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
