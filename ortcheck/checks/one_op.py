"""One op through an implementation, judged as the op suites judge it: outputs, which of them
require grad, then the gradient of every input requiring it, all by the float64 oracle.

Shared by ``suites/test_op_grads.py`` (the hand catalogue) and ``suites/test_opinfo.py`` (torch's
``op_db``): an op is a module whose forward is that one call, its inputs the call's tensors."""
from __future__ import annotations

from typing import Callable

import torch

from ortcheck.checks.autocast import autocast_region
from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, input_runs, module_runs


class OneOp(torch.nn.Module):
    """A module whose forward is one call on its inputs (attributes baked into ``call``)."""

    def __init__(self, call: Callable):
        super().__init__()
        self.call = call

    def forward(self, *inputs):
        return self.call(*inputs)


def _as_tuple(outputs) -> tuple:
    return outputs if isinstance(outputs, tuple) else (outputs,)


def check_one_op(impl, options, call: Callable, inputs: tuple[torch.Tensor, ...], seed: int, label: str,
                 autocast: torch.dtype | None = None) -> None:
    """``call`` on ``inputs`` through ``impl`` and the oracle's runs (``label`` names it in failures);
    the forward under ``autocast`` in that dtype (backward outside it, as training runs it)."""
    modules = module_runs(OneOp(call), impl.wrap(OneOp(call), options), seed)
    runs = input_runs(inputs, seed)
    with autocast_region(torch.device(options.device).type, autocast):
        outputs = {run: _as_tuple(modules[run](*runs[run])) for run in RUNS}
    assert_matches_oracle(outputs, path=f"{label} outputs")
    flags = [o.requires_grad for o in outputs["eager"]]
    assert [o.requires_grad for o in outputs["actual"]] == flags, f"{label}: outputs requiring grad differ from eager's"

    generator = torch.Generator().manual_seed(seed)
    differentiable = [i for i, needs in enumerate(flags) if needs]
    cotangents = input_runs(tuple(torch.randn(outputs["eager"][i].shape, generator=generator, dtype=torch.float64)
                                  for i in differentiable), seed + 1, options.device)
    for run in RUNS:
        chosen = [outputs[run][i] for i in differentiable]
        torch.autograd.backward(chosen, [c.to(o.dtype) for c, o in zip(cotangents[run], chosen)])
    assert_matches_oracle({run: tuple(t.grad for t in runs[run]) for run in RUNS}, path=f"{label} input grads")
