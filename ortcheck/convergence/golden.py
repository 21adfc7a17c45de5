"""Golden curves: one JSON file per (case, implementation, device, dtype) under ``golden/``.

A golden records what its curve depends on (fingerprint of the stack, determinism settings, the
case's configuration) next to the metrics at full precision (JSON floats round-trip exactly) and
the tolerances to judge against. ``load`` rejects anything malformed with an error naming the file
and the field; ``write`` replaces a file atomically, so an interrupted update leaves the old golden
whole.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path

from ortcheck.convergence import tolerance as tolerances
from ortcheck.convergence.curves import METRICS, CaseRun, Curve

SCHEMA_VERSION = 1
FIELDS = ("schema_version", "case", "implementation", "device", "dtype", "fingerprint", "determinism", "config",
          "curves", "tolerances")


class GoldenError(ValueError):
    """A golden file that can't be trusted: the message names the file and what is wrong."""


class MissingGolden(GoldenError):
    """No golden file yet: the run's parity verdict still stands, and the caller knows how to record one."""


@dataclasses.dataclass
class Golden:
    run: CaseRun
    config: dict
    tolerance: tolerances.Tolerance
    dtype: str = "float32"

    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "case": self.run.case, "implementation": self.run.impl,
                "device": self.run.device, "dtype": self.dtype, "fingerprint": self.run.fingerprint,
                "determinism": self.run.determinism, "config": self.config,
                "curves": [curve.to_json() for curve in self.run.curves], "tolerances": self.tolerance.to_json()}


def path_for(root: Path, case: str, impl: str, device: str, dtype: str = "float32") -> Path:
    return Path(root) / case / f"{impl}-{device}-{dtype}.json"


def write(path: Path, golden: Golden) -> None:
    """Write ``golden`` to ``path`` atomically: a temporary file in the same folder, fsync'd, then renamed."""
    text = json.dumps(golden.to_json(), indent=1, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(path: Path) -> Golden:
    path = Path(path)
    try:
        data = json.loads(path.read_text(), parse_constant=_reject_constant)
    except FileNotFoundError:
        raise MissingGolden(f"{path}: no golden file") from None
    except json.JSONDecodeError as error:
        raise GoldenError(f"{path}: not valid JSON (truncated or malformed?): {error}") from None
    except ValueError as error:
        raise GoldenError(f"{path}: {error}") from None
    if not isinstance(data, dict):
        raise GoldenError(f"{path}: expected a JSON object at the top level, got {type(data).__name__}")
    missing = [name for name in FIELDS if name not in data]
    if missing:
        raise GoldenError(f"{path}: missing field(s) {', '.join(missing)}")
    if data["schema_version"] != SCHEMA_VERSION:
        raise GoldenError(f"{path}: schema_version {data['schema_version']!r} is not supported (expected {SCHEMA_VERSION})")
    for name in ("fingerprint", "determinism", "config", "tolerances"):
        if not isinstance(data[name], dict):
            raise GoldenError(f"{path}: field {name} must be an object")
    curves = [_curve(path, index, entry) for index, entry in enumerate(_list(path, "curves", data["curves"]))]
    try:
        tolerance = tolerances.from_json(data["tolerances"])
    except (KeyError, TypeError, ValueError) as error:
        raise GoldenError(f"{path}: field tolerances is invalid: {error!r}") from None
    run = CaseRun(data["case"], data["implementation"], data["device"], curves, data["determinism"], data["fingerprint"])
    return Golden(run, data["config"], tolerance, data["dtype"])


def _reject_constant(name: str):
    raise ValueError(f"{name} is not allowed in a golden file (metrics must be finite)")


def _list(path: Path, where: str, value) -> list:
    if not isinstance(value, list) or not value:
        raise GoldenError(f"{path}: field {where} must be a non-empty list")
    return value


def _curve(path: Path, index: int, entry) -> Curve:
    where = f"curves[{index}]"
    if not isinstance(entry, dict):
        raise GoldenError(f"{path}: field {where} must be an object")
    missing = [name for name in ("seed", *METRICS) if name not in entry]
    if missing:
        raise GoldenError(f"{path}: field {where} is missing {', '.join(missing)}")
    lengths = set()
    for metric in METRICS:
        values = _list(path, f"{where}.{metric}", entry[metric])
        bad = next((i for i, v in enumerate(values) if not isinstance(v, (int, float)) or isinstance(v, bool)
                    or not math.isfinite(v)), None)
        if bad is not None:
            raise GoldenError(f"{path}: field {where}.{metric}[{bad}] is {values[bad]!r}, expected a finite number")
        lengths.add(len(values))
    if len(lengths) > 1:
        raise GoldenError(f"{path}: field {where} has metrics of different lengths {sorted(lengths)}")
    return Curve.from_json(entry)
