"""Check the user's own model (``ortcheck check``): does it train through a pipeline as in eager
PyTorch, and if not, which submodule and which op? One module per job: targets (loading and
validating what the user points at), calls (one call judged by the float64 oracle), checks,
localize and probes (the smallest failing submodule, its first failing op), repro, report, result,
command (the CLI), api (``check_model``, ``assert_trains_like_eager``)."""
from ortcheck.usercheck.api import assert_trains_like_eager, check_model
from ortcheck.usercheck.errors import UserInputError
from ortcheck.usercheck.result import CheckResult, Localization, OpFinding, Outcome

__all__ = ["CheckResult", "Localization", "OpFinding", "Outcome", "UserInputError", "assert_trains_like_eager",
           "check_model"]
