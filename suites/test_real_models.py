"""Property: tiny real transformer architectures train through the implementation as in eager.

Checks: tiny randomly initialised Hugging Face architectures (`ortcheck.models.hf`, 22: GPT-2, Llama,
Mistral, BERT, T5, OPT, Bloom, Falcon, Phi, Qwen2-MoE (eight experts beside a shared one, the router's
load-balancing loss in the loss) with eager attention; with each family's default sdpa attention Llama,
Mistral, Qwen2, Qwen3, Gemma (grouped-query heads), Mixtral (mixture of experts, its experts looped, and
grouped as transformers' default: sorted tokens counted with `histc`, one `grouped_mm`, judged against
float64 runs with the experts looped), GPT-NeoX (partial rotary), BART, RoBERTa, and on 8x8 images a ViT and
a ResNet; no downloads; `use_cache=False`) take 3 SGD steps with `labels`, the last at a new batch size and
length (first-step gradients and every loss pass the oracle), and 3 AdamW steps (first-step gradients, and
the loss curve within the oracle's envelope); a causal LM with its cache on passes the cache through; a
mixture of experts takes two SGD steps on 2 x 2-token batches that eager routes to other experts, or to
another number of them, after the first (every loss and gradient pass the oracle). Needs the extra
`ortcheck[models]` (transformers); skipped without it, naming the install command; GPT-2, Llama (sdpa), BERT
and Mixtral also train under `torch.autocast` float16 and bfloat16, and held in float16 and bfloat16
(`model.to(dtype)`)

Each architecture of ``ortcheck.models.hf`` (22: decoders with and without grouped-query heads,
mixtures of experts (Mixtral's experts looped and grouped, Qwen2-MoE), partial rotary,
encoder-decoders, encoders, a ViT and a ResNet; random weights, no downloads) takes SGD steps on token
batches (or 8x8 images) with ``labels`` (the model computes its own loss), the last at another batch
size and sequence length. The float64 oracle judges every step's loss and the gradients of the first
step. Models are built with ``use_cache=False``, as for training; with the cache on, a causal LM also
returns its key/value cache object, which must pass through as well (one architecture, forward and
backward). Each architecture also trains with AdamW. These models compute their loss from logits cast
to float32 even in the float64 run, so the oracle's estimate of eager's own error in a loss is a
float32 rounding, and AdamW's normalisation turns gradient differences far below that into whole
learning-rate steps: AdamW runs are judged by the first step's gradients (no update has happened yet)
and by the loss curve's envelope (``assert_curve_matches_oracle``: each step's bound is the largest
eager-to-float64 distance so far), at a learning rate of 1e-3. Grouped experts (one grouped matmul,
no float64 kernel) are judged against float64 runs of the same weights with the experts looped
(``ortcheck.checks.float64_twins``). A mixture of
experts also trains on two small batches routed to other experts, or to another number of them. Needs
``transformers`` (``ortcheck[models]``); without it the suite is skipped with the install command.
"""
from __future__ import annotations

import copy

import pytest
import torch

from ortcheck.checks import RUNS, assert_curve_matches_oracle, assert_matches_oracle, fresh_leaves, input_runs, module_runs
from ortcheck.checks.autocast import DTYPES as AUTOCAST_DTYPES, autocast_region, dtype_name, eager_refusal
from ortcheck.impls import Capability
from ortcheck.models import hf
from ortcheck.pytest_plugin import not_applicable

pytestmark = [pytest.mark.requires(Capability.TRAINS),
              pytest.mark.skipif(hf.unavailable_reason() is not None, reason=str(hf.unavailable_reason()))]

# Under torch.autocast, and held in half precision: a decoder with its own Conv1D products (addmm), one
# with rotary embeddings and grouped-query heads through sdpa, an encoder, and a mixture of experts
# (routing on half logits).
AUTOCAST_ARCHITECTURES = ("gpt2", "llama_sdpa", "bert", "mixtral")
SHAPES = ((2, 8), (2, 8), (3, 5))  # (batch, sequence) per step: the last one exercises new sizes
OPTIMIZERS = {"sgd": lambda params: torch.optim.SGD(params, lr=0.1),
              "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3)}


@pytest.mark.parametrize("architecture", list(hf.ARCHITECTURES))
def test_tiny_architecture_trains_like_eager(impl, options, architecture):
    losses, grads, _ = _train(impl, options, architecture, "sgd")
    assert_matches_oracle(_first(grads), path=f"{architecture}: gradients of the first step")
    assert_matches_oracle(losses, path=f"{architecture}: loss per step")


@pytest.mark.parametrize("architecture", list(hf.ARCHITECTURES))
def test_tiny_architecture_trains_with_adamw_like_eager(impl, options, architecture):
    losses, grads, _ = _train(impl, options, architecture, "adamw")
    assert_matches_oracle(_first(grads), path=f"{architecture}: gradients of the first step")
    assert_curve_matches_oracle({run: [loss.item() for loss in curve] for run, curve in losses.items()},
                                what=f"{architecture} AdamW loss")


@pytest.mark.parametrize("autocast", AUTOCAST_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("architecture", AUTOCAST_ARCHITECTURES)
def test_tiny_architecture_trains_under_autocast_like_eager(impl, options, architecture, autocast):
    """The SGD steps with every forward under ``torch.autocast`` (backward outside it, as mixed-precision
    training runs), judged as in float32: eager's own error in the autocast dtype sets the scale."""
    losses, grads, _ = _train(impl, options, architecture, "sgd", autocast=autocast)
    assert_matches_oracle(_first(grads), path=f"{architecture}: gradients of the first step")
    assert_matches_oracle(losses, path=f"{architecture}: loss per step")


@pytest.mark.parametrize("held_in", AUTOCAST_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("architecture", AUTOCAST_ARCHITECTURES)
def test_tiny_architecture_held_in_half_trains_like_eager(impl, options, architecture, held_in):
    """The SGD steps of the model held in float16 or bfloat16 (``model.to(torch.bfloat16)``, as
    trainers run bfloat16 without autocast): every parameter, gradient and activation in that dtype;
    eager's own error in it sets the scale (:func:`ortcheck.checks.rounding.parameter_precision`).
    Not applicable where eager itself cannot train it in that dtype (torch's CPU kernels before 2.5)."""
    arch = hf.ARCHITECTURES[architecture]
    model, inputs = arch.build(seed=0).to(options.device, held_in), arch.example(0, *SHAPES[0])
    refused = eager_refusal(lambda: model(**fresh_leaves(inputs, options.device)).loss.backward(),
                            f"{architecture} held in {held_in} on {options.device}")
    if refused:
        not_applicable(refused)
    losses, grads, _ = _train(impl, options, architecture, "sgd", held_in=held_in)
    assert_matches_oracle(_first(grads), path=f"{architecture}: gradients of the first step")
    assert_matches_oracle(losses, path=f"{architecture}: loss per step")


ROUTING = {"other experts": lambda first, then: first != then and list(map(len, first)) == list(map(len, then)),
           "another number of experts": lambda first, then: list(map(len, first)) != list(map(len, then))}


@pytest.mark.parametrize("change", list(ROUTING))
@pytest.mark.parametrize("architecture", list(hf.ROUTED))
def test_routing_that_changes_between_steps_trains_like_eager(impl, options, architecture, change):
    """A mixture of experts routes each batch's tokens to some of its experts. Two SGD steps on
    batches of the same shape (no new schema) whose routing differs in every way a traced graph
    can freeze: the same number of experts in every layer but others, or another number. Eager
    picks the second batch (the first seed whose routing differs so after the first step), so the
    property holds whatever weights a transformers version initialises. A pipeline that froze the
    routing it traced sends tokens to the wrong experts or fails; every step's loss and gradients
    must be eager's."""
    steps = ((0, *ROUTED_SHAPE), (_second_batch(architecture, ROUTING[change]), *ROUTED_SHAPE))
    losses, grads, routes = _train(impl, options, architecture, "sgd", steps)
    assert ROUTING[change](*routes), f"{architecture}: experts hit per layer {routes} (wanted {change})"
    assert_matches_oracle(grads, path=f"{architecture}: gradients per step")
    assert_matches_oracle(losses, path=f"{architecture}: loss per step")


ROUTED_SHAPE = (2, 2)  # 4 tokens, 2 experts each, of 8: some experts stay idle


def _second_batch(architecture: str, wanted, tries: int = 40) -> int:
    """The first seed whose batch eager routes as ``wanted`` against seed 0's, after a step on seed 0."""
    arch = hf.ARCHITECTURES[architecture]
    model = arch.build(seed=0)
    first = _routes(model, arch, 0)
    model(**arch.example(0, *ROUTED_SHAPE)).loss.backward()
    OPTIMIZERS["sgd"](model.parameters()).step()
    for seed in range(1, tries):
        if wanted(first, _routes(model, arch, seed)):
            return seed
    raise AssertionError(f"{architecture}: none of {tries} batches routes as wanted")


def _routes(model, arch, seed):
    with torch.no_grad():
        return hf.experts_hit(model(**arch.example(seed, *ROUTED_SHAPE)).router_logits, arch)


def _train(impl, options, architecture, optimizer, steps=tuple((step, *shape) for step, shape in enumerate(SHAPES)),
           autocast: torch.dtype | None = None, held_in: torch.dtype | None = None):
    """One step of ``optimizer`` per (seed, batch, length) in ``steps``, for each run: (losses per run,
    gradients per run and step, the experts eager's run hit per step where the model returns its
    router logits)."""
    arch = hf.ARCHITECTURES[architecture]
    eager = arch.build(seed=0).to(options.device, held_in)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    optimizers = {run: OPTIMIZERS[optimizer]([p for p in module.parameters() if p.requires_grad])
                  for run, module in modules.items()}
    losses, grads, routes = {run: [] for run in RUNS}, {run: [] for run in RUNS}, []
    for step, (seed, batch, length) in enumerate(steps):
        inputs = input_runs(arch.example(seed, batch, length), seed=seed, device=options.device)
        for run in RUNS:
            optimizers[run].zero_grad(set_to_none=True)
            with autocast_region(torch.device(options.device).type, autocast):
                out = modules[run](**inputs[run])
            out.loss.backward()
            if run == "eager" and getattr(out, "router_logits", None):
                routes.append(hf.experts_hit(out.router_logits, arch))
            grads[run].append({name: p.grad for name, p in modules[run].named_parameters()})
            optimizers[run].step()
            losses[run].append(out.loss.detach())
    return losses, grads, routes


def _first(grads):
    return {run: per_step[0] for run, per_step in grads.items()}


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
