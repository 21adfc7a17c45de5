"""Conv and ConvTranspose gradients (input, weight, bias) against PyTorch autograd, at a second input
size. onnxruntime's CPU Conv has no float64 kernel, so these run in float32 with a bound (1e-4) far
below what a window off by one position moves (order 1) and above accumulation-order noise
(weight gradients sum hundreds of products); precision is the layer catalogue's float64 oracle's job
(suites/test_nn_layers.py)."""
import pytest
import torch

BOUND = dict(rtol=1e-4, atol=1e-4)
r = torch.randn
CONV = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}
TRANSPOSED = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d, 3: torch.nn.ConvTranspose3d}


def _input(dims, channels, size):
    return r(2, channels, *[size] * dims)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("config", [
    dict(),
    dict(stride=2),
    dict(stride=3, padding=1),
    dict(dilation=2, padding=2),
    dict(padding=(1, 0, 2)),
    dict(groups=2),
    dict(groups=4, bias=False),  # depthwise
    dict(stride=2, dilation=2, groups=2, padding=1),
    dict(padding="same"),  # auto_pad SAME_UPPER: the rule's run-time pads (the export makes dilated ones explicit)
    dict(padding="same", kernel_size=4),
    dict(padding="valid", stride=2),
], ids=str)
def test_conv(dims, config, harness):
    config = dict(config)
    if "padding" in config and isinstance(config["padding"], tuple):
        config["padding"] = config["padding"][:dims]
    kernel = config.pop("kernel_size", 3)
    module = CONV[dims](4, 8, kernel, **config)
    size = 9 if dims < 3 else 6
    harness.check_gradients(module, [_input(dims, 4, size)], more_args=[[_input(dims, 4, size + 2)]], **BOUND)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("config", [
    dict(),
    dict(stride=2),
    dict(stride=2, output_padding=1),
    dict(stride=3, padding=1, output_padding=2),
    dict(dilation=2, padding=1),
    dict(groups=2, stride=2, dilation=2, output_padding=1),
    dict(groups=4, bias=False),
], ids=str)
def test_conv_transpose(dims, config, harness):
    module = TRANSPOSED[dims](4, 8, 3, **config)
    size = 5 if dims < 3 else 4
    harness.check_gradients(module, [_input(dims, 4, size)], more_args=[[_input(dims, 4, size + 3)]], **BOUND)


@pytest.mark.parametrize("config", [dict(), dict(stride=2), dict(padding=1, dilation=2), dict(stride=2, padding=1)],
                         ids=str)
def test_fold(config, harness):
    """Col2Im (nn.Fold): its gradient unfolds dY, exactly."""
    kernel, output = (2, 3), (5, 6)
    module = torch.nn.Fold(output, kernel, **config)
    blocks = torch.nn.functional.unfold(torch.randn(1, 3, *output), kernel, **config).shape[-1]
    harness.check_gradients(module, [r(2, 3 * 6, blocks)], more_args=[[r(1, 3 * 6, blocks)]], rtol=0, atol=0)
