"""Property: dropout with p > 0 is a dropout, and its gradient uses the forward's own mask.

Checks: dropout with p > 0: every output is 0 or x/(1-p), the dropped fraction is binomially plausible, and
the gradient uses the forward's own mask; identity in eval

Masks come from each implementation's RNG (onnxruntime's differs from torch's), so per-element
parity with eager is impossible for p > 0. What must hold everywhere: every output element is
either 0 or x / (1 - p); the dropped fraction is binomially plausible; and the input gradient is
exactly dy * kept / (1 - p) with the *same* kept mask the forward used.
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.impls import Capability
from ortcheck.models.seeding import manual_seed

pytestmark = pytest.mark.requires(Capability.TRAINS)


class DropoutOnly(torch.nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.0))  # something to train, as a real model has
        self.dropout = torch.nn.Dropout(p)

    def forward(self, x):
        return self.dropout(x * self.scale)


@given(p=st.sampled_from([0.1, 0.25, 0.5, 0.75]), seed=st.integers(0, 2**16))
def test_dropout_output_and_gradient_share_one_mask(impl, options, p, seed):
    generator = torch.Generator().manual_seed(seed)
    x = (torch.rand(64, 64, generator=generator) + 0.5).to(options.device).requires_grad_()  # no zeros: 0 out = dropped
    dy = torch.randn(64, 64, generator=generator).to(options.device)
    manual_seed(seed)
    wrapped = impl.wrap(DropoutOnly(p).train(), options)

    y = wrapped(x)
    y.backward(dy)

    kept = y.detach() != 0
    scale = 1.0 / (1.0 - p)
    torch.testing.assert_close(y.detach(), torch.where(kept, x.detach() * scale, 0.0))
    torch.testing.assert_close(x.grad, torch.where(kept, dy * scale, 0.0))
    n = kept.numel()
    dropped = n - int(kept.sum())
    sigma = math.sqrt(n * p * (1 - p))
    assert abs(dropped - n * p) <= 6 * sigma, f"dropped {dropped}/{n} at p={p}"


def test_dropout_is_identity_in_eval_mode(impl, options):
    x = torch.randn(8, 8, device=options.device)
    wrapped = impl.wrap(DropoutOnly(0.5).eval(), options)
    torch.testing.assert_close(wrapped(x), x)
