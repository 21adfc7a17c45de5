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


@pytest.mark.parametrize("fn, mean, std", [
    (lambda s: torch.normal(0.5, s), 0.5, lambda s: s),
    (lambda m: torch.normal(m, 2.0), lambda m: m, 2.0),
    (lambda m: torch.normal(m, m + 1.0), lambda m: m, lambda m: m + 1.0),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normal_draws_every_element_in_the_operands_dtype(fn, mean, std, dtype):
    """A number mean once gave one draw shared by every element, in float64."""
    torch.manual_seed(0)
    x = torch.rand(400, 500, dtype=dtype, requires_grad=True)
    drawn = ReferenceModule(OneOp(fn))(x).detach()
    assert (drawn.dtype, drawn.shape) == (dtype, x.shape)
    mean, std = (v(x.detach()) if callable(v) else torch.full_like(x, v) for v in (mean, std))
    z = (drawn - mean) / std  # standard normal where the draws are right: 2e5 of them
    assert z.unique().numel() > z.numel() // 2
    assert abs(z.mean().item()) < 0.02 and abs(z.std().item() - 1) < 0.02


@pytest.mark.parametrize("dtype", [None, torch.float32, torch.float64])
def test_normal_of_a_size_is_in_the_dtype_asked(dtype):
    """torch's symbolic drew ``normal(0, 1, size)`` in float64 whatever the dtype."""
    fn = lambda x: x.detach() + torch.normal(0.0, 1.0, (2, 3), dtype=dtype)
    x = torch.rand(3, requires_grad=True)
    assert ReferenceModule(OneOp(fn))(x).dtype == fn(x).dtype


@pytest.mark.parametrize("fn, shapes", [
    (lambda c, a, b: torch.addmm(c, a, b, beta=0.6, alpha=0.2), [(2, 3), (2, 5), (5, 3)]),
    (lambda x: F.celu(x, 0.5) + F.celu(x * 0), [(3, 4)]),  # x * 0: the derivative at 0 is the negative side's
    (lambda x, mean, var, w, b: F.batch_norm(x * 40, mean, var, w, b, training=False), [(4, 3, 2), (3,), (3,), (3,), (3,)]),
])
def test_float64_is_computed_in_float64(fn, shapes):
    """Where ONNX holds float32 only (Gemm's alpha and beta, BatchNormalization's epsilon, Celu), the
    reference's float64 graphs were float32-accurate: 1e-8 relative off, the oracle's bound ~1e-14."""
    torch.manual_seed(0)
    inputs = [torch.rand(shape, dtype=torch.float64) + 0.1 for shape in shapes]
    inputs[0] = (inputs[0] - 0.6).requires_grad_()
    mine = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    expected, actual = fn(*inputs), ReferenceModule(OneOp(fn))(*mine)
    torch.testing.assert_close(actual, expected, rtol=1e-14, atol=1e-14)
    expected.sum().backward(), actual.sum().backward()
    torch.testing.assert_close(mine[0].grad, inputs[0].grad, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("fn", [
    lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    lambda x, y: torch.zero_(x.clone()) + y,
    lambda x, y: x.clone().zero_() * y,
])
def test_gradients_eager_gives_as_zeros_are_zeros(fn):
    """torch's exporter reached no input (a cast through int64, ConstantOfShape): None, not zeros.
    Finite dividends (the chain rule through x / y makes NaN of a zero gradient at inf: op_symbolics)."""
    x = torch.tensor([-7.5, -0.1, 0.0, 3.0, 2.0**70, -(2.0**70)], requires_grad=True)
    y = torch.full((6,), 2.0, requires_grad=True)
    mine = [t.detach().clone().requires_grad_() for t in (x, y)]
    expected, actual = fn(x, y), ReferenceModule(OneOp(fn))(*mine)
    torch.testing.assert_close(actual, expected, equal_nan=True)
    expected.sum().backward(), actual.sum().backward()
    for got, wanted in zip(mine, (x, y)):
        torch.testing.assert_close(got.grad, wanted.grad, equal_nan=True)


@pytest.mark.parametrize("fn", [
    lambda x: torch.native_layer_norm(x, (3,), None, None, 1e-5),
    lambda x: (x * 2, x.detach() + 1, torch.zeros(3), torch.norm(x, 0)),
])
def test_outputs_require_grad_as_eagers(fn):
    """An output that reads no input requiring grad but through a detach (native_layer_norm's mean and
    rstd, which eager does not differentiate) does not require grad; a count of non-zeros does (its
    gradient is none, in eager too)."""
    x = torch.randn(2, 3, requires_grad=True)
    flags = lambda outputs: [t.requires_grad for t in outputs]
    assert flags(ReferenceModule(OneOp(fn))(x)) == flags(fn(x))


@pytest.mark.parametrize("fn", [
    lambda m, s: torch.normal(m, s),
    lambda m, s: torch.normal(m, 2.0) * s,
    lambda m, s: torch.bernoulli(torch.sigmoid(m)) + s,
])
def test_draws_give_their_operands_eagers_zero_gradient(fn):
    """Eager's normal and bernoulli are not reparameterised: the operands get zeros (not the draw's
    noise, not none), and the output requires grad."""
    m, s = torch.randn(4, 5, requires_grad=True), (torch.rand(4, 5) + 0.5).requires_grad_()
    mine = [t.detach().clone().requires_grad_() for t in (m, s)]
    expected, actual = fn(m, s), ReferenceModule(OneOp(fn))(*mine)
    assert actual.requires_grad == expected.requires_grad
    expected.sum().backward(), actual.sum().backward()
    for got, wanted in zip(mine, (m, s)):
        assert (got.grad is None) == (wanted.grad is None)
        if wanted.grad is not None and not torch.equal(wanted.grad, torch.zeros_like(wanted.grad)):
            continue  # a real gradient (the product's): its value is random
        assert got.grad is None or torch.equal(got.grad, wanted.grad)
