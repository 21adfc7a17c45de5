"""Remembered exports (reference.export.remembered, reference.export.fingerprint): the same call gives the
graph and the random state a trace gives; anything a trace can read, changed, traces again."""
import functools
import threading

import pytest
import torch

from reference import nested_io
from reference.export import export_module, fingerprint, remembered
from reference.export.exporter import AUTOCAST_TRACED


class Net(torch.nn.Module):
    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.dropout = torch.nn.Dropout(0.5)
        self.scale = scale

    def forward(self, x, mode="plain"):
        y = self.dropout(self.linear(x)) * self.scale
        return y.relu() if mode == "relu" else y


def _call(module, *args, **kwargs):
    return nested_io.flatten((args, kwargs))


def _export(module, *args, training=True, **kwargs):
    tensors, schema = _call(module, *args, **kwargs)
    return export_module(module, tensors, schema, training=training)


@pytest.fixture(autouse=True)
def fresh():
    remembered.forget()
    remembered.stats.clear()
    yield
    remembered.forget()


def _graph(exported) -> bytes:
    return exported.model.SerializeToString(deterministic=True)


def test_the_same_call_is_remembered_with_the_graph_and_the_random_state_a_trace_leaves():
    module, x = Net(), torch.randn(4, 3)
    torch.manual_seed(7)
    traced = _export(module, x)
    state_after_trace = torch.random.get_rng_state()
    torch.manual_seed(7)
    again = _export(module, x)
    assert remembered.stats == {"traced": 1, "remembered": 1}
    assert _graph(again) == _graph(traced) and again.model is not traced.model
    assert torch.equal(torch.random.get_rng_state(), state_after_trace)
    assert not torch.equal(state_after_trace, torch.manual_seed(7).get_state()), "the trace drew no random number"
    again.model.graph.node.pop()  # a caller's edit reaches no other caller
    assert _graph(_export(module, x)) == _graph(traced)


def _nudged_weight(module):
    with torch.no_grad():
        module.linear.weight[0, 0] = torch.nextafter(module.linear.weight[0, 0], torch.tensor(1.0))


def _with_hook(module):
    module.linear.register_forward_hook(lambda *_: None)


CHANGES = {
    "a parameter by one ulp": lambda module, call: (_nudged_weight(module), call),
    "an attribute": lambda module, call: (setattr(module, "scale", 3.0), call),
    "a submodule's mode": lambda module, call: (module.dropout.eval(), call),
    "a hook": lambda module, call: (_with_hook(module), call),
    "an input value": lambda module, call: (None, {**call, "x": call["x"] + 1}),
    "an input dtype": lambda module, call: (module.double(), {**call, "x": call["x"].double()}),
    "an input's requires_grad": lambda module, call: (None, {**call, "x": call["x"].requires_grad_()}),
    "a constant input": lambda module, call: (None, {**call, "mode": "relu"}),
    "the random state": lambda module, call: (torch.manual_seed(8), call),
}


@pytest.mark.parametrize("change", CHANGES)
def test_each_thing_a_trace_reads_changed_traces_again(change):
    module, call = Net(), {"x": torch.randn(4, 3), "mode": "plain"}
    torch.manual_seed(7)
    _export(module, call["x"], mode=call["mode"])
    torch.manual_seed(7)
    _, call = CHANGES[change](module, call)
    _export(module, call["x"], mode=call["mode"])
    assert remembered.stats["traced"] == 2 and not remembered.stats["remembered"]


@pytest.mark.parametrize("state", ["training", "autocast", "default dtype"])
def test_the_training_flag_and_global_torch_state_are_part_of_the_call(state):
    module, x = torch.nn.Linear(3, 3).double(), torch.randn(2, 3, dtype=torch.float64)
    _export(module, x)
    if state == "training":
        _export(module, x, training=False)
    elif state == "autocast":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            _export(module, x)
    else:
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            _export(module, x)
        finally:
            torch.set_default_dtype(previous)
    assert remembered.stats["traced"] == 2 and not remembered.stats["remembered"]


def test_tied_weights_are_another_call_than_equal_ones():
    """One shared parameter is one graph input; two equal ones are two."""
    tied = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False))
    untied = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False))
    with torch.no_grad():
        untied[1].weight.copy_(tied[0].weight)
        untied[0].weight.copy_(tied[0].weight)
    tied[1].weight = tied[0].weight
    x = torch.randn(2, 3)
    assert fingerprint.of_call(tied, *_call(tied, x), True, 17) != fingerprint.of_call(untied, *_call(untied, x), True, 17)
    assert len(_export(tied, x).state_names) == 1 and len(_export(untied, x).state_names) == 2


class Applies(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


def test_a_function_attribute_counts_by_its_closure_values():
    def scaled_by(factor):
        return lambda y: y * factor

    x = torch.randn(2, 3)
    same = [fingerprint.of_call(m, *_call(m, x), True, 17) for m in (Applies(scaled_by(2.0)), Applies(scaled_by(2.0)))]
    other = fingerprint.of_call(Applies(scaled_by(3.0)), *_call(Applies(scaled_by(3.0)), x), True, 17)
    assert same[0] != same[1], "two lambdas are two functions"
    partials = [Applies(functools.partial(torch.mul, other=k)) for k in (2.0, 2.0, 3.0)]
    keys = [fingerprint.of_call(m, *_call(m, x), True, 17) for m in partials]
    assert keys[0] == keys[1] != keys[2]
    assert other != same[0]
    bound = [Applies(torch.full((3,), k).mul) for k in (2.0, 2.0, 3.0)]  # a C method bound to a tensor
    keys = [fingerprint.of_call(m, *_call(m, x), True, 17) for m in bound]
    assert keys[0] == keys[1] != keys[2]


class Counts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.linear(x)


def test_a_trace_that_changes_what_it_read_is_never_remembered():
    """Its forward counts its calls: every export runs it, as without remembering."""
    module, x = Counts(), torch.randn(2, 3)
    for _ in range(3):
        _export(module, x)
    assert module.calls == 3 and remembered.stats == {"traced": 3, "impure": 3}


def test_what_cannot_be_compared_by_value_is_traced_every_time():
    module, x = torch.nn.Linear(3, 3), torch.randn(2, 3)
    module.lock = threading.Lock()
    _export(module, x)
    _export(module, x)
    assert remembered.stats == {"not fingerprinted": 2}
    with pytest.raises(fingerprint.Unfingerprintable, match="_thread.lock"):
        fingerprint.of_call(module, *_call(module, x), True, 17)


def test_nothing_is_remembered_while_a_fault_is_injected():
    module, x = torch.nn.Linear(3, 3), torch.randn(4, 3)
    _export(module, x)
    with AUTOCAST_TRACED.overridden(False):
        _export(module, x)
    _export(module, x)
    assert remembered.stats == {"traced": 1, "not fingerprinted": 1, "remembered": 1}


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class CallsPython(torch.nn.Module):
    def forward(self, x):
        return Cube.apply(x) + 1


def test_a_graph_that_calls_python_is_traced_every_time():
    x = torch.randn(2, 3)
    _export(CallsPython(), x)
    _export(CallsPython(), x)
    assert remembered.stats == {"traced": 2, "impure": 2}


def test_the_least_recently_used_export_goes_first(monkeypatch):
    monkeypatch.setattr(remembered, "MAX_EXPORTS", 2)
    modules, x = [torch.nn.Linear(3, 3) for _ in range(3)], torch.randn(2, 3)
    for module in [*modules, modules[2], modules[0]]:
        _export(module, x)
    assert remembered.stats == {"traced": 4, "remembered": 1}


def test_the_graphs_kept_stay_within_the_byte_bound(monkeypatch):
    modules, x = [torch.nn.Linear(3, 3) for _ in range(3)], torch.randn(2, 3)
    one_graph = _export(modules[0], x).model.ByteSize()
    monkeypatch.setattr(remembered, "MAX_BYTES", 2 * one_graph)
    for module in [*modules[1:], modules[1], modules[0]]:  # m0 goes when m2 comes; m1 stays
        _export(module, x)
    assert remembered.stats == {"traced": 4, "remembered": 1}
    assert remembered.held() == (2, 2 * one_graph)


def test_a_remembered_call_keeps_no_closure_alive():
    """A function attribute's closure may hold a whole model's weights: the remembered fingerprint refers
    to the function weakly, so they go when their user drops them."""
    import gc
    import weakref

    def applying(weight):
        return lambda y: y @ weight

    module = Applies(applying(torch.randn(3, 3)))
    gone = weakref.ref(module.function.__closure__[0].cell_contents)
    _export(module, torch.randn(2, 3))
    del module
    gc.collect()
    assert gone() is None and remembered.stats == {"traced": 1}
