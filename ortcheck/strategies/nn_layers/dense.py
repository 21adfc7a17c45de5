"""Linear, Bilinear, Embedding and EmbeddingBag."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, Input, example, floats, make
from .wrappers import Call


@st.composite
def linear(draw):
    n_in, n_out = draw(SIDE), draw(SIDE)
    lead = draw(st.lists(SIDE, max_size=2))
    return example(make(nn.Linear, n_in, n_out, bias=draw(st.booleans())), floats(*lead, n_in))


@st.composite
def bilinear(draw):
    n1, n2, n_out, batch = draw(SIDE), draw(SIDE), draw(SIDE), draw(BATCH)
    return example(make(nn.Bilinear, n1, n2, n_out, bias=draw(st.booleans())), floats(batch, n1), floats(batch, n2))



@st.composite
def embedding(draw, padding_idx: bool = False, scale_grad_by_freq: bool = False, max_norm: bool = False):
    """Indices [T] or [B, T]; ``padding_idx`` (its row gets no gradient) counted from either end;
    ``max_norm`` (forward renormalises the looked-up rows of the weight in place, below the norm of a
    randn row of any width drawn here, so rows do change)."""
    count, dim = draw(st.integers(1, 6)), draw(SIDE)
    padding_idx = draw(st.integers(-count, count - 1)) if padding_idx else None
    extra = dict(max_norm=draw(st.sampled_from([0.05, 0.1])), norm_type=draw(st.sampled_from([1.0, 2.0]))) if max_norm else {}
    layer = make(nn.Embedding, count, dim, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq, **extra)
    return example(layer, Input(tuple(draw(st.lists(SIDE, min_size=1, max_size=2))), f"index:{count}"))


@st.composite
def embedding_bag(draw, offsets: bool):
    """Bags as rows of a 2-D input, or (``offsets``) as a 1-D input cut at drawn offsets (empty bags
    included); per-sample weights with mode sum."""
    count, dim, mode = draw(st.integers(1, 6)), draw(SIDE), draw(st.sampled_from(["sum", "mean"]))
    padding_idx = draw(st.none() | st.integers(0, count - 1))
    weighted = mode == "sum" and draw(st.booleans())
    keywords, inputs = (), []
    if offsets:
        total, bags, last = draw(st.integers(1, 6)), draw(BATCH), draw(st.booleans())
        indices = Input((total,), f"index:{count}")
        starts = Input((bags + 1,), f"offsets_last:{total}") if last else Input((bags,), f"offsets:{total}")
        inputs, keywords = [starts], ("offsets",)
        layer = make(nn.EmbeddingBag, count, dim, mode=mode, padding_idx=padding_idx, include_last_offset=last)
    else:
        indices = Input((draw(BATCH), draw(SIDE)), f"index:{count}")
        layer = make(nn.EmbeddingBag, count, dim, mode=mode, padding_idx=padding_idx)
    if weighted:
        inputs, keywords = [*inputs, floats(*indices.shape)], (*keywords, "per_sample_weights")
    return example(make(Call, layer, 1, keywords), indices, *inputs)
