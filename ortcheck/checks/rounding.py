"""Rounding of intermediates, emulated in a float64 run: what any correct evaluation order may make.

The oracle's ``nudged_exact`` run moves every operand by one ulp; that measures how the answer
depends on its inputs, not on the rounding *inside* the computation. Where a result is the small
remainder of larger terms (a gradient summed over tokens that cancel, LayerNorm over two features),
any float32 evaluation order rounds those terms by about eps·Σ|terms|, far more than an ulp of the
result; eager's own error is then one lucky sample of that, and another correct order can land
elsewhere. Running error analysis would carry Σ|terms| through every op; Monte Carlo arithmetic
(Parker, 1997) samples it instead, with no rule per op: every floating value a torch function
computes inside the module, and every gradient flowing back into it, is multiplied by (1 + u·eps/2)
with u uniform in [-1, 1] (seeded), the size of one float32 rounding. The run's distance from the
exact one then carries the Σ|terms| scale of every later sum, cancelling or not.
"""
from __future__ import annotations

import os

import torch
from torch.overrides import TorchFunctionMode

SWITCH_ENV = "ORTCHECK_ORACLE_ROUNDING"  # "0": operands only, as before (bench/oracle_calibration.py --compare)
_EPS = torch.finfo(torch.float32).eps  # the rounding emulated: float32's, whatever the run's dtype


class _Rounding(TorchFunctionMode):
    """Perturbs the fresh floating results of torch functions (never aliases: views, in-place
    results and attributes keep their identity, so buffers updated in place stay the module's)."""

    def __init__(self, generator: torch.Generator):
        super().__init__()
        self.generator = generator

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in ("__get__", "__set__") or not isinstance(result, torch.Tensor):
            return result
        if not result.is_floating_point() or result.numel() == 0 or _aliases(result, args, kwargs):
            return result
        perturbed = result + result.detach() * self._factor(result)
        if perturbed.requires_grad:
            perturbed.register_hook(lambda grad: grad + grad * self._factor(grad))
        return perturbed

    def _factor(self, like: torch.Tensor) -> torch.Tensor:
        u = torch.rand(like.shape, generator=self.generator, dtype=torch.float64).mul_(2).sub_(1)
        return u.mul_(_EPS / 2).to(like.device, like.dtype)


def _aliases(result: torch.Tensor, args, kwargs) -> bool:
    if result._is_view():
        return True
    storage = result.untyped_storage().data_ptr()
    operands = [*args, *(kwargs or {}).values()]
    return any(isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() == storage for t in operands)


def with_rounding(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """``module`` with every forward call (and so the backward through it) under emulated rounding."""
    if os.environ.get(SWITCH_ENV) == "0":
        return module
    generator = torch.Generator().manual_seed(seed)
    modes: list[_Rounding] = []

    def enter(*_):
        modes.append(_Rounding(generator))
        modes[-1].__enter__()

    def leave(*_):
        modes.pop().__exit__(None, None, None)

    module.register_forward_pre_hook(enter)
    module.register_forward_hook(leave, always_call=True)
    return module
