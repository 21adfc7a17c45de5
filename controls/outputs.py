"""Controls of the suites that train whole modules against eager: layers, real models, size-one axes."""
import torch

from ortcheck.impls.eager import EagerImpl
from ortcheck.nested import map_leaves

from controls.base import Control


class ForwardOffByOnePermille(Control, EagerImpl):
    """Every floating output of the wrapped module drifts by a relative 1e-3, far above any rounding the
    oracle allows, as a pipeline computing some op a little wrong would."""
    caught_by = ("suites/test_nn_layers.py::test_layer_matches_eager[forward_off_by_one_permille-Linear]",
                 "suites/test_real_models.py::test_tiny_architecture_trains_like_eager[forward_off_by_one_permille-gpt2]",
                 "suites/test_size_one.py::test_batches_of_one_and_more_train_like_eager"
                 "[forward_off_by_one_permille-scales_a_single_row]")

    def wrap(self, module, options=None):
        def drift(value):
            return value * 1.001 if isinstance(value, torch.Tensor) and value.is_floating_point() else value

        module.register_forward_hook(lambda _module, _args, outputs: map_leaves(outputs, drift))
        return module
