"""Each check of ``ortcheck check`` on a small model: it passes for eager and the reference, and the
positive control its property is about makes it fail (so a pass means something)."""
import os
import signal

import pytest

from controls.gradients import GradientsOffByOnePermille
from controls.transitions import OneGraphSlot, ReexportsOnNewSizes
from ortcheck.impls.eager import EagerImpl
from ortcheck.models import hf
from ortcheck.usercheck import check_model, zoo
from ortcheck.impls.base import Observations
from ortcheck.usercheck.checks import CHECKS, _only_extra_work
from ortcheck.usercheck.result import COST, FAIL, NA, PASS
from tests.usercheck import targets


def _check(implementation, checks=None, factory=targets.mlp):
    return check_model(factory, targets.mlp_batch, targets.mean_loss, impl=implementation, steps=2, checks=checks,
                       localize_failures=False)


@pytest.mark.parametrize("name", ["eager", "reference"])
def test_every_check_passes_on_a_correct_pipeline(name):
    result = _check(name)
    assert [o.check for o in result.outcomes] == list(CHECKS)
    expected = {o.check: PASS for o in result.outcomes}
    if name == "eager":
        expected["recompute levels"] = NA
    assert {o.check: o.status for o in result.outcomes} == expected, result.format()
    assert result.ok and result.localization is None


def test_a_check_that_does_not_apply_says_why():
    outcome = {o.check: o for o in _check("eager", ("recompute levels",)).outcomes}["recompute levels"]
    assert outcome.status == NA and "eager has no memory optimizer" in outcome.detail


@pytest.mark.parametrize("control, failing", [
    (GradientsOffByOnePermille, {"gradients", "new batch size", "train/eval", "training steps"}),
])
def test_each_check_catches_its_positive_control(control, failing):
    result = _check(control(), ("gradients", "new batch size", "train/eval", "training steps"))
    assert {o.check for o in result.outcomes if o.status == FAIL} == failing, result.format()
    assert not result.ok


@pytest.mark.parametrize("control, costly, when", [(ReexportsOnNewSizes, "new batch size", "after the batch of 3"),
                                                   (OneGraphSlot, "train/eval", "after the train call")])
def test_an_extra_export_with_every_value_right_is_a_cost_not_a_failure(control, costly, when):
    """Re-exporting more than the contract predicts costs time and computes the
    same numbers; the verdict says so instead of "does NOT train like eager"."""
    result = _check(control(), ("gradients", "new batch size", "train/eval"))
    statuses = {o.check: o.status for o in result.outcomes}
    assert statuses == {"gradients": PASS, "new batch size": PASS, "train/eval": PASS} | {costly: COST}, result.format()
    detail = next(o.detail for o in result.outcomes if o.check == costly)
    assert "not a wrong number" in detail and f"{when}: exports: observed" in detail, detail
    assert result.ok and result.format().endswith(f"trains like eager (at an extra cost: more exports than needed in "
                                                  f"{costly!r})")


@pytest.mark.parametrize("observed, cost", [
    (Observations(exports=2, gradient_builds=2, sessions=2), True),     # one more of each: a cost
    (Observations(exports=1, gradient_builds=1, sessions=1), False),    # as predicted: no mismatch at all
    (Observations(exports=0, gradient_builds=2, sessions=2), False),    # a reuse where an export is predicted
    (Observations(exports=2, gradient_builds=2, sessions=2, fallbacks=1), False),  # ran eager instead
    (Observations(exports=None, gradient_builds=2, sessions=None), True),  # what is observable is extra
])
def test_only_extra_rebuilds_are_a_cost(observed, cost):
    assert _only_extra_work(observed, Observations(exports=1, gradient_builds=1, sessions=1)) is cost


def test_state_dict_round_trip_compares_after_a_step():
    """gradients_off_by_one_permille moves the parameters off eager's in the step before the state_dict is taken."""
    result = _check(GradientsOffByOnePermille(), ("state_dict round trip",))
    assert result.outcomes[0].status == FAIL and "load_state_dict" in result.outcomes[0].detail


def test_assert_trains_like_eager_from_the_package_root():
    import ortcheck

    assert ortcheck.assert_trains_like_eager(targets.mlp, targets.mlp_batch, impl="eager", steps=1).ok
    with pytest.raises(AssertionError, match="FAIL  gradients"):
        ortcheck.assert_trains_like_eager(targets.mlp, targets.mlp_batch, impl=GradientsOffByOnePermille(),
                                          checks=("gradients",), localize_failures=False)


class _CrashesOnNewSizes(EagerImpl):
    name = "crashes_on_new_sizes"

    def wrap(self, module, options=None):
        sizes = []

        def refuse(_, args):
            sizes.append(args[0].shape)
            if sizes[0] != args[0].shape:
                raise RuntimeError("Reshape: the graph kept the first batch's size")

        module.register_forward_pre_hook(refuse)
        return module


def test_a_crash_of_the_pipeline_is_a_failure_with_its_message():
    outcome = _check(_CrashesOnNewSizes(), ("new batch size",)).outcomes[0]
    assert outcome.status == FAIL and outcome.detail == (
        "the implementation raised RuntimeError: Reshape: the graph kept the first batch's size")


class _DiesOnNewSizes(EagerImpl):
    """Dies as native code does (a segfault, an abort) where a graph would be rebuilt for new sizes."""
    name = "dies_on_new_sizes"

    def __init__(self, die):
        self.die = die

    def wrap(self, module, options=None):
        sizes = []

        def die(_, args):
            sizes.append(args[0].shape)
            if sizes[0] != args[0].shape:
                self.die()

        module.register_forward_pre_hook(die)
        return module


@pytest.mark.parametrize("die, signal_name", [(lambda: os.kill(os.getpid(), signal.SIGSEGV), "SIGSEGV"),
                                              (os.abort, "SIGABRT")])
def test_a_crash_of_the_process_fails_that_check_and_the_others_still_run(die, signal_name):
    result = _check(_DiesOnNewSizes(die), ("new batch size", "gradients", "train/eval"))
    assert [(o.check, o.status) for o in result.outcomes] == [("new batch size", FAIL), ("gradients", PASS),
                                                              ("train/eval", PASS)], result.format()
    assert result.outcomes[0].detail == f"the implementation crashed (signal {signal_name})"


@pytest.mark.skipif(hf.unavailable_reason() is not None, reason=str(hf.unavailable_reason()))
@pytest.mark.parametrize("name", ["eager", "reference"])
def test_a_mixture_of_experts_passes_when_another_batch_routes_elsewhere(name):
    """The zoo's Qwen2-MoE routes its second batch (3 x 5 tokens) to another number of experts than
    its first: the reference re-exports for it, which the contract permits (eager's control values
    changed); outputs and gradients stay eager's."""
    result = check_model(zoo.qwen2_moe, zoo.qwen2_moe_batch, zoo.loss, impl=name,
                         checks=("new batch size",), localize_failures=False)
    assert result.ok, result.format()


@pytest.mark.parametrize("autocast", ["float16", "bfloat16"])
def test_under_autocast_the_reference_passes_and_a_pipeline_ignoring_it_fails(autocast, capsys):
    """``--autocast``: every call in the user's mixed-precision region. A pipeline that exports
    without it returns float32 where eager returns the autocast dtype: the gradients check names it."""
    from controls.autocast import IgnoresAutocast

    passing = check_model(targets.mlp, targets.mlp_batch, targets.mean_loss, impl="reference", steps=2,
                          checks=("gradients", "training steps"), localize_failures=False, autocast=autocast)
    assert passing.ok and passing.format().startswith(f"ortcheck check") and f"--autocast {autocast}" in passing.format()
    failing = check_model(targets.mlp, targets.mlp_batch, targets.mean_loss, impl=IgnoresAutocast(), steps=2,
                          checks=("gradients",), localize_failures=False, autocast=autocast)
    assert failing.outcomes[0].status == FAIL and f"where eager gives torch.{autocast}" in failing.outcomes[0].detail


def test_an_unknown_autocast_dtype_is_refused():
    from ortcheck.usercheck import UserInputError

    with pytest.raises(UserInputError, match="autocast 'float8'"):
        check_model(targets.mlp, targets.mlp_batch, autocast="float8")


def test_with_the_grad_scaler_the_reference_steps_as_eager_and_a_pipeline_ignoring_autocast_fails():
    """``--grad-scaler``: the training steps as float16 training runs them. At the loss scale 2**40
    eager's float16 gradients overflow and the step is skipped; a pipeline computing in float32 steps."""
    from controls.autocast import IgnoresAutocast

    options = dict(steps=2, checks=("training steps",), localize_failures=False, autocast="float16", grad_scaler=True)
    passing = check_model(targets.mlp, targets.mlp_batch, targets.mean_loss, impl="reference", **options)
    assert passing.ok, passing.format()
    assert "with GradScaler" in passing.outcomes[0].detail and "--autocast float16 --grad-scaler" in passing.format()
    failing = check_model(targets.mlp, targets.mlp_batch, targets.mean_loss, impl=IgnoresAutocast(), **options)
    assert failing.outcomes[0].status == FAIL and "(loss scale, stepped) per step" in failing.outcomes[0].detail


@pytest.mark.parametrize("autocast", [None, "bfloat16"])
def test_the_grad_scaler_without_float16_autocast_is_refused(autocast):
    from ortcheck.usercheck import UserInputError

    with pytest.raises(UserInputError, match="needs autocast 'float16'"):
        check_model(targets.mlp, targets.mlp_batch, autocast=autocast, grad_scaler=True)
