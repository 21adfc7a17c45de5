"""``ReferenceModule``: wraps a ``torch.nn.Module`` so forward/backward run in onnxruntime.

Per call: flatten the inputs, ask the transition machine what to rebuild, run the forward graph
through the autograd bridge, unflatten the outputs. Attribute access, parameters and state_dict
pass through to the wrapped module, so user code and optimizers see the original names.
"""
from __future__ import annotations

import warnings

import torch

from ortcheck.impls.base import Observations, Options
from reference import io
from reference.autodiff import UnsupportedOpError
from reference.export import ExportError
from reference.module import compiled as compile_stage
from reference.runtime import OrtGraphFunction
from reference.transitions import GraphState, decide

_FAILURES = (ExportError, UnsupportedOpError)


class ReferenceModule(torch.nn.Module):
    def __init__(self, module: torch.nn.Module, options: Options = Options()):
        super().__init__()
        self.module = module.to(options.device)
        self._options = options
        self._state: GraphState | None = None
        self._compiled: compile_stage.Compiled | None = None
        self._observations = Observations()
        self._fallen_back = False
        self.train(module.training)  # a new Module starts in training mode; the wrapped one may not be

    # -- pass-through -------------------------------------------------------------------------
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("module"), name)

    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self.module.load_state_dict(*args, **kwargs)

    def named_parameters(self, *args, **kwargs):
        return self.module.named_parameters(*args, **kwargs)

    def named_buffers(self, *args, **kwargs):
        return self.module.named_buffers(*args, **kwargs)

    def observations(self) -> Observations:
        return Observations(**vars(self._observations))

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        if self._fallen_back:
            return self.module(*args, **kwargs)
        tensors, schema = io.flatten((args, kwargs))
        try:
            self._prepare(tensors, schema)
        except _FAILURES as error:
            if self._options.fallback != "auto":
                raise
            return self._fall_back(error, args, kwargs)
        outputs = OrtGraphFunction.apply(self._compiled.runner, *tensors, *self._state_tensors())
        return io.unflatten(list(outputs), self._compiled.exported.output_schema)

    def _state_tensors(self) -> list[torch.Tensor]:
        """Parameters and buffers in the exported graph's input order, looked up afresh each call."""
        lookup = {**dict(self.module.named_parameters()), **dict(self.module.named_buffers())}
        return [lookup[key] for key in self._compiled.exported.state_keys]

    def _prepare(self, tensors, schema):
        grad = torch.is_grad_enabled()
        trainable = {key for key, p in self.module.named_parameters() if grad and p.requires_grad}
        state = GraphState(schema, self.training, self._options.device,
                           tuple(grad and t.requires_grad for t in tensors),
                           tuple(key in trainable for key, _ in self.module.named_parameters()))
        transition = decide(self._state, state)
        if transition.export:
            self._compiled = compile_stage.export(self.module, tensors, state)
            self._observations.exports += 1
        if transition.build_gradient:
            compile_stage.build(self._compiled, state, trainable)
            self._observations.gradient_builds += 1
            self._observations.sessions += self._compiled.runner.num_sessions
        self._observations.last_reason = transition.reason
        self._state = state

    def _fall_back(self, error: Exception, args, kwargs):
        warnings.warn(f"reference pipeline falls back to eager PyTorch: {error}", RuntimeWarning, stacklevel=3)
        self._observations.fallbacks += 1
        self._fallen_back = True
        return self.module(*args, **kwargs)
