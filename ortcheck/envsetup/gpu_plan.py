"""How the GPU nightly job shares one GPU: test processes, live sessions per process, threads.

Every onnxruntime session on CUDA is a provider of its own (cuBLAS, cuBLASLt and cuDNN handles,
workspaces): 14 workers x 64 live sessions ran an H200 out of handles (``CUBLAS failure 3``). A
constant cannot fit both an H100 and an H200, nor the next onnxruntime build. So the job measures
first (``bench/cuda_providers.py``: the device memory one provider of the reference holds, the
memory a test process holds before its first session, the device's free memory) and sizes itself
here: as many workers as the cores allow (two cores for the job itself), fewer when the GPU's
memory cannot give each at least :data:`MIN_SESSIONS` live sessions, and each worker's bound on
live sessions (``REFERENCE_CUDA_SESSIONS``) from its share of the memory. A process that still runs
short rebuilds after dropping its idle sessions (``reference.runtime.pool``) instead of failing.

    python -m ortcheck.envsetup.gpu_plan --measured providers.json [--cores N]   # prints `export ...` lines
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

MIB = 2**20
MIN_SESSIONS = 16        # below this a worker rebuilds sessions it is about to run again, every example
MAX_SESSIONS = 64        # more buys nothing measurable: a test's graphs are a few dozen at a time
HEADROOM = 0.25          # of the free memory, left for the tests' own tensors and the allocators' slack
JOB_CORES = 2            # the job's own processes (pytest's controller, the watchdog)
# per worker, on top of its context and sessions: what torch and onnxruntime's arena hold for a test's
# tensors (measured on an H100: 1.8 to 2.9 GiB a worker running the transitions and recompute suites)
TEST_TENSORS = 2 * 1024 * MIB


@dataclasses.dataclass(frozen=True)
class Measured:
    """What ``bench/cuda_providers.py`` measured on this GPU (bytes)."""

    free: int
    total: int
    per_provider: int
    per_process: int

    @classmethod
    def worst(cls, measurements: list["Measured"]) -> "Measured":
        """The costliest of several measured settings a job's sessions may run under."""
        return cls(min(m.free for m in measurements), max(m.total for m in measurements),
                   max(m.per_provider for m in measurements), max(m.per_process for m in measurements))

    @classmethod
    def from_json(cls, data: dict) -> "Measured":
        try:
            values = {field.name: int(data[field.name]) for field in dataclasses.fields(cls)}
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"provider measurement: expected numbers {[f.name for f in dataclasses.fields(cls)]}, "
                             f"got {data!r}") from error
        if min(values.values()) < 0 or values["free"] > values["total"]:
            raise ValueError(f"provider measurement out of range: {values}")
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class Plan:
    workers: int
    sessions: int        # live onnxruntime sessions per worker
    threads: int         # torch (and so onnxruntime) threads per worker
    why: str

    def exports(self) -> str:
        return f"export WORKERS={self.workers} REFERENCE_CUDA_SESSIONS={self.sessions}"

    def describe(self, measured: Measured) -> str:
        return (f"GPU plan: {self.workers} workers x {self.sessions} live sessions, {self.threads} threads each "
                f"({measured.free / 2**30:.1f} of {measured.total / 2**30:.1f} GiB free; one provider "
                f"{measured.per_provider / MIB:.1f} MiB, one process {measured.per_process / MIB:.0f} MiB): {self.why}")


def plan(measured: Measured, cores: int) -> Plan:
    """The most workers (up to the cores less the job's own) that each keep ``MIN_SESSIONS`` live."""
    usable = measured.free * (1 - HEADROOM)
    most = max(1, cores - JOB_CORES)
    for workers in range(most, 0, -1):
        share = usable / workers - measured.per_process - TEST_TENSORS
        sessions = int(share // max(measured.per_provider, 1))
        if sessions >= MIN_SESSIONS:
            capped = min(sessions, MAX_SESSIONS)
            why = (f"{cores} cores" if workers == most else
                   f"memory: {workers + 1} workers would each hold fewer than {MIN_SESSIONS} sessions")
            return Plan(workers, capped, max(1, cores // workers), why)
    raise ValueError(f"this GPU cannot hold one test process with {MIN_SESSIONS} sessions: "
                     f"{measured.free / MIB:.0f} MiB free, {measured.per_process / MIB:.0f} MiB a process, "
                     f"{measured.per_provider / MIB:.1f} MiB a provider")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ortcheck.envsetup.gpu_plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--measured", required=True, help="bench/cuda_providers.py --json output")
    parser.add_argument("--variant", default="default",
                        help="the measured variant(s) the job's sessions run under, comma-separated (the costliest plans)")
    parser.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args(argv)
    with open(args.measured) as handle:
        data = json.load(handle)
    variants = data.get("variants", {})
    missing = [name for name in args.variant.split(",") if name not in variants]
    if missing:
        parser.error(f"--variant {','.join(missing)}: {args.measured} has {sorted(variants)}")
    measured = Measured.worst([Measured.from_json(variants[name]) for name in args.variant.split(",")])
    chosen = plan(measured, args.cores)
    print(chosen.describe(measured), file=sys.stderr)
    print(chosen.exports())
    return 0


if __name__ == "__main__":
    sys.exit(main())
