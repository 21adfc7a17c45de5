"""BatchNorm and InstanceNorm traced as plain ops whose running-statistic writes the trace can see.

``aten::batch_norm`` updates ``running_mean``/``running_var`` inside the kernel, invisible to the
tracer, and torch's symbolic drops ``BatchNormalization``'s statistic outputs: the exported graph
would silently never update them. While the reference traces, :func:`traceable_norms` intercepts
``F.batch_norm`` and ``F.instance_norm`` wherever batch statistics are used and computes them as
eager does, writing the running statistics with ``copy_``, which the tracer records; the flat
module then returns each written buffer as a graph output (:mod:`reference.export.flat_module`).

Following ATen's CPU kernels: the statistics are accumulated in float64 (the mean and the sum of
squares rounded once to the input's dtype), the running statistics are updated as
``momentum * statistic + (1 - momentum) * running`` in float64 with the *unbiased* variance
(``sum / (n - 1)``, ``n`` read at run time), ``momentum=None`` (a BatchNorm's cumulative average)
is ``1 / num_batches_tracked`` of the counter the module has just incremented, and InstanceNorm
averages its per-sample updates over the batch. The output is normalised in float64 and rounded
once (at least as accurate as eager's). Every InstanceNorm using its input's statistics goes this
way (torch's symbolic refuses one without weight for a dynamic channel axis). Statistics from the
running buffers (eval) stay torch's ``BatchNormalization`` (in float64 plain ops: its ``epsilon`` is a
float32 attribute), with ones and zeros for a missing weight
and bias (for the same reason).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm
from torch.overrides import TorchFunctionMode

from reference.export.data_guards import untraced


class traceable_norms(TorchFunctionMode):  # noqa: N801 - used as a context manager
    """Active while ``module`` is traced."""

    def __init__(self, module: torch.nn.Module):
        super().__init__()
        # momentum=None: the module passes ``1 / float(num_batches_tracked)``, baked by the trace
        self._cumulative = {id(m.running_mean): m for m in module.modules()
                            if isinstance(m, _BatchNorm) and m.momentum is None and m.running_mean is not None
                            and m.num_batches_tracked is not None}

    def read_elsewhere(self) -> set[int]:
        """Ids of the tensors whose Python value the modules read but the graph takes from the trace:
        the counters of cumulative BatchNorms (no guard: ``reference.export.data_guards``)."""
        return {id(m.num_batches_tracked) for m in self._cumulative.values()}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.batch_norm:
            return self._batch_norm(*args, **kwargs)
        if func is F.instance_norm:
            return _instance_norm(*args, **kwargs)
        return func(*args, **kwargs)

    def _batch_norm(self, x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                    eps=1e-5):
        if not training and running_mean is not None and running_var is not None:
            return _from_running_statistics(x, running_mean, running_var, weight, bias, eps)
        with untraced():  # a batch of 1 changes the graph's key (its axes of size 1): no guard needed
            F._verify_batch_size(x.size())
        owner = self._cumulative.get(id(running_mean))
        factor = 1.0 / owner.num_batches_tracked.double() if owner is not None else momentum
        return _from_batch_statistics(x, [0, *range(2, x.dim())], running_mean, running_var, weight, bias, factor, eps)


def _instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                   momentum=0.1, eps=1e-5):
    if not use_input_stats:
        return _from_running_statistics(x, running_mean, running_var, weight, bias, eps)
    with untraced():
        F._verify_spatial_size(x.size())
    return _from_batch_statistics(x, list(range(2, x.dim())), running_mean, running_var, weight, bias, momentum, eps)


def _from_running_statistics(x, running_mean, running_var, weight, bias, eps):
    weight = torch.ones_like(running_var) if weight is None else weight
    bias = torch.zeros_like(running_mean) if bias is None else bias
    if x.dtype == torch.float64:  # BatchNormalization's epsilon is a float32 attribute: 1e-5 off by 2.5e-13
        channel = [-1, *[1] * (x.dim() - 2)]
        scale = weight.reshape(channel) / torch.sqrt(running_var.reshape(channel) + eps)
        return (x - running_mean.reshape(channel)) * scale + bias.reshape(channel)
    return F.batch_norm(x, running_mean, running_var, weight, bias, False, 0.0, eps)


def _from_batch_statistics(x, axes, running_mean, running_var, weight, bias, factor, eps):
    """Normalise over ``axes`` (per channel: BatchNorm; per sample and channel: InstanceNorm) and
    update the running statistics given, averaged over the samples when they are per sample."""
    wide = x.double()
    mean = wide.mean(axes, keepdim=True)
    centred = wide - mean
    square_sum = (centred * centred).sum(axes, keepdim=True)
    count = torch._shape_as_tensor(x)[axes].prod().double()  # at run time: sizes are dynamic
    y = centred / torch.sqrt(square_sum / count + eps)
    channel = [-1, *[1] * (x.dim() - 2)]
    if weight is not None:
        y = y * weight.double().reshape(channel)
    if bias is not None:
        y = y + bias.double().reshape(channel)
    with torch.no_grad():
        per_sample = 0 not in axes
        if running_mean is not None:
            _update(running_mean, mean.to(x.dtype).double(), factor, per_sample)
        if running_var is not None:
            _update(running_var, square_sum.to(x.dtype).double() / (count - 1), factor, per_sample)
    return y.to(x.dtype)


def _update(running: torch.Tensor, statistic: torch.Tensor, factor, per_sample: bool) -> None:
    """``running <- factor * statistic + (1 - factor) * running`` in float64, rounded once; per-sample
    updates (``[N, C, 1...]``) averaged over the batch in the buffer's dtype, as ATen's instance_norm."""
    statistic = statistic.flatten(1) if per_sample else statistic.flatten()
    updated = (factor * statistic + (1 - factor) * running.double()).to(running.dtype)
    running.copy_(updated.mean(0) if per_sample else updated)
