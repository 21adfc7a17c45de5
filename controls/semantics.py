"""Controls of what users do to modules: dropout's modes, buffers written in forward."""
import torch

from ortcheck.impls.eager import EagerImpl

from controls.base import Control


class DropoutInEvalMode(Control, EagerImpl):
    """Dropout keeps dropping after ``model.eval()``, as a pipeline exporting its training graph only."""
    caught_by = ("suites/test_dropout.py::test_dropout_is_identity_in_eval_mode[dropout_in_eval_mode]",)

    def wrap(self, module, options=None):
        def keep_dropping(wrapped, _args):
            for inner in wrapped.modules():
                if isinstance(inner, torch.nn.modules.dropout._DropoutNd):
                    inner.train()

        module.register_forward_pre_hook(keep_dropping)
        return module


class DropsBufferWrites(Control, EagerImpl):
    """Buffers written in forward keep the values they had before it, as a pipeline that never copies
    its graph's new buffer values back into the module."""
    caught_by = ("suites/test_module_semantics.py::test_buffers_written_in_forward_hold_eagers_values"
                 "[checked-drops_buffer_writes]",)

    def wrap(self, module, options=None):
        before: dict[str, torch.Tensor] = {}

        def remember(wrapped, _args):
            before.clear()
            before.update({name: b.detach().clone() for name, b in wrapped.named_buffers()})

        def restore(wrapped, _args, _outputs):  # rebinds (an in-place copy would break autograd's saved values)
            for name, _ in list(wrapped.named_buffers()):
                if name in before:
                    owner, _, leaf = name.rpartition(".")
                    wrapped.get_submodule(owner)._buffers[leaf] = before[name]

        module.register_forward_pre_hook(remember)
        module.register_forward_hook(restore)
        return module
