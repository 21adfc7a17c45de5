"""The Python API: ``check_model`` returns a :class:`CheckResult`; ``assert_trains_like_eager`` is
the one line a user puts in their own pytest suite."""
from __future__ import annotations

from typing import Callable

import torch

from ortcheck import impls
from ortcheck.impls.base import Implementation, Options
from ortcheck.usercheck.calls import INPUT_GRADS
from ortcheck.usercheck.checks import CHECKS, SIZES, Subject, run_checks
from ortcheck.usercheck.localize import localize
from ortcheck.usercheck.result import FAIL, CheckResult
from ortcheck.usercheck.errors import UserInputError
from ortcheck.usercheck.targets import build_model, default_loss, make_batch, validate

AUTOCAST = (None, "float16", "bfloat16")


def check_model(model: torch.nn.Module | Callable[[], torch.nn.Module], batch: Callable[[int], object],
                loss: Callable | None = None, *, impl: str | Implementation = impls.DEFAULT, device: str = "cpu", steps: int = 3,
                optimizer: str = "sgd", checks: tuple[str, ...] | None = None, localize_failures: bool = True,
                report_dir=None, target: str | None = None, sizes: tuple[int, int] = SIZES,
                input_grads: str = "as-given", autocast: str | None = None, grad_scaler: bool = False) -> CheckResult:
    """Check that ``model`` (or a factory returning it) trains through ``impl`` as in eager PyTorch.

    ``batch(size)`` returns one call's inputs (a dict: keyword arguments; a tuple: positional; else one
    argument); ``loss(outputs)`` a scalar (default: the sum of the floating outputs); ``sizes`` the
    first call's batch size and another one; ``input_grads`` which input tensors are differentiated
    and their gradients judged: ``"as-given"`` (those ``batch`` returns with ``requires_grad`` set;
    a mask stays data), ``"all"`` floating ones, or ``"none"``; ``autocast`` (``"float16"``,
    ``"bfloat16"``) runs every call under ``torch.autocast`` in that dtype, as mixed-precision
    training does (the float64 oracle stays float64: autocast leaves it alone), and ``grad_scaler``
    trains the steps with ``torch.amp.GradScaler`` (float16 only), a step skipped where eager's is. Raises
    :class:`UserInputError` for inputs that cannot be checked; returns the outcome of every check and,
    when a value check failed, where (:class:`Localization`)."""
    name = target or getattr(model, "__qualname__", type(model).__name__)
    model = model if isinstance(model, torch.nn.Module) else build_model(model, name)
    build_model(lambda: model, name)  # the same validation for a module handed in directly
    loss = loss or default_loss
    if len(sizes) != 2 or sizes[0] == sizes[1] or min(sizes) < 1:
        raise UserInputError(f"batch sizes: two different sizes of at least 1, got {tuple(sizes)}")
    if autocast not in AUTOCAST:
        raise UserInputError(f"autocast {autocast!r}: expected one of {', '.join(map(str, AUTOCAST))}")
    if grad_scaler and autocast != "float16":
        raise UserInputError(f"grad scaler: GradScaler scales float16 gradients; it needs autocast 'float16', "
                             f"got {autocast!r}")
    if input_grads not in INPUT_GRADS:
        raise UserInputError(f"input grads {input_grads!r}: expected one of {', '.join(INPUT_GRADS)}")
    for size in sizes:  # a size the model itself cannot take is the model's limit, not the pipeline's
        validate(model, make_batch(batch, size, 0), loss, f"a batch of {size}")
    implementation = impl if isinstance(impl, Implementation) else impls.get(impl)
    subject = Subject(implementation, Options(device=device), model, batch, loss, steps, optimizer, tuple(sizes),
                      input_grads, autocast, grad_scaler)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the checks run in forked children, where thread pools do not survive
    try:
        outcomes = run_checks(checks or tuple(CHECKS), subject)
        located, failed = None, {o.check for o in outcomes if o.status == FAIL}
        with subject.region():
            if localize_failures and failed & {"gradients", "training steps"}:
                located = localize(subject, report_dir)
            elif localize_failures and "new batch size" in failed:  # right at one size, wrong at another
                located = localize(subject, report_dir, new_size=True)
    finally:
        torch.set_num_threads(threads)
    result = CheckResult(name, implementation.name, device, outcomes, located, autocast, grad_scaler)
    if report_dir is not None:
        from ortcheck.usercheck.report import write

        write(result, report_dir)
    return result


def assert_trains_like_eager(model, batch, loss=None, **options) -> CheckResult:
    """``check_model`` that raises AssertionError with the whole report when a check fails."""
    result = check_model(model, batch, loss, **options)
    assert result.ok, result.format()
    return result
