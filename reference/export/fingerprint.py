"""What a trace can read, as one hashable value: two calls with equal fingerprints trace alike.

The exporter runs the module's forward under torch's tracer. What that forward can see is the module
tree (each module's class, its attributes, its parameters and buffers, values included: a value read
into Python control flow is baked into the graph), the flattened inputs and their schema, and global
torch state (the default dtype, autocast, active modes, global module hooks). Everything is compared
by value, tensors byte for byte; classes, functions and code objects by identity (with a function's
closure cells and defaults by value), through weak references where they take one: a remembered
fingerprint keeps no closure's captured model alive, and one whose object died equals no other. The
Python code itself, and the module-level globals it reads, are taken as fixed within a process.

What it cannot compare by value makes the call :class:`Unfingerprintable`: an object of an unknown kind
(no ``__dict__`` to walk), a tensor subclass, a tensor off the CPU, an active torch function or
dispatch mode, a global module hook. Such a call is simply traced again.
"""
from __future__ import annotations

import enum
import functools
import hashlib
import types
import weakref
from typing import Any, Sequence

import torch
from torch.nn.modules import module as module_globals
from torch.overrides import _get_current_function_mode_stack
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

from reference.nested_io import Schema
from reference.nested_io.schema import Constant

_PLAIN = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size, torch.layout,
          torch.memory_format, types.EllipsisType)
_CODE = (type, types.CodeType, types.ModuleType, types.MethodDescriptorType, types.WrapperDescriptorType)
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
_MODULE_PARTS = ("_parameters", "_buffers", "_modules")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks", "_global_forward_hooks_always_called", "_global_module_registration_hooks",
                 "_global_parameter_registration_hooks", "_global_buffer_registration_hooks")


class Unfingerprintable(Exception):
    """A call whose trace may read something not compared by value (the message says what)."""


def of_call(module: torch.nn.Module, tensors: Sequence[torch.Tensor], schema: Schema, *settings) -> tuple:
    """The fingerprint of exporting ``module`` on ``tensors`` (flattened per ``schema``) with ``settings``
    (the exporter's own arguments: training, opset): a digest of the values walked, the objects compared
    by identity, and the schema, settings and torch state as they are."""
    _refuse_global_interceptors()
    walk = _Walk()
    walk.value(module)
    for tensor in tensors:
        walk.value(tensor)
    return (walk.digest.digest(), tuple(walk.identities), _schema(schema), settings, _torch_state())


def _torch_state() -> tuple:
    autocast = tuple((device, torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))
                     for device in ("cpu", "cuda"))
    return (torch.get_default_dtype(), autocast, torch.is_autocast_cache_enabled(), torch.is_grad_enabled(),
            torch.are_deterministic_algorithms_enabled())


def _refuse_global_interceptors() -> None:
    if _get_current_function_mode_stack() or _get_current_dispatch_mode_stack():
        raise Unfingerprintable("a torch function or dispatch mode is active")
    hooked = [name for name in _GLOBAL_HOOKS if getattr(module_globals, name, None)]
    if hooked:
        raise Unfingerprintable(f"global module hooks are registered ({', '.join(hooked)})")


def _schema(schema: Schema) -> tuple:
    """The schema's tree and leaves (which tensors require grad is walked with the tensors); a constant
    leaf counts only as a plain, immutable value."""
    for leaf in schema.leaves:
        if isinstance(leaf, Constant) and not isinstance(leaf.value, _PLAIN):
            raise Unfingerprintable(f"an input constant of type {type(leaf.value).__name__}")
    return (schema.tree, schema.leaves)


def tensor_digest(tensor: torch.Tensor) -> bytes:
    """SHA-256 of a CPU tensor's values (its elements in order, whatever its strides)."""
    data = tensor.detach().contiguous().reshape(-1)
    return hashlib.sha256(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"").digest()


class _Walk:
    """One fingerprint's traversal, written into a digest as length-prefixed tokens; objects compared by
    identity go to a list (the digest holds their place in it). Objects met again are written as their
    order of first visit (shared submodules, tied weights, cycles through parents), so the fingerprint
    keeps the sharing structure: one parameter shared by two modules is one graph input, two equal
    ones are two."""

    def __init__(self):
        self.digest = hashlib.sha256()
        self.identities: list[Any] = []
        self.visited: dict[int, int] = {}
        self.alive: list[Any] = []  # keeps visited objects alive while the walk runs: no id is reused

    def write(self, *tokens: Any) -> None:
        for token in tokens:
            data = token if isinstance(token, bytes) else repr(token).encode()
            self.digest.update(len(data).to_bytes(8, "little"))
            self.digest.update(data)

    def identity(self, value: Any) -> None:
        self.identities.append(_weak(value))
        self.write("identity", len(self.identities) - 1)

    def value(self, value: Any) -> None:
        if isinstance(value, _PLAIN) and not isinstance(value, enum.Enum):
            self.write(type(value).__qualname__, value.hex() if isinstance(value, float) else value)
            return
        if isinstance(value, enum.Enum) or isinstance(value, _CODE):
            self.identity(value)
            return
        seen = self.visited.get(id(value))
        if seen is not None:
            self.write("seen", seen)
            return
        self.visited[id(value)] = len(self.visited)
        self.alive.append(value)
        self._container(value)

    def items(self, tag: str, values) -> None:
        values = list(values)
        self.write(tag, len(values))
        for item in values:
            self.value(item)

    def _container(self, value: Any) -> None:
        kind = type(value)
        if isinstance(value, torch.Tensor):
            self._tensor(value)
        elif kind in (tuple, list):
            self.items(kind.__name__, value)
        elif isinstance(value, dict):
            self.identity(kind)
            self.items("dict", [part for pair in value.items() for part in pair])
        elif kind in (set, frozenset):  # in an order of their own fingerprints
            walks = sorted((_alone(item) for item in value), key=lambda walk: walk[0])
            self.write(kind.__name__, *[digest for digest, _ in walks])
            for _, identities in walks:
                self.items("identities of an item", identities)
        elif isinstance(value, types.FunctionType):
            self.identity(value)
            self.identity(value.__code__)
            self.items("closure", [_contents(cell) for cell in value.__closure__ or ()])
            self.items("defaults", [value.__defaults__, value.__kwdefaults__])
        elif isinstance(value, types.MethodType):
            self.identity(value.__func__)
            self.items("method of", [value.__self__])
        elif isinstance(value, types.BuiltinFunctionType):  # a C function, or one bound to an object (t.mul)
            bound_to = value.__self__
            if bound_to is None or isinstance(bound_to, types.ModuleType):
                self.identity(value)
            else:
                self.write("builtin method", value.__name__)
                self.value(bound_to)
        elif isinstance(value, functools.partial):
            self.items("partial", [value.func, value.args, value.keywords])
        elif isinstance(value, torch.nn.Module):
            self.identity(kind)
            self.items("module", [getattr(value, part) for part in _MODULE_PARTS])
            self.value({k: v for k, v in vars(value).items() if k not in _MODULE_PARTS})
        elif hasattr(value, "__dict__") and not _slot_state(kind):
            self.identity(kind)
            self.value(vars(value))
        else:
            raise Unfingerprintable(f"an attribute of type {kind.__module__}.{kind.__qualname__}")

    def _tensor(self, tensor: torch.Tensor) -> None:
        if type(tensor) not in _PLAIN_TENSORS:
            raise Unfingerprintable(f"a tensor of type {type(tensor).__qualname__}")
        if tensor.device.type != "cpu" or tensor.layout != torch.strided or tensor.is_quantized:
            raise Unfingerprintable(f"a {tensor.layout} tensor on {tensor.device}")
        self.write("tensor", type(tensor).__qualname__, tensor.dtype, tuple(tensor.shape), tensor.stride(),
                   tensor.requires_grad, tensor_digest(tensor))
        self.value(tensor.__dict__)


def _alone(value: Any) -> tuple[bytes, list]:
    """A set member's own fingerprint (digest, identities): members are written in the order of these."""
    walk = _Walk()
    walk.value(value)
    return walk.digest.digest(), walk.identities


def _weak(value: Any) -> Any:
    """A weak reference to ``value`` (equal to another one while both are alive and refer to the same
    object), or ``value`` itself where it takes none (C functions, code objects: they hold no data)."""
    try:
        return weakref.ref(value)
    except TypeError:
        return value


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet filled
        return _EMPTY_CELL


_EMPTY_CELL = ("empty cell",)


def _slot_state(kind: type) -> bool:
    """Whether instances keep state in slots, outside ``__dict__``."""
    for cls in kind.__mro__:
        slots = cls.__dict__.get("__slots__", ())
        if any(slot not in ("__dict__", "__weakref__") for slot in ((slots,) if isinstance(slots, str) else slots)):
            return True
    return False
