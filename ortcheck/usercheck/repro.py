"""A standalone reproduction of a localized mismatch: the submodule and its inputs saved with
``torch.save``, and a short script that reloads them and prints the oracle's verdict.

Why the implementation is named by its class path: positive controls and users' own
implementations are not in the registry, and the script must rebuild the very one that failed.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import torch

SCRIPT = '''"""Reproduction written by `ortcheck check`: {what} alone through {impl_name}, one call per saved batch.
Run it from anywhere: python path/to/repro/repro.py"""
import importlib
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
# the import roots of the model's and the implementation's modules, relative to this folder where
# they share an ancestor with it (the project and its report can move together)
sys.path[:0] = [str((HERE / root).resolve()) for root in {paths!r}]
from ortcheck.impls import Options
from ortcheck.usercheck.calls import Projection, check_calls, requiring_grad

module_name, class_name = {impl_path!r}.split(":")
impl = getattr(importlib.import_module(module_name), class_name)()
module = torch.load(HERE / "module.pt", weights_only=False)
batches = torch.load(HERE / "inputs.pt", weights_only=False)
failure = check_calls(impl, Options(**{options!r}), module, [requiring_grad(b, "as-given") for b in batches],
                      Projection(), {what!r})
print(failure or "no difference: it passes")
raise SystemExit(1 if failure else 0)
'''


def write_repro(report_dir, impl, options, module: torch.nn.Module, batches: list, what: str) -> Path:
    """Write ``<report_dir>/repro/{module.pt, inputs.pt, repro.py}`` and return that folder. The
    script judges the module's outputs under a fixed random cotangent (as the localizer did)."""
    folder = Path(report_dir) / "repro"
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(module, folder / "module.pt")
    torch.save(list(batches), folder / "inputs.pt")
    impl_path = f"{type(impl).__module__}:{type(impl).__qualname__}"
    # the pickled module names its classes by import path: the script needs their import roots
    names = {type(m).__module__ for m in module.modules()} | {type(impl).__module__}
    paths = sorted({_relative(root, folder) for root in filter(None, map(import_root, names))})
    (folder / "repro.py").write_text(SCRIPT.format(what=what, impl_name=impl.name, impl_path=impl_path, paths=paths,
                                                   options=dataclasses.asdict(options)))
    return folder


def import_root(module_name: str) -> Path | None:
    """The folder ``module_name`` is imported from (above its package), or None for what any
    interpreter finds anyway (torch, the standard library, installed packages)."""
    module = sys.modules.get(module_name)
    location = getattr(module, "__file__", None)
    if not location or "site-packages" in Path(location).parts or module_name.split(".")[0] in sys.stdlib_module_names:
        return None
    root = Path(location).resolve().parent
    for _ in module_name.split(".")[1:]:
        root = root.parent
    return root


def _relative(root: Path, folder: Path) -> str:
    try:
        return os.path.relpath(root, folder.resolve())
    except ValueError:  # another drive (Windows): absolute
        return str(root)
