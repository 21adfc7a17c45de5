"""Targets for ``ortcheck check`` in the tests: small user models, good and bad."""
import torch

FEATURES = 6


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
        self.head = torch.nn.LayerNorm(3)

    def forward(self, x):
        return self.head(self.body(x))


class Gate(torch.nn.Module):
    """Chooses per element between two branches with torch.where: both branches need gradients."""

    def __init__(self):
        super().__init__()
        self.left, self.right = torch.nn.Linear(FEATURES, 4), torch.nn.Linear(FEATURES, 4)

    def forward(self, x):
        return torch.where(x[..., :4] > 0, self.left(x), self.right(x))


class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(FEATURES, FEATURES)
        self.gate = Gate()

    def forward(self, x):
        return self.gate(self.inner(x))


def mlp():
    torch.manual_seed(0)
    return Mlp()


def mlp_batch(size):
    return (torch.randn(size, FEATURES),)


def gated():
    torch.manual_seed(0)
    return Gated()


def batch(size):  # the module's default batch maker (targets without a <factory>_batch)
    return torch.randn(size, FEATURES)


def mean_loss(outputs):
    return outputs.pow(2).mean()


def vector_loss(outputs):
    return outputs.sum(dim=0)


def not_a_module():
    return {"weights": torch.zeros(3)}


def no_parameters():
    return torch.nn.ReLU()


def wrong_width_batch(size):
    return torch.randn(size, FEATURES + 1)


def broken_factory():
    raise RuntimeError("the checkpoint is missing")


class SaturatingGate(torch.nn.Module):
    """A gated MLP whose sigmoid gate sits near -12: onnxruntime's CPU Sigmoid is 5e-3 off relatively
    there (ORTModule's finding; the picture in README, "Check your own model")."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 8)
        self.gate = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sigmoid())
        self.out = torch.nn.Linear(8, 1)
        with torch.no_grad():
            self.gate[0].bias.fill_(-12.0)

    def forward(self, x):
        return self.out(self.proj(x) * self.gate(x))


def saturating_gate():
    torch.manual_seed(0)
    return SaturatingGate()


def saturating_gate_batch(size):
    return (torch.randn(size, 4, generator=torch.Generator().manual_seed(size)),)


class RunningMax(torch.nn.Module):
    """An op the exporter refuses (aten::cummax): the pipeline crashes on any model holding it."""

    def forward(self, x):
        return torch.cummax(x, dim=-1).values


def with_an_unexportable_op():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 4),
                               torch.nn.Sequential(torch.nn.Linear(4, 4), RunningMax()))


class ConvNorm(torch.nn.Module):
    """A small CNN with LayerNorm: oneDNN's conv2d and ATen's LayerNorm run OpenMP-parallel kernels."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.LayerNorm([8, 16, 16])
        self.head = torch.nn.Linear(8, 4)

    def forward(self, images):
        return self.head(torch.relu(self.norm(self.conv(images))).mean((2, 3)))


def conv_norm():
    torch.manual_seed(0)
    return ConvNorm()


def conv_norm_batch(size):
    return (torch.randn(size, 3, 16, 16, generator=torch.Generator().manual_seed(size)),)


class OnlyPairs(torch.nn.Module):
    """A model that takes batches of exactly 2 (its own limit, not a pipeline's)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).view(2, 4) * 2


def only_pairs():
    return OnlyPairs()


def only_pairs_batch(size):
    return (torch.randn(size, 4, generator=torch.Generator().manual_seed(size)),)


class BatchScaled(torch.nn.Module):
    """Python control flow on the batch size: a graph traced at batch 2 never divides."""

    def forward(self, y):
        if y.shape[0] > 2:
            y = y / y.shape[0]
        return y


class SizeBranching(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(FEATURES, 4)
        self.scale = BatchScaled()

    def forward(self, x):
        return self.scale(torch.tanh(self.lin(x)))


def size_branching():
    torch.manual_seed(0)
    return SizeBranching()


class RunningCentre(torch.nn.Module):
    """A buffer updated under no_grad in forward, then used: graphs that drop the write go wrong."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(FEATURES, 4)
        self.register_buffer("centre", torch.zeros(4))

    def forward(self, x):
        h = self.lin(x)
        with torch.no_grad():
            self.centre.mul_(0.5).add_(h.mean(0), alpha=0.5)
        return h - self.centre


def running_centre():
    torch.manual_seed(0)
    return torch.nn.Sequential(RunningCentre(), torch.nn.Tanh())


class Float32Only(torch.nn.Module):
    """A layer whose kernel exists in reduced precision only, as ``torch.nn.functional.grouped_mm``'s."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(FEATURES, 2)

    def forward(self, x):
        if x.dtype == torch.float64:
            raise RuntimeError("Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Double")
        return self.linear(x)


def float32_only():
    return Float32Only()
