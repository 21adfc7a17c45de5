"""Property: op by op, outputs and the gradient of every differentiable input equal eager's.

Checks: op by op (`ortcheck.strategies.ops`: 66 torch ops transformer training uses, float32 and float64, in
shape classes `regular` (ranks 1-4, broadcasting), `empty` (a zero-size dim) and `scalar` (0-d)): outputs
and the gradient of *every* differentiable input; and under `torch.autocast` float16 and bfloat16 every op
autocast acts on on this device (found by running eager on a probe case: on the CPU the products, cross
entropy, reflect and replicate padding), on the operands it recasts; n/a for the ops it leaves alone

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

Under ``torch.autocast`` (float16, bfloat16) the same check runs every op autocast acts on, on this
device: products and convolutions on float32 operands (it computes them in half), losses and, on
CUDA, softmax and layer_norm on half operands (it computes them in float32). Which ops those are is
eager's answer on a probe case, not a list of ours.
"""
import pytest
import torch
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from ortcheck.checks.autocast import DTYPES as AUTOCAST_DTYPES, LOWERS, autocast_role, dtype_name
from ortcheck.checks.one_op import check_one_op
from ortcheck.impls import Capability
from ortcheck.pytest_plugin import not_applicable
from ortcheck.strategies.ops import OPS, Input, OpCase, op_cases, parameters

pytestmark = pytest.mark.requires(Capability.TRAINS)


def check_case(impl, options, case: OpCase, seed: int, autocast: torch.dtype | None = None) -> None:
    """One case through ``impl`` and the oracle's runs: outputs, then every input gradient."""
    check_one_op(impl, options, case.call, case.make_inputs(seed, options.device), seed, case.op, autocast)


def _examples() -> settings:
    """3% of the profile's examples per parameter (ci: 3, nightly: 30), at least 3: there are ~200."""
    return settings(max_examples=max(3, int(settings().max_examples * 0.03)))


@pytest.mark.parametrize("op, dtype, shapes", [pytest.param(*p, id="-".join(p)) for p in parameters()])
def test_op_outputs_and_input_gradients_match_eager(impl, options, op, dtype, shapes, manifest_examples):
    for case in _manifest_cases(manifest_examples):
        if (case.op, case.dtype) == (op, dtype):
            check_case(impl, options, case, seed=0)

    @_examples()
    @given(data=st.data(), seed=st.integers(0, 2**16))
    def drawn(data, seed):
        check_case(impl, options, data.draw(op_cases(op, dtype, shapes), label="case"), seed)

    drawn()


# The probe case: the simplest case of the op, whatever the active profile (a findings check runs
# without draws; the probe still needs one).
PROBE = settings(database=None, derandomize=True, phases=(Phase.generate, Phase.shrink))


def _manifest_cases(manifest_examples: list[str]) -> list[OpCase]:
    return [eval(text, {"OpCase": OpCase, "Input": Input}) for text in manifest_examples]


@pytest.mark.parametrize("autocast", AUTOCAST_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("op", [op for op in OPS if "regular" in OPS[op].classes])
def test_op_under_autocast_matches_eager(impl, options, op, autocast, manifest_examples):
    """Each op autocast acts on, called in its region on the operands it recasts; n/a where eager's
    autocast leaves the op alone on this device."""
    device = torch.device(options.device).type
    probe = find(op_cases(op), lambda case: True, settings=PROBE)
    role = autocast_role(probe.call, probe.make_inputs(0, options.device), device, autocast)
    if role is None:
        not_applicable(f"autocast leaves {op} alone on {device}")
    dtype = "float32" if role == LOWERS else dtype_name(autocast)
    for case in _manifest_cases(manifest_examples):
        if case.op == op and case.dtype == dtype:
            check_case(impl, options, case, seed=0, autocast=autocast)

    @_examples()
    @given(data=st.data(), seed=st.integers(0, 2**16))
    def drawn(data, seed):
        check_case(impl, options, data.draw(op_cases(op, dtype), label="case"), seed, autocast)

    drawn()
