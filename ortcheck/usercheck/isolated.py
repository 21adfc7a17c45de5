"""Run one part of ``ortcheck check`` in a child process: a crash of the implementation under test
(a segfault or an abort in native code: ORTModule's graph builder on a mixture of experts) fails
that part, and the command goes on with the next.

The child is a fork: it inherits the model, the batches and the implementation as they are, so
nothing needs pickling on the way in; only the part's result (or its exception) comes back through
a pipe. A process that used CUDA cannot be forked safely, and a platform without ``fork`` has none:
there the part runs in this process, unprotected.

Threads do not survive a fork: a child of a parent that ran torch's OpenMP kernels on several
threads waits forever in libgomp's barrier at its first parallel kernel (oneDNN's conv2d,
LayerNorm; ``ortcheck check`` from a shell with default threads hung for 657 s). So the child
computes on one thread (libgomp's single-thread path touches no pool), ``ortcheck check`` runs on
one thread from its start (no pool is ever made: onnxruntime's do not survive either), and a child
that returns nothing within ``timeout`` seconds is killed and reported as hung, naming the part.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
import traceback
from typing import Callable, TypeVar

import torch

T = TypeVar("T")


class Crashed(Exception):
    """The child running a part died without a result: killed by a signal, or it exited, or hung."""


TIMEOUT = 300.0  # seconds a part may take (the zoo's largest take ~30 s on 2 cores)


def isolated(part: Callable[..., T], *args, device: str = "cpu", name: str = "the part",
             timeout: float | None = None) -> T:
    """``part(*args)`` in a forked child; its exception is raised here, its death as :class:`Crashed`,
    and a child still running after ``timeout`` seconds (default :data:`TIMEOUT`) is killed as hung."""
    if not hasattr(os, "fork") or device != "cpu":
        return part(*args)
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never return into the caller's stack
        os.close(read_end)
        status = 1
        try:
            torch.set_num_threads(1)  # the parent's OpenMP threads are not here (see the module docstring)
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(_outcome(part, args), out)
            status = 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    os.close(write_end)
    payload = _read_within(read_end, pid, TIMEOUT if timeout is None else timeout)
    _, status = os.waitpid(pid, 0)
    if payload is None:
        raise Crashed(f"{name} hung: no result within {TIMEOUT if timeout is None else timeout:g} s (killed)")
    if not payload:
        raise Crashed(describe(status))
    kind, value = pickle.loads(payload)
    if kind == "raised":
        raise value
    return value


def _read_within(fd: int, pid: int, timeout: float) -> bytes | None:
    """All the child writes to ``fd``, or None (the child killed) when it takes over ``timeout`` seconds."""
    deadline, chunks = time.monotonic() + timeout, []
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([pipe], [], [], max(0.0, left))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return None
            chunk = pipe.read(1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def describe(status: int) -> str:
    """How the child ended, from its ``waitpid`` status."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return f"the implementation crashed (signal {name})"
    return f"the implementation ended the process (exit status {os.WEXITSTATUS(status)}) without a result"


def raised_at(error: BaseException) -> str:
    """Where ``error`` was raised: file (below site-packages), line, function and source line."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "raised where no traceback says"
    frame = frames[-1]
    where = frame.filename.split("site-packages/")[-1]
    return f"raised at {where}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"


def _outcome(part: Callable, args: tuple) -> tuple[str, object]:
    try:
        return "returned", part(*args)
    except Exception as error:  # carried to the parent, which raises it as the part's own
        if not str(error).strip():  # a bare ``assert`` inside the implementation: where is all it says
            error.add_note(raised_at(error))
        try:
            pickle.loads(pickle.dumps(error))  # some exceptions pickle but do not unpickle
            return "raised", error
        except Exception:  # an exception that does not pickle comes back as its type's name and message
            return "raised", RuntimeError(f"{type(error).__name__}: {error}")
