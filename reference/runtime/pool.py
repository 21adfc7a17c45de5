"""A bounded number of live onnxruntime sessions per process, least recently run dropped first.

Every onnxruntime session is an execution-provider instance: on CUDA its own cuBLAS, cuBLASLt and
cuDNN handles, workspace and (unless shared) arena. A test process makes graphs by the hundred (one
per hypothesis example, per mode, per backward stage) and on an H200 ran out of handles
(``CUBLAS failure 3 ... cublasCreate``). A :class:`reference.runtime.session.Session` therefore keeps
its model, not its onnxruntime session: the pool creates that on first run, keeps at most
``limit(device)`` of them, drops the least recently run beyond that (it is created again if run
again: slower, never wrong), and drops a session's own as soon as the Session is collected with its
module.

The bound is a count, while what runs out is the device's memory, shared with torch and with other
processes: a build that fails for want of resources (:func:`out_of_resources`) is retried once after
every idle session of the device is dropped, so a full pool costs a rebuild, never a failure.
``REFERENCE_CUDA_SESSIONS`` sets the CUDA bound for a process (a job that knows how many processes
share the GPU sizes it from the memory one provider holds: ``ortcheck.envsetup.gpu_plan``).

Sessions are keyed by what they run (the serialized graph's digest and the options that differ), not by
who holds them: graphs come back byte for byte (a recompute test wraps the model it just wrapped, its
level-2 cell draws the graphs its level-1 cell drew; half the sessions of the recompute suite), and a
session costs 0.25-0.5 s to build for a 1,300-node graph (AMD EPYC), half of it onnxruntime's memory
planner. Sessions over the same bytes are one onnxruntime session (runs are thread-safe; a run's
numbers depend on the graph and the inputs only). When no :class:`Session` holds a graph any more its
session stays, idle, among at most ``IDLE_LIMITS[device]`` idle ones (sized from the machine's memory)
and ``IDLE_BYTES[device]`` bytes of their graphs; the oldest idle go first. On CUDA none stays idle: a
provider holds handles and memory of the device.
"""
from __future__ import annotations

import collections
import gc
import os
import re
import threading
import weakref
from typing import Callable, Hashable

import onnxruntime as ort

# CUDA: each provider holds cuBLAS workspaces (32 MiB each on Hopper) and cuDNN handles; 256 a
# process ran 14 pytest workers on one H200 out of memory (CUBLAS failure 3, CUDA out of memory).
DEFAULT_LIMITS = {"cpu": 1024, "cuda": 64}
LIMIT_VARIABLES = {"cuda": "REFERENCE_CUDA_SESSIONS"}
# Sessions no Session holds, kept for a graph that comes back: the recompute suite's graphs come back
# after up to ~100 others (a whole test's): of the recompute and real-model suites' builds, 32 idle
# would spare 5% of the time, 128 spare 41% (and more spare nothing). An onnxruntime CPU session holds
# ~4 MiB even for a graph of 0.25 MiB (measured, 1,300 nodes, never run), more with its weights: the
# idle ones may take 1/8 of this process's share of the machine's memory (memory / cores: a test
# process per core), at most 128 sessions and 64 MiB of graphs. ``REFERENCE_IDLE_SESSIONS`` sets the
# count (0: none kept).
IDLE_VARIABLE = "REFERENCE_IDLE_SESSIONS"
SESSION_MEMORY = 4 << 20
IDLE_BYTES = {"cpu": 64 << 20, "cuda": 0}

# How onnxruntime's providers report a device out of memory or handles at a session's build or
# first run (onnxruntime-gpu 1.31.1 on an H200: "CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ...
# cublasCreate", "CUDA failure 2: out of memory", cuDNN's allocation status).
_RESOURCE_ERRORS = re.compile(r"CUBLAS failure 3\b|CUBLAS_STATUS_ALLOC_FAILED|CUDA failure 2\b|out of memory"
                              r"|CUDNN_STATUS_ALLOC_FAILED|CUDNN_STATUS_NOT_INITIALIZED|Failed to allocate memory",
                              re.IGNORECASE)


def _count_from_environment(variable: str, what: str, least: int) -> int | None:
    """``variable``'s value, a count of ``what`` of at least ``least``; None where it is unset."""
    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < least:
        bound = "0 or more" if least == 0 else f"at least {least}"
        raise ValueError(f"{variable}={value!r}: expected a number of {what}, {bound}")
    return int(value)


def limits_from_environment() -> dict[str, int]:
    limits = dict(DEFAULT_LIMITS)
    for device, variable in LIMIT_VARIABLES.items():
        count = _count_from_environment(variable, "sessions", 1)
        if count is not None:
            limits[device] = count
    return limits


def idle_limits_from_environment() -> dict[str, int]:
    count = _count_from_environment(IDLE_VARIABLE, "idle sessions", 0)
    if count is None:
        share = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (os.cpu_count() or 1)
        count = min(128, share // 8 // SESSION_MEMORY)
    return {"cpu": count, "cuda": 0}


LIMITS = limits_from_environment()
IDLE_LIMITS = idle_limits_from_environment()

# per device, least recently run first; a key is ``(content, ...)``, ``content`` what :func:`hold` was given
_live: dict[str, collections.OrderedDict[Hashable, ort.InferenceSession]] = collections.defaultdict(collections.OrderedDict)
_holders: dict[str, collections.Counter[Hashable]] = collections.defaultdict(collections.Counter)
_sizes: dict[Hashable, int] = {}  # content -> bytes of its graph, while it has a session or a holder
_lock = threading.RLock()
# per device: what frees memory a dropped session left cached (torch's allocator on CUDA); it may
# return a line saying what the device has left, for the error when even that was not enough
_after_drop: dict[str, Callable[[], str | None]] = {}
retries = collections.Counter()  # per device: builds that succeeded only after idle sessions were dropped


def limit(device: str) -> int:
    return LIMITS[device]


def live(device: str) -> int:
    """How many onnxruntime sessions on ``device`` this process holds now (idle ones included)."""
    return len(_live[device])


def idle(device: str) -> int:
    """How many of them no :class:`reference.runtime.session.Session` holds."""
    with _lock:
        return len(_idle_keys(device))


def out_of_resources(error: BaseException) -> bool:
    """Whether ``error`` says the device ran out of memory or handles (worth a retry with fewer sessions)."""
    return bool(_RESOURCE_ERRORS.search(str(error)))


def on_drop(device: str, free: Callable[[], str | None] | None) -> Callable[[], str | None] | None:
    """Call ``free`` after idle sessions of ``device`` were dropped to make room (None: nothing);
    returns what was called before."""
    before = _after_drop.pop(device, None)
    if free is not None:
        _after_drop[device] = free
    return before


def get(device: str, key: Hashable, create: Callable[[], ort.InferenceSession]) -> ort.InferenceSession:
    """The live session under ``key``, created if absent; the least recently run go beyond the limit."""
    with _lock:
        sessions = _live[device]
        session = sessions.get(key)
        if session is not None:
            sessions.move_to_end(key)
            return session
    session = _create(device, create)  # outside the lock: building a session takes long and may run Python (logging)
    with _lock:
        sessions[key] = session
        while len(sessions) > LIMITS[device]:
            sessions.popitem(last=False)
        _trim_idle(device)
    return session


def _create(device: str, create: Callable[[], ort.InferenceSession]) -> ort.InferenceSession:
    try:
        return create()
    except Exception as error:  # noqa: BLE001 - only resource exhaustion is retried
        if not out_of_resources(error):
            raise
        dropped, left = drop_idle(device)
        try:
            session = create()
        except Exception as again:  # noqa: BLE001
            raise type(again)(f"{again} (also after dropping {dropped} idle {device} sessions"
                              f"{'; ' + left if left else ''})") from error
        retries[device] += 1
        return session


def drop_idle(device: str) -> tuple[int, str | None]:
    """Drop every session of ``device`` the pool holds (none is running: runs hold their session
    themselves), collect what referenced them and let the device's allocator give memory back.
    Returns how many were dropped and what the device says it has left."""
    with _lock:
        dropped = len(_live[device])
        _live[device].clear()
    gc.collect()
    return dropped, _after_drop[device]() if device in _after_drop else None


def hold(holder: object, device: str, content: Hashable, nbytes: int) -> None:
    """``holder`` runs the graph ``content`` (``nbytes`` long) on ``device`` until it is collected;
    then, if nothing else holds it, its sessions are idle."""
    with _lock:
        _holders[device][content] += 1
        _sizes[content] = nbytes
    weakref.finalize(holder, _let_go, device, content)


def _let_go(device: str, content: Hashable) -> None:
    with _lock:
        _holders[device][content] -= 1
        if _holders[device][content] <= 0:
            del _holders[device][content]
            _trim_idle(device)


def _idle_keys(device: str) -> list[Hashable]:
    """Keys of the sessions no holder runs, least recently run first."""
    return [key for key in _live[device] if key[0] not in _holders[device]]


def _trim_idle(device: str) -> None:
    """Drop the oldest idle sessions beyond the device's idle count and bytes (the lock held)."""
    keys = _idle_keys(device)
    count, total = len(keys), sum(_sizes.get(key[0], 0) for key in keys)
    for key in keys:
        if count <= IDLE_LIMITS[device] and total <= IDLE_BYTES[device]:
            break
        _live[device].pop(key, None)  # a finalizer run by a collection in between may have dropped it
        count, total = count - 1, total - _sizes.get(key[0], 0)
    used = {key[0] for sessions in _live.values() for key in sessions}
    used.update(content for holders in _holders.values() for content in holders)
    for content in [content for content in _sizes if content not in used]:
        del _sizes[content]
