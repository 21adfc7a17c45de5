"""Property: training through an implementation follows eager PyTorch's loss curve, and stays on
its golden curve.

Each case (``ortcheck.convergence.cases``) trains under eager and the implementation from identical
weights and batches; the gate (``ortcheck.convergence.gate``) blocks on parity, hard-fails on
NaN/Inf, length mismatches and fallbacks to eager. The golden tier blocks on the same stack and
configuration and is advisory elsewhere (a warning naming what differs). ``--update-goldens``
rewrites goldens after parity passed; ``--nightly`` runs each case's longer schedule.
"""
import warnings
from pathlib import Path

import pytest

from ortcheck.convergence import cases, plots, workflow
from ortcheck.impls import Capability

pytestmark = pytest.mark.requires(Capability.CONVERGENCE)


CASES = [pytest.param(name, marks=pytest.mark.nightly) if cases.get(name).nightly_only else name
         for name in cases.names()]


@pytest.mark.parametrize("case_name", CASES)
def test_convergence(impl, options, case_name, request):
    config = request.config
    case = cases.get(case_name)
    steps = case.nightly_steps if config.getoption("nightly") else case.training.steps
    golden_root = Path(config.getoption("golden_dir") or config.rootpath / "golden")
    outcome = workflow.check(case, impl, options, steps, golden_root, update=config.getoption("update_goldens"))
    request.node.user_properties.append(("convergence_parity", outcome.parity.summary()))
    if config.getoption("convergence_report"):
        png, table = plots.write(outcome, Path(config.getoption("convergence_report")))
        request.node.user_properties += [("report_png", str(png)), ("report_csv", str(table))]
    if outcome.advisory and outcome.against_golden is not None:
        verdict = "matches" if outcome.against_golden.ok else "differs: " + outcome.against_golden.message()
        request.node.user_properties.append(("golden_advisory", f"{outcome.advisory}; {verdict}"))
        warnings.warn(workflow.GoldenAdvisory(f"{outcome.golden_path}: advisory only, {outcome.advisory}; {verdict}"))
    assert not outcome.failures, "\n".join(outcome.failures)
