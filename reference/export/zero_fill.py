"""``tensor.zero_()`` traced so the graph keeps eager's gradient: zeros for the tensor overwritten.

Eager records ``zero_`` (``ZeroBackward``: the overwritten value gets a zero gradient). torch's
exporter turns it into ``ConstantOfShape``, which reaches no input, so the reference handed that
input no gradient at all (None where eager gives zeros, which an optimizer with weight decay or
momentum treats differently; OpInfo's ``zero_``). While grad mode is on, the trace writes
``sign(x') - sign(x')`` instead (``x'``: NaN as 0): +0 everywhere, through ``Sign``'s zero gradient.
Under ``no_grad`` it stays torch's (nothing is differentiated there).
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


class differentiable_zero_fill(TorchFunctionMode):  # noqa: N801 - used as a context manager
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.zero_, torch.zero_) and torch.is_grad_enabled() and args[0].is_floating_point():
            x = args[0]
            sign = torch.where(x.isnan(), 0, x).sign()
            return x.copy_(sign - sign)
        return func(*args, **kwargs)
