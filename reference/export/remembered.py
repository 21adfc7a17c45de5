"""Exports remembered per call fingerprint: a module traced again on what it was traced on before.

The same module, on the same values, is exported again and again: a property wraps a model once
without and once with recompute (the export is the same, the memory optimizer acts after it), and its
next parametrization draws the same models; a tracer run and the conversion that follows cost ~0.4 s
for a two-layer transformer, most of a recompute example. An export is a function of what the trace
can read (:mod:`reference.export.fingerprint`) and of the random generators it draws from (a
Dropout traced in training mode draws its mask): both are the key, and a remembered export leaves
the generators where the traced one left them, so a caller sees the same graph and the same random
state either way.

Remembered only where a trace is a pure function of that key: nothing fingerprinted changed while it
ran (a forward that counts its calls, installs hooks or writes its inputs is traced every time), no
fault is injected (:mod:`reference.seams`), and the graph calls no Python (its custom autograd
Functions are objects of the call). Each caller gets its own copy of the graph. Errors are raised
again, never remembered. At most :data:`MAX_EXPORTS` per process, least recently used dropped first.
"""
from __future__ import annotations

import collections
import dataclasses
import random
import sys
from typing import Callable

import onnx
import torch

from reference.export import fingerprint
from reference.seams import any_overridden

# A recompute property's parametrization draws ~12 models (10 drawn, canonical, manifest), two graphs each;
# the real-model suite trains 21 architectures under each optimizer in turn (~2 MiB of graphs).
MAX_EXPORTS = 256
MAX_BYTES = 64 << 20  # of remembered graphs


@dataclasses.dataclass
class _Entry:
    exported: "ExportedGraph"  # noqa: F821 (reference.export.exporter's, which imports this module)
    random_after: tuple
    size: int


_remembered: collections.OrderedDict = collections.OrderedDict()
_bytes = 0  # the remembered graphs' total size, kept as they come and go: iterating the OrderedDict hashes every key
stats = collections.Counter()  # "traced", "remembered", "not fingerprinted", "impure": what each call did


def export(trace: Callable, module: torch.nn.Module, tensors, schema, *settings):
    """``trace(module, tensors, schema, *settings)``, or the graph it gave for the same fingerprint."""
    try:
        key = None if any_overridden() else (fingerprint.of_call(module, tensors, schema, *settings),
                                             _random_key(_random_state()))
    except fingerprint.Unfingerprintable:
        key = None
    if key is None:
        stats["not fingerprinted"] += 1
        return trace(module, tensors, schema, *settings)
    entry = _remembered.get(key)
    if entry is not None:
        _remembered.move_to_end(key)
        _set_random_state(entry.random_after)
        stats["remembered"] += 1
        return _copy(entry.exported)
    exported = trace(module, tensors, schema, *settings)
    stats["traced"] += 1
    if exported.python_calls or _changed_by_trace(key[0], module, tensors, schema, settings):
        stats["impure"] += 1
        return exported
    _remember(key, _Entry(_copy(exported), _random_state(), exported.model.ByteSize()))
    return exported


def held() -> tuple[int, int]:
    """How many exports are remembered, and their graphs' bytes."""
    return len(_remembered), _bytes


def forget() -> None:
    global _bytes
    _remembered.clear()
    _bytes = 0


def _changed_by_trace(before: tuple, module, tensors, schema, settings) -> bool:
    try:
        return fingerprint.of_call(module, tensors, schema, *settings) != before
    except fingerprint.Unfingerprintable:
        return True


def _remember(key: tuple, entry: _Entry) -> None:
    global _bytes
    replaced = _remembered.get(key)
    _bytes += entry.size - (replaced.size if replaced is not None else 0)
    _remembered[key] = entry
    while len(_remembered) > MAX_EXPORTS or _bytes > MAX_BYTES:
        _bytes -= _remembered.popitem(last=False)[1].size


def _copy(exported):
    model = onnx.ModelProto()
    model.CopyFrom(exported.model)
    return dataclasses.replace(exported, model=model)


def _random_state() -> tuple:
    """The generators a trace can draw from: torch's CPU generator, Python's, NumPy's global one."""
    numpy = sys.modules.get("numpy")
    return (torch.random.get_rng_state(), random.getstate(), numpy.random.get_state() if numpy is not None else None)


def _random_key(state: tuple) -> tuple:
    torch_state, python_state, numpy_state = state
    if numpy_state is not None:
        name, keys, position, has_gauss, gauss = numpy_state
        numpy_state = (name, keys.tobytes(), position, has_gauss, gauss)
    return (fingerprint.tensor_digest(torch_state), python_state, numpy_state)


def _set_random_state(state: tuple) -> None:
    torch_state, python_state, numpy_state = state
    torch.random.set_rng_state(torch_state)
    random.setstate(python_state)
    if numpy_state is not None:
        sys.modules["numpy"].random.set_state(numpy_state)
