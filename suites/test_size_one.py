"""Property: a batch of one, then larger batches, then one again, train through the implementation as in eager.

Checks: a batch of one, then larger batches, then one again (`ortcheck.models.size_one`), train as in eager:
a trace cannot tell an axis of size 1 from one that broadcasts, nor follow code branching on `size == 1`
(transformers' llama and mixtral at batch 1); a pipeline re-exports where the axes of size 1 change (the
contract permits it) or stays right

Property: a batch of one, then larger batches, then one again, train through the implementation as
in eager. A trace cannot tell an axis of size 1 from one that broadcasts, nor follow code that
branches on ``size == 1`` (transformers' llama and mixtral do at batch 1): a pipeline must re-export
where the axes of size 1 change (the transition contract permits it) or otherwise stay right.
"""
import copy

import pytest
import torch

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.models.size_one import FEATURES, MODULES

pytestmark = pytest.mark.requires(Capability.TRAINS)
BATCHES = (1, 3, 5, 1)


@pytest.mark.parametrize("name", list(MODULES))
def test_batches_of_one_and_more_train_like_eager(impl, options, name):
    eager = MODULES[name]().to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    for seed, batch in enumerate(BATCHES):
        x = torch.randn(batch, FEATURES, generator=torch.Generator().manual_seed(seed)).requires_grad_()
        inputs = input_runs(x, seed=seed, device=options.device)
        results = {}
        for run in RUNS:
            for p in modules[run].parameters():
                p.grad = None
            out = modules[run](inputs[run])
            out.pow(2).sum().backward()
            results[run] = {"output": out, "input gradient": inputs[run].grad,
                            "weight gradient": modules[run].weight.grad}
        assert_matches_oracle(results, path=f"{name} at batch {batch} (step {seed})")
