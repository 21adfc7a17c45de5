"""The float64 oracle: judge an implementation by its error against the exact answer, measured on
the same scale as eager PyTorch's own error (docs/architecture.md, "Oracles").

Why not ``assert_close(actual, eager)``: float32 results of correct pipelines differ from eager's
in the last bits, and by much more where float32 itself cancels (a 0.02 output next to outputs of
180). A fixed rtol/atol either flags those or hides real defects elsewhere. So every check runs the
same computation several ways besides the implementation (:mod:`ortcheck.checks.runs`): eager as
the user runs it, its float64 twin on the very same values (the truth), and both again with every
operand nudged by one ulp.

Per tensor, the implementation's largest error against the truth must stay within ``FACTOR x`` the
*scale*: the largest of eager's error, the nudged eager run's error (a second sample of the same
rounding, so one lucky sample can't make the bound vanish), how far the nudge moves the truth (the
conditioning: a cancellation is judged by the size of what cancelled) and one ulp of the largest
exact value. Integer and bool tensors must equal eager's.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Mapping, Sequence

import torch

from ortcheck.checks.structure import assert_same_structure
from ortcheck.nested import children

# Calibrated from the worst ratio error / scale seen on correct pipelines (bench/oracle_calibration.py,
# docs/architecture.md "Oracles"): 15.4, the gradient of tanh through onnxruntime's tanh kernel (a few
# ulp less accurate than torch's, then amplified by 1 - y*y) on AVX2; twice that. Positive controls
# start at 4e3.
FACTOR = 32.0
LOG_ENV = "ORTCHECK_ORACLE_LOG"  # a path: every tensor comparison appends one JSON line (calibration)


# ---- the comparison ------------------------------------------------------------------------------

class OracleError(AssertionError):
    """A value beyond the oracle's bound; ``verdict`` says by how much (a check of several samples
    reports its worst one: the margin by which it would still fail on another CPU)."""

    def __init__(self, verdict: "Verdict"):
        super().__init__(verdict.message())
        self.verdict = verdict

    def __reduce__(self):  # to and from a subprocess (``ortcheck check`` runs checks isolated), notes kept
        return type(self), (self.verdict,), self.__dict__


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One floating tensor judged: its worst element and the numbers the bound came from."""

    path: str
    impl_error: float
    eager_error: float  # the larger of eager's two samples (plain and nudged)
    sensitivity: float  # how far the nudge moved the truth (0 without nudged runs)
    ulp: float          # one unit of the tensor's precision at its largest exact value
    index: tuple[int, ...]
    actual: float
    exact: float
    eager: float

    @property
    def scale(self) -> float:
        return max(self.eager_error, self.sensitivity, self.ulp)

    @property
    def bound(self) -> float:
        return FACTOR * self.scale

    @property
    def ok(self) -> bool:
        return self.impl_error <= self.bound

    @property
    def margin(self) -> float:
        """Error over bound: above 1 it fails, and by this factor."""
        return self.impl_error / self.bound if self.bound else float("inf")

    @property
    def ratio(self) -> float:
        """Error over scale (FACTOR is the largest allowed); 0 when both are 0."""
        return self.impl_error / self.scale if self.scale else (0.0 if self.impl_error == 0 else float("inf"))

    def message(self) -> str:
        where = f"[{', '.join(map(str, self.index))}]" if self.index else ""
        return (f"{self.path}{where}: {self.actual!r} where float64 eager gives {self.exact!r} (float32 eager: "
                f"{self.eager!r}); implementation error {self.impl_error:.3g} > bound {self.bound:.3g} = {FACTOR:g} x "
                f"max(eager error {self.eager_error:.3g}, operand-rounding sensitivity {self.sensitivity:.3g}, "
                f"ulp {self.ulp:.3g})")


def judge(runs: Mapping[str, torch.Tensor], path: str = "tensor") -> Verdict | None:
    """The verdict on one floating tensor, given per run (``actual``, ``eager``, ``exact`` and, when
    there, ``nudged`` and ``nudged_exact``); None when it has no finite element to judge.

    Raises AssertionError for what no tolerance covers: another dtype, shape, or non-finite pattern.
    """
    actual, eager = runs["actual"], runs["eager"]
    if actual.dtype != eager.dtype or actual.shape != eager.shape:
        raise AssertionError(f"{path}: {actual.dtype} {tuple(actual.shape)} where eager gives "
                             f"{eager.dtype} {tuple(eager.shape)}")
    a, e, x = (runs[run].detach().cpu().double() for run in ("actual", "eager", "exact"))
    finite = torch.isfinite(x) & torch.isfinite(e)
    everywhere = bool(finite.all())  # the common case: no masking (this runs for every tensor of every check)
    if not everywhere:
        mismatch = ~finite & ~((a == e) | (torch.isnan(a) & torch.isnan(e)))
        if mismatch.any():
            index = tuple(int(i) for i in mismatch.nonzero()[0])
            raise AssertionError(f"{path}{list(index)}: {a[index].item()!r} where eager gives {e[index].item()!r}")
    if not finite.any():
        return None

    # Per element: eager's error, the exact value's size and, with the nudged runs, their error and
    # how far they moved the truth; the largest of each where the exact and eager values are finite
    scales = [(e - x).abs(), x.abs()]
    nudged = runs.get("nudged") is not None and runs.get("nudged_exact") is not None
    if nudged:
        n, nx = (runs[run].detach().cpu().double() for run in ("nudged", "nudged_exact"))
        # where a nudged run is not finite it bounds nothing: counted, its inf made every bound inf
        # and let any value pass (a wrong Softmax gradient did, on gpt2)
        nudged_finite = torch.isfinite(n) & torch.isfinite(nx)
        moved = [(n - nx).abs(), (nx - x).abs()]
        scales += moved if bool(nudged_finite.all()) else [torch.where(nudged_finite, m, 0) for m in moved]
    scales = torch.stack(scales).reshape(len(scales), -1)
    impl_errors = (a - x).abs().reshape(-1)
    if not everywhere:
        scales = torch.where(finite.reshape(1, -1), scales, 0)
        impl_errors = torch.where(finite.reshape(-1), impl_errors, 0)
    impl_errors = impl_errors.nan_to_num(nan=float("inf"))
    largest = scales.amax(dim=1).tolist()
    flat = int(impl_errors.argmax())
    impl_error, at_actual, at_exact, at_eager = torch.stack(
        [impl_errors[flat], a.reshape(-1)[flat], x.reshape(-1)[flat], e.reshape(-1)[flat]]).tolist()
    verdict = Verdict(path, impl_error, max(largest[0], largest[2]) if nudged else largest[0],
                      largest[3] if nudged else 0.0, torch.finfo(eager.dtype).eps * largest[1],
                      _unravel(flat, a.shape), at_actual, at_exact, at_eager)
    _log(verdict)
    return verdict


def _unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The index of element ``flat`` of a row-major tensor of ``shape`` (``torch.unravel_index``
    costs a tensor and ~20 us a call)."""
    index = []
    for size in reversed(shape):
        flat, position = divmod(flat, size)
        index.append(position)
    return tuple(reversed(index))


def assert_tensor_matches_oracle(runs: Mapping[str, torch.Tensor], path: str = "tensor") -> None:
    """One tensor, given per run: floating ones within the oracle's bound, others equal to eager's."""
    actual, eager = runs["actual"], runs["eager"]
    if not (eager.is_floating_point() or eager.is_complex()):
        try:
            torch.testing.assert_close(actual, eager, rtol=0, atol=0, check_device=False)
        except AssertionError as error:
            raise AssertionError(f"{path}: {error}") from None
        return
    verdict = judge(runs, path)
    if verdict is not None and not verdict.ok:
        raise OracleError(verdict)


def assert_matches_oracle(runs: Mapping[str, Any], path: str = "output") -> None:
    """Nested results, given per run (``actual``, ``eager``, ``exact``[, ``nudged``, ``nudged_exact``]):
    the structure (container types, keys, constants) equal to eager's, and each tensor judged by
    :func:`assert_tensor_matches_oracle`."""
    assert_same_structure(runs["actual"], runs["eager"], compare_tensors=lambda *_: None, path=path)
    for where, leaves in _zip_leaves(runs, path):
        if isinstance(leaves["eager"], torch.Tensor):
            if leaves.get("actual") is None or leaves.get("exact") is None:
                raise AssertionError(f"{where}: missing")
            assert_tensor_matches_oracle(leaves, where)


def curve_verdicts(runs: Mapping[str, Sequence[float]], what: str = "loss") -> list[Verdict]:
    """One verdict per step of a training run's metric (loss, ...), given per run, against the float64 run.

    Rounding differences compound through training, so the scale at step k is the largest over
    steps 0..k: one lucky step where eager happens to sit on the float64 curve must not make the
    bound vanish.
    """
    actual, eager, exact = runs["actual"], runs["eager"], runs["exact"]
    nudged, nudged_exact = runs.get("nudged"), runs.get("nudged_exact")
    if not len(actual) == len(eager) == len(exact):
        raise AssertionError(f"{what}: {len(actual)} steps, eager {len(eager)}, float64 {len(exact)}")
    verdicts, eager_envelope, nudge_envelope = [], 0.0, 0.0
    for step, (a, e, x) in enumerate(zip(actual, eager, exact)):
        eager_envelope = max(eager_envelope, abs(e - x))
        if nudged is not None and nudged_exact is not None:
            eager_envelope = max(eager_envelope, abs(nudged[step] - nudged_exact[step]))
            nudge_envelope = max(nudge_envelope, abs(nudged_exact[step] - x))
        verdict = Verdict(f"{what} at step {step}", abs(a - x), eager_envelope, nudge_envelope,
                          torch.finfo(torch.float32).eps * abs(x), (), a, x, e)
        _log(verdict)
        verdicts.append(verdict)
    return verdicts


def assert_curve_matches_oracle(runs: Mapping[str, Sequence[float]], what: str = "loss") -> None:
    """Every step of a metric's curve within the oracle's bound (see :func:`curve_verdicts`)."""
    for verdict in curve_verdicts(runs, what):
        if not verdict.ok:
            raise OracleError(verdict)


def _zip_leaves(runs: Mapping[str, Any], path: str):
    """(path, {run: leaf}) per leaf of eager's structure; a run missing a part maps to None there."""
    pairs = children(runs["eager"])
    if pairs is None:
        yield path, dict(runs)
        return
    parts = {run: dict(children(value) or []) if value is not None else {} for run, value in runs.items()}
    for key, _ in pairs:
        yield from _zip_leaves({run: part.get(key) for run, part in parts.items()}, f"{path}[{key!r}]")


def _log(verdict: Verdict) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    record = {"path": verdict.path, "ratio": verdict.ratio, "impl_error": verdict.impl_error,
              "eager_error": verdict.eager_error, "sensitivity": verdict.sensitivity, "ulp": verdict.ulp,
              "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]}
    with open(path, "a") as handle:
        handle.write(json.dumps(record) + "\n")
