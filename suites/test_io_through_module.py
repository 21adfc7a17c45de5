"""Property: nested positional and keyword inputs pass through a wrapped module as through eager.

Checks: nested positional/keyword inputs and nested outputs pass through a wrapped module as through eager,
gradients included, per feature as above; Python outputs computed from the input (`f"batch{x.shape[0]}"`,
`x.shape[0]`, `x.shape`) follow it over batch sizes 2, 3, 2, 5, in train and eval

The module returns its inputs' structure with every float tensor scaled by a parameter (so
gradients flow to inputs and parameter), integer tensors shifted, bool tensors negated, and
constants returned as they came. Wrapped and eager must agree on structure and constants; values
and gradients pass the float64 oracle (``ortcheck.checks.oracle``). Python outputs the module
*computes* from its input (a name, a size, a shape) must follow that input from call to call.
"""
import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ortcheck.checks import RUNS, assert_matches_oracle, input_runs, module_runs
from ortcheck.nested import leaves, map_leaves
from ortcheck.impls import Capability
from ortcheck.profiles import scaled
from ortcheck.strategies import FEATURES, feature_exemplar, feature_structures, tensors

pytestmark = pytest.mark.requires(Capability.IO_THROUGH_MODULE)


class NestedEcho(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x, nested, *, extra=None):
        return {"x": self._through(x), "nested": map_leaves(nested, self._through), "extra": map_leaves(extra, self._through)}

    def _through(self, leaf):
        if not isinstance(leaf, torch.Tensor):
            return leaf
        if leaf.dtype.is_floating_point:  # half leaves computed in float32; float64 ones (the oracle's twin) stay exact
            return (leaf.to(torch.promote_types(leaf.dtype, torch.float32)) * self.scale).to(leaf.dtype)
        return ~leaf if leaf.dtype == torch.bool else leaf + 1


class ShapeReport(torch.nn.Module):
    """Returns Python values computed from the input's sizes beside a tensor: a pipeline that froze
    them at export, and reuses the graph at new sizes, returns the first call's."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x):
        rows = x.shape[0]
        return {"y": x * self.scale, "name": f"batch{rows}", "rows": rows, "pairs": rows // 2, "shape": x.shape}


def _run(module, inputs):
    x, nested, extra = inputs
    outputs = module(x, nested, extra=extra)
    differentiable = [t for t in leaves(outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    loss = sum((t * (i + 1)).sum() for i, t in enumerate(differentiable))
    loss.backward()
    return outputs


def _grads(data):
    return map_leaves(data, lambda t: t.grad if isinstance(t, torch.Tensor) else None)


@pytest.mark.parametrize("feature", FEATURES)
def test_nested_io_through_module(impl, options, feature):
    # every kind of the feature, positional and keyword, before the draws
    _assert_through_module_matches_eager(impl, options, torch.ones(2, requires_grad=True), feature_exemplar(feature),
                                         feature_exemplar(feature))

    @scaled(0.5)
    @given(data=st.data(), x=tensors(dtypes=[torch.float32], requires_grad=True, allow_zero_size=False))
    def drawn(data, x):
        nested = data.draw(feature_structures(feature, max_depth=4), label="nested")
        extra = data.draw(feature_structures(feature, max_depth=3), label="extra")
        _assert_through_module_matches_eager(impl, options, x, nested, extra)

    drawn()


def test_distinct_key_paths_stay_distinct(impl, options):
    """{"a_b": t1, "a": {"b": t2}}: key paths that join to one name must still be two inputs."""
    nested = {"a_b": torch.ones(2, requires_grad=True), "a": {"b": torch.full((2,), 2.0, requires_grad=True)}}
    _assert_through_module_matches_eager(impl, options, torch.zeros(2, requires_grad=True), nested, None)


def _assert_through_module_matches_eager(impl, options, x, nested, extra):
    eager = NestedEcho().to(options.device)
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    inputs = input_runs((x, nested, extra), seed=1, device=options.device)

    assert_matches_oracle({run: _run(modules[run], inputs[run]) for run in RUNS}, path="output")
    assert_matches_oracle({run: _grads(inputs[run]) for run in RUNS}, path="input grad")
    assert_matches_oracle({run: modules[run].scale.grad for run in RUNS}, path="scale.grad")


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_python_outputs_follow_the_input(impl, options, mode):
    """Batch sizes 2, 3, 2, 5: after each call, outputs (Python values exactly) and gradients as eager's."""
    eager = ShapeReport().to(options.device).train(mode == "train")
    modules = module_runs(eager, impl.wrap(copy.deepcopy(eager), options))
    for call, rows in enumerate((2, 3, 2, 5)):
        x = torch.randn(rows, 3, generator=torch.Generator().manual_seed(call), requires_grad=True)
        inputs = input_runs((x, None, None), seed=call, device=options.device)
        outputs = {run: modules[run](inputs[run][0]) for run in RUNS}
        for run in RUNS:
            outputs[run]["y"].sum().backward()
        assert_matches_oracle(outputs, path=f"call {call} (batch {rows}) output")
        assert_matches_oracle({run: inputs[run][0].grad for run in RUNS}, path=f"call {call} (batch {rows}) input grad")
