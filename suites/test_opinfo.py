"""Property: every op of PyTorch's own OpInfo database with autograd support trains through the implementation as in eager.

Checks: every OpInfo of torch's own `op_db` with autograd support (536 on torch 2.13, 516 on 2.4.1;
`ortcheck.strategies.opinfo`), float32 and float64, its first 3 samples (30 under `nightly`), seeded, in
order: outputs, which require grad, and the gradient of every input requiring it, as `test_op_grads` judges
them (`ortcheck/checks/one_op.py`); random ops on shapes, dtypes and flags only. Failures are recorded per
class in each manifest; `docs/opinfo.md` counts passing / refused / loud / silently wrong / crash / out of
scope per implementation

Property: every op of PyTorch's own OpInfo database (``op_db``) with autograd support trains
through the implementation as in eager, sample by sample: outputs, which of them require grad,
and the gradient of every input requiring it, by the float64 oracle (``check_one_op``, as the hand
catalogue of ``test_op_grads.py``), in float32 and float64.

The samples are PyTorch's (``op.sample_inputs``, edge cases included), not ours: coverage is
measured against torch's universe of ops, not a list we wrote. Each op is one test; its
first samples run in order (3 under ``dev`` and ``ci``, 30 under ``nightly``), generated after
seeding torch, so a verdict does not depend on the hypothesis seed. Samples run on past a value beyond
the bound, and the test reports the one furthest beyond it (a finding then holds on CPUs whose
rounding differs: ``ortcheck findings --check`` wants 4x); any other failure ends the run, and the
class of failure reported stays the first sample's. An op that draws random
numbers (dropout, rrelu, bernoulli: ``draws_random``) is judged on what its samples fix (shapes,
dtypes, which outputs require grad), not its values: a pipeline draws with its own generator, and
``test_dropout.py`` judges the distributions. An op a pipeline refuses, or computes wrongly, is a
finding in that implementation's manifest, recorded per failure class; ops not checkable as one
call are excluded with their reason (``ortcheck.strategies.opinfo.EXCLUDED``). The coverage table:
``ortcheck opinfo-coverage`` (docs/opinfo.md).
"""
import pytest
import torch
from hypothesis import settings

from ortcheck.checks.one_op import OneOp, check_one_op
from ortcheck.checks.oracle import OracleError
from ortcheck.impls import Capability
from ortcheck.models.seeding import manual_seed
from ortcheck.strategies import opinfo

pytestmark = pytest.mark.requires(Capability.TRAINS)


def _samples() -> int:
    """3% of the profile's examples (dev and ci: 3, nightly: 30), at least 3."""
    return max(3, int(settings().max_examples * 0.03))


def _judge_shapes(impl, options, case, label: str) -> None:
    """A random op: what its sample fixes, not the values it draws."""
    modules = {"actual": impl.wrap(OneOp(case.call), options), "eager": OneOp(case.call)}
    outputs = {run: module(*case.inputs(options.device)) for run, module in modules.items()}
    seen, wanted = ([(tuple(o.shape), o.dtype, o.requires_grad) for o in outputs[run]] for run in ("actual", "eager"))
    assert seen == wanted, f"{label}: outputs (shape, dtype, requires grad) {seen} where eager gives {wanted}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", opinfo.ids())
def test_opinfo_samples_train_like_eager(impl, options, op, dtype):
    manual_seed(0)
    random = opinfo.draws_random(opinfo.lookup(op))
    wrong_values = []
    for index, case in enumerate(opinfo.cases(op, getattr(torch, dtype), _samples(), options.device)):
        label = f"{op} sample {index}"
        try:
            if random:
                _judge_shapes(impl, options, case, label)
            else:
                check_one_op(impl, options, case.call, case.inputs(options.device), index, label)
        except OracleError as error:
            wrong_values.append(error)
        except Exception:
            if not wrong_values:
                raise
            break  # the class of failure reported stays the first sample's
    if wrong_values:
        raise max(wrong_values, key=lambda error: error.verdict.margin)

