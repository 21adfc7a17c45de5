"""A small Bloom-style causal language model, self-contained (no downloads, no transformers).

Embedding -> LayerNorm -> N x [pre-LN attention (causal) + residual, pre-LN GELU MLP + residual]
-> final LayerNorm -> head tied to the embedding. Like Bloom it has no position table and an
embedding LayerNorm; unlike Bloom it has no ALiBi bias and uses erf GELU (the harness needs the
layer structure the memory optimizer and gradient builders see, not Bloom's exact numerics).

``python -m ortcheck.models`` prints the ONNX op types the model exports to.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from ortcheck.models.layers import MLP, Residual, SelfAttention
from ortcheck.models.seeding import build_seeded


@dataclasses.dataclass(frozen=True)
class BloomConfig:
    vocab_size: int = 64
    hidden_size: int = 32
    num_heads: int = 4
    num_layers: int = 2
    max_seq_len: int = 16  # longest sequence the examples use; the graph itself has no limit
    dropout: float = 0.0   # attention probabilities and both residual branches, as Bloom
    init_std: float = 0.02  # Bloom's initializer_range: small tied logits at the start
    layer_norm_eps: float = 1e-5

    def __post_init__(self):
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size={self.hidden_size} is not divisible by num_heads={self.num_heads}")


class BloomLayer(nn.Sequential):
    def __init__(self, config: BloomConfig):
        hidden, p, eps = config.hidden_size, config.dropout, config.layer_norm_eps
        super().__init__(
            Residual(SelfAttention(hidden, config.num_heads, causal=True, dropout=p), hidden, dropout=p, eps=eps),
            Residual(MLP(hidden), hidden, dropout=p, eps=eps),
        )


class BloomLM(nn.Module):
    def __init__(self, config: BloomConfig):
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.word_embeddings_layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layers = nn.Sequential(*(BloomLayer(config) for _ in range(config.num_layers)))
        self.ln_f = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self._init_weights()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``[batch, seq]`` int64 token ids -> ``[batch, seq, vocab]`` logits."""
        hidden = self.layers(self.word_embeddings_layernorm(self.word_embeddings(input_ids)))
        return F.linear(self.ln_f(hidden), self.word_embeddings.weight)  # tied head

    def _init_weights(self) -> None:
        """Bloom's scheme: normal(0, init_std) matrices, zero biases (LayerNorms keep their own init)."""
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, (nn.Linear, nn.Embedding)):
                    module.weight.normal_(0.0, self.config.init_std)
                if isinstance(module, nn.Linear):
                    module.bias.zero_()


def build_bloom(config: BloomConfig = BloomConfig(), seed: int = 0) -> BloomLM:
    """A :class:`BloomLM` whose weights depend only on ``seed``."""
    return build_seeded(lambda: BloomLM(config), seed)


def example_input_ids(config: BloomConfig, seed: int = 0, batch: int = 2, seq: int | None = None) -> torch.Tensor:
    """Seeded ``[batch, seq]`` token ids (``seq`` defaults to ``config.max_seq_len``)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, config.vocab_size, (batch, seq or config.max_seq_len), generator=generator)


def causal_lm_loss(logits: torch.Tensor, input_ids: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean cross-entropy of predicting token t+1 from positions <= t (logits and labels shifted by one)."""
    vocab = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, vocab), input_ids[:, 1:].reshape(-1), ignore_index=ignore_index)

