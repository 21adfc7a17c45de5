"""Property: 4-bit (QLoRA) layers train through the pipeline as they do in eager.

Checks: 4-bit (QLoRA) layers (`ortcheck.strategies.qlora`): stacks mixing frozen NF4/FP4 linears (odd
widths, every block size the implementation computes with, weights with zeros, outliers and constant blocks,
with/without bias and LoRA adapters) with the other blocks, and QLoRA models (every Linear 4-bit plus
adapters, the rest frozen): outputs, loss and the gradients of inputs, biases and adapters pass the oracle,
frozen weights get no gradient; also with the packed weights kept in buffers; over AdamW steps the loss
curve follows eager and the packed weights and absmax stay bit-identical

Eager is :class:`ortcheck.models.linear4bit.Linear4Bit`, whose backward is bitsandbytes': the input
and the bias get gradients through the 4-bit product, the packed weight none (``grad is None``); with
the packed weights kept in buffers a pipeline asks no gradient of them, and the input's must still be
right. The AdamW steps run with weight decay on.
"""
from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.checks import RUNS, assert_curve_matches_oracle, assert_stack_matches_eager, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.profiles import costly
from ortcheck.strategies.layer_stacks import LayerStack, stack_example
from ortcheck.strategies.bnb4 import BLOCK_SIZES
from ortcheck.strategies.qlora import bnb4_stacks, qlora_stacks

pytestmark = pytest.mark.requires(Capability.BNB4)

SEEDS = st.integers(0, 2**16)


def block_sizes(impl) -> tuple[int, ...]:
    return impl.bnb4_block_sizes() or BLOCK_SIZES


def check_stacks(impl, options, manifest_examples, stacks) -> None:
    """The manifest's examples, then drawn ``stacks``, each against eager (a first call, another batch)."""
    for text in manifest_examples:
        assert_stack_matches_eager(impl, options, *stack_example(text))

    @costly(0.5)
    @given(stack=stacks, seed=SEEDS)
    def drawn(stack, seed):
        assert_stack_matches_eager(impl, options, stack, seed)

    drawn()


def test_4bit_stacks_match_eager(impl, options, manifest_examples):
    check_stacks(impl, options, manifest_examples, bnb4_stacks(block_sizes(impl)))


def test_4bit_stacks_with_packed_weights_in_buffers_match_eager(impl, options, manifest_examples):
    check_stacks(impl, options, manifest_examples, bnb4_stacks(block_sizes(impl), packed_as=("buffer",)))


def test_qlora_models_match_eager(impl, options, manifest_examples):
    check_stacks(impl, options, manifest_examples, qlora_stacks(block_sizes(impl)))


def packed_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The 4-bit layers' packed weights (uint8) and absmax, copied."""
    state = {name: t for name, t in module.named_parameters() if t.dtype == torch.uint8}
    state.update((name, t) for name, t in module.named_buffers() if name.endswith("absmax"))
    return {name: t.detach().clone() for name, t in state.items()}


def train_adamw(stack: LayerStack, module: torch.nn.Module, run: str, steps: int, seed: int, device: str,
                ) -> list[float]:
    """``steps`` AdamW steps (weight decay on, every parameter handed over, frozen ones included)
    on ``run``'s copy of seeded batches; the losses."""
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-2, weight_decay=0.1)
    losses = []
    for step in range(steps):
        inputs = input_runs(stack.make_inputs(seed + step), seed=step, device=device)[run]
        optimizer.zero_grad()
        loss = stack.loss(module(*inputs))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def check_training(impl, options, stack: LayerStack, seed: int, steps: int = 1) -> None:
    eager = stack.build_module(seed).to(options.device)
    before = packed_state(eager)
    assert before, f"{stack.describe()} has no 4-bit layer"
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    curves = {run: train_adamw(stack, modules[run], run, steps, seed, options.device) for run in RUNS}
    assert_curve_matches_oracle(curves, what="loss")
    after = packed_state(modules["actual"])
    assert after.keys() == before.keys(), f"4-bit state changed names: {sorted(before)} -> {sorted(after)}"
    for name, value in before.items():
        assert torch.equal(after[name].cpu(), value.cpu()), f"{name} changed after {steps} AdamW steps"
    frozen_with_grad = [name for name, p in modules["actual"].named_parameters()
                        if p.dtype == torch.uint8 and p.grad is not None]
    assert not frozen_with_grad, f"frozen 4-bit weights got gradients: {frozen_with_grad}"


def test_adamw_trains_like_eager_and_leaves_4bit_weights_bit_identical(impl, options, manifest_examples):
    for text in manifest_examples:  # (LayerStack(...), seed[, steps]): an entry's stack examples serve here too
        check_training(impl, options, *stack_example(text))
    sizes = block_sizes(impl)

    @costly(0.3)
    @given(stack=st.one_of(qlora_stacks(sizes), bnb4_stacks(sizes)), seed=SEEDS, steps=st.integers(1, 4))
    def drawn(stack, seed, steps):
        check_training(impl, options, stack, seed, steps)

    drawn()
