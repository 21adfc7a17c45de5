"""A hand-written decoder-only language model: tied input/output embeddings, rotary positions,
a causal mask built from the sequence length, pre-norm blocks, next-token cross-entropy."""
import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, HEADS = 32, 16, 2


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.out = nn.Linear(DIM, DIM, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        scores = q @ k.transpose(-2, -1) / math.sqrt(DIM // HEADS)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, DIM))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.attn = Attention()
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, cos, sin):
        x = x + self.attn(self.norm1(x), cos, sin)
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(layers))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.head.weight = self.wte.weight  # tied
        inv_freq = 1.0 / (10000 ** (torch.arange(0, DIM // HEADS, 2).float() / (DIM // HEADS)))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        freqs = torch.outer(torch.arange(t, device=tokens.device).float(), self.inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        x = self.wte(tokens)
        for block in self.blocks:
            x = block(x, cos, sin)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def build():
    torch.manual_seed(0)
    return TinyLM()


def batch(size):
    return (torch.randint(0, VOCAB, (size, 7)),)
