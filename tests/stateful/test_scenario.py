"""The scenario runner and the contract, on known sequences."""
import dataclasses

import pytest
import torch

from ortcheck import impls
from ortcheck.impls import Options
from ortcheck.stateful import Forward, MoveTo, SetAttribute, SetMode, Step, replay
from ortcheck.stateful.contract import FIRST_FORWARD, MODE_CHANGED, REUSED, Call, Contract

REFERENCE = impls.get("reference")
needs_reference = pytest.mark.skipif(REFERENCE.unavailable_reason() is not None, reason="reference unavailable")

# Reported as a false failure before the float64 oracle: one output element of 0.022 next to
# outputs of 183 differed by 1.4e-5 from eager (float32 cancellation, allowed 1e-5).
CANCELLING = [Forward(), SetAttribute(name="gain", value=2.0), Forward(rank=3), Step(), SetMode(training=False),
              Forward(), Step(), Forward(), Step(), Forward(repeats=1)]


@needs_reference
@pytest.mark.parametrize("seeds", [None, (1, 3, 6, 8, 10)], ids=["seed0", "positional"])
def test_the_cancelling_sequence_passes_on_reference(seeds):
    actions = list(CANCELLING)
    if seeds:  # the seeds the sequence had when seeds came from the action's position
        forwards = [i for i, a in enumerate(actions) if isinstance(a, Forward)]
        for index, seed in zip(forwards, seeds):
            actions[index] = Forward(**{**actions[index].__dict__, "seed": seed})
    replay(REFERENCE, Options(), actions)


def test_a_move_to_another_device_leaves_no_forward_to_step_from():
    """The first GPU run's ``test_transitions[eager-device]``: Forward on cpu, MoveTo cuda, Step
    backpropagated a cuda cotangent into the cpu graph ("invalid gradient at index 0 - expected device
    cpu but got cuda:0"). ``meta`` stands in for the second device."""
    scenario = replay(impls.get("eager"), Options(), [Forward(), MoveTo(device="meta")])
    assert not scenario.can_step
    with pytest.raises(ValueError, match="needs a preceding forward"):
        scenario.apply(Step())


def test_a_move_to_the_same_device_keeps_the_forward_to_step_from():
    scenario = replay(impls.get("eager"), Options(), [Forward(), MoveTo(device="cpu"), Step()])
    assert [type(a) for a in scenario.actions] == [Forward, MoveTo, Step]
    assert all(p.grad is not None for p in scenario.wrapped.parameters())


def _call(training=True, signature=("x",), grad=True, **changes):
    fields = dict(signature=signature, training=training, device="cpu", attribute_sets=0,
                  inputs_requiring_grad=(True,), trainable=frozenset({"w"}), grad_enabled=grad)
    return Call(**{**fields, **changes})


def test_the_contract_keeps_one_graph_per_mode():
    contract = Contract()
    reasons = []
    for training in (True, False, True, False):
        contract.forward(_call(training))
        reasons.append(contract.observations.last_reason)
    assert reasons == [FIRST_FORWARD, MODE_CHANGED, REUSED, REUSED]
    assert (contract.observations.exports, contract.observations.gradient_builds) == (2, 2)


def test_the_contract_rebuilds_gradients_only_with_grad_enabled():
    contract = Contract()
    contract.forward(_call())
    contract.forward(_call(inputs_requiring_grad=(False,), grad=False))
    assert contract.observations.gradient_builds == 1
    contract.forward(_call(inputs_requiring_grad=(False,)))
    assert (contract.observations.exports, contract.observations.gradient_builds) == (1, 2)


def _stepped(field: str, *seen) -> Contract:
    """A contract after one forward per value of the Call's ``field`` in ``seen``."""
    contract = Contract()
    for value in seen:
        contract.forward(_call(**{field: value}))
    return contract


def _reexported_and_reused(reason: str):
    from ortcheck.impls.base import Observations

    return (Observations(exports=2, gradient_builds=2, sessions=2, fallbacks=0, last_reason=reason),
            Observations(exports=1, gradient_builds=1, sessions=1, fallbacks=0, last_reason=REUSED))


def test_changed_control_values_permit_a_re_export_and_nothing_else():
    """A mixture of experts routing to other experts: the pipeline may re-export for it, or not."""
    from ortcheck.stateful.contract import DATA_CHANGED

    reexported, reused = _reexported_and_reused(DATA_CHANGED)
    for observed in (reexported, reused):
        assert _stepped("control_values", (("unbind", 3),), (("unbind", 4),)).mismatches(observed) == []
    contract = _stepped("control_values", (("unbind", 3),), (("unbind", 3),))  # the same routing: no re-export
    assert contract.mismatches(reexported) and not contract.mismatches(reused)
    assert _stepped("control_values", None, None).mismatches(reexported)  # values not recorded: nothing permitted
    followed = _stepped("control_values", (("unbind", 3),), (("unbind", 4),))
    followed.mismatches(reexported)  # the contract follows the re-export: built for the new values now
    followed.forward(_call(control_values=(("unbind", 4),)))
    assert followed.mismatches(dataclasses.replace(reexported, last_reason=REUSED)) == []


def test_changed_axes_of_size_1_permit_a_re_export_and_other_sizes_do_not():
    """A first batch of one, then three: a trace at size 1 may have specialized the axis."""
    from ortcheck.stateful.contract import UNIT_AXES_CHANGED

    reexported, reused = _reexported_and_reused(UNIT_AXES_CHANGED)
    for observed in (reexported, reused):
        assert _stepped("unit_axes", ((0,),), ((),)).mismatches(observed) == []
        assert _stepped("unit_axes", ((),), ((0,),)).mismatches(observed) == []
    unchanged = _stepped("unit_axes", ((1,),), ((1,),))  # (4, 1) then (7, 1): the same axes of size 1
    assert unchanged.mismatches(reexported) and not unchanged.mismatches(reused)
    assert _stepped("unit_axes", None, None).mismatches(reexported)  # not recorded: nothing permitted


def test_a_size_the_forward_read_permits_a_re_export_where_its_decision_changes():
    """``if x.shape[0] > 2`` recorded at batch 2: batch 3 may re-export, batch 2 again may not."""
    from ortcheck.stateful.contract import SIZE_READ_CHANGED
    from ortcheck.stateful.size_reads import size_reads

    class Branch(torch.nn.Module):
        def forward(self, x):
            return x / x.shape[0] if x.shape[0] > 2 else x

    def contract(*batches):
        stepped = Contract()
        for batch in batches:
            x = torch.zeros(batch, 3)
            stepped.forward(_call(size_reads=size_reads(Branch(), (x,), {}), tensors=(x,)))
        return stepped

    reexported, reused = _reexported_and_reused(SIZE_READ_CHANGED)
    for observed in (reexported, reused):
        assert contract(2, 3).mismatches(observed) == []
    assert contract(3, 4).mismatches(reexported) and not contract(3, 4).mismatches(reused)
    assert _stepped("size_reads", None, None).mismatches(reexported)  # not recorded: nothing permitted
