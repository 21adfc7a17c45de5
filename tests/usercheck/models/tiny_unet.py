"""A two-level U-Net for segmentation: GroupNorm/SiLU conv blocks, max-pool down, transposed-conv
up, skip connections concatenated, per-pixel BCE against a target mask."""
import torch
import torch.nn.functional as F
from torch import nn


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(2, cout), nn.SiLU())


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1, self.down2 = block(1, 4), block(4, 8)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.fuse = block(8, 4)
        self.out = nn.Conv2d(4, 1, 1)

    def forward(self, image, target):
        skip = self.down1(image)
        x = self.down2(F.max_pool2d(skip, 2))
        x = self.fuse(torch.cat([self.up(x), skip], dim=1))
        return F.binary_cross_entropy_with_logits(self.out(x), target)


def build():
    torch.manual_seed(0)
    return TinyUNet()


def batch(size):
    image = torch.randn(size, 1, 8, 8)
    return (image, (image > 0.5).float())
