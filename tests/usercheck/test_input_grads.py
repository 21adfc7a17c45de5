"""Which inputs are differentiated: as the user's ``batch()`` returns them by
default, so a mask or a token-type tensor is data whose gradient nobody computes in training and
nobody judges here; ``input_grads="all"`` judges every floating input, ``"none"`` none."""
import pytest
import torch

from ortcheck.impls.eager import EagerImpl
from ortcheck.nested import leaves
from ortcheck.usercheck import check_model
from ortcheck.usercheck.checks import Subject
from ortcheck.usercheck.errors import UserInputError
from ortcheck.usercheck.result import FAIL, PASS
from tests.usercheck import targets


class InputGradsOffByOnePermille(EagerImpl):
    """Eager, but every input's gradient comes back 0.1% off; parameters' gradients are right."""
    name = "input_grads_off_by_one_permille"

    def wrap(self, module, options=None):
        def hook(_, args, kwargs):
            for leaf in leaves((args, kwargs)):
                if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                    leaf.register_hook(lambda grad: grad * 1.001)

        module.register_forward_pre_hook(hook, with_kwargs=True)
        return module


def data_batch(size):
    return (torch.randn(size, targets.FEATURES),)


def differentiated_batch(size):
    return (torch.randn(size, targets.FEATURES).requires_grad_(),)


def _gradients(batch, **options):
    result = check_model(targets.gated, batch, targets.mean_loss, impl=InputGradsOffByOnePermille(), checks=("gradients",),
                         localize_failures=False, **options)
    return result.outcomes[0]


def test_an_input_returned_without_requires_grad_is_data():
    assert _gradients(data_batch).status == PASS


def test_an_input_returned_requiring_grad_has_its_gradient_judged():
    outcome = _gradients(differentiated_batch)
    assert outcome.status == FAIL and "input gradients" in outcome.detail, outcome


@pytest.mark.parametrize("policy, batch, status", [("all", data_batch, FAIL), ("none", differentiated_batch, PASS)])
def test_the_policy_overrides_what_the_batch_says(policy, batch, status):
    assert _gradients(batch, input_grads=policy).status == status


def test_integer_inputs_never_require_grad_and_flags_are_fresh_per_call():
    subject = Subject(EagerImpl(), None, targets.mlp(), lambda size: {"x": differentiated_batch(size)[0],
                                                                      "ids": torch.arange(size)}, sum, input_grads="all")
    first, second = subject.batch(2), subject.batch(2)
    assert first.kwargs["x"].requires_grad and not first.kwargs["ids"].requires_grad
    assert first.kwargs["x"] is not second.kwargs["x"] and first.kwargs["x"].is_leaf


def test_an_unknown_policy_is_a_usage_error():
    with pytest.raises(UserInputError, match="input grads 'some'"):
        _gradients(data_batch, input_grads="some")
