"""One action sequence run on eager PyTorch and on a wrapped copy, checked after every action.

After each action: outputs (and whether they require grad) match eager's; after a ``Step``,
every input and parameter gradient and the updated parameters match too; the implementation's
observable counters equal the transition contract's prediction. The first deviation raises,
with a note naming the step, and :meth:`Scenario.reproduction` prints the sequence as a script.
"""
from __future__ import annotations

import copy
import dataclasses

import torch

from ortcheck.checks import assert_tensors_close
from ortcheck.impls.base import Implementation, Options
from ortcheck.strategies.transitions.actions import (
    Forward, MoveTo, SetAttribute, SetMode, SetRequiresGrad, SetTrainable, Step,
)
from ortcheck.strategies.transitions.prediction import Prediction
from ortcheck.strategies.transitions.subject import Inputs, TransitionSubject, fresh_copy

LEARNING_RATE = 0.1


@dataclasses.dataclass
class _Call:
    """The last forward whose outputs require grad: its inputs and outputs on both sides."""

    eager_args: tuple
    eager_out: torch.Tensor
    wrapped_args: tuple
    wrapped_out: torch.Tensor


class Scenario:
    def __init__(self, impl: Implementation, options: Options = Options(), prediction: Prediction | None = None):
        self.impl, self.options = impl, options
        torch.manual_seed(0)
        self.eager = TransitionSubject().to(options.device)
        self.wrapped = impl.wrap(copy.deepcopy(self.eager), options)
        self.eager_sgd = torch.optim.SGD(self.eager.parameters(), lr=LEARNING_RATE)
        self.wrapped_sgd = torch.optim.SGD(self.wrapped.parameters(), lr=LEARNING_RATE)
        self.prediction = prediction if prediction is not None else Prediction()
        self.inputs = Inputs()
        self.device = options.device
        self.actions: list = []
        self._pending: _Call | None = None
        self._handlers = {Forward: self._forward, Step: self._step, SetRequiresGrad: self._set_requires_grad,
                          SetTrainable: self._set_trainable, SetAttribute: self._set_attribute,
                          SetMode: self._set_mode, MoveTo: self._move_to}

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
                 f"from ortcheck.strategies.transitions import replay, {', '.join(names)}", "",
                 f"replay(impls.get({self.impl.name!r}), {_short_repr(self.options)}, ["]
        lines += [f"    {action!r}," for action in self.actions]
        return "\n".join(lines + ["])"])

    # -- actions ------------------------------------------------------------------------------
    def _forward(self, action: Forward) -> None:
        self.inputs = self.inputs.after(action)
        args, kwargs = self.inputs.make(seed=len(self.actions), device=self.device)
        eager_args, wrapped_args = fresh_copy(args), fresh_copy(args)
        with torch.set_grad_enabled(not action.no_grad):
            expected = self.eager(*eager_args, **kwargs)
            actual = self.wrapped(*wrapped_args, **kwargs)
        self.prediction.forward(args, kwargs, self.eager, self.device, grad_enabled=not action.no_grad)
        assert_tensors_close(actual, expected, "output")
        assert actual.requires_grad == expected.requires_grad, (
            f"output requires_grad is {actual.requires_grad}, eager's is {expected.requires_grad}")
        self._pending = _Call(eager_args, expected, wrapped_args, actual) if expected.requires_grad else None

    def _step(self, action: Step) -> None:
        if self._pending is None:
            raise ValueError("Step() needs a preceding forward whose output requires grad")
        call, self._pending = self._pending, None
        self.eager_sgd.zero_grad(set_to_none=True)
        self.wrapped_sgd.zero_grad(set_to_none=True)
        cotangent = torch.randn(call.eager_out.shape, generator=torch.Generator().manual_seed(len(self.actions)))
        cotangent = cotangent.to(call.eager_out)
        call.eager_out.backward(cotangent)
        call.wrapped_out.backward(cotangent.clone())
        for index, (expected, actual) in enumerate(zip(call.eager_args, call.wrapped_args)):
            _assert_grads_close(actual.grad, expected.grad, f"grad of input {'xy'[index]}")
        wrapped_params = dict(self.wrapped.named_parameters())
        for name, expected in self.eager.named_parameters():
            _assert_grads_close(wrapped_params[name].grad, expected.grad, f"grad of {name}")
        self.eager_sgd.step()
        self.wrapped_sgd.step()
        for name, expected in self.eager.named_parameters():
            assert_tensors_close(wrapped_params[name].detach(), expected.detach(), f"{name} after the SGD step")

    def _set_requires_grad(self, action: SetRequiresGrad) -> None:
        self.inputs = dataclasses.replace(self.inputs, **{f"{action.input}_requires_grad": action.value})

    def _set_trainable(self, action: SetTrainable) -> None:
        self.eager.get_parameter(action.param).requires_grad_(action.value)
        dict(self.wrapped.named_parameters())[action.param].requires_grad_(action.value)

    def _set_attribute(self, action: SetAttribute) -> None:
        setattr(self.eager, action.name, action.value)
        setattr(self.wrapped, action.name, action.value)
        self.prediction.attribute_set()

    def _set_mode(self, action: SetMode) -> None:
        self.eager.train(action.training)
        self.wrapped.train(action.training)

    def _move_to(self, action: MoveTo) -> None:
        self.eager.to(action.device)
        self.wrapped.to(action.device)
        self.device = action.device

    def _check_counters(self) -> None:
        observed = self.impl.observe(self.wrapped)
        mismatches = self.prediction.mismatches(observed)
        if mismatches and observed.last_reason is None:
            mismatches.append(f"the contract's reason: {self.prediction.observations.last_reason!r}")
        assert not mismatches, "; ".join(mismatches)


def _assert_grads_close(actual, expected, what: str) -> None:
    if expected is None or actual is None:
        assert actual is None and expected is None, f"{what}: {'missing' if actual is None else 'unexpected'} (eager: {expected is not None})"
        return
    assert_tensors_close(actual, expected, what)


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
