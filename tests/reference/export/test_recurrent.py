"""RNN, LSTM and GRU unrolled at export (reference/export/recurrent.py): float64, so the unrolled
cells and ATen's agree to rounding; every output, input, initial-state and parameter gradient."""
import copy
import itertools

import pytest
import torch

from reference import Options
from reference.export import ExportError
from reference.module import ReferenceModule
from reference.transitions.state_machine import LENGTH_CHANGED, REUSED

KINDS = {"rnn_tanh": (torch.nn.RNN, {}), "rnn_relu": (torch.nn.RNN, {"nonlinearity": "relu"}),
         "lstm": (torch.nn.LSTM, {}), "lstm_proj": (torch.nn.LSTM, {"proj_size": 2}), "gru": (torch.nn.GRU, {})}


def _state(cls, kw, layers, rows):
    """A drawn initial state (LSTM: (h0, c0)), shaped for batched input of ``rows`` (None: unbatched)."""
    lead = (layers,) if rows is None else (layers, rows)
    h0 = torch.randn(*lead, kw.get("proj_size") or 4, dtype=torch.float64)
    return (h0, torch.randn(*lead, 4, dtype=torch.float64)) if cls is torch.nn.LSTM else h0


def _leaves(value):
    return list(value) if isinstance(value, tuple) else [value]


def _run(module, x, state):
    x = x.clone().requires_grad_()
    state = None if state is None else tuple(t.clone().requires_grad_() for t in _leaves(state))
    args = [] if state is None else [state if len(state) == 2 else state[0]]
    out, final = module(x, *args)
    sum(t.sin().sum() for t in [out, *_leaves(final)]).backward()
    grads = [x.grad, *(() if state is None else (t.grad for t in state)), *(p.grad for p in module.parameters())]
    for p in module.parameters():
        p.grad = None
    return [out, *_leaves(final), *grads]


def all_pairs(combos: list[tuple]) -> list[tuple]:
    """The combos, in order, of a greedy covering array: every pair of values two axes take together
    in some combo is in one of them (a defect needing one axis value, or two together, shows there;
    one needing three may wait for the nightly run of the whole product)."""
    def pairs(combo):
        return {(i, combo[i], j, combo[j]) for i, j in itertools.combinations(range(len(combo)), 2)}

    uncovered, chosen = set().union(*map(pairs, combos)), set()
    while uncovered:
        best = max(combos, key=lambda combo: len(pairs(combo) & uncovered))  # the first of the best: deterministic
        chosen.add(best)
        uncovered -= pairs(best)
    return [combo for combo in combos if combo in chosen]


# 16 configurations of 32 (every value of each axis, both states with both layouts) for each kind: 80 exports
# of unrolled graphs at two lengths (134 s of a CI run); all pairs of values run each time, the product nightly
UNROLLED = [(*config, kind) for config in itertools.product((1, 2), (False, True), (False, True), (True, False), (False, True))
            if config[2] == config[4] for kind in KINDS]
PAIRS = all_pairs(UNROLLED)


def test_the_pairs_cover_every_two_values_and_save_most_of_the_product():
    assert len(PAIRS) <= len(UNROLLED) // 4
    for i, j in itertools.combinations(range(len(UNROLLED[0])), 2):
        assert {(c[i], c[j]) for c in PAIRS} == {(c[i], c[j]) for c in UNROLLED}


@pytest.mark.parametrize("layers, bidirectional, batch_first, bias, given_state, kind",
                         [c if c in PAIRS else pytest.param(*c, marks=pytest.mark.nightly) for c in UNROLLED])
def test_unrolled_matches_eager_at_two_lengths(kind, layers, bidirectional, batch_first, bias, given_state):
    cls, kw = KINDS[kind]
    torch.manual_seed(0)
    eager = cls(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias, **kw).double()
    wrapped = ReferenceModule(copy.deepcopy(eager), Options(fallback="disable"))
    directions = 2 if bidirectional else 1
    for length in (3, 5):
        x = torch.randn(*((2, length) if batch_first else (length, 2)), 3, dtype=torch.float64)
        state = _state(cls, kw, layers * directions, 2) if given_state else None
        for got, want in zip(_run(wrapped, x, state), _run(eager, x, state), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-11, atol=1e-12)
    counters = wrapped.counters()
    assert counters.exports == 2 and counters.last_reason == LENGTH_CHANGED  # one graph per traced length
    x = torch.randn(*((3, 5) if batch_first else (5, 3)), 3, dtype=torch.float64)  # another batch, the same length
    state = _state(cls, kw, layers * directions, 3) if given_state else None
    for got, want in zip(_run(wrapped, x, state), _run(eager, x, state), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-11, atol=1e-12)
    counters = wrapped.counters()
    assert counters.exports == 2 and counters.last_reason == REUSED  # keyed by the length alone


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_unbatched_input_and_the_graph_has_no_fused_recurrent_op(kind):
    cls, kw = KINDS[kind]
    torch.manual_seed(1)
    eager = cls(3, 4, **kw).double()
    wrapped = ReferenceModule(copy.deepcopy(eager), Options(fallback="disable"))
    x, state = torch.randn(4, 3, dtype=torch.float64), _state(cls, kw, 1, None)
    for got, want in zip(_run(wrapped, x, state), _run(eager, x, state), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-11, atol=1e-12)
    ops = {node.op_type for node in wrapped._compiled[True].exported.model.graph.node}
    assert not ops & {"RNN", "LSTM", "GRU"}, ops


def test_a_packed_sequence_is_refused_by_name():
    class Packed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(3, 4)

        def forward(self, x):
            packed = torch.nn.utils.rnn.pack_padded_sequence(x, [3, 2], enforce_sorted=True)
            return self.lstm(packed)[1][0]

    with pytest.raises(ExportError, match="PackedSequence"):
        ReferenceModule(Packed(), Options(fallback="disable"))(torch.randn(3, 2, 3))
