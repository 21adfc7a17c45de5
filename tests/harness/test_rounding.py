"""The oracle's sampled rounding (ortcheck.checks.rounding): it must see a cancellation's terms, in the
precision eager computes in, and leave the module's structure alone."""
import math

import pytest
import torch

from ortcheck.checks.rounding import (parameter_precision, precision, relative_offset, relatively_moved,
                                      with_rounding)
from ortcheck.checks.runs import module_runs
from ortcheck.checks.runs import to_float64

EPS32, EPS64 = torch.finfo(torch.float32).eps, torch.finfo(torch.float64).eps


class Cancel(torch.nn.Module):
    """sum(3x) - sum(3x) + x[0]/1000: a result of 0.05 left from terms of 9600."""

    def forward(self, x):
        return (x * 3).sum() - (x * 3).sum() + x[0] * 1e-3


def test_a_cancelling_sum_moves_by_the_size_of_its_terms_not_of_its_result():
    """Eager float32 is exact here by luck (both sums are the same computation); a pipeline summing the
    second another way is off by 2 ulp of 9600 = 2e-3, and the sample must be of that size."""
    x = torch.full((64,), 50.0)
    exact = Cancel()(x.double()).item()
    moved = with_rounding(Cancel(), seed=0)(to_float64(x)).item()
    terms = (3 * x).abs().sum().item()
    assert abs(exact - 0.05) < 1e-12 and Cancel()(x).item() == torch.tensor(0.05).item()
    for seed in range(8):  # continuous: never the lucky 0 of a float32 +-1 ulp sample
        moved = with_rounding(Cancel(), seed=seed)(to_float64(x)).item()
        assert EPS32 * terms / 1000 < abs(moved - exact) < EPS32 * terms


class IdenticalTokens(torch.nn.Module):
    """Attention over identical tokens: every key and value row the same, so the loss ignores the
    query and its gradient is 0 in exact arithmetic, whatever the operands (no nudge changes that);
    float32 leaves eps * |g| of the (log-)softmax backward's ``g - sum(...)`` in it."""

    def __init__(self, normalize):
        super().__init__()
        self.normalize = normalize
        self.register_buffer("keys", torch.full((5, 4), 0.5))
        self.register_buffer("values", torch.full((5, 4), 2.0))

    def forward(self, query):
        return (self.normalize(query @ self.keys.T) @ self.values).sum()


@pytest.mark.parametrize("normalize", [lambda s: torch.softmax(s, dim=-1), lambda s: s.softmax(-1),
                                       lambda s: torch.nn.functional.log_softmax(s, -1)],
                         ids=["torch.softmax", "Tensor.softmax", "F.log_softmax"])
def test_a_cancellation_inside_softmax_backward_is_sampled_step_by_step(normalize):
    """The symmetry no operand nudge breaks (a random seed drew tokens [2, 2, 2]: a reference query
    gradient of 1e-9 against a bound of 7e-15). What cancels per query element is the value rows' sum
    (8) times a key (0.5); the sampled run must move by a fraction of eps of that, every seed."""
    query = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    terms = 4.0

    def query_grad(module, x):
        x = x.detach().clone().requires_grad_()
        module(x).backward()
        return x.grad.abs().max().item()

    assert query_grad(IdenticalTokens(normalize).double(), query.double()) < 64 * EPS64
    for seed in range(8):
        sampled = query_grad(with_rounding(IdenticalTokens(normalize).double(), seed, computed_in={torch.float32}),
                             to_float64(query))
        assert EPS32 * terms / 64 < sampled < EPS32 * terms * 64


class AttentionOverRepeatedMemory(torch.nn.Module):
    """Cross-attention whose two memory rows are equal (nn.Transformer with d_model 2: a LayerNorm row
    over two features is +-w, so rows repeat half the time): the query side's gradient is 0 exactly."""

    def __init__(self, attend):
        super().__init__()
        self.attend = attend
        self.register_buffer("memory", torch.tensor([[[0.5, -1.5], [0.5, -1.5]]]))

    def forward(self, query):
        return (self.attend(query, self.memory) * torch.tensor([1.0, 3.0], dtype=query.dtype)).sum()


def _multihead(query, memory):
    """Both of nn.MultiheadAttention's paths: scaled_dot_product_attention, and its own softmax (with
    weights), under a -inf mask as torch's Transformer masks are."""
    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(2, 1, batch_first=True, bias=False).to(query.dtype)
    mask = torch.tensor([[0.0, -math.inf], [0.0, 0.0], [0.0, 0.0]], dtype=query.dtype)
    return attention(query, memory, memory, need_weights=False)[0] + attention(query, memory, memory, attn_mask=mask)[0]


def _scaled_dot_product(query, memory):
    return torch.nn.functional.scaled_dot_product_attention(query, memory * 0.7, memory * 1.3)


@pytest.mark.parametrize("attend", [_multihead, _scaled_dot_product], ids=["nn.MultiheadAttention", "F.sdpa"])
def test_fused_attention_is_sampled_op_by_op(attend):
    """A random seed drew the case above in nn.Transformer (a reference gradient of 2e-12 against a bound
    of 5e-13, the sampled run exactly the float64 one): attention's softmax sits inside one torch call
    (F.multi_head_attention_forward, scaled_dot_product_attention), which the sampling now opens.
    A -inf mask added inside stays -inf (its offset was inf - inf = NaN)."""
    query = torch.randn(1, 3, 2, generator=torch.Generator().manual_seed(1))

    def query_grad(module, x):
        x = x.detach().clone().requires_grad_()
        value = module(x)
        value.backward()
        assert torch.isfinite(value)
        return x.grad.abs().max().item()

    assert query_grad(AttentionOverRepeatedMemory(attend).double(), query.double()) < 64 * EPS64
    distinct = AttentionOverRepeatedMemory(attend).double()
    distinct.memory = torch.tensor([[[0.5, -1.5], [-0.5, 1.5]]], dtype=torch.float64)
    terms = query_grad(distinct, query.double())  # the size of what cancels
    for seed in range(4):
        sampled = query_grad(with_rounding(AttentionOverRepeatedMemory(attend).double(), seed,
                                           computed_in={torch.float32}), to_float64(query))
        assert EPS32 * terms / 64 < sampled < EPS32 * terms * 64


def test_a_float64_computation_is_moved_by_float64_roundings_only():
    """A float64 finding (an error of 1e-9 where float64 eager is exact to 1e-16) stays a finding."""
    x = torch.randn(8, 8, dtype=torch.float64)
    layer = torch.nn.Linear(8, 8).double()
    exact, moved = layer(x), with_rounding(layer, seed=1, computed_in={torch.float64})(to_float64(x))
    relative = ((moved - exact).abs() / exact.abs()).max().item()
    assert 0 < relative < 64 * EPS64


def test_the_precision_is_eagers_coarsest_and_none_without_floats():
    assert precision([torch.float64, torch.float32]) == EPS32
    assert precision([torch.bfloat16]) == EPS32 and precision([torch.float64]) == EPS64
    assert precision([torch.int64]) == 0.0
    x = torch.full((4,), 50.0, dtype=torch.float64)  # no origin marked, no floating parameter: exact
    assert with_rounding(Cancel(), seed=0)(x).item() == Cancel()(x).item()


def test_half_parameters_count_as_their_own_precision_half_buffers_and_inputs_as_float32():
    assert parameter_precision([torch.bfloat16, torch.float32]) == torch.finfo(torch.bfloat16).eps
    assert parameter_precision([torch.float16]) == torch.finfo(torch.float16).eps
    assert parameter_precision([]) == 0.0
    x = torch.full((1, 8), 1.0)

    def spread(module):  # how far the sampled run of `module` moves a product from the exact one
        runs = module_runs(module, module, seed=5)
        exact = runs["exact"](x.double())
        return (runs["nudged_exact"](x.double()) - exact).abs().max().item() / exact.abs().max().item()

    held = torch.nn.Linear(8, 8).to(torch.bfloat16)
    assert spread(held) > 16 * EPS32  # bfloat16's eps is 2**16 float32's: sampled at bfloat16's
    float32_with_half_buffer = torch.nn.Linear(8, 8)
    float32_with_half_buffer.register_buffer("mask", torch.ones(8, dtype=torch.bfloat16))
    assert spread(float32_with_half_buffer) < 64 * EPS32


def test_gradients_through_the_module_are_moved_too():
    x = to_float64(torch.randn(8, 8, requires_grad=True))
    layer = torch.nn.Linear(8, 8).double()
    (layer(x) * 2).sum().backward()
    exact = x.grad.clone()
    x.grad = None
    (with_rounding(layer, seed=2, computed_in={torch.float32})(x) * 2).sum().backward()
    relative = ((x.grad - exact).abs() / exact.abs()).max().item()
    assert 0 < relative < 64 * EPS32


def test_values_the_factor_would_overflow_stay_where_they_are():
    values = torch.tensor([torch.finfo(torch.float64).min, torch.finfo(torch.float64).max, 0.0, 1.0],
                          dtype=torch.float64)
    moved = relatively_moved(values, EPS32, torch.Generator().manual_seed(0))
    assert torch.isfinite(moved).all() and moved[2] == 0 and 0 < abs(moved[3] - 1) <= EPS32 / 2


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("eps", [EPS64, EPS32, torch.finfo(torch.bfloat16).eps])
def test_the_factor_and_the_offset_are_their_definitions_bit_for_bit(dtype, eps):
    """relatively_moved is ``tensor * (1 + u·eps/2)`` (u = 2r - 1) where that is finite, whatever form
    computes it; relative_offset is that minus ``tensor``, 0 where it is not finite."""
    values = torch.randn(257, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 1e3
    values[:5] = torch.tensor([math.inf, -math.inf, math.nan, -0.0, 1e-310])
    values = values.to(dtype)
    u = torch.rand(values.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64).mul(2).sub(1)
    defined = values * (1 + u.mul(eps / 2).to(dtype))
    defined = torch.where(torch.isfinite(defined), defined, values)
    moved = relatively_moved(values, eps, torch.Generator().manual_seed(3))
    offset = relative_offset(values, eps, torch.Generator().manual_seed(3))
    assert torch.equal(moved.view(torch.int8), defined.view(torch.int8))  # NaN where NaN, -0.0 where -0.0
    assert torch.equal(offset.view(torch.int8), (defined - values).nan_to_num(nan=0.0).view(torch.int8))


def test_aliases_and_in_place_buffers_keep_their_identity():
    norm = with_rounding(torch.nn.BatchNorm1d(3).double(), seed=3, computed_in={torch.float32})
    before = norm.running_mean
    norm(torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) + 5)
    assert norm.running_mean is before and (before > 0.4).all()
    x = to_float64(torch.randn(2, 3))
    assert torch.equal(with_rounding(torch.nn.Flatten(0), seed=4)(x), x.reshape(-1))


def test_switched_off_it_is_the_module_itself(monkeypatch):
    monkeypatch.setenv("ORTCHECK_ORACLE_ROUNDING", "0")
    x = to_float64(torch.full((64,), 50.0))
    assert with_rounding(Cancel(), seed=0)(x).item() == Cancel()(x).item()
