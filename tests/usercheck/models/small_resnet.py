"""A ResNet-style CNN: conv/BatchNorm/ReLU blocks with identity and projection shortcuts, global
average pooling and cross-entropy on integer labels, as in a CIFAR tutorial."""
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.layer1 = Block(8, 8)
        self.layer2 = Block(8, 16, stride=2)
        self.fc = nn.Linear(16, classes)

    def forward(self, images, labels):
        x = self.layer2(self.layer1(self.stem(images)))
        logits = self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        return {"logits": logits, "loss": F.cross_entropy(logits, labels)}


def build():
    torch.manual_seed(0)
    return SmallResNet()


def batch(size):
    return {"images": torch.randn(size, 3, 12, 12), "labels": torch.randint(0, 5, (size,))}


def loss(outputs):
    return outputs["loss"]
