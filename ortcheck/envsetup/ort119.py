"""Build ORTModule's PyTorch C++ extensions once, in the ort119 environment.

Why: onnxruntime-training 1.19.2 ships the C++ sources of its torch extensions
(``torch_cpp_extensions/cpu/{aten_op_executor,torch_interop_utils}``) but not the built ``.so``
files. Without them ``import onnxruntime.training.ortmodule`` still succeeds, but records an init
exception and every ``ORTModule(...)`` falls back to (or, with fallback disabled, raises instead of)
running through ONNX Runtime. Its installer builds each ``setup.py`` and copies the resulting
``aten_op_executor*.so`` / ``torch_interop_utils*.so`` into ``torch_cpp_extensions/``; ORTModule's
own check is only "some ``*.so`` exists there", so we check harder: both modules import against the
torch in this environment (a stale build for another torch fails to import and gets rebuilt).

On a CUDA build (``tox -e ort119-gpu``) the installer also builds the CUDA extensions
(``torch_cpp_extensions/cuda/{torch_gpu_allocator,fused_ops}``: ORTModule allocates through torch's
caching allocator with the first, FusedAdam uses the second). Those are ``CUDAExtension``s: they need a
CUDA toolkit (``CUDA_HOME`` with ``nvcc``) of torch's CUDA major (12 for torch 2.4.1 cu121), whatever
CUDA onnxruntime-training itself was built for; without one we stop before the build with that message.

Usage: ``python -m ortcheck.envsetup.ort119 [--check] [--force]``. Exit code 0 when ready.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time

INSTALL_MODULE = "onnxruntime.training.ortmodule.torch_cpp_extensions.install"

# Runs in a fresh interpreter, so a just-built extension is seen and nothing stale is cached.
_PROBE = r"""
import contextlib, importlib, io, json, os, sys
out = {"ok": False}
try:
    with contextlib.redirect_stderr(io.StringIO()):  # torch's "No CUDA runtime is found" notice
        import torch
        import onnxruntime.training.ortmodule as om
    out["cpp_dir"] = om.ORTMODULE_TORCH_CPP_DIR
    names = sorted(d for d in os.listdir(os.path.join(om.ORTMODULE_TORCH_CPP_DIR, "cpu"))
                   if os.path.exists(os.path.join(om.ORTMODULE_TORCH_CPP_DIR, "cpu", d, "setup.py")))
    out["torch_cuda"], out["ort_cuda"], out["cuda_names"] = torch.version.cuda, om.ONNXRUNTIME_CUDA_VERSION, []
    if (torch.version.cuda or torch.version.hip) and (om.ONNXRUNTIME_CUDA_VERSION or om.ONNXRUNTIME_ROCM_VERSION):
        cuda_dir = os.path.join(om.ORTMODULE_TORCH_CPP_DIR, "cuda")
        out["cuda_names"] = sorted(d for d in os.listdir(cuda_dir) if os.path.exists(os.path.join(cuda_dir, d, "setup.py")))
        names += out["cuda_names"]
        from torch.utils.cpp_extension import CUDA_HOME
        out["cuda_home"] = CUDA_HOME
    out["expected"] = names
    missing = {}
    for name in names:
        try:
            mod = importlib.import_module("onnxruntime.training.ortmodule.torch_cpp_extensions." + name)
            if not (getattr(mod, "__file__", "") or "").endswith((".so", ".pyd", ".dylib")):
                missing[name] = "not built (found %s)" % getattr(mod, "__file__", None)
        except Exception as e:  # ImportError, or a stale build's undefined symbol
            missing[name] = "%s: %s" % (type(e).__name__, e)
    out["missing"] = missing
    out["init_exception"] = None if om._FALLBACK_INIT_EXCEPTION is None else str(om._FALLBACK_INIT_EXCEPTION)
    out["ok"] = not missing and om._FALLBACK_INIT_EXCEPTION is None
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
print("ORTCHECK_PROBE " + json.dumps(out))
"""


def probe() -> dict:
    """State of the extensions, from a fresh interpreter of this environment."""
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("ORTCHECK_PROBE "):
            return json.loads(line[len("ORTCHECK_PROBE "):])
    return {"ok": False, "error": f"probe crashed (rc={proc.returncode}): {proc.stderr.strip()[-500:]}"}


@contextlib.contextmanager
def _build_lock(cpp_dir: str):
    """Serialize concurrent setups (e.g. two tox runs) on the shared site-packages folder."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the build is still correct when run alone
        yield
        return
    with open(os.path.join(cpp_dir, ".ortcheck-build.lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def nvcc_release(cuda_home: str | None) -> str | None:
    """'12.1' from ``$CUDA_HOME/bin/nvcc --version``; None without a working nvcc."""
    if not cuda_home:
        return None
    try:
        text = subprocess.run([os.path.join(cuda_home, "bin", "nvcc"), "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    match = re.search(r"release (\d+\.\d+)", text)
    return match[1] if match else None


def toolkit_problem(state: dict, nvcc: str | None) -> str | None:
    """Why the CUDA extensions cannot build here (None: they can, or none is missing).

    torch's ``CUDAExtension`` compiles against torch's CUDA: the toolkit's major must be torch's
    (a minor difference only warns); onnxruntime's own CUDA (11.8 for onnxruntime-training 1.19.2)
    plays no part."""
    missing_cuda = sorted(set(state.get("cuda_names", [])) & set(state.get("missing", {})))
    if not missing_cuda:
        return None
    torch_cuda = state.get("torch_cuda")
    need = f"a CUDA {torch_cuda.split('.')[0]}.x toolkit (nvcc) matching torch's CUDA {torch_cuda}" if torch_cuda else "a CUDA toolkit (nvcc)"
    if not state.get("cuda_home"):
        return f"{', '.join(missing_cuda)} need {need}; none found (set CUDA_HOME or put nvcc on PATH)"
    if nvcc is None:
        return f"{', '.join(missing_cuda)} need {need}; CUDA_HOME={state['cuda_home']} has no working bin/nvcc"
    if torch_cuda and nvcc.split(".")[0] != torch_cuda.split(".")[0]:
        return f"{', '.join(missing_cuda)} need {need}; CUDA_HOME={state['cuda_home']} has nvcc {nvcc}"
    return None


def build() -> float:
    """Run ORTModule's own installer; returns seconds spent. Raises when it fails."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", INSTALL_MODULE], check=True)
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ortcheck.envsetup.ort119", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report; never build")
    parser.add_argument("--force", action="store_true", help="rebuild even if the extensions import")
    args = parser.parse_args(argv)

    state = probe()
    if "error" in state:
        print(f"ort119 setup: onnxruntime-training is not usable here: {state['error']}", file=sys.stderr)
        return 2
    if state["ok"] and not args.force:
        print(f"ort119 setup: ORTModule C++ extensions already built ({', '.join(state['expected'])}); nothing to do")
        return 0
    if args.check:
        print(f"ort119 setup: extensions missing: {state['missing'] or state['init_exception']}", file=sys.stderr)
        return 1

    problem = toolkit_problem(state, nvcc_release(state.get("cuda_home")))
    if problem:
        print(f"ort119 setup: cannot build ORTModule's CUDA extensions: {problem}", file=sys.stderr)
        return 1

    print(f"ort119 setup: building ORTModule C++ extensions {state['expected']} (needs gcc, ~2 min)...", flush=True)
    with _build_lock(state["cpp_dir"]):
        state = probe()  # another process may have finished the build while we waited
        if not state["ok"] or args.force:
            try:
                seconds = build()
            except subprocess.CalledProcessError as e:
                print(f"ort119 setup: build failed (exit {e.returncode}); see output above", file=sys.stderr)
                return 1
            print(f"ort119 setup: build took {seconds:.0f} s")
            state = probe()
    if not state["ok"]:
        print(f"ort119 setup: still not usable after the build: {state}", file=sys.stderr)
        return 1
    print("ort119 setup: ORTModule C++ extensions ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
