"""Property: a wrapped module keeps the torch.nn.Module semantics real models rely on, step after step.

Checks: what `wrap(module)` must keep of `torch.nn.Module` semantics, step after step (subjects and actions
in `ortcheck.models.semantics`; output, gradients and the whole state judged after every SGD step): buffers
written in forward (BatchNorm statistics, a counter, an EMA; top level or nested) and eval outputs reading
them; a new `nn.Parameter`, a replaced submodule, a submodule's attribute, `load_state_dict`,
`requires_grad_` on a submodule, at drawn moments; forward (pre-)hooks on the top level or a submodule
changing inputs or outputs or watching, added and removed between steps; custom `autograd.Function`s
(changing non-tensor arguments, `save_for_backward`, `needs_input_grad`, `mark_non_differentiable`,
`mark_dirty`); `deepcopy`, `pickle`, `torch.save` of the wrapped module and its `state_dict`
(`weights_only`), before or after the first forward, then training on; the wrapped module inside a parent
tree (any depth, registered before, between or after its siblings): the parent's `state_dict` has eager's
keys and values, survives `torch.save`/`torch.load(weights_only=True)` and `load_state_dict` into a fresh
parent built the same way, which trains on as eager's. Each under both re-check policies (`checked`, and
`skip_checks` for an implementation with that fast path). A behaviour may be refused only with one of the
implementation's declared refusal errors (`refusal_errors()`) naming it, and only where it first shows (its
action or the first forward reaching it); failing after it trained once, or silent divergence, fails

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
- A wrapped module inside a parent tree (``parent.inner = wrap(inner)``, at any depth and place):
  the parent's ``state_dict`` has eager's keys and values, goes through ``torch.save``/
  ``torch.load(weights_only=True)`` and ``load_state_dict`` into a fresh parent built the same
  way, and that parent trains on as eager's.
An implementation may refuse a behaviour (:func:`refusal`): with one of the error types it declares
(``Implementation.refusal_errors()``), naming the behaviour, and only where the behaviour first
shows (the action bringing it, or the first forward that reaches it); the test's outcome is then
``refused`` in the reports, never ``pass``. A behaviour that trained once and fails later, an error of any other type, and silent divergence fail. Drawn properties first run
the known failing examples of the implementation's manifest. Each property runs under both re-check
policies (the ``options`` fixture below): ``checked`` (the harness default, every forward
re-checked) and, for an implementation with a skip-check fast path, ``skip_checks`` (ORTModule's
default, which stops re-checking after the first forward): a user who changes their module on the
fast path is owed the same numbers or the same refusal.
"""
from __future__ import annotations

import ast
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

pytestmark = pytest.mark.requires(Capability.TRAINS)

SEEDS = st.integers(0, 2**16)
LR = 0.1


@pytest.fixture(params=["checked", pytest.param("skip_checks", marks=pytest.mark.requires(Capability.SKIP_CHECKS))])
def options(request, options):
    """The harness's options, under each re-check policy the implementation has."""
    return dataclasses.replace(options, skip_checks=request.param == "skip_checks")


class Refused(Exception):
    """The implementation refused a behaviour as the contract allows: the check stops there."""


def refusal(impl, error: BaseException, names: tuple[str, ...]) -> bool:
    """Whether ``error`` is one of the implementation's declared refusal errors and names the
    behaviour (one of ``names`` appears in its message)."""
    return isinstance(error, impl.refusal_errors()) and any(name.lower() in str(error).lower() for name in names)


@contextlib.contextmanager
def refusable(impl, run: str, names: tuple[str, ...]) -> Iterator[None]:
    """A refusal (:func:`refusal`) of the behaviours ``names`` on the implementation's run becomes
    :class:`Refused`; any other error, and every error of the eager runs, propagates."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - judged here
        if run == "actual" and names and refusal(impl, error, names):
            raise Refused(str(error)) from error
        raise


class Runs:
    """The oracle's runs of one subject: per run the module the user holds, the module they call
    (for ``actual`` what ``wrap`` makes of the held one: by default ``impl.wrap``) and its
    optimizer; actions apply to every run alike. ``pending``: the behaviours the next training
    step is the first to reach, the only ones it may refuse (``introduced``: the subject's own)."""

    def __init__(self, impl, options, subject: nn.Module, seed: int, introduced: tuple[str, ...] = (),
                 wrap=None):
        self.impl, self.options, self.seed = impl, options, seed
        held = module_runs(subject.to(options.device), copy.deepcopy(subject), seed)
        self.held = held
        wrap = wrap or (lambda module: impl.wrap(module, options))
        self.called = {run: wrap(module) if run == "actual" else module for run, module in held.items()}
        self.step_count = 0
        self.pending = tuple(introduced)

    def apply(self, action, names: tuple[str, ...] = ()) -> None:
        """``action(run, held_module, called_module)`` on every run. ``names``: the behaviour it
        brings, which the action itself and the next training step (its first forward) may refuse."""
        self.pending += names
        for run in RUNS:
            with refusable(self.impl, run, names):
                action(run, self.held[run], self.called[run])

    def step(self, what: str) -> None:
        """One SGD step on every run; output, gradients and state judged after it. Gradients are
        named as eager names its parameters (the wrapper inside a parent may add its own prefix)."""
        inputs = input_runs((semantics.example_input(self.seed + self.step_count),), self.seed + self.step_count,
                            self.options.device)
        names = [name for name, _ in self.held["eager"].named_parameters()]
        results = {}
        for run in RUNS:
            module = self.called[run]
            with refusable(self.impl, run, self.pending):
                out = module(*inputs[run])
                (out * semantics.cotangent(out)).sum().backward()
            parameters = list(self.held[run].parameters())
            assert len(parameters) == len(names), f"{run}: {len(parameters)} parameters, eager {len(names)}"
            grads = {name: p.grad for name, p in zip(names, parameters)}
            with torch.no_grad():
                for p in parameters:
                    if p.grad is not None:
                        p -= LR * p.grad
                        p.grad = None
            results[run] = {"output": out, "grads": grads, "state": dict(self.held[run].state_dict())}
        self.pending = ()
        self.step_count += 1
        assert_matches_oracle(results, path=f"{what}, step {self.step_count}")

    def evaluate(self, what: str) -> None:
        """An eval-mode forward on every run (it reads the buffers), then back to training."""
        inputs = input_runs((semantics.example_input(self.seed + 1000),), self.seed, self.options.device)
        outputs = {}
        for run in RUNS:
            self.called[run].eval()
            try:
                with refusable(self.impl, run, self.pending), torch.no_grad():
                    outputs[run] = self.called[run](*inputs[run])
            finally:
                self.called[run].train()
        assert_matches_oracle(outputs, path=f"{what}, eval output")


def drawn(check, examples: tuple[str, ...] = (), fraction: float = 0.2, **strategies):
    """``check(impl, options, seed=..., ...)`` on the manifest's known failing examples (dict
    literals of those arguments) first, then on drawn values; a refusal ends an example and makes the
    test's outcome ``refused`` (``record_refusal``), not ``pass``."""

    def attempt(impl, options, record_refusal, values) -> None:
        try:
            check(impl, options, **values)
        except Refused as refused:
            record_refusal(str(refused))

    @costly(fraction)
    @given(seed=SEEDS, **strategies)
    def run(impl, options, record_refusal, **values):
        attempt(impl, options, record_refusal, values)

    def test(impl, options, record_refusal):
        for text in examples:
            attempt(impl, options, record_refusal, ast.literal_eval(text))
        run(impl, options, record_refusal)

    return test


# ---- state written in forward


def check_forward_state(impl, options, seed: int, kind: str, nested: bool, steps: int) -> None:
    runs = Runs(impl, options, semantics.with_state(kind, nested, seed), seed, semantics.STATE_NAMES[kind])
    for _ in range(steps):
        runs.step(f"{kind} {'nested' if nested else 'top level'}")
    runs.evaluate(kind)


def test_buffers_written_in_forward_hold_eagers_values(impl, options, manifest_examples, record_refusal):
    drawn(check_forward_state, manifest_examples, kind=st.sampled_from(semantics.STATE_KINDS), nested=st.booleans(),
          steps=st.integers(1, 3))(impl, options, record_refusal)


# ---- structure changed by the user


def check_structure_changes(impl, options, seed: int, changes: list[tuple[int, str, int]]) -> None:
    """``changes``: (the step before which it happens, what, which block)."""
    runs = Runs(impl, options, semantics.plain(seed), seed)
    steps = max([when for when, _, _ in changes] + [0]) + 1
    for step in range(steps + 1):
        for when, what, where in changes:
            if when == step:
                runs.apply(semantics.change(what, where, seed + step), semantics.CHANGE_NAMES[what])
                runs.step(f"after {what} on block {where}")
        if step < steps:
            runs.step("training")


def test_structure_changed_by_the_user_takes_effect(impl, options, manifest_examples, record_refusal):
    change = st.tuples(st.integers(0, 2), st.sampled_from(semantics.CHANGES), st.integers(0, semantics.BLOCKS - 1))
    drawn(check_structure_changes, manifest_examples,
          changes=st.lists(change, min_size=1, max_size=3))(impl, options, record_refusal)


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
        runs.step(f"hooks {hooks}")
        assert calls["actual"] == calls["eager"], f"step {step + 1}: hook calls {calls['actual']}, eager {calls['eager']}"


def test_forward_hooks_run_as_in_eager(impl, options, manifest_examples, record_refusal):
    hook = st.tuples(st.sampled_from(semantics.HOOK_KINDS), st.integers(-1, semantics.BLOCKS - 1),
                     st.integers(0, 2), st.integers(1, 2))
    drawn(check_forward_hooks, manifest_examples,
          hooks=st.lists(hook, min_size=1, max_size=3))(impl, options, record_refusal)


# ---- custom autograd Functions


@pytest.mark.parametrize("feature", semantics.FUNCTION_FEATURES)
def test_custom_autograd_functions_inside_the_module(impl, options, feature, record_refusal):
    """Two steps, with the Function's non-tensor argument changing between them: only the first
    forward reaching the Function may refuse it."""
    seed = semantics.FUNCTION_FEATURES.index(feature)
    runs = Runs(impl, options, semantics.with_function(feature, seed), seed, semantics.function_names(feature))
    try:
        runs.step(f"autograd.Function ({feature})")
    except Refused as refused:
        record_refusal(str(refused))
        return
    runs.apply(lambda run, held, _called: semantics.change_function_argument(held))
    runs.step(f"autograd.Function ({feature}), argument changed")


# ---- copies

COPY_NAMES = ("pickle", "copy", "serializ")


def _copied(how: str, module: nn.Module) -> nn.Module:
    if how == "deepcopy":
        return copy.deepcopy(module)
    if how == "pickle":
        return pickle.loads(pickle.dumps(module))
    buffer = io.BytesIO()
    torch.save(module, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def _saved_and_loaded(state: dict) -> dict:
    """``state`` through ``torch.save``/``torch.load(weights_only=True)``: the same keys, bitwise the same values."""
    saved = io.BytesIO()
    torch.save(state, saved)
    saved.seek(0)
    loaded = torch.load(saved, weights_only=True)
    assert list(loaded) == list(state), f"state_dict keys after save/load {list(loaded)}, before {list(state)}"
    for key, value in loaded.items():
        assert torch.equal(value, state[key]), f"{key} changed through torch.save/torch.load"
    return loaded


def check_copies(impl, options, seed: int, how: str, after_steps: int) -> None:
    """The implementation's run is replaced by its copy; the eager runs go on: the copy must carry
    on the original's trajectory. The copy, or its first forward, may refuse."""
    runs = Runs(impl, options, semantics.plain(seed), seed)
    for _ in range(after_steps):
        runs.step("before the copy")
    wrapped = runs.called["actual"]
    if how == "state_dict":
        state = _saved_and_loaded(wrapped.state_dict())
        fresh = semantics.plain(seed + 1).to(options.device)
        fresh.load_state_dict(state)
        runs.held["actual"], runs.called["actual"] = fresh, impl.wrap(fresh, options)
    else:
        with refusable(impl, "actual", COPY_NAMES):
            runs.called["actual"] = _copied(how, wrapped)
        runs.held["actual"] = _held(runs.called["actual"])
        runs.pending = COPY_NAMES
    for _ in range(2):
        runs.step(f"the {how} copy made after {after_steps} steps")


def _held(called: nn.Module) -> nn.Module:
    """The module a copied wrapper wraps (the wrapper itself where it is the module)."""
    return getattr(called, "module", None) or getattr(called, "_original_module", None) or called


def test_copies_train_like_the_original(impl, options, manifest_examples, record_refusal):
    drawn(check_copies, manifest_examples, how=st.sampled_from(("deepcopy", "pickle", "torch_save", "state_dict")),
          after_steps=st.integers(0, 2))(impl, options, record_refusal)


# ---- a wrapped module inside a parent


def check_wrapped_in_parent(impl, options, seed: int, places: list[str], steps_before: int) -> None:
    """``places``: where the wrapped module sits at each level of the parent tree, outermost first.
    After ``steps_before`` steps every run's parent state goes through torch.save/torch.load and
    ``load_state_dict`` into a fresh parent built the same way (the implementation's with the inner
    module wrapped again), which trains on."""
    def wrapped_inside(parent: nn.Module) -> nn.Module:
        return semantics.place_wrapped(parent, len(places), lambda inner: impl.wrap(inner, options))

    runs = Runs(impl, options, semantics.in_parent(seed, places), seed, wrap=wrapped_inside)
    for _ in range(steps_before):
        runs.step(f"wrapped inside a parent at {places}")
    states = {run: runs.held[run].state_dict() for run in RUNS}
    assert list(states["actual"]) == list(states["eager"]), \
        f"the parent's state_dict keys {list(states['actual'])}, eager {list(states['eager'])}"
    assert_matches_oracle(states, path=f"the parent's state_dict at {places}")
    for run in RUNS:
        like = next(runs.held[run].parameters())
        fresh = semantics.in_parent(seed + 1, places).to(like.device, like.dtype)
        if run == "actual":
            fresh = wrapped_inside(fresh)
        fresh.load_state_dict(_saved_and_loaded(states[run]))
        for key, value in fresh.state_dict().items():
            assert torch.equal(value, states[run][key]), f"{run}: {key} not loaded into the fresh parent"
        runs.held[run] = runs.called[run] = fresh
    for _ in range(2):
        runs.step(f"a fresh parent loaded from the state_dict at {places}, after {steps_before} steps")


def test_wrapped_module_inside_a_parent_saves_and_loads_as_eager(impl, options, manifest_examples, record_refusal):
    drawn(check_wrapped_in_parent, manifest_examples,
          places=st.lists(st.sampled_from(semantics.PARENT_PLACES), min_size=1, max_size=3),
          steps_before=st.integers(0, 2))(impl, options, record_refusal)
