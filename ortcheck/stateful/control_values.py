"""The values a module's forward turns into Python control flow, recorded in eager.

A forward that branches on, indexes with or loops over tensor *values* (a mixture of experts
looping over the experts its router hit this batch) does what a traced graph cannot follow by
itself: a pipeline that traces may re-export when these values change, and the transition
contract allows it then (``ortcheck.stateful.contract``). Recorded by running a copy of the eager
module on the call's inputs (its RNG state and buffers left as they were): every ``bool``, ``int``,
index, ``item`` and ``tolist`` of a tensor, and the length of every ``unbind`` (``for x in t``).
"""
from __future__ import annotations

import copy

import torch
from torch.overrides import TorchFunctionMode

_READS = frozenset({"__bool__", "__int__", "__index__", "__float__", "item", "tolist"})


class _Recorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.values: list[tuple] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in _READS:
            self.values.append((name, result))
        elif name == "unbind":
            self.values.append((name, len(result)))
        return result


def control_values(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple:
    """What eager's forward of ``module`` on these inputs read into Python control flow, in order."""
    module = copy.deepcopy(module)
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices), torch.no_grad(), _Recorder() as recorder:
        module(*args, **kwargs)
    return tuple(recorder.values)
