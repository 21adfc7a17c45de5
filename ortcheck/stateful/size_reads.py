"""The input sizes a module's forward reads into Python, recorded in eager by torch's symbolic shapes.

In eager a size is a Python int, so no tensor hook sees ``if x.shape[0] > 2`` or
``range(x.shape[0])``. torch's own symbolic shapes (the FakeTensor and ShapeEnv under
``torch.compile``) do: the forward runs on fake inputs whose sizes are symbols, and every Python
decision on a size becomes a guard over those symbols (``s0 <= 2``, ``Eq(s0, 2)``). A graph traced
at those sizes fits only the sizes that keep every guard; the transition contract lets a pipeline
re-export where a call breaks one (``ortcheck.stateful.contract``), and the oracle judges the values
of a pipeline that does not. This shares nothing with any implementation's tracer.

A forward that symbolic shapes cannot run (a branch on ``.item()``, an op without a fake kernel)
records nothing (``decisions`` is None): no re-export for sizes is permitted then. Sizes 0 and 1 are constants
to symbolic shapes, like an axis of size 1 to a trace: the contract's unit axes cover those.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import warnings
from typing import Iterator

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from ortcheck.nested import leaves, map_leaves


@dataclasses.dataclass(frozen=True)
class Decisions:
    """What one call's forward decided on its input sizes: guards over symbols, each symbol an axis."""

    guards: tuple  # sympy booleans over the symbols, each true at the recorded call's sizes
    axes: tuple    # per symbol: (symbol, index of the tensor among the call's tensors, axis)

    def hold_for(self, tensors: list[torch.Tensor]) -> bool:
        """Whether a forward on ``tensors`` takes every decision the recorded call took (a size below 2,
        or a guard sympy cannot decide, counts as another decision)."""
        if len(tensors) <= max((index for _, index, _ in self.axes), default=-1):
            return False
        sizes = {symbol: tensors[index].shape[axis] if axis < tensors[index].dim() else -1
                 for symbol, index, axis in self.axes}
        if any(size < 2 for size in sizes.values()):
            return False
        values = {symbol: sympy.Integer(size) for symbol, size in sizes.items()}
        return all(guard.xreplace(values) is sympy.true for guard in self.guards)


class SizeReads:
    """One call's size decisions, recorded only when a call at other sizes asks (symbolic shapes take
    seconds on a transformer; most calls repeat the sizes of the call their graph was built for)."""

    def __init__(self, module: torch.nn.Module, args: tuple, kwargs: dict):
        self._call = (copy.deepcopy(module), args, kwargs)  # the module as it was at this call
        self._sizes = _sizes((args, kwargs))
        self._decisions: Decisions | None | bool = False  # False: not recorded yet; None: not known

    @property
    def decisions(self) -> Decisions | None:
        """The recorded decisions (None: symbolic shapes cannot run this forward)."""
        if self._decisions is False:
            self._decisions, self._call = decisions(*self._call), None
        return self._decisions

    def hold_for(self, tensors: list[torch.Tensor]) -> bool:
        """Whether a forward on ``tensors`` takes every decision this call took; decisions not known
        hold (they permit nothing)."""
        if [tuple(t.shape) for t in tensors] == self._sizes:
            return True
        return self.decisions is None or self.decisions.hold_for(tensors)


def size_reads(module: torch.nn.Module, args: tuple, kwargs: dict) -> SizeReads:
    """The decisions eager's forward of ``module`` takes on the sizes of its tensor inputs, recorded
    on first need from a copy of ``module`` as it is now."""
    return SizeReads(module, args, kwargs)


def _sizes(data) -> list[tuple]:
    return [tuple(leaf.shape) for leaf in leaves(data) if isinstance(leaf, torch.Tensor)]


def decisions(module: torch.nn.Module, args: tuple, kwargs: dict) -> Decisions | None:
    """The decisions eager's forward of ``module`` takes on the sizes of its tensor inputs (None: not
    known). Runs ``module`` itself on fake tensors: pass a copy where its writes matter."""
    env = ShapeEnv(duck_shape=False)  # an axis equal to another by chance stays its own symbol
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True, static_shapes=False)
    try:
        with _quiet(), mode:
            fake = map_leaves((args, kwargs), lambda leaf: mode.from_tensor(leaf) if isinstance(leaf, torch.Tensor)
                              else leaf)
            tensors = [leaf for leaf in leaves(fake) if isinstance(leaf, torch.Tensor)]
            axes = tuple((size.node.expr, index, axis) for index, tensor in enumerate(tensors)
                         for axis, size in enumerate(tensor.shape) if isinstance(size, torch.SymInt))
            module(*fake[0], **fake[1])
    except Exception:  # noqa: BLE001 - data-dependent Python, ops without fake kernels: not known
        return None
    return Decisions(tuple(guard.expr for guard in env.guards), axes)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Symbolic shapes and fake tensors log an error for each guard on data and op they cannot run;
    the caller records None."""
    loggers = [logging.getLogger(name) for name in ("torch.fx.experimental.recording", "torch._subclasses.fake_tensor")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
