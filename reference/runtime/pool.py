"""A bounded number of live onnxruntime sessions per process, least recently run dropped first.

Every onnxruntime session is an execution-provider instance: on CUDA its own cuBLAS, cuBLASLt and
cuDNN handles, workspace and (unless shared) arena. A test process makes graphs by the hundred (one
per hypothesis example, per mode, per backward stage) and on an H200 ran out of handles
(``CUBLAS failure 3 ... cublasCreate``). A :class:`reference.runtime.session.Session` therefore keeps
its model, not its onnxruntime session: the pool creates that on first run, keeps at most
``limit(device)`` of them, drops the least recently run beyond that (it is created again if run
again: slower, never wrong), and drops a session's own as soon as the Session is collected with its
module.
"""
from __future__ import annotations

import collections
import threading
import weakref
from typing import Callable, Hashable

import onnxruntime as ort

# CUDA: each provider holds cuBLAS workspaces (32 MiB each on Hopper) and cuDNN handles; 256 a
# process ran 14 pytest workers on one H200 out of memory (CUBLAS failure 3, CUDA out of memory).
LIMITS = {"cpu": 1024, "cuda": 64}

_live: dict[str, collections.OrderedDict[Hashable, ort.InferenceSession]] = collections.defaultdict(collections.OrderedDict)
_lock = threading.Lock()


def limit(device: str) -> int:
    return LIMITS[device]


def live(device: str) -> int:
    """How many onnxruntime sessions on ``device`` this process holds now."""
    return len(_live[device])


def get(device: str, key: Hashable, create: Callable[[], ort.InferenceSession]) -> ort.InferenceSession:
    """The live session under ``key``, created if absent; the least recently run go beyond the limit."""
    with _lock:
        sessions = _live[device]
        session = sessions.get(key)
        if session is not None:
            sessions.move_to_end(key)
            return session
    session = create()  # outside the lock: building a session takes long and may run Python (logging)
    with _lock:
        sessions[key] = session
        while len(sessions) > LIMITS[device]:
            sessions.popitem(last=False)
    return session


def release(device: str, owner: int) -> None:
    """Drop every session of ``owner`` (all keys ``(owner, ...)``)."""
    with _lock:
        sessions = _live[device]
        for key in [key for key in sessions if key[0] == owner]:
            del sessions[key]


def release_with(obj: object, device: str, owner: int) -> None:
    """Drop ``owner``'s sessions when ``obj`` is collected."""
    weakref.finalize(obj, release, device, owner)
