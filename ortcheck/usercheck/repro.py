"""A standalone reproduction of a localized mismatch: the submodule and its inputs saved with
``torch.save``, and a short script that reloads them and prints the oracle's verdict.

Why the implementation is named by its class path: positive controls and users' own
implementations are not in the registry, and the script must rebuild the very one that failed.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch

SCRIPT = '''"""Reproduction written by `ortcheck check`: {what} alone through {impl_name}."""
import importlib
import sys
import torch

sys.path[:0] = {paths!r}  # where the check found the model's and the implementation's modules
from ortcheck.impls import Options
from ortcheck.usercheck.calls import Projection, check_call, requiring_grad

module_name, class_name = {impl_path!r}.split(":")
impl = getattr(importlib.import_module(module_name), class_name)()
module = torch.load("module.pt", weights_only=False)
batch = torch.load("inputs.pt", weights_only=False)
failure = check_call(impl, Options(**{options!r}), module, requiring_grad(batch), Projection(), {what!r})
print(failure or "no difference: it passes")
raise SystemExit(1 if failure else 0)
'''


def write_repro(report_dir, impl, options, module: torch.nn.Module, batch, what: str) -> Path:
    """Write ``<report_dir>/repro/{module.pt, inputs.pt, repro.py}`` and return that folder. The
    script judges the module's outputs under a fixed random cotangent (as the localizer did)."""
    folder = Path(report_dir) / "repro"
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(module, folder / "module.pt")
    torch.save(batch, folder / "inputs.pt")
    impl_path = f"{type(impl).__module__}:{type(impl).__qualname__}"
    # the pickled module names its classes by import path: the script needs the check's import roots
    paths = [str(Path(p or ".").resolve()) for p in sys.path if not p or Path(p).is_dir()]
    (folder / "repro.py").write_text(SCRIPT.format(what=what, impl_name=impl.name, impl_path=impl_path, paths=paths,
                                                   options=dataclasses.asdict(options)))
    return folder
