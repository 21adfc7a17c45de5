"""What a training step keeps between forward and backward, measured on the tensors themselves.

``torch.autograd.graph.saved_tensors_hooks`` sees every tensor autograd saves for backward, a
pipeline's stashed activations included when it hands them to torch (as an autograd Function's
``save_for_backward``). Bytes are counted once per storage, leaving out storages the caller names
(parameters, inputs): those exist whether or not anything is stashed.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterable, Iterator

import torch


@dataclasses.dataclass
class KeptTensors:
    tensors: list[torch.Tensor] = dataclasses.field(default_factory=list)
    excluded: set[int] = dataclasses.field(default_factory=set)

    @property
    def nbytes(self) -> int:
        seen, total = set(self.excluded), 0
        for tensor in self.tensors:
            storage = tensor.untyped_storage()
            if storage.data_ptr() in seen or storage.nbytes() == 0:
                continue
            seen.add(storage.data_ptr())
            total += storage.nbytes()
        return total


@contextlib.contextmanager
def kept_tensors(excluding: Iterable[torch.Tensor] = ()) -> Iterator[KeptTensors]:
    """Record every tensor saved for backward inside the block."""
    kept = KeptTensors(excluded={t.untyped_storage().data_ptr() for t in excluding})

    def pack(tensor):
        kept.tensors.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield kept
