"""Property: a wrapped module keeps the torch.nn.Module semantics real models rely on, step after step.

Every run trains the same subject (``ortcheck.models.semantics``) with SGD, and the user's actions
happen to every run alike at the drawn moment (before the first forward or between steps), on the
module the user holds: the object handed to ``wrap`` and its submodules. After each step the
output, the gradients and the whole state (parameters and buffers) are judged by the float64
oracle; integer buffers must be equal.
- State written in forward: BatchNorm's running statistics and ``num_batches_tracked``, a user
  counter and an EMA buffer, at the top level or nested; eval outputs that read them.
- Structure the user changes: a new ``nn.Parameter``, a replaced submodule, an attribute of a
  submodule, ``load_state_dict`` through the wrapper, ``requires_grad_`` on a submodule.
- Forward pre-hooks and forward hooks on the top level or a submodule, changing inputs or outputs
  or only watching, added and removed between steps: the same calls with the same effects.
- Custom ``torch.autograd.Function``s inside the module: non-tensor arguments that change between
  calls, ``save_for_backward``, ``needs_input_grad``, ``mark_non_differentiable``, ``mark_dirty``.
- Copies: ``copy.deepcopy``, ``pickle``, ``torch.save``/``torch.load`` of the wrapped module, and
  its ``state_dict`` through ``torch.save``/``torch.load(weights_only=True)``, before or after the
  first forward; the copy trains like the original.
An implementation may refuse a behaviour with an error naming it (:func:`refused`); silently
diverging fails. Each property runs under both re-check policies (the ``options`` fixture below):
``checked`` (the harness default, every forward re-checked) and, for an implementation with a skip-check fast path,
``skip_checks`` (ORTModule's default, which stops re-checking after the first forward): a user who
changes their module on the fast path is owed the same numbers or the same refusal.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import pickle
from typing import Iterator

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.models import semantics
from ortcheck.profiles import costly

pytestmark = pytest.mark.requires(Capability.GRAD_PARITY)

SEEDS = st.integers(0, 2**16)
LR = 0.1


@pytest.fixture(params=["checked", pytest.param("skip_checks", marks=pytest.mark.requires(Capability.SKIP_CHECKS))])
def options(request, options):
    """The harness's options, under each re-check policy the implementation has."""
    return dataclasses.replace(options, skip_checks=request.param == "skip_checks")


class Refused(Exception):
    """The implementation raised an error naming the behaviour: allowed, and the check stops."""


def refused(error: Exception, names: tuple[str, ...]) -> bool:
    """Whether ``error`` names the behaviour: one of ``names`` appears in its message."""
    return any(name.lower() in str(error).lower() for name in names)


@contextlib.contextmanager
def refusable(run: str, names: tuple[str, ...]) -> Iterator[None]:
    """An error on the implementation's run that names the behaviour becomes :class:`Refused`;
    any other error, and every error of the eager runs, propagates."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - judged here
        if run == "actual" and refused(error, names):
            raise Refused(str(error)) from error
        raise


class Runs:
    """The oracle's runs of one subject: per run the module the user holds, the module they call
    (the wrapped one for ``actual``) and its optimizer; actions apply to every run alike."""

    def __init__(self, impl, options, subject: nn.Module, seed: int):
        self.impl, self.options, self.seed = impl, options, seed
        held = module_runs(subject.to(options.device), copy.deepcopy(subject), seed)
        self.held = held
        self.called = {run: impl.wrap(held["actual"], options) if run == "actual" else module
                       for run, module in held.items()}
        self.step_count = 0

    def apply(self, action, names: tuple[str, ...]) -> None:
        """``action(run, held_module, called_module)`` on every run; an error naming the behaviour
        on the implementation's run is a refusal."""
        for run in RUNS:
            with refusable(run, names):
                action(run, self.held[run], self.called[run])

    def step(self, names: tuple[str, ...], what: str) -> None:
        """One SGD step on every run; output, gradients and state judged after it."""
        inputs = input_runs((semantics.example_input(self.seed + self.step_count),), self.seed + self.step_count,
                            self.options.device)
        results = {}
        for run in RUNS:
            module = self.called[run]
            with refusable(run, names):
                out = module(*inputs[run])
                (out * semantics.cotangent(out)).sum().backward()
            grads = {name: p.grad for name, p in self.held[run].named_parameters()}
            with torch.no_grad():
                for p in self.held[run].parameters():
                    if p.grad is not None:
                        p -= LR * p.grad
                        p.grad = None
            results[run] = {"output": out, "grads": grads, "state": dict(self.held[run].state_dict())}
        self.step_count += 1
        assert_matches_oracle(results, path=f"{what}, step {self.step_count}")

    def evaluate(self, names: tuple[str, ...], what: str) -> None:
        """An eval-mode forward on every run (it reads the buffers), then back to training."""
        inputs = input_runs((semantics.example_input(self.seed + 1000),), self.seed, self.options.device)
        outputs = {}
        for run in RUNS:
            self.called[run].eval()
            try:
                with refusable(run, names), torch.no_grad():
                    outputs[run] = self.called[run](*inputs[run])
            finally:
                self.called[run].train()
        assert_matches_oracle(outputs, path=f"{what}, eval output")


def drawn(check, fraction: float = 0.2, **strategies):
    """``check(impl, options, seed=..., ...)`` on drawn values; a refusal ends the example."""

    @costly(fraction)
    @given(seed=SEEDS, **strategies)
    def run(impl, options, **values):
        try:
            check(impl, options, **values)
        except Refused:
            pass

    return run


# ---- state written in forward


def check_forward_state(impl, options, seed: int, kind: str, nested: bool, steps: int) -> None:
    runs = Runs(impl, options, semantics.with_state(kind, nested, seed), seed)
    names = semantics.STATE_NAMES[kind]
    for _ in range(steps):
        runs.step(names, f"{kind} {'nested' if nested else 'top level'}")
    runs.evaluate(names, kind)


def test_buffers_written_in_forward_hold_eagers_values(impl, options):
    drawn(check_forward_state, kind=st.sampled_from(semantics.STATE_KINDS), nested=st.booleans(),
          steps=st.integers(1, 3))(impl, options)


# ---- structure changed by the user


def check_structure_changes(impl, options, seed: int, changes: list[tuple[int, str, int]]) -> None:
    """``changes``: (the step before which it happens, what, which block)."""
    runs = Runs(impl, options, semantics.plain(seed), seed)
    steps = max([when for when, _, _ in changes] + [0]) + 1
    for step in range(steps + 1):
        for when, what, where in changes:
            if when == step:
                runs.apply(semantics.change(what, where, seed + step), semantics.CHANGE_NAMES[what])
                runs.step(semantics.CHANGE_NAMES[what], f"after {what} on block {where}")
        if step < steps:
            runs.step((), "training")


def test_structure_changed_by_the_user_takes_effect(impl, options):
    change = st.tuples(st.integers(0, 2), st.sampled_from(semantics.CHANGES), st.integers(0, semantics.BLOCKS - 1))
    drawn(check_structure_changes, changes=st.lists(change, min_size=1, max_size=3))(impl, options)


# ---- forward hooks


def check_forward_hooks(impl, options, seed: int, hooks: list[tuple[str, int, int, int]]) -> None:
    """``hooks``: (kind, block (-1: the top level), the step it is added before, steps it stays)."""
    runs = Runs(impl, options, semantics.plain(seed), seed)
    calls = {run: [] for run in RUNS}
    handles: dict[int, dict[str, object]] = {}
    last = max(added + stays for _, _, added, stays in hooks) + 1
    for step in range(last):
        for index, (kind, block, added, stays) in enumerate(hooks):
            if step == added:
                handles[index] = {}
                runs.apply(lambda run, held, _called, index=index, kind=kind, block=block: handles[index].update(
                    {run: semantics.add_hook(held, block, kind, calls[run], index)}), ("hook",))
            if step == added + stays:
                for handle in handles.pop(index).values():
                    handle.remove()
        runs.step(("hook",), f"hooks {hooks}")
        assert calls["actual"] == calls["eager"], f"step {step + 1}: hook calls {calls['actual']}, eager {calls['eager']}"


def test_forward_hooks_run_as_in_eager(impl, options):
    hook = st.tuples(st.sampled_from(semantics.HOOK_KINDS), st.integers(-1, semantics.BLOCKS - 1),
                     st.integers(0, 2), st.integers(1, 2))
    drawn(check_forward_hooks, hooks=st.lists(hook, min_size=1, max_size=3))(impl, options)


# ---- custom autograd Functions


@pytest.mark.parametrize("feature", semantics.FUNCTION_FEATURES)
def test_custom_autograd_functions_inside_the_module(impl, options, feature):
    """Two steps, with the Function's non-tensor argument changing between them."""
    seed = semantics.FUNCTION_FEATURES.index(feature)
    runs = Runs(impl, options, semantics.with_function(feature, seed), seed)
    names = semantics.function_names(feature)
    try:
        runs.step(names, f"autograd.Function ({feature})")
        runs.apply(lambda run, held, _called: semantics.change_function_argument(held), names)
        runs.step(names, f"autograd.Function ({feature}), argument changed")
    except Refused:
        pass


# ---- copies


def _copied(how: str, module: nn.Module) -> nn.Module:
    if how == "deepcopy":
        return copy.deepcopy(module)
    if how == "pickle":
        return pickle.loads(pickle.dumps(module))
    buffer = io.BytesIO()
    torch.save(module, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def check_copies(impl, options, seed: int, how: str, after_steps: int) -> None:
    """The implementation's run is replaced by its copy; the eager runs go on: the copy must carry
    on the original's trajectory."""
    runs = Runs(impl, options, semantics.plain(seed), seed)
    for _ in range(after_steps):
        runs.step((), "before the copy")
    wrapped = runs.called["actual"]
    if how == "state_dict":
        saved = io.BytesIO()
        torch.save(wrapped.state_dict(), saved)
        saved.seek(0)
        state = torch.load(saved, weights_only=True)
        original = wrapped.state_dict()
        assert state.keys() == original.keys(), f"state_dict keys after save/load {list(state)}, before {list(original)}"
        for key, value in state.items():
            assert torch.equal(value, original[key]), f"{key} changed through torch.save/torch.load"
        fresh = semantics.plain(seed + 1).to(options.device)
        fresh.load_state_dict(state)
        runs.held["actual"], runs.called["actual"] = fresh, impl.wrap(fresh, options)
    else:
        try:
            runs.called["actual"] = _copied(how, wrapped)
        except Exception as error:  # noqa: BLE001
            if refused(error, ("pickle", "copy", "serializ")):
                return
            raise
        runs.held["actual"] = _held(runs.called["actual"])
    for _ in range(2):
        runs.step((), f"the {how} copy made after {after_steps} steps")


def _held(called: nn.Module) -> nn.Module:
    """The module a copied wrapper wraps (the wrapper itself where it is the module)."""
    return getattr(called, "module", None) or getattr(called, "_original_module", None) or called


def test_copies_train_like_the_original(impl, options):
    drawn(check_copies, how=st.sampled_from(("deepcopy", "pickle", "torch_save", "state_dict")),
          after_steps=st.integers(0, 2))(impl, options)
