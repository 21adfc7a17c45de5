"""Property: layer by layer, the torch.nn modules models are built from give eager's outputs,
parameter gradients, input gradients and buffers through the pipeline.

Checks: the `torch.nn` layer catalogue, OpInfo-style: every public layer class of the installed torch is in
it or excluded with a reason (`ortcheck/strategies/nn_layers/coverage.py`, checked by
`tests/strategies/test_nn_coverage.py`; 171 configurations on torch 2.13: Linear, Bilinear, Conv1d/2d/3d
with explicit and `same` padding and transposes, padding modes, a depthwise-separable conv and a ResNet
basic block, BatchNorm train and eval, LayerNorm, GroupNorm, InstanceNorm, RMSNorm, LocalResponseNorm,
Embedding with padding_idx, scale_grad_by_freq and max_norm, EmbeddingBag, MultiheadAttention with masks and
shared key/value, scaled_dot_product_attention, Transformer encoder/decoder layers, RNN/LSTM/GRU one- and
bidirectional, pooling including uneven adaptive, upsampling (nearest, linear, bilinear with and without
align_corners), PixelShuffle/Unshuffle, Unfold/Fold, the ten padding layers, channel dropout at p=0, 29
activations, the 3-d layers, RNN/LSTM/GRU cells, LP pools, max unpooling,
Identity/Flatten/Unflatten/ChannelShuffle, cosine similarity and pairwise distance, whole Transformer
encoders and decoders, losses with ignore_index, label smoothing and probability targets, L1/SmoothL1/Huber,
cosine-embedding, margin-ranking, triplet-margin (also with a distance), BCE, hinge, soft-margin, Gaussian
and Poisson NLL, multi-margin, multilabel (soft-)margin, CTC, adaptive log-softmax and torch 2.13's
LinearCrossEntropyLoss): drawn configurations and inputs; output, parameter and input gradients, and buffers
and parameters after the step, pass the oracle

An OpInfo for modules: the op catalogue (``test_op_grads``) checks functions on their own, but a
user wraps ``nn.Conv2d`` or ``nn.LSTM``, whose parameters, buffers (BatchNorm's running statistics)
and train/eval behaviour are the module's. Each layer has a hypothesis builder
(``ortcheck.strategies.nn_layers``) drawing its configuration and input shapes; each example builds
the layer under a seed, wraps a copy, runs forward and a backward from seeded cotangents, and the
float64 oracle judges the output, every parameter's gradient, every float input's gradient, and the
buffers and parameters after the step (forward may write them: BatchNorm's statistics, an
Embedding's ``max_norm``). A layer the pipeline can't export or differentiate fails naming it.
"""
from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.models.seeding import seeded
from ortcheck.profiles import costly
from ortcheck.strategies.nn_layers import LAYERS, NAMES, Example
from ortcheck.strategies.nn_layers import blocks, wrappers
from ortcheck.strategies.nn_layers.drawn import Input, make

pytestmark = pytest.mark.requires(Capability.TRAINS)

SEEDS = st.integers(0, 2**16)


# ---- the check ---------------------------------------------------------------------------------


def _tensors(value: Any) -> list[torch.Tensor]:
    """The float tensors of an output (tensor or nested tuple), in order."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    return []


def _randomize_running_stats(module: nn.Module, generator: torch.Generator) -> None:
    """Eval mode normalizes with the running statistics: make them something other than 0 and 1."""
    with torch.no_grad():
        for name, buffer in module.named_buffers():
            if name.endswith("running_mean"):
                buffer.copy_(torch.randn(buffer.shape, generator=generator))
            elif name.endswith("running_var"):
                buffer.copy_(0.5 + torch.rand(buffer.shape, generator=generator))


def check_layer(impl, options, layer: str, drawn: Example, seed: int) -> None:
    """Forward, then backward of sum(output * seeded weights) over every float output; the oracle
    judges outputs, parameter and input gradients, and buffers and parameters after the step."""
    generator = torch.Generator().manual_seed(seed)
    with seeded(seed):
        eager = drawn.module()
    if drawn.eval:
        _randomize_running_stats(eager, generator)
        eager.eval()
    eager = eager.to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
    inputs = input_runs(tuple(spec.make(generator) for spec in drawn.inputs), seed=seed, device=options.device)
    outputs = {run: modules[run](*inputs[run]) for run in RUNS}
    weights = input_runs(tuple(torch.randn(out.shape, generator=generator) for out in _tensors(outputs["eager"])),
                         seed=seed + 1, device=options.device)
    results = {}
    for run in RUNS:
        loss = sum((out * weight.to(out.dtype)).sum() for out, weight in zip(_tensors(outputs[run]), weights[run]))
        loss.backward()
        results[run] = {"output": outputs[run],
                        "param_grads": {name: p.grad for name, p in modules[run].named_parameters()},
                        "input_grads": [x.grad for x in inputs[run] if x.is_floating_point()],
                        "buffers": dict(modules[run].named_buffers()),
                        "params": {name: p.detach() for name, p in modules[run].named_parameters()}}
    assert_matches_oracle(results, path=layer)


# what a recorded example may name: the layers and the wrappers and blocks the strategies build with
_EXAMPLE_NAMES = {"nn": nn, "torch": torch, "make": make, "Input": Input} | {
    name: value for module in (wrappers, blocks) for name, value in vars(module).items()
    if isinstance(value, type) and issubclass(value, nn.Module) and value.__module__ == module.__name__}


@pytest.mark.parametrize("layer", NAMES)
def test_layer_matches_eager(impl, options, layer, manifest_examples):
    for text in manifest_examples:  # "(Build, (Input, ...), seed[, eval])": known failing draws of the implementation
        build, inputs, seed, *mode = eval(text, _EXAMPLE_NAMES)
        check_layer(impl, options, layer, Example(build, inputs, *mode), seed)

    @costly(0.2)
    @given(drawn=LAYERS[layer], seed=SEEDS)
    def drawn_layer(drawn, seed):
        check_layer(impl, options, layer, drawn, seed)

    drawn_layer()
