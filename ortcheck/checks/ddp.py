"""Data-parallel training of a wrapped module: ``world_size`` processes (gloo on CPU; nccl with one
GPU per rank on ``device="cuda"``), each running ``DistributedDataParallel`` over ``wrap(model)`` on
its shard of every batch. Rank 0's parameters come back, to be judged against single-process eager
training on the whole batches. ``wrap`` is any picklable callable (the suite passes an
implementation's bound ``wrap`` with its options): the checks know no implementation.

Ranks we start ourselves fork from a server process that has imported torch, onnxruntime and the
pipelines once (``forkserver`` with ``PRELOADED`` and the caller's ``preload``, which names the
pipelines: ``ortcheck.impls.RANK_PRELOAD``), not from the test process (a clean start, as with
``spawn``) and without each rank importing them again (about 4 s of CPU per rank under ``spawn``).

Every rank is time-bounded: a rank that hangs (a collective nobody joins) or dies fails the call
within ``timeout`` seconds with the ranks killed, never a hung test run.

Launched by ``torchrun`` (torch's elastic launcher: ``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR`` in the
environment), the ranks are the launched processes instead, on one node or many: every process
runs the same tests, joins the launcher's process group (c10d rendezvous, ``env://``) once, runs its
rank's part in-process, and gets rank 0's result broadcast, so every rank judges the same value.
The collectives' own timeout bounds a hang there.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import tempfile
import time
from typing import Callable, Sequence

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

# What the rank server imports before forking ranks, besides the caller's ``preload`` (missing
# optional ones are skipped by it). The server starts once per process: the first call's list holds.
PRELOADED = ("torch", "torch.distributed", "torch.nn.parallel", "onnx", "onnxruntime", "hypothesis", __name__)


@dataclasses.dataclass(frozen=True)
class DdpRun:
    """What every rank and the single-process reference train: ``build()`` (picklable, seeded),
    ``steps`` SGD steps of ``micro_batches`` micro-batches each (all but the last under ``no_sync``),
    each micro-batch ``batch`` rows per rank of ``inputs(seed)`` against ``targets(seed)``."""

    build: Callable[[], torch.nn.Module]
    width: int
    outputs: int
    batch: int = 2
    steps: int = 3
    micro_batches: int = 1
    lr: float = 0.1
    find_unused_parameters: bool = False
    seed: int = 0

    def data(self, step: int, micro: int, world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole micro-batch (all ranks' rows): inputs and mse targets."""
        generator = torch.Generator().manual_seed(self.seed * 1000 + step * 10 + micro)
        rows = self.batch * world_size
        return torch.randn(rows, self.width, generator=generator), torch.randn(rows, self.outputs, generator=generator)

    def train(self, module: torch.nn.Module, step_data: Callable[[int, int], tuple], no_sync=None) -> None:
        """SGD on ``module``; ``step_data(step, micro)`` gives this process's (inputs, targets)."""
        optimizer = torch.optim.SGD([p for p in module.parameters() if p.requires_grad], lr=self.lr)
        for step in range(self.steps):
            for micro in range(self.micro_batches):
                inputs, targets = step_data(step, micro)
                last = micro == self.micro_batches - 1
                with contextlib.nullcontext() if last or no_sync is None else no_sync():
                    (F.mse_loss(module(inputs), targets) / self.micro_batches).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def train_ddp(wrap: Callable[[torch.nn.Module], torch.nn.Module], run: DdpRun, device: str = "cpu",
              world_size: int = 2, timeout: float = 180.0, label: str = "DDP ranks",
              preload: Sequence[str] = ()) -> dict[str, torch.Tensor]:
    """Rank 0's parameters after ``run`` trained under DDP over ``wrap(model)`` on ``world_size``
    ranks (``wrap`` is pickled to each rank: what it refers to must be importable there)."""
    backend = "nccl" if device == "cuda" else "gloo"
    return run_ranks(_train_rank, (wrap, device, run), world_size, timeout, label, backend, preload)


def launched() -> bool:
    """Whether this process is one rank of a ``torchrun`` launch."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR"))


def world_size(default: int) -> int:
    """The launch's world size under ``torchrun``, else ``default`` (the ranks we start ourselves)."""
    return int(os.environ["WORLD_SIZE"]) if launched() else default


def run_ranks(target: Callable, args: tuple, world_size: int, timeout: float, label: str,
              backend: str = "gloo", preload: Sequence[str] = ()) -> object:
    """``target(rank, world_size, *args)`` in ``world_size`` new processes with a process group
    (``backend``; nccl: rank r on cuda:r) and rank 0's return value (tensors and plain data: it
    travels through torch.save). All are killed, and the call
    fails, if any is not done within ``timeout`` seconds. Under ``torchrun``: in the launched ranks.
    ``preload``: modules the ranks will import, for the rank server to import once instead."""
    if launched():
        return _in_launched_group(target, args, world_size, timeout, label, backend)
    mp.get_context("forkserver").set_forkserver_preload([*PRELOADED, *preload])  # used when the server first starts
    with tempfile.TemporaryDirectory() as folder:
        result = os.path.join(folder, "result.pt")
        context = mp.start_processes(_rank_main, args=(world_size, os.path.join(folder, "store"), backend, target,
                                                       args, result, dict(os.environ)),
                                     nprocs=world_size, join=False, start_method="forkserver")
        deadline = time.monotonic() + timeout
        try:
            while not context.join(timeout=max(0.1, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{label} did not finish within {timeout:.0f}s (killed)")
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
        return torch.load(result, weights_only=True)


def _in_launched_group(target: Callable, args: tuple, expected: int, timeout: float, label: str,
                       backend: str) -> object:
    if not dist.is_initialized():
        dist.init_process_group(backend, init_method="env://", timeout=datetime.timedelta(seconds=timeout))
    rank, size = dist.get_rank(), dist.get_world_size()
    if size != expected:
        raise ValueError(f"{label}: needs {expected} ranks, torchrun launched {size}")
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    box = [target(rank, size, *args)]
    dist.broadcast_object_list(box, src=0)
    dist.barrier()
    return box[0]


def _rank_main(rank: int, world_size: int, store: str, backend: str, target: Callable, args: tuple,
               result: str, environ: dict[str, str]) -> None:
    os.environ.clear()  # the caller's environment now, not the rank server's from when it started
    os.environ.update(environ)
    torch.set_num_threads(1)
    if backend == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world_size)
    value = target(rank, world_size, *args)
    if rank == 0:
        torch.save(value, result)
    dist.barrier()
    # Every rank is done. Leave without tearing the group down: gloo's teardown (destroy_process_group
    # or the interpreter's exit) sometimes aborts a rank, "terminate called without an active
    # exception" (torch 2.13, about 1 test in 40 under load), which would fail a correct run.
    os._exit(0)


def _train_rank(rank: int, world_size: int, wrap: Callable, device: str, run: DdpRun) -> dict:
    device = f"cuda:{rank}" if device == "cuda" else "cpu"
    wrapped = wrap(run.build().to(device))
    ddp = torch.nn.parallel.DistributedDataParallel(wrapped, find_unused_parameters=run.find_unused_parameters)

    def shard(step, micro):
        inputs, targets = run.data(step, micro, world_size)
        rows = slice(rank * run.batch, (rank + 1) * run.batch)
        return inputs[rows].to(device), targets[rows].to(device)

    run.train(ddp, shard, ddp.no_sync)
    return {name: p.detach().cpu().clone() for name, p in wrapped.named_parameters()}
