"""One call of a module (forward, loss, backward) under the implementation and the oracle's eager runs.

Every check, the localizer and the written reproduction judge the same thing: the outputs, the
loss, every parameter gradient and the gradient of every input that requires grad, each against the float64 oracle
(:func:`ortcheck.checks.assert_matches_oracle`). Submodules and single ops have no loss of their own,
so they get :class:`Projection`: a fixed random cotangent per output, the same in every run.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import torch

from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, input_runs, module_runs
from ortcheck.impls.base import Implementation, Options
from ortcheck.nested import leaves, map_leaves
from ortcheck.usercheck.targets import Batch


class Projection:
    """A loss for a module without one: sum(output_i * cotangent_i) over floating outputs that need grad.

    Cotangents are drawn in float32 from ``seed`` and the output's position and shape, so the float64
    runs see the very values the float32 runs see."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def __call__(self, outputs: Any) -> torch.Tensor | None:
        terms = []
        for i, t in enumerate(leaves(outputs)):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad:
                generator = torch.Generator().manual_seed(self.seed * 1009 + i)
                cotangent = torch.randn(t.shape, generator=generator).to(t.device, t.dtype)
                terms.append((t * cotangent).sum())
        return torch.stack(terms).sum() if terms else None


# Which input tensors are differentiated, and so have their gradients judged (``--input-grads``):
# as the user's ``batch()`` returns them (a mask or a token-type tensor is data), or every floating one.
INPUT_GRADS = {"as-given": lambda leaf: leaf.requires_grad, "all": lambda leaf: True, "none": lambda leaf: False}


def requiring_grad(batch: Batch, policy: str = "all") -> Batch:
    """Fresh leaves; a floating tensor requires grad where ``policy`` (:data:`INPUT_GRADS`) says so,
    so its gradient is checked too."""
    wants = INPUT_GRADS[policy]

    def fresh(leaf):
        if isinstance(leaf, torch.Tensor):
            wanted = leaf.is_floating_point() and wants(leaf)
            return leaf.detach().clone().requires_grad_(wanted)
        return leaf

    return Batch(map_leaves(batch.args, fresh), map_leaves(batch.kwargs, fresh))


def batch_runs(batch: Batch, seed: int, device: str) -> dict[str, Batch]:
    per_run = input_runs((batch.args, batch.kwargs), seed=seed, device=device)
    return {run: Batch(*per_run[run]) for run in RUNS}


def one_call(module: torch.nn.Module, batch: Batch, loss_fn: Callable, backward: bool = True) -> dict:
    """Outputs, loss and gradients of one call (gradients of the parameters are zeroed first)."""
    for p in module.parameters():
        p.grad = None
    outputs = module(*batch.args, **batch.kwargs)
    loss = loss_fn(outputs) if backward else None
    if loss is not None:
        loss.backward()
    result = {"outputs": [t.detach() for t in leaves(outputs) if isinstance(t, torch.Tensor)]}
    if loss is not None:
        result["loss"] = loss.detach()
        result["parameter gradients"] = {n: p.grad for n, p in module.named_parameters() if p.requires_grad}
        result["input gradients"] = [t.grad for t in batch.tensors() if t.requires_grad]
    return result


def judged_call(modules: dict[str, torch.nn.Module], batch: Batch, loss_fn: Callable, seed: int, device: str,
                path: str, backward: bool = True) -> None:
    """One call in every run, judged by the oracle; raises AssertionError naming the first tensor off."""
    inputs = batch_runs(batch, seed, device)
    results = {run: one_call(modules[run], inputs[run], loss_fn, backward) for run in RUNS}
    assert_matches_oracle(results, path=path)


def runs_of(impl: Implementation, options: Options, module: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """The implementation's wrap of a copy of ``module`` and the oracle's four eager copies."""
    eager = copy.deepcopy(module).to(options.device)
    return module_runs(eager, impl.wrap(copy.deepcopy(eager), options))


def check_calls(impl: Implementation, options: Options, module: torch.nn.Module, batches: list[Batch],
                loss_fn: Callable | None = None, path: str = "module") -> str | None:
    """The oracle's verdict on calls of one wrap of ``module`` through ``impl``, one per batch (a
    second batch of another size: does the graph follow?): None, or the first failure."""
    loss_fn = loss_fn or Projection()
    runs = runs_of(impl, options, module)
    for seed, batch in enumerate(batches):
        where = path if len(batches) == 1 else f"{path} at batch {_size(batch)} (call {seed + 1})"
        try:
            judged_call(runs, batch, loss_fn, seed, options.device, where)
        except AssertionError as error:
            return str(error)
    return None


def _size(batch: Batch) -> int | str:
    tensors = [t for t in batch.tensors() if t.dim()]
    return tensors[0].shape[0] if tensors else "?"
