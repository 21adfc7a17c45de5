"""The checks on one user model, each judged by the float64 oracle or the transition contract.

One function per check, taking a :class:`Subject` and returning a detail line; an AssertionError
inside becomes FAIL with its message (as does an exception or a crash of the pipeline), and a check that does not apply raises :class:`NotApplicable`
with the reason (n/a, as in the matrix). Each check starts from fresh copies of the model, so one failure
cannot leak into the next.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Callable, Sequence

import torch

from ortcheck.checks.autocast import autocast_region
from ortcheck.checks.bitwise import assert_bitwise_equal
from ortcheck.checks.grad_scaler import assert_scaled_training_matches_eager
from ortcheck.checks.oracle import assert_curve_matches_oracle
from ortcheck.checks.runs import RUNS, fresh_leaves
from ortcheck.impls.base import Capability, Implementation, Options
from ortcheck.nested import leaves, map_leaves
from ortcheck.stateful.contract import Call, Contract, eager_reads, memory_options
from ortcheck.usercheck.calls import batch_runs, judged_call, one_call, requiring_grad, runs_of
from ortcheck.usercheck.isolated import Crashed, Part, Result, isolated_each
from ortcheck.usercheck.result import COST, FAIL, NA, PASS, Outcome, raised
from ortcheck.usercheck.targets import Batch, make_batch

SIZES = (2, 3)  # default batch sizes: the first call's, and "another size" (--batch-sizes)
OPTIMIZERS = {"sgd": lambda params: torch.optim.SGD(params, lr=0.01),
              "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3)}


@dataclasses.dataclass
class Subject:
    impl: Implementation
    options: Options
    model: torch.nn.Module
    batch_fn: Callable[[int], object]
    loss_fn: Callable
    steps: int = 3
    optimizer: str = "sgd"
    sizes: tuple[int, int] = SIZES
    input_grads: str = "as-given"  # which input tensors are differentiated (calls.INPUT_GRADS)
    autocast: str | None = None  # every call under torch.autocast in this dtype ("float16", "bfloat16")
    grad_scaler: bool = False    # the training steps with torch.amp.GradScaler (float16 autocast)

    def region(self):
        """The ``torch.autocast`` region every call of the checks runs in (none without ``autocast``)."""
        return autocast_region(self.options.device, getattr(torch, self.autocast) if self.autocast else None)

    def batch(self, size: int, seed: int = 0) -> Batch:
        return requiring_grad(make_batch(self.batch_fn, size, seed), self.input_grads)

    def runs(self, options: Options | None = None) -> dict[str, torch.nn.Module]:
        return runs_of(self.impl, options or self.options, self.model)


def gradients(subject: Subject) -> str:
    """Outputs, loss and every parameter and input gradient of one training call."""
    judged_call(subject.runs(), subject.batch(subject.sizes[0]), subject.loss_fn, 0, subject.options.device,
                "outputs and gradients")
    return f"batch of {subject.sizes[0]}"


def new_batch_size(subject: Subject) -> str:
    """A second batch of another size: the same numbers, and exports exactly as the contract says."""
    modules, contract, costs, detail = subject.runs(), Contract(), [], f"{subject.sizes[0]} then {subject.sizes[1]}"
    for seed, size in enumerate(subject.sizes):
        batch = subject.batch(size, seed)
        exports = subject.impl.observe(modules["actual"]).exports
        try:
            judged_call(modules, batch, subject.loss_fn, seed, subject.options.device, f"batch of {size}")
        except AssertionError as error:  # the oracle's (a value off); an exception names its own cause
            reused = seed and exports and subject.impl.observe(modules["actual"]).exports == exports
            if reused and "eager gives" in str(error):
                error.add_note(f"likely cause: the graph exported at batch {subject.sizes[0]} ran at batch {size} "
                               "without a re-export, and something its trace fixed depends on the size")
            raise
        contract.forward(_call(subject, modules, batch, training=True))
        _assert_counters(subject, modules["actual"], contract, f"after the batch of {size}", costs)
        observed = subject.impl.observe(modules["actual"])
        if seed and exports is not None and observed.exports > exports and observed.last_reason:
            detail += f" (re-exported at {size}: {observed.last_reason})"
    return _costed(detail, costs)


def train_eval(subject: Subject) -> str:
    """train -> eval (no_grad) -> train: eval outputs as eager's, one graph per mode, no re-export."""
    modules, contract, batch, costs = subject.runs(), Contract(), subject.batch(subject.sizes[0]), []
    for seed, training in enumerate((True, False, True)):
        for module in modules.values():
            module.train(training)
        with torch.set_grad_enabled(training):
            judged_call(modules, batch, subject.loss_fn, seed, subject.options.device,
                        "train" if training else "eval", backward=training)
        contract.forward(_call(subject, modules, batch, training, grad_enabled=training))
        _assert_counters(subject, modules["actual"], contract, f"after the {'train' if training else 'eval'} call",
                         costs)
    return _costed("", costs)


def state_dict_roundtrip(subject: Subject) -> str:
    """After a step, the wrapped module's state_dict loaded into a fresh wrap computes as eager does."""
    modules = subject.runs()
    _train(subject, modules, steps=1)
    fresh = subject.runs()
    state = modules["actual"].state_dict()
    expected = set(modules["eager"].state_dict())
    assert set(state) == expected, f"state_dict keys {sorted(set(state) ^ expected)} differ from eager's"
    for run in RUNS:
        fresh[run].load_state_dict(modules[run].state_dict())
    judged_call(fresh, subject.batch(subject.sizes[0], 1), subject.loss_fn, 1, subject.options.device,
                "after load_state_dict into a fresh wrap")
    return ""


def recompute(subject: Subject) -> str:
    """Memory-optimizer levels 1 and 2 compute bit for bit what level 0 computes."""
    if Capability.RECOMPUTE not in subject.impl.capabilities():
        raise NotApplicable(f"{subject.impl.name} has no memory optimizer")
    batch = subject.batch(subject.sizes[0])
    base = _actual_call(subject, subject.options, batch)
    for level in (1, 2):
        options = dataclasses.replace(subject.options, memory_opt_level=level)
        assert_bitwise_equal(_actual_call(subject, options, batch), base, f"level {level} against level 0")
    return "1 and 2 bitwise equal to 0"


def training_steps(subject: Subject) -> str:
    """N optimizer steps: the loss and gradient norm of every step within the oracle's curve bound;
    with the GradScaler, its decisions equal eager's and the parameters after each step pass the oracle."""
    if subject.grad_scaler:
        device = subject.options.device
        assert_scaled_training_matches_eager(
            subject.runs(), lambda step: batch_runs(subject.batch(subject.sizes[0], step), step, device),
            lambda module, batch: subject.loss_fn(module(*batch.args, **batch.kwargs)), subject.steps, device,
            OPTIMIZERS[subject.optimizer])
        return f"{subject.steps} x {subject.optimizer} with GradScaler (scale 2**40: skipped as eager; 2**10: stepped)"
    curves = _train(subject, subject.runs(), subject.steps)
    for what in ("loss", "gradient norm"):
        assert_curve_matches_oracle({run: curves[run][what] for run in RUNS}, what=what)
    return f"{subject.steps} x {subject.optimizer}"


CHECKS = {"gradients": gradients, "new batch size": new_batch_size, "train/eval": train_eval,
          "state_dict round trip": state_dict_roundtrip, "recompute levels": recompute,
          "training steps": training_steps}


class NotApplicable(Exception):
    """A check that does not apply to this implementation or model; the message says why."""


class ExtraCost(Exception):
    """Every value matched eager's, but the implementation rebuilt more than the contract predicts."""


def run_checks(names: Sequence[str], subject: Subject) -> tuple[Outcome, ...]:
    """The checks' outcomes; they run in a child process (:mod:`ortcheck.usercheck.isolated`), so a
    crash of the implementation fails the check it happened in alone."""
    parts = [Part(f"check {name!r}", _in_region, (CHECKS[name], subject)) for name in names]
    results = isolated_each(parts, device=subject.options.device)
    return tuple(_judged(name, result) for name, result in zip(names, results))


def _judged(name: str, result: Result) -> Outcome:
    try:
        return Outcome(name, PASS, result.get())
    except Crashed as crash:
        return Outcome(name, FAIL, str(crash))
    except NotApplicable as reason:
        return Outcome(name, NA, str(reason))
    except ExtraCost as cost:
        return Outcome(name, COST, str(cost))
    except AssertionError as error:
        return Outcome(name, FAIL, _noted(str(error).splitlines()[0] if str(error) else "assertion failed", error))
    except Exception as error:  # the pipeline raised (inputs were validated in eager before any check)
        return Outcome(name, FAIL, _noted(raised(error), error))


def _in_region(check: Callable[[Subject], str], subject: Subject) -> str:
    with subject.region():
        return check(subject)


def _noted(line: str, error: BaseException) -> str:
    """The failure's line, then what the check added about its cause (``add_note``)."""
    return "; ".join([line, *getattr(error, "__notes__", ())])


def _train(subject: Subject, modules: dict, steps: int) -> dict[str, dict[str, list[float]]]:
    """``steps`` optimizer steps per run; per run, the loss and gradient norm of each step."""
    optimizers = {run: OPTIMIZERS[subject.optimizer]([p for p in m.parameters() if p.requires_grad])
                  for run, m in modules.items()}
    curves = {run: {"loss": [], "gradient norm": []} for run in RUNS}
    for step in range(steps):
        inputs = batch_runs(subject.batch(subject.sizes[0], step), step, subject.options.device)
        for run in RUNS:
            result = one_call(modules[run], inputs[run], subject.loss_fn)
            grads = [g for g in result["parameter gradients"].values() if g is not None]
            curves[run]["loss"].append(result["loss"].item())
            curves[run]["gradient norm"].append(torch.linalg.vector_norm(torch.stack(
                [torch.linalg.vector_norm(g) for g in grads])).item())
            optimizers[run].step()
    return curves


def _actual_call(subject: Subject, options: Options, batch: Batch) -> dict:
    wrapped = subject.impl.wrap(copy.deepcopy(subject.model).to(options.device), options)
    fresh = Batch(*fresh_leaves((batch.args, batch.kwargs), options.device))
    return one_call(wrapped, fresh, subject.loss_fn)


def _to(device: str):
    return lambda leaf: leaf.to(device) if isinstance(leaf, torch.Tensor) else leaf


def _call(subject: Subject, modules: dict, batch: Batch, training: bool, grad_enabled: bool = True) -> Call:
    """What the transition contract needs to know about one forward call, from the user's side alone
    (and eager's run of it: the values and sizes its forward read into control flow)."""
    def describe(leaf):
        if isinstance(leaf, torch.Tensor):
            return ("tensor", str(leaf.dtype), leaf.dim())
        return (type(leaf).__name__, repr(leaf))

    signature = repr(map_leaves((batch.args, batch.kwargs), describe))
    tensors = [leaf for leaf in leaves((batch.args, batch.kwargs)) if isinstance(leaf, torch.Tensor)]
    trainable = frozenset(n for n, p in modules["actual"].named_parameters() if p.requires_grad)
    args, kwargs = map_leaves((batch.args, batch.kwargs), _to(subject.options.device))
    return Call((signature,), training, subject.options.device, 0, tuple(t.requires_grad for t in tensors),
                trainable, grad_enabled, memory_options(subject.options),
                **eager_reads(modules["eager"], args, kwargs, tensors))


def _assert_counters(subject: Subject, wrapped: torch.nn.Module, contract: Contract, when: str,
                     costs: list[str] | None = None) -> None:
    """The implementation's counters as the contract predicts. Where it only rebuilt more (values are
    judged separately, call by call), that is a cost: noted in ``costs``, the contract follows the
    counters observed, and the check goes on judging values."""
    observed = subject.impl.observe(wrapped)
    mismatches = contract.mismatches(observed)
    if mismatches and costs is not None and _only_extra_work(observed, contract.observations):
        costs.append(f"{when}: " + "; ".join(mismatches))
        contract.observations = observed
        return
    assert not mismatches, f"{when}: " + "; ".join(mismatches)


def _only_extra_work(observed, predicted) -> bool:
    """More exports, gradient builds or sessions than predicted, and nothing else off (no fewer, no
    fallback to eager): a graph keyed by more than it needs, never a reuse that may compute wrong numbers."""
    counters = [(getattr(observed, name), getattr(predicted, name)) for name in ("exports", "gradient_builds", "sessions")]
    known = [(seen, want) for seen, want in counters if seen is not None]
    return (all(seen >= want for seen, want in known) and any(seen > want for seen, want in known)
            and observed.fallbacks in (None, predicted.fallbacks))


def _costed(detail: str, costs: list[str]) -> str:
    """``detail`` when nothing cost extra, else :class:`ExtraCost` saying what did."""
    if costs:
        raise ExtraCost(f"every value as eager's, but more rebuilt than needed (time, not a wrong number): {costs[0]}")
    return detail
