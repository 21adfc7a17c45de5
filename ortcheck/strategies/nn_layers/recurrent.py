"""RNN, LSTM and GRU, and their one-step cells."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, example, floats, make
from .wrappers import Cell, Recurrent


@st.composite
def recurrent(draw, cls: type, bidirectional: bool = False):
    """1-2 layers, one direction or (``bidirectional``) both, batch first or not, from zeros or a drawn
    initial state."""
    n_in, hidden, layers = draw(SIDE), draw(SIDE), draw(st.integers(1, 2))
    batch_first = draw(st.booleans())
    batch, length = draw(BATCH), draw(SIDE)
    extra = dict(nonlinearity=draw(st.sampled_from(["tanh", "relu"]))) if cls is nn.RNN else {}
    rnn = make(cls, n_in, hidden, num_layers=layers, bias=draw(st.booleans()), batch_first=batch_first,
               bidirectional=bidirectional, **extra)
    x = floats(batch, length, n_in) if batch_first else floats(length, batch, n_in)
    state = [floats(layers * (2 if bidirectional else 1), batch, hidden)] if draw(st.booleans()) else []
    if state and cls is nn.LSTM:
        state *= 2
    return example(make(Recurrent, rnn), x, *state)


@st.composite
def cell(draw, cls: type):
    """One step of an RNNCell/GRUCell/LSTMCell, batched or not, from zeros or a drawn state."""
    n_in, hidden = draw(SIDE), draw(SIDE)
    batch = draw(st.lists(BATCH, max_size=1))
    extra = dict(nonlinearity=draw(st.sampled_from(["tanh", "relu"]))) if cls is nn.RNNCell else {}
    layer = make(Cell, make(cls, n_in, hidden, bias=draw(st.booleans()), **extra))
    state = [floats(*batch, hidden)] * ((2 if cls is nn.LSTMCell else 1) if draw(st.booleans()) else 0)
    return example(layer, floats(*batch, n_in), *state)
