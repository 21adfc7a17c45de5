"""A text classifier on torch's own TransformerEncoder, padding marked by a key-padding mask (data,
not differentiated), mean pooling over the tokens that are not padding."""
import torch
from torch import nn


class PaddedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 16, padding_idx=0)
        self.position = nn.Parameter(torch.randn(1, 12, 16) * 0.02)
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 2)

    def forward(self, tokens, padding):
        x = self.embed(tokens) + self.position[:, : tokens.shape[1]]
        x = self.encoder(x, src_key_padding_mask=padding)
        keep = (~padding).unsqueeze(-1).float()
        return self.head((x * keep).sum(1) / keep.sum(1))


def build():
    torch.manual_seed(0)
    return PaddedEncoder()


def batch(size):
    tokens = torch.randint(1, 30, (size, 8))
    tokens[-1, 6:] = 0
    return {"tokens": tokens, "padding": tokens == 0}
