"""What every process running tests starts from: the run's hypothesis seed, its share of the CPU
threads, a frozen heap (ORTModule's ``gc.collect`` per export), IEEE subnormals (``-ffast-math``
libraries a test loaded) and the run's folder of convergence oracle curves (``oracle_folder``).
Tests share a worker, so none may hand its process state to the next: on cuda that includes device
memory, which torch's allocator caches for the process that freed it
(a whole-matrix run on an H100 ran its 14 workers' GPU out of memory for cuBLAS handles only in its
last minutes; the same tests alone passed)."""
from __future__ import annotations

import gc

import pytest

from ortcheck import seed
from ortcheck.pytest_plugin import oracle_folder, threadbudget
from ortcheck.pytest_plugin.fpenv import SubnormalsOn
from ortcheck.pytest_plugin.heap import FrozenHeap


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Before any plugin's ``pytest_configure``: the run's hypothesis seed, which hypothesis' reads."""
    seed.choose(config)


def pytest_configure(config):
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    config.ortcheck_threads = threadbudget.apply(workers)  # before any session sizes its pool from torch's
    config.pluginmanager.register(seed.RunSeed(config), "ortcheck-run-seed")
    config.pluginmanager.register(FrozenHeap(), "ortcheck-frozen-heap")
    config.pluginmanager.register(SubnormalsOn(), "ortcheck-subnormals-on")
    oracle_folder.configure(config)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    """On cuda, what a test's modules and sessions held goes back to the device when it ends."""
    if getattr(item.config, "ortcheck_device", "cpu") != "cuda":
        return
    import torch

    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()
