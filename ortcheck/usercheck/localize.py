"""Where a mismatch lives: the smallest submodule that fails alone, then its first op that fails alone.

Why "alone": a submodule wrapped by itself and fed the inputs it received in the eager run has only
its own defects; if it passes, the mismatch is elsewhere. The search checks the called children of
a failing module in call order and descends into the first that fails, until none does. Inside that
module, each op it runs itself is replayed as a one-op module (:mod:`ortcheck.usercheck.probes`) in
call order, in the grad mode it ran in, and the first the oracle rejects the way the module was
rejected (a wrong value, a wrong structure, an exception) is named; one failing otherwise is a
defect of its own, listed apart. A child that the implementation cannot run alone (it refuses the
export, say) is noted and skipped: it proves nothing either way.

Where no op fails alone, the defect is in how they combine, and the eager run says where to look:
the ops that ran with grad disabled (``torch.no_grad()``, a custom Function's forward). A failure
at another batch size is searched the same way with two calls, the first size then the other, on
one wrap; inside the smallest failing module the two eager runs are compared: where they run
other ops (Python control flow on a size) or pass other Python values to the same op (a size
turned into a number), a graph traced at the first size cannot follow.

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
from ortcheck.usercheck.calls import Projection, check_calls, requiring_grad
from ortcheck.usercheck.isolated import Crashed, isolated
from ortcheck.usercheck.probes import OpProbe, Recorded, onnx_ops, record
from ortcheck.usercheck.result import FAIL, PASS, Localization, OpFinding, raised
from ortcheck.usercheck.targets import Batch

ERROR = "error"
SEVERAL_STEPS = "(fails only over several steps)"
LISTED = 5  # pointers of one kind listed at most


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


def localize(subject, report_dir=None, new_size: bool = False) -> Localization:
    """The smallest failing submodule of ``subject.model`` and where inside it: on its first batch,
    or (``new_size``) on its first batch then one of the other size."""
    impl, options, model = subject.impl, subject.options, subject.model
    sizes = tuple(subject.sizes) if new_size else tuple(subject.sizes[:1])
    batches = [subject.batch(size, seed) for seed, size in enumerate(sizes)]
    captures = [capture_inputs(model, batch) for batch in batches]
    called = [path for path in captures[0] if path and all(path in c for c in captures)]
    inputs = {path: [c[path] for c in captures] for path in called} | {"": batches}
    modules = dict(model.named_modules())
    tree = [("", FAIL)]
    current = ""
    try:
        failure = isolated(check_calls, impl, options, model, batches, subject.loss_fn, "the model",
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
            verdict = _check_alone(impl, options, modules[child], inputs[child], child, crash)
            tree.append((child, FAIL if verdict not in (None, ERROR) else (ERROR if verdict == ERROR else PASS)))
            if verdict not in (None, ERROR):
                current, failure, descended = child, verdict, True
                break
    children = [modules[c] for c in called_children(current, called)]
    op, pointers = None, []
    if new_size:
        pointers = size_pointers(modules[current], children, inputs[current], sizes)
    else:
        batch = inputs[current][0]
        calls = record(modules[current], children, batch.args, batch.kwargs)
        op, pointers = first_failing_op(impl, options, calls, crash, None if failure == SEVERAL_STEPS else failure)
        if op is None:
            pointers += grad_free_pointers(calls)
    repro = None
    if report_dir is not None:
        from ortcheck.usercheck.repro import write_repro

        repro = str(write_repro(report_dir, impl, options, modules[current], inputs[current], current or "model"))
    return Localization(current, type(modules[current]).__name__, failure, tuple(tree), op, repro,
                        one_call_passes=failure == SEVERAL_STEPS, pointers=tuple(pointers),
                        sizes=sizes if new_size else ())


def first_failing_op(impl, options, calls: list[Recorded], crash: type[Exception] | None = None,
                     failure: str | None = None) -> tuple[OpFinding | None, list[str]]:
    """Of a module's own recorded ``calls``, the first op failing alone as ``failure`` did (any failure
    when that is None or a crash is localized), and a line for each op before it failing otherwise."""
    others = []
    for index, call in enumerate(calls):
        if not call.probe:
            continue
        probe, tensors = OpProbe(call), call.tensors()
        verdict = _check_alone(impl, options, probe, [Batch(tuple(tensors), {})], f"{call.name} output", crash)
        if verdict in (None, ERROR):
            continue
        ops, nodes = onnx_ops(probe, tensors)
        found = OpFinding(index, call.name, ops, nodes, tuple(tuple(t.shape) for t in tensors), verdict)
        if crash is not None or failure is None or _kind(verdict) == _kind(failure):
            return found, others
        if len(others) < LISTED:
            others.append(f"also fails alone, another way (a defect of its own, maybe not this failure's cause): {found.line()}")
    return None, others


def grad_free_pointers(calls: list[Recorded]) -> list[str]:
    """Of a module's own recorded ``calls``, the ops that ran with grad disabled, as ranges."""
    off = [k for k, call in enumerate(calls) if not call.grad_enabled and call.probe]
    lines = [f"ops {_span(run)} ran with grad disabled (torch.no_grad() or a custom autograd.Function's forward): "
             f"{', '.join(dict.fromkeys(calls[k].name for k in run))}; a graph may take their results as constants "
             "or drop their writes" for run in _runs(off)[:LISTED]]
    return lines


def size_pointers(module: torch.nn.Module, children: list, batches: list[Batch], sizes: tuple[int, ...]) -> list[str]:
    """Where the module's eager runs at the two sizes part: other ops (control flow on a size), or the
    same op given other Python values (a size turned into a number); what a trace at the first size fixes."""
    first, second = (record(module, children, b.args, b.kwargs) for b in batches)
    reads = [f"#{k} {call.name}" for k, call in enumerate(first) if call.reads_size][:LISTED]
    read_note = f" (it reads sizes into Python at {', '.join(reads)})" if reads else ""
    for k, (a, b) in enumerate(zip(first, second)):
        if a.name != b.name:
            return [f"Python control flow on a size: op #{k} is {a.name} at batch {sizes[0]} and {b.name} at batch "
                    f"{sizes[1]}{read_note}; a graph traced at batch {sizes[0]} runs the first branch"]
    if len(first) != len(second):
        shorter = min(len(first), len(second))
        return [f"Python control flow on a size: it runs {_ops(len(first))} at batch {sizes[0]} and {_ops(len(second))} at "
                f"batch {sizes[1]}, the same first {shorter}{read_note}; a graph traced at batch {sizes[0]} runs its ops"]
    differ = [(k, a, b) for k, (a, b) in enumerate(zip(first, second)) if a.python_values != b.python_values]
    lines = [f"op #{k} {a.name} takes {_short(a)} at batch {sizes[0]} and {_short(b)} at batch {sizes[1]}: a Python "
             f"value computed from a size, which a trace may fix at batch {sizes[0]}" for k, a, b in differ[:LISTED]]
    return lines or [f"its own ops run alike at both sizes, with the same Python values{read_note}"]


def _check_alone(impl, options, module, batches: list[Batch], path: str, crash: type[Exception] | None = None) -> str | None:
    """The oracle's failure for ``module`` alone (one call per batch), None when it passes, ERROR when
    it cannot run alone; when localizing a ``crash``, raising that exception type alone is the failure."""
    try:
        return isolated(check_calls, impl, options, module, [requiring_grad(b, "as-given") for b in batches],
                        Projection(), path, device=options.device, name=f"{path or 'the model'} alone")
    except Crashed as error:  # a part that kills the process alone fails alone, whatever the model did
        return str(error)
    except Exception as error:  # a module the pipeline cannot run alone (refused export, unsupported input)
        return raised(error) if crash is not None and isinstance(error, crash) else ERROR


def _kind(failure: str) -> str:
    """What a failure is about: a value off the oracle's bound, an exception, or a structure (a
    missing gradient, another dtype or shape, a flag)."""
    if failure.startswith("the implementation raised") or failure.startswith("the implementation crashed"):
        return "raised"
    return "value" if "eager gives" in failure and " where eager gives torch." not in failure else "structure"


def _runs(indices: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for k in indices:
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return runs


def _span(run: list[int]) -> str:
    return f"#{run[0]}" if len(run) == 1 else f"#{run[0]}-#{run[-1]}"


def _ops(count: int) -> str:
    return f"{count} op" + ("" if count == 1 else "s")


def _short(call: Recorded, limit: int = 80) -> str:
    text = call.python_values
    return text if len(text) <= limit else text[: limit - 3] + "..."
