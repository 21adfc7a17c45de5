"""Fixtures of the harness's own tests: ``python``, a fresh Python process that starts in milliseconds.

Many tests here run a program in a process of its own (pytest on a pytester project, ``ortcheck``
on the command line, a module imported alone). A new interpreter spends ~2 s of CPU importing torch,
onnx and onnxruntime before doing anything, ~50 times per run. Instead, one server per test process
imports those third-party libraries (``PRELOADED``) and no project module, and forks a child per
program: the child gets its own working directory, environment, standard streams and exit status,
and imports the project afresh, as a new interpreter would. The server freezes its heap before
forking (``gc.freeze``), so a child's garbage collections walk only what the child made.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Third-party modules the server imports before forking (optional ones where installed).
PRELOADED = ("torch", "torch.onnx", "torch.distributed", "numpy", "onnx", "onnx.reference", "onnxruntime", "sympy",
             "hypothesis", "pytest", "xdist", "matplotlib", "onnxruntime.training.ortmodule", "bitsandbytes",
             "transformers")
SERVER = r"""
import gc, importlib, json, os, runpy, sys, traceback
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        pass  # an optional library this environment lacks
assert not any(m.split('.')[0] in ('reference', 'ortcheck', 'suites', 'tests') for m in sys.modules)
replies = sys.stdout
gc.freeze()  # the children's collections then neither walk nor copy the preloaded heap's pages

def child(request):
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.stdin, sys.stdout, sys.stderr = (open(0, closefd=False), open(1, "w", buffering=1, closefd=False),
                                             open(2, "w", buffering=1, closefd=False))
        sys.path[1:1] = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        flag, target, *args = request["argv"]
        if flag == "-m":
            sys.argv = [target, *args]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif flag == "-c":
            sys.argv = ["-c", *args]
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
        else:
            raise SystemExit(f"the preloaded python runs -m MODULE or -c CODE, not {flag!r}")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) or stop.code is None else 1
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code or 0)

while line := sys.stdin.readline():
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(request)
    print(json.dumps({"pid": pid}), file=replies, flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), file=replies, flush=True)
"""


class PreloadedPython:
    """``run("-m", module, *args)`` or ``run("-c", code, *args)``: a ``subprocess.CompletedProcess``,
    as ``subprocess.run([sys.executable, ...], capture_output=True, text=True)`` would give."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", SERVER, *PRELOADED], cwd=REPO, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env={**os.environ, "OMP_NUM_THREADS": "1"})

    def run(self, *argv: str, cwd: str | os.PathLike = REPO, env: dict | None = None,
            timeout: float = 900) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as folder:
            out, err = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
            request = {"argv": [os.fspath(a) for a in argv], "cwd": os.fspath(cwd), "stdout": out, "stderr": err,
                       "env": dict(os.environ if env is None else env)}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            pid = json.loads(self._reply(60))["pid"]
            try:
                returncode = json.loads(self._reply(timeout))["returncode"]
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                self._reply(60)
                raise subprocess.TimeoutExpired(["python", *argv], timeout) from None
            return subprocess.CompletedProcess(["python", *argv], returncode, Path(out).read_text(errors="replace"),
                                               Path(err).read_text(errors="replace"))

    def _reply(self, timeout: float) -> str:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired("the preloaded python", timeout)
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the preloaded python's server died (exit status {self.process.wait()})")
        return line

    def runpytest(self, pytester: pytest.Pytester, *args: str, timeout: float = 900) -> pytest.RunResult:
        """What ``pytester.runpytest_subprocess(*args)`` does, in a forked child."""
        basetemp = tempfile.mkdtemp(prefix="runpytest-", dir=pytester.path)
        plugins = [arg for plugin in pytester.plugins if isinstance(plugin, str) for arg in ("-p", plugin)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
        started = time.monotonic()
        result = self.run("-m", "pytest", f"--basetemp={basetemp}", *plugins, *args, cwd=os.getcwd(), env=env,
                          timeout=timeout)
        try:
            returncode = pytest.ExitCode(result.returncode)
        except ValueError:
            returncode = result.returncode
        print(result.stdout, result.stderr, sep="\n")  # shown when the test fails, as pytester does
        return pytest.RunResult(returncode, result.stdout.splitlines(), result.stderr.splitlines(),
                                time.monotonic() - started)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="session")
def python():
    started = PreloadedPython()
    yield started
    started.close()
