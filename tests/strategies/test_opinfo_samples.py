"""``opinfo.cases`` gives op_db's own first samples, in order and with the same values, without
op_db's search of the stack for a unittest method (``inspect.stack()``: a fifth of an OpInfo test
under pytest) or the stacks ``torch.manual_seed`` formats for accelerators that never start, and
leaves both in place for everyone else."""
import copy
import inspect
import sys
import traceback

import pytest
import torch

from ortcheck.strategies import opinfo

OPS = ("add", "nn.functional.conv2d", "softmax", "cat", "linalg.svd")  # cat: tensors inside a list


def _first(op: str, count: int) -> list[tuple[torch.Tensor, ...]]:
    """op_db's first ``count`` samples of ``op`` as PyTorch's own tests iterate them."""
    info = opinfo.lookup(op)
    samples = info.sample_inputs("cpu", torch.float64, requires_grad=True)
    return [opinfo.case(op, info, sample).tensors for sample, _ in zip(samples, range(count))]


@pytest.mark.parametrize("op", OPS)
def test_cases_are_op_dbs_first_samples(op):
    torch.manual_seed(0)
    ours = [case.tensors for case in opinfo.cases(op, torch.float64, 3)]
    torch.manual_seed(0)
    theirs = _first(op, 3)
    assert len(ours) == len(theirs) == 3
    for mine, its in zip(ours, theirs):
        assert len(mine) == len(its)
        for a, b in zip(mine, its):
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


def _counted(monkeypatch, owner, name: str) -> list:
    """A list that grows by one at each call of ``owner.name`` (which still runs)."""
    calls, original = [], getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    return calls


def test_no_stack_is_searched_and_the_search_stays_for_others(monkeypatch):
    searches = _counted(monkeypatch, inspect, "stack")
    list(opinfo.cases("add", torch.float32, 3))
    assert searches == []
    common_utils = sys.modules["torch.testing._internal.common_utils"]
    assert common_utils.extract_test_fn.__name__ == "extract_test_fn"
    _first("add", 3)  # the control: op_db's iteration searches (torch 2.13: at its start and per sample)
    assert searches, "op_db's samples no longer search the stack: opinfo._no_test_lookup can go"


def test_no_stack_is_formatted_to_seed_accelerators_on_the_cpu(monkeypatch):
    formatted = _counted(monkeypatch, traceback, "format_stack")
    list(opinfo.cases("add", torch.float32, 3))
    assert formatted == []
    if torch.cuda.is_initialized():
        pytest.skip("CUDA has started: torch.manual_seed seeds it at once, formatting nothing")
    torch.manual_seed(0)  # the control: torch queues the seed for CUDA with the caller's stack
    assert formatted, "torch.manual_seed no longer formats a stack: opinfo._cpu_seeded can go"


def test_a_deep_copy_of_a_case_is_the_case():
    """The oracle's twins deep-copy the module calling a case; op_db's OpInfo must not be copied."""
    case = next(opinfo.cases("add", torch.float32, 1))
    module = case.module()
    twin = copy.deepcopy(module)
    assert twin is not module and twin.case is case
