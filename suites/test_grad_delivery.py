"""Property: gradients reach PyTorch as they do in eager: hooks, accumulation, the autograd API.

Checks: how gradients reach torch, in both delivery modes (default; `mem_efficient` where the implementation
has it), on generated stacks: hooks on parameters (`register_hook`, `register_post_accumulate_grad_hook`)
and on the wrapped module fire once per backward with eager's gradients; backward hooks on blocks inside
fire as in eager or are refused by name; post-accumulate hooks follow eager's dependency order;
micro-batches accumulate to eager's sum (`zero_grad` both ways, frozen parameters, a weight used twice);
`torch.autograd.grad`, `retain_graph`, input-only gradients; `create_graph=True` gives eager's second
derivative or an error naming it, with a cotangent that requires grad or a constant one; a WGAN-GP gradient
penalty trains 3 SGD steps as eager or is refused so; the hooks also under `torch.autocast` float16 and
bfloat16, in both modes

Models are generated layer stacks on float features (``ortcheck.strategies.layer_stacks``); every
value is judged by the float64 oracle against eager's runs. Every property runs in both delivery
modes: ``default`` (gradients as autograd outputs) and ``mem_efficient`` (each parameter's gradient
handed to torch as the backward produces it, ``Options(mem_efficient_grad=True)``), the latter on
implementations with ``Capability.MEM_EFFICIENT_GRAD``.
- Hooks: ``Tensor.register_hook`` and ``register_post_accumulate_grad_hook`` on every trainable
  parameter fire exactly once per backward, with eager's gradient; full backward hooks on the
  wrapped module and on each of its blocks fire once per backward, as in eager.
  Under ``torch.autocast`` (float16, bfloat16) the hooks see eager's gradients too.
- Hook order: where one parameter's gradient needs another's layer first (a later block feeds
  the loss before an earlier one), its post-accumulate hook fires first, as in eager.
- Accumulation: k micro-batches without zeroing sum to eager's (``zero_grad`` with and without
  ``set_to_none`` before), frozen parameters keep ``grad is None``, a weight used twice gets the sum.
- The autograd API: ``torch.autograd.grad`` leaves ``.grad`` alone, ``retain_graph=True`` allows a
  second backward, gradients of inputs only, and ``create_graph=True`` either gives eager's second
  derivative or raises an error naming it; a first derivative that silently isn't differentiable
  fails, whether the incoming gradient requires grad or is a constant (``grad(out.sum(), x,
  create_graph=True)``), and a gradient penalty (WGAN-GP) trains like eager or is refused so.
"""
from __future__ import annotations

import collections
import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.checks.autocast import DTYPES as AUTOCAST_DTYPES, autocast_region, dtype_name
from ortcheck.impls import Capability
from ortcheck.profiles import costly
from ortcheck.strategies.layer_stacks import BLOCK_KINDS, LayerStack, layer_stacks, stack_example

pytestmark = [pytest.mark.requires(Capability.TRAINS), pytest.mark.both_delivery_modes]

SEEDS = st.integers(0, 2**16)
# float features in, so inputs have gradients; no dropout blocks: values must be deterministic
STACKS = layer_stacks(block_kinds=[kind for kind in BLOCK_KINDS if kind != "dropout"], input_kinds=("features",),
                      max_blocks=3)
# at least two blocks of parameters and nothing between them but what keeps the chain a chain
ORDER_STACKS = layer_stacks(block_kinds=("linear", "activation", "layernorm"), input_kinds=("features",),
                            min_blocks=2, max_blocks=4)


def drawn(check, **strategies):
    """``check(impl, options, stack=..., seed=..., ...)`` on drawn stacks (``STACKS`` unless
    ``stack=`` says otherwise), three tenths of the profile's examples: each one exports."""
    strategies = {"stack": STACKS, "seed": SEEDS, **strategies}

    @costly(0.3)
    @given(**strategies)
    def run(impl, options, **values):
        check(impl, options, **values)

    return run


def _modules(impl, options, stack: LayerStack, seed: int) -> dict[str, nn.Module]:
    eager = stack.build_module(seed).to(options.device)
    return module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)


def _inputs(stack: LayerStack, seed: int, device: str) -> dict:
    return input_runs(stack.make_inputs(seed), seed=seed, device=device)


def _trainable(module: nn.Module) -> dict[str, nn.Parameter]:
    return {name: p for name, p in module.named_parameters() if p.requires_grad}


# ---- hooks


class HookLog:
    """What every hook on a module (and, given ``blocks``, on each block) saw during one backward."""

    def __init__(self, module: nn.Module, blocks: nn.Module | None = None):
        self.calls: list[tuple[str, str]] = []
        self.grads: dict[str, torch.Tensor] = {}
        self.handles = []
        for name, p in _trainable(module).items():
            self.handles.append(p.register_hook(lambda grad, name=name: self._tensor_hook(name, grad)))
            self.handles.append(p.register_post_accumulate_grad_hook(
                lambda p, name=name: self.calls.append(("post_accumulate", name))))
        for name, block in [("<top>", module), *(blocks.named_children() if blocks is not None else ())]:
            self.handles.append(block.register_full_backward_hook(
                lambda *_, name=name: self.calls.append(("module", name))))

    def _tensor_hook(self, name: str, grad: torch.Tensor) -> None:
        self.calls.append(("tensor", name))
        self.grads[name] = grad.detach().clone()

    def counts(self) -> dict[tuple[str, str], int]:
        return dict(collections.Counter(self.calls))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _blocks(module: nn.Module) -> nn.Module:
    """The stack's own Sequential, whether ``module`` is it or a wrapper around it."""
    return getattr(module, "module", None) or getattr(module, "_original_module", None) or module


def _backward_with_hooks(stack: LayerStack, module: nn.Module, inputs, on_blocks: bool = False,
                         autocast: torch.dtype | None = None, device: str = "cpu") -> HookLog:
    log = HookLog(module, _blocks(module) if on_blocks else None)
    try:
        with autocast_region(device, autocast):
            loss = stack.loss(module(*inputs))
        loss.backward()
    finally:
        log.remove()
    return log


def check_hooks(impl, options, stack: LayerStack, seed: int, autocast: torch.dtype | None = None) -> None:
    modules = _modules(impl, options, stack, seed)
    for call in range(2):  # the second backward must fire each hook once again, not twice or never
        inputs = _inputs(stack, seed + call, options.device)
        logs = {run: _backward_with_hooks(stack, modules[run], inputs[run], autocast=autocast,
                                          device=torch.device(options.device).type) for run in RUNS}
        expected, actual = logs["eager"].counts(), logs["actual"].counts()
        assert actual == expected, f"backward {call + 1}: hook calls (kind, name) -> count: {actual}, eager {expected}"
        assert_matches_oracle({run: dict(sorted(logs[run].grads.items())) for run in RUNS},
                              path=f"backward {call + 1}: hooked gradient")
        for module in modules.values():
            module.zero_grad(set_to_none=True)




def test_hooks_fire_once_per_backward_with_eagers_gradients(impl, options, manifest_examples):
    """Hooks on the parameters and on the wrapped module itself."""
    for text in manifest_examples:  # (LayerStack(...), seed)
        check_hooks(impl, options, *stack_example(text))
    drawn(check_hooks)(impl, options)


@pytest.mark.parametrize("autocast", AUTOCAST_DTYPES, ids=dtype_name)
def test_hooks_fire_once_per_backward_under_autocast(impl, options, autocast, manifest_examples):
    """The same under ``torch.autocast``: float16 or bfloat16 activations, float32 parameters whose
    gradients still reach every hook once, as eager's (delivered as produced, too)."""
    for text in manifest_examples:
        check_hooks(impl, options, *stack_example(text), autocast=autocast)
    drawn(check_hooks, autocast=st.just(autocast))(impl, options)


def check_block_hooks(impl, options, stack: LayerStack, seed: int) -> None:
    modules = _modules(impl, options, stack, seed)
    inputs = _inputs(stack, seed, options.device)
    expected = _backward_with_hooks(stack, modules["eager"], inputs["eager"], on_blocks=True).counts()
    try:
        actual = _backward_with_hooks(stack, modules["actual"], inputs["actual"], on_blocks=True).counts()
    except RuntimeError as error:
        if "hook" in str(error):
            return  # refused, naming the hook: allowed
        raise
    assert actual == expected, f"hook calls (kind, name) -> count: {actual}, eager {expected}"




def test_backward_hooks_on_blocks_fire_as_in_eager_or_are_refused_by_name(impl, options, manifest_examples):
    """Full backward hooks on the blocks inside the wrapped module: they fire once per backward as in
    eager, or forward raises an error naming the hook. Silently never firing fails."""
    for text in manifest_examples:  # (LayerStack(...), seed)
        check_block_hooks(impl, options, *stack_example(text))
    drawn(check_block_hooks)(impl, options)


def _post_accumulate_order(stack: LayerStack, module: nn.Module, inputs) -> list[str]:
    log = _backward_with_hooks(stack, module, inputs)
    return [name for kind, name in log.calls if kind == "post_accumulate"]


def _block_index(name: str) -> int:
    return int(name.split(".")[0])


def check_hook_order(impl, options, stack: LayerStack, seed: int) -> None:
    """For parameters of different blocks: if eager accumulates the later block's first (its
    gradient is needed to reach the earlier one), so must the implementation."""
    modules = _modules(impl, options, stack, seed)
    inputs = _inputs(stack, seed, options.device)
    eager = _post_accumulate_order(stack, modules["eager"], inputs["eager"])
    actual = _post_accumulate_order(stack, modules["actual"], inputs["actual"])
    position = {name: i for i, name in enumerate(actual)}
    for i, later in enumerate(eager):
        for earlier in eager[i + 1:]:
            if _block_index(later) > _block_index(earlier) and position[later] > position[earlier]:
                raise AssertionError(f"{earlier} accumulated before {later}, which feeds it: eager order {eager}, "
                                     f"got {actual}")




def test_post_accumulate_hooks_fire_in_eagers_dependency_order(impl, options, manifest_examples):
    for text in manifest_examples:  # (LayerStack(...), seed)
        check_hook_order(impl, options, *stack_example(text))
    drawn(check_hook_order, stack=ORDER_STACKS)(impl, options)


# ---- accumulation


def check_accumulation(impl, options, stack: LayerStack, seed: int, micro_batches: int = 1, set_to_none: bool = True,
                       frozen: frozenset[int] = frozenset()) -> None:
    eager = stack.build_module(seed).to(options.device)
    for index, p in enumerate(eager.parameters()):
        p.requires_grad_(index not in frozen)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    grads = {}
    for run, module in modules.items():
        module(*_inputs(stack, seed, options.device)[run])  # a forward outside any backward changes nothing
        stack.loss(module(*_inputs(stack, seed + 99, options.device)[run])).backward()
        module.zero_grad(set_to_none=set_to_none)
        for k in range(micro_batches):
            stack.loss(module(*_inputs(stack, seed + k, options.device)[run])).backward()
        grads[run] = {name: p.grad for name, p in module.named_parameters()}
    assert_matches_oracle(grads, path=f"{micro_batches} accumulated micro-batches")




def test_micro_batches_accumulate_to_eagers_sum(impl, options, manifest_examples):
    for text in manifest_examples:  # (LayerStack(...), seed[, micro_batches, set_to_none, frozen])
        check_accumulation(impl, options, *stack_example(text))
    drawn(check_accumulation, micro_batches=st.integers(1, 3), set_to_none=st.booleans(),
          frozen=st.frozensets(st.integers(0, 5), max_size=2))(impl, options)


class SharedLinear(nn.Module):
    """One Linear applied twice: its weight's gradient is the sum of both uses."""

    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x):
        return self.linear(torch.tanh(self.linear(x)))


@pytest.mark.parametrize("width", [1, 3, 8])
def test_a_weight_used_twice_gets_the_sum_of_both_uses(impl, options, width):
    torch.manual_seed(width)
    eager = SharedLinear(width).to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    x = torch.randn(4, width)
    grads = {}
    for run, inputs in input_runs((x,), device=options.device).items():
        modules[run](*inputs).square().sum().backward()
        grads[run] = {name: p.grad for name, p in modules[run].named_parameters()}
    assert_matches_oracle(grads, path="shared weight")


# ---- the autograd API


def check_autograd_api(impl, options, stack: LayerStack, seed: int) -> None:
    modules = _modules(impl, options, stack, seed)
    inputs = _inputs(stack, seed, options.device)
    by_grad, twice, input_only = {}, {}, {}
    for run, module in modules.items():
        params = list(_trainable(module).values())
        loss = stack.loss(module(*inputs[run]))
        by_grad[run] = list(torch.autograd.grad(loss, params, retain_graph=True)) if params else []
        assert all(p.grad is None for p in params), f"{run}: torch.autograd.grad wrote .grad"
        loss.backward(retain_graph=True)
        loss.backward()
        twice[run] = [p.grad for p in params]
        module.zero_grad(set_to_none=True)
        fresh = input_runs(stack.make_inputs(seed + 1), seed=seed + 1, device=options.device)[run]
        input_only[run] = list(torch.autograd.grad(stack.loss(module(*fresh)), fresh))
        assert all(p.grad is None for p in params), f"{run}: a gradient of the inputs only wrote .grad"
    assert_matches_oracle(by_grad, path="torch.autograd.grad")
    assert_matches_oracle(twice, path="backward twice with retain_graph")
    assert_matches_oracle(input_only, path="gradient of the inputs only")




def test_autograd_grad_retain_graph_and_input_gradients_match_eager(impl, options, manifest_examples):
    for text in manifest_examples:  # (LayerStack(...), seed)
        check_autograd_api(impl, options, *stack_example(text))
    drawn(check_autograd_api)(impl, options)


# What a refusal of create_graph must say: ours, or torch's own for a once_differentiable backward.
CREATE_GRAPH_REFUSALS = ("create_graph", "double backward", "differentiate twice")
# The loss before the first derivative: one whose cotangent requires grad, or a constant one.
FIRST_LOSSES = {"squared": lambda out: out.square().sum(), "summed": lambda out: out.sum()}


def _critic(device):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)


def _refused(run: str, error: RuntimeError) -> bool:
    """Whether ``error`` is an allowed refusal: of the implementation, naming create_graph."""
    if run != "actual":
        raise AssertionError(f"eager failed: {error}") from error
    if not any(words in str(error) for words in CREATE_GRAPH_REFUSALS):
        raise AssertionError(f"create_graph=True failed without naming it ({', '.join(CREATE_GRAPH_REFUSALS)}): "
                             f"{error}") from error
    return True


@pytest.mark.parametrize("first_loss", FIRST_LOSSES)
def test_create_graph_gives_eagers_second_derivative_or_a_clear_error(impl, options, first_loss):
    """d/dx of |dL/dx|² through a tanh layer: no implementation may hand back a first derivative that
    silently has no graph."""
    eager = _critic(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    second = {}
    for run, (x,) in input_runs((torch.randn(5, 3, requires_grad=True),), device=options.device).items():
        try:
            (first,) = torch.autograd.grad(FIRST_LOSSES[first_loss](modules[run](x)), x, create_graph=True)
            if not first.requires_grad:
                raise AssertionError(f"{run}: create_graph=True returned a first derivative with no graph")
            (second[run],) = torch.autograd.grad(first.square().sum(), x)
        except RuntimeError as error:
            if _refused(run, error):
                return
    assert_matches_oracle(second, path="second derivative")


def test_a_gradient_penalty_trains_like_eager_or_is_refused(impl, options):
    """WGAN-GP: loss = mean(D(x)) + mean((|dD/dx|₂ - 1)²), three SGD steps; every parameter's gradient
    (through the penalty too) passes the oracle at every step, or the first step is refused by name."""
    eager = _critic(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    optimizers = {run: torch.optim.SGD(modules[run].parameters(), lr=0.1) for run in RUNS}
    for step in range(3):
        inputs = input_runs((torch.randn(6, 3, generator=torch.Generator().manual_seed(step), requires_grad=True),),
                            seed=step, device=options.device)
        for run in RUNS:
            (x,) = inputs[run]
            try:
                out = modules[run](x)
                (grad_x,) = torch.autograd.grad(out.sum(), x, create_graph=True)
                (out.mean() + ((grad_x.norm(2, dim=1) - 1) ** 2).mean()).backward()
            except RuntimeError as error:
                if step == 0 and _refused(run, error):
                    return
                raise
        grads = {run: {name: p.grad for name, p in modules[run].named_parameters()} for run in RUNS}
        assert_matches_oracle(grads, path=f"step {step} parameter grads")
        for run in RUNS:
            optimizers[run].step()
            optimizers[run].zero_grad()
