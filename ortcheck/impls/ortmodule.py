"""``ortmodule``: the real ``onnxruntime.training.ortmodule.ORTModule`` (onnxruntime-training 1.19.2).

It only runs in the ort119 env (torch 2.4.1); importing this module never touches onnxruntime, so
the registry can list it everywhere and report why it is unavailable.

``wrap`` returns the ORTModule itself (not a wrapper), so state_dict keys, train/eval and
attribute passthrough are ORTModule's own. Options become its env vars (see ``_ortmodule_env``),
set around construction and around every forward and restored afterwards; counters come from
``_ortmodule_observe``. ``flatten``/``unflatten``/``same_schema`` are ORTModule's own helpers and
comparison, unchanged, so their deviations show up as findings (docs/ortmodule-1.19.2.md).
"""
from __future__ import annotations

import importlib.util
import warnings
from typing import Any, Sequence

import torch

from ortcheck.impls import _ortmodule_env, _ortmodule_memory, _ortmodule_observe
from ortcheck.impls.base import Capability, Implementation, MemoryPlans, Observations, Options
from ortcheck.models.linear4bit import BITSANDBYTES_BLOCK_SIZES, use_kernel

# ORTModule flattens both its inputs (``_io.parse_inputs_for_onnx_export``) and its outputs
# (``_io._extract_schema``) with constant_as_tensor=True: Python int/float/bool become tensors.
CONSTANT_AS_TENSOR = True


class OrtModuleImpl(Implementation):
    name = "ortmodule"
    CAPABILITIES = frozenset({Capability.IO_ROUNDTRIP, Capability.IO_SCHEMA, Capability.IO_THROUGH_MODULE,
                              Capability.TRAINS, Capability.TRANSITIONS, Capability.RECOMPUTE,
                              Capability.MEM_EFFICIENT_GRAD, Capability.CONVERGENCE, Capability.SKIP_CHECKS,
                              Capability.BNB4})

    def unavailable_reason(self) -> str | None:
        try:
            _ortmodule_env.load()
        except ImportError as e:
            return f"onnxruntime-training is not installed here ({_ortmodule_env.SETUP_HINT}): {e}"
        except RuntimeError as e:
            return str(e)
        return None

    def bnb4_block_sizes(self) -> tuple[int, ...]:
        """What bitsandbytes accepts (ORTModule's 4-bit layers are bitsandbytes')."""
        return BITSANDBYTES_BLOCK_SIZES

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        options.refuse_unmapped(_ortmodule_env.MAPPED, "ORTModule")
        ortmodule = _ortmodule_env.load()
        env = _ortmodule_env.env_for(options)
        module = module.to(options.device)
        if importlib.util.find_spec("bitsandbytes") is not None:
            # 4-bit layers call bitsandbytes' MatMul4Bit, the Function ORTModule exports as
            # com.microsoft::MatMulBnb4 (onnxruntime#18131); without bitsandbytes they stay PythonOps.
            use_kernel(module, "bitsandbytes")
        with _ortmodule_env.applied(env):
            wrapped = ortmodule.ORTModule(module)
        _ortmodule_observe.install(wrapped, env)
        return wrapped

    def refusal_errors(self) -> tuple[type[BaseException], ...]:
        """ORTModule's own fallback exceptions (``ORTModuleFallbackException`` and its I/O, device,
        model and ONNX-export kinds): what it raises on purpose for what it doesn't support (with
        fallback disabled). Errors from inside onnxruntime's session are no refusal."""
        if self.unavailable_reason() is not None:
            return ()
        from onnxruntime.training.ortmodule import ORTModuleFallbackException

        return (ORTModuleFallbackException,)

    def reconfigure(self, wrapped: torch.nn.Module, options: Options) -> None:
        """ORTModule has no API for it: its users export new ORTMODULE_* variables and go on
        training. The variables set around every later forward change accordingly."""
        options.refuse_unmapped(_ortmodule_env.MAPPED, "ORTModule")
        _ortmodule_observe.change_env(wrapped, _ortmodule_env.env_for(options))

    def flatten(self, data: Any) -> tuple[list[torch.Tensor], Any]:
        from onnxruntime.training.utils.torch_io_helper import extract_data_and_schema

        _ortmodule_env.load()
        with warnings.catch_warnings():  # one "may be treated as a constant" warning per non-tensor leaf
            warnings.filterwarnings("ignore", message=_ortmodule_env.CONSTANT_WARNING)
            tensors, schema = extract_data_and_schema(data, constant_as_tensor=CONSTANT_AS_TENSOR)
        return tensors, schema

    def unflatten(self, tensors: Sequence[torch.Tensor], schema: Any) -> Any:
        from onnxruntime.training.utils.torch_io_helper import unflatten_data_using_schema

        _ortmodule_env.load()
        return unflatten_data_using_schema(list(tensors), schema)

    def same_schema(self, a: Any, b: Any) -> bool:
        # GraphTransitionManager._export_check re-exports when `cur_schema != prev_schema`. Its
        # _TensorStub.__eq__ raises NotImplementedError against a truthy non-stub (e.g. a str or a
        # list where a tensor was): left to propagate, as it does inside ORTModule.forward.
        return not (a != b)

    def observe(self, wrapped: torch.nn.Module) -> Observations:
        rec = _ortmodule_observe.recorder(wrapped)
        rec.poll(wrapped)
        return rec.observations()

    def memory_plans(self, wrapped: torch.nn.Module) -> MemoryPlans | None:
        return _ortmodule_memory.read(wrapped)
