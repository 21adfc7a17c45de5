"""Property: tiny real transformer architectures train through the implementation as in eager.

Each architecture of ``ortcheck.models.hf`` (20: decoders with and without grouped-query heads,
a mixture of experts, partial rotary, encoder-decoders, encoders, a ViT and a ResNet; random
weights, no downloads) takes SGD steps on token batches (or 8x8 images) with ``labels`` (the model
computes its own loss), the last at another batch size and sequence length. The float64 oracle
judges every step's loss and the gradients of the first step. Models are built with
``use_cache=False``, as for training; with the cache on, a causal LM also returns its key/value
cache object, which must pass through as well (one architecture, forward and backward).
Each architecture also trains with AdamW. These models compute their loss from logits cast to
float32 even in the float64 run, so the oracle's estimate of eager's own error in a loss is a
float32 rounding, and AdamW's normalisation turns gradient differences far below that into whole
learning-rate steps: AdamW runs are judged by the first step's gradients (no update has happened
yet) and by the loss curve's envelope (``assert_curve_matches_oracle``: each step's bound is the
largest eager-to-float64 distance so far), at a learning rate of 1e-3. Needs ``transformers``
(``ortcheck[models]``); without it the suite is skipped with the install command.
"""
from __future__ import annotations

import copy

import pytest
import torch

from ortcheck.checks import RUNS, assert_curve_matches_oracle, assert_matches_oracle, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.models import hf

pytestmark = [pytest.mark.requires(Capability.GRAD_PARITY),
              pytest.mark.skipif(hf.unavailable_reason() is not None, reason=str(hf.unavailable_reason()))]

SHAPES = ((2, 8), (2, 8), (3, 5))  # (batch, sequence) per step: the last one exercises new sizes
OPTIMIZERS = {"sgd": lambda params: torch.optim.SGD(params, lr=0.1),
              "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3)}


@pytest.mark.parametrize("architecture", list(hf.ARCHITECTURES))
def test_tiny_architecture_trains_like_eager(impl, options, architecture):
    losses, first_grads = _train(impl, options, architecture, "sgd")
    assert_matches_oracle(first_grads, path=f"{architecture}: gradients of the first step")
    assert_matches_oracle(losses, path=f"{architecture}: loss per step")


@pytest.mark.parametrize("architecture", list(hf.ARCHITECTURES))
def test_tiny_architecture_trains_with_adamw_like_eager(impl, options, architecture):
    losses, first_grads = _train(impl, options, architecture, "adamw")
    assert_matches_oracle(first_grads, path=f"{architecture}: gradients of the first step")
    assert_curve_matches_oracle({run: [loss.item() for loss in curve] for run, curve in losses.items()},
                                what=f"{architecture} AdamW loss")


def _train(impl, options, architecture, optimizer):
    """Three steps of ``optimizer`` per run: (losses per run, the first step's gradients per run)."""
    eager = hf.ARCHITECTURES[architecture].build(seed=0).to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    optimizers = {run: OPTIMIZERS[optimizer]([p for p in module.parameters() if p.requires_grad])
                  for run, module in modules.items()}
    losses, first_grads = {run: [] for run in RUNS}, {}
    for step, (batch, length) in enumerate(SHAPES):
        inputs = input_runs(hf.ARCHITECTURES[architecture].example(step, batch, length), seed=step, device=options.device)
        for run in RUNS:
            optimizers[run].zero_grad(set_to_none=True)
            loss = modules[run](**inputs[run]).loss
            loss.backward()
            if step == 0:
                first_grads[run] = {name: p.grad for name, p in modules[run].named_parameters()}
            optimizers[run].step()
            losses[run].append(loss.detach())
    return losses, first_grads


def test_a_causal_lm_with_its_cache_on_passes_the_cache_through(impl, options):
    """Llama with ``use_cache=True`` (transformers' default) returns a cache object among its
    outputs: the loss and its gradients must still be eager's, and the cache must come back."""
    eager = hf.ARCHITECTURES["llama"].build(seed=0, use_cache=True).to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    ids = hf.token_ids(0, 2, 8).to(options.device)
    results = {}
    for run in RUNS:
        out = modules[run](input_ids=ids, labels=ids)
        out.loss.backward()
        assert out.past_key_values is not None, f"{run}: no cache came back"
        results[run] = {"loss": out.loss, "logits": out.logits,
                        "grads": {name: p.grad for name, p in modules[run].named_parameters()}}
    assert_matches_oracle(results, path="llama with use_cache=True")
