"""What ``ortcheck check`` found: one outcome per check, and where a mismatch lives.

Kept as plain data so the CLI, the pytest assertion and the report print the same thing.
"""
from __future__ import annotations

import dataclasses

# COST: every number as eager's, but more graph exports or gradient builds than the transition
# contract predicts (a graph keyed by more than it needs): time, not a wrong result.
PASS, FAIL, NA, COST = "pass", "FAIL", "n/a", "cost"


def raised(error: BaseException) -> str:
    """One line for an exception of the implementation: its type and first line, and where the first
    line only announces what follows (ORTModule's "error while exporting ...: " then a traceback),
    the message's last line too, which names the cause."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()] or [""]
    cause = f" ... {lines[-1]}" if len(lines) > 1 and lines[0].endswith(":") else ""
    first, listed, supported = lines[0].partition("; supported: ")  # the reference's 70-op list: counted, not copied
    count = f" ({len(supported.split(', '))} ops have one)" if listed else ""
    return f"the implementation raised {type(error).__name__}: {first}{count}{cause}"


@dataclasses.dataclass(frozen=True)
class Outcome:
    check: str
    status: str   # PASS, FAIL, NA or COST
    detail: str = ""  # the failure, or why the check does not apply


@dataclasses.dataclass(frozen=True)
class OpFinding:
    """The first recorded op of the smallest failing submodule that fails alone."""

    index: int              # position among the submodule's own ops, in call order
    function: str           # the torch function as the module called it (torch.nn.functional.softmax)
    onnx_ops: tuple[str, ...]  # the op types it exports to (TorchScript exporter, training mode)
    onnx_nodes: tuple[str, ...]
    sizes: tuple[tuple[int, ...], ...]  # its tensor inputs' shapes
    failure: str            # the oracle's message: the tensor, the two values, the bound

    def line(self) -> str:
        ops = "+".join(self.onnx_ops) or "?"
        return (f"op #{self.index} {self.function} (ONNX {ops}, nodes {', '.join(self.onnx_nodes) or '?'}) "
                f"on inputs {', '.join(str(list(s)) for s in self.sizes)}: {self.failure}")


@dataclasses.dataclass(frozen=True)
class Localization:
    module: str                      # dotted path of the smallest submodule that fails alone ("" = the model)
    module_type: str
    failure: str                     # the oracle's message for that submodule alone
    tree: tuple[tuple[str, str], ...]  # (path, verdict) for every submodule checked alone, in order
    op: OpFinding | None = None
    repro: str | None = None         # folder of the standalone reproduction
    # The submodule's one call passes (it fails only over several steps): an op failing alone in one
    # call is then a defect of its own, not the cause (qwen2_moe under ORTModule: a routing change
    # at step 3, while the loss alone segfaults).
    one_call_passes: bool = False
    pointers: tuple[str, ...] = ()  # where to look, from the eager run: grad-free regions, size-dependent code
    sizes: tuple[int, ...] = ()     # localized at a new batch size: the first call's size, then the other
    def lines(self) -> list[str]:
        at = f" at batch {self.sizes[0]} then {self.sizes[1]}" if self.sizes else ""
        lines = [f"smallest failing submodule{at}: {self.module or '(the model)'} ({self.module_type})",
                 f"  {self.failure}"]
        if self.one_call_passes:
            lines.append("an op failing alone in one call, a defect of its own (the failure above needs several steps): "
                         f"{self.op.line()}" if self.op else
                         "first failing op: none fails alone in one call (the failure above needs several steps)")
        elif not self.sizes:
            lines.append(f"first failing op: {self.op.line()}" if self.op else
                         "first failing op: none of its own ops fails alone (the defect is in how they combine)")
        if self.pointers:
            lines.append("where to look:")
            lines += [f"  {pointer}" for pointer in self.pointers]
        lines.append("module tree (each checked alone):")
        lines += [f"  {verdict:<5} {path or '(the model)'}" for path, verdict in self.tree]
        if self.repro:
            lines.append(f"reproduction: {self.repro}/repro.py")
        return lines


@dataclasses.dataclass(frozen=True)
class CheckResult:
    target: str
    impl: str
    device: str
    outcomes: tuple[Outcome, ...]
    localization: Localization | None = None
    autocast: str | None = None
    grad_scaler: bool = False

    @property
    def ok(self) -> bool:
        return all(o.status != FAIL for o in self.outcomes)

    def format(self) -> str:
        autocast = (f" --autocast {self.autocast}" if self.autocast else "") + (" --grad-scaler" if self.grad_scaler else "")
        lines = [f"ortcheck check {self.target} --impl {self.impl} --device {self.device}{autocast}"]
        width = max(len(o.check) for o in self.outcomes)
        first_with: dict[str, str] = {}
        for o in self.outcomes:
            detail = o.detail
            if detail and detail in first_with:  # one cause failing every check is written once
                detail = f"(the same as {first_with[detail]!r})"
            else:
                first_with.setdefault(o.detail, o.check)
            lines.append(f"  {o.status:<5} {o.check:<{width}}  {detail}".rstrip())
        if self.localization:
            lines += self.localization.lines()
        costly = [o.check for o in self.outcomes if o.status == COST]
        extra = f" (at an extra cost: more exports than needed in {', '.join(map(repr, costly))})" if costly else ""
        lines.append(f"trains like eager{extra}" if self.ok else "does NOT train like eager")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return dataclasses.asdict(self) | {"ok": self.ok}
