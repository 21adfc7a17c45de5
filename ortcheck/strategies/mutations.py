"""Changes to a nested structure that must change its schema, and one that must not.

One mutation per kind of change *and* per kind of node it hits (``retype_dict_str``,
``constant_int``, ``wrap_tensor``, ...), so every example of a mutation exercises exactly what its
name says: a pipeline that misses that one change fails on every example. Each mutation finds its
sites with the harness's own walk (:mod:`ortcheck.nested`), picks one with a drawn index, and
rebuilds the structure around the change; a structure without such a site gets one added.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable

import torch
from hypothesis import strategies as st

from ortcheck.nested import children, map_leaves, replace_at, sites
from ortcheck.strategies.containers import CONTAINER_KINDS, LEAF_KINDS


@dataclasses.dataclass(frozen=True)
class Mutation:
    accept: Callable[[Any], bool]  # which nodes it can change
    change: Callable[[Any], Any]   # the changed node
    seed: Any                      # a node it can change, added to structures that have none


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


def _is_leaf(v):
    return children(v) is None


def _other_constant(v):
    if isinstance(v, enum.Enum):  # before int and str: IntEnum and StrEnum are both
        members = list(type(v))
        return members[(members.index(v) + 1) % len(members)]
    if isinstance(v, torch.Size):
        return torch.Size([*v, 1])
    if isinstance(v, torch.dtype):
        return torch.float64 if v != torch.float64 else torch.float32
    if isinstance(v, torch.device):
        return torch.device("meta") if v.type != "meta" else torch.device("cpu")
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


def _of_type(types: tuple[type, ...]) -> Callable[[Any], bool]:
    return lambda v: type(v) in types


def _leaf_of(kind: str) -> Callable[[Any], bool]:
    if kind == "tensor":
        return _is_tensor
    example_type = type(LEAF_KINDS[kind].example)
    return lambda v: not _is_tensor(v) and _is_leaf(v) and type(v) is example_type


def _example(kind: str) -> Any:
    return torch.zeros(2) if kind == "tensor" else LEAF_KINDS[kind].example


def _mutations() -> dict[str, Mutation]:
    found = {f"wrap_{name}": Mutation(_leaf_of(name), lambda v: [v], _example(name)) for name in LEAF_KINDS}
    found["wrap_container"] = Mutation(lambda v: not _is_leaf(v), lambda v: [v], [])
    for name, kind in CONTAINER_KINDS.items():
        if kind.retype is not None:
            found[f"retype_{name}"] = Mutation(_of_type(kind.types), lambda v, k=kind: k.retype(v), kind.wrap(0))
    for name in LEAF_KINDS:
        if name != "tensor":
            found[f"constant_{name}"] = Mutation(_leaf_of(name), _other_constant, _example(name))
    # Equal under == yet another type: a schema comparing values by == misses these.
    found["retype_int_enum"] = Mutation(lambda v: isinstance(v, enum.IntEnum), int, LEAF_KINDS["enum"].example)
    found["retype_torch_size"] = Mutation(lambda v: isinstance(v, torch.Size), tuple, LEAF_KINDS["torch_size"].example)
    found["dtype"] = Mutation(_is_tensor, _other_dtype, torch.zeros(2))
    found["rank"] = Mutation(_is_tensor, _other_rank, torch.zeros(2))
    return found


# One per kind of every feature; the suite draws the structures around them from ``python_scalars``
# and adds a node of the mutated kind where the drawn structure has none.
MUTATIONS: dict[str, Mutation] = _mutations()


@st.composite
def schema_changing_mutations(draw, data: Any, kinds=tuple(MUTATIONS)) -> tuple[str, tuple, Any, Any]:
    """(kind, site, base, mutated): ``base`` is ``data`` (plus a node of the right kind if it had
    none) and ``mutated`` is ``base`` with one change its schema must reflect."""
    kind = draw(st.sampled_from(list(kinds)))
    mutation = MUTATIONS[kind]
    candidates = sites(data, mutation.accept)
    if not candidates:
        data = [data, mutation.seed]
        candidates = sites(data, mutation.accept)
    site = draw(st.sampled_from(candidates))
    return kind, site, data, replace_at(data, site, mutation.change)
