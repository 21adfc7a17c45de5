"""Controls of the 4-bit suite beyond its gradient rule (``gradient_rules.Bnb4GradOtherCodeBook``)."""
import torch

from ortcheck.impls import Options
from ortcheck.impls.eager import EagerImpl

from controls.base import Control


class Bnb4WeightGetsZeroGrad(Control, EagerImpl):
    """Hands the frozen packed weights a zero gradient after backward, as a pipeline returning a
    gradient for every graph input would: the optimizer then touches the 4-bit bytes."""
    caught_by = ("suites/test_bnb4.py::test_adamw_trains_like_eager_and_leaves_4bit_weights_bit_identical",)

    def wrap(self, module, options=Options()):
        for parameter in module.parameters():
            if parameter.dtype == torch.uint8:
                parameter.requires_grad_(False)
                module.register_full_backward_hook(
                    lambda *_, p=parameter: setattr(p, "grad", torch.zeros_like(p)))
        return module
