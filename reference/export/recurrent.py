"""RNN, LSTM and GRU traced as their cells unrolled over the traced length, in plain ops.

The exporter turns ``nn.RNN``/``LSTM``/``GRU`` into ONNX's fused ``RNN``/``LSTM``/``GRU`` ops, whose
gradient would need a loop over time that also recomputes every step's gates and cell states
(the fused ops return only the hidden states). Unrolled instead, each step is made of ops the
gradient builder already differentiates (MatMul, Add, Sigmoid, Tanh, Relu, Mul, Gather, Concat),
so input, weight, bias and initial-state gradients follow with no rule of their own, and a
recompute plan can see the cells. The price: the graph holds one cell per time step of the traced
input. Each length it unrolls over is kept as a guard (``lengths``, :mod:`reference.export.data_guards`
recomputes it before each call), so the graph is keyed by those lengths alone: another sequence
length re-exports ("the length a recurrence was unrolled over changed"), another batch size does not.

Each cell computes what ATen's CPU cells compute, gates in torch's order (LSTM i, f, g, o; GRU
r, z, n with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``), LSTM projections (``proj_size``)
included; between layers, dropout in training as ``nn.LSTM`` applies it. Packed sequences are
refused by name.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from reference.export.errors import ExportError


def _rnn_cell(nonlinearity):
    def cell(x, state, w_ih, w_hh, b_ih=None, b_hh=None):
        return nonlinearity(F.linear(x, w_ih, b_ih) + F.linear(state, w_hh, b_hh))
    return cell


def _lstm_cell(x, state, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
    h, c = state
    i, f, g, o = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    x_r, x_z, x_n = F.linear(x, w_ih, b_ih).chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


CELLS = {torch.rnn_tanh: _rnn_cell(torch.tanh), torch.rnn_relu: _rnn_cell(torch.relu),
         torch.lstm: _lstm_cell, torch.gru: _gru_cell}


def _run_direction(cell, steps, state, weights, reverse: bool):
    outputs = []
    for x in reversed(steps) if reverse else steps:
        state = cell(x, state, *weights)
        outputs.append(state[0] if isinstance(state, tuple) else state)
    return (outputs[::-1] if reverse else outputs), state


def unrolled(func, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``func`` (``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh``/``relu``) over ``x`` step by step."""
    cell, is_lstm = CELLS[func], func is torch.lstm
    directions = 2 if bidirectional else 1
    per_cell = len(params) // (num_layers * directions)
    unbatched = x.dim() == 2
    if unbatched:
        x = x.unsqueeze(1)
        hx = [h.unsqueeze(1) for h in hx] if is_lstm else hx.unsqueeze(1)
    if batch_first and not unbatched:
        x = x.transpose(0, 1)
    h0, c0 = (hx[0], hx[1]) if is_lstm else (hx, None)
    finals_h, finals_c = [], []
    for layer in range(num_layers):
        steps = list(x.unbind(0))
        outputs = []
        for direction in range(directions):
            k = layer * directions + direction
            weights = params[k * per_cell:(k + 1) * per_cell]
            if is_lstm:
                w_ih, w_hh, *rest = weights
                biases, w_hr = (rest[:2], rest[2:]) if has_biases else ([None, None], rest)
                weights = [w_ih, w_hh, *biases, *w_hr]
            state = (h0[k], c0[k]) if is_lstm else h0[k]
            out, state = _run_direction(cell, steps, state, weights, reverse=direction == 1)
            outputs.append(torch.stack(out))
            finals_h.append(state[0] if is_lstm else state)
            if is_lstm:
                finals_c.append(state[1])
        x = torch.cat(outputs, -1) if directions == 2 else outputs[0]
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    if batch_first and not unbatched:
        x = x.transpose(0, 1)
    h_n = torch.stack(finals_h)
    results = [x, h_n, torch.stack(finals_c)] if is_lstm else [x, h_n]
    return tuple(r.squeeze(1) for r in results) if unbatched else tuple(results)


class unrolled_recurrences(TorchFunctionMode):  # noqa: N801 - used as a context manager
    """Active while the reference traces; records, per recurrence it unrolls, its length as a traced
    one-element tensor (``lengths``: the graph computes it from the inputs, as a guard)."""

    def __init__(self):
        super().__init__()
        self.lengths: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in CELLS:
            return func(*args, **kwargs)
        packed = isinstance(args[1], torch.Tensor) and not args[1].is_floating_point()  # (data, batch_sizes, ...)
        if packed or len(args) != 9 or kwargs:
            raise ExportError(f"{func.__name__} over a PackedSequence is not supported by the reference pipeline: "
                              "pass padded tensors")
        x, batch_first = args[0], args[-1]
        time = 1 if batch_first and x.dim() == 3 else 0
        self.lengths.append(torch._shape_as_tensor(x)[time:time + 1])
        return unrolled(func, *args)
