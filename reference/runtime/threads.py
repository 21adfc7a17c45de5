"""One thread budget per process for every onnxruntime session, the one torch was given.

By default each onnxruntime session owns a pool of ``intra_op_num_threads - 1`` threads: a process
holding a few hundred sessions (one per graph, per stage, per hypothesis example) held thousands of
threads, and on a 16-core GPU machine its pytest workers died with "can't start new thread". Here a
session computing on one thread gets no pool at all (the caller's thread runs it: onnxruntime
creates none for a size of 1), and sessions computing on more share onnxruntime's process-wide
pool, sized once to torch's thread count. So threads stay bounded whatever the number of sessions,
and torch and onnxruntime take turns on the same cores (they never compute at the same time here).
"""
from __future__ import annotations

import threading

import onnxruntime as ort
import torch

_lock = threading.Lock()
_global_pool_size: int | None = None


def configure(options: ort.SessionOptions) -> ort.SessionOptions:
    """Give ``options`` the process's thread budget: torch's thread count at the first session that
    needs more than one (the pool cannot be resized later; a later budget change keeps that size).

    Once the global pool exists, onnxruntime refuses every session of the process that asks for
    threads of its own ("use_per_session_threads must be false when using a global thread pool"),
    one-thread sessions included: from then on all take the global pool, and code beside the
    reference must build its sessions on :func:`reference.runtime.session_options` too."""
    global _global_pool_size
    wanted = torch.get_num_threads()
    if wanted == 1 and _global_pool_size is None:
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # no pool: no thread made
        return options
    with _lock:
        if _global_pool_size is None:
            if not hasattr(ort, "set_global_thread_pool_sizes"):  # training builds (1.19.2) lack it
                options.intra_op_num_threads, options.inter_op_num_threads = wanted, 1
                return options
            ort.set_global_thread_pool_sizes(wanted, 1)
            _global_pool_size = wanted
    # Sizes left unset: onnxruntime warns at every session that sets one beside a global pool.
    options.use_per_session_threads = False
    return options
