"""The zoo's tiny Hugging Face architectures as ``ortcheck check`` targets.

``ortcheck check ortcheck.usercheck.zoo:gpt2`` builds ``ortcheck.models.hf``'s gpt2; its batch
maker ``zoo:gpt2_batch`` (found without ``--batch``) gives token batches with labels, and
``zoo:loss`` takes the loss the model computes from them. So the zoo exercises the same entry
point users do.
"""
from __future__ import annotations

import functools

from ortcheck.models import hf

LENGTHS = {2: 8}  # tokens per batch size; any other size gets 5, so "another size" changes both axes


def loss(outputs):
    """The loss a Hugging Face model computes from ``labels``."""
    return outputs.loss


def _batch(name: str, size: int):
    return hf.ARCHITECTURES[name].example(seed=size, batch=size, length=LENGTHS.get(size, 5))


def __getattr__(name: str):
    architecture = name.removesuffix("_batch")
    if architecture not in hf.ARCHITECTURES:
        raise AttributeError(name)
    if name.endswith("_batch"):
        return functools.partial(_batch, architecture)
    return functools.partial(hf.ARCHITECTURES[architecture].build, 0)


def names() -> list[str]:
    return list(hf.ARCHITECTURES)
