"""MultiheadAttention, scaled_dot_product_attention and the Transformer layers."""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .drawn import BATCH, SIDE, Input, example, floats, make
from .wrappers import Attention, Call, SharedAttention


def _sequence(batch: int, length: int, width: int, batch_first: bool) -> Input:
    """A sequence input: [batch, length, width] when ``batch_first``, else [length, batch, width]."""
    return floats(batch, length, width) if batch_first else floats(length, batch, width)


def _some_masks(draw, *candidates: tuple[str, Input]) -> tuple[tuple[str, ...], list[Input]]:
    """Each (keyword, mask) drawn in or out, in order: the chosen keywords and their mask inputs."""
    chosen = [candidate for candidate in candidates if draw(st.booleans())]
    return tuple(keyword for keyword, _ in chosen), [mask for _, mask in chosen]


@st.composite
def multihead_attention(draw, shared: str | None, masks: bool = False):
    """One tensor as query, key and value (``shared="self"``), one as key and value (``"memory"``)
    or three (``None``: key and value of the embedding's width or their own ``kdim``/``vdim``);
    ``masks``: a key padding mask and/or an attention mask (2-D or per head), which never exclude
    the first key, so no row is all masked."""
    heads, head_dim, batch_first = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.booleans())
    embed, batch, length = heads * head_dim, draw(BATCH), draw(SIDE)
    key_length = length if shared == "self" else draw(SIDE)
    kdim, vdim = (draw(st.none() | SIDE), draw(st.none() | SIDE)) if shared is None else (None, None)
    attention = make(nn.MultiheadAttention, embed, heads, bias=draw(st.booleans()), batch_first=batch_first,
                     kdim=kdim, vdim=vdim)

    def sequence(length, width):
        return _sequence(batch, length, width, batch_first)

    keywords, mask_inputs = [], []
    if masks:
        which = draw(st.sampled_from(["key_padding_mask", "attn_mask", "both"]))
        if which in ("key_padding_mask", "both"):
            keywords.append("key_padding_mask")
            mask_inputs.append(Input((batch, key_length), "masked"))
        if which in ("attn_mask", "both"):
            keywords.append("attn_mask")
            shape = draw(st.sampled_from([(length, key_length), (batch * heads, length, key_length)]))
            mask_inputs.append(Input(shape, "masked"))
    if shared == "self":
        return example(make(SharedAttention, attention, shared, tuple(keywords)), sequence(length, embed),
                       *mask_inputs)
    if shared == "memory":
        return example(make(SharedAttention, attention, shared, tuple(keywords)), sequence(length, embed),
                       sequence(key_length, embed), *mask_inputs)
    layer = make(Call, attention, 3, tuple(keywords), (("need_weights", False),), pick=0)
    return example(layer, sequence(length, embed), sequence(key_length, kdim or embed),
                   sequence(key_length, vdim or embed), *mask_inputs)


@st.composite
def sdpa(draw, variant: str):
    """``variant``: ``plain``, ``causal`` (``is_causal=True``), ``mask`` (a bool mask attending to at
    least the first key, or a float mask added to the scores, whose gradient is checked too) or
    ``scale`` (an explicit ``scale``, causal or not); the others keep the default scale."""
    batch, heads, length, key_length = draw(BATCH), draw(st.integers(1, 2)), draw(SIDE), draw(SIDE)
    width, value_width = draw(SIDE), draw(SIDE)
    q, k, v = floats(batch, heads, length, width), floats(batch, heads, key_length, width), \
        floats(batch, heads, key_length, value_width)
    scale = draw(st.sampled_from([0.5, 2.0])) if variant == "scale" else None
    if variant == "mask":
        shape = draw(st.sampled_from([(length, key_length), (batch, heads, length, key_length)]))
        mask = Input(shape, draw(st.sampled_from(["allowed", "float"])))
        return example(make(Attention, scale=scale), q, k, v, mask)
    causal = variant == "causal" or (variant == "scale" and draw(st.booleans()))
    return example(make(Attention, is_causal=causal, scale=scale), q, k, v)


def _transformer_config(draw) -> tuple[int, dict]:
    heads, head_dim = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    return heads * head_dim, dict(nhead=heads, dim_feedforward=draw(SIDE), dropout=0.0,
                                  activation=draw(st.sampled_from(["relu", "gelu"])),
                                  batch_first=draw(st.booleans()), norm_first=draw(st.booleans()),
                                  bias=draw(st.booleans()))


@st.composite
def transformer_encoder_layer(draw):
    """A causal mask and/or a key padding mask (never excluding the first key)."""
    d_model, config = _transformer_config(draw)
    batch, length = draw(BATCH), draw(SIDE)
    keywords, masks = _some_masks(draw, ("src_mask", Input((length, length), "causal")),
                                  ("src_key_padding_mask", Input((batch, length), "masked")))
    layer = make(nn.TransformerEncoderLayer, d_model, **config)
    return example(make(Call, layer, 1, keywords), _sequence(batch, length, d_model, config["batch_first"]), *masks)


@st.composite
def transformer_decoder_layer(draw):
    """Optionally a causal target mask and a memory key padding mask."""
    d_model, config = _transformer_config(draw)
    batch, length, memory_length = draw(BATCH), draw(SIDE), draw(SIDE)
    keywords, masks = _some_masks(draw, ("tgt_mask", Input((length, length), "causal")),
                                  ("memory_key_padding_mask", Input((batch, memory_length), "masked")))
    layer = make(nn.TransformerDecoderLayer, d_model, **config)
    target, memory = (_sequence(batch, n, d_model, config["batch_first"]) for n in (length, memory_length))
    return example(make(Call, layer, 2, keywords), target, memory, *masks)


@st.composite
def transformer(draw):
    """The whole ``nn.Transformer``: 1-2 encoder and decoder layers, a causal target mask or not."""
    d_model, config = _transformer_config(draw)
    batch, length, source_length = draw(BATCH), draw(SIDE), draw(SIDE)
    keywords, masks = _some_masks(draw, ("tgt_mask", Input((length, length), "causal")))
    layer = make(nn.Transformer, d_model, num_encoder_layers=draw(st.integers(1, 2)),
                 num_decoder_layers=draw(st.integers(1, 2)), **config)
    source, target = (_sequence(batch, n, d_model, config["batch_first"]) for n in (source_length, length))
    return example(make(Call, layer, 2, keywords), source, target, *masks)


@st.composite
def transformer_stack(draw, decoder: bool):
    """``nn.TransformerEncoder`` / ``nn.TransformerDecoder``: 1-2 copies of a layer, a final norm or not."""
    d_model, config = _transformer_config(draw)
    batch, length = draw(BATCH), draw(SIDE)
    layer_cls, stack_cls = ((nn.TransformerDecoderLayer, nn.TransformerDecoder) if decoder
                            else (nn.TransformerEncoderLayer, nn.TransformerEncoder))
    norm = make(nn.LayerNorm, d_model) if draw(st.booleans()) else None
    extra = {} if decoder else dict(enable_nested_tensor=False)
    stack = make(stack_cls, make(layer_cls, d_model, **config), draw(st.integers(1, 2)), norm=norm, **extra)
    inputs = [_sequence(batch, length, d_model, config["batch_first"])]
    if decoder:
        inputs.append(_sequence(batch, draw(SIDE), d_model, config["batch_first"]))
    return example(make(Call, stack, len(inputs)), *inputs)
