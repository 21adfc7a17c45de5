"""Values a trace bakes into control flow become guards: a mixture of experts, as transformers
writes it, trains through the reference whatever its router picks, re-exporting when it picks
other experts (another count, or the same count of others) and only then."""
import pytest
import torch

from reference import ReferenceModule
from reference.export import data_guards
from reference.transitions.state_machine import DATA_CHANGED, REUSED, SIZE_READ_CHANGED

EXPERTS, WIDTH = 4, 4


class ExpertsByIndex(torch.nn.Module):
    """transformers 4.x: a ModuleList indexed by each expert hit (the index becomes a Python int)."""

    def __init__(self):
        super().__init__()
        self.experts = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(EXPERTS))

    def forward(self, x, top_k_index, top_k_weights):
        out = torch.zeros_like(x)
        mask = torch.nn.functional.one_hot(top_k_index, EXPERTS).permute(2, 1, 0)
        for expert in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero():
            slot, token = torch.where(mask[expert].squeeze(0))
            y = self.experts[expert](x[None, token].reshape(-1, WIDTH)) * top_k_weights[token, slot, None]
            out.index_add_(0, token, y)
        return out


class ExpertsAsTensor(torch.nn.Module):
    """transformers 5.x ("eager" experts): one weight tensor, each expert's slice gathered."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(EXPERTS, WIDTH, WIDTH) / 2)

    def forward(self, x, top_k_index, top_k_weights):
        out = torch.zeros_like(x)
        with torch.no_grad():
            mask = torch.nn.functional.one_hot(top_k_index, EXPERTS + 1).permute(2, 1, 0)
            hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert in hit:
            expert = expert[0]
            if expert == EXPERTS:
                continue
            slot, token = torch.where(mask[expert])
            y = torch.nn.functional.linear(x[token], self.weight[expert]) * top_k_weights[token, slot, None]
            out.index_add_(0, token, y)
        return out


class MoE(torch.nn.Module):
    def __init__(self, experts):
        super().__init__()
        torch.manual_seed(0)
        self.router = torch.nn.Linear(WIDTH, EXPERTS, bias=False)
        with torch.no_grad():
            self.router.weight.copy_(torch.eye(EXPERTS) * 4)  # token i-hot routes to expert i first
        self.experts = experts()

    def forward(self, x):
        weights, index = torch.topk(torch.softmax(self.router(x), dim=-1), 2, dim=-1)
        return self.experts(x, index, weights / weights.sum(-1, keepdim=True))


def tokens(*pairs, seed=0):
    """One token per pair (a, b) routed to experts a and b."""
    x = torch.randn(len(pairs), WIDTH, generator=torch.Generator().manual_seed(seed)) * 0.1
    for row, (a, b) in enumerate(pairs):
        x[row, a] += 1.0
        x[row, b] += 0.8
    return x


BATCHES = [tokens((0, 1), (1, 0)),
           tokens((0, 1), (0, 1), seed=1),      # the same experts
           tokens((2, 3), (3, 2)),              # as many experts, other ones
           tokens((0, 1), (2, 3), (1, 2)),      # more experts
           tokens((0, 2), (2, 0))]              # fewer (not one token: a batch of one re-exports for its size 1)
# Per batch, (exports so far, reason): the 4.x form bakes which experts, the 5.x form only how many.
EXPECTED = {
    ExpertsByIndex: [(1, "first forward"), (1, REUSED), (2, DATA_CHANGED), (3, DATA_CHANGED), (4, DATA_CHANGED)],
    ExpertsAsTensor: [(1, "first forward"), (1, REUSED), (1, REUSED), (2, DATA_CHANGED), (3, DATA_CHANGED)],
}


@pytest.mark.parametrize("experts", [ExpertsByIndex, ExpertsAsTensor])
def test_a_mixture_of_experts_trains_whatever_its_router_picks(experts):
    eager = MoE(experts)
    wrapped = ReferenceModule(MoE(experts))
    for batch, (exports, reason) in zip(BATCHES, EXPECTED[experts]):
        x, x_eager = (batch.detach().clone().requires_grad_() for _ in range(2))
        out, expected = wrapped(x), eager(x_eager)
        torch.testing.assert_close(out, expected)
        out.pow(2).sum().backward()
        expected.pow(2).sum().backward()
        torch.testing.assert_close(x.grad, x_eager.grad)
        for (name, p), q in zip(wrapped.named_parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=name)
        counters = wrapped.counters()
        assert (counters.exports, counters.last_reason) == (exports, reason)


def test_the_guards_graph_reads_the_router_not_the_experts():
    wrapped = ReferenceModule(MoE(ExpertsAsTensor))
    wrapped(tokens((0, 1), (2, 3)))
    compiled = wrapped._compiled[True]
    model = data_guards.guard_model(compiled.exported.model, compiled.exported.guard_names)
    read = {value.name for value in model.graph.input}
    assert [value.name for value in model.graph.output] == list(compiled.exported.guard_names)
    names = dict(zip(compiled.exported.state_names, compiled.exported.state_keys))
    assert {names[name] for name in read if name in names} == {"router.weight"}


class SizeBranch(torch.nn.Module):
    """Branches on a size (``if x.shape[0] > 2``): the trace bakes in the branch it took."""

    def forward(self, x):
        return x * 2 if x.shape[0] > 2 else x * 3


class SizeLoop(torch.nn.Module):
    """Loops over the rows (``range(x.shape[0])``): the trace holds one step per traced row."""

    def forward(self, x):
        return torch.stack([x[i] * (i + 1) for i in range(x.shape[0])])


@pytest.mark.parametrize("module, sizes, exports", [
    (SizeBranch(), (4, 5, 3, 2, 1, 2), [1, 1, 1, 2, 3, 4]),  # 1: its axes of size 1 changed first
    (SizeLoop(), (2, 2, 3, 5, 3), [1, 1, 2, 3, 4]),
])
def test_a_size_read_into_python_is_a_guard(module, sizes, exports):
    """The graph re-exports where the Python that read a size would go another way, and only then."""
    wrapped = ReferenceModule(module)
    seen = []
    for call, size in enumerate(sizes):
        x = torch.randn(size, 2)
        torch.testing.assert_close(wrapped(x), module(x))
        seen.append(wrapped.counters().exports)
        if call and seen[-1] > seen[-2] and 1 not in sizes[call - 1:call + 1]:
            assert wrapped.counters().last_reason == SIZE_READ_CHANGED
    assert seen == exports
    assert set(wrapped._compiled[True].exported.guard_kinds) == {data_guards.SIZE}


def test_guards_on_sizes_alone_run_only_when_the_sizes_change(monkeypatch):
    wrapped = ReferenceModule(SizeBranch())
    wrapped(torch.randn(4, 2))
    session = wrapped._compiled[True].guard_session
    runs = []
    monkeypatch.setattr(session, "run", lambda feeds, run=session.run: runs.append(1) or run(feeds))
    for size in (4, 4, 5, 5, 4):
        wrapped(torch.randn(size, 2))
    assert len(runs) == 2 and wrapped.counters().exports == 1


class SizeOfNonzero(torch.nn.Module):
    """A size of ``nonzero()``'s result follows values, not the input's sizes."""

    def forward(self, x):
        return x * 2 if x.nonzero().shape[0] > 2 else x * 3


def test_a_size_computed_from_values_is_a_value_guard():
    wrapped = ReferenceModule(SizeOfNonzero())
    for row in ([1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]):
        x = torch.tensor(row)
        torch.testing.assert_close(wrapped(x), SizeOfNonzero()(x))
    assert wrapped._compiled[True].exported.guard_kinds == (data_guards.VALUE,)
    assert wrapped.counters().exports == 2 and wrapped.counters().last_reason == REUSED


class InstanceNorm(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.instance_norm(x)


@pytest.mark.parametrize("norm", [torch.nn.BatchNorm1d(3), InstanceNorm()], ids=["batch", "instance"])
def test_a_norms_check_against_a_batch_of_one_is_no_guard(norm):
    """The norms refuse a batch (or plane) of 1 in Python; the graph's key (its axes of size 1) covers it."""
    wrapped = ReferenceModule(norm)
    wrapped(torch.randn(4, 3, 2))
    assert wrapped._compiled[True].exported.guard_values == ()


def test_a_cumulative_batch_norms_counter_is_no_guard():
    """``BatchNorm(momentum=None)`` reads ``float(num_batches_tracked)``, which the graph takes
    from the traced buffer instead (reference.export.norms): no guard, no re-export per step."""
    wrapped = ReferenceModule(torch.nn.BatchNorm1d(3, momentum=None))
    for _ in range(3):
        wrapped(torch.randn(4, 3))
    assert wrapped._compiled[True].exported.guard_values == () and wrapped.counters().exports == 1
