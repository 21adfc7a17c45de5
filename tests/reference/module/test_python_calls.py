"""Custom autograd Functions without a symbolic run in torch between graph pieces
(reference.export.python_calls, reference.export.segments, reference.module.pieces).

float64 throughout: the pieces and eager compute the same ops, so values agree to rounding.
"""
import copy

import pytest
import torch

from reference import Options
from reference.export import ExportError
from reference.export.segments import CallPiece, GraphPiece
from reference.module import ReferenceModule

CALLS: list[tuple[str, tuple]] = []  # (what ran, needs_input_grad or None), appended by the Functions


class Cube(torch.autograd.Function):
    """x**3 * w with its own backward; records what ran and which gradients were asked for."""

    @staticmethod
    def forward(ctx, x, w, scale: float):
        CALLS.append(("forward", None))
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return x ** 3 * w * scale

    @staticmethod
    def backward(ctx, grad):
        CALLS.append(("backward", tuple(ctx.needs_input_grad)))
        x, w = ctx.saved_tensors
        dx = grad * 3 * x ** 2 * w * ctx.scale if ctx.needs_input_grad[0] else None
        dw = (grad * x ** 3 * ctx.scale).sum(0) if ctx.needs_input_grad[1] else None
        return dx, dw, None


class WithSymbolic(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2

    @staticmethod
    def symbolic(g, x):
        return g.op("Mul", x, g.op("Constant", value_t=torch.tensor(2.0, dtype=torch.float64)))


class Net(torch.nn.Module):
    """``layout``: 'chain' (one Function after another), 'side' (two on parallel branches),
    'edges' (a Function on the graph input and one making the output), 'constant' (a tensor made in
    forward passed in)."""

    def __init__(self, layout: str = "chain", frozen: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.layout = layout
        self.a, self.b = torch.nn.Linear(3, 3).double(), torch.nn.Linear(3, 3).double()
        self.w = torch.nn.Parameter(torch.rand(3, dtype=torch.float64) + 0.5, requires_grad=not frozen)
        self.scale = 0.5

    def forward(self, x):
        if self.layout == "edges":
            return Cube.apply(torch.tanh(self.a(Cube.apply(x, self.w, self.scale))), self.w, self.scale)
        h = torch.tanh(self.a(x))
        if self.layout == "side":
            return Cube.apply(h, self.w, self.scale) + self.b(Cube.apply(h * 2, self.w, 1.0))
        if self.layout == "constant":
            return self.b(Cube.apply(h, torch.full((3,), 0.75, dtype=torch.float64), self.scale))
        return self.b(Cube.apply(self.b(Cube.apply(h, self.w, self.scale)), self.w, self.scale))


def _step(module, x):
    x = x.detach().clone().requires_grad_()
    out = module(x)
    (out.sin().sum()).backward()
    return out, x.grad, {n: p.grad for n, p in module.named_parameters()}


def _assert_trains_like_eager(eager, wrapped, x):
    out_e, xg_e, grads_e = _step(eager, x)
    out_w, xg_w, grads_w = _step(wrapped, x)
    torch.testing.assert_close(out_w, out_e, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(xg_w, xg_e, rtol=1e-12, atol=1e-12)
    assert grads_w.keys() == grads_e.keys()
    for name, grad in grads_e.items():
        if grad is None:
            assert grads_w[name] is None, name
        else:
            torch.testing.assert_close(grads_w[name], grad, rtol=1e-12, atol=1e-12, msg=name)


@pytest.mark.parametrize("layout", ["chain", "side", "edges", "constant"])
def test_functions_train_like_eager_at_two_batch_sizes(layout):
    eager = Net(layout)
    wrapped = ReferenceModule(copy.deepcopy(eager), Options(fallback="disable"))
    for rows in (2, 5):
        _assert_trains_like_eager(eager, wrapped, torch.randn(rows, 3, dtype=torch.float64))
    assert wrapped.counters().exports == 1 and wrapped.counters().fallbacks == 0


@pytest.mark.parametrize("layout, graph_pieces, calls", [("chain", 3, 2), ("side", 2, 2), ("edges", 1, 2)])
def test_the_graph_is_cut_once_per_level_of_calls(layout, graph_pieces, calls):
    """Side by side calls share a cut; a chain of two needs two; empty pieces are left out."""
    wrapped = ReferenceModule(Net(layout), Options(fallback="disable"))
    wrapped(torch.randn(2, 3, dtype=torch.float64))
    pieces = wrapped._compiled[True].pieces
    assert sum(isinstance(p, GraphPiece) for p in pieces) == graph_pieces
    assert sum(isinstance(p, CallPiece) for p in pieces) == calls
    assert all(p.call.function is Cube for p in pieces if isinstance(p, CallPiece))


def test_the_function_itself_runs_forward_and_backward_and_sees_needs_input_grad():
    eager, wrapped = Net(frozen=True), ReferenceModule(Net(frozen=True), Options(fallback="disable"))
    for module in (eager, wrapped):
        module(torch.randn(2, 3, dtype=torch.float64))  # the export's trace may call forward too
        CALLS.clear()
        _step(module, torch.randn(2, 3, dtype=torch.float64))
        if module is eager:
            expected = list(CALLS)
    assert CALLS == expected == [("forward", None), ("forward", None),
                                 ("backward", (True, False, False)), ("backward", (True, False, False))]


def test_a_changed_non_tensor_argument_re_exports():
    eager = Net()
    wrapped = ReferenceModule(copy.deepcopy(eager), Options(fallback="disable"))
    x = torch.randn(2, 3, dtype=torch.float64)
    _assert_trains_like_eager(eager, wrapped, x)
    eager.scale = wrapped.scale = 2.0
    _assert_trains_like_eager(eager, wrapped, x)
    assert wrapped.counters().exports == 2


def test_eval_and_no_grad_run_the_pieces_without_gradients():
    eager = Net().eval()
    wrapped = ReferenceModule(copy.deepcopy(eager), Options(fallback="disable"))
    x = torch.randn(4, 3, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(wrapped(x), eager(x), rtol=1e-12, atol=1e-12)
        assert not wrapped(x).requires_grad


def test_a_function_with_its_own_symbolic_exports_through_it():
    class Doubled(torch.nn.Module):
        def forward(self, x):
            return WithSymbolic.apply(x).sum(-1)

    wrapped = ReferenceModule(Doubled(), Options(fallback="disable"))
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    wrapped(x).sum().backward()
    assert wrapped._compiled[True].pieces == []
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))


def test_the_memory_optimizer_refuses_a_graph_with_functions_by_name():
    wrapped = ReferenceModule(Net(), Options(fallback="disable", memory_opt_level=1))
    with pytest.raises(ExportError, match="memory optimizer.*Cube"):
        wrapped(torch.randn(2, 3, dtype=torch.float64))
