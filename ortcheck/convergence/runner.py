"""Seeded training runs: eager and an implementation from identical weights and identical batches.

Per seed the model is built once under the seed and deep-copied for each side, and the batches
are built up front, so the only difference between the two curves is the pipeline. Each step
records the loss, the gradient norm before clipping and the learning rate the step used, and
the steps during which the implementation reported a fallback to eager PyTorch.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import time
from typing import Callable

import torch

from ortcheck.checks.runs import RUNS, input_runs, module_runs
from ortcheck.convergence import data_parallel, determinism, oracle_runs
from ortcheck.convergence.cases import Case
from ortcheck.convergence.curves import CaseRun, Curve
from ortcheck.convergence.steps import fallbacks_of, train_steps
from ortcheck.convergence.training import TrainingConfig
from ortcheck.impls.base import Implementation, Options


def run_all(case: Case, impl: Implementation, options: Options = Options(), steps: int | None = None,
            training: TrainingConfig | None = None, perturb: Callable[[torch.nn.Module], None] | None = None,
            oracle: bool = True) -> dict[str, CaseRun]:
    """Every run of ``case`` from identical initial weights and batches, by name (``ortcheck.checks.RUNS``;
    without ``oracle`` only ``eager`` and ``actual``).

    Positive controls change only the implementation's side: ``training`` replaces its training
    configuration, ``perturb`` edits its copy of the initial model in place.
    """
    steps = steps or case.training.steps
    curves = {run: [] for run in (RUNS if oracle else ("actual", "eager"))}
    settings = determinism.Determinism.for_device(options.device)
    started = time.perf_counter()
    for seed in case.training.seeds:
        with determinism.applied(settings.with_seed(seed), options.device):
            initial = case.build()
            batches = case.batches(seed, steps)
        model = copy.deepcopy(initial)
        if perturb is not None:
            perturb(model)
        actual_options = dataclasses.replace(options, **case.options)
        curves["actual"].append(train(case, model, batches, seed, settings, actual_options, impl,
                                      training or case.training))
        # the oracle's runs never see the implementation: trained once per test run (oracle_runs)
        run_key = oracle_runs.key(case, steps, seed, options.device, settings.to_json(), initial, batches)
        twins = functools.cache(lambda: (module_runs(initial, None, seed), input_runs(batches, seed)) if oracle
                                else ({"eager": initial}, {"eager": batches}))
        for run in curves:
            if run != "actual":
                curves[run].append(oracle_runs.curve(run_key, run, lambda run=run: train(
                    case, copy.deepcopy(twins()[0][run]), twins()[1][run], seed, settings, options, None,
                    case.training)))
    with determinism.applied(settings, options.device):  # torch's flags as the runs had them
        fingerprint = determinism.fingerprint(options.device, case.training.dtype, settings.threads,
                                              impl.kernels(initial, options.device))
    elapsed = time.perf_counter() - started

    return {run: CaseRun(case.name, impl.name if run == "actual" else f"eager ({run})" if run != "eager" else "eager",
                         options.device, found, settings.to_json(), fingerprint, elapsed)
            for run, found in curves.items()}


def run_pair(case: Case, impl: Implementation, options: Options = Options(), steps: int | None = None,
             training: TrainingConfig | None = None,
             perturb: Callable[[torch.nn.Module], None] | None = None) -> tuple[CaseRun, CaseRun]:
    """(eager run, implementation run) of ``case``, without the float64 runs."""
    runs = run_all(case, impl, options, steps, training, perturb, oracle=False)
    return runs["eager"], runs["actual"]


def train(case: Case, model: torch.nn.Module, batches: list, seed: int, settings, options: Options,
          impl: Implementation | None, training: TrainingConfig) -> Curve:
    """One run: ``impl`` None trains ``model`` itself (eager); a case with ``ranks`` > 1 trains the
    implementation's side under DDP (``ortcheck.convergence.data_parallel``)."""
    if impl is not None and case.ranks > 1:
        return data_parallel.train(case, model, batches, seed, settings, options, impl, training)
    with determinism.applied(settings.with_seed(seed), options.device):
        model = model.to(options.device).train()
        wrapped = impl.wrap(model, options) if impl is not None else model
        return train_steps(case.loss, wrapped, batches, seed, options.device, training,
                           fallbacks=lambda: fallbacks_of(impl, wrapped))
