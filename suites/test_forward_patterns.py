"""Property: what users write inside ``forward`` trains through the implementation as in eager.

Checks: what users write inside `forward` (`ortcheck.models.forward_patterns`): a buffer updated under
`no_grad` then used, a scale under `set_grad_enabled(False)`, `detach`, tied and frozen weights, Python
branches and loops on `x.shape[0]`, a branch on `.item()`; over 3-4 calls at batch sizes that start at 2
then exceed it, inputs changing sign at every call, with an SGD step after each: outputs, the input's and
every parameter's gradient and the buffers pass the oracle at every call, and the rebuilds the transition
contract (a re-export only where forward's Python decided otherwise on a size or a value)

Property: what users write inside ``forward`` trains through the implementation as in eager, over
calls at changing batch sizes with an SGD step after each: regions without gradients (``no_grad``,
``set_grad_enabled(False)``, ``detach``), tied and frozen weights, Python control flow on sizes and on
values (``ortcheck.models.forward_patterns``). Outputs, the input's and every parameter's gradient and
the buffers are judged by the float64 oracle at every call (the reference and ORTModule
were silently wrong on a buffer updated under ``no_grad`` and on a branch on ``x.shape[0]``), and
the pipeline's rebuilds by the transition contract: a new batch size re-exports only where the
Python of forward decided otherwise on it (``ortcheck.stateful.size_reads``) or on a value
(``control_values``).
"""
import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.impls import Capability
from ortcheck.models.forward_patterns import FEATURES, PATTERNS
from ortcheck.models.seeding import manual_seed
from ortcheck.stateful.contract import Call, Contract, eager_reads, memory_options

pytestmark = pytest.mark.requires(Capability.TRAINS)
LR = 0.1


def _step(modules, inputs, path: str) -> None:
    results = {}
    for run in RUNS:
        module = modules[run]
        for p in module.parameters():
            p.grad = None
        out = module(inputs[run])
        out.pow(2).sum().backward()
        results[run] = {"output": out, "input gradient": inputs[run].grad,
                        **{f"{name} gradient": p.grad for name, p in module.named_parameters() if p.requires_grad},
                        **{f"buffer {name}": b for name, b in module.named_buffers()}}
        with torch.no_grad():
            for p in module.parameters():
                if p.grad is not None:
                    p -= LR * p.grad
    assert_matches_oracle(results, path=path)


def _call(eager: torch.nn.Module, x: torch.Tensor, options) -> Call:
    """The call as the transition contract sees it, with what eager's forward read of its values and sizes."""
    trainable = frozenset(name for name, p in eager.named_parameters() if p.requires_grad)
    return Call(("x", x.dtype, x.dim()), True, options.device, 0, (True,), trainable,
                memory_options=memory_options(options), **eager_reads(eager, (x,), {}, [x]))


# Every sequence starts at batch 2 and then exceeds it, so each example crosses the size branches'
# threshold and changes the row count, and the inputs change sign at every call, so a value branch
# takes the other side (a pattern's failure shows under any seed); then anywhere.
BATCH_SEQUENCES = st.tuples(st.just(2), st.integers(3, 4), st.lists(st.integers(1, 4), max_size=2)).map(
    lambda parts: [parts[0], parts[1], *parts[2]])


@pytest.mark.parametrize("name", list(PATTERNS))
@settings(max_examples=max(3, settings().max_examples // 30), deadline=None)  # 3 (dev, ci), 33 (nightly): 3-4 exports each
@given(batches=BATCH_SEQUENCES, seed=st.integers(0, 2**16))
def test_forward_patterns_train_like_eager(impl, options, name, batches, seed):
    manual_seed(seed)
    eager = PATTERNS[name]().to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    contract = Contract()
    for call, batch in enumerate(batches):
        sign = 1 if call % 2 == 0 else -1  # a value branch takes the other side at every call
        x = (sign * torch.randn(batch, FEATURES, generator=torch.Generator().manual_seed(seed + call)).abs()).requires_grad_()
        path = f"{name}, call {call} at batch {batch}"
        contract.forward(_call(modules["eager"], x.to(options.device), options))
        _step(modules, input_runs(x, seed=call, device=options.device), path)
        mismatches = contract.mismatches(impl.observe(modules["actual"]))
        assert not mismatches, f"{path}: " + "; ".join(mismatches)
