"""The reference's symbolics for ops torch's exporter gets silently wrong (found by OpInfo samples)."""
import pytest
import torch
import torch.nn.functional as F

from ortcheck.checks.one_op import OneOp
from reference import ReferenceModule
from reference.export.errors import ExportError


@pytest.mark.parametrize("fn, shape", [
    (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, divisor_override=5), (2, 3, 7, 6)),
    (lambda x: F.avg_pool3d(x, 2, divisor_override=3), (1, 2, 4, 4, 4)),
    (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), (2, 3, 7, 6)),
    (torch.log10, ()),
    (lambda x: torch.nan_to_num(x / x.detach().abs().clamp(max=1) * torch.tensor([0.0, 1.0, 1.0, 1.0]).log().exp()), (4,)),
])
def test_outputs_shapes_and_gradients_are_eagers(fn, shape):
    x = (torch.rand(shape) + 0.5).requires_grad_()  # float32: onnxruntime's CPU AveragePool has no float64 kernel
    mine = x.detach().clone().requires_grad_()
    expected, actual = fn(x), ReferenceModule(OneOp(fn))(mine)
    torch.testing.assert_close(actual, expected)
    expected.sum().backward(), actual.sum().backward()
    torch.testing.assert_close(mine.grad, x.grad)


@pytest.mark.parametrize("fn, named", [
    (lambda x: F.avg_pool2d(x, 3, ceil_mode=True, divisor_override=2), "avg_pool2d with divisor_override and ceil_mode"),
    (lambda x: torch.cdist(x, x, p=0), "cdist with p=0"),
])
def test_forms_torch_computes_wrongly_are_refused_by_name(fn, named):
    with pytest.raises(ExportError, match=named):
        ReferenceModule(OneOp(fn))(torch.rand(1, 2, 5, 5, requires_grad=True))
