"""Property: op by op, outputs and the gradient of every differentiable input equal eager's.

An OpInfo for pipelines: the catalogue (``ortcheck.strategies.ops``) holds the torch ops
transformer training uses; hypothesis draws shapes, attributes and which inputs require grad. Each
case runs as a one-op module through the implementation, then backward from seeded cotangents;
outputs and input gradients pass the float64 oracle. Unlike the layer stacks, every input of an op
gets its gradient checked, so a rule that is right only the way models happen to use it
(``masked_fill`` needs only one branch of ``Where``) still fails here. A pipeline that can't
differentiate an op fails naming it.

Parameters are (op, dtype, shape class): ``regular`` (ranks 1-4, no empty side), ``empty`` (a
zero-size dimension) and ``scalar`` (0-d inputs), so every example of a parameter exercises what
its id names. Cases a manifest entry lists as ``examples`` run first, so a recorded finding fails
under any seed.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ortcheck.checks.one_op import check_one_op
from ortcheck.impls import Capability
from ortcheck.strategies.ops import Input, OpCase, op_cases, parameters

pytestmark = pytest.mark.requires(Capability.GRAD_PARITY)


def check_case(impl, options, case: OpCase, seed: int) -> None:
    """One case through ``impl`` and the oracle's runs: outputs, then every input gradient."""
    check_one_op(impl, options, case.call, case.make_inputs(seed, options.device), seed, case.op)


def _examples() -> settings:
    """3% of the profile's examples per parameter (ci: 3, nightly: 30), at least 3: there are ~200."""
    return settings(max_examples=max(3, int(settings().max_examples * 0.03)))


@pytest.mark.parametrize("op, dtype, shapes", [pytest.param(*p, id="-".join(p)) for p in parameters()])
def test_op_outputs_and_input_gradients_match_eager(impl, options, op, dtype, shapes, manifest_examples):
    for text in manifest_examples:
        case = eval(text, {"OpCase": OpCase, "Input": Input})
        if (case.op, case.dtype) == (op, dtype):
            check_case(impl, options, case, seed=0)

    @_examples()
    @given(data=st.data(), seed=st.integers(0, 2**16))
    def drawn(data, seed):
        check_case(impl, options, data.draw(op_cases(op, dtype, shapes), label="case"), seed)

    drawn()
