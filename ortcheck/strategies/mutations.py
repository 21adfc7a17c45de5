"""Changes to a nested structure that must change its schema, and one that must not.

Each mutation finds its sites with the oracle walk (:mod:`ortcheck.checks.structure`), picks one
with a drawn index, and rebuilds the structure around the change.
"""
from __future__ import annotations

import collections
from typing import Any, Callable

import torch
from hypothesis import strategies as st

from ortcheck.checks.structure import children, map_leaves, rebuild
from ortcheck.strategies.containers import ModelOutputLike, Pair, Triple

Site = tuple  # path of child indices from the root


def sites(value: Any, accept: Callable[[Any], bool], path: Site = ()) -> list[Site]:
    """Paths of all nodes (containers and leaves) for which ``accept`` holds, pre-order."""
    found = [path] if accept(value) else []
    for index, (_, child) in enumerate(children(value) or []):
        found += sites(child, accept, path + (index,))
    return found


def replace_at(value: Any, site: Site, fn: Callable[[Any], Any]) -> Any:
    if not site:
        return fn(value)
    pairs = children(value)
    new_children = [replace_at(child, site[1:], fn) if i == site[0] else child for i, (_, child) in enumerate(pairs)]
    return rebuild(value, new_children)


def resize_tensors(value: Any, grow: int) -> Any:
    """Same dtypes, ranks and requires_grad; every non-scalar tensor's sizes changed by ``grow``."""
    def resize(leaf):
        if not isinstance(leaf, torch.Tensor):
            return leaf
        shape = [size + grow for size in leaf.shape]
        return torch.zeros(shape, dtype=leaf.dtype).requires_grad_(leaf.requires_grad)

    return map_leaves(value, resize)


def _is_tensor(v):
    return isinstance(v, torch.Tensor)


def _is_constant(v):
    return children(v) is None and not _is_tensor(v)


def _is_retypable(v):
    return type(v) in _RETYPE


_RETYPE: dict[type, Callable[[Any], Any]] = {
    list: tuple,
    tuple: list,
    dict: collections.OrderedDict,
    collections.OrderedDict: ModelOutputLike,
    ModelOutputLike: dict,
    Pair: tuple,
    Triple: tuple,
}


def _other_constant(v):
    if v is None:
        return 0
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v + 1 if abs(v) < 2**52 else v / 2
    if isinstance(v, str):
        return v + "x"
    raise TypeError(type(v))


def _other_dtype(t: torch.Tensor) -> torch.Tensor:
    dtype = torch.float64 if t.dtype != torch.float64 else torch.float32
    return t.detach().to(dtype)


def _other_rank(t: torch.Tensor) -> torch.Tensor:
    return t.detach().unsqueeze(0)


# kind -> (which nodes qualify, how to change one)
MUTATIONS: dict[str, tuple[Callable, Callable]] = {
    "structure": (lambda v: True, lambda v: [v]),
    "container_type": (_is_retypable, lambda v: _RETYPE[type(v)](v)),
    "constant": (_is_constant, _other_constant),
    "dtype": (_is_tensor, _other_dtype),
    "rank": (_is_tensor, _other_rank),
}


@st.composite
def schema_changing_mutations(draw, data: Any, kinds=tuple(MUTATIONS)) -> tuple[str, Site, Any, Any]:
    """(kind, site, base, mutated): ``base`` is ``data`` (plus a leaf of the right kind if it had
    none) and ``mutated`` is ``base`` with one change its schema must reflect."""
    kind = draw(st.sampled_from(list(kinds)))
    accept, change = MUTATIONS[kind]
    candidates = sites(data, accept)
    if not candidates:
        data = [data, _seed_for(kind)]
        candidates = sites(data, accept)
    site = draw(st.sampled_from(candidates))
    return kind, site, data, replace_at(data, site, change)


def _seed_for(kind: str) -> Any:
    if kind in ("dtype", "rank"):
        return torch.zeros(2)
    return 0
