"""Symbolics for the edges of ops torch's TorchScript exporter gets wrong, found by the deeper samples
of torch's OpInfo database (``suites/test_opinfo.py`` under the ``nightly`` profile): unusual
arguments, 0-d, broadcast and empty operands (reductions: :mod:`reference.export.reduction_symbolics`).
Each follows eager's (ATen's) formula:

- ``aten::addcmul``: ``x + (value * t1) * t2`` with a 0-d ``value`` (torch's is shaped ``[1]``, which
  turns 0-d operands into shape ``(1,)``);
- ``aten::flip`` with no dims: ``x`` itself (torch's emits a Slice whose axes come out as floats);
- ``aten::roll`` with shifts but no dims: the flattened tensor rolled, then reshaped back (torch's
  refuses);
- ``aten::cat`` skipping 1-d empty tensors beside tensors of a higher rank, as eager's legacy rule
  does, each given eager's zero gradient (torch's refuses: "All tensors must have the same rank");
- ``aten::gather`` with an index of another integer type than int64 (an empty uint8 one, which
  eager accepts): cast to int64 (onnxruntime refuses the graph);
- ``aten::nll_loss`` / ``nll_loss_nd`` of one unbatched sample (input ``(C,)``, target 0-d): as a
  batch of one (ONNX's ``NegativeLogLikelihoodLoss`` wants a batch axis);
- ``aten::unflatten`` with an empty dimension around: its Reshape with ``allowzero`` (a 0 in the
  target shape is a size, not "copy the input's dimension");
- ``aten::index_fill``: ``where(position in index, value, x)`` along ``dim``, so an index named twice
  fills once and the value's gradient counts each filled element once, as eager's (which sums the
  gradient over the unique indices); torch's scatters the value once per index entry (twice the
  gradient for an entry repeated), and along the 0-d input's dim onnxruntime refused it;
- ``aten::masked_select`` with an input broadcast against a larger mask: both broadcast first, as
  eager, and read flattened (torch's expands the mask alone, and onnxruntime refused the GatherND, of
  a 0-d input too);
- ``aten::dropout`` in training with p = 1: ``x * 0``, as ATen's (torch's ``Dropout`` node scales by
  1 / (1 - p));
- ``aten::pad`` in ``circular`` mode with negative pads: the input cropped by them first, then
  wrapped by the positive ones, as eager's (torch's slices as if every pad were positive).
"""
from __future__ import annotations

import torch
from torch.onnx import symbolic_helper

from reference.export.autocast_probe import as_computed
from reference.export.layer_symbolics import _cast_like, _ints, _scalar, _type_utils
from reference.export.more_layer_symbolics import _rank
from reference.export.op_symbolics import with_zero_gradient

_INT64_MAX = 2**63 - 1







def addcmul(g, x, t1, t2, value=None):
    value = 1.0 if value is None else symbolic_helper._maybe_get_const(value, "f")
    scaled = t1 if value == 1 else g.op("Mul", _scalar(g, value, t1), t1)
    return g.op("Add", x, g.op("Mul", scaled, t2))


def flip(g, x, dims):
    from torch.onnx import symbolic_opset10

    if not symbolic_helper._maybe_get_const(dims, "is"):
        return g.op("Identity", x)
    return symbolic_opset10.flip(g, x, dims)


def roll(g, x, shifts, dims):
    from torch.onnx import symbolic_opset9

    if symbolic_helper._maybe_get_const(dims, "is"):
        return symbolic_opset9.roll(g, x, shifts, dims)
    (shift,) = symbolic_helper._maybe_get_const(shifts, "is")
    flat = g.op("Reshape", x, _ints(g, -1))
    size = g.op("Max", g.op("Shape", flat), _ints(g, 1))  # the shift modulo the size, as eager's
    start = g.op("Neg", g.op("Mod", _ints(g, shift), size))
    later = g.op("Slice", flat, start, _ints(g, _INT64_MAX), _ints(g, 0))
    earlier = g.op("Slice", flat, _ints(g, 0), start, _ints(g, 0))
    return g.op("Reshape", g.op("Concat", later, earlier, axis_i=0), g.op("Shape", x), allowzero_i=1)


def cat(g, tensors, dim):
    from torch.onnx import symbolic_opset11

    if symbolic_helper._is_packed_list(tensors):
        parts = symbolic_helper._unpack_list(tensors)
        ranks = [_rank(t) for t in parts]  # eager accepts a 1-d beside higher ranks only if empty
        kept = [t for t, rank in zip(parts, ranks) if not (rank == 1 and None not in ranks and max(ranks) > 1)]
        if len(kept) < len(parts) and kept:
            out = g.op("Concat", *kept, axis_i=symbolic_helper._get_const(dim, "i", "dim"))
            skipped = [g.op("ReduceSum", t, keepdims_i=0) for t in parts if t not in kept]
            return with_zero_gradient(g, out, *skipped)  # eager's gradient of a skipped one: zeros
    return symbolic_opset11.cat(g, tensors, dim)


def pad(g, x, pads, mode, value):
    from torch.onnx import symbolic_opset11

    amounts = symbolic_helper._maybe_get_const(pads, "is")
    if isinstance(amounts, list):  # autocast computes some modes in float32 (reflect, replicate on the CPU)
        unpadded = [0] * len(amounts)
        x = as_computed(g, x, lambda probe: torch._C._nn.pad(probe, unpadded, symbolic_helper._parse_arg(mode, "s"), None))
    if symbolic_helper._parse_arg(mode, "s") != "circular" or not isinstance(amounts, list) or min(amounts) >= 0:
        return symbolic_opset11.pad(g, x, pads, mode, value)
    for position in range(0, len(amounts), 2):  # pads name the last dimension first
        axis = _ints(g, -1 - position // 2)
        left, right = amounts[position:position + 2]
        x = g.op("Slice", x, _ints(g, max(-left, 0)), _ints(g, -max(-right, 0) or _INT64_MAX), axis)
        wrapped = ([g.op("Slice", x, _ints(g, -left), _ints(g, _INT64_MAX), axis)] if left > 0 else []) + [x] + (
            [g.op("Slice", x, _ints(g, 0), _ints(g, right), axis)] if right > 0 else [])
        x = g.op("Concat", *wrapped, axis_i=-1 - position // 2) if len(wrapped) > 1 else x
    return x



def gather(g, x, dim, index, sparse_grad=False):
    from torch.onnx import symbolic_opset11

    if index.type().scalarType() not in ("Long", "Int", None):
        index = g.op("Cast", index, to_i=torch.onnx.TensorProtoDataType.INT64)
    return symbolic_opset11.gather(g, x, dim, index, sparse_grad)




def nll_loss(g, x, target, weight, reduction, ignore_index):
    from torch.onnx import symbolic_opset12

    if _rank(x) != 1:
        return symbolic_opset12.nll_loss(g, x, target, weight, reduction, ignore_index)
    batch = [g.op("Unsqueeze", value, _ints(g, 0)) for value in (x, target)]
    loss = symbolic_opset12.nll_loss(g, *batch, weight, reduction, ignore_index)
    return g.op("Squeeze", loss, _ints(g, 0)) if symbolic_helper._maybe_get_const(reduction, "i") == 0 else loss


def unflatten(g, x, dim, sizes):
    from torch.onnx import symbolic_opset13

    out = symbolic_opset13.unflatten(g, x, dim, sizes)
    wanted = symbolic_helper._maybe_get_const(sizes, "is")
    if out.node().kind() == "onnx::Reshape" and isinstance(wanted, list) and -1 not in wanted:
        out.node().i_("allowzero", 1)
    return out


def index_fill(g, x, dim, index, value):
    rank, dim = _rank(x), symbolic_helper._get_const(dim, "i", "dim")
    if rank is None:
        return symbolic_helper._onnx_unsupported("index_fill of an input of unknown rank", x)
    axis = dim % rank if rank else 0
    size = g.op("Gather", g.op("Shape", x), _ints(g, axis), axis_i=0) if rank else _ints(g, 1)
    index = g.op("Reshape", index, _ints(g, -1))
    index = g.op("Where", g.op("Less", index, _ints(g, 0)), g.op("Add", index, size), index)  # from the end
    positions = g.op("Range", _ints(g, 0), g.op("Squeeze", size, _ints(g, 0)), _ints(g, 1))
    hits = g.op("Equal", g.op("Unsqueeze", positions, _ints(g, 1)), g.op("Unsqueeze", index, _ints(g, 0)))
    filled = g.op("Cast", g.op("ReduceMax", g.op("Cast", hits, to_i=torch.onnx.TensorProtoDataType.INT32), _ints(g, 1),
                               keepdims_i=0), to_i=torch.onnx.TensorProtoDataType.BOOL)
    shape = [1] * rank
    if rank:
        shape[axis] = -1
    filled = g.op("Reshape", filled, _ints(g, *shape)) if rank else g.op("Squeeze", filled, _ints(g, 0))
    if symbolic_helper._is_constant(value):  # a number
        value = _scalar(g, symbolic_helper._maybe_get_const(value, "f"), x)
    else:  # a 0-d tensor, differentiable
        value = _cast_like(g, value, x)
    return g.op("Where", filled, value, x)



def masked_select(g, x, mask):
    x = g.op("Expand", x, g.op("Shape", mask))
    flat = [g.op("Reshape", value, _ints(g, -1)) for value in (x, g.op("Expand", mask, g.op("Shape", x)))]
    return g.op("GatherND", flat[0], g.op("Transpose", g.op("NonZero", flat[1]), perm_i=[1, 0]))


def dropout(g, x, p, train):
    from torch.onnx import symbolic_opset12

    if symbolic_helper._maybe_get_const(train, "b") and symbolic_helper._maybe_get_const(p, "f") == 1:
        return g.op("Mul", x, _scalar(g, 0.0, x))
    return symbolic_opset12.dropout(g, x, p, train)


EDGE_SYMBOLICS = {
    "aten::addcmul": (addcmul, 9), "aten::flip": (flip, 10), "aten::roll": (roll, 9), "aten::cat": (cat, 11),
    "aten::gather": (gather, 11), "aten::index_fill": (index_fill, 18), "aten::nll_loss": (nll_loss, 12),
    "aten::nll_loss_nd": (nll_loss, 12), "aten::unflatten": (unflatten, 13), "aten::pad": (pad, 11),
    "aten::masked_select": (masked_select, 18), "aten::dropout": (dropout, 12),
}
