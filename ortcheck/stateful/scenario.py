"""One action sequence run on a wrapped module and on eager PyTorch, checked after every action.

Besides the wrapped module, three eager copies follow every action: the module as the user runs it
(float32), its float64 twin (the truth) and a float64 twin whose operands are nudged by one ulp
(the rounding scale); see :mod:`ortcheck.checks.oracle`. After each action the outputs (and whether
they require grad) pass the oracle; after a ``Step``, every input and parameter gradient and the
updated parameters do too; the implementation's observable counters equal what the transition
contract (:mod:`ortcheck.stateful.contract`) predicts from the actions alone. The first deviation
raises with a note naming the step; :meth:`Scenario.reproduction` prints the sequence as a script.
"""
from __future__ import annotations

import copy
import dataclasses

import torch

from ortcheck.checks.autocast import autocast_region
from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, input_runs, module_runs
from ortcheck.impls.base import Implementation, Options
from ortcheck.models.seeding import manual_seed
from ortcheck.models.transition_subject import TransitionSubject
from ortcheck.stateful.contract import Call, Contract, memory_options, unit_axes
from ortcheck.stateful.inputs import Inputs
from ortcheck.strategies.transitions.actions import (
    Forward, MoveTo, SetAttribute, SetMemoryOptimizer, SetMode, SetRequiresGrad, SetTrainable, Step,
)

LEARNING_RATE = 0.1


@dataclasses.dataclass
class _Pending:
    """The last forward whose outputs require grad: per run, its inputs and output."""

    seed: int
    args: dict[str, tuple]
    outputs: dict[str, torch.Tensor]


class Scenario:
    def __init__(self, impl: Implementation, options: Options = Options(), contract: Contract | None = None):
        self.impl, self.options, self.initial_options = impl, options, options
        manual_seed(0)
        eager = TransitionSubject().to(options.device)
        self.modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
        self.optimizers = {run: torch.optim.SGD(module.parameters(), lr=LEARNING_RATE)
                           for run, module in self.modules.items()}
        self.contract = contract if contract is not None else Contract()
        self.inputs = Inputs()
        self.device = options.device
        self.training = True
        self.frozen: frozenset[str] = frozenset()
        self.attribute_sets = 0
        self.autocast = "off"
        self.memory_options = memory_options(options)
        self.actions: list = []
        self._pending: _Pending | None = None
        self._handlers = {Forward: self._forward, Step: self._step, SetRequiresGrad: self._set_requires_grad,
                          SetTrainable: self._set_trainable, SetAttribute: self._set_attribute,
                          SetMode: self._set_mode, MoveTo: self._move_to, SetMemoryOptimizer: self._set_memory_optimizer}

    @property
    def wrapped(self) -> torch.nn.Module:
        return self.modules["actual"]

    @property
    def can_step(self) -> bool:
        return self._pending is not None

    def apply(self, action) -> None:
        self.actions.append(action)
        try:
            self._handlers[type(action)](action)
            self._check_counters()
        except BaseException as error:
            error.add_note(f"at step {len(self.actions)} of the sequence: {action!r}")
            raise

    def reproduction(self) -> str:
        """A standalone script replaying the actions so far against this implementation."""
        names = sorted({type(action).__name__ for action in self.actions})
        lines = ["from ortcheck import impls", "from ortcheck.impls import Options",
                 f"from ortcheck.stateful import replay, {', '.join(names)}", "",
                 f"replay(impls.get({self.impl.name!r}), {_short_repr(self.initial_options)}, ["]
        lines += [f"    {action!r}," for action in self.actions]
        return "\n".join(lines + ["])"])

    # -- actions ------------------------------------------------------------------------------
    def _forward(self, action: Forward) -> None:
        self.inputs = self.inputs.after(action)
        args, kwargs = self.inputs.make(seed=action.seed, device=self.device)
        runs_args = input_runs(args, seed=action.seed)
        self.autocast = action.autocast or self.autocast
        dtype = None if self.autocast == "off" else getattr(torch, self.autocast)
        with torch.set_grad_enabled(not action.no_grad), autocast_region(self.device, dtype):
            outputs = {run: self.modules[run](*runs_args[run], **kwargs) for run in RUNS}
        self.contract.forward(Call(self.inputs.signature, self.training, self.device, self.attribute_sets,
                                   self.inputs.requiring_grad, frozenset(self._parameter_names()) - self.frozen,
                                   grad_enabled=not action.no_grad, memory_options=self.memory_options,
                                   unit_axes=unit_axes(args), autocast=() if dtype is None else (dtype,)))
        assert_matches_oracle(outputs, path="output")
        actual, expected = outputs["actual"], outputs["eager"]
        assert actual.requires_grad == expected.requires_grad, (
            f"output requires_grad is {actual.requires_grad}, eager's is {expected.requires_grad}")
        self._pending = _Pending(action.seed, runs_args, outputs) if expected.requires_grad else None

    def _step(self, action: Step) -> None:
        if self._pending is None:
            raise ValueError("Step() needs a preceding forward whose output requires grad")
        call, self._pending = self._pending, None
        generator = torch.Generator().manual_seed(call.seed + 1)
        output = call.outputs["eager"]
        cotangent = torch.randn(output.shape, generator=generator).to(output.device)  # where the forward ran
        cotangents = input_runs(cotangent, seed=call.seed + 1)
        for run in RUNS:
            self.optimizers[run].zero_grad(set_to_none=True)
            call.outputs[run].backward(cotangents[run].to(call.outputs[run].dtype))
        grads = {run: {f"input {name}": t.grad for name, t in zip("xy", call.args[run])} for run in RUNS}
        for run in RUNS:
            grads[run].update({name: p.grad for name, p in self.modules[run].named_parameters()})
        _assert_grads(grads)
        for run in RUNS:
            self.optimizers[run].step()
        params = {run: {name: p.detach() for name, p in self.modules[run].named_parameters()} for run in RUNS}
        assert_matches_oracle(params, path="parameters after the SGD step")

    def _set_requires_grad(self, action: SetRequiresGrad) -> None:
        self.inputs = dataclasses.replace(self.inputs, **{f"{action.input}_requires_grad": action.value})

    def _set_trainable(self, action: SetTrainable) -> None:
        for module in self.modules.values():
            dict(module.named_parameters())[action.param].requires_grad_(action.value)
        self.frozen = self.frozen - {action.param} if action.value else self.frozen | {action.param}

    def _set_attribute(self, action: SetAttribute) -> None:
        for module in self.modules.values():
            setattr(module, action.name, action.value)
        self.attribute_sets += 1

    def _set_mode(self, action: SetMode) -> None:
        for module in self.modules.values():
            module.train(action.training)
        self.training = action.training

    def _move_to(self, action: MoveTo) -> None:
        """A move to another device ends the pending forward: its graph holds the old device's
        tensors, and a backward through it would deliver gradients of the old device to parameters
        now on the new one (on cuda: "invalid gradient at index 0 - expected device cpu but got
        cuda:0"), a sequence no user runs and no pipeline supports."""
        for module in self.modules.values():
            module.to(action.device)
        if torch.device(action.device) != torch.device(self.device):
            self._pending = None
        self.device = action.device

    def _set_memory_optimizer(self, action: SetMemoryOptimizer) -> None:
        self.options = dataclasses.replace(self.options, memory_opt_level=action.level)
        self.impl.reconfigure(self.wrapped, self.options)
        self.memory_options = memory_options(self.options)

    def _parameter_names(self) -> list[str]:
        return [name for name, _ in self.modules["eager"].named_parameters()]

    def _check_counters(self) -> None:
        observed = self.impl.observe(self.wrapped)
        mismatches = self.contract.mismatches(observed)
        if mismatches and observed.last_reason is None:
            mismatches.append(f"the contract's reason: {self.contract.observations.last_reason!r}")
        assert not mismatches, "; ".join(mismatches)


def _assert_grads(grads: dict[str, dict]) -> None:
    """Every gradient eager has, the implementation has (and no other), within the oracle's bound."""
    for name, expected in grads["eager"].items():
        actual = grads["actual"].get(name)
        if expected is None or actual is None:
            assert actual is None and expected is None, (
                f"grad of {name}: {'missing' if actual is None else 'unexpected'} (eager has one: {expected is not None})")
    present = {name for name, grad in grads["eager"].items() if grad is not None}
    assert_matches_oracle({run: {name: grads[run][name] for name in present} for run in RUNS}, path="gradients")


def _short_repr(options: Options) -> str:
    changed = [f"{f.name}={getattr(options, f.name)!r}" for f in dataclasses.fields(options)
               if getattr(options, f.name) != f.default]
    return f"Options({', '.join(changed)})"


def replay(impl: Implementation, options: Options, actions) -> Scenario:
    """Run ``actions`` in order, checking after each; raises at the first deviation from eager or the contract."""
    scenario = Scenario(impl, options)
    for action in actions:
        scenario.apply(action)
    return scenario
