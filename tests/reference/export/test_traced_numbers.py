"""Python numbers a module computes from its input's sizes come back as Python values that follow
every new size; other Python outputs re-export at new sizes; a float from sizes is refused."""
import pytest
import torch

from reference import Options
from reference.export import ExportError
from reference.module import ReferenceModule
from reference.transitions.state_machine import SIZES_CHANGED


class Returns(torch.nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor(2.0))
        self.extra = extra

    def forward(self, x):
        return x * self.weight, self.extra(x)


def _calls(extra, rows=(2, 3, 2)):
    wrapped = ReferenceModule(Returns(extra), Options(fallback="disable"))
    results = [wrapped(torch.ones(n, 4))[1] for n in rows]
    return results, wrapped.counters()


def test_sizes_and_integers_from_them_follow_each_size_without_a_re_export():
    results, counters = _calls(lambda x: (x.shape[0], x.shape, x.shape[0] * x.shape[1] // 3 - 1))
    assert results == [(2, torch.Size([2, 4]), 1), (3, torch.Size([3, 4]), 3), (2, torch.Size([2, 4]), 1)]
    assert all(type(r[0]) is int and type(r[1]) is torch.Size and type(r[2]) is int for r in results)
    assert counters.exports == 1


def test_a_string_from_the_sizes_re_exports_at_each_new_size():
    results, counters = _calls(lambda x: f"batch{x.shape[0]}")
    assert results == ["batch2", "batch3", "batch2"]
    assert counters.exports == 3 and counters.last_reason == SIZES_CHANGED


def test_a_users_integer_tensors_stay_tensors():
    results, _ = _calls(lambda x: (torch.tensor(3), x.sum().long(), torch.ones((), dtype=torch.int64) * x.shape[0]))
    for constant, total, product in results:
        assert type(constant) is torch.Tensor and type(total) is torch.Tensor and type(product) is torch.Tensor


def test_a_float_from_the_sizes_is_refused_by_name():
    with pytest.raises(ExportError, match="Python float computed from input sizes"):
        _calls(lambda x: x.shape[0] / 2)
