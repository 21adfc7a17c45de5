"""``opinfo.cases`` gives op_db's own first samples, in order and with the same values, without
op_db's search of the stack for a unittest method (``inspect.stack()``: a fifth of an OpInfo test
under pytest), and leaves that search in place for everyone else."""
import inspect
import sys

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


def test_no_stack_is_searched_and_the_search_stays_for_others(monkeypatch):
    searches = []
    stack = inspect.stack
    monkeypatch.setattr(inspect, "stack", lambda *args, **kwargs: searches.append(1) or stack(*args, **kwargs))
    list(opinfo.cases("add", torch.float32, 3))
    assert searches == []
    common_utils = sys.modules["torch.testing._internal.common_utils"]
    assert common_utils.extract_test_fn.__name__ == "extract_test_fn"
    _first("add", 3)  # the control: op_db's iteration searches (torch 2.13: at its start and per sample)
    assert searches, "op_db's samples no longer search the stack: opinfo._no_test_lookup can go"
