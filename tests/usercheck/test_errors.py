"""Bad input to ``ortcheck check``: one clear line on stderr, exit code 2, no harness traceback."""
import pytest

from ortcheck import cli
from ortcheck.usercheck import UserInputError, check_model
from tests.usercheck import targets

T = "tests.usercheck.targets"


@pytest.mark.parametrize("argv, message", [
    ([f"{T}_missing:mlp"], "cannot import 'tests.usercheck.targets_missing': ModuleNotFoundError"),
    ([f"{T}:nothing_here"], "has no attribute 'nothing_here'"),
    ([f"{T}:broken_factory"], "raised: RuntimeError: the checkpoint is missing"),
    ([f"{T}:not_a_module"], "returned a dict, not a torch.nn.Module"),
    ([f"{T}:no_parameters"], "the model has no trainable parameters"),
    ([f"{T}:mlp", "--batch", f"{T}:wrong_width_batch"], "the model rejects a batch of 2 in eager PyTorch"),
    ([f"{T}:float32_only", "--batch", f"{T}:mlp_batch"],
     "eager PyTorch cannot run the model in float64 on a batch of 2, the computation the checks judge against"),
    ([f"{T}:mlp", "--loss", f"{T}:vector_loss"], "the loss must be a floating scalar tensor, got a tensor of shape [3]"),
    (["mlp"], "expected MODULE:NAME"),
    ([f"{T}:mlp", "--impl", "nope"], "unknown implementation 'nope'"),
])
def test_bad_input_is_one_line_on_stderr(capsys, argv, message):
    code = cli.main(["check", *argv, "--steps", "1"])
    out, err = capsys.readouterr()
    assert code == 2
    assert message in err and err.startswith("ortcheck check: error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err + out and out == ""


def test_the_api_raises_the_same_error():
    with pytest.raises(UserInputError, match="no trainable parameters"):
        check_model(targets.no_parameters, targets.mlp_batch)


def test_the_default_batch_maker_is_found_by_name(capsys):
    """No --batch: ``mlp_batch`` beside ``mlp``; ``gated`` has none, so the module's ``batch``."""
    assert cli.main(["check", f"{T}:gated", "--impl", "eager", "--steps", "1"]) == 0
    assert "trains like eager" in capsys.readouterr().out


def test_one_cause_failing_every_check_is_written_once_and_an_op_list_is_counted():
    from ortcheck.usercheck.result import CheckResult, Outcome, raised
    from reference.autodiff.errors import UnsupportedOpError

    detail = raised(UnsupportedOpError("Clip", "/clip", ["Abs", "Add", "Relu"]))
    assert detail.endswith("(3 ops have one)") and "Abs, Add" not in detail
    result = CheckResult("m:f", "reference", "cpu", (Outcome("gradients", "FAIL", detail), Outcome("train/eval", "FAIL", detail),
                                                      Outcome("new batch size", "PASS", "2 then 3")), None)
    lines = result.format().splitlines()
    assert lines[1].endswith(detail) and lines[2].endswith("(the same as 'gradients')")


def test_a_batch_size_the_model_itself_cannot_take_is_a_usage_error_naming_it(capsys):
    code = cli.main(["check", "tests.usercheck.targets:only_pairs", "--steps", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "the model rejects a batch of 3 in eager PyTorch" in err and "--batch-sizes" in err


@pytest.mark.parametrize("sizes", ["2", "3,3", "0,2", "a,b"])
def test_bad_batch_sizes_are_refused(sizes, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["check", "tests.usercheck.targets:mlp", "--batch-sizes", sizes])
    assert stopped.value.code == 2 and "--batch-sizes" in capsys.readouterr().err


def test_other_batch_sizes_are_used():
    result = check_model(targets.mlp, targets.mlp_batch, checks=("new batch size",), sizes=(4, 1), impl="eager")
    assert result.outcomes[0].detail == "4 then 1", result.format()
