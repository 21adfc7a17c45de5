"""The oracle's runs of a convergence case, trained once per test run and shared by every cell of it.

Each implementation's cell of a case trains four oracle runs beside its own (eager, float64, and
both nudged: ``ortcheck.checks.runs``), two thirds of the cell's time. Those runs never see the
implementation: the same model, batches, loss, training, seed, steps, device and determinism give
the same curves bit for bit. So a run's curve, once trained, is kept in this process and, when the
pytest plugin names one (``share_in``: under xdist a folder the controller gives every worker), in a
folder, and the eager, reference and bitsandbytes cells train the case's oracle once between them;
the recompute cases reuse their plain case's (same model and batches, options for the
implementation's side only).

The key is what the runs are computed from, contents included: the initial model's weights and
buffers byte for byte with its modules' classes and ``forward`` code, the batches byte for byte,
the loss's code and closure, the training configuration, the seed, steps, device, determinism, and
the torch build and CPU kernel level that compute them. A run differing in any of them is trained
anew; a key that cannot be made alike across processes (a closure over an object without a stable
repr) only costs the sharing, never the verdict.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable

from ortcheck.convergence.curves import Curve

_kept: dict[tuple[str, str], Curve] = {}
_folder: Path | None = None


def share_in(folder: Path | None) -> None:
    """Keep curves in ``folder`` too (shared with the other processes of the run), or stop (None)."""
    global _folder
    _folder = folder


def forget() -> None:
    """Drop what this process kept (the folder is its owner's)."""
    _kept.clear()


def key(case, steps: int, seed: int, device: str, determinism: dict, model, batches) -> str:
    """A digest of everything the oracle's runs of ``case`` at ``seed`` are computed from."""
    import torch

    digest = hashlib.sha256()
    for part in (_callable_id(case.build), _callable_id(case.batches), _callable_id(case.loss),
                 repr(case.training.to_json()), steps, seed, device,
                 repr(sorted(determinism.items())), torch.__version__, torch.backends.cpu.get_cpu_capability()):
        digest.update(repr(part).encode() + b"\0")
    for name, module in model.named_modules():
        cls = type(module)
        digest.update(f"{name}:{cls.__module__}.{cls.__qualname__}:".encode())
        digest.update(_code_digest(getattr(cls, "forward", None)).encode())
    digest.update(repr(model).encode())
    for kind, named in (("p", model.named_parameters(remove_duplicate=False)),
                        ("b", model.named_buffers(remove_duplicate=False))):
        for name, tensor in named:
            digest.update(f"{kind}:{name}:{tensor.requires_grad}:".encode())
            digest.update(_tensor_bytes(tensor))
    leaves, spec = torch.utils._pytree.tree_flatten(batches)
    digest.update(repr(spec).encode())
    for leaf in leaves:
        digest.update(_tensor_bytes(leaf) if isinstance(leaf, torch.Tensor) else repr(leaf).encode())
    return digest.hexdigest()


def curve(run_key: str, run: str, train: Callable[[], Curve]) -> Curve:
    """Run ``run``'s curve under ``run_key``: kept, or trained now by ``train`` and kept."""
    found = _kept.get((run_key, run))
    path = _folder / f"{run_key}-{run}.pickle" if _folder is not None else None
    if found is None and path is not None and path.exists():
        found = pickle.loads(path.read_bytes())
    if found is None:
        found = train()
        if path is not None:
            _write_atomically(path, pickle.dumps(found))
    _kept[run_key, run] = found
    return copy.deepcopy(found)  # each caller owns its curve


def _write_atomically(path: Path, data: bytes) -> None:
    """Another process reading meanwhile sees the whole file or none (two writing the same key write
    the same bytes)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".writing-")
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    os.replace(temporary, path)


def _tensor_bytes(tensor) -> bytes:
    import torch

    tensor = tensor.detach().cpu().contiguous()
    header = f"{type(tensor).__name__}:{tensor.dtype}:{tuple(tensor.shape)}:".encode()
    return header + tensor.reshape(-1).view(torch.uint8).numpy().tobytes()


def _callable_id(fn: Any) -> str:
    """A function by its name, code, defaults and closure: two lambdas of one factory differ by what they close over."""
    if isinstance(fn, functools.partial):
        return f"partial({_callable_id(fn.func)}, {fn.args!r}, {fn.keywords!r})"
    cells = [cell.cell_contents for cell in getattr(fn, "__closure__", None) or ()]
    cells = [_callable_id(cell) if hasattr(cell, "__code__") else repr(cell) for cell in cells]
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
    return f"{name}:{_code_digest(fn)}:{getattr(fn, '__defaults__', None)!r}:{cells}"


def _code_digest(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    return hashlib.sha256(_code_bytes(code)).hexdigest() if code is not None else ""


def _code_bytes(code) -> bytes:
    """Bytecode and constants, nested functions' too (a code object's repr carries its address)."""
    consts = [_code_bytes(const) if hasattr(const, "co_code") else repr(const).encode() for const in code.co_consts]
    return code.co_code + b"\0".join(consts)
