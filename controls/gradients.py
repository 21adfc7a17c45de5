"""Controls of gradient parity and delivery: gradients wrong, overwritten, or written out of autograd's sight."""
import torch

from ortcheck.impls import Options
from ortcheck.impls.eager import EagerImpl

from controls.base import Control, DuringForward


class GradientsOffByOnePermille(Control, EagerImpl):
    """Parameter gradients scaled by 1.001 on their way back: grad parity must see it."""
    caught_by = ("suites/test_grad_parity.py::test_outputs_loss_and_gradients_match_eager",
                 "suites/test_grad_parity.py::test_bloom_lm_trains_20_steps_like_eager")

    def wrap(self, module, options=None):
        for parameter in module.parameters():
            parameter.register_hook(lambda grad: grad * 1.001)
        return module


class BackwardOverwritesGrads(Control, EagerImpl):
    """Clears every parameter's .grad when a backward starts, as a pipeline assigning its gradient
    outputs instead of accumulating them would: micro-batches no longer sum."""
    caught_by = ("suites/test_grad_delivery.py::test_micro_batches_accumulate_to_eagers_sum"
                 "[default-backward_overwrites_grads]",)

    def wrap(self, module, options=Options()):
        def clear(*_):
            for parameter in module.parameters():
                parameter.grad = None

        module.register_full_backward_pre_hook(clear)
        return module


class _GradsWrittenDirectly(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, module):
        ctx.module = module
        ctx.save_for_backward(x)
        with torch.no_grad():
            return module(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        params = [p for p in ctx.module.parameters() if p.requires_grad]
        with torch.enable_grad():
            leaf = x.detach().requires_grad_()
            grads = torch.autograd.grad(ctx.module(leaf), [leaf, *params], grad)
        for p, g in zip(params, grads[1:]):
            p.grad = g if p.grad is None else p.grad + g
        return grads[0], None


class _WritesGrads(torch.nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return _GradsWrittenDirectly.apply(x, self.module)


class WritesGradsAroundAutograd(Control, EagerImpl):
    """Writes parameter gradients into .grad itself, out of autograd's sight: single-process
    training is right, but DDP's all-reduce hooks never fire."""
    caught_by = ("suites/test_ddp.py::test_ddp_trains_like_single_process_eager"
                 "[default-writes_grads_around_autograd-gloo-all-used-sync]",)

    def wrap(self, module, options=Options()):
        return _WritesGrads(module)


class IgnoresNoGradRegions(DuringForward):
    """Traces forward's ``no_grad`` regions like the rest: gradients flow through a statistic eager
    computes without them (a buffer updated under ``no_grad``, a scale under ``set_grad_enabled(False)``)."""
    caught_by = ("suites/test_forward_patterns.py::test_forward_patterns_train_like_eager[ignores_no_grad_regions-no_grad_buffer]",
                 "suites/test_forward_patterns.py::test_forward_patterns_train_like_eager[ignores_no_grad_regions-grad_disabled_scale]")

    def seam(self):
        from reference.export.grad_regions import NO_GRAD_REGIONS_TRACED

        return NO_GRAD_REGIONS_TRACED.overridden(True)
