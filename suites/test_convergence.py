"""Property: training through an implementation follows eager PyTorch's loss curve, and stays on
its golden curve.

Checks: training cases (`mlp`, `bloom_lm`, `bloom_lm_recompute1/2`, `qlora`, `ddp`, `ddp_mem_efficient`,
`dropout`; under autocast `bloom_lm_float16` with `GradScaler`, `bloom_lm_bfloat16`, `qlora_bfloat16`)
follow eager PyTorch's loss, gradient-norm and learning-rate curves, with no fallback to eager; and stay on
their golden curves

Each case (``ortcheck.convergence.cases``) trains under eager, eager in float64 (plain and with
operands nudged by one ulp) and the implementation, from identical weights and batches; the gate
(``ortcheck.convergence.gate``) blocks on parity (the float64 oracle per step; dropout: agreement
over seeds), hard-fails on NaN/Inf, length mismatches and fallbacks to eager. The golden tier
blocks on the same stack and on stacks differing only in what its tolerance covers, and is advisory
elsewhere (a warning naming what differs); the report says which tier applied.
``--update-goldens`` rewrites goldens after parity passed; ``--nightly`` runs each case's longer schedule.
A case without a golden still reports its parity verdict, then fails naming the command that records it.
"""
import os
import shlex
import warnings
from pathlib import Path

import pytest

from ortcheck.convergence import cases, plots, workflow
from ortcheck.convergence.data_parallel import TooFewDevices
from ortcheck.impls import Capability
from ortcheck.pytest_plugin import not_applicable

pytestmark = pytest.mark.requires(Capability.CONVERGENCE)


CASES = [pytest.param(name, marks=pytest.mark.nightly) if cases.get(name).nightly_only else name
         for name in cases.names()]


@pytest.mark.parametrize("case_name", CASES)
def test_convergence(impl, options, case_name, request):
    config = request.config
    case = cases.get(case_name)
    missing = case.lacking(impl.capabilities())
    if missing:
        not_applicable(f"{impl.name} lacks capability {', '.join(missing)}")
    steps = case.nightly_steps if config.getoption("nightly") else case.training.steps
    golden_root = Path(config.getoption("golden_dir") or config.rootpath / "golden")
    try:
        outcome = workflow.check(case, impl, options, steps, golden_root, update=config.getoption("update_goldens"),
                                 record_command=record_command(request, impl.name))
    except TooFewDevices as error:
        not_applicable(str(error))
    request.node.user_properties.append(("convergence_parity", outcome.parity.summary()))
    # the first seed's per-step loss, gradient norm and learning rate: what nightly history keeps per case
    request.node.user_properties.append(("curve", outcome.actual.curves[0].metrics))
    if config.getoption("convergence_report"):
        png, table = plots.write(outcome, Path(config.getoption("convergence_report")))
        request.node.user_properties += [("report_png", str(png)), ("report_csv", str(table))]
    if outcome.against_golden is not None:
        verdict = "matches" if outcome.against_golden.ok else "differs: " + outcome.against_golden.message()
        request.node.user_properties.append(("golden_tier", f"{outcome.tier}; {verdict}"))
        window_used = outcome.against_golden.window_used
        if window_used is not None:
            request.node.user_properties.append(("golden_window_used", window_used))
        if outcome.advisory:
            warnings.warn(workflow.GoldenAdvisory(f"{outcome.golden_path}: advisory only, {outcome.advisory}; {verdict}"))
    assert not outcome.failures, "\n".join(outcome.failures)


def record_command(request, impl_name: str) -> str:
    """This test alone, from where pytest was started, with the options its curve depends on, and
    ``--update-goldens``: the command that records the golden it judged against."""
    config = request.config
    test = os.path.relpath(request.node.path, config.invocation_params.dir) + "::" + request.node.name
    words = ["pytest", test, "--impl", impl_name, "--device", config.ortcheck_device]
    words += ["--nightly"] if config.getoption("nightly") else []
    words += ["--golden-dir", config.getoption("golden_dir")] if config.getoption("golden_dir") else []
    return shlex.join(words + ["--update-goldens"])
