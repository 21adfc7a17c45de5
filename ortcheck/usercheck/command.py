"""``ortcheck check MODULE:FACTORY``: the CLI over :func:`ortcheck.usercheck.check_model`.

A :class:`UserInputError` prints as one line on stderr with exit code 2 (the input is wrong, not
the pipeline); a failing check exits 1.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ortcheck import impls
from ortcheck.impls.base import DEVICES
from ortcheck.usercheck.calls import INPUT_GRADS
from ortcheck.usercheck.checks import OPTIMIZERS, SIZES
from ortcheck.usercheck.errors import UserInputError


def add_parser(commands) -> None:
    check = commands.add_parser("check", help="check that your own model trains through a pipeline as in eager")
    check.add_argument("target", metavar="MODULE:FACTORY", help="a callable returning your torch.nn.Module")
    check.add_argument("--batch", metavar="MODULE:FN", default=None,
                       help="FN(size) returns one call's inputs (dict: keyword arguments, tuple: positional); "
                            "default MODULE:FACTORY_batch or MODULE:batch")
    check.add_argument("--loss", metavar="MODULE:FN", default=None,
                       help="FN(outputs) returns a scalar loss (default: the sum of the floating outputs)")
    check.add_argument("--impl", default=impls.DEFAULT,
                       help=f"a registered implementation ({', '.join(impls.names())}) or MODULE:CLASS")
    check.add_argument("--device", default="cpu", choices=DEVICES)
    check.add_argument("--steps", type=_positive, default=3, help="optimizer steps compared with eager (at least 1)")
    check.add_argument("--optimizer", default="sgd", choices=sorted(OPTIMIZERS))
    check.add_argument("--batch-sizes", type=_two_sizes, default=SIZES, metavar="A,B",
                       help=f"the first call's batch size and another one (default {SIZES[0]},{SIZES[1]})")
    check.add_argument("--input-grads", default="as-given", choices=list(INPUT_GRADS),
                       help="which input tensors are differentiated and their gradients judged: as batch() returns "
                            "them (requires_grad set; default), every floating one, or none")
    check.add_argument("--autocast", default=None, choices=["float16", "bfloat16"],
                       help="run every call under torch.autocast in this dtype (mixed-precision training)")
    check.add_argument("--grad-scaler", action="store_true",
                       help="train the steps with torch.amp.GradScaler, as float16 training does (needs --autocast float16)")
    check.add_argument("--report-dir", type=Path, default=None,
                       help="write check.json, check.md and, on a mismatch, repro/ there")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of steps, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1 step is checked, got {value}")
    return value


def _two_sizes(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected two batch sizes as A,B (e.g. 2,3), got {text!r}")
    sizes = (int(parts[0]), int(parts[1]))
    if sizes[0] == sizes[1] or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"two different batch sizes of at least 1, got {text!r}")
    return sizes


def run(args: argparse.Namespace) -> int:
    import torch

    from ortcheck.usercheck.api import check_model
    from ortcheck.usercheck.targets import default_batch_spec, load

    # One thread from the start, before the user's code runs: every check runs in a forked child, and
    # thread pools (torch's OpenMP, onnxruntime's) do not survive a fork (ortcheck/usercheck/isolated.py).
    torch.set_num_threads(1)
    try:
        factory = load(args.target, "factory")
        batch_spec = args.batch or default_batch_spec(args.target)
        if batch_spec is None:
            raise UserInputError(f"no batch maker: pass --batch MODULE:FN (FN(size) returns one call's inputs)")
        batch = load(batch_spec, "batch")
        loss = load(args.loss, "loss") if args.loss else None
        impl = args.impl if args.impl in impls.names() else _implementation(args.impl)
        _require_available(impl)
        result = check_model(factory, batch, loss, impl=impl, device=args.device, steps=args.steps,
                             optimizer=args.optimizer, report_dir=args.report_dir, target=args.target,
                             sizes=args.batch_sizes, input_grads=args.input_grads, autocast=args.autocast,
                             grad_scaler=args.grad_scaler)
    except UserInputError as error:
        print(f"ortcheck check: error: {error}", file=sys.stderr)
        return 2
    print(result.format())
    return 0 if result.ok else 1


def _implementation(spec: str):
    from ortcheck.impls.base import Implementation
    from ortcheck.usercheck.targets import load

    if ":" not in spec:
        raise UserInputError(f"unknown implementation {spec!r}; valid: {', '.join(impls.names())} or MODULE:CLASS")
    cls = load(spec, "implementation")
    if not (isinstance(cls, type) and issubclass(cls, Implementation)):
        raise UserInputError(f"implementation {spec!r} is not an ortcheck.impls.Implementation subclass")
    return cls()


def _require_available(impl) -> None:
    """An implementation that cannot run here is the user's setup, not a failing model: one line."""
    implementation = impls.get(impl) if isinstance(impl, str) else impl
    reason = implementation.unavailable_reason()
    if reason:
        raise UserInputError(f"--impl {implementation.name} cannot run here: {reason}")
