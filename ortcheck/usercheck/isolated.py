"""Run one part of ``ortcheck check`` in a child process: a crash of the implementation under test
(a segfault or an abort in native code: ORTModule's graph builder on a mixture of experts) fails
that part, and the command goes on with the next.

The child is a fork: it inherits the model, the batches and the implementation as they are, so
nothing needs pickling on the way in; only the part's result (or its exception) comes back through
a pipe. A process that used CUDA cannot be forked safely, and a platform without ``fork`` has none:
there the part runs in this process, unprotected.
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import Callable, TypeVar

T = TypeVar("T")


class Crashed(Exception):
    """The child running a part died without a result: killed by a signal, or it exited."""


def isolated(part: Callable[..., T], *args, device: str = "cpu") -> T:
    """``part(*args)`` in a forked child; its exception is raised here, its death as :class:`Crashed`."""
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
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(_outcome(part, args), out)
            status = 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        raise Crashed(describe(status))
    kind, value = pickle.loads(payload)
    if kind == "raised":
        raise value
    return value


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


def _outcome(part: Callable, args: tuple) -> tuple[str, object]:
    try:
        return "returned", part(*args)
    except Exception as error:  # carried to the parent, which raises it as the part's own
        try:
            pickle.loads(pickle.dumps(error))  # some exceptions pickle but do not unpickle
            return "raised", error
        except Exception:  # an exception that does not pickle comes back as its type's name and message
            return "raised", RuntimeError(f"{type(error).__name__}: {error}")
