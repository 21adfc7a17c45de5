"""Black-box counters for a real ``ORTModule``, kept per wrapped module.

Why hooks and polling rather than patching ORTModule's methods: attributes set on an ORTModule
after construction land on the *user's* module and make ORTModule re-export; per-instance method
patches would also survive ``copy.deepcopy`` and count the copy's work into the original. So:

- a forward pre-hook / always-called forward hook (module-level functions, picklable) set the
  managed env vars, mute ORTModule's per-constant warning and swap ``torch.onnx.export`` (which
  ORTModule looks up at call time) for a counting wrapper, restoring all of it afterwards — a
  stack, so nested wrapped modules each count their own exports;
- after each forward the recorder polls ORTModule's internals: a new ``OrtModuleGraphBuilder`` in
  the TrainingManager's ``_graph_builder`` is one gradient build, a new ``_execution_agent`` in
  either execution manager is one session, a pending ``_fallback_manager`` exception after a call
  means that call ran in PyTorch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import warnings
import weakref
from typing import Any

import torch

from ortcheck.impls import _ortmodule_env
from ortcheck.impls.base import Observations


@dataclasses.dataclass
class Recorder:
    exports: int = 0
    gradient_builds: int = 0
    sessions: int = 0
    fallbacks: int = 0
    # Last-seen internal objects (held, not id()'d: a freed object's id can be reused at once).
    seen: dict = dataclasses.field(default_factory=dict)

    def poll(self, ort_module: torch.nn.Module, finished_forward: bool = False) -> None:
        torch_module = ort_module.__dict__.get("_torch_module")
        factory = getattr(torch_module, "_execution_manager", None)
        managers = {
            "training": getattr(factory, "_training_manager", None),
            "inference": getattr(factory, "_inference_manager", None),
        }
        for kind, manager in managers.items():
            if manager is None:
                continue
            if kind == "training":
                self.gradient_builds += self._is_new(f"{kind}.builder", getattr(manager, "_graph_builder", None))
            self.sessions += self._is_new(f"{kind}.agent", getattr(manager, "_execution_agent", None))
        fallback_manager = ort_module.__dict__.get("_fallback_manager")
        if finished_forward and fallback_manager is not None and fallback_manager.is_pending():
            self.fallbacks += 1

    def _is_new(self, key: str, obj: Any) -> int:
        if obj is None or self.seen.get(key) is obj:
            return 0
        self.seen[key] = obj
        return 1

    def observations(self) -> Observations:
        # 1.19.2 records no transition reason (only INFO logs), hence last_reason=None.
        return Observations(exports=self.exports, gradient_builds=self.gradient_builds,
                            sessions=self.sessions, fallbacks=self.fallbacks, last_reason=None)


_recorders: "weakref.WeakKeyDictionary[torch.nn.Module, Recorder]" = weakref.WeakKeyDictionary()
# One frame per wrapped forward in progress: (recorder, export before, env context).
_active: list[tuple[Recorder, Any, Any]] = []


def recorder(ort_module: torch.nn.Module) -> Recorder:
    """The counters of ``ort_module`` (created on first use, e.g. for a deep copy)."""
    if ort_module not in _recorders:
        _recorders[ort_module] = Recorder()
    return _recorders[ort_module]


def _counting(real_export, rec: Recorder):
    @functools.wraps(real_export)  # keeps the signature ORTModule inspects ("autograd_inlining")
    def export(*args, **kwargs):
        rec.exports += 1
        return real_export(*args, **kwargs)

    return export


def _pre_hook(env: dict, module: torch.nn.Module, args) -> None:
    env_context = contextlib.ExitStack()
    env_context.enter_context(_ortmodule_env.applied(dict(env)))
    env_context.enter_context(warnings.catch_warnings())
    # ORTModule warns once per non-tensor leaf of the module's outputs at each export: noise.
    warnings.filterwarnings("ignore", message=_ortmodule_env.CONSTANT_WARNING)
    rec = recorder(module)
    # Count into the innermost wrapped module only: wrap the export that was there before *any*
    # of our frames, not an outer frame's counting wrapper.
    real_export = _active[0][1] if _active else torch.onnx.export
    _active.append((rec, torch.onnx.export, env_context))
    torch.onnx.export = _counting(real_export, rec)


def _post_hook(module: torch.nn.Module, args, output) -> None:
    rec = recorder(module)
    if not _active or _active[-1][0] is not rec:  # our pre-hook did not run (an earlier pre-hook raised)
        return None
    _, previous_export, env_context = _active.pop()
    torch.onnx.export = previous_export
    env_context.__exit__(None, None, None)
    rec.poll(module, finished_forward=True)
    return None


def install(ort_module: torch.nn.Module, env: dict[str, str | None]) -> None:
    """Attach the counters and the per-forward env handling to a freshly built ORTModule."""
    rec = recorder(ort_module)
    rec.poll(ort_module)  # nothing built yet; records the starting state
    # Hooks live in the module's own hook dicts (ORTModule keeps them in its __dict__).
    ort_module.register_forward_pre_hook(functools.partial(_pre_hook, dict(env)))
    ort_module.register_forward_hook(_post_hook, always_call=True)


def change_env(ort_module: torch.nn.Module, env: dict[str, str | None]) -> None:
    """From the next forward on, set ``env`` around it (what a user exporting new variables does)."""
    hooks = [hook for hook in ort_module._forward_pre_hooks.values()
             if isinstance(hook, functools.partial) and hook.func is _pre_hook]
    if not hooks:
        raise RuntimeError("this ORTModule was not wrapped by ortcheck (no env hook to change)")
    for hook in hooks:
        hook.args[0].clear()
        hook.args[0].update(env)
