"""Property: DistributedDataParallel over the wrapped module trains as eager does on one process.

Checks: `DistributedDataParallel` over the wrapped module, 2 gloo ranks on CPU (spawned, time-bounded),
`find_unused_parameters` both ways, `no_sync()` accumulation, both delivery modes: parameters after 3 SGD
steps pass the oracle against single-process eager on the whole batches

Two gloo ranks on CPU (``ortcheck.checks.ddp``), each on its half of every batch, with
``find_unused_parameters`` off and on (on: with a parameter forward never uses) and with
``no_sync()`` gradient accumulation over micro-batches, in both gradient delivery modes. After the steps, rank 0's parameters pass
the float64 oracle against single-process eager SGD on the whole batches (DDP averages the ranks'
gradients: the gradient of the whole batch's mean loss). A rank that hangs fails within the time
bound (``TIMEOUT_S``). Under ``--device cuda`` the ranks run over nccl instead, one GPU each (marked
``gpu``; n/a with fewer GPUs than ranks). Launched by ``torchrun`` (``torchrun --nproc-per-node 2 -m
pytest suites/test_ddp.py``, any number of nodes), the launched processes are the ranks.
"""
from __future__ import annotations

import copy
import functools

import pytest
import torch

from ortcheck.checks import assert_matches_oracle, input_runs, module_runs
from ortcheck.checks.ddp import DdpRun, launched, train_ddp, world_size
from ortcheck.impls import RANK_PRELOAD, Capability
from ortcheck.models.small import mlp_with_unused
from ortcheck.pytest_plugin import not_applicable

pytestmark = [pytest.mark.requires(Capability.TRAINS), pytest.mark.both_delivery_modes]

WORLD_SIZE = world_size(default=2)  # under torchrun, the launch's
TIMEOUT_S = 180.0


def single_process(run: DdpRun, module: torch.nn.Module, run_name: str) -> dict[str, torch.Tensor]:
    def whole(step, micro):
        return input_runs(run.data(step, micro, WORLD_SIZE), seed=step * 10 + micro)[run_name]

    run.train(module, whole)
    return {name: p.detach() for name, p in module.named_parameters()}


@pytest.mark.parametrize("micro_batches", [1, 2], ids=["sync", "no_sync-accumulation"])
@pytest.mark.parametrize("find_unused", [False, True], ids=["all-used", "find_unused"])
@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_ddp_trains_like_single_process_eager(impl, options, backend, find_unused, micro_batches):
    if (backend == "nccl") != (options.device == "cuda"):
        pytest.skip(f"{backend} runs here with --device {'cuda' if backend == 'nccl' else 'cpu'}")
    if backend == "nccl" and not launched() and torch.cuda.device_count() < WORLD_SIZE:
        not_applicable(f"nccl needs a GPU per rank: {WORLD_SIZE} ranks, {torch.cuda.device_count()} GPUs")
    run = DdpRun(functools.partial(mlp_with_unused, 4, 8, 3, unused=find_unused), width=4, outputs=3,
                 micro_batches=micro_batches, find_unused_parameters=find_unused)
    actual = train_ddp(functools.partial(impl.wrap, options=options), run, options.device, WORLD_SIZE, TIMEOUT_S,
                       f"DDP ranks of {impl.name}", preload=RANK_PRELOAD)
    eager = run.build()
    modules = module_runs(eager, copy.deepcopy(eager))
    params = {name: single_process(run, module, name) for name, module in modules.items() if name != "actual"}
    assert_matches_oracle({"actual": actual, **params}, path=f"parameters after {run.steps} steps")

