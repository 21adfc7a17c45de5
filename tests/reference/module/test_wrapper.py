"""ReferenceModule as a drop-in for the wrapped module: pass-through, modes, fallback policy."""
import contextlib
import copy
import warnings

import pytest
import torch

from reference import Options
from reference.autodiff import UnsupportedOpError
from reference.module import ReferenceModule


class WithAtan(torch.nn.Module):
    """Atan has no gradient rule: the gradient build must fail and name it."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.note = "kept"

    def forward(self, x):
        return torch.atan(self.linear(x))


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 2))


def test_state_dict_parameters_and_attributes_pass_through():
    module = WithAtan()
    wrapped = ReferenceModule(module)
    assert list(wrapped.state_dict()) == list(module.state_dict())
    assert [n for n, _ in wrapped.named_parameters()] == [n for n, _ in module.named_parameters()]
    assert wrapped.note == "kept" and wrapped.linear is module.linear
    wrapped.load_state_dict({k: torch.zeros_like(v) for k, v in module.state_dict().items()})
    assert torch.count_nonzero(module.linear.weight) == 0


def test_state_dict_inside_a_parent_uses_the_wrapped_modules_keys():
    """A parent's load_state_dict walks the tree past the wrapper's own: hooks keep eager's keys."""
    def parent(seed):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sequential(mlp()))

    eager, wrapped = parent(0), parent(1)
    wrapped[1][0] = ReferenceModule(wrapped[1][0])
    assert list(wrapped.state_dict()) == list(eager.state_dict())
    assert not wrapped.load_state_dict(eager.state_dict()).missing_keys
    assert all(torch.equal(a, b) for a, b in zip(wrapped.state_dict().values(), eager.state_dict().values()))
    partial = {key: value for key, value in eager.state_dict().items() if key != "1.0.2.bias"}
    assert wrapped.load_state_dict({**partial, "1.0.extra": torch.zeros(1)}, strict=False) == (["1.0.2.bias"],
                                                                                              ["1.0.extra"])


def test_eval_mode_reexports_without_dropout_and_matches_eager():
    module = mlp()
    wrapped = ReferenceModule(copy.deepcopy(module))
    x = torch.randn(5, 3)
    wrapped.train()
    wrapped(x)
    wrapped.eval()
    module.eval()
    torch.testing.assert_close(wrapped(x), module(x))
    observed = wrapped.counters()
    assert (observed.exports, observed.last_reason) == (2, "train/eval mode changed")
    assert not wrapped.module.training


def test_unsupported_op_raises_naming_op_and_node_when_fallback_disabled():
    wrapped = ReferenceModule(WithAtan(), Options(fallback="disable"))
    with pytest.raises(UnsupportedOpError, match=r"Atan.*node"):
        wrapped(torch.randn(2, 3, requires_grad=True))


def test_auto_fallback_warns_counts_and_matches_eager():
    module = WithAtan()
    wrapped = ReferenceModule(copy.deepcopy(module), Options(fallback="auto"))
    x = torch.randn(2, 3, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="falls back to eager.*Atan"):
        out = wrapped(x)
    torch.testing.assert_close(out, module(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once, then stays in eager quietly
        wrapped(x)
    assert wrapped.counters().fallbacks == 1


def test_unknown_fallback_policy_is_rejected():
    with pytest.raises(ValueError, match="valid: disable, auto"):
        Options(fallback="sometimes")


def test_wrapper_starts_in_the_wrapped_modules_mode():
    module = mlp().eval()
    wrapped = ReferenceModule(module)
    assert not wrapped.training
    x = torch.randn(4, 3)
    torch.testing.assert_close(wrapped(x), module(x))


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.scale = 1.0
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.counting = False

    def forward(self, x):
        if self.counting:
            self.calls += 1
        return self.linear(x) * self.scale


def test_a_change_past_the_wrapper_re_exports_and_takes_effect():
    module, x = Scaled(), torch.randn(4, 3)
    wrapped = ReferenceModule(module)
    wrapped(x)
    module.scale = 2.0                      # on the module the user holds, not through the wrapper
    torch.testing.assert_close(wrapped(x), module.linear(x) * 2.0)
    assert wrapped.counters().exports == 2 and wrapped.counters().last_reason == "module attribute changed"
    module.linear = torch.nn.Linear(3, 2)   # a replaced submodule
    torch.testing.assert_close(wrapped(x), module.linear(x) * 2.0)
    wrapped(x)
    assert wrapped.counters().exports == 3   # an unchanged tree reuses the graph


def test_buffers_written_in_forward_are_written_back_after_every_call():
    module = Scaled()
    module.counting = True
    wrapped = ReferenceModule(module)
    for call in range(1, 4):
        with torch.no_grad() if call == 2 else contextlib.nullcontext():
            wrapped(torch.randn(4, 3))
        assert module.calls.item() == call
    assert wrapped.counters().exports == 1  # the buffer keeps its object: the graph is reused


class Smoothed(torch.nn.Module):
    """Adds an EMA of its input's (detached) batch mean: the input gradient is the identity's."""

    def __init__(self):
        super().__init__()
        self.register_buffer("ema", torch.zeros(3))

    def forward(self, x):
        self.ema.mul_(0.5).add_(0.5 * x.detach().mean(0))
        return x + self.ema


def test_a_buffer_written_from_a_detached_value_gives_eagers_values_and_gradients():
    eager, wrapped = Smoothed(), ReferenceModule(Smoothed())
    for _ in range(2):
        x = torch.randn(4, 3)
        inputs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
        outputs = [eager(inputs[0]), wrapped(inputs[1])]
        for out in outputs:
            (out * torch.arange(12.0).reshape(4, 3)).sum().backward()
        torch.testing.assert_close(outputs[1], outputs[0])
        torch.testing.assert_close(inputs[1].grad, inputs[0].grad)
        torch.testing.assert_close(wrapped.module.ema, eager.ema)


class DirectBatchNorm(torch.nn.Module):
    """``torch.batch_norm`` writes the running statistics inside its kernel, unseen by the trace."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(2))
        self.register_buffer("var", torch.ones(2))

    def forward(self, x):
        return torch.batch_norm(x, torch.ones(2), torch.zeros(2), self.mean, self.var, True, 0.1, 1e-5, False)


def test_buffer_writes_the_trace_cannot_see_are_refused_by_name_and_left_as_they_were():
    from reference.export import ExportError

    module = DirectBatchNorm()
    with pytest.raises(ExportError, match="writes buffer.*mean, var.*trace cannot see"):
        ReferenceModule(module)(torch.randn(4, 2))
    assert module.mean.eq(0).all() and module.var.eq(1).all()


@pytest.mark.parametrize("kind", ["forward_pre", "forward", "full_backward"])
def test_hooks_inside_the_wrapped_tree_are_refused_by_name(kind):
    from reference.module.wrapper import UnsupportedHookError

    module = Scaled()
    getattr(module.linear, f"register_{kind}_hook")(lambda *args: None)
    with pytest.raises(UnsupportedHookError, match=r"hook on Linear 'linear'"):
        ReferenceModule(module)(torch.randn(4, 3))


class RecordsItsOwnOutputs(Scaled):
    """Installs a hook on its own submodule in its first forward, as transformers captures router logits."""

    def forward(self, x):
        if not self.linear._forward_hooks:
            self.linear.register_forward_hook(lambda module, args, out: setattr(self, "seen", out))
        y = super().forward(x)
        return y, self.seen


def test_hooks_the_module_installs_on_itself_while_traced_are_kept_and_the_users_refused():
    from reference.module.wrapper import UnsupportedHookError

    module, x = RecordsItsOwnOutputs(), torch.randn(4, 3)
    wrapped = ReferenceModule(copy.deepcopy(module))
    for _ in range(2):
        for got, expected in zip(wrapped(x), module(x)):
            torch.testing.assert_close(got, expected)
    wrapped.module.linear.register_forward_pre_hook(lambda *args: None)
    with pytest.raises(UnsupportedHookError, match=r"forward pre-hook on Linear 'linear'"):
        wrapped(x)


def test_copies_leave_the_sessions_behind_and_export_again():
    import pickle

    wrapped, x = ReferenceModule(Scaled()), torch.randn(4, 3)
    expected = wrapped(x)
    for copied in (copy.deepcopy(wrapped), pickle.loads(pickle.dumps(wrapped))):
        torch.testing.assert_close(copied(x), expected)
        assert copied.counters().exports == 2 and copied.module is not wrapped.module
