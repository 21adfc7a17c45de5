"""Run the parts of ``ortcheck check`` in a child process: a crash of the implementation under test
(a segfault or an abort in native code: ORTModule's graph builder on a mixture of experts) fails
the part it happened in, and the command goes on with the next.

The child is a fork: it inherits the model, the batches and the implementation as they are, so
nothing needs pickling on the way in; only each part's result (or its exception) comes back through
a pipe. A process that used CUDA cannot be forked safely, and a platform without ``fork`` has none:
there the parts run in this process, unprotected.

The parts of one call share one child, one after another (:func:`isolated_each`): what the
implementation builds for a graph (the reference's gradient graphs and onnxruntime sessions,
ORTModule's first-use setup) is built once for all the checks of a model instead of once per check.
Each part starts from the random state the child was forked with, as it would in a child of its own;
a part that dies or hangs fails alone, and the parts after it go on in a fresh child.

Threads do not survive a fork: a child of a parent that ran torch's OpenMP kernels on several
threads waits forever in libgomp's barrier at its first parallel kernel (oneDNN's conv2d,
LayerNorm; ``ortcheck check`` from a shell with default threads hung for 657 s). So the child
computes on one thread (libgomp's single-thread path touches no pool), ``ortcheck check`` runs on
one thread from its start (no pool is ever made: onnxruntime's do not survive either), and a part
that returns nothing within ``timeout`` seconds is killed and reported as hung, naming the part.
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import pickle
import random
import select
import signal
import struct
import sys
import time
import traceback
from typing import Any, Callable, Sequence, TypeVar

import torch

from ortcheck.findings.failures import ProcessDied

T = TypeVar("T")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Crashed(ProcessDied):
    """The child running a part died without a result: killed by a signal, or it exited, or hung."""


TIMEOUT = 300.0  # seconds a part may take (the zoo's largest take ~30 s on 2 cores)
_FRAME = struct.Struct("<Q")  # each result's length before its pickle


@dataclasses.dataclass
class Part:
    """``call(*args)``, named in its crash or hang."""
    name: str
    call: Callable[..., Any]
    args: tuple = ()


@dataclasses.dataclass
class Result:
    """A part's end: ``"returned"`` a value, ``"raised"`` an exception, ``"crashed"`` a :class:`Crashed`."""
    kind: str
    value: Any

    def get(self) -> Any:
        """The returned value, or the part's exception (its crash) raised here."""
        if self.kind == "returned":
            return self.value
        raise self.value


def isolated(part: Callable[..., T], *args, device: str = "cpu", name: str = "the part",
             timeout: float | None = None) -> T:
    """``part(*args)`` in a forked child; its exception is raised here, its death as :class:`Crashed`,
    and a child still running after ``timeout`` seconds (default :data:`TIMEOUT`) is killed as hung."""
    return isolated_each([Part(name, part, args)], device=device, timeout=timeout)[0].get()


def isolated_each(parts: Sequence[Part], device: str = "cpu", timeout: float | None = None) -> list[Result]:
    """Each part's :class:`Result`, the parts run in turn in one forked child; a part that dies or runs
    past ``timeout`` seconds (default :data:`TIMEOUT`) is :class:`Crashed`, and the rest run in a new child."""
    if not hasattr(os, "fork") or device != "cpu":
        return [_here(part) for part in parts]
    results: list[Result] = []
    while len(results) < len(parts):
        results += _in_one_child(parts[len(results):], TIMEOUT if timeout is None else timeout)
    return results


def _in_one_child(parts: Sequence[Part], timeout: float) -> list[Result]:
    """The results of ``parts`` run in one child, up to and including the first that crashed or hung."""
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never return into the caller's stack
        os.close(read_end)
        _dies_with(parent)
        _child(parts, write_end)
    os.close(write_end)
    results: list[Result] = []
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        for part in parts:
            payload = _read_within(pipe, timeout)
            if payload is None:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return [*results, Result("crashed", Crashed(f"{part.name} hung: no result within {timeout:g} s (killed)"))]
            if not payload:
                _, status = os.waitpid(pid, 0)
                return [*results, Result("crashed", Crashed(describe(status)))]
            results.append(Result(*pickle.loads(payload)))
    os.waitpid(pid, 0)
    return results


def _child(parts: Sequence[Part], write_end: int) -> None:
    """Run ``parts`` in turn, each from the random state this child was forked with, writing each
    result framed; exit without unwinding (the parent's stack is not this process's to finish)."""
    status = 1
    try:
        torch.set_num_threads(1)  # the parent's OpenMP threads are not here (see the module docstring)
        forked = _random_state()
        with os.fdopen(write_end, "wb") as out:
            for part in parts:
                _set_random_state(forked)
                outcome = _outcome(part)
                record = pickle.dumps((outcome.kind, outcome.value))
                out.write(_FRAME.pack(len(record)) + record)
                out.flush()
        status = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _dies_with(parent: int) -> None:
    """On Linux the child is killed when its parent dies: a pytest worker that a watchdog killed for
    a hang, or an ``ortcheck check`` ended from outside, leaves no child computing on."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took hold
        os._exit(1)


def _random_state() -> tuple:
    numpy = sys.modules.get("numpy")
    return torch.get_rng_state(), random.getstate(), numpy.random.get_state() if numpy else None


def _set_random_state(state: tuple) -> None:
    torch_state, python_state, numpy_state = state
    torch.set_rng_state(torch_state)
    random.setstate(python_state)
    if numpy_state is not None:
        sys.modules["numpy"].random.set_state(numpy_state)


def _read_within(pipe, timeout: float) -> bytes | None:
    """The next framed result from ``pipe``; b"" when the child closed it first (it died), None when
    nothing complete came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    header = _read_exactly(pipe, _FRAME.size, deadline)
    return _read_exactly(pipe, _FRAME.unpack(header)[0], deadline) if header else header


def _read_exactly(pipe, count: int, deadline: float) -> bytes | None:
    """``count`` bytes from ``pipe``; b"" when it closed first, None when ``deadline`` passed first."""
    data = b""
    while len(data) < count:
        ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = pipe.read(count - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


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


def _here(part: Part) -> Result:
    try:
        return Result("returned", part.call(*part.args))
    except Exception as error:  # raised again, as it is, by Result.get
        return Result("raised", error)


def _outcome(part: Part) -> Result:
    """:func:`_here`'s result, its exception made fit to cross the pipe to the parent."""
    result = _here(part)
    if result.kind == "raised":
        result.value = carried(result.value)
    return result


def carried(error: BaseException) -> BaseException:
    """``error`` made fit to cross the pipe, as the parent will raise it as the part's own."""
    if not str(error).strip():  # a bare ``assert`` inside the implementation: where is all it says
        error.add_note(raised_at(error))
    try:
        pickle.loads(pickle.dumps(error))  # some exceptions pickle but do not unpickle
        return error
    except Exception:  # an exception that does not pickle comes back as its type's name and message
        return RuntimeError(f"{type(error).__name__}: {error}")
