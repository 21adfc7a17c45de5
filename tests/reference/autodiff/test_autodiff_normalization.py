"""Softmax, LayerNorm, reductions and the losses PyTorch exports, against PyTorch autograd."""
import pytest
import torch
import torch.nn.functional as F


r = torch.randn


@pytest.mark.parametrize("dim", [-1, 1, 0])
def test_softmax(dim, harness):
    runner = harness.check_gradients(lambda x: x.softmax(dim), [r(2, 3, 4)], more_args=[[r(3, 1, 5)]])
    assert runner.graphs.stashed == ("out0",)  # the fused form needs only the output


@pytest.mark.parametrize("dim", [-1, 1])
def test_log_softmax(dim, harness):
    harness.check_gradients(lambda x: x.log_softmax(dim), [r(2, 3, 4)], more_args=[[r(1, 2, 2)]])


@pytest.mark.parametrize("shape", [(4,), (3, 4)], ids=str)
def test_layer_norm(shape, harness):
    module = torch.nn.LayerNorm(shape)
    with torch.no_grad():
        module.weight.normal_()
        module.bias.normal_()
    x = r(2, 3, 4) if len(shape) == 2 else r(2, 5, 4)
    runner = harness.check_gradients(module, [x], more_args=[[r(1, *x.shape[1:])]])
    layer_norm = next(n for n in runner.graphs.forward.graph.node if n.op_type == "LayerNormalization")
    assert len(layer_norm.output) == 3  # mean and inv_std added for the backward pass


def test_layer_norm_without_affine_and_bias(harness):
    harness.check_gradients(torch.nn.LayerNorm(4, elementwise_affine=False), [r(2, 3, 4)])
    harness.check_gradients(torch.nn.LayerNorm(4, bias=False), [r(2, 3, 4)])


REDUCTIONS = {
    "mean_last_keepdim": lambda x: x.mean(-1, keepdim=True),
    "mean_two_axes": lambda x: x.mean((0, 2)),
    "mean_all": lambda x: x.mean(),
    "sum_first": lambda x: x.sum(0),
    "sum_keepdim": lambda x: x.sum((1, 2), keepdim=True),
    "sum_all": lambda x: x.sum(),
}


@pytest.mark.parametrize("case", REDUCTIONS, ids=str)
@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic", "static"])
def test_reductions(case, dynamic, harness):
    more_args = [[r(3, 1, 2)]] if dynamic else []
    harness.check_gradients(REDUCTIONS[case], [r(2, 3, 4)], dynamic=dynamic, more_args=more_args)


CROSS_ENTROPY = {
    "mean": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "ignore_index": {"ignore_index": 2},
    "ignore_index_sum": {"ignore_index": 2, "reduction": "sum"},
    "class_weights": {"weight": torch.tensor([1.0, 2.0, 0.5, 3.0])},
    "weights_and_ignore_index": {"weight": torch.tensor([1.0, 2.0, 0.5, 3.0]), "ignore_index": 1},
}


@pytest.mark.parametrize("case", CROSS_ENTROPY, ids=str)
def test_cross_entropy(case, harness):
    kwargs = CROSS_ENTROPY[case]
    labels = torch.tensor([0, 2, 3, 2, 1])
    runner = harness.check_gradients(lambda x, t: F.cross_entropy(x, t, **kwargs), [r(5, 4), labels],
                                     more_args=[[r(3, 4), torch.tensor([1, 2, 2])]])
    assert "SoftmaxCrossEntropyLoss" in harness.op_types(runner.graphs.forward)


def test_cross_entropy_default_ignore_index_and_extra_dims(harness):
    labels = torch.tensor([[0, -100, 3], [2, 1, -100]])
    harness.check_gradients(lambda x, t: F.cross_entropy(x, t), [r(2, 4, 3), labels])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction, harness):
    harness.check_gradients(lambda x, y: F.mse_loss(x, y, reduction=reduction), [r(3, 5), r(3, 5)],
                            wrt_args=(0, 1), more_args=[[r(2, 2), r(2, 2)]])


def test_mse_loss_broadcast_target(harness):
    harness.check_gradients(lambda x, y: F.mse_loss(x, y.expand_as(x)), [r(3, 5), r(5)], wrt_args=(0, 1))


NLL = {
    "mean": {},
    "sum_ignore": {"reduction": "sum", "ignore_index": 0},
    "weights": {"weight": torch.tensor([1.0, 2.0, 0.5])},
}


@pytest.mark.parametrize("case", NLL, ids=str)
def test_nll_loss(case, harness):
    def loss(x, t):
        return F.nll_loss(torch.tanh(x), t, **NLL[case])

    runner = harness.check_gradients(loss, [r(4, 3), torch.tensor([0, 2, 1, 0])])
    assert "NegativeLogLikelihoodLoss" in harness.op_types(runner.graphs.forward)


@pytest.mark.parametrize("module, shape", [(torch.nn.InstanceNorm1d(3, affine=True), (2, 3, 5)),
                                           (torch.nn.InstanceNorm2d(2, affine=True), (2, 2, 3, 4)),
                                           (torch.nn.GroupNorm(2, 4), (3, 4, 5))], ids=["instance1d", "instance2d", "group"])
def test_instance_normalization(module, shape, harness):
    """InstanceNormalization (GroupNorm exports to it too): input, scale and bias gradients."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape))
    harness.check_gradients(module, [r(*shape)])
