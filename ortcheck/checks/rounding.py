"""Another evaluation order's rounding, sampled: the oracle's answer to cancellation.

The oracle's ``nudged_exact`` run moves every operand by one ulp; that measures how the answer
depends on its inputs, not on the rounding *inside* the computation. Where a result is the small
remainder of larger terms (an input gradient summed over features that cancel, a norm over two
features), any correct float32 evaluation rounds those terms by about eps·Σ|terms|, far more than
an ulp of the result; eager's own error is then one lucky sample of that (two identical sums cancel
exactly in eager), and a pipeline that sums in another order lands elsewhere, correctly. Running
error analysis would carry Σ|terms| through a rule per op; Monte Carlo arithmetic (Parker, 1997)
samples it with no rule per op, and that is what this does to the float64 run: inside the module's
forward, every fresh floating result of a torch function, and every gradient flowing back into one,
is multiplied by (1 + u·eps/2), u uniform in [-1, 1] (seeded), eps that of the precision eager
computes in (the module's parameters, the inputs' dtypes before the float64 copy): a float64 module
is moved by float64 roundings only, so a float64 finding stays one. The run's distance from the
exact one then carries the Σ|terms| scale of every later sum, cancelling or not, as a continuous
sample (a float32 ±1-ulp sample of two equal sums cancels half the time: tests/harness/test_rounding.py).
A kernel whose backward cancels inside itself (softmax) runs that backward step by step, each step
sampled, and attention's fused calls run op by op (:mod:`ortcheck.checks.composed_kernels`).

Left alone, so that structure stays the module's: values the factor would make non-finite
(``finfo.min`` attention masks), aliases (views, in-place results, buffers updated in place) and
integer results. Under ``torch.autocast`` the precision sampled is autocast's (:func:`autocast_precision`);
for a module whose parameters are half (``model.to(torch.bfloat16)``) it is theirs: every op rounds
its result to their type (:func:`parameter_precision`).
``ORTCHECK_ORACLE_ROUNDING=0`` switches it off (``bench/oracle_calibration.py``).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterable

import torch
from torch.overrides import TorchFunctionMode

from ortcheck.checks.composed_kernels import OPENED, sampled_call

SWITCH_ENV = "ORTCHECK_ORACLE_ROUNDING"
ORIGIN = "_ortcheck_computed_in"  # set on float64 copies of user tensors: the dtype eager computes them in
_SKIPPED = ("__get__", "__set__")


def precision(dtypes: Iterable[torch.dtype]) -> float:
    """The unit roundoff eager computes in, given the floating dtypes it holds (0.0: none): the
    coarsest of them, half precision counting as float32 (its arithmetic is)."""
    eps = [torch.finfo(d if d in (torch.float32, torch.float64) else torch.float32).eps
           for d in dtypes if d.is_floating_point]
    return max(eps, default=0.0)


def parameter_precision(dtypes: Iterable[torch.dtype]) -> float:
    """The unit roundoff of a module's floating parameters' coarsest type, half types as themselves:
    a module held in float16 or bfloat16 (``model.half()``) rounds every op's result to that type,
    where a half *input* or buffer of a float32 module is promoted and computed on in float32."""
    return max((torch.finfo(d).eps for d in dtypes if d.is_floating_point), default=0.0)


def autocast_precision() -> float:
    """The unit roundoff of the ``torch.autocast`` region the call runs in (0.0: none). autocast
    leaves the float64 run alone, while eager's products round to float16 or bfloat16: the sampled
    rounding takes that precision for every result of the region (ops autocast keeps in float32 are
    sampled as coarsely: a bound looser there, never one tighter than eager's own rounding)."""
    return max((torch.finfo(torch.get_autocast_dtype(device)).eps for device in ("cpu", "cuda")
                if torch.is_autocast_enabled(device)), default=0.0)


def mark_origin(copy: torch.Tensor, original: torch.Tensor) -> torch.Tensor:
    """``copy`` (a float64 twin of ``original``) remembering the dtype eager computes ``original`` in."""
    setattr(copy, ORIGIN, original.dtype)
    return copy


def relatively_moved(tensor: torch.Tensor, eps: float, generator: torch.Generator) -> torch.Tensor:
    """``tensor`` times (1 + u·eps/2) elementwise, u uniform in [-1, 1]; unmoved where that is not finite."""
    moved = tensor * _factor(tensor, eps, generator)
    return torch.where(torch.isfinite(moved), moved, tensor)


def relative_offset(tensor: torch.Tensor, eps: float, generator: torch.Generator) -> torch.Tensor:
    """``relatively_moved(tensor) - tensor`` (the same draw, the same bits), 0 where ``tensor`` is not
    finite: an infinite result (a -inf attention mask) keeps its value, not ``inf - inf = NaN``."""
    moved = tensor * _factor(tensor, eps, generator)
    return torch.where(torch.isfinite(moved), moved - tensor, 0.0)


def _factor(tensor: torch.Tensor, eps: float, generator: torch.Generator) -> torch.Tensor:
    """1 + u·eps/2 for each element of ``tensor``, in its dtype, on its device. These run after every op
    of a sampled run: for float64, ``1 - eps/2 + r·eps`` is the same real number as 1 + (2r - 1)·eps/2
    with every step before the sum exact (eps is a power of two), so the same bits in fewer kernels."""
    r = torch.rand(tensor.shape, generator=generator, dtype=torch.float64)
    if tensor.dtype == torch.float64:
        return r.mul_(eps).add_(1 - eps / 2).to(tensor.device)
    return 1 + r.mul_(2).sub_(1).mul_(eps / 2).to(tensor.device, tensor.dtype)


class _Rounding(TorchFunctionMode):
    def __init__(self, eps: float, generator: torch.Generator, inside: torch.Generator):
        super().__init__()
        self.eps, self.generator, self.inside = eps, generator, inside

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        opened = OPENED.get(func)
        if opened is not None:
            with self:
                result = opened(*args, **kwargs)
            if result is not NotImplemented:
                return result
        stepped = sampled_call(func, args, kwargs, self.moved, self.moved_inside)
        if stepped is not NotImplemented:
            return stepped
        result = func(*args, **kwargs)
        if (getattr(func, "__name__", "") in _SKIPPED or not isinstance(result, torch.Tensor)
                or not result.is_floating_point() or result.numel() == 0 or _aliases(result, args, kwargs)):
            return result
        with torch.no_grad():
            offset = relative_offset(result.detach(), self.eps, self.generator)
        moved = result + offset
        if moved.requires_grad:
            moved.register_hook(self.moved)
        return moved

    def moved(self, tensor: torch.Tensor) -> torch.Tensor:
        return relatively_moved(tensor, self.eps, self.generator)

    def moved_inside(self, tensor: torch.Tensor) -> torch.Tensor:
        """A step inside a kernel, from its own stream (:func:`composed_kernels.sampled_call`)."""
        return relatively_moved(tensor, self.eps, self.inside)


def _aliases(result: torch.Tensor, args, kwargs) -> bool:
    """Whether ``result`` shares memory with an operand (a view of it, an in-place result). A view of a
    fresh result is no alias: ``F.linear`` of a 3-d input returns its product reshaped, and skipping it
    left every such layer unsampled (under autocast, a bfloat16 loss bound 30x too tight)."""
    storage = result.untyped_storage().data_ptr()
    operands = [*args, *(kwargs or {}).values()]
    return any(isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() == storage for t in operands)


def _input_origins(value: Any) -> list[torch.dtype]:
    if isinstance(value, torch.Tensor):
        return [getattr(value, ORIGIN)] if hasattr(value, ORIGIN) else []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [dtype for item in value for dtype in _input_origins(item)]
    return []


def with_rounding(module: torch.nn.Module, seed: int, computed_in: Iterable[torch.dtype] = (),
                  parameters: Iterable[torch.dtype] = ()) -> torch.nn.Module:
    """``module`` (a float64 twin) with every forward call, and the backward through it, sampling the
    rounding of eager's precision: ``computed_in`` (the eager module's dtypes), ``parameters`` (its
    parameters' dtypes, half ones counted as half) and its inputs' origins."""
    if os.environ.get(SWITCH_ENV) == "0":
        return module
    generator, held = torch.Generator().manual_seed(seed), list(computed_in)
    inside = torch.Generator().manual_seed(seed + 1)  # the steps inside kernels (composed_kernels.py)
    own = parameter_precision(parameters)
    modes: list = []

    def enter(_, args, kwargs):
        eps = max(precision([*held, *_input_origins([args, kwargs])]), own, autocast_precision())
        modes.append(_Rounding(eps, generator, inside) if eps else contextlib.nullcontext())
        modes[-1].__enter__()

    def leave(*_):
        modes.pop().__exit__(None, None, None)

    module.register_forward_pre_hook(enter, with_kwargs=True)
    module.register_forward_hook(leave, always_call=True)
    return module
