"""Property: through the pipeline, forward outputs, loss and every gradient equal eager's.

Stacks come from ``ortcheck.strategies.layer_stacks`` (dropout p=0, so parity is exact up to
float rounding); tolerances are ``torch.testing.assert_close``'s per-dtype defaults. Each stack
is also run a second time at another batch size on the same wrapped module: dynamic axes must
make that a reuse, not a wrong answer.
"""
import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.checks import assert_tensors_close
from ortcheck.impls import Capability
from ortcheck.models.bloom import BloomConfig, build_bloom, causal_lm_loss, example_input_ids
from ortcheck.strategies import layer_stacks

pytestmark = pytest.mark.requires(Capability.GRAD_PARITY)


def _fresh(inputs, device):
    return tuple(t.detach().to(device, copy=True).requires_grad_(t.requires_grad) for t in inputs)


def _step(module, stack, inputs):
    for p in module.parameters():
        p.grad = None
    outputs = module(*inputs)
    loss = stack.loss(outputs)
    loss.backward()
    return outputs, loss


def _assert_step_matches(stack, eager, wrapped, inputs, what, device):
    eager_inputs, wrapped_inputs = _fresh(inputs, device), _fresh(inputs, device)
    expected_out, expected_loss = _step(eager, stack, eager_inputs)
    actual_out, actual_loss = _step(wrapped, stack, wrapped_inputs)
    assert_tensors_close(actual_out, expected_out, f"{what} output")
    assert_tensors_close(actual_loss, expected_loss, f"{what} loss")
    for (name, e), (_, w) in zip(eager.named_parameters(), wrapped.named_parameters()):
        assert_tensors_close(w.grad, e.grad, f"{what} grad of {name}")
    for i, (e, w) in enumerate(zip(eager_inputs, wrapped_inputs)):
        if e.requires_grad:
            assert_tensors_close(w.grad, e.grad, f"{what} grad of input {i}")


@given(stack=layer_stacks(), seed=st.integers(0, 2**16))
def test_outputs_loss_and_gradients_match_eager(impl, options, stack, seed):
    eager = stack.build_module(seed).to(options.device)
    wrapped = impl.wrap(copy.deepcopy(eager), options)
    _assert_step_matches(stack, eager, wrapped, stack.make_inputs(seed), "first call", options.device)
    _assert_step_matches(stack, eager, wrapped, stack.make_inputs(seed + 1, batch=stack.batch + 2), "other batch",
                         options.device)


def test_bloom_lm_trains_20_steps_like_eager(impl, options):
    """Every loss of 20 SGD steps within 1e-5 relative of eager's, from identical weights and batches.

    The two batches alternate, so the model can learn them and the loss must fall.
    """
    config = BloomConfig()
    eager = build_bloom(config, seed=0).to(options.device)
    wrapped = impl.wrap(copy.deepcopy(eager), options)
    curves = []
    for model in (eager, wrapped):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        for step in range(20):
            ids = example_input_ids(config, seed=step % 2, batch=4).to(options.device)
            optimizer.zero_grad()
            loss = causal_lm_loss(model(ids), ids)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        curves.append(torch.tensor(losses, dtype=torch.float64))
    expected, actual = curves
    assert expected[-1] < expected[0], "the case must actually train"
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=0)
