"""Loading onnxruntime-training quietly, and mapping :class:`Options` to ORTModule's env vars.

Why a separate module: ``ortcheck.impls.ortmodule`` must import everywhere (the modern env has
no onnxruntime-training), so everything that touches ``onnxruntime.training`` lives behind
:func:`load`, which imports it once, on first use.

When onnxruntime-training 1.19.2 reads its env vars (see docs/ortmodule-1.19.2.md):
- at ``ORTModule(...)`` construction: FALLBACK_POLICY (twice: ``_FallbackManager`` and
  ``_RuntimeOptions``), FALLBACK_RETRY, SKIPCHECK_POLICY, MEMORY_OPT_LEVEL, MEMORY_OPT_CONFIG (the
  *path*; the file itself is read by C++ at every session creation), ENABLE_MEM_EFFICIENT_GRAD_MGMT,
  CACHE_DIR, LOG_LEVEL (in ``DebugOptions``);
- again during each export (inside forward): MEMORY_OPT_LEVEL and ALLOW_AUTOGRAD_CHECKPOINT
  (checkpoint handling);
- at import: ENABLE_CUSTOM_AUTOGRAD, ATEN_SDPA_FALLBACK (not managed here).
So the managed variables are set around construction *and* around every forward call.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import warnings
from typing import Iterator, Mapping

from ortcheck.impls.base import Options

SETUP_HINT = "run in the ort119 env: tox -e ort119"

_BANNER = "is accelerating your model"
_EXTRA_REPR = "attribute name extra_repr collides with ORTModule's attribute name"
# torch_io_helper warns this for every str/int/float/bool it flattens (regex for warnings filters).
CONSTANT_WARNING = r"Received input of type .* which may be treated as a constant"
_state: dict = {}


class _DropBanner(logging.Filter):
    """Drop two pure-noise WARNING records: ORTModule's feature table (every session creation) and
    "attribute name extra_repr collides" (every wrap of a module defining ``extra_repr``, e.g. Linear)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return _BANNER not in message and _EXTRA_REPR not in message


def _stub_nvtx_if_broken(torch) -> bool:
    """ORT's I/O helpers push NVTX ranges; a CPU-only torch build raises there. Returns True if stubbed.

    A CUDA torch wheel without a GPU (the ort119 env) has working no-op NVTX, so nothing is patched
    there. We patch ORT's lookup functions in memory, never files in site-packages.
    """
    try:
        torch.cuda.nvtx.range_push("ortcheck")
        torch.cuda.nvtx.range_pop()
        return False
    except Exception:
        from onnxruntime.training.utils import torch_profile_utils

        torch_profile_utils.torch_nvtx_range_push = lambda msg: None
        torch_profile_utils.torch_nvtx_range_pop = lambda: None
        return True


def load():
    """Import ``onnxruntime.training.ortmodule`` once, silencing CPU-only noise. Raises ImportError/RuntimeError."""
    if "ortmodule" in _state:
        return _state["ortmodule"]
    if "error" in _state:
        raise _state["error"]
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch
            import torch.utils.cpp_extension  # noqa: F401  prints "No CUDA runtime is found" on import

            import onnxruntime.training.ortmodule as ortmodule
            import onnxruntime.training.utils.hooks  # noqa: F401  warns "DeepSpeed import error" on import
        if ortmodule._FALLBACK_INIT_EXCEPTION is not None:
            raise RuntimeError(f"ORTModule's C++ extensions are not built (run: python -m ortcheck.envsetup.ort119)")
        # ORTModule skips its own extension check when "-m" is in sys.argv (e.g. `pytest -m gpu`): check directly.
        from onnxruntime.training.ortmodule.torch_cpp_extensions import aten_op_executor, torch_interop_utils  # noqa: F401
        _state["nvtx_stubbed"] = _stub_nvtx_if_broken(torch)
        for name in ("orttraining",):
            logger = logging.getLogger(name)
            if not any(isinstance(f, _DropBanner) for f in logger.filters):
                logger.addFilter(_DropBanner())
    except (ImportError, RuntimeError) as e:
        _state["error"] = e
        raise
    _state["ortmodule"] = ortmodule
    return ortmodule


def _config_file(plans: tuple[str, ...]) -> str:
    """Path of a JSON list of plan strings (the form 1.19.2 reads), kept until the process exits.

    Content-addressed and never deleted early: deep copies of a wrapped module share the path, and
    ORT re-reads the file at every session creation.
    """
    if "config_dir" not in _state:
        _state["config_dir"] = tempfile.mkdtemp(prefix="ortcheck-memopt-")
        atexit.register(shutil.rmtree, _state["config_dir"], True)
    text = json.dumps(list(plans))
    path = os.path.join(_state["config_dir"], hashlib.sha1(text.encode()).hexdigest()[:16] + ".json")
    if not os.path.exists(path):
        with open(path, "w") as handle:
            handle.write(text)
    return path


# The Options ORTModule is given: ``device`` by moving the module there (ORTModule follows it), the
# rest through env_for's variables. Any other option off its default is refused (Options.refuse_unmapped).
MAPPED = ("device", "fallback", "skip_checks", "memory_opt_level", "memory_opt_config", "mem_efficient_grad")


def env_for(options: Options) -> dict[str, str | None]:
    """The value of every variable we own while a wrapped module is built or runs, for ``options``.

    None means unset (ORTModule's default), so a value exported in the user's shell cannot leak
    into a test that did not ask for it.
    """
    return {
        # "auto" = ORTModule's own default policy (falls back on unsupported device/data/torch/onnx
        # model); only one policy name can be given through the env var.
        "ORTMODULE_FALLBACK_POLICY": "FALLBACK_DISABLE" if options.fallback == "disable" else None,
        "ORTMODULE_FALLBACK_RETRY": None,
        # Default (unset) = SKIP_CHECK_DEVICE|SKIP_CHECK_BUILD_GRADIENT|SKIP_CHECK_EXECUTION_AGENT.
        "ORTMODULE_SKIPCHECK_POLICY": None if options.skip_checks else "SKIP_CHECK_DISABLED",
        "ORTMODULE_MEMORY_OPT_LEVEL": str(options.memory_opt_level),
        "ORTMODULE_MEMORY_OPT_CONFIG": _config_file(options.memory_opt_config) if options.memory_opt_config else None,
        "ORTMODULE_ENABLE_MEM_EFFICIENT_GRAD_MGMT": "1" if options.mem_efficient_grad else None,
        "ORTMODULE_CACHE_DIR": None,  # a cached model would skip torch.onnx.export and hide exports
    }


@contextlib.contextmanager
def applied(env: Mapping[str, str | None]) -> Iterator[None]:
    """Set ``env`` (None = unset) for the duration of the block, then restore exactly what was there."""
    saved = {name: os.environ.get(name) for name in env}
    try:
        _set(env)
        yield
    finally:
        _set(saved)


def _set(env: Mapping[str, str | None]) -> None:
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
