"""A case's implementation side trained under ``DistributedDataParallel``: ``case.ranks`` processes
(gloo on CPU; nccl on CUDA, one GPU per rank), each wrapping the same initial model and training on
its equal share of every batch's rows. DDP averages gradients, so with a mean loss every step
equals one process on the whole batch: the curve eager recorded. Rank 0 records the curve, with
the loss averaged over ranks and the gradient norm of the (identical) synchronized gradients.
"""
from __future__ import annotations

import copy
from typing import Callable

import torch
import torch.distributed as dist

from ortcheck.checks.ddp import run_ranks
from ortcheck.convergence import determinism
from ortcheck.convergence.cases import Case
from ortcheck.convergence.curves import Curve
from ortcheck.convergence.steps import fallbacks_of, train_steps
from ortcheck.convergence.training import TrainingConfig
from ortcheck.impls import RANK_PRELOAD
from ortcheck.impls.base import Implementation, Options

TIMEOUT_S = 300.0


class TooFewDevices(RuntimeError):
    """The case needs more GPUs than this machine has: it does not apply here. Raised, not skipped, so
    the golden CLI runs without pytest; the suite reports it as n/a."""


def train(case: Case, model: torch.nn.Module, batches: list, seed: int, settings, options: Options,
          impl: Implementation, training: TrainingConfig) -> Curve:
    backend = "nccl" if options.device == "cuda" else "gloo"
    if backend == "nccl" and torch.cuda.device_count() < case.ranks:
        raise TooFewDevices(f"case {case.name!r} needs {case.ranks} GPUs for nccl, found {torch.cuda.device_count()}")
    for inputs, target in batches:
        for tensor in (*inputs, target):
            if tensor.shape[0] % case.ranks:
                raise ValueError(f"case {case.name!r}: batch of {tensor.shape[0]} rows does not split over "
                                 f"{case.ranks} ranks")
    args = (case.loss, model, batches, seed, settings, options, impl, training)
    found = run_ranks(_rank, args, case.ranks, TIMEOUT_S, f"{case.name} ranks of {impl.name}", backend,
                      preload=(*RANK_PRELOAD, __name__))
    return Curve(seed, found["metrics"], found["fallback_steps"], found["skipped_steps"])


def _rank(rank: int, world_size: int, loss: Callable, model: torch.nn.Module, batches: list, seed: int, settings,
          options: Options, impl: Implementation, training: TrainingConfig) -> dict:
    device = f"cuda:{rank}" if options.device == "cuda" else "cpu"
    with determinism.applied(settings.with_seed(seed), options.device):
        # the ranks receive the same shared-memory storage: each must train its own copy
        wrapped = impl.wrap(copy.deepcopy(model).to(device).train(), options)
        ddp = torch.nn.parallel.DistributedDataParallel(wrapped)
        shard = [(tuple(_rows(t, rank, world_size) for t in inputs), _rows(target, rank, world_size))
                 for inputs, target in batches]
        curve = train_steps(loss, ddp, shard, seed, device, training, fallbacks=lambda: fallbacks_of(impl, wrapped),
                            loss_value=_mean_over_ranks)
    return {"metrics": curve.metrics, "fallback_steps": curve.fallback_steps, "skipped_steps": curve.skipped_steps}


def _rows(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    return tensor.chunk(world_size)[rank]


def _mean_over_ranks(loss: torch.Tensor) -> float:
    total = loss.clone()
    dist.all_reduce(total)
    return float(total) / dist.get_world_size()
