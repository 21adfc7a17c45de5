"""Deliberately broken implementations, the positive controls: each suite must catch the defect it is
about. Never registered: the harness's tests register them to prove a property can fail, and
``bench/shrink_time.py`` times how long their failures take to shrink. They subclass the adapters,
so they live beside them."""
import contextlib
import ctypes
import dataclasses
import os
import signal
import time

import torch

from ortcheck.impls import Options
from ortcheck.impls.eager import EagerImpl
from ortcheck.impls.reference import ReferenceImpl
from reference.nested_io import flatten, unflatten
from reference.transitions import Graphs, decide


class ClonesTensors(EagerImpl):
    """unflatten hands back copies instead of the caller's tensor objects."""
    name = "clones_tensors"

    def unflatten(self, tensors, schema):
        return unflatten([t.detach().clone() for t in tensors], schema)


class SizeSensitiveSchema(EagerImpl):
    """Treats tensor sizes as part of the schema (would re-export on every new batch size)."""
    name = "size_sensitive"

    def flatten(self, data):
        tensors, schema = flatten(data)
        return tensors, (schema, tuple(tuple(t.shape) for t in tensors))


class DtypeBlindSchema(EagerImpl):
    """Ignores tensor dtypes when comparing schemas (would reuse a graph built for another dtype)."""
    name = "dtype_blind"

    def same_schema(self, a, b):
        erase = lambda schema: [getattr(leaf, "rank", leaf) for leaf in schema.leaves]
        return a.tree == b.tree and erase(a) == erase(b)


class OffByOneUlp(EagerImpl):
    """Outputs drift by a relative 1e-3: the through-module property must see it."""
    name = "drifting"

    def wrap(self, module, options=None):
        original = module.forward

        def forward(*args, **kwargs):
            outputs = original(*args, **kwargs)
            outputs["x"] = outputs["x"] * 1.001
            return outputs

        module.forward = forward
        return module


class GradientsOffByOnePermille(EagerImpl):
    """Parameter gradients scaled by 1.001 on their way back: grad parity must see it."""
    name = "grad_scaled"

    def wrap(self, module, options=None):
        for parameter in module.parameters():
            parameter.register_hook(lambda grad: grad * 1.001)
        return module


class ReexportsOnNewSizes(ReferenceImpl):
    """Re-exports whenever an input size changes, as if sizes were in the schema: outputs and gradients
    stay right, so only the transition counters can tell."""
    name = "reexports_on_new_sizes"

    def wrap(self, module, options=Options()):
        wrapped = super().wrap(module, options)
        prepare = wrapped._prepare

        def prepare_by_sizes(tensors, schema):
            sizes = [tuple(t.shape) for t in tensors]
            if wrapped.__dict__.setdefault("_last_sizes", sizes) != sizes:
                wrapped.__dict__["_graphs"] = Graphs()  # forget every graph: the next call exports anew
            wrapped.__dict__["_last_sizes"] = sizes
            prepare(tensors, schema)

        wrapped.__dict__["_prepare"] = prepare_by_sizes  # instance attribute, past the pass-through __setattr__
        return wrapped


@dataclasses.dataclass(frozen=True)
class _OneSlot(Graphs):
    """Both modes share the train slot: every train/eval switch looks like a mode change."""

    def built_for(self, training):
        return self.train

    def step(self, current, grad_enabled=True):
        transition = decide(self.train, current, grad_enabled)
        return transition, (dataclasses.replace(self, train=current) if transition.new_sessions else self)


class OneGraphSlot(ReferenceImpl):
    """Keeps one graph for both modes, so alternating train/eval re-exports on every switch. Outputs and
    gradients stay right: only a contract that does not ask the reference can tell."""
    name = "one_graph_slot"

    def wrap(self, module, options=Options()):
        wrapped = super().wrap(module, options)
        wrapped.__dict__["_graphs"] = _OneSlot()
        return wrapped


def _where_x_to_the_wrong_branch(ctx, node):
    """Where's rule sending X's gradient where the condition fails (Y's is right)."""
    from reference.autodiff.broadcast import reduce_to_input

    condition, zero = ctx.forward(node.input(0)), ctx.scalar(0, like=node.output(0))
    branches = {1: ctx.op("Where", condition, zero, node.grad()), 2: ctx.op("Where", condition, zero, node.grad())}
    return {i: reduce_to_input(ctx, node, i, grad) for i, grad in branches.items() if node.wants(i)}


@contextlib.contextmanager
def _rule_replaced(op_type, rule, domain=""):
    from reference.autodiff import registry

    key = (domain, op_type)
    saved = registry._RULES[key]
    registry._RULES[key] = [(1, rule)]
    try:
        yield
    finally:
        registry._RULES[key] = saved


class _RuleReplaced(ReferenceImpl):
    """The reference with one gradient rule replaced while its forward (and so its build) runs."""
    op_type, domain = "", ""

    def rule(self, ctx, node):
        raise NotImplementedError

    def wrap(self, module, options=Options()):
        wrapped = super().wrap(module, options)
        forward = wrapped.forward

        def forward_with_the_wrong_rule(*args, **kwargs):
            with _rule_replaced(self.op_type, self.rule, self.domain):
                return forward(*args, **kwargs)

        wrapped.__dict__["forward"] = forward_with_the_wrong_rule
        return wrapped


class WhereGradToWrongBranch(_RuleReplaced):
    """The reference with a Where gradient rule that sends X's gradient to the wrong branch. Generated
    models only need the gradient of masked_fill's input (Y), so only the op-level suite can tell."""
    name = "where_wrong_branch"
    op_type = "Where"
    rule = staticmethod(_where_x_to_the_wrong_branch)


class _OtherCodeBook:
    """A MatMulBnb4 node seen with the other quant type (NF4 for FP4 and back)."""

    def __init__(self, node):
        self._node = node

    def __getattr__(self, name):
        return getattr(self._node, name)

    def attr(self, name, default=None):
        value = self._node.attr(name, default)
        return 1 - value if name == "quant_type" else value


class Bnb4GradOtherCodeBook(_RuleReplaced):
    """The reference with a MatMulBnb4 gradient that dequantizes with the other code book: the
    input gradient comes from the wrong weight while the forward stays right."""
    name = "bnb4_grad_other_code_book"
    op_type, domain = "MatMulBnb4", "com.microsoft"

    @staticmethod
    def rule(ctx, node):
        from reference.autodiff.rules.op_matmulbnb4 import matmulbnb4_grad

        return matmulbnb4_grad(ctx, _OtherCodeBook(node))


class Bnb4WeightGetsZeroGrad(EagerImpl):
    """Hands the frozen packed weights a zero gradient after backward, as a pipeline returning a
    gradient for every graph input would: the optimizer then touches the 4-bit bytes."""
    name = "bnb4_weight_gets_zero_grad"

    def wrap(self, module, options=Options()):
        for parameter in module.parameters():
            if parameter.dtype == torch.uint8:
                parameter.requires_grad_(False)
                module.register_full_backward_hook(
                    lambda *_, p=parameter: setattr(p, "grad", torch.zeros_like(p)))
        return module


class Segfaults(EagerImpl):
    """Dies inside wrap, as native code can: the run must report the property and go on."""
    name = "segfaults"

    def wrap(self, module, options=Options()):
        os.kill(os.getpid(), signal.SIGSEGV)


class Hangs(EagerImpl):
    """Never returns from wrap, as a deadlocked session would: the time bound must end it."""
    name = "hangs"

    def wrap(self, module, options=Options()):
        time.sleep(3600)


def hold_the_gil(seconds: int) -> None:
    """Sleep in native code without releasing the GIL (``ctypes.PyDLL`` keeps it across the call): no
    other thread of the process runs meanwhile, pytest-timeout's timer thread included. A handled
    signal ends libc's sleep early (it returns the seconds left: in an xdist worker it once returned
    at once), so it sleeps again for what is left."""
    left = seconds
    while left:
        left = ctypes.PyDLL(None).sleep(left)


class HoldsTheGil(EagerImpl):
    """Never returns from wrap, stuck in native code holding the GIL (as ORTModule's run_backward was
    seen to): nothing inside the process can end it, only the watchdog outside."""
    name = "holds_the_gil"

    def wrap(self, module, options=Options()):
        while True:  # libc's sleep returns early when a signal is handled
            hold_the_gil(3600)


@contextlib.contextmanager
def _patched(module, name, replacement):
    saved = getattr(module, name)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, saved)


class _PatchedDuringForward(ReferenceImpl):
    """The reference with a recompute-stage function replaced while its forward (and so its build) runs."""

    target: tuple = ()

    def wrap(self, module, options=Options()):
        wrapped = super().wrap(module, options)
        forward = wrapped.forward

        def patched_forward(*args, **kwargs):
            with _patched(*self.target):
                return forward(*args, **kwargs)

        wrapped.__dict__["forward"] = patched_forward
        return wrapped


def _recompute_module():
    from reference.recompute import rewrite
    return rewrite


class RecomputeRedrawsDropout(_PatchedDuringForward):
    """Recomputes a Dropout by running it again: a new mask, so gradients no longer match."""
    name = "recompute_redraws_dropout"

    @property
    def target(self):
        rewrite = _recompute_module()
        return rewrite, "_clone", rewrite._clone_exactly  # a Dropout cloned as it is draws its own mask


class RecomputeOverClaims(_PatchedDuringForward):
    """Its report claims one byte more per plan than recompute saves."""
    name = "recompute_over_claims"

    @property
    def target(self):
        from reference.recompute import plans

        original = plans._recompute

        def over_claiming(*args):
            found = original(*args)
            return None if found is None else dataclasses.replace(found, saving=found.saving + 1)

        return plans, "_recompute", over_claiming


class RecomputeAppliesOneLess(_PatchedDuringForward):
    """Applies one occurrence fewer than a count asks for (an off-by-one in "the first N")."""
    name = "recompute_applies_one_less"

    @property
    def target(self):
        import reference.recompute as recompute

        def one_less(plan, count):
            wanted = len(plan.occurrences) if count == -1 else count
            return list(plan.occurrences[: max(0, wanted - 1)])

        return recompute, "_first", one_less


class NumberBlindSchema(_PatchedDuringForward):
    """Compares Python int/float inputs by type alone, as ORTModule's schema does: a changed number
    runs the graph traced with the old one baked in."""
    name = "number_blind_schema"

    @property
    def target(self):
        from reference.nested_io.schema import Constant

        original = Constant._key

        def blind(constant):
            value = constant.value
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            return (type(value), None) if number else original(constant)

        return Constant, "_key", blind


class IgnoresNewMemoryOptions(ReferenceImpl):
    """Accepts a change of memory-optimizer options and silently keeps the old gradient graphs."""
    name = "ignores_new_memory_options"

    def reconfigure(self, wrapped, options):
        self.check_options(options)


class BackwardOverwritesGrads(EagerImpl):
    """Clears every parameter's .grad when a backward starts, as a pipeline assigning its gradient
    outputs instead of accumulating them would: micro-batches no longer sum."""
    name = "backward_overwrites_grads"

    def wrap(self, module, options=Options()):
        def clear(*_):
            for parameter in module.parameters():
                parameter.grad = None

        module.register_full_backward_pre_hook(clear)
        return module


class _GradsWrittenDirectly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, module):
        ctx.module = module
        ctx.save_for_backward(x)
        with torch.no_grad():
            return module(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        params = [p for p in ctx.module.parameters() if p.requires_grad]
        with torch.enable_grad():
            leaf = x.detach().requires_grad_()
            grads = torch.autograd.grad(ctx.module(leaf), [leaf, *params], grad)
        for p, g in zip(params, grads[1:]):
            p.grad = g if p.grad is None else p.grad + g
        return grads[0], None


class _WritesGrads(torch.nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return _GradsWrittenDirectly.apply(x, self.module)


class WritesGradsAroundAutograd(EagerImpl):
    """Writes parameter gradients into .grad itself, out of autograd's sight: single-process
    training is right, but DDP's all-reduce hooks never fire."""
    name = "writes_grads_around_autograd"

    def wrap(self, module, options=Options()):
        return _WritesGrads(module)


def _softmax_without_the_sum(ctx, node):
    """Softmax's rule missing the ``- sum(dy * y)`` term: dx = y * dy."""
    return {0: ctx.mul(ctx.forward(node.output(0)), node.grad())}


def _sigmoid_from_the_input(ctx, node):
    """Sigmoid's derivative taken as x (1 - x) of the input instead of y (1 - y) of the output."""
    x = ctx.forward(node.input(0))
    return {0: ctx.mul(node.grad(), ctx.mul(x, ctx.sub(ctx.scalar(1, like=node.output(0)), x)))}


def _tanh_without_the_square(ctx, node):
    """tanh's derivative as 1 - y instead of 1 - y²."""
    return {0: ctx.mul(node.grad(), ctx.sub(ctx.scalar(1, like=node.output(0)), ctx.forward(node.output(0))))}


class SoftmaxGradWithoutSum(_RuleReplaced):
    """The reference with a Softmax gradient missing its sum term: every attention's gradient is off,
    the forward right. The localizer must name Softmax and the attention module that calls it."""
    name = "softmax_grad_without_sum"
    op_type = "Softmax"
    rule = staticmethod(_softmax_without_the_sum)


class SigmoidGradFromInput(_RuleReplaced):
    """The reference with a wrong Sigmoid rule: SiLU exports to Sigmoid and Mul, so every SiLU MLP
    (llama's) gets a wrong gradient."""
    name = "sigmoid_grad_from_input"
    op_type = "Sigmoid"
    rule = staticmethod(_sigmoid_from_the_input)


class TanhGradWithoutSquare(_RuleReplaced):
    """The reference with a wrong Tanh rule: GELU's tanh form (gpt2's MLP) gets a wrong gradient."""
    name = "tanh_grad_without_square"
    op_type = "Tanh"
    rule = staticmethod(_tanh_without_the_square)


# The positive controls that break one op (its gradient rule), for the localizer's tests.
ONE_OP_MUTANTS = (WhereGradToWrongBranch, Bnb4GradOtherCodeBook, SoftmaxGradWithoutSum, SigmoidGradFromInput,
                  TanhGradWithoutSquare)
