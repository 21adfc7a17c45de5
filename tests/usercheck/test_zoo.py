"""``ortcheck check`` on every zoo architecture, each check's outcome as the table here says: pass
(n/a for recompute in eager), except where a recorded finding says otherwise. The reference's real
bugs are strict expected failures of its manifest (keyed on these test ids); each ORTModule FAIL
names the recorded finding behind it (a test id its manifest entry covers) and what the check says.

As the command runs them (``ortcheck check ortcheck.usercheck.zoo:ARCH``: its default loss, the sum
of the outputs, and three training steps, after which qwen2_moe routes to another number of
experts), without localization (tests/usercheck/test_localize.py covers it). tox runs it in ``modern`` (eager, reference) and in ``ort119`` (ortmodule)."""
import pytest

from ortcheck import impls
from ortcheck.impls import Capability
from ortcheck.models import hf
from ortcheck.usercheck import check_model, zoo
from ortcheck.usercheck.checks import CHECKS
from tests.usercheck import tables

pytestmark = [pytest.mark.requires(Capability.TRAINS),
              pytest.mark.skipif(hf.unavailable_reason() is not None, reason=str(hf.unavailable_reason()))]

_REAL_MODEL = "suites/test_real_models.py::test_tiny_architecture_trains_like_eager[ortmodule-{}]"
_EXPORT_FAILED = r"^the implementation raised ORTModuleONNXModelException: There was an error while exporting the PyTorch model to ONNX: \.\.\. "
ALL = tuple(CHECKS)
# Per recorded ORTModule finding: a test its manifest entry covers, the detail pattern of the checks
# it fails here, the architectures and the checks.
ORTMODULE_FINDINGS = [
    ("suites/test_transitions.py::test_transitions[ortmodule-modes]",  # eval mode builds no gradient graph
     r"^after the eval call: gradient_builds: observed 1, the transition contract predicts 2$",
     ("gpt2", "llama", "mistral", "bert", "t5", "opt", "bloom", "falcon", "phi", "qwen2_moe", "roberta"), ("train/eval",)),
    (_REAL_MODEL.format("llama"),  # the export keeps the first batch's sizes
     r"^the implementation raised RuntimeError: Error in forward pass execution: Non-zero status code returned while "
     r"running (Reshape|Add) node", ("gpt2", "llama", "mistral", "phi"), ("new batch size",)),
    (_REAL_MODEL.format("qwen2_sdpa"),  # transformers' sdpa mask for torch < 2.5 writes into an expanded tensor
     _EXPORT_FAILED + r"RuntimeError: unsupported operation: more than one element of the written-to tensor",
     ("llama_sdpa", "mistral_sdpa", "qwen2_sdpa", "qwen3", "gemma", "mixtral", "mixtral_grouped", "gpt_neox"), ALL),
    (_REAL_MODEL.format("vit"),  # sdpa with an explicit scale cannot be exported
     _EXPORT_FAILED + r".*Occurred when translating scaled_dot_product_attention", ("bart", "vit"), ALL),
    (_REAL_MODEL.format("resnet"),  # the gradient-graph check looks for BatchNorm's running stats among parameters
     r"^_original_module\.resnet\.embedder\.embedder\.normalization\.running_mean not exist parameter_names$",
     ("resnet",), ("new batch size", "training steps")),
    ("suites/test_nn_layers.py::test_layer_matches_eager[ortmodule-ResNetBasicBlock]",  # running stats never written back
     r"^eval\['outputs'\]\[0\]: .* where float64 eager gives", ("resnet",), ("train/eval",)),
    (_REAL_MODEL.format("qwen2_moe"),  # another number of experts hit: a Split of the traced count
     r"Split node.*Cannot split using values in 'split' attribute", ("qwen2_moe",), ("training steps",)),
]

# The default run checks these: every row of the findings table above, both block kinds, routing, vision,
# and the reference's recorded finding (bloom); the rest run with --nightly (each costs 25-95 s of
# CPU under the reference, and suites/test_real_models.py trains every architecture in every run).
DEFAULT_RUN = ("gpt2", "llama_sdpa", "bert", "bloom", "qwen2_moe", "vit", "resnet")


@pytest.mark.parametrize("architecture", [name if name in DEFAULT_RUN else pytest.param(name, marks=pytest.mark.nightly)
                                          for name in zoo.names()])
def test_ortcheck_check_on_a_zoo_architecture(impl, options, architecture):
    result = check_model(getattr(zoo, architecture), getattr(zoo, f"{architecture}_batch"), impl=impl,
                         device=options.device, localize_failures=False)
    table = tables.expected(impl.name, architecture, {"ortmodule": ORTMODULE_FINDINGS})
    differ = tables.differences(result, table)
    assert not differ, f"{len(differ)} of {len(table)} checks not as the table says: " + " | ".join(differ)


def test_the_default_run_covers_every_row_of_the_findings_table():
    assert set(DEFAULT_RUN) <= set(zoo.names())
    assert all(set(architectures) & set(DEFAULT_RUN) for _, _, architectures, _ in ORTMODULE_FINDINGS)


def test_each_ortmodule_failure_names_a_recorded_finding():
    tables.assert_findings_recorded(impls.get("ortmodule"), ORTMODULE_FINDINGS, zoo.names())
