"""Where a mismatch lives: the smallest submodule that fails alone, then its first op that fails alone.

Why "alone": a submodule wrapped by itself and fed the inputs it received in the eager run has only
its own defects; if it passes, the mismatch is elsewhere. The search checks the called children of
a failing module in call order and descends into the first that fails, until none does. Inside that
module, each op it runs itself is replayed as a one-op module (:mod:`ortcheck.usercheck.probes`) in
call order, and the first the oracle rejects is named. A child that the implementation cannot run
alone (it refuses the export, say) is noted and skipped: it proves nothing either way.

A crash is localized the same way: where the whole model makes the implementation raise, a part
"fails alone" when it raises the same exception type alone, so the search ends at the smallest
submodule, and the first op, that still crash (an op the exporter refuses, a kernel that rejects a
shape); other exceptions of a part still only mean it cannot run alone. Every part runs in a child
process (:mod:`ortcheck.usercheck.isolated`): one that crashes the process alone (a segfault in the
implementation's native code) fails alone, so a crash is localized too, and the search survives it.
"""
from __future__ import annotations

import torch

from ortcheck.checks.runs import fresh_leaves
from ortcheck.usercheck.calls import Projection, check_call, requiring_grad
from ortcheck.usercheck.isolated import Crashed, isolated
from ortcheck.usercheck.probes import OpProbe, onnx_ops, record
from ortcheck.usercheck.result import FAIL, PASS, Localization, OpFinding, raised
from ortcheck.usercheck.targets import Batch

ERROR = "error"


def capture_inputs(model: torch.nn.Module, batch: Batch) -> dict[str, Batch]:
    """Per submodule path, in order of first call, the inputs of its first call in an eager run."""
    captured: dict[str, Batch] = {}
    hooks = []
    for path, module in model.named_modules():
        def hook(_, args, kwargs, path=path):
            if path not in captured:
                captured[path] = Batch(*fresh_leaves((args, kwargs)))  # copies, requires_grad as in the run
        hooks.append(module.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        model(*batch.args, **batch.kwargs)
    finally:
        for h in hooks:
            h.remove()
    return captured


def called_children(path: str, called: list[str]) -> list[str]:
    """The called submodules nearest below ``path`` (through containers never called themselves)."""
    below = [p for p in called if p != path and (not path or p.startswith(path + "."))]
    return [p for p in below if not any(q != p and p.startswith(q + ".") for q in below)]


SEVERAL_STEPS = "(fails only over several steps)"


def localize(subject, report_dir=None) -> Localization:
    """The smallest failing submodule of ``subject.model`` on its first batch, and its first failing op."""
    impl, options = subject.impl, subject.options
    model = subject.model
    batch = subject.batch(subject.sizes[0])
    captured = capture_inputs(model, batch)
    modules = dict(model.named_modules())
    called = list(captured)
    tree = [("", FAIL)]
    current = ""
    try:
        failure = isolated(check_call, impl, options, model, batch, subject.loss_fn, "the model",
                           device=options.device, name="the whole model alone") or SEVERAL_STEPS
        crash = None
    except Crashed as error:  # the process died: every part that dies alone fails alone
        crash, failure = Crashed, str(error)
    except Exception as error:  # the pipeline raised on the model: find where that exception lives
        crash, failure = type(error), raised(error)
    descended = True
    while descended:
        descended = False
        for child in called_children(current, called):
            verdict = _check_alone(impl, options, modules[child], captured[child], child, crash)
            tree.append((child, FAIL if verdict not in (None, ERROR) else (ERROR if verdict == ERROR else PASS)))
            if verdict not in (None, ERROR):
                current, failure, descended = child, verdict, True
                break
    op = first_failing_op(impl, options, modules[current], captured[current] if current else batch,
                          [modules[c] for c in called_children(current, called)], crash)
    repro = None
    if report_dir is not None:
        from ortcheck.usercheck.repro import write_repro

        repro = str(write_repro(report_dir, impl, options, modules[current], captured[current] if current else batch,
                                current or "model"))
    return Localization(current, type(modules[current]).__name__, failure, tuple(tree), op, repro,
                        one_call_passes=failure == SEVERAL_STEPS)


def first_failing_op(impl, options, module: torch.nn.Module, batch: Batch, children: list,
                     crash: type[Exception] | None = None) -> OpFinding | None:
    for index, call in enumerate(record(module, children, batch.args, batch.kwargs)):
        probe, tensors = OpProbe(call), call.tensors()
        verdict = _check_alone(impl, options, probe, Batch(tuple(tensors), {}), f"{call.name} output", crash)
        if verdict not in (None, ERROR):
            ops, nodes = onnx_ops(probe, tensors)
            return OpFinding(index, call.name, ops, nodes, tuple(tuple(t.shape) for t in tensors), verdict)
    return None


def _check_alone(impl, options, module, batch: Batch, path: str, crash: type[Exception] | None = None) -> str | None:
    """The oracle's failure for ``module`` alone, None when it passes, ERROR when it cannot run alone;
    when localizing a ``crash``, raising that exception type alone is the failure."""
    try:
        return isolated(check_call, impl, options, module, requiring_grad(batch, "as-given"), Projection(), path,
                        device=options.device, name=f"{path or 'the model'} alone")
    except Crashed as error:  # a part that kills the process alone fails alone, whatever the model did
        return str(error)
    except Exception as error:  # a module the pipeline cannot run alone (refused export, unsupported input)
        return raised(error) if crash is not None and isinstance(error, crash) else ERROR

