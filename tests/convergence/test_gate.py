"""The gate can fail: positive controls, hard failures and each part of the tolerance model."""
import dataclasses

import pytest
import torch

from ortcheck import impls
from ortcheck.checks import FACTOR
from ortcheck.convergence import cases, gate, runner, workflow
from ortcheck.convergence.curves import CaseRun, Curve
from ortcheck.convergence.tolerance import FP32_STEPS, CurveTolerance, StepTolerance, Window
from ortcheck.impls.base import Observations

EAGER = impls.get("eager")


def run(curves, impl="x"):
    return CaseRun("case", impl, "cpu", curves, {}, {})


def curve(loss, seed=0, fallback_steps=()):
    n = len(loss)
    return Curve(seed, {"loss": list(loss), "grad_norm": [1.0] * n, "lr": [0.1] * n}, list(fallback_steps))


LOSS = [1.0 - 0.01 * i for i in range(40)]


def parity(case, **changes):
    """The same-job parity the suite applies (float64 oracle per step; band for dropout)."""
    return workflow.parity(case, runner.run_all(case, EAGER, **changes))


@pytest.mark.parametrize("name", ["mlp", "bloom_lm", "dropout"])
def test_a_learning_rate_one_percent_off_fails_the_gate(name):
    case = cases.get(name)
    result = parity(case, training=dataclasses.replace(case.training, lr=case.training.lr * 1.01))
    assert not result.ok
    if name != "dropout":
        assert result.oracle_ratio > 100 * FACTOR, result.summary()  # far outside, not marginally


@pytest.mark.parametrize("p", [0.0, 0.5])
def test_dropout_at_the_wrong_rate_fails_the_band(p):
    def set_rate(model):
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = p

    case = cases.get("dropout")
    result = parity(case, perturb=set_rate)
    assert not result.ok and "standard errors" in result.message()
    assert abs(result.band_z) > 4 and "standard errors from eager" in result.summary()


@pytest.mark.parametrize("name", ["mlp", "bloom_lm"])
def test_one_ulp_on_one_weight_stays_inside_the_tolerance(name):
    """The gate's resolution: a one-ulp nudge is at the level of legitimate kernel differences
    (measured: 0 on mlp, 1.4e-7 relative on bloom_lm), so it must *not* fail a correct pipeline."""
    def nudge(model):
        weight = next(model.parameters())
        with torch.no_grad():
            weight.view(-1)[0] = torch.nextafter(weight.view(-1)[0], torch.tensor(float("inf")))

    case = cases.get(name)
    assert parity(case, perturb=nudge).ok
    assert gate.compare(*runner.run_pair(case, EAGER, perturb=nudge), case.tolerance).ok  # the golden windows too


def test_eager_against_itself_is_exact():
    case = cases.get("mlp")
    result = parity(case)
    assert result.ok and result.oracle_ratio <= 1.0
    assert gate.compare(*runner.run_pair(case, EAGER), case.tolerance).max_relative("loss") == 0.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_loss_is_a_hard_failure(bad):
    loss = LOSS[:10] + [bad] + LOSS[11:]
    result = gate.compare(run([curve(LOSS)]), run([curve(loss)]), CurveTolerance({"loss": FP32_STEPS}))
    assert not result.ok and f"loss is {bad} at step 10" in result.message()


def test_a_length_mismatch_is_a_hard_failure():
    result = gate.compare(run([curve(LOSS)]), run([curve(LOSS[:-1])]), CurveTolerance({"loss": FP32_STEPS}))
    assert "loss has 39 steps, expected 40" in result.message()


def test_a_fallback_to_eager_fails_even_with_identical_curves():
    result = gate.compare(run([curve(LOSS)]), run([curve(LOSS, fallback_steps=[3])], "ref"), CurveTolerance({"loss": FP32_STEPS}))
    assert "ref fell back to eager PyTorch at steps [3]" in result.message()


def test_the_runner_records_fallback_steps():
    class FallsBackAtStepTwo(type(EAGER)):
        name = "falls_back"

        def observe(self, wrapped):
            wrapped.calls = getattr(wrapped, "calls", 0) + 1
            return Observations(fallbacks=int(wrapped.calls > 3))  # observe runs once before step 0

    case = dataclasses.replace(cases.get("mlp"), training=dataclasses.replace(cases.get("mlp").training, steps=5))
    _, actual = runner.run_pair(case, FallsBackAtStepTwo())
    assert actual.curves[0].fallback_steps == [2]


TIGHT = StepTolerance((Window(0, 1e-6, 0.0), Window(20, 1e-3, 0.0)), max_outlier_fraction=0.05, outlier_factor=10.0,
                      tail_fraction=0.25, tail_bias=1e-4)


def shifted(steps, relative):
    return [x * (1 + relative) if i in steps else x for i, x in enumerate(LOSS)]


@pytest.mark.parametrize("loss, ok", [
    (shifted({5}, 5e-6), True),             # one outlier within 10x: allowed (2 of 40)
    (shifted({5, 6, 7}, 5e-6), False),      # three: more than allowed
    (shifted({5}, 5e-5), False),            # one, beyond 10x
    (shifted({25}, 5e-4), True),            # later window is wider
    (shifted(set(range(30, 40)), 2e-4), False),  # inside each bound, but biased one way over the tail
])
def test_windows_outliers_and_tail_bias(loss, ok):
    assert gate.compare(run([curve(LOSS)]), run([curve(loss)]), CurveTolerance({"loss": TIGHT})).ok is ok


def test_the_share_of_the_window_used_is_the_worst_steps_deviation_over_its_bound():
    """What nightly history follows to see a run walking towards its golden's edge while it passes."""
    result = gate.compare(run([curve(LOSS)]), run([curve(shifted({25}, 5e-4))]), CurveTolerance({"loss": TIGHT}))
    assert result.ok and result.window_used == pytest.approx(0.5, rel=1e-6)  # 5e-4 of a 1e-3 window
    assert gate.compare(run([curve(LOSS)]), run([curve(LOSS)]), CurveTolerance({"loss": TIGHT})).window_used == 0.0
