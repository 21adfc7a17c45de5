"""``ReferenceModule``: wraps a ``torch.nn.Module`` so forward/backward run in onnxruntime.

Per call: flatten the inputs, ask the transition machine what to rebuild, run the forward graph
of the current mode through the autograd bridge, unflatten the outputs. Attribute access,
parameters and state_dict pass through to the wrapped module, so user code and optimizers see the
original names; inside a parent module too, whose ``load_state_dict`` walks past ours (hooks name
the keys). Setting an attribute on the wrapper sets it on the wrapped module (as ORTModule does)
and makes every mode re-export on its next forward: the trace may have baked the old value in.
"""
from __future__ import annotations

import dataclasses
import itertools
import warnings

import torch

from reference import nested_io
from reference.autodiff import UnsupportedOpError
from reference.export import ExportError
from reference.module import compiled as compile_stage
from reference.options import Counters, Options
from reference.seams import Seam
from reference.transitions import GraphState, Graphs, decide

# Fault injection (reference.seams): the transition machine a new wrapper (or a copy) starts from,
# and whether every graph is keyed by its input sizes as if they were part of the schema.
START_GRAPHS = Seam("the transition machine's start state", Graphs())
SIZES_IN_EVERY_KEY = Seam("every graph keyed by input sizes", False)


class UnsupportedHookError(RuntimeError):
    """A hook the exported graph cannot honour: inside the graph no module of the wrapped tree runs,
    so its hooks would fire once, while export traces, and then silently never. Hooks on the
    wrapper itself work as in eager, and so do those the module installs on itself while traced
    (what they do is in the graph)."""


# What the pipeline refuses on purpose, by name: a graph it cannot export or differentiate, a hook
# it cannot honour. ``fallback="auto"`` runs eager on these; every other error propagates.
REFUSALS = (ExportError, UnsupportedOpError, UnsupportedHookError)
_HOOK_KINDS = {"_forward_pre_hooks": "forward pre-hook", "_forward_hooks": "forward hook",
               "_backward_pre_hooks": "backward pre-hook", "_backward_hooks": "backward hook"}
_PLAIN = (bool, int, float, str, type(None))


def hooks_inside(module: torch.nn.Module) -> frozenset[tuple[str, str, int]]:
    """Every hook on the modules of ``module``: (module path, kind, handle id; copies keep all three)."""
    return frozenset((name, attribute, key) for name, submodule in module.named_modules()
                     for attribute in _HOOK_KINDS for key in getattr(submodule, attribute))


def refuse_hooks_inside(module: torch.nn.Module, own: frozenset = frozenset()) -> None:
    """``own``: hooks the module's forward installed on itself while export traced it (transformers
    captures router logits so): they fired in the trace, whose graph holds what they do."""
    for name, submodule in module.named_modules():
        for attribute, kind in _HOOK_KINDS.items():
            if any((name, attribute, key) not in own for key in getattr(submodule, attribute)):
                raise UnsupportedHookError(
                    f"{kind} on {type(submodule).__name__} {name or '<wrapped module>'!r}: the wrapped module runs "
                    "as one graph, its modules never run; register it on the ReferenceModule instead")


def _keys_into_wrapped(wrapper, state_dict, prefix, *_) -> None:
    """Inside a parent, ``load_state_dict`` walks the tree itself, past the wrapper's own: the
    wrapped module's keys, named as ``state_dict`` names them (without ``module.``), move under
    ``module.`` before the walk reaches it."""
    for key in [key for key in state_dict if key.startswith(prefix)]:
        state_dict[f"{prefix}module.{key[len(prefix):]}"] = state_dict.pop(key)
    wrapper.__dict__["_loading_prefix"] = prefix


def _keys_out_of_wrapped(wrapper, incompatible) -> None:
    """...and the keys that walk reports missing or unexpected are named as ``state_dict`` names them."""
    prefix = wrapper.__dict__.pop("_loading_prefix", "")
    for keys in incompatible:  # missing_keys, unexpected_keys: edited in place
        keys[:] = [prefix + key[len(prefix) + len("module."):] if key.startswith(f"{prefix}module.") else key
                   for key in keys]


def structure(module: torch.nn.Module) -> tuple:
    """What the trace of ``module`` depends on besides tensor values: which modules, parameters and
    buffers there are, and the plain attributes forward may read (a ``scale``, a flag). Users
    change these on the module they hold, past the wrapper: a changed structure re-exports."""
    def plain(value) -> bool:
        return isinstance(value, _PLAIN) or isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)

    return tuple(
        (name, type(m), id(m), tuple((k, id(v)) for k, v in m._parameters.items()),
         tuple((k, id(v)) for k, v in m._buffers.items()),
         tuple(sorted((k, v) for k, v in vars(m).items() if not k.startswith("_") and k != "training" and plain(v))))
        for name, m in module.named_modules())


class ReferenceModule(torch.nn.Module):
    def __init__(self, module: torch.nn.Module, options: Options = Options()):
        super().__init__()
        self.module = module.to(options.device)
        self._options = options
        self._graphs = START_GRAPHS.value
        self._compiled: dict[bool, compile_stage.Compiled] = {}  # per mode (training: bool)
        self._counters = Counters()
        self._fallen_back = False
        self._module_version = 0
        self._own_hooks = frozenset()  # hooks the module installed on itself while traced
        self.train(module.training)  # a new Module starts in training mode; the wrapped one may not be
        self.register_load_state_dict_pre_hook(_keys_into_wrapped)
        self.register_load_state_dict_post_hook(_keys_out_of_wrapped)
        self._passes_attributes = True

    # -- pass-through -------------------------------------------------------------------------
    def __setattr__(self, name, value):
        """The wrapper's own attributes stay here; any other goes to the wrapped module."""
        if not self.__dict__.get("_passes_attributes") or name in self.__dict__ or name in self._modules:
            return super().__setattr__(name, value)
        setattr(self.module, name, value)
        self.__dict__["_module_version"] += 1

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("module"), name)

    def state_dict(self, *args, **kwargs):
        """The wrapped module's keys, here and inside a parent (whose state_dict calls this one)."""
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self.module.load_state_dict(*args, **kwargs)

    def named_parameters(self, *args, **kwargs):
        return self.module.named_parameters(*args, **kwargs)

    def named_buffers(self, *args, **kwargs):
        return self.module.named_buffers(*args, **kwargs)

    def __getstate__(self):
        """Copies (deepcopy, pickle, torch.save) carry the module, options and counters; sessions
        can't be copied, so a copy exports again on its first forward."""
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        state = dict(state)
        state.update(_graphs=START_GRAPHS.value, _compiled={}, _structure=None)
        return state

    def counters(self) -> Counters:
        """A snapshot of what the pipeline did for this module so far."""
        return Counters(**vars(self._counters))

    def set_options(self, options: Options) -> None:
        """Use ``options`` from the next forward on: a changed memory optimizer rebuilds the gradient
        graphs (the transition machine decides), a changed fallback policy applies at once."""
        self.__dict__["_options"] = options

    def memory_report(self):
        """The memory optimizer's plans for the training graph (``reference.recompute.MemoryReport``),
        or None before the first training forward that built gradients."""
        compiled = self._compiled.get(True)
        if compiled is None or compiled.gradient_graphs is None:
            return None
        return compile_stage.memory_report(compiled)

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        if self._fallen_back:
            return self.module(*args, **kwargs)
        tensors, schema = nested_io.flatten((args, kwargs))
        try:
            refuse_hooks_inside(self.module, self._own_hooks)
            self._prepare(tensors, schema)
        except REFUSALS as error:
            if self._options.fallback != "auto":
                raise
            return self._fall_back(error, args, kwargs)
        compiled = self._compiled[self.training]
        outputs = compile_stage.run(compiled, [*tensors, *self._state_tensors(compiled)])
        outputs = self._write_buffers(compiled, compile_stage.user_outputs(compiled, outputs))
        return nested_io.unflatten(outputs, compiled.exported.output_schema)

    def _state_tensors(self, compiled: compile_stage.Compiled) -> list[torch.Tensor]:
        """Parameters and buffers in the exported graph's input order, looked up afresh each call.
        A buffer forward writes goes in as a copy: backward may read the value forward read."""
        lookup = {**dict(self.module.named_parameters()), **dict(self.module.named_buffers())}
        written = set(compiled.exported.written_buffers)
        return [lookup[key].clone() if key in written else lookup[key] for key in compiled.exported.state_keys]

    def _write_buffers(self, compiled: compile_stage.Compiled, outputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """The buffers forward writes (the graph's last outputs) take their new values, in place, as
        eager's forward leaves them; the user's outputs are returned."""
        written = compiled.exported.written_buffers
        if not written:
            return outputs
        buffers = dict(self.module.named_buffers())
        with torch.no_grad():
            for key, value in zip(written, outputs[-len(written):]):
                buffers[key].copy_(value)
        return outputs[: -len(written)]

    def _prepare(self, tensors, schema):
        current = structure(self.module)
        if current != self.__dict__.get("_structure"):
            self.__dict__["_structure"] = current
            self.__dict__["_module_version"] += 1
        trainable = {key for key, p in self.module.named_parameters() if p.requires_grad}
        built = self._compiled.get(self.training)
        size_keyed = SIZES_IN_EVERY_KEY.value or built is not None and built.exported.keyed_by_sizes
        state = GraphState.of_call(self, tensors, schema, self._device(), self._module_version,
                                   self._options.memory_options, size_keyed)
        state = self._with_guard_values(built, state, tensors)
        transition, graphs = self._graphs.step(state, torch.is_grad_enabled())
        if transition.export:
            before = hooks_inside(self.module)
            self._compiled[self.training] = compile_stage.export(self.module, tensors, state)
            self.__dict__["_own_hooks"] = self._own_hooks | (hooks_inside(self.module) - before)
            self._counters.exports += 1
            exported = self._compiled[self.training].exported
            if state.sizes is None and exported.keyed_by_sizes:
                state = state.keyed_by_sizes(tensors)
            graphs = graphs.recorded(dataclasses.replace(state, guard_values=exported.guard_values or None,
                                                         guard_kinds=exported.guard_kinds))
        if transition.build_gradient:
            compile_stage.build(self._compiled[self.training], state, trainable, tensors, self._options)
            self._counters.gradient_builds += 1
        self._counters.sessions += transition.new_sessions  # one set (forward + backward) per build
        self._counters.last_reason = transition.reason
        self._graphs = graphs  # only once built: a failed export is retried on the next call

    def _with_guard_values(self, built, state: GraphState, tensors) -> GraphState:
        """``state`` with the guards' values for this call, where the graph has guards (the values its
        trace baked into control flow); computed only where nothing else already asks for an export."""
        previous = self._graphs.built_for(self.training)
        if built is None or previous is None or previous.guard_values is None:
            return state
        state = dataclasses.replace(state, guard_values=previous.guard_values, guard_kinds=previous.guard_kinds)
        if decide(previous, state, torch.is_grad_enabled()).export:
            return state
        values = compile_stage.guard_values(built, [*tensors, *self._state_tensors(built)], previous.guard_values)
        return dataclasses.replace(state, guard_values=values)

    def _device(self) -> str:
        """Where the wrapped module lives now (``.to()`` moves it), else where the options put it."""
        tensor = next(itertools.chain(self.module.parameters(), self.module.buffers()), None)
        return self._options.device if tensor is None else tensor.device.type

    def _fall_back(self, error: Exception, args, kwargs):
        warnings.warn(f"reference pipeline falls back to eager PyTorch: {error}", RuntimeWarning, stacklevel=3)
        self._counters.fallbacks += 1
        self._fallen_back = True
        return self.module(*args, **kwargs)
