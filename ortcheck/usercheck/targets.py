"""Load what the user points at (``MODULE:NAME``) and validate it before any pipeline runs.

Why validate first: a factory that does not import, a batch the model rejects in eager PyTorch, a
model without parameters or a loss that is not a scalar are the user's to fix, and would otherwise
surface as a confusing failure deep inside an export. Each becomes one :class:`UserInputError`.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import sys
from pathlib import Path
from typing import Any, Callable

import torch

from ortcheck.checks.runs import float64_copy, to_float64
from ortcheck.models.seeding import seeded
from ortcheck.nested import leaves
from ortcheck.usercheck.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class Batch:
    """One call's positional and keyword arguments."""

    args: tuple
    kwargs: dict

    @classmethod
    def of(cls, value: Any) -> "Batch":
        """A batch maker's return: a dict is keyword arguments, a tuple or list positional ones, else one argument."""
        if isinstance(value, Batch):
            return value
        if isinstance(value, dict):
            return cls((), dict(value))
        if isinstance(value, (tuple, list)):
            return cls(tuple(value), {})
        return cls((value,), {})

    def tensors(self) -> list[torch.Tensor]:
        return [leaf for leaf in leaves((self.args, self.kwargs)) if isinstance(leaf, torch.Tensor)]


def load(spec: str, what: str = "factory") -> Callable:
    """The callable ``NAME`` of module ``MODULE`` for ``MODULE:NAME`` (the working directory is importable)."""
    module_name, colon, name = spec.partition(":")
    if not (colon and module_name and name):
        raise UserInputError(f"{what} {spec!r}: expected MODULE:NAME (e.g. mypkg.models:build)")
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # the user's module: any error importing it is theirs
        raise UserInputError(f"{what} {spec!r}: cannot import {module_name!r}: {type(error).__name__}: {error}") from None
    try:
        target = getattr(module, name)
    except AttributeError:
        raise UserInputError(f"{what} {spec!r}: module {module_name!r} has no attribute {name!r}") from None
    if not callable(target):
        raise UserInputError(f"{what} {spec!r}: {name!r} is a {type(target).__name__}, not a callable")
    return target


def default_batch_spec(factory_spec: str) -> str | None:
    """Without ``--batch``: ``MODULE:<factory>_batch`` or ``MODULE:batch`` where the module has one."""
    module_name, _, name = factory_spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception:
        return None
    return next((f"{module_name}:{candidate}" for candidate in (f"{name}_batch", "batch")
                 if callable(getattr(module, candidate, None))), None)


def build_model(factory: Callable, spec: str = "factory") -> torch.nn.Module:
    model = _call_user(factory, (), f"{spec} raised")
    if not isinstance(model, torch.nn.Module):
        raise UserInputError(f"{spec} returned a {type(model).__name__}, not a torch.nn.Module")
    if not any(p.requires_grad for p in model.parameters()):
        raise UserInputError(f"{spec}: the model has no trainable parameters, so there is no training to check")
    return model.train()


def make_batch(batch_fn: Callable, size: int, seed: int, spec: str = "batch") -> Batch:
    """``batch_fn(size)`` with torch's RNG seeded, so every run of a check sees the same values."""
    with seeded(seed):
        return Batch.of(_call_user(batch_fn, (size,), f"{spec}({size}) raised"))


def default_loss(outputs: Any) -> torch.Tensor:
    """The sum of every floating output that requires grad."""
    parts = [t.sum() for t in leaves(outputs) if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]
    if not parts:
        raise UserInputError("the model's outputs hold no floating tensor that requires grad: nothing to train")
    return torch.stack([p.to(parts[0].dtype) for p in parts]).sum()


def validate(model: torch.nn.Module, batch: Batch, loss_fn: Callable, what: str = "the batch") -> None:
    """Run the batch through the model in eager PyTorch, as the user would, and the loss on its outputs."""
    probe = copy.deepcopy(model)
    hint = "; choose the sizes with --batch-sizes" if what != "the batch" else ""
    outputs = _call_user(lambda: probe(*batch.args, **batch.kwargs), (),
                         f"the model rejects {what} in eager PyTorch (no pipeline involved{hint})")
    loss = _call_user(loss_fn, (outputs,), "the loss raised on the model's outputs")
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not loss.is_floating_point():
        shape = f"a tensor of shape {list(loss.shape)}" if isinstance(loss, torch.Tensor) else f"a {type(loss).__name__}"
        raise UserInputError(f"the loss must be a floating scalar tensor, got {shape}")
    exact = float64_copy(model)  # the oracle's truth: without it no check could judge, whatever the pipeline
    _call_user(lambda: loss_fn(exact(*to_float64(batch.args), **to_float64(batch.kwargs))), (),
               f"eager PyTorch cannot run the model in float64 on {what}, the computation the checks judge "
               "against (no pipeline involved)")


def _call_user(fn: Callable, args: tuple, failure: str) -> Any:
    try:
        return fn(*args)
    except UserInputError:
        raise
    except Exception as error:  # user code: report its error in one line
        raise UserInputError(f"{failure}: {type(error).__name__}: {error}") from None

