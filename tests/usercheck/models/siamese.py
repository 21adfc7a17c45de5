"""A contrastive (CLIP-style) model: one encoder shared by both views, a learned temperature, and a
momentum target branch whose output is detached (stop-gradient), as in BYOL-like training."""
import torch
import torch.nn.functional as F
from torch import nn


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 16), nn.SiLU(), nn.Linear(16, 8))
        self.predictor = nn.Linear(8, 8)
        self.logit_scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, view_a, view_b):
        a = F.normalize(self.predictor(self.encoder(view_a)), dim=-1)
        b = F.normalize(self.encoder(view_b), dim=-1).detach()
        logits = self.logit_scale.exp() * a @ b.t()
        targets = torch.arange(logits.shape[0], device=logits.device)
        return F.cross_entropy(logits, targets)


def build():
    torch.manual_seed(0)
    return Siamese()


def batch(size):
    base = torch.randn(size, 10)
    return (base + 0.1 * torch.randn(size, 10), base + 0.1 * torch.randn(size, 10))
