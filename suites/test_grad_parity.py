"""Property: through the pipeline, forward outputs, loss and every gradient equal eager's.

Checks: generated layer stacks and pre-LN transformer stacks (`ortcheck.strategies.layer_stacks`): outputs,
loss, every parameter and input gradient, also at a second batch size, and the layer stacks again under
`torch.autocast` in float16 and bfloat16 (eager's dtypes; values within the oracle's bound, its sampled
rounding at autocast's precision: `ortcheck.checks.autocast`), held in float16 and bfloat16
(`model.to(dtype)`, inputs too; the rounding sampled at the parameters' precision; `n/a` where eager's own
kernels cannot train it) and trained 4 steps with `GradScaler` under float16 autocast, the loss scale
jumping between one at which every gradient overflows (2**40) and one at which none can (2**10), so each
skip is decided far from the threshold: the scales and skipped steps equal eager's, the parameters after
each step pass the oracle (`ortcheck.checks.grad_scaler`); a small Bloom-style LM trains 20 SGD steps on
eager's curve

Stacks come from ``ortcheck.strategies.layer_stacks`` (``layer_stacks`` and the pre-LN
``transformer_stacks``; dropout p=0, so parity is exact up to float rounding); every value is judged by the float64 oracle (``ortcheck.checks.oracle``). Each
stack is also run a second time at another batch size on the same wrapped module: dynamic axes
must make that a reuse, not a wrong answer. The same stacks run under ``torch.autocast`` in float16 and
bfloat16 (mixed precision), and held in those dtypes (``model.to(torch.bfloat16)``): eager's dtypes,
and values within the oracle's bound.
"""
import copy

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from ortcheck.checks.autocast import DTYPES as AUTOCAST_DTYPES, dtype_name
from ortcheck.checks.grad_scaler import assert_scaled_steps_match_eager
from ortcheck.checks import RUNS, assert_curve_matches_oracle, assert_stack_matches_eager, module_runs
from ortcheck.checks.stacks import eager_refuses
from ortcheck.impls import Capability
from ortcheck.pytest_plugin import not_applicable
from ortcheck.models.bloom import BloomConfig, build_bloom, causal_lm_loss, example_input_ids
from ortcheck.profiles import costly
from ortcheck.strategies import layer_stacks
from ortcheck.strategies.layer_stacks import stack_example, transformer_stacks

pytestmark = pytest.mark.requires(Capability.TRAINS)


def _examples_then_drawn(stacks: st.SearchStrategy, examples_per_run: float = 1.0):
    """A parity property over ``stacks``: the implementation's manifest examples
    (``(LayerStack(...), seed)``, known failing stacks) run first, then drawn ones."""
    def test(impl, options, manifest_examples):
        for text in manifest_examples:
            assert_stack_matches_eager(impl, options, *stack_example(text))

        @costly(examples_per_run)
        @given(stack=stacks, seed=st.integers(0, 2**16))
        def drawn(stack, seed):
            assert_stack_matches_eager(impl, options, stack, seed)

        drawn()
    return test


test_outputs_loss_and_gradients_match_eager = _examples_then_drawn(layer_stacks())
# Pre-LN transformer layers (the recompute suite's stacks, whose property is bitwise equality with
# level 0: this is where level 0 itself is judged against eager). Each example exports a deeper model.
test_transformer_stacks_match_eager = _examples_then_drawn(transformer_stacks(half_storage=False), 0.2)


@pytest.mark.parametrize("autocast", AUTOCAST_DTYPES, ids=dtype_name)
def test_outputs_loss_and_gradients_match_eager_under_autocast(impl, options, manifest_examples, autocast):
    """Mixed precision as users train: each call under ``torch.autocast`` in float16 or bfloat16, on
    layer stacks and pre-LN transformer stacks.
    The outputs' and gradients' dtypes must be eager's (float16 products, float32 softmax and
    losses), and their values within the oracle's bound, whose scale is eager's own error under
    the same autocast state. The manifest's examples (known failing stacks) run first."""
    for text in manifest_examples:
        assert_stack_matches_eager(impl, options, *stack_example(text), autocast=autocast)

    @costly(0.5)
    @given(stack=layer_stacks() | transformer_stacks(half_storage=False), seed=st.integers(0, 2**16))
    def drawn(stack, seed):
        assert_stack_matches_eager(impl, options, stack, seed, autocast=autocast)

    drawn()


# one per loss: torch 2.4.1's CPU kernels train a half model on cross entropy, not on mse
SMALLEST_STACKS = tuple(f"(LayerStack(input=Features(4), blocks=(Linear(4),), batch=2, seq=None, loss_kind={loss!r}), 0)"
                        for loss in ("mse", "cross_entropy"))


@pytest.mark.parametrize("held_in", AUTOCAST_DTYPES, ids=dtype_name)
def test_outputs_loss_and_gradients_match_eager_held_in_half(impl, options, manifest_examples, held_in):
    """Models held in half precision, as ``model.to(torch.bfloat16)`` (or ``.half()``) trains them: the
    parameters and the float inputs in that dtype, every op rounding its result to it. Outputs, loss and
    gradients in eager's dtypes, their values within the oracle's bound, whose rounding is sampled in
    the parameters' precision (:func:`ortcheck.checks.rounding.parameter_precision`). Not applicable
    where eager itself cannot train the smallest stacks in that dtype; a draw using a layer or loss
    eager lacks in it is rejected. The manifest's examples (known failing stacks) run first."""
    refused = [eager_refuses(*stack_example(text), held_in, options.device) for text in SMALLEST_STACKS]
    if all(refused):
        not_applicable("; ".join(refused))
    for text in manifest_examples:
        assert_stack_matches_eager(impl, options, *stack_example(text), held_in=held_in)

    @costly(0.5)
    @given(stack=layer_stacks() | transformer_stacks(half_storage=False), seed=st.integers(0, 2**16))
    def drawn(stack, seed):
        assume(eager_refuses(stack, seed, held_in, options.device) is None)
        assert_stack_matches_eager(impl, options, stack, seed, held_in=held_in)

    drawn()


def test_grad_scaler_steps_match_eager(impl, options, manifest_examples):
    """float16 autocast with ``GradScaler``: steps whose scaled gradients overflow are skipped and the
    scale backs off, the others step with unscaled, clipped gradients (``ortcheck.checks.grad_scaler``):
    the scales and skipped steps equal eager's, the parameters after every step pass the oracle."""
    def scaled_steps(stack, seed):
        eager = stack.build_module(seed).to(options.device)
        modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options), seed)
        assert_scaled_steps_match_eager(stack, modules, seed, steps=4, device=options.device)

    for text in manifest_examples:
        scaled_steps(*stack_example(text))

    @costly(0.2)
    @given(stack=layer_stacks(), seed=st.integers(0, 2**16))
    def drawn(stack, seed):
        assume(any(True for _ in stack.build_module(seed).parameters()))  # nothing to step
        scaled_steps(stack, seed)

    drawn()


def test_bloom_lm_trains_20_steps_like_eager(impl, options):
    """Every loss of 20 SGD steps passes the float64 oracle, from identical weights and batches.

    The two batches alternate, so the model can learn them and the loss must fall.
    """
    config = BloomConfig()
    eager = build_bloom(config, seed=0).to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    curves = {}
    for run in RUNS:
        optimizer = torch.optim.SGD(modules[run].parameters(), lr=0.5)
        losses = []
        for step in range(20):
            ids = example_input_ids(config, seed=step % 2, batch=4).to(options.device)
            optimizer.zero_grad()
            loss = causal_lm_loss(modules[run](ids), ids)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        curves[run] = losses
    assert curves["eager"][-1] < curves["eager"][0], "the case must actually train"
    assert_curve_matches_oracle(curves, what="loss")
