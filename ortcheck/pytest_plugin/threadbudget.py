"""Each test process computes on its share of the machine's cores: cores / xdist workers.

torch starts one thread per core in every process; on a 16-core GPU machine six pytest workers
then ran 96 compute threads, and every onnxruntime session of the reference and of ORTModule took
as many again (the first GPU run died with "can't start new thread"). The plugin gives torch the
process's share before any test runs; the reference's sessions take torch's count
(``reference.runtime.threads``). An explicit ``OMP_NUM_THREADS`` (tox sets 1) is a smaller budget
the user chose and is kept.
"""
from __future__ import annotations

import os

import torch


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def budget(cores: int, workers: int, omp_threads: str | None) -> int:
    """Threads for one of ``workers`` processes sharing ``cores``, never above ``OMP_NUM_THREADS``."""
    share = max(1, cores // max(1, workers))
    if omp_threads and omp_threads.strip().isdigit() and int(omp_threads) > 0:
        return min(share, int(omp_threads))
    return share


def apply(workers: int) -> int:
    """Set torch's thread count to this process's budget; returns it."""
    threads = budget(cores(), workers, os.environ.get("OMP_NUM_THREADS"))
    torch.set_num_threads(threads)
    return threads
