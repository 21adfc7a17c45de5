"""``ortcheck check`` on models written the way people write them (tests/usercheck/models/, issue
40): each check's outcome as the table in tests/usercheck/tables.py says, except where a recorded
finding says otherwise. The reference's real bugs are strict expected failures of its manifest
(keyed on these test ids); each ORTModule FAIL names the recorded finding behind it and what the
check says. As the command runs them: the model module's ``build`` and ``batch``, its ``loss``
where it has one, three training steps, no localization. tox runs it in ``modern`` (eager,
reference) and ``ort119`` (ortmodule)."""
import importlib
import pkgutil

import pytest

from ortcheck import impls
from ortcheck.impls import Capability
from ortcheck.usercheck import check_model
from ortcheck.usercheck.checks import CHECKS
from tests.usercheck import models, tables

pytestmark = pytest.mark.requires(Capability.TRAINS)

MODELS = sorted(m.name for m in pkgutil.iter_modules(models.__path__))
ALL = tuple(CHECKS)
_VALUES_OFF = r"where float64 eager gives"
# Per recorded ORTModule finding: a test its manifest entry covers, the detail pattern, the models, the checks.
ORTMODULE_FINDINGS: list[tables.Row] = [
    ("suites/test_transitions.py::test_transitions[ortmodule-modes]",  # eval mode builds no gradient graph
     r"^after the eval call: gradient_builds: observed 1, the transition contract predicts 2$",
     ("tiny_lm", "size_dependent"), ("train/eval",)),
    ("suites/test_real_models.py::test_tiny_architecture_trains_like_eager[ortmodule-resnet]",  # buffers written in
     r"^_original_module\.([a-z_.0-9]+\.)?(running_mean|feature_mean) not exist parameter_names$",  # forward sought among parameters
     ("small_resnet", "frozen_backbone"), ("training steps",)),
    ("suites/test_real_models.py::test_tiny_architecture_trains_like_eager[ortmodule-resnet]",
     r"^_original_module\.stem\.1\.running_mean not exist parameter_names$", ("small_resnet",), ("new batch size",)),
    ("suites/test_nn_layers.py::test_layer_matches_eager[ortmodule-ResNetBasicBlock]",  # running stats never written back
     r"^eval\['outputs'\]\[0\].* " + _VALUES_OFF, ("small_resnet",), ("train/eval",)),
    ("suites/test_io_through_module.py::test_nested_io_through_module[ortmodule-dataclasses]",  # a dataclass output
     r"^the implementation raised ORTModuleIOError: ORTModule fails to extract schema from data: Unsupported flatten data "
     r"type: <class 'tests\.usercheck\.models\.dict_gru\.Prediction'>$", ("dict_gru",), ALL),
    ("suites/test_forward_patterns.py::test_forward_patterns_train_like_eager[ortmodule-no_grad_buffer]",  # the no_grad
     _VALUES_OFF, ("frozen_backbone",), ("gradients", "new batch size", "train/eval", "state_dict round trip")),  # write
    ("suites/test_forward_patterns.py::test_forward_patterns_train_like_eager[ortmodule-detached]",  # detach() dropped
     _VALUES_OFF, ("siamese",), ("gradients", "new batch size", "train/eval", "state_dict round trip", "training steps")),
    ("suites/test_nn_layers.py::test_layer_matches_eager[ortmodule-GRU_bidirectional]",  # GRUGrad: forward direction only
     r"^the implementation raised RuntimeException: .* RUNTIME_EXCEPTION : Exception during initialization: .*gru_io_utils",
     ("conv_gru_pool",), ALL),
    ("suites/test_nn_layers.py::test_layer_matches_eager[ortmodule-ConvTranspose2d]",  # no ConvTransposeGrad CPU kernel
     r"^the implementation raised NotImplemented: .* Could not find an implementation for ConvTransposeGrad",
     ("tiny_unet",), ALL),
    ("suites/test_nn_layers.py::test_layer_matches_eager[ortmodule-TransformerEncoderLayer]",  # packed in-projection's
     r"^assertion failed; raised at onnxruntime/tools/symbolic_shape_infer\.py:\d+ in _infer_Reshape",  # Reshape
     ("padded_encoder",), ALL),
]


@pytest.mark.parametrize("model", MODELS)
def test_ortcheck_check_on_a_user_model(impl, options, model):
    module = importlib.import_module(f"{models.__name__}.{model}")
    result = check_model(module.build, module.batch, getattr(module, "loss", None), impl=impl, device=options.device,
                         localize_failures=False, target=f"{module.__name__}:build")
    table = tables.expected(impl.name, model, {"ortmodule": ORTMODULE_FINDINGS})
    differ = tables.differences(result, table)
    assert not differ, f"{len(differ)} of {len(table)} checks not as the table says: " + " | ".join(differ)


def test_there_are_eight_user_models_at_least():
    assert len(MODELS) >= 8, MODELS


def test_each_ortmodule_failure_names_a_recorded_finding():
    tables.assert_findings_recorded(impls.get("ortmodule"), ORTMODULE_FINDINGS, MODELS)
