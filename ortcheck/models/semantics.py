"""The module-semantics suite's subjects (suites/test_module_semantics.py) and the user actions on them.

A subject is a ``Subject`` over four blocks (Linear, a gain with a ``scale`` attribute, an
activation with a ``slope`` attribute and a shift, Linear), optionally with a block that writes
buffers in forward, or a block calling a custom ``torch.autograd.Function``; or it sits in a tree of
``Parent`` modules, where the wrapped module is one child among others. Actions are functions
``(run, held, called)`` applied to each run alike: ``held`` is the module the user handed to
``wrap`` (for eager runs the module itself), ``called`` what they call. Values an action brings
(new weights, a state_dict) are drawn from seeded generators and cast to each run's dtype.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ortcheck.models.seeding import manual_seed

IN, WIDTH, OUT, BATCH = 3, 4, 2, 3
BLOCKS = 4


def _values(shape, seed: int, like: torch.Tensor, scale: float = 0.5) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=generator) * scale).to(like.dtype).to(like.device)


def example_input(seed: int) -> torch.Tensor:
    return torch.randn(BATCH, IN, generator=torch.Generator().manual_seed(seed))


def cotangent(out: torch.Tensor) -> torch.Tensor:
    """Fixed weights of the output's elements, so every element reaches the loss differently."""
    return _values(out.shape, 7, out.detach(), 1.0)


class Gain(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(width))
        self.scale = 1.0

    def forward(self, x):
        return x * self.gain * self.scale


class Activation(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(width))
        self.slope = 0.1

    def forward(self, x):
        return F.leaky_relu(x + self.shift, self.slope) + 0.5 * torch.tanh(x)


class Counted(nn.Module):
    """Writes two buffers in forward: a call counter and an EMA of its input's batch mean."""

    def __init__(self, width: int):
        super().__init__()
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.register_buffer("ema", torch.zeros(width))

    def forward(self, x):
        self.calls += 1
        self.ema.mul_(0.9).add_(0.1 * x.detach().mean(0))
        return x + self.ema


def _blocks() -> list[nn.Module]:
    return [nn.Linear(IN, WIDTH), Gain(WIDTH), Activation(WIDTH), nn.Linear(WIDTH, OUT)]


class Subject(nn.Module):
    def __init__(self, blocks: list[nn.Module]):
        super().__init__()
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        return self.blocks(x)


def _seeded(build: Callable[[], nn.Module], seed: int) -> nn.Module:
    with torch.random.fork_rng():
        manual_seed(seed)
        return build()


def plain(seed: int) -> Subject:
    return _seeded(lambda: Subject(_blocks()), seed)


# ---- state written in forward

STATE_KINDS = ("batchnorm", "counter")
STATE_NAMES = {"batchnorm": ("BatchNorm", "running_mean", "running_var", "num_batches_tracked", "buffer"),
               "counter": ("calls", "ema", "buffer")}


def with_state(kind: str, nested: bool, seed: int) -> Subject:
    """``plain`` with a BatchNorm1d or a ``Counted`` after the first Linear (inside one more
    Sequential when ``nested``)."""
    def build():
        state = nn.BatchNorm1d(WIDTH) if kind == "batchnorm" else Counted(WIDTH)
        blocks = _blocks()
        blocks.insert(1, nn.Sequential(state) if nested else state)
        return Subject(blocks)

    return _seeded(build, seed)


# ---- structure changed by the user

CHANGES = ("new_parameter", "replace_submodule", "set_attribute", "load_state_dict", "freeze", "unfreeze")
CHANGE_NAMES = {"new_parameter": ("parameter",), "replace_submodule": ("submodule", "module changed"),
                "set_attribute": ("attribute",), "load_state_dict": ("state_dict",),
                "freeze": ("requires_grad", "trainable"), "unfreeze": ("requires_grad", "trainable")}


def change(what: str, where: int, seed: int):
    """The action doing ``what`` to block ``where`` of the subject the user holds."""

    def act(run: str, held: Subject, called: nn.Module) -> None:
        block = held.blocks[where]
        if what == "new_parameter":
            name, old = next(iter(block.named_parameters()))
            setattr(block, name, nn.Parameter(_values(old.shape, seed, old)))
        elif what == "replace_submodule":
            like = next(block.parameters())
            fresh = _seeded(lambda: _blocks()[where], seed).to(like.device, like.dtype)
            held.blocks[where] = fresh
        elif what == "set_attribute":
            target = held.blocks[1 + where % 2]  # Gain.scale or Activation.slope
            if isinstance(target, Gain):
                target.scale = 1.0 + 0.25 * (1 + where)
            else:
                target.slope = 0.3
        elif what == "load_state_dict":
            state = {key: value + _values(value.shape, seed + i, value, 0.1) if value.is_floating_point() else value
                     for i, (key, value) in enumerate(held.state_dict().items())}
            called.load_state_dict(state)
        else:
            block.requires_grad_(what == "unfreeze")

    return act


# ---- forward hooks

HOOK_KINDS = ("scale_input", "shift_output", "watch")


def add_hook(held: Subject, block: int, kind: str, calls: list, index: int):
    """A hook of ``kind`` on block ``block`` (-1: the subject itself); each call is logged."""
    target = held if block < 0 else held.blocks[block]

    def pre(module, args):
        calls.append((index, kind))
        return (args[0] * 1.5,)

    def post(module, args, output):
        calls.append((index, kind))
        return output + 0.25 if kind == "shift_output" else None

    return target.register_forward_pre_hook(pre) if kind == "scale_input" else target.register_forward_hook(post)


# ---- custom autograd Functions


class ScaleBy(torch.autograd.Function):
    """Non-tensor arguments: a float and a string, both read in backward too."""

    @staticmethod
    def forward(ctx, x, alpha: float, mode: str):
        ctx.alpha, ctx.mode = alpha, mode
        return x * alpha if mode == "mul" else x + alpha

    @staticmethod
    def backward(ctx, grad):
        return (grad * ctx.alpha if ctx.mode == "mul" else grad), None, None


class TanhTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, alpha: float):
        ctx.save_for_backward(x, w)
        ctx.alpha = alpha
        return torch.tanh(x * alpha) * w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        t = torch.tanh(x * ctx.alpha)
        return grad * (1 - t * t) * ctx.alpha * w, (grad * t).sum(0), None


class TimesOnlyWhatNeedsIt(torch.autograd.Function):
    """Computes only the gradients ``needs_input_grad`` asks for (here the weight is frozen)."""

    @staticmethod
    def forward(ctx, x, w, alpha: float):
        ctx.save_for_backward(x, w)
        ctx.alpha = alpha
        return x * w * alpha

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        dx = grad * w * ctx.alpha if ctx.needs_input_grad[0] else None
        dw = (grad * x * ctx.alpha).sum(0) if ctx.needs_input_grad[1] else None
        return dx, dw, None


class SinAndArgmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha: float):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        index = x.argmax(-1, keepdim=True)
        ctx.mark_non_differentiable(index)
        return torch.sin(x * alpha), index

    @staticmethod
    def backward(ctx, grad, _index_grad):
        (x,) = ctx.saved_tensors
        return grad * torch.cos(x * ctx.alpha) * ctx.alpha, None


class DoubleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha: float):
        ctx.alpha = alpha
        x.mul_(alpha)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.alpha, None


FUNCTIONS = {"non_tensor_arguments": ScaleBy, "save_for_backward": TanhTimes,
             "needs_input_grad": TimesOnlyWhatNeedsIt, "mark_non_differentiable": SinAndArgmax,
             "mark_dirty": DoubleInPlace}
FUNCTION_FEATURES = tuple(FUNCTIONS)


class FunctionBlock(nn.Module):
    """Calls the feature's Function with ``alpha`` (a float the user may change between calls)."""

    def __init__(self, feature: str):
        super().__init__()
        self.feature, self.alpha = feature, 1.25
        self.weight = nn.Parameter(torch.rand(WIDTH) + 0.5, requires_grad=feature != "needs_input_grad")

    def forward(self, x):
        function = FUNCTIONS[self.feature]
        if self.feature == "non_tensor_arguments":
            return function.apply(x, self.alpha, "mul" if self.alpha > 1.5 else "add")
        if self.feature in ("save_for_backward", "needs_input_grad"):
            return function.apply(x, self.weight, self.alpha)
        if self.feature == "mark_non_differentiable":
            y, index = function.apply(x, self.alpha)
            return y * (1 + index.to(y.dtype) / WIDTH)
        return function.apply(x * 1.0, self.alpha)  # in place on an intermediate, never the input


def with_function(feature: str, seed: int) -> Subject:
    def build():
        blocks = _blocks()
        blocks.insert(1, FunctionBlock(feature))
        return Subject(blocks)

    return _seeded(build, seed)


def function_names(feature: str) -> tuple[str, ...]:
    """What an error refusing the feature's Function may name."""
    return (FUNCTIONS[feature].__name__, "autograd.Function", "PythonOp", feature)


def change_function_argument(held: Subject) -> None:
    held.blocks[1].alpha = 1.75


# ---- a wrapped module inside a parent

PARENT_PLACES = ("first", "middle", "last")  # where the inner module is registered among its siblings


class Parent(nn.Module):
    """``after(inner(tanh(before(x))))``, with ``inner`` registered before, between or after the
    two Linear layers: the place decides where its keys fall in the parent's ``state_dict``."""

    def __init__(self, inner: nn.Module, place: str):
        super().__init__()
        layers = {"before": nn.Linear(IN, IN), "inner": inner, "after": nn.Linear(OUT, OUT)}
        order = {"first": ("inner", "before", "after"), "middle": ("before", "inner", "after"),
                 "last": ("before", "after", "inner")}[place]
        for name in order:
            setattr(self, name, layers[name])

    def forward(self, x):
        return self.after(self.inner(torch.tanh(self.before(x))))


def in_parent(seed: int, places: list[str]) -> nn.Module:
    """``plain`` at the bottom of ``len(places)`` nested ``Parent``s, ``places`` outermost first."""
    def build():
        module: nn.Module = Subject(_blocks())
        for place in reversed(places):
            module = Parent(module, place)
        return module

    return _seeded(build, seed)


def place_wrapped(parent: nn.Module, depth: int, wrap: Callable[[nn.Module], nn.Module]) -> nn.Module:
    """``owner.inner = wrap(owner.inner)`` at the innermost ``Parent`` of ``in_parent``'s tree, as a
    user wraps one part of a model; returns ``parent``."""
    owner = parent
    for _ in range(depth - 1):
        owner = owner.inner
    owner.inner = wrap(owner.inner)
    return parent
