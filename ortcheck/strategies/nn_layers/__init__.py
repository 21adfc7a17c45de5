"""The torch.nn layer catalogue: for each layer a named hypothesis builder of an ``Example`` (the
layer's constructor call and its seeded inputs), one module per family.

``LAYERS`` maps a test id to its builder. Edges a pipeline may get wrong on their own (``padding=
"same"``, label smoothing, padding modes, masks, uneven adaptive pooling, eval mode) are ids of their
own, so a failing id names what every one of its examples exercises. Inputs are continuous random
values: no draw sits on a kink (a ReLU at 0, a max-pool tie, an L1 loss with prediction equal to
target), where float32 and float64 eager could take different branches.
"""
from __future__ import annotations

from hypothesis import strategies as st
from torch import nn

from .activations import activation, dropout_nd
from .attention import multihead_attention, sdpa, transformer_decoder_layer, transformer_encoder_layer
from .blocks import basic_block, depthwise_separable
from .conv import adaptive_pool, conv, conv_transpose, pool
from .dense import bilinear, embedding, embedding_bag, linear
from .drawn import Example, Input
from .losses import bce_with_logits, class_loss, kl_div, pair_loss, pointwise_loss, triplet_margin
from .norms import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm
from .recurrent import recurrent
from .spatial import fold, padding, pixel_shuffle, unfold, upsample

__all__ = ["LAYERS", "NAMES", "Example", "Input"]

DIMS = st.integers(0, 3)  # wrapped into the input's rank, then negative or not

LAYERS: dict[str, st.SearchStrategy[Example]] = {
    "Linear": linear(),
    "Bilinear": bilinear(),
    "Conv1d": conv(1),
    "Conv2d": conv(2),
    "Conv3d": conv(3),
    "Conv1d_same": conv(1, same=True),
    "Conv2d_same": conv(2, same=True),
    "Conv2d_padding_mode": conv(2, padding_modes=("reflect", "replicate", "circular")),
    "ConvTranspose1d": conv_transpose(1),
    "ConvTranspose2d": conv_transpose(2),
    "DepthwiseSeparableConv": depthwise_separable(),
    "ResNetBasicBlock": basic_block(),
    "BatchNorm1d": batch_norm(1),
    "BatchNorm2d": batch_norm(2),
    "BatchNorm1d_eval": batch_norm(1, eval=True),
    "BatchNorm2d_eval": batch_norm(2, eval=True),
    "LayerNorm": layer_norm(),
    "GroupNorm": group_norm(),
    "InstanceNorm1d": instance_norm(1),
    "InstanceNorm2d": instance_norm(2),
    "RMSNorm": rms_norm(),
    "LocalResponseNorm": local_response_norm(),
    "Embedding": embedding(),
    "Embedding_padding_idx": embedding(padding_idx=True),
    "Embedding_scale_grad_by_freq": embedding(scale_grad_by_freq=True),
    "Embedding_max_norm": embedding(max_norm=True),
    "EmbeddingBag": embedding_bag(offsets=False),
    "EmbeddingBag_offsets": embedding_bag(offsets=True),
    "MultiheadAttention": multihead_attention(shared="self"),
    "MultiheadAttention_memory": multihead_attention(shared="memory"),
    "MultiheadAttention_cross": multihead_attention(shared=None),
    "MultiheadAttention_masks": multihead_attention(shared=None, masks=True),  # packed paths: ids of their own
    "scaled_dot_product_attention": sdpa("plain"),
    "scaled_dot_product_attention_causal": sdpa("causal"),
    "scaled_dot_product_attention_mask": sdpa("mask"),
    "scaled_dot_product_attention_scale": sdpa("scale"),
    "TransformerEncoderLayer": transformer_encoder_layer(),
    "TransformerDecoderLayer": transformer_decoder_layer(),
    "RNN": recurrent(nn.RNN),
    "LSTM": recurrent(nn.LSTM),
    "GRU": recurrent(nn.GRU),
    "RNN_bidirectional": recurrent(nn.RNN, bidirectional=True),
    "LSTM_bidirectional": recurrent(nn.LSTM, bidirectional=True),
    "GRU_bidirectional": recurrent(nn.GRU, bidirectional=True),
    "MaxPool1d": pool(nn.MaxPool1d, 1),
    "MaxPool2d": pool(nn.MaxPool2d, 2),
    "AvgPool1d": pool(nn.AvgPool1d, 1),
    "AvgPool2d": pool(nn.AvgPool2d, 2),
    "AdaptiveAvgPool1d": adaptive_pool(1, uneven=False),
    "AdaptiveAvgPool2d": adaptive_pool(2, uneven=False),
    "AdaptiveAvgPool1d_uneven": adaptive_pool(1, uneven=True),
    "AdaptiveAvgPool2d_uneven": adaptive_pool(2, uneven=True),
    "Upsample1d_nearest": upsample(1, "nearest"),
    "Upsample2d_nearest": upsample(2, "nearest"),
    "Upsample1d_linear": upsample(1, "linear", align_corners=False),
    "Upsample2d_bilinear": upsample(2, "bilinear", align_corners=False),
    "Upsample2d_bilinear_align_corners": upsample(2, "bilinear", align_corners=True),
    "PixelShuffle": pixel_shuffle(unshuffle=False),
    "PixelUnshuffle": pixel_shuffle(unshuffle=True),
    "Unfold": unfold(),
    "Fold": fold(),
    **{f"{kind.capitalize()}Pad{nd}d": padding(kind, nd)
       for kind in ("zero", "constant", "reflection", "replication", "circular") for nd in (1, 2)},
    "Dropout1d_p0": dropout_nd(nn.Dropout1d),
    "Dropout2d_p0": dropout_nd(nn.Dropout2d),
    "ReLU": activation(nn.ReLU),
    "GELU": activation(nn.GELU),
    "GELU_tanh": activation(nn.GELU, inputs="wide_body", approximate=st.just("tanh")),
    "SiLU": activation(nn.SiLU),
    "Tanh": activation(nn.Tanh),
    "Sigmoid": activation(nn.Sigmoid),
    "Softplus": activation(nn.Softplus, beta=st.sampled_from([0.5, 1.0, 2.0]),
                           threshold=st.sampled_from([1.0, 20.0])),
    "LeakyReLU": activation(nn.LeakyReLU, negative_slope=st.sampled_from([0.01, 0.2, 1.5])),
    "ELU": activation(nn.ELU, alpha=st.sampled_from([0.5, 1.0, 2.0])),
    "Hardswish": activation(nn.Hardswish),
    "Mish": activation(nn.Mish),
    "Softmax": activation(nn.Softmax, dim=DIMS),
    "LogSoftmax": activation(nn.LogSoftmax, dim=DIMS),
    "CrossEntropyLoss": class_loss(nn.CrossEntropyLoss),
    "CrossEntropyLoss_ignore_index": class_loss(nn.CrossEntropyLoss, ignore_index=True),
    "CrossEntropyLoss_all_ignored": class_loss(nn.CrossEntropyLoss, all_ignored=True),
    "CrossEntropyLoss_label_smoothing": class_loss(nn.CrossEntropyLoss, label_smoothing=True),
    "CrossEntropyLoss_probabilities": class_loss(nn.CrossEntropyLoss, probabilities=True),
    "NLLLoss": class_loss(nn.NLLLoss, ignore_index=True),
    "MSELoss": pointwise_loss(nn.MSELoss),
    "L1Loss": pointwise_loss(nn.L1Loss),
    "SmoothL1Loss": pointwise_loss(nn.SmoothL1Loss, beta=st.sampled_from([0.5, 1.0, 2.0])),
    "SmoothL1Loss_beta_0": pointwise_loss(nn.SmoothL1Loss, beta=st.just(0.0)),
    "HuberLoss": pointwise_loss(nn.HuberLoss, delta=st.sampled_from([0.5, 1.0, 2.0])),
    "CosineEmbeddingLoss": pair_loss(nn.CosineEmbeddingLoss, vectors=True, margin=st.sampled_from([0.0, 0.3])),
    "MarginRankingLoss": pair_loss(nn.MarginRankingLoss, vectors=False, margin=st.sampled_from([0.0, 0.5])),
    "TripletMarginLoss": triplet_margin(),
    "BCEWithLogitsLoss": bce_with_logits(),
    "KLDivLoss": kl_div(),
}
NAMES = list(LAYERS)
